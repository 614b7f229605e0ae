package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/concordrtc/concord/internal/harness/bench"
	"github.com/concordrtc/concord/voice"
)

func cmdBenchVoice(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench voice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o bench.VoiceOptions
	fs.IntVar(&o.Publishers, "publishers", 8, "speakers, each publishing 50 Opus packets a second")
	fs.IntVar(&o.Listeners, "listeners", 32, "listeners, each hearing every speaker (slots = -publishers)")
	fs.Float64Var(&o.Radius, "radius", voice.DefaultRadius, "the proximity phase's radius, mm (every listener is within it of every speaker)")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time of each phase")
	fs.DurationVar(&o.Warmup, "warmup", 3*time.Second, "time each phase runs before it is measured")
	fs.BoolVar(&o.NoRaw, "no-raw", false, "skip the raw pion relay phase")
	fs.StringVar(&o.ServerProfile, "server-cpuprofile", "", "`PREFIX` of CPU profiles of each phase's server process (PREFIX-MODE-RADIUS.pprof)")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o.ServerCommand = func(args []string) *exec.Cmd {
		return exec.Command(exe, append([]string{"bench-voice-server", "-log-level", *logLevel}, args...)...)
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	res, err := bench.Voice(ctx, o, log, stderr)
	if res != nil {
		res.Print(stdout)
	}
	return err
}

// cmdBenchVoiceServer is the forwarder process `bench voice` measures (hidden).
func cmdBenchVoiceServer(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-voice-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o bench.VoiceServerOptions
	fs.StringVar(&o.Mode, "mode", "concord", "raw (a pion track relay) or concord (the forwarder)")
	fs.IntVar(&o.Publishers, "publishers", 8, "speakers")
	fs.Float64Var(&o.Radius, "radius", 0, "proximity radius, mm (0: off)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process to this `FILE` when it stops")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.Publishers < 1 {
		return usageError{errors.New("-publishers ≥ 1")}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the benchmark that started this process closes stdin when done (or dies)
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	return bench.RunVoiceServer(ctx, o, stdout, log)
}
