package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/concordrtc/concord/examples/orbs"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// The orbs host and two bots in one room (signaling on loopback, links in memory): the bots walk
// to orbs, the host scores them and moves the orbs it scored, and every peer sees the same score.
func TestBotsScore(t *testing.T) {
	sig := signaling.New(signaling.Config{})
	hs := httptest.NewServer(sig.Handler())
	defer hs.Close()
	defer sig.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	tr := &peer.MemoryTransport{}
	start := func(user string, kind signaling.Kind, app peer.App) *peer.Peer {
		p, err := peer.New(peer.Config{Server: hs.URL, Room: "orbs", User: user, Kind: kind, App: app, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = p.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-p.Done() })
		return p
	}
	host := start("host", signaling.KindHost, &orbs.Game{})
	poll.Until(t, 10*time.Second, "the host to host", func() error {
		var ok bool
		if err := host.Do(ctx, func(w *peer.World) { ok = w.IsHost() && len(w.EntitiesOf(orbs.SchemaOrb)) == orbs.Orbs }); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("not hosting yet")
		}
		return nil
	})
	bots := []*peer.Peer{start("ann", signaling.KindBot, NewBot()), start("bob", signaling.KindBot, NewBot())}

	// Each bot's own replica shows it took 3 orbs, as the host's does.
	for _, b := range bots {
		poll.Until(t, 30*time.Second, "a bot to take 3 orbs", func() error {
			var self peer.PeerIndex
			var mine, hosts uint32
			if err := b.Do(ctx, func(w *peer.World) { self, mine = w.Self(), orbs.Points(w, w.Self()) }); err != nil {
				return err
			}
			if err := host.Do(ctx, func(w *peer.World) { hosts = orbs.Points(w, self) }); err != nil {
				return err
			}
			if mine < 3 || hosts < mine {
				return fmt.Errorf("peer %d: %d orbs in its replica, %d in the host's", self, mine, hosts)
			}
			return nil
		})
	}
	// The orbs stayed on the field, where the host put them.
	if err := bots[0].Do(ctx, func(w *peer.World) {
		if n := len(w.EntitiesOf(orbs.SchemaOrb)); n != orbs.Orbs {
			t.Errorf("%d orbs, want %d", n, orbs.Orbs)
		}
		for _, o := range w.EntitiesOf(orbs.SchemaOrb) {
			v, _ := w.Get(o, orbs.OrbPos)
			if p := orbs.DecodePos(v); p.X > orbs.Width || p.Y > orbs.Height || len(v) != 4 {
				t.Errorf("orb %v at %+v", o, p)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
}
