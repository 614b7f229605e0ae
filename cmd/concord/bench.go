package main

// concord bench and bench-host: flags for the harness in internal/harness/bench.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/concordrtc/concord/internal/harness/bench"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// The benchmarks measure on loopback, their child processes (serve, bench-host) included.
	if os.Getenv(envLoopbackOnly) == "" {
		if err := os.Setenv(envLoopbackOnly, "1"); err != nil {
			return err
		}
	}
	if len(args) == 0 {
		return usageError{errors.New("want a benchmark: fanout, migration, latejoin, joins, voice, signaling, idle or all")}
	}
	switch args[0] {
	case "fanout":
		return cmdBenchFanout(ctx, args[1:], stdout, stderr)
	case "migration":
		return cmdBenchMigration(ctx, args[1:], stdout, stderr)
	case "latejoin":
		return cmdBenchLateJoin(ctx, args[1:], stdout, stderr)
	case "joins":
		return cmdBenchJoins(ctx, args[1:], stdout, stderr)
	case "voice":
		return cmdBenchVoice(ctx, args[1:], stdout, stderr)
	case "all":
		return cmdBenchAll(ctx, args[1:], stdout, stderr)
	case "signaling":
		return cmdBenchSignaling(ctx, args[1:], stdout, stderr)
	case "idle":
		return cmdBenchIdle(ctx, args[1:], stdout, stderr)
	}
	if isHelpArg(args[0]) {
		return groupHelp(stderr, "bench")
	}
	return usageError{fmt.Errorf("unknown benchmark %q: want fanout, migration, latejoin, joins, voice, signaling, idle or all", args[0])}
}

func cmdBenchFanout(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench fanout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o bench.FanoutOptions
	fs.IntVar(&o.Bots, "n", 8, "number of bot peers receiving the host's updates")
	fs.IntVar(&o.Entities, "m", 100, "number of entities the host moves every tick")
	fs.IntVar(&o.Interest, "interest", 0, "entities each bot follows (the host's interest management); 0: all")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time of each phase")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "time each phase runs before it is measured")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the Concord phase's measured window to this file (of this process: the bots, or the bots and the host with -host-in-process)")
	fs.BoolVar(&o.Deltas, "deltas", false, "the host sends each bot deltas against the values it acknowledged (docs/protocol.md §2.10); without it every bot gets the same datagrams, whole values")
	fs.BoolVar(&o.Relay, "relay", false, "bots reach the host only through a TURN relay (a `concord serve --turn` child process on loopback, whose CPU is reported)")
	inProcess := fs.Bool("host-in-process", false, "run the Concord phase's host in this process instead of a bench-host process of its own (its CPU is then not measured apart)")
	hostProfile := fs.String("host-cpuprofile", "", "write a CPU profile of the bench-host process (its whole life, set-up included) to this file")
	fs.BoolVar(&o.NoRaw, "no-raw", false, "skip the raw pion phase (measure the Concord phase only)")
	fs.StringVar(&o.Schema, "schema", bench.SchemaQuantized, "the movers' position: quantized (6 bytes, as a tuned game would encode it) or plain (two float32, 8 bytes, as Colyseus's side holds it)")
	hostMemProfile := fs.String("host-memprofile", "", "write a heap profile of the bench-host process (allocations over its whole life) to this file when it stops")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	if o.Interest > 0 && *inProcess {
		return usageError{errors.New("-interest needs the host in a process of its own (no -host-in-process)")}
	}
	if (*hostProfile != "" || *hostMemProfile != "") && *inProcess {
		return usageError{errors.New("-host-cpuprofile and -host-memprofile need the host in a process of its own (no -host-in-process)")}
	}
	if !*inProcess {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.HostCommand = func(args []string) *exec.Cmd {
			if *hostProfile != "" {
				args = append(args, "-cpuprofile", *hostProfile)
			}
			if *hostMemProfile != "" {
				args = append(args, "-memprofile", *hostMemProfile)
			}
			return exec.Command(exe, append([]string{"bench-host"}, args...)...)
		}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	res, err := bench.Fanout(ctx, o, log, stderr)
	if err != nil {
		return err
	}
	res.Print(stdout)
	return nil
}

func cmdBenchMigration(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench migration", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o bench.MigrationOptions
	fs.IntVar(&o.Peers, "peers", 32, "surviving peers in this process (the killed host is one more, in its own process)")
	fs.IntVar(&o.Entities, "entities", 10000, "entities in the world")
	fs.IntVar(&o.Moving, "moving", 100, "entities the host moves every tick (the divergence a kill can leave)")
	fs.IntVar(&o.Trials, "trials", 20, "host kills")
	fs.DurationVar(&o.Settle, "settle", 500*time.Millisecond, "steady state before each kill")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process over all trials to this file")
	fs.DurationVar(&o.ReportInterval, "report-interval", 0, "the bots' status report interval (0: peer's default, 1s)")
	fs.DurationVar(&o.DigestInterval, "digest-interval", 0, "the bots' anti-entropy digest interval (0: peer's default, 1s)")
	fs.BoolVar(&o.Standby, "standby", false, "members keep a standby link to the next host in a room of any size (peer.Config.Standby; by default only in rooms of ≤ 64 members)")
	fs.BoolVar(&o.NoStandby, "no-standby", false, "members keep no standby link (peer.Config.NoStandby): every migration makes new links")
	fs.BoolVar(&o.Relay, "relay", false, "members reach the host only through a TURN relay (a `concord serve --turn` child process on loopback, whose CPU is reported)")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o.HostLogLevel = "warn"
	o.HostCommand = func(args []string) *exec.Cmd {
		return exec.Command(exe, append([]string{"bench-host"}, args...)...)
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	res, err := bench.Migration(ctx, o, log, stderr)
	if res != nil {
		res.Print(stdout)
	}
	return err
}

// cmdBenchHost runs the host process the migration benchmark kills and the fanout benchmark
// measures.
func cmdBenchHost(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := bench.HostOptions{Device: fmt.Sprintf("p%d", os.Getpid())}
	fs.StringVar(&o.Server, "server", "http://127.0.0.1:7880", "signaling server URL")
	fs.IntVar(&o.Entities, "entities", 10000, "entities to spawn in an empty world")
	fs.IntVar(&o.Moving, "moving", 100, "entities moved every tick")
	fs.IntVar(&o.Interest, "interest", 0, "entities each member follows (interest management); 0: all")
	fs.BoolVar(&o.Deltas, "deltas", false, "send members deltas against the values they acknowledged (docs/protocol.md §2.10)")
	fs.StringVar(&o.Schema, "schema", bench.SchemaQuantized, "the movers' position: quantized (6 bytes) or plain (two float32, 8 bytes)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process to this file (written when it stops: SIGINT, SIGTERM or the end of standard input, not SIGKILL)")
	fs.StringVar(&o.MemProfile, "memprofile", "", "write a heap profile of this process (allocations over its whole life) to this file when it stops, as -cpuprofile")
	fs.StringVar(&o.SettleProfile, "settle-memprofile", "", "write a heap profile of this process to this file whenever it settles its memory (SIGUSR1, the idle benchmark)")
	fs.StringVar(&o.WindowProfile, "window-cpuprofile", "", "write a CPU profile of this process from one SIGUSR2 to the next to this file (the idle benchmark's window)")
	exitOnEOF := fs.Bool("exit-on-stdin-eof", false, "stop when standard input ends (the benchmark that started this process is gone)")
	wireStats := fs.Bool("wire-stats", false, "count the host's UDP packets and print the counts on standard output every 100 ms")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	if *wireStats {
		o.WireOut = stdout
	}
	o.SettleOut = stderr // SIGUSR1: the idle benchmark reads a settled resident set
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *exitOnEOF {
		// This goroutine ends with the process: a read of stdin cannot be interrupted.
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	err = bench.RunHost(ctx, o, log)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// cmdBenchRawHost runs the raw pion host process of the idle benchmark (bench.RunRawHost): its
// links' signals on standard input and output, until standard input ends.
func cmdBenchRawHost(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-rawhost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := bench.RawHostOptions{SettleOut: stderr} // SIGUSR1: the idle benchmark reads a settled resident set
	fs.StringVar(&o.WindowProfile, "window-cpuprofile", "", "write a CPU profile of this process from one SIGUSR2 to the next to this file (the idle benchmark's window)")
	fs.StringVar(&o.SettleProfile, "settle-memprofile", "", "write a heap profile of this process to this file whenever it settles its memory (SIGUSR1, the idle benchmark)")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	return bench.RunRawHost(ctx, o, stdin, stdout, log)
}
