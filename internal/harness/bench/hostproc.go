package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// HostOptions configures RunHost.
type HostOptions struct {
	Server   string // signaling server URL
	Device   string // device part of the host's identity; "" for none
	Entities int    // entities to spawn in an empty world
	Moving   int    // entities moved every tick; 0 moves all
	Interest int    // entities each member follows (windowInterest); 0: all
	Deltas   bool   // peer.Config.Deltas
	Schema   string // SchemaQuantized ("" too) or SchemaPlain
	// CPUProfile, when not empty, is the file that receives a CPU profile of the whole run.
	CPUProfile string
	// MemProfile, when not empty, is the file that receives a heap profile when the run ends
	// (its alloc_space and alloc_objects count every allocation of the run).
	MemProfile string
	// SettleOut, when not nil, makes the host settle its memory on SIGUSR1 — a collection that
	// returns the freed heap to the OS, as the benchmark does in its own process before it reads
	// a resident set — and then write "bench-host settled N" (N counting from 1) to it.
	SettleOut io.Writer
	// SettleProfile, when not empty, receives a heap profile at every settle (the last one
	// stays): inuse_space is what the host holds then.
	SettleProfile string
	// WindowProfile, when not empty, is the file that receives a CPU profile from one SIGUSR2 to
	// the next (the idle benchmark's window: what the host pays for idle members, without the
	// joins), said on SettleOut as "bench-host profiling N" and "bench-host profiled N".
	WindowProfile string
	// WireOut, when not nil, receives the host's UDP packet counts and the unreliable datagrams
	// its links dropped as "wire packets bytes control small dropped" lines every 100 ms (the
	// fanout benchmark reads them); nil: no counting.
	WireOut io.Writer
}

// Validate checks the options against the package's bounds.
func (o HostOptions) Validate() error {
	if err := validSchema(o.Schema); err != nil {
		return err
	}
	if o.Entities < 0 || o.Entities > MaxEntities || o.Moving < 0 || o.Interest < 0 {
		return fmt.Errorf("want 0 ≤ -entities ≤ %d, -moving ≥ 0 and -interest ≥ 0", MaxEntities)
	}
	return nil
}

// RunHost runs a bench host, the peer that `concord bench-host` runs in its own process for the
// migration benchmark, until ctx ends.
func RunHost(ctx context.Context, o HostOptions, log zerolog.Logger) error {
	if err := o.Validate(); err != nil {
		return err
	}
	stopProfile, err := startProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	defer writeMemProfile(o.MemProfile, log)
	cfg := link.Config{Logger: pionLogger(log)}
	var wire *wireCounter
	if o.WireOut != nil {
		if wire, err = newWireCounter(); err != nil {
			return err
		}
		cfg.Net = wire
	}
	api, err := link.NewAPI(cfg)
	if err != nil {
		return err
	}
	defer api.Close()
	pc := peer.Config{
		Server: o.Server, Room: room, User: hostUser, Device: o.Device,
		Kind: signaling.KindHost, App: &app{entities: o.Entities, moving: o.Moving, plain: o.Schema == SchemaPlain},
		Transport: peer.PionTransport{API: api}, Logger: log, Deltas: o.Deltas,
	}
	if o.Interest > 0 && o.Entities > 0 {
		pc.Interest = windowInterest{follow: min(o.Interest, o.Entities), movers: o.Entities}
	}
	p, err := peer.New(pc)
	if err != nil {
		return err
	}
	if o.SettleOut != nil {
		defer onSignals(o.SettleOut, o.SettleProfile, o.WindowProfile, log)()
	}
	if wire != nil {
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			reportWire(wctx, wire, func() uint64 { return p.Status().LinkLost }, o.WireOut)
		}()
		defer func() { stop(); <-done }()
	}
	return p.Run(ctx)
}

// onSignals is what a bench host process does on the idle benchmark's signals, said on out:
// settle on SIGUSR1 (settleOnSignal) and, when windowProfile is not empty, profile from one
// SIGUSR2 to the next (profileOnSignal), until stop.
func onSignals(out io.Writer, settleProfile, windowProfile string, log zerolog.Logger) (stop func()) {
	stopSettle := settleOnSignal(out, settleProfile, log)
	stopProfile := func() {}
	if windowProfile != "" {
		stopProfile = profileOnSignal(out, windowProfile, log)
	}
	return func() { stopProfile(); stopSettle() }
}

// settleOnSignal settles this process's memory on every SIGUSR1 and says so on out, until stop.
func settleOnSignal(out io.Writer, profile string, log zerolog.Logger) (stop func()) {
	return onSignal(syscall.SIGUSR1, func(n int) {
		debug.FreeOSMemory()
		writeMemProfile(profile, log)
		fmt.Fprintf(out, "bench-host settled %d\n", n)
	}, func() {})
}

// profileOnSignal starts a CPU profile into path on a SIGUSR2 and stops it on the next, saying
// so on out, until stop (which ends a profile still running).
func profileOnSignal(out io.Writer, path string, log zerolog.Logger) (stop func()) {
	stopProfile := func() {} // the signal goroutine's alone
	return onSignal(syscall.SIGUSR2, func(n int) {
		window := (n + 1) / 2
		if n%2 == 0 {
			stopProfile()
			stopProfile = func() {}
			fmt.Fprintf(out, "bench-host profiled %d\n", window)
			return
		}
		var err error
		if stopProfile, err = startProfile(path); err != nil {
			log.Error().Err(err).Msg("window profile")
			stopProfile = func() {}
		}
		fmt.Fprintf(out, "bench-host profiling %d\n", window)
	}, func() { stopProfile() })
}

// onSignal calls each on its own goroutine for every sig received, with how many so far (1, 2,
// …), and end once after the last, until stop (which waits for it).
func onSignal(sig os.Signal, each func(n int), end func()) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, sig)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer end()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-sigs:
				each(n)
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done); <-exited }
}

// profileWindow toggles the host's window profile (HostOptions.WindowProfile) and waits until it
// says it has started (start) or written it.
func (hp *hostProc) profileWindow(ctx context.Context, start bool) error {
	if start {
		hp.profiles++
	}
	if err := hp.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return err
	}
	want := fmt.Sprintf("bench-host profiled %d\n", hp.profiles)
	if start {
		want = fmt.Sprintf("bench-host profiling %d\n", hp.profiles)
	}
	return hp.waitSaid(ctx, "the bench host's window profile", want)
}

// waitSaid waits until the host process has said want (what names the wait in its error).
func (hp *hostProc) waitSaid(ctx context.Context, what, want string) error {
	return wait(ctx, 10*time.Second, what, hp.exited, func() error {
		if !strings.Contains(hp.out.String(), want) {
			return errors.New("not yet")
		}
		return nil
	})
}

// settle asks the host process to settle its memory (HostOptions.SettleOut) and waits until it
// has: its resident set then counts what is live, as settledRSS does in this process.
func (hp *hostProc) settle(ctx context.Context) error {
	hp.settles++
	if err := hp.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	return hp.waitSaid(ctx, "the bench host settled", fmt.Sprintf("bench-host settled %d\n", hp.settles))
}

// hostProc is one running bench host process.
type hostProc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      *tail
	waited   chan error
	killOnce sync.Once
	settles  int // SIGUSR1s sent (settle)
	profiles int // window profiles started (profileWindow)
}

func startHostProc(o MigrationOptions, url string) (*hostProc, error) {
	return startBenchHost(o.HostCommand([]string{"-server", url, "-entities", fmt.Sprint(o.Entities), "-moving", fmt.Sprint(o.Moving),
		"-exit-on-stdin-eof", "-log-level", o.HostLogLevel}), nil)
}

// startBenchHost starts cmd, a bench host; its stdout goes to stdout when not nil, the rest of
// its output to the tail.
func startBenchHost(cmd *exec.Cmd, stdout io.Writer) (*hostProc, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out := &tail{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	hp := &hostProc{cmd: cmd, stdin: stdin, out: out, waited: make(chan error, 1)}
	go func() { hp.waited <- cmd.Wait() }()
	return hp, nil
}

// exited returns an error once the process has exited.
func (hp *hostProc) exited() error {
	select {
	case err := <-hp.waited:
		hp.waited <- err
		return fmt.Errorf("bench host exited: %v", err)
	default:
		return nil
	}
}

// stop ends the process gracefully (the end of its standard input: a bench host started with
// -exit-on-stdin-eof leaves and writes its -cpuprofile), and kills it if it has not exited
// within grace. Idempotent, like kill.
func (hp *hostProc) stop(grace time.Duration) {
	hp.killOnce.Do(func() {
		_ = hp.stdin.Close()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case err := <-hp.waited:
			hp.waited <- err
		case <-t.C:
			hp.signalKill()
			<-hp.waited
		}
	})
}

// signalKill sends SIGKILL without waiting for the process.
func (hp *hostProc) signalKill() { _ = hp.cmd.Process.Signal(syscall.SIGKILL) }

// kill sends SIGKILL to the process (only to it: it was started by this benchmark) and reaps it.
// Idempotent.
func (hp *hostProc) kill() {
	hp.killOnce.Do(func() {
		hp.signalKill()
		<-hp.waited
		_ = hp.stdin.Close()
	})
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex // guards b
	b   []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
