package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/examples/orbs"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// TestEmbedWithOwnGame embeds the server as a program would, through the public API only: the
// orbs game (examples/orbs) is the dedicated host of its room (Options.Apps), and a bot peer
// joins over real pion links on loopback. The bot walks to orbs; its replica and the host's
// credit it with the same orbs. Shutdown then stops the host with the rest.
func TestEmbedWithOwnGame(t *testing.T) {
	s, err := server.New(server.Options{
		Addr:    "127.0.0.1:0",
		Apps:    map[string]func() peer.App{"orbs": func() peer.App { return &orbs.Game{} }},
		Network: server.Network{LoopbackOnly: true},
		Logger:  zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Handler() != nil || s.Addr() != nil {
		t.Fatal("Handler and Addr before Start: want nil")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, server.ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
	host := s.Host("orbs")
	if host == nil || s.Host("arena") != nil {
		t.Fatalf("Host(orbs) %v, Host(arena) %v: want the orbs host only", host, s.Host("arena"))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bot, err := peer.New(peer.Config{Server: s.URL(), Room: "orbs", User: "bot", Kind: signaling.KindBot, ICE: peer.ICELoopback,
		App: &orbs.Game{Steer: func(w *peer.World, self peer.Entity) orbs.Pos {
			v, _ := w.Get(self, orbs.PlayerPos)
			at := orbs.DecodePos(v)
			if o, ok := orbs.Nearest(w, at); ok {
				return o
			}
			return at
		}}})
	if err != nil {
		t.Fatal(err)
	}
	botDone := make(chan error, 1)
	go func() { botDone <- bot.Run(ctx) }()
	poll.Until(t, 60*time.Second, "the bot to take 2 orbs, in its replica and the host's", func() error {
		var self peer.PeerIndex
		var mine, hosts uint32
		if err := bot.Do(ctx, func(w *peer.World) { self, mine = w.Self(), orbs.Points(w, w.Self()) }); err != nil {
			return err
		}
		if err := host.Do(ctx, func(w *peer.World) { hosts = orbs.Points(w, self) }); err != nil {
			return err
		}
		if mine < 2 || hosts < mine {
			return fmt.Errorf("bot %d: %d orbs in its replica, %d in the host's", self, mine, hosts)
		}
		return nil
	})
	cancel()
	if err := <-botDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("bot: %v", err)
	}

	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := s.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-host.Done():
	default:
		t.Fatal("the dedicated host still runs after Shutdown")
	}
	if err := <-s.Failed(); !errors.Is(err, server.ErrShutdown) {
		t.Fatalf("Failed after Shutdown: %v, want ErrShutdown", err)
	}
}

// TestOptionErrors: New refuses a bad option with an *OptionError that names its flag, and
// creates nothing.
func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		o    server.Options
		want string
	}{
		{server.Options{InterestRadius: -1}, "--interest-radius"},
		{server.Options{TLSCert: "x.pem"}, "--tls-cert and --tls-key"},
		{server.Options{Network: server.Network{ICE: "lan"}}, "--ice"},
		{server.Options{Routes: []string{"nats-route://127.0.0.1:1"}}, "--cluster-name"},
		{server.Options{Apps: map[string]func() peer.App{"x": nil}}, "Apps"},
		{server.Options{Origins: []string{"https://x/path"}}, "--origin"},
	} {
		_, err := server.New(tc.o)
		var oe *server.OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an *OptionError naming %s", tc.o, err, tc.want)
		}
	}
}

// TestRegistryAndHandler: a program's own registry (already holding the Go collector) receives
// the server's metrics, and Handler serves the same routes from the program's own listener.
func TestRegistryAndHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	s, err := server.New(server.Options{Addr: "127.0.0.1:0", Registry: reg, Network: server.Network{LoopbackOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	if s.Registry() != reg {
		t.Fatal("Registry is not the registry of Options")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		found = found || strings.HasPrefix(mf.GetName(), "concord_signaling_")
	}
	if !found {
		t.Fatal("no concord_signaling_ metric in the program's registry")
	}
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler())
	own := httptest.NewServer(mux)
	defer own.Close()
	for _, path := range []string{"/healthz", "/concord/js/index.js"} {
		resp, err := http.Get(own.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s through Handler: %d", path, resp.StatusCode)
		}
	}
}
