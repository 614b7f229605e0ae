package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/arena"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// boxesOf is the LWW state of w's boxes: what a room keeps whoever hosts it (avatars leave with
// their members).
func boxesOf(w *peer.World) crdt.StateJSON {
	var boxes []uint32
	for _, e := range w.EntitiesOf(arena.SchemaBox) {
		boxes = append(boxes, uint32(e))
	}
	st := w.Replica().StateJSON()
	st.LWW = slices.DeleteFunc(st.LWW, func(r crdt.LWWJSON) bool { return !slices.Contains(boxes, r.Entity) })
	st.DeletedEntities, st.Append = nil, nil
	return st
}

// newerState reports the first LWW entry of want that got lacks or holds older: the migration
// invariant (the restoring host may write newer values, e.g. release the locks of members gone).
func newerState(got, want crdt.StateJSON) error {
	rows := map[[2]uint32]crdt.LWWJSON{}
	for _, r := range got.LWW {
		rows[[2]uint32{r.Entity, r.Component}] = r
	}
	for _, w := range want.LWW {
		g, ok := rows[[2]uint32{w.Entity, w.Component}]
		if !ok || g.Timestamp < w.Timestamp || g.Timestamp == w.Timestamp && ((g.Data == nil) != (w.Data == nil) || g.Data != nil && *g.Data != *w.Data) {
			return fmt.Errorf("entity %d component %d: got %+v, want at least %+v", w.Entity, w.Component, g, w)
		}
	}
	return nil
}

// TestServeKeepsBrowserRoom: `serve --keep-rooms all` keeps a room that a browser hosts (a plain
// Go host stands in for the tab: kind browser, no dedicated host): its follower checkpoints what
// it sees. The tab's boxes, pushed around by a bot, are in the checkpoint (acknowledged); the tab
// dies, the bot leaves, serve restarts on the same data, and the next tab restores the room over
// GET /api/rooms/lobby/checkpoint before its game starts: a new bot sees every box where it was.
func TestServeKeepsBrowserRoom(t *testing.T) {
	dir := t.TempDir()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts := serveOptions{addr: "127.0.0.1:0", room: "arena", data: dir, keepRooms: keepAll, checkpointInterval: 100 * time.Millisecond, metricsRoute: true}
	lobby := func(c *peer.Config) { c.Room = "lobby" }
	asTab := func(c *peer.Config) { c.Room, c.Kind = "lobby", signaling.KindBrowser }

	ctx1, stop1 := context.WithCancel(context.Background())
	defer stop1()
	s1, err := startServer(ctx1, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	served1 := make(chan error, 1)
	go func() { served1 <- s1.wait(ctx1) }()

	var wg sync.WaitGroup
	tctx, killTab := context.WithCancel(ctx1)
	defer killTab()
	tab := startTestBot(t, tctx, &wg, s1.url, "tab", arena.New(arena.Config{}), log, asTab)
	poll.Until(t, 10*time.Second, "the tab hosts", func() error {
		if !tab.Status().IsHost {
			return errors.New("not host")
		}
		return nil
	})
	bctx, leave := context.WithCancel(ctx1)
	defer leave()
	startTestBot(t, bctx, &wg, s1.url, "bot", arena.New(arena.Config{Bot: &arena.BotConfig{Seed: 7, MoveFor: time.Second}}), log, lobby)
	var want crdt.StateJSON
	poll.Until(t, 30*time.Second, "the boxes acknowledged: the room's checkpoint holds them at rest", func() error {
		if err := tab.Do(tctx, func(w *peer.World) { want = boxesOf(w) }); err != nil {
			return err
		}
		if len(want.LWW) == 0 {
			return errors.New("no boxes yet")
		}
		c, err := s1.store.LoadCheckpoint(context.Background(), "lobby")
		if err != nil {
			return err
		}
		return newerState(stateOf(t, c.Data), want)
	})
	if f, err := metric(s1.url, "concord_follow_rooms"); f != 1 {
		t.Fatalf("concord_follow_rooms = %v (%v), want 1", f, err)
	}

	killTab()
	leave()
	wg.Wait()
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
	stop1()
	if err := <-served1; err != nil {
		t.Fatal(err)
	}

	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	s2, err := startServer(ctx2, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	served2 := make(chan error, 1)
	go func() { served2 <- s2.wait(ctx2) }()
	seed, err := durable.FetchSeed(ctx2, nil, s2.url, "lobby", "")
	if err != nil {
		t.Fatal(err)
	}
	tab2 := startTestBot(t, ctx2, &wg, s2.url, "tab2", durable.NewApp(arena.New(arena.Config{}), durable.AppConfig{Room: "lobby", Seed: seed.Data, SeedClock: seed.Clock}), log, asTab)
	poll.Until(t, 10*time.Second, "the new tab hosts", func() error {
		if !tab2.Status().IsHost {
			return errors.New("not host")
		}
		return nil
	})
	bot2 := startTestBot(t, ctx2, &wg, s2.url, "bot2", arena.New(arena.Config{}), log, lobby)
	poll.Until(t, 30*time.Second, "the new bot sees every acknowledged box", func() error {
		var got crdt.StateJSON
		if err := bot2.Do(ctx2, func(w *peer.World) { got = w.Replica().StateJSON() }); err != nil {
			return err
		}
		if err := newerState(got, want); err != nil {
			return err
		}
		var boxes int
		_ = bot2.Do(ctx2, func(w *peer.World) { boxes = len(w.EntitiesOf(arena.SchemaBox)) })
		ents := map[uint32]bool{}
		for _, r := range want.LWW {
			ents[r.Entity] = true
		}
		if n := len(ents); boxes != n {
			return fmt.Errorf("%d boxes, want %d (none spawned again)", boxes, n)
		}
		return nil
	})
	// The restored room descends from its checkpoint: its follower keeps it again.
	poll.Until(t, 10*time.Second, "the restored room checkpointed again", func() error {
		if why, ok := s2.writer.RefusedRooms()["lobby"]; ok {
			return fmt.Errorf("refused: %s", why)
		}
		if n, err := metric(s2.url, "concord_checkpoints_written_total"); err != nil || n < 1 {
			return fmt.Errorf("%v written (%v)", n, err)
		}
		return nil
	})
	stop2()
	wg.Wait()
	if err := <-served2; err != nil {
		t.Fatal(err)
	}
}

// waitHostedBy waits until user hosts room.
func waitHostedBy(t *testing.T, s *server, room signaling.RoomID, user string) {
	t.Helper()
	poll.Until(t, 60*time.Second, "the room hosted by "+user, func() error {
		rooms, err := s.sig.Rooms(context.Background())
		if err != nil {
			return err
		}
		for _, r := range rooms {
			for _, m := range r.Members {
				if r.Room == room && m.PeerIndex == r.Host && m.PeerID.User() == user {
					return nil
				}
			}
		}
		return fmt.Errorf("rooms %+v", rooms)
	})
}

// TestHostProcessKill9Restores: a `concord host` process of its own hosts a room of a serve that
// runs no dedicated host (--dedicated-host=false --keep-rooms all): the server's follower
// checkpoints it. Once the checkpoint holds the boxes a bot pushed (acknowledged), the bot leaves
// and the host process is killed with SIGKILL; a new host process fetches the checkpoint and
// restores the room: a new bot sees every box where it was.
func TestHostProcessKill9Restores(t *testing.T) {
	if testing.Short() {
		t.Skip("builds concord and runs host processes")
	}
	bin := buildConcord(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	s, err := startServer(ctx, serveOptions{addr: "127.0.0.1:0", room: "arena", data: t.TempDir(), keepRooms: keepAll,
		checkpointInterval: 100 * time.Millisecond}, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()

	host := startProcess(t, bin, "host", "--server", s.url, "--room", "arena", "--log-level", "info")
	waitHostedBy(t, s, "arena", dedicatedHostUser)
	var wg sync.WaitGroup
	bctx, leave := context.WithCancel(ctx)
	defer leave()
	bot := startTestBot(t, bctx, &wg, s.url, "bot", arena.New(arena.Config{Bot: &arena.BotConfig{Seed: 3, MoveFor: time.Second}}), log)
	var want crdt.StateJSON
	poll.Until(t, 60*time.Second, "the boxes acknowledged: the room's checkpoint holds them at rest", func() error {
		if !bot.Status().Synced {
			return errors.New("bot not synced")
		}
		if err := bot.Do(bctx, func(w *peer.World) { want = boxesOf(w) }); err != nil {
			return err
		}
		if len(want.LWW) == 0 {
			return errors.New("no boxes yet")
		}
		c, err := s.store.LoadCheckpoint(context.Background(), "arena")
		if err != nil {
			return err
		}
		return newerState(stateOf(t, c.Data), want)
	})
	leave()
	wg.Wait()
	if err := host.kill(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the room empties", func() error {
		rooms, err := s.sig.Rooms(context.Background())
		if err != nil {
			return err
		}
		for _, r := range rooms {
			if r.Room == "arena" {
				return fmt.Errorf("arena still open: %+v", r.Members)
			}
		}
		return nil
	})

	host2 := startProcess(t, bin, "host", "--server", s.url, "--room", "arena", "--log-level", "info")
	waitHostedBy(t, s, "arena", dedicatedHostUser)
	bot2 := startTestBot(t, ctx, &wg, s.url, "bot2", arena.New(arena.Config{}), log)
	poll.Until(t, 60*time.Second, "the new bot sees every acknowledged box", func() error {
		var got crdt.StateJSON
		var boxes int
		if err := bot2.Do(ctx, func(w *peer.World) { got, boxes = w.Replica().StateJSON(), len(w.EntitiesOf(arena.SchemaBox)) }); err != nil {
			return err
		}
		if err := newerState(got, want); err != nil {
			return err
		}
		if boxes != 8 {
			return fmt.Errorf("%d boxes, want the 8 restored (none spawned again)", boxes)
		}
		return nil
	})
	if out := host2.output(); !strings.Contains(string(out), "room restored") {
		t.Fatalf("the second host did not restore:\n%s", out)
	}
	stop()
	wg.Wait()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
