package netlab_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/harness/netlab"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// labBot is an arena bot of this process living in a home's namespace: its signaling websocket
// and every socket of its pion stack are created there.
type labBot struct {
	p   *peer.Peer
	app *migrationcheck.Bot
}

func startLabBot(t *testing.T, ctx context.Context, wg *sync.WaitGroup, h netlab.Home, user string, seed uint64, clk *migrationcheck.Clock) *labBot {
	t.Helper()
	app := &migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: seed, MoveFor: time.Hour, Now: clk.Now}})}
	return &labBot{p: startLabPeer(t, ctx, wg, h, user, app), app: app}
}

// startLabPeer runs a peer of this process inside h's namespace until ctx ends; wg waits for it.
// Frequent status reports and digests make convergence visible in /api/rooms sooner.
func startLabPeer(t *testing.T, ctx context.Context, wg *sync.WaitGroup, h netlab.Home, user string, app peer.App) *peer.Peer {
	t.Helper()
	nsNet, err := h.NS.Net()
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("who", user).Logger()
	p, err := peer.New(peer.Config{
		Server: serverURL, Room: "arena", User: user, Kind: signaling.KindBot, App: app,
		ICE: peer.ICEAny,
		Link: link.Config{
			Logger:     log.Level(zerolog.ErrorLevel),
			Net:        nsNet,
			UDPMuxAddr: net.JoinHostPort(h.Addr.String(), "0"),
		},
		SignalingConfig: signaling.ClientConfig{Dialer: &websocket.Dialer{
			HandshakeTimeout: 10 * time.Second,
			NetDialContext:   h.NS.DialContext,
		}},
		Logger:         log,
		ReportInterval: 100 * time.Millisecond, DigestInterval: 250 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runPeer(t, ctx, wg, user, p)
	return p
}

// runPeer runs p until ctx ends; wg waits for it. An error that ctx did not cause fails t.
func runPeer(t *testing.T, ctx context.Context, wg *sync.WaitGroup, who string, p *peer.Peer) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("%s: %v", who, err)
		}
	}()
}

func readViews(ctx context.Context, bots []*labBot) ([]*migrationcheck.View, error) {
	views := make([]*migrationcheck.View, len(bots))
	errs := make([]error, len(bots))
	var wg sync.WaitGroup
	for i, b := range bots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.p.Do(ctx, func(w *peer.World) { views[i] = migrationcheck.Read(w) })
		}()
	}
	wg.Wait()
	return views, errors.Join(errs...)
}

// TestLab5MigrationAcrossNATs is scenario 5: `concord host` behind NAT A hosts bots of this
// process behind NAT B (the first to join), NAT A and the UDP-dropping NAT C; it is SIGKILLed
// while they move. The bot behind NAT B becomes host, the others reach it through the relay
// (they are behind other NATs), and the migration invariant holds (internal/harness/migrationcheck):
// no key older than a survivor held at the kill, nothing lost, every avatar where its bot last
// put it.
func TestLab5MigrationAcrossNATs(t *testing.T) {
	lab := netlab.Get(t)
	bin := concord(t)
	serve(t, lab, "--dedicated-host=false")
	host := start(t, lab.A.NS, "host", bin, "host", "--server", serverURL, "--room", "arena")
	term0 := waitHost(t, "host")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	clk := &migrationcheck.Clock{}
	// The bot behind NAT B joins first, so the election (earliest join among the synced) makes
	// it the next host.
	bots := []*labBot{startLabBot(t, ctx, &wg, lab.B, "bot-b", 1, clk)}
	waitFor(t, 30*time.Second, "bot-b to sync", func() error {
		if st := bots[0].p.Status(); !st.Synced {
			return fmt.Errorf("bot-b: %+v", st)
		}
		return nil
	})
	for i, h := range []netlab.Home{lab.A, lab.A, lab.C} {
		bots = append(bots, startLabBot(t, ctx, &wg, h, fmt.Sprintf("bot-%d", i), uint64(i+2), clk))
	}
	waitFor(t, 45*time.Second, "every bot synced from the host behind NAT A", func() error {
		for _, b := range bots {
			if st := b.p.Status(); !st.Synced || uint64(st.Term) != term0 {
				return fmt.Errorf("bot %d: synced %v term %d (want %d)", st.Self, st.Synced, st.Term, term0)
			}
		}
		return nil
	})

	// Let them play, then kill the host mid-stream and record every survivor at once.
	time.Sleep(time.Second)
	host.kill9()
	killed := time.Now()
	views, err := readViews(ctx, bots)
	if err != nil {
		t.Fatal(err)
	}
	rec := migrationcheck.NewView()
	for _, v := range views {
		rec.Absorb(v)
	}
	if want := arenaEntities(len(bots)); len(rec.Live) != want {
		t.Fatalf("survivors held %d live entities at the kill, want %d", len(rec.Live), want)
	}
	// The bots move on through the migration for a while, then stop.
	time.Sleep(1500 * time.Millisecond)
	clk.Jump(10 * time.Hour)

	newHost := bots[0].p.Status().Self
	var final *migrationcheck.View
	waitFor(t, 60*time.Second, "the survivors to converge under bot-b", func() error {
		for _, b := range bots {
			if st := b.p.Status(); !st.Synced || uint64(st.Term) <= term0 || st.Host != newHost {
				return fmt.Errorf("bot %d: synced %v term %d host %d (want a term after %d, host %d)", st.Self, st.Synced, st.Term, st.Host, term0, newHost)
			}
		}
		vs, err := readViews(ctx, bots)
		if err != nil {
			return err
		}
		for _, v := range vs[1:] {
			if v.Hash != vs[0].Hash || v.Term != vs[0].Term {
				return fmt.Errorf("bot %d: term %d hash %016x; bot %d: term %d hash %016x", v.Self, v.Term, v.Hash, vs[0].Self, vs[0].Term, vs[0].Hash)
			}
		}
		final = vs[0]
		return nil
	})
	convergedIn := time.Since(killed)
	r := converged(t, len(bots), arenaEntities(len(bots)), 30*time.Second, func(r *room) error {
		if r.Host != int(newHost) {
			return fmt.Errorf("host %d, want bot-b (%d)", r.Host, newHost)
		}
		return allRelayed(r)
	})

	violations := migrationcheck.Check(rec, final, func(peer.Entity) bool { return false })
	for _, b := range bots {
		if want := b.app.Wrote(); want != nil && !bytes.Equal(final.Avatars[b.p.Status().Self], want) {
			violations = append(violations, fmt.Sprintf("bot %d's avatar is at %v, it last wrote %v",
				b.p.Status().Self, arena.ParseVec(final.Avatars[b.p.Status().Self]), arena.ParseVec(want)))
		}
	}
	for _, v := range violations {
		t.Errorf("invariant violated: %s", v)
	}
	t.Logf("host behind NAT A killed: bot-b behind NAT B took over (term %d→%d), survivors converged %v after the kill; %d recorded keys checked, %d violations: %v",
		term0, r.Term, convergedIn.Round(time.Millisecond), len(rec.Keys), len(violations), r)
}
