package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

const usage = `concord — WebRTC host-authoritative multiplayer sessions

Usage:
  concord serve [--config FILE] [--addr 127.0.0.1:7880] [--dedicated-host=true] [--room arena] [--data ./concord-data] [--scene ROOM=FILE]…
                [--public-ip IP] [--udp ADDR] [--turn ADDR] [--turn-tls ADDR --turn-host NAME] [--turn-allow-private CIDR,…]
                [--ice-server URL]… [--tls-cert FILE --tls-key FILE] [--origin ORIGIN,…] [--nats URL] [--pprof]
  concord host  [--server http://127.0.0.1:7880] [--room arena] [--ice loopback|any] [--udp ADDR] [--public-ip IP] [--ca FILE]
  concord bot   [--server http://127.0.0.1:7880] [--room arena] [-n 8] [--move-for 10s] [--name bot] [--standby] [--ice loopback|any] [--ca FILE]
                [--voice FILE.ogg | --voice-listen]
  concord bench fanout [-n 8] [-m 100] [-duration 10s]              host → N bots over pion vs raw pion
  concord bench migration [-peers 32] [-entities 10000] [-trials 20]  SIGKILL the host, measure the pause
  concord bench joins [-n 512] [-procs P]                           N bots (in bot processes of 256) join one serve at once: time until synced
  concord bench latejoin [-entities 10000] [-joins 20]              members join a full room one after another: joined → synced, step by step
  concord bench voice [-publishers 8] [-listeners 32]               speakers × listeners through the voice forwarder vs raw pion
  concord bench signaling [-rate 4000]                              joins/s and memory per member vs a bare websocket echo server
  concord bench idle [-n 256]                                       idle members' cost vs as many raw pion links
  concord bench all [-quick]                                        the headline table of BENCHMARKS.md, each goal and its comparison
  concord token --room R --user U [--power N] [--host] [--mod] [--voice listen] [--ttl 1h]   mint a join token from CONCORD_SECRET
  concord kick --room R --user U [--reason TEXT]                    end a member's session in a room (CONCORD_ADMIN_KEY or --token)
  concord ban --room R --user U [--for 1h] [--reason TEXT]          keep an identity out of a room, for a while or for good
  concord unban --room R --user U                                   lift a ban
  concord bans --room R                                             list a room's bans
  concord crdt state FILE...     merge ADR-117 message streams, print the converged state as JSON
  concord crdt dump FILE         print one line per ADR-117 message
  concord crdt export [--data ./concord-data] [--room arena]   a room's last checkpoint as a main.crdt stream
  concord version                this binary's module version and VCS revision
  concord help [COMMAND]         this usage, or a command's help and flags

Run "concord help COMMAND" or "concord COMMAND -h" for a command's help and flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit status: 0, 1 when the command failed,
// 2 for a usage error (reported once, with a hint), like the flag package's own.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "host":
		err = cmdHost(ctx, args[1:], stderr)
	case "bot":
		err = cmdBot(ctx, args[1:], stdout, stderr)
	case "token":
		err = cmdToken(args[1:], stdout, stderr, time.Now)
	case "kick", "ban", "unban", "bans":
		err = cmdModerate(ctx, args[0], args[1:], stdout, stderr)
	case "crdt":
		err = cmdCRDT(args[1:], stdin, stdout, stderr)
	case "version":
		err = cmdVersion(args[1:], stdout, stderr)
	case "bench":
		err = cmdBench(ctx, args[1:], stdout, stderr)
	case "bench-host": // hidden: the host process `bench migration` kills
		err = cmdBenchHost(ctx, args[1:], stdin, stdout, stderr)
	case "bench-rawhost": // hidden: the raw pion host process `bench idle` measures
		err = cmdBenchRawHost(ctx, args[1:], stdin, stdout, stderr)
	case "bench-voice-server": // hidden: the forwarder process `bench voice` measures
		err = cmdBenchVoiceServer(ctx, args[1:], stdin, stdout, stderr)
	case "bench-join-bots": // hidden: a bot process of `bench joins`
		err = cmdBenchJoinBots(ctx, args[1:], stdin, stdout, stderr)
	case "bench-echo": // hidden: the echo server `bench signaling` compares serve's memory with
		err = cmdBenchEcho(ctx, args[1:], stderr)
	case "help":
		if len(args) > 1 {
			// `help serve` is `serve -h` with the help on stdout.
			return run(helpArgs(args[1:]), stdin, stdout, stdout)
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "concord: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		name := commandName(args)
		fmt.Fprintf(stderr, "concord %s: %v\n", name, err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, usageHint(name))
			return 2
		}
		return 1
	}
	return 0
}

// usageError is a mistake in the command line: run exits 2.
type usageError struct{ error }

// newLogger logs to stderr: human-readable on a terminal, JSON otherwise.
func newLogger(w io.Writer, level string) (zerolog.Logger, error) {
	lv, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), usageError{fmt.Errorf("bad --log-level %q", level)}
	}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	}
	return zerolog.New(w).Level(lv).With().Timestamp().Logger(), nil
}
