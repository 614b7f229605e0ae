package netlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
)

// EnvEnable, set to 1, makes Main build a lab; without it every lab test skips (the lab needs
// root and takes a while, so plain `go test ./...` leaves it out; scripts/test.sh sets it).
const EnvEnable = "CONCORD_LAB"

// envInside names the lab that a test binary started by Main runs inside.
const envInside = "CONCORD_NETLAB_PREFIX"

var (
	current  *Lab
	errNoLab error = fmt.Errorf("%w: netlab.Main did not run", ErrUnavailable)
)

// Main is a TestMain for lab tests: it builds a lab, runs the test binary again inside the lab's
// Public namespace (so that no socket of a test can reach anything but the lab), deletes the lab
// and returns the exit code. Without root, ip or nft, or without CONCORD_LAB=1, it runs the
// tests in place and Get skips them with the reason.
//
//	func TestMain(m *testing.M) { os.Exit(netlab.Main(m)) }
func Main(m *testing.M) int {
	if prefix := os.Getenv(envInside); prefix != "" {
		l, err := Attach(prefix)
		if err != nil {
			errNoLab = err
		} else {
			current = l
		}
		return m.Run()
	}
	if os.Getenv(EnvEnable) != "1" {
		errNoLab = fmt.Errorf("%w: set %s=1 to run the NAT lab (scripts/test.sh does, as root)", ErrUnavailable, EnvEnable)
		return m.Run()
	}
	l, err := New(context.Background())
	if errors.Is(err, ErrUnavailable) {
		errNoLab = err
		return m.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := l.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	return runInside(l, os.Args)
}

// runInside runs argv in the lab's Public namespace and returns its exit code. SIGINT and SIGTERM
// are passed on, so that the child stops its processes and Main still deletes the lab.
func runInside(l *Lab, argv []string) int {
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)
	cmd := l.Public.Command(context.Background(), argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), envInside+"="+l.Prefix)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "netlab:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case s := <-sigc:
			_ = cmd.Process.Signal(s)
		}
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		return 1
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netlab:", err)
		return 1
	}
	return 0
}

// Get returns the lab this test binary runs in (see Main), or skips t saying why there is none.
func Get(t testing.TB) *Lab {
	t.Helper()
	if current == nil {
		t.Skipf("skipping the NAT lab: %v", errNoLab)
	}
	return current
}
