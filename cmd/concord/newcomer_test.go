package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"github.com/concordrtc/concord/internal/testkit/testcert"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// startResult runs startServer in a goroutine and gives its result.
func startResult(ctx context.Context, o server.Options, log zerolog.Logger) <-chan error {
	done := make(chan error, 1)
	go func() {
		s, err := startServer(ctx, o, log)
		if err == nil {
			s.stop()
		}
		done <- err
	}()
	return done
}

// runNATS runs a nats-server with opts on a free loopback port until t ends.
func runNATS(t *testing.T, opts natsserver.Options) *natsserver.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", natsserver.RANDOM_PORT, true, true
	ns, err := natsserver.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return ns
}

// TestServeNATSWithoutJetStream: `serve --nats URL` against a NATS server that runs without
// JetStream fails within seconds, saying so and how to fix it, instead of waiting two minutes
// for an answer that never comes ("no responders available for request").
func TestServeNATSWithoutJetStream(t *testing.T) {
	ns := runNATS(t, natsserver.Options{}) // without JetStream
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	done := startResult(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", NATS: ns.ClientURL()}, zerolog.New(zerolog.NewTestWriter(t)))
	var err error
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatalf("serve --nats still starting after 15 s (then: %v)", <-done)
	}
	if err == nil || !strings.Contains(err.Error(), "the NATS server at "+ns.ClientURL()+" has no JetStream: start it with -js") {
		t.Fatalf("serve --nats: %v, want it to say the server has no JetStream", err)
	}
	if !errors.Is(err, durable.ErrNoJetStream) {
		t.Errorf("%v is not durable.ErrNoJetStream", err)
	}
	t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// TestServeNATSLog: `serve --nats URL` (a NATS with JetStream) logs where its rooms are, the
// NATS URL without its password, and neither names nor creates ./concord-data, which it does not use.
func TestServeNATSLog(t *testing.T) {
	ns := runNATS(t, natsserver.Options{JetStream: true, StoreDir: t.TempDir(), Username: "u", Password: "hunter2"})
	t.Chdir(t.TempDir())
	url := strings.Replace(ns.ClientURL(), "nats://", "nats://u:hunter2@", 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- cmdServe(ctx, []string{"--addr", "127.0.0.1:0", "--nats", url, "--dedicated-host=false", "--node-name", "n1"}, io.Discard, &logs)
	}()
	poll.Until(t, 30*time.Second, "serve --nats serving", func() error {
		select {
		case err := <-done:
			t.Fatalf("serve: %v\n%s", err, logs.String())
		default:
		}
		if !strings.Contains(logs.String(), "concord serving") {
			return errors.New("not yet")
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	l := logs.String()
	if strings.Contains(l, "concord-data") || strings.Contains(l, "hunter2") || !strings.Contains(l, `"nats":"nats://REDACTED@127.0.0.1:`) {
		t.Errorf("the log names the data directory, shows the password or lacks the NATS URL:\n%s", l)
	}
	if _, err := os.Stat("concord-data"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("./concord-data exists (%v)", err)
	}
}

// TestServeStartupInterrupted: a startup blocked waiting for JetStream (a cluster node whose
// routes lead nowhere never gets its quorum, for up to two minutes) ends as soon as its context
// does (SIGINT/SIGTERM cancel it in run), and cmdServe then exits cleanly.
func TestServeStartupInterrupted(t *testing.T) {
	var logs syncbuf.Buffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := server.Options{Addr: "127.0.0.1:0", Room: "arena", Data: t.TempDir(), NodeName: "n1", ClusterName: "c", ClusterSecret: "route secret",
		ClusterAddr: freeLoopbackAddr(t), Routes: []string{"nats-route://" + freeLoopbackAddr(t), "nats-route://" + freeLoopbackAddr(t)}}
	done := startResult(ctx, o, log)
	poll.Until(t, 30*time.Second, "serve waits for JetStream's quorum", func() error {
		// The embedded server runs and dials its routes: JetStream waits for them.
		if !strings.Contains(logs.String(), "Error trying to connect to route") {
			return errors.New("not waiting yet")
		}
		return nil
	})
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("startServer: %v, want the context's error", err)
		}
		if startupError(ctx, err, log) != nil {
			t.Errorf("cmdServe would fail after a signal: %v", startupError(ctx, err, log))
		}
		t.Logf("stopped %v after the signal: %v", time.Since(stopped).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("startServer still blocked 10 s after its context ended")
	}
}

// TestServeFlagsCheckedFirst: a bad flag, or a --scene file that is not there, fails serve before
// it creates anything: the data directory does not exist afterwards.
func TestServeFlagsCheckedFirst(t *testing.T) {
	tests := []struct {
		args  []string
		usage bool // the error is a usage error: exit 2
		err   string
	}{
		{[]string{"--turn", ":3478"}, true, "--turn \":3478\" listens on every interface: give --public-ip"},
		{[]string{"--public-ip", "1.2.3"}, true, `--public-ip "1.2.3": not an IPv4 address`},
		{[]string{"--turn", "127.0.0.1:0", "--turn-ports", "9-2"}, true, `--turn-ports "9-2"`},
		{[]string{"--turn", "127.0.0.1:0", "--turn-host", "turn.example.com"}, true, "--turn-host names the turns: address: it needs --turn-tls"},
		{[]string{"--udp", "127.0.0.1:x"}, true, `--udp "127.0.0.1:x"`},
		{[]string{"--tls-cert", "c.pem"}, true, "--tls-cert and --tls-key go together"},
		{[]string{"--scene", "room=/missing.crdt"}, false, "--scene room=/missing.crdt: open /missing.crdt: no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "concord-data")
			args := append([]string{"--addr", "127.0.0.1:0", "--data", data, "--log-level", "error"}, tc.args...)
			// Bounded: a serve that starts (its flags passed) stops after 5 s.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := cmdServe(ctx, args, io.Discard, io.Discard)
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), tc.err) || errors.As(err, &ue) != tc.usage {
				t.Errorf("serve %s: %v, want an error with %q (a usage error: %v)", strings.Join(tc.args, " "), err, tc.err, tc.usage)
			}
			if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data directory exists after the failure (%v)", err)
			}
		})
	}
}

// TestUsageListsEveryCommand: the main usage names every command and subcommand that has a help
// of its own (helps), but the hidden processes the benches start (bench-host, bench-rawhost,
// bench-voice-server, bench-join-bots).
func TestUsageListsEveryCommand(t *testing.T) {
	for name := range helps {
		if name == "bench-host" || name == "bench-rawhost" || name == "bench-voice-server" || name == "bench-join-bots" {
			continue
		}
		if !strings.Contains(usage, "concord "+name+" ") && !strings.Contains(usage, "concord "+name+"\n") {
			t.Errorf("the usage does not list %q", "concord "+name)
		}
	}
	_, help, _ := runCmd(t, nil, "bot", "-h")
	for _, w := range []string{"CONCORD_SECRET", "--token", "-ca FILE"} {
		if !strings.Contains(help, w) {
			t.Errorf("concord bot -h does not say %q", w)
		}
	}
	out, errOut, code := runCmd(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "concord ") || errOut != "" {
		t.Errorf("concord version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestVersionString(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/concordrtc/concord", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "f26208f"}, {Key: "vcs.time", Value: "2026-11-28T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionString(bi, true), "concord v0.4.0 revision f26208f+dirty (2026-11-28T12:00:00Z) go1.26.0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bi.Main.Version, bi.Settings = "", nil
	if got, want := versionString(bi, true), "concord (devel) go1.26.0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestBotsWithSecretNoWarnings is a newcomer's first run against a server with a secret:
// `concord bot -n 3` with CONCORD_SECRET set mints a token per bot, and all three sync. A healthy
// run, bots leaving included, logs no warning, neither in the server's log nor the bots'.
func TestBotsWithSecretNoWarnings(t *testing.T) {
	const secret = "newcomer-test-secret-of-32-bytes-at-least"
	t.Setenv("CONCORD_SECRET", secret)
	t.Setenv("CONCORD_TOKEN", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var serveLog syncbuf.Buffer
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", DedicatedHost: true, Secret: secret}, zerolog.New(&serveLog).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()
	// As a newcomer starts the bots after serve is up: its dedicated host hosts the room. (Bots
	// that come first elect one of them, the dedicated host takes over, and the links being set
	// up when it does are closed: a migration, not the healthy run this test is about.)
	poll.Until(t, 30*time.Second, "the dedicated host hosts", func() error {
		if st := s.host.Status(); !st.IsHost {
			return fmt.Errorf("host status %+v", st)
		}
		return nil
	})

	botCtx, stopBots := context.WithCancel(ctx)
	defer stopBots()
	var out, botLog syncbuf.Buffer
	bots := make(chan error, 1)
	go func() {
		bots <- cmdBot(botCtx, []string{"--server", s.url, "-n", "3", "--move-for", "2s"}, &out, &botLog)
	}()
	waitBots(t, &out, bots, "3/3 synced", "(1 distinct)")
	stopBots() // the bots leave; the server stays up and sees them go
	if err := <-bots; err != nil {
		t.Errorf("bots: %v", err)
	}
	poll.Until(t, 20*time.Second, "the bots have left", func() error {
		if n := s.host.Status().Members; n != 1 {
			return fmt.Errorf("the host sees %d members", n)
		}
		return nil
	})
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	for name, l := range map[string]string{"server": serveLog.String(), "bots": botLog.String()} {
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`) {
				t.Errorf("%s logged: %s", name, line)
			}
		}
	}
}

// TestBotCA: a bot trusts a server's self-signed certificate with --ca (no SSL_CERT_FILE); without
// it the bot fails on the certificate.
func TestBotCA(t *testing.T) {
	t.Setenv("SSL_CERT_FILE", filepath.Join(t.TempDir(), "none.pem")) // the system's roots only
	certFile, keyFile, _ := testcert.Write(t, net.ParseIP("127.0.0.1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", DedicatedHost: true, TLSCert: certFile, TLSKey: keyFile},
		zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("url %s", s.url)
	}

	err = cmdBot(ctx, []string{"--server", s.url, "-n", "1", "--log-level", "error"}, &syncbuf.Buffer{}, &syncbuf.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a bot without --ca: %v, want a certificate error", err)
	}

	botCtx, stopBots := context.WithCancel(ctx)
	var out syncbuf.Buffer
	bots := make(chan error, 1)
	go func() {
		bots <- cmdBot(botCtx, []string{"--server", s.url, "-n", "1", "--ca", certFile, "--move-for", "1s", "--log-level", "error"}, &out, &syncbuf.Buffer{})
	}()
	waitBots(t, &out, bots, "1/1 synced")
	stopBots()
	if err := <-bots; err != nil {
		t.Errorf("bot: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestBotsShareOneToken: `concord bot -n 3 --token T`, T a token of one user without a device
// claim: the three bots join as that user on devices of their own, and all sync.
func TestBotsShareOneToken(t *testing.T) {
	const secret = "newcomer-test-secret-of-32-bytes-at-least"
	t.Setenv("CONCORD_SECRET", "")
	token, err := signaling.IssueToken([]byte(secret), signaling.Claims{Room: "arena", User: "rig", Kind: signaling.KindBot, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", DedicatedHost: true, Secret: secret}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()
	var out syncbuf.Buffer
	bots := make(chan error, 1)
	go func() {
		bots <- cmdBot(ctx, []string{"--server", s.url, "-n", "3", "--token", token, "--move-for", "1s"}, &out, zerolog.NewTestWriter(t))
	}()
	waitBots(t, &out, bots, "3/3 synced")
	cancel()
	if err := <-bots; err != nil {
		t.Errorf("bots: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

func TestBotIdentities(t *testing.T) {
	now := time.Now()
	pinned, _ := signaling.IssueToken([]byte("k"), signaling.Claims{Room: "arena", User: "u", Device: "d", ExpiresAt: now.Add(time.Hour)})
	if _, err := botIdentities(2, "bot", "arena", "p1", pinned, "", now); err == nil || !strings.Contains(err.Error(), `pins device "d"`) {
		t.Errorf("a device-pinned token for 2 bots: %v", err)
	}
	ids, err := botIdentities(1, "bot", "arena", "p1", pinned, "", now)
	if err != nil || ids[0].user != "u" || ids[0].device != "d" {
		t.Errorf("a device-pinned token for 1 bot: %+v %v", ids, err)
	}
	ids, err = botIdentities(2, "bot", "arena", "p1", "", "secret", now)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		c, err := peekClaims(id.token)
		if err != nil || c.User != fmt.Sprintf("bot%d", i+1) || id.user != c.User {
			t.Errorf("bot %d: %+v, claims %+v, %v", i+1, id, c, err)
		}
	}
	ids, _ = botIdentities(2, "bot", "arena", "p1", "", "", now)
	if ids[0].token != "" || ids[1].user != "bot2" {
		t.Errorf("an open server: %+v", ids)
	}
	if _, err := botIdentities(1, "bot", "arena", "p1", "not-a-token", "", now); err == nil {
		t.Error("a malformed token was taken")
	}
}

// waitBots waits until the last status line cmdBot printed to out says every one of want, and
// fails t if the bots stop first.
func waitBots(t *testing.T, out *syncbuf.Buffer, bots <-chan error, want ...string) {
	t.Helper()
	poll.Until(t, 60*time.Second, "bots: "+strings.Join(want, ", "), func() error {
		select {
		case err := <-bots:
			t.Fatalf("bots stopped: %v", err)
		default:
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		last := lines[len(lines)-1]
		for _, w := range want {
			if !strings.Contains(last, w) {
				return errors.New(last)
			}
		}
		return nil
	})
}
