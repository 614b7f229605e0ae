package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/harness/bench"
)

// concordHelperEnv makes this test binary run `concord` with the arguments after "--"
// (TestConcordHelperProcess): the relay and bench host processes of the -relay smoke tests.
const concordHelperEnv = "CONCORD_TEST_HELPER"

func TestConcordHelperProcess(t *testing.T) {
	if os.Getenv(concordHelperEnv) != "1" {
		t.Skip("the concord process of the -relay smoke tests")
	}
	os.Exit(run(flag.Args(), os.Stdin, os.Stdout, os.Stderr))
}

// concordHelper returns a command that runs this test binary as `concord args...`.
func concordHelper(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestConcordHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), concordHelperEnv+"=1")
	return cmd
}

var relayedRate = regexp.MustCompile(`relayed (\d+) B/s`)

// relayed returns the relay's byte rate from a -relay report, failing t without one.
func relayed(t *testing.T, report string) float64 {
	t.Helper()
	m := relayedRate.FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("the report has no relay line:\n%s", report)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestBenchRelaySmoke runs `bench fanout -relay` and `bench migration -relay` with tiny
// parameters: a `concord serve --turn` process relays the members' traffic, and the reports say
// how much.
func TestBenchRelaySmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	serve := func(args []string) *exec.Cmd { return concordHelper(args...) }

	fo := bench.FanoutOptions{Bots: 2, Entities: 20, Duration: 1500 * time.Millisecond, Warmup: 300 * time.Millisecond,
		Relay: true, RelayCommand: serve}
	fr, err := bench.Fanout(ctx, fo, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	fr.Print(&out)
	// The host sends 20 entities 20 times a second to 2 bots: hundreds of bytes a second at least.
	if r := relayed(t, out.String()); r < 1000 {
		t.Errorf("the relay carried %v B/s:\n%s", r, out.String())
	}
	t.Logf("\n%s", out.String())

	mo := bench.MigrationOptions{Peers: 3, Entities: 300, Moving: 20, Trials: 2, Settle: 100 * time.Millisecond,
		HostLogLevel: "error", Relay: true, RelayCommand: serve,
		HostCommand: func(args []string) *exec.Cmd { return concordHelper(append([]string{"bench-host"}, args...)...) }}
	mr, err := bench.Migration(ctx, mo, log, io.Discard)
	out.Reset()
	if mr != nil {
		mr.Print(&out)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r := relayed(t, out.String()); r <= 0 {
		t.Errorf("the relay carried %v B/s:\n%s", r, out.String())
	}
	t.Logf("\n%s", out.String())
}
