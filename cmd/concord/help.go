package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// helpText is a command's usage line and what it does, printed above its flags by -h and by
// `concord help COMMAND`.
type helpText struct {
	usage string
	about string
}

// helps is keyed by the command's flag set name ("serve", "bench fanout", ...). Groups (bench,
// crdt) have an entry of their own that lists their subcommands.
var helps = map[string]helpText{
	"serve": {"concord serve [flags]", `Serves the demo page, signaling (/ws), /api/rooms, /metrics and /healthz, and runs a
dedicated host for --room and every --scene room in this process. Rooms, their peer indices and
terms live in --data (embedded JetStream) across restarts; --data "" keeps them in memory only.
With --turn, also an embedded TURN/STUN server whose time-limited credentials every member gets
when it joins; README "Deploy" shows a public setup. The client modules are always at
/concord/js/ (index.js); --static DIR serves a game's own page at / instead of the demo, and
--origin also admits other origins' pages to import the client (CORS); docs/guide.md builds a game.
--config FILE reads the flags from a TOML file whose keys are their names (docs/serve.toml);
flags on the command line override it, and --print-config prints the settings as such a file.
A Go program embeds the same server as package server (go doc github.com/concordrtc/concord/server).

Environment:
  CONCORD_SECRET     HS256 key of join tokens (and of the resume tokens peers present after a
                     server restart: keep it when restarting). Unset, the server runs open: anyone
                     may join any room as anyone and host it; the log warns about it.
  CONCORD_ADMIN_KEY  with CONCORD_SECRET, lets "Authorization: Bearer <key>" list every room in
                     /api/rooms (a join token sees only its own room), read /metrics and
                     /debug/pprof (nobody else may), and kick and ban (concord kick, ban).
  CONCORD_ICE_SECRET default of --ice-server-secret (coturn's static-auth-secret).
  CONCORD_CLUSTER_SECRET  default of --cluster-secret, the cluster's route password (unset:
                     derived from CONCORD_SECRET; a cluster with neither nor route TLS refuses
                     to start unless --cluster-insecure).
  CONCORD_NATS_TOKEN default of --nats-token.`},
	"host": {"concord host [flags]", `Runs a dedicated host for --room as its own process: it joins as the pinned host user and
takes the room over once it has synced. A server with a self-signed certificate: --ca cert.pem.`},
	"bot": {"concord bot [flags]", `Runs -n headless players of the demo game in this process and prints one status line a
second: synced members, host and term, entities, whether every replica hash agrees.

Against a server with a secret (serve's CONCORD_SECRET), the bots need join tokens:
  --token T          every bot joins as T's user, each on a device of its own: a token without a
                     device claim admits serve's --max-devices-per-token bots (8 by default)
  CONCORD_SECRET     (when set and --token is not) each bot mints its own token: users bot1 … botN
                     (--name), kind bot, may host, valid one hour (checked at the join; a bot that
                     reconnects resumes with the server's resume token). For test rigs that hold the
                     secret; deployments hand out tokens instead.
A server with a self-signed certificate: --ca cert.pem.

Environment:
  CONCORD_TOKEN   default of --token.
  CONCORD_SECRET  the HS256 key to mint the bots' tokens with, when --token is not given.`},
	"bench": {"concord bench fanout|migration|latejoin|joins|voice|signaling|idle|all [flags]", `Measures Concord over real WebRTC links on loopback (results in BENCHMARKS.md):
  fanout     host → N bots through Concord, then the same datagrams over raw pion: CPU, latency
  migration  SIGKILL a host process under P peers, many times: the pause and the bytes moved
  latejoin   members join a host process holding a large world one after another: joined → synced,
             step by step
  joins      N bots join one dedicated host (concord serve) at once: time until all are synced
  voice      P speakers × L listeners through the voice forwarder, then a raw pion relay: CPU per stream
  signaling  joins a second through concord serve and its memory per idle member, against a bare
             gorilla/websocket echo server in the same run
  idle       what idle members cost (CPU) against as many idle raw pion links, with -standby also
             with standby links
  all        the headline set, printed as the table that leads BENCHMARKS.md (scripts/bench-all.sh)
Run "concord help bench NAME" for the flags of each.`},
	"bench signaling": {"concord bench signaling [flags]", `Starts a bare gorilla/websocket echo server (concord bench-echo) and opens -rate websockets a
second for -duration, each sending one message and reading its echo, and keeps them open; then the
same against "concord serve" (--data ""), each a member joining a room of -room-size. Prints the
joins a second sustained, join → joined p50/p99 and each server's RSS growth per open connection.`},
	"bench latejoin": {"concord bench latejoin [flags]", `Starts a bench host process (concord bench-host) holding -entities entities, -moving of them moving
every tick, then -joins members one after another, each alone in this process: each joins, syncs
and leaves. Prints joined → synced p50/p99, start → synced p50, the snapshot's size and the median
of each step of a join (link made, offer sent, answer in, ICE, DTLS, channels open, first and last
snapshot byte, apply). The same row as "concord bench all".`},
	"bench idle": {"concord bench idle [flags]", `Opens -n raw pion link pairs in this process and measures their CPU over -window; then -n raw pion
links from this process to a raw host process (concord bench-rawhost: Concord's shape, two processes);
then a room of -n members whose host (concord bench-host, an empty world) moves nothing, both ends
measured (this process and the host process); with -standby, the same room with standby links. The
verdict judges the host process against the raw host process (CPU and memory per member) and prints
both wholes and the one-process figure beside it.`},
	"bench all": {"concord bench all [-quick] [flags]", `Runs the headline set of BENCHMARKS.md and prints its leading table: each figure, its
same-run comparison, the goal, pass or MISS and by how much, and the load average. The fan-out
rows run bench/colyseus/run.mjs (node; npm ci when its node_modules is missing), the CRDT row
crdt/testdata/dcl/bench.mjs; a row whose side cannot run says why. Run it from the repository's
root (or give -colyseus and -dcl). About 15 minutes on 2 vCPUs; -quick under 3.`},
	"bench voice": {"concord bench voice [flags]", `-publishers speakers publish 50 Opus packets a second, each heard by -listeners listeners, through a
forwarder in a process of its own (concord bench-voice-server) whose CPU is measured: a raw pion track relay
(the floor), the voice forwarder with proximity off, and with proximity on. Prints CPU per forwarded stream
and packet, loss, jitter and mouth-to-ear delay (docs/protocol.md §10).`},
	"bench-voice-server": {"concord bench-voice-server [flags]", `The forwarder process that "concord bench voice" measures: -mode raw or concord.`},
	"bench-join-bots": {"concord bench-join-bots [flags]", `A bot process of "concord bench joins": prepares -n bots, says ready on stdout, starts them all
at the "go" line on stdin and reports each bot synced (JSON lines; cmd/concord/benchjoinbots.go).`},
	"bench joins": {"concord bench joins [flags]", `Starts "concord serve" (its dedicated host, --max-members N+8) on a free loopback port, then -n
passive bots spread over -procs bot processes (concord bench-join-bots, 256 bots each by default):
each prepares its bots, and all start their joins at one instant. Prints the time until every bot is synced (p50, p90),
the room's term at the end (term changes: term - 1) and serve's RSS.`},
	"bench fanout": {"concord bench fanout [flags]", `A host moves -m entities every 50 ms tick and -n bots in this process receive them; the
host runs as a process of its own (concord bench-host) whose CPU and UDP packets are measured
apart. Then raw pion links carry the same datagrams. Prints both rows and the concord/raw ratios.`},
	"bench migration": {"concord bench migration [flags]", `-peers peers in this process follow a host that runs as its own process (concord
bench-host); the host is killed with SIGKILL -trials times and the pause until every replica has
converged and updates flow again is measured.`},
	"bench-host": {"concord bench-host [flags]", `The host process that "concord bench migration" starts and kills and "concord bench
fanout" measures: a host of the bench game in the room "bench".`},
	"bench-rawhost": {"concord bench-rawhost [flags]", `The raw pion host process that "concord bench idle" measures: one link answered per member,
its signals as JSON lines on standard input and output, until standard input ends.`},
	"token": {"concord token --room R --user U [flags]", `Prints an HS256 join token signed with CONCORD_SECRET, the secret "concord serve" verifies
joins with: for trying a server with a secret (the page takes it as ?token=) and for scripts.
Deployments mint the same tokens in their own backend (claims: docs/protocol.md "Signaling:
tokens").

Environment:
  CONCORD_SECRET  the HS256 key; required.`},
	"version": {"concord version", `Prints the module version of this binary, the VCS revision it was built from when there
is one ("+dirty": with uncommitted changes) and the Go version.`},
	"help": {"concord help [COMMAND [SUBCOMMAND]]", `Prints the usage of every command, or the help and flags of one.`},
	"crdt": {"concord crdt state|dump FILE... | export [flags]", `ADR-117 message streams (files such as a Decentraland main.crdt):
  state FILE...  merge the streams, print the converged state as JSON
  dump FILE      print one line per message
  export         write a room's last checkpoint from a serve data directory`},
	"crdt state": {"concord crdt state FILE...", `Merges every ADR-117 stream (- for standard input) into one replica and prints its state as
canonical JSON. On malformed input it names the file and byte offset, and prints nothing.`},
	"crdt dump": {"concord crdt dump FILE", `Prints one line per ADR-117 message of FILE (- for standard input): offset, type, entity,
component, timestamp and data length.`},
	"crdt export": {"concord crdt export [--data DIR] [--room ROOM] > room.crdt", `Writes the last checkpoint of ROOM in the data directory of a stopped concord serve as an
ADR-117 stream in canonical order (a main.crdt that crdt state and @dcl/ecs read). A malformed
checkpoint is reported with the room, its JetStream subject and the byte offset.`},
}

// printHelp writes the help of the command named name, and the flags of fs when it has any.
func printHelp(w io.Writer, name string, fs *flag.FlagSet) {
	h, ok := helps[name]
	if !ok {
		h.usage = "concord " + name + " [flags]"
	}
	fmt.Fprintf(w, "Usage: %s\n", h.usage)
	if h.about != "" {
		fmt.Fprintf(w, "\n%s\n", h.about)
	}
	if fs == nil {
		return
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		if name == "serve" {
			printGroupedFlags(w, fs, serveGroups)
			return
		}
		fmt.Fprintf(w, "\nFlags:\n")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

// parseFlags parses the flags of a command that takes no arguments besides them.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}

// parseFlagsArgs parses a command's flags; the arguments after them are in fs.Args(). -h prints
// the command's help to the flag set's output and returns flag.ErrHelp (run exits 0). A bad flag
// is a usageError that run prints once (the flag package would print it, and the whole help,
// itself).
func parseFlagsArgs(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(out, fs.Name(), fs)
		return err
	case err != nil:
		return usageError{err}
	}
	return nil
}

// isHelpArg reports whether a is a request for help in place of a subcommand.
func isHelpArg(a string) bool {
	return a == "-h" || a == "-help" || a == "--help" || a == "help"
}

// groupHelp prints the help of a command group (bench, crdt) and returns flag.ErrHelp.
func groupHelp(w io.Writer, group string) error {
	printHelp(w, group, nil)
	return flag.ErrHelp
}

// commandName is the name of the command args run: "bench fanout" for a known subcommand of a
// group, otherwise the first argument.
func commandName(args []string) string {
	if len(args) > 1 {
		if _, ok := helps[args[0]+" "+args[1]]; ok {
			return args[0] + " " + args[1]
		}
	}
	return args[0]
}

// helpArgs turns `help CMD [SUB]` into the arguments that ask CMD [SUB] for its help.
func helpArgs(args []string) []string {
	return append(append([]string(nil), args...), "-h")
}

// usageHint is the line run prints after a usage error.
func usageHint(name string) string {
	if _, ok := helps[name]; !ok {
		return `Run "concord help" for usage.`
	}
	return fmt.Sprintf("Run \"concord help %s\" for usage.", name)
}
