package world_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
	"github.com/concordrtc/concord/world/tiles"
)

// recorder wraps the tiles game and records every input a region host applies, per player.
type recorder struct {
	*tiles.App
	mu     sync.Mutex
	inputs map[string][][]byte
}

func newRecorder() *recorder { return &recorder{App: &tiles.App{}, inputs: map[string][][]byte{}} }

func (r *recorder) Input(w *peer.World, reg world.Region, e peer.Entity, data []byte) {
	owner, _ := w.Get(e, tiles.PlayerOwner)
	r.mu.Lock()
	r.inputs[string(owner)] = append(r.inputs[string(owner)], append([]byte(nil), data...))
	r.mu.Unlock()
	r.App.Input(w, reg, e, data)
}

func (r *recorder) applied(owner string) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.inputs[owner])
}

type testWorld struct {
	url string
	srv *world.Server
	app *recorder
}

// startWorld serves signaling and a tiles world (region hosts on pion over loopback).
func startWorld(t *testing.T, cfg world.ServerConfig) *testWorld {
	t.Helper()
	app := newRecorder()
	def := tiles.Def()
	def.App = app
	rooms := map[signaling.RoomID]signaling.RoomConfig{}
	for _, room := range def.Rooms() {
		rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{"host"}}
	}
	sig := signaling.New(signaling.Config{Rooms: rooms, Logger: zerolog.Nop()})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	cfg.Def, cfg.URL = def, hs.URL
	srv, err := world.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/api/worlds/", srv.Handler())
	mux.Handle("/", sig.Handler())
	t.Cleanup(func() {
		srv.Close()
		_ = sig.Close()
		hs.Close()
	})
	return &testWorld{url: hs.URL, srv: srv, app: app}
}

func (tw *testWorld) join(t *testing.T, ctx context.Context, user string, start [2]int) *world.Client {
	t.Helper()
	c, err := world.Join(ctx, world.Config{Server: tw.url, World: tiles.Name, App: tw.app, User: user, Device: "d", Start: start})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func waitResident(t *testing.T, c *world.Client, x, y int) {
	t.Helper()
	poll.Until(t, 20*time.Second, c.Self()+" resident", func() error {
		r, _, ok := c.Resident()
		if !ok || r.X != x || r.Y != y {
			return fmt.Errorf("resident %v %v", r, ok)
		}
		return nil
	})
}

// avatars returns the avatars of owner in a merged view and their position.
func avatarOf(v []world.Entity, owner string) (n int, e world.Entity) {
	for _, en := range v {
		if en.Schema == tiles.SchemaPlayer && en.Owner == owner {
			n++
			e = en
		}
	}
	return n, e
}

// A player walks from region (0,0) into (1,0) while sending inputs; an observer resident in
// (1,0), which follows both, sees exactly one avatar of it at every observation, never none, its
// generation never going back; the player hears the crossing; every input is applied once, in
// order, across the handover.
func TestWorldCrossing(t *testing.T) {
	tw := startWorld(t, world.ServerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := tw.join(t, ctx, "observer", [2]int{1, 0})
	waitResident(t, obs, 1, 0)
	pl := tw.join(t, ctx, "player", [2]int{0, 0})
	waitResident(t, pl, 0, 0)
	poll.Until(t, 20*time.Second, "the observer to see the player", func() error {
		if n, _ := avatarOf(obs.View(ctx), pl.Self()); n != 1 {
			return fmt.Errorf("%d avatars", n)
		}
		return nil
	})

	// The observer looks every 5 ms from now on.
	type look struct {
		n   int
		gen uint32
		at  time.Time
	}
	var looks []look
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			n, e := avatarOf(obs.View(ctx), pl.Self())
			looks = append(looks, look{n, e.Gen, time.Now()})
		}
	}()

	var sent [][]byte
	for i := range 120 {
		in := tiles.Walk(4000, int16(i%5)-2)
		if err := pl.Input(in); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, in)
		time.Sleep(20 * time.Millisecond) // the player's pace, not synchronisation
	}
	if err := pl.Input(tiles.Walk(0, 0)); err != nil {
		t.Fatal(err)
	}
	sent = append(sent, tiles.Walk(0, 0))
	poll.Until(t, 20*time.Second, "every input acknowledged", func() error {
		if n := pl.Pending(); n > 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	waitResident(t, pl, 1, 0)
	select {
	case ev := <-pl.Events():
		for ev.Kind != world.EventCrossing {
			ev = <-pl.Events()
		}
		if ev.From.X != 0 || ev.To.X != 1 {
			t.Fatalf("crossing %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no crossing event")
	}
	// Let the observer see the source's copy go.
	poll.Until(t, 5*time.Second, "the source's copy gone", func() error {
		if tw.srv.HandoverPauses() == nil {
			return fmt.Errorf("no handover")
		}
		return nil
	})
	close(stop)
	<-watched

	got := tw.app.applied(pl.Self())
	if len(got) != len(sent) {
		t.Fatalf("%d inputs applied, %d sent", len(got), len(sent))
	}
	for i := range sent {
		if string(got[i]) != string(sent[i]) {
			t.Fatalf("input %d applied as %x, sent %x", i, got[i], sent[i])
		}
	}
	var gen uint32
	for i, l := range looks {
		if l.n != 1 {
			t.Fatalf("observation %d of %d: %d avatars of the player", i, len(looks), l.n)
		}
		if l.gen < gen {
			t.Fatalf("observation %d: generation %d after %d", i, l.gen, gen)
		}
		gen = l.gen
	}
	if gen < 2 {
		t.Fatalf("the observer never saw the handed-over avatar (generation %d)", gen)
	}
	t.Logf("%d observations, handover pauses %v", len(looks), tw.srv.HandoverPauses())
}
