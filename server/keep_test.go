package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

func stateOf(t *testing.T, stream []byte) crdt.StateJSON {
	t.Helper()
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(stream); err != nil {
		t.Fatal(err)
	}
	return r.StateJSON()
}

// runPeer runs an arena peer of room "lobby" on loopback until ctx ends.
func runPeer(t *testing.T, ctx context.Context, s *Server, user string, kind signaling.Kind, app peer.App) *peer.Peer {
	t.Helper()
	p, err := peer.New(peer.Config{Server: s.URL(), Room: "lobby", User: user, Kind: kind, ICE: peer.ICELoopback, App: app,
		DigestInterval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Run(ctx) }()
	t.Cleanup(func() { <-p.Done() })
	return p
}

func waitHost(t *testing.T, p *peer.Peer) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the peer hosts", func() error {
		if !p.Status().IsHost {
			return errors.New("not host")
		}
		return nil
	})
}

// TestServeKeepsBrowserRoom: KeepAll keeps a room that a browser hosts (a plain Go host stands in
// for the tab: kind browser, no dedicated host): its follower checkpoints what it sees. The tab's
// boxes, pushed around by a bot, are in the checkpoint (acknowledged); the tab dies, the bot
// leaves, the server restarts on the same data, and the next tab restores the room over GET
// /api/rooms/lobby/checkpoint before its game starts: a new bot sees every box where it was, and
// the follower keeps the restored room again.
func TestServeKeepsBrowserRoom(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Data: dir, KeepRooms: KeepAll, CheckpointInterval: 100 * time.Millisecond}
	s1 := startTestServer(t, opts)

	tctx, killTab := context.WithCancel(context.Background())
	defer killTab()
	tab := runPeer(t, tctx, s1, "tab", signaling.KindBrowser, arena.New(arena.Config{}))
	waitHost(t, tab)
	bctx, leave := context.WithCancel(context.Background())
	defer leave()
	runPeer(t, bctx, s1, "bot", signaling.KindBot, arena.New(arena.Config{Bot: &arena.BotConfig{Seed: 7, MoveFor: time.Second}}))
	var want crdt.StateJSON
	poll.Until(t, 30*time.Second, "the boxes acknowledged: the room's checkpoint holds them at rest", func() error {
		if err := tab.Do(tctx, func(w *peer.World) { want = migrationcheck.BoxesState(w) }); err != nil {
			return err
		}
		if len(want.LWW) == 0 {
			return errors.New("no boxes yet")
		}
		c, err := s1.store.LoadCheckpoint(context.Background(), "lobby")
		if err != nil {
			return err
		}
		return migrationcheck.HoldsNewer(stateOf(t, c.Data), want)
	})
	if n := testutilGauge(t, s1, "concord_follow_rooms"); n != 1 {
		t.Fatalf("concord_follow_rooms = %v, want 1", n)
	}

	killTab()
	leave()
	poll.Until(t, 10*time.Second, "the empty room's follower leaves", func() error {
		rooms, err := s1.sig.Rooms(context.Background())
		if err != nil {
			return err
		}
		for _, r := range rooms {
			if r.Room == "lobby" {
				return fmt.Errorf("lobby still open: %+v", r.Members)
			}
		}
		return nil
	})
	ctx := context.Background()
	if err := s1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	s2 := startTestServer(t, opts)
	app, fetched, err := Restore(ctx, RestoreConfig{Server: s2.URL(), Room: "lobby"}, arena.New(arena.Config{}))
	if err != nil || !fetched {
		t.Fatalf("Restore: %v, fetched %v", err, fetched)
	}
	ctx2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	tab2 := runPeer(t, ctx2, s2, "tab2", signaling.KindBrowser, app)
	waitHost(t, tab2)
	if _, fetched, err := Restore(ctx, RestoreConfig{Server: s2.URL(), Room: "lobby"}, arena.New(arena.Config{})); err != nil || fetched {
		t.Fatalf("Restore of a room with a host: %v, fetched %v; want nothing", err, fetched)
	}
	bot2 := runPeer(t, ctx2, s2, "bot2", signaling.KindBot, arena.New(arena.Config{}))
	ents := map[uint32]bool{}
	for _, r := range want.LWW {
		ents[r.Entity] = true
	}
	poll.Until(t, 30*time.Second, "the new bot sees every acknowledged box", func() error {
		var got crdt.StateJSON
		var boxes int
		if err := bot2.Do(ctx2, func(w *peer.World) { got, boxes = w.Replica().StateJSON(), len(w.EntitiesOf(arena.SchemaBox)) }); err != nil {
			return err
		}
		if err := migrationcheck.HoldsNewer(got, want); err != nil {
			return err
		}
		if boxes != len(ents) {
			return fmt.Errorf("%d boxes, want %d (none spawned again)", boxes, len(ents))
		}
		return nil
	})
	// The restored room descends from its checkpoint: its follower keeps it again.
	poll.Until(t, 10*time.Second, "the restored room checkpointed again", func() error {
		if why, ok := s2.writer.RefusedRooms()["lobby"]; ok {
			return fmt.Errorf("refused: %s", why)
		}
		if s2.writer.Stats().Written < 1 {
			return errors.New("no checkpoint written")
		}
		return nil
	})
}

// testutilGauge reads an unlabelled gauge from s's registry.
func testutilGauge(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// TestKeepRoomsOption: KeepRooms takes all, dedicated or none; a cluster cannot keep none.
func TestKeepRoomsOption(t *testing.T) {
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{Options{KeepRooms: KeepAll}, true},
		{Options{KeepRooms: KeepDedicated}, true},
		{Options{KeepRooms: KeepNone}, true},
		{Options{KeepRooms: "some"}, false},
		{Options{KeepRooms: KeepNone, ClusterName: "c", Data: "d", ClusterSecret: "s"}, false},
	} {
		err := tc.o.checkKeepRooms()
		var oe *OptionError
		if tc.ok != (err == nil) || err != nil && !errors.As(err, &oe) {
			t.Errorf("%+v: %v", tc.o.KeepRooms, err)
		}
	}
}
