package main

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
)

// TestCLI checks what a user sees: exit codes, where help goes, and that a usage error is
// reported once with a hint (no command here starts a server or a peer).
func TestCLI(t *testing.T) {
	tests := []struct {
		args []string
		code int
		// out and errOut must each contain every string listed; "" means the stream is empty.
		out, errOut []string
	}{
		{nil, 2, []string{""}, []string{"Usage:", "concord serve"}},
		{[]string{"help"}, 0, []string{"Usage:", "concord help COMMAND"}, []string{""}},
		{[]string{"-h"}, 0, []string{"Usage:"}, []string{""}},
		{[]string{"nope"}, 2, []string{""}, []string{`unknown command "nope"`, "Usage:"}},

		// -h on every command and subcommand: its help on stderr, exit 0.
		{[]string{"serve", "-h"}, 0, []string{""}, []string{"Usage: concord serve", "CONCORD_SECRET", "CONCORD_ADMIN_KEY", "-addr", "-dedicated-host", "-max-members"}},
		{[]string{"serve", "--help"}, 0, []string{""}, []string{"Usage: concord serve"}},
		{[]string{"host", "-h"}, 0, []string{""}, []string{"Usage: concord host", "-server", "CONCORD_TOKEN"}},
		{[]string{"bot", "-h"}, 0, []string{""}, []string{"Usage: concord bot", "-move-for"}},
		{[]string{"bench", "-h"}, 0, []string{""}, []string{"Usage: concord bench", "fanout", "migration"}},
		{[]string{"bench", "fanout", "-h"}, 0, []string{""}, []string{"Usage: concord bench fanout", "-duration", "-cpuprofile"}},
		{[]string{"bench", "migration", "-h"}, 0, []string{""}, []string{"Usage: concord bench migration", "-trials", "-standby"}},
		{[]string{"bench-host", "-h"}, 0, []string{""}, []string{"Usage: concord bench-host", "-cpuprofile", "-exit-on-stdin-eof"}},
		{[]string{"bench-rawhost", "-h"}, 0, []string{""}, []string{"Usage: concord bench-rawhost", "JSON lines", "-log-level"}},
		{[]string{"bench-join-bots", "-h"}, 0, []string{""}, []string{"Usage: concord bench-join-bots", "-first", "-timeout"}},
		{[]string{"bench", "joins", "-h"}, 0, []string{""}, []string{"Usage: concord bench joins", "-procs", "-cpuprofile-window"}},
		{[]string{"crdt", "-h"}, 0, []string{""}, []string{"Usage: concord crdt", "state", "dump"}},
		{[]string{"crdt", "state", "-h"}, 0, []string{""}, []string{"Usage: concord crdt state FILE..."}},
		{[]string{"crdt", "dump", "-h"}, 0, []string{""}, []string{"Usage: concord crdt dump FILE"}},

		// help COMMAND: the same help on stdout.
		{[]string{"help", "serve"}, 0, []string{"Usage: concord serve", "CONCORD_SECRET", "-addr"}, []string{""}},
		{[]string{"help", "bench"}, 0, []string{"Usage: concord bench", "fanout"}, []string{""}},
		{[]string{"help", "bench", "migration"}, 0, []string{"-peers"}, []string{""}},
		{[]string{"help", "crdt", "state"}, 0, []string{"Usage: concord crdt state"}, []string{""}},
		{[]string{"help", "token"}, 0, []string{"Usage: concord token", "CONCORD_SECRET", "-room"}, []string{""}},
		{[]string{"help", "nope"}, 2, []string{`unknown command "nope"`}, []string{""}},

		// Usage errors: exit 2, the error once, a hint, no help dump.
		{[]string{"serve", "-nope"}, 2, []string{""}, []string{"concord serve: flag provided but not defined: -nope", `Run "concord help serve" for usage.`}},
		{[]string{"serve", "extra"}, 2, []string{""}, []string{`concord serve: unexpected arguments ["extra"]`}},
		{[]string{"serve", "-log-level", "loud"}, 2, []string{""}, []string{`concord serve: bad --log-level "loud"`}},
		{[]string{"host", "extra"}, 2, []string{""}, []string{`concord host: unexpected arguments ["extra"]`}},
		{[]string{"bot", "-n", "x"}, 2, []string{""}, []string{`concord bot: invalid value "x" for flag -n`}},
		{[]string{"bot", "-n", "0"}, 2, []string{""}, []string{"concord bot: -n 0: want 1..1024"}},
		{[]string{"bench"}, 2, []string{""}, []string{"concord bench: want a benchmark", `Run "concord help bench" for usage.`}},
		{[]string{"bench", "nope"}, 2, []string{""}, []string{`concord bench: unknown benchmark "nope"`}},
		{[]string{"bench", "fanout", "-n", "100000"}, 2, []string{""}, []string{"concord bench fanout: want 1 ≤ -n", `Run "concord help bench fanout" for usage.`}},
		{[]string{"bench", "fanout", "-x"}, 2, []string{""}, []string{"concord bench fanout: flag provided but not defined: -x"}},
		{[]string{"bench", "fanout", "-schema", "nope"}, 2, []string{""}, []string{`concord bench fanout: -schema "nope": want quantized or plain`}},
		{[]string{"bench", "latejoin", "-h"}, 0, []string{""}, []string{"Usage: concord bench latejoin", "-joins", "-cpuprofile"}},
		{[]string{"bench", "all", "-h"}, 0, []string{""}, []string{"Usage: concord bench all", "-quick", "-skip"}},
		{[]string{"bench", "all", "-skip", "nope"}, 2, []string{""}, []string{`concord bench all: -skip "nope": want some of fanout`}},
		{[]string{"bench", "signaling", "-h"}, 0, []string{""}, []string{"Usage: concord bench signaling", "-rate"}},
		{[]string{"bench", "idle", "-h"}, 0, []string{""}, []string{"Usage: concord bench idle", "-standby"}},
		{[]string{"bench-echo", "-addr", "0.0.0.0:0"}, 2, []string{""}, []string{`-addr "0.0.0.0:0": want a loopback address`}},
		{[]string{"bench", "migration", "-peers", "1"}, 2, []string{""}, []string{"concord bench migration: want 2 ≤ -peers"}},
		{[]string{"bench-host", "-entities", "-1"}, 2, []string{""}, []string{"concord bench-host: want 0 ≤ -entities"}},
		{[]string{"crdt"}, 2, []string{""}, []string{"concord crdt: want a subcommand"}},
		{[]string{"crdt", "nope"}, 2, []string{""}, []string{`concord crdt: unknown subcommand "nope"`}},
		{[]string{"crdt", "state"}, 2, []string{""}, []string{"concord crdt state: want at least one FILE"}},
		{[]string{"crdt", "dump", "a", "b"}, 2, []string{""}, []string{"concord crdt dump: want exactly one FILE"}},
		{[]string{"crdt", "state", "-x"}, 2, []string{""}, []string{"concord crdt state: flag provided but not defined: -x"}},

		// A failure that is not a usage error: exit 1, no hint.
		{[]string{"crdt", "dump", "/nonexistent/x.crdt"}, 1, []string{""}, []string{"concord crdt dump: open /nonexistent/x.crdt"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCmd(t, nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			expect(t, "stdout", out, tc.out)
			expect(t, "stderr", errOut, tc.errOut)
			if code == 2 && strings.Contains(errOut, "concord ") && !strings.Contains(errOut, "Usage:") {
				// The error line is printed once, and the flags are not dumped after it.
				first := strings.SplitN(errOut, "\n", 2)[0]
				if n := strings.Count(errOut, strings.TrimPrefix(first, "concord ")); n != 1 {
					t.Errorf("the error appears %d times:\n%s", n, errOut)
				}
				if strings.Contains(errOut, "Flags:") || strings.Contains(errOut, "  -") {
					t.Errorf("a usage error dumps the flags:\n%s", errOut)
				}
			}
			if code == 1 && strings.Contains(errOut, "for usage") {
				t.Errorf("a failure that is not a usage error gives a usage hint:\n%s", errOut)
			}
		})
	}
}

func expect(t *testing.T, stream, got string, want []string) {
	t.Helper()
	for _, w := range want {
		if w == "" {
			if got != "" {
				t.Errorf("%s is not empty:\n%s", stream, got)
			}
			continue
		}
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", stream, w, got)
		}
	}
}

// TestICEDefaultOnThisMachine: with the signaling URL on loopback, a command's WebRTC uses this
// machine's own address (peer.ICELocal: stock browsers never pair with loopback), unless
// CONCORD_LOOPBACK_ONLY pins it to loopback as the test suite does; elsewhere, any.
func TestICEDefaultOnThisMachine(t *testing.T) {
	for _, tc := range []struct {
		server, env, flag string
		want              peer.ICEMode
	}{
		{"ws://127.0.0.1:7880/ws", "", "", peer.ICELocal},
		{"ws://localhost:7880/ws", "1", "", peer.ICELoopback},
		{"ws://127.0.0.1:7880/ws", "", "loopback", peer.ICELoopback},
		{"ws://127.0.0.1:7880/ws", "1", "local", peer.ICELocal},
		{"wss://game.example.com/ws", "", "", peer.ICEAuto},
	} {
		t.Setenv(envLoopbackOnly, tc.env)
		cfg := peer.Config{Server: tc.server}
		if err := (peerNet{ice: tc.flag}).config(zerolog.Nop(), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.ICE != tc.want {
			t.Errorf("server %s, %s=%q, --ice %q: mode %q, want %q", tc.server, envLoopbackOnly, tc.env, tc.flag, cfg.ICE, tc.want)
		}
	}
}

// TestServeRefusesUnauthenticatedCluster: a cluster whose routes would take anyone (no
// CONCORD_SECRET, no --cluster-secret, no route TLS) is a usage error naming the way out, before
// anything listens; so is a route address without its interface. --cluster-insecure is the
// operator saying so (docs/security.md §7).
func TestServeRefusesUnauthenticatedCluster(t *testing.T) {
	t.Setenv("CONCORD_SECRET", "")
	t.Setenv("CONCORD_CLUSTER_SECRET", "")
	base := []string{"serve", "--data", t.TempDir(), "--cluster-name", "c", "--routes", "nats-route://127.0.0.1:1"}
	_, errOut, code := runCmd(t, nil, append(base, "--cluster", "127.0.0.1:0")...)
	if code != 2 {
		t.Fatalf("exit %d, want 2 (usage)\n%s", code, errOut)
	}
	expect(t, "stderr", errOut, []string{"cluster routes without authentication", "--cluster-secret", "--cluster-insecure"})
	_, errOut, code = runCmd(t, nil, append(base, "--cluster-secret", "s", "--cluster", ":6222")...)
	if code != 2 {
		t.Fatalf("exit %d, want 2 (usage)\n%s", code, errOut)
	}
	expect(t, "stderr", errOut, []string{"with the interface named"})
	_, errOut, code = runCmd(t, nil, append(base, "--cluster-secret", "s")...)
	if code != 2 {
		t.Fatalf("exit %d, want 2 (usage): --cluster is required with routes\n%s", code, errOut)
	}
}
