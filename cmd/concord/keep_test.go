package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
)

// hostedBy reports (nil) whether user hosts room, by GET /api/rooms.
func hostedBy(url, room, user string) error {
	rooms, err := fetchRooms(url)
	if err != nil {
		return err
	}
	for _, r := range rooms {
		for _, m := range r.Members {
			if string(r.Room) == room && m.PeerIndex == r.Host && m.PeerID.User() == user {
				return nil
			}
		}
	}
	return fmt.Errorf("rooms %+v", rooms)
}

// TestHostProcessKill9Restores: a `concord host` process of its own hosts a room of a serve that
// runs no dedicated host (--keep-rooms all): the server's follower checkpoints it. A bot pushes
// boxes, stops and leaves; the host process is killed with SIGKILL; the room's checkpoint (GET
// /api/rooms/arena/checkpoint, served while the room has no host) holds every box as the bot last
// saw it, and a new host process restores it: a new bot sees every box where it was.
func TestHostProcessKill9Restores(t *testing.T) {
	if testing.Short() {
		t.Skip("builds concord and runs host processes")
	}
	bin := buildConcord(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", Data: t.TempDir(), KeepRooms: server.KeepAll,
		CheckpointInterval: 100 * time.Millisecond}, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()

	host := startProcess(t, bin, "host", "--server", s.url, "--room", "arena", "--log-level", "info")
	poll.Until(t, 60*time.Second, "the host process hosts", func() error { return hostedBy(s.url, "arena", server.DedicatedHostUser) })
	var wg sync.WaitGroup
	bctx, leave := context.WithCancel(ctx)
	defer leave()
	bot := startTestBot(t, bctx, &wg, s.url, "bot", arena.New(arena.Config{Bot: &arena.BotConfig{Seed: 3, MoveFor: time.Second}}), log)
	var want, prev crdt.StateJSON
	started := time.Now()
	poll.Until(t, 30*time.Second, "the boxes at rest after the bot stopped", func() error {
		if !bot.Status().Synced || time.Since(started) < 2*time.Second {
			return errors.New("bot not synced or still moving")
		}
		if err := bot.Do(bctx, func(w *peer.World) { want = migrationcheck.BoxesState(w) }); err != nil {
			return err
		}
		// Two reads, a poll apart, agree.
		moving := len(want.LWW) == 0 || migrationcheck.HoldsNewer(prev, want) != nil
		prev = want
		if moving {
			return errors.New("boxes still moving")
		}
		return nil
	})
	leave()
	wg.Wait()
	if err := host.kill(); err != nil {
		t.Fatal(err)
	}
	var seed durable.Seed
	poll.Until(t, 20*time.Second, "the room's checkpoint, served once the room has no host, holds every box", func() error {
		var err error
		if seed, err = durable.FetchSeed(ctx, nil, s.url, "arena", ""); err != nil {
			return err
		}
		r := crdt.New(crdt.Config{})
		if _, err := r.MergeStream(seed.Data); err != nil {
			return err
		}
		return migrationcheck.HoldsNewer(r.StateJSON(), want)
	})

	host2 := startProcess(t, bin, "host", "--server", s.url, "--room", "arena", "--log-level", "info")
	poll.Until(t, 60*time.Second, "the new host process hosts", func() error { return hostedBy(s.url, "arena", server.DedicatedHostUser) })
	bot2 := startTestBot(t, ctx, &wg, s.url, "bot2", arena.New(arena.Config{}), log)
	poll.Until(t, 60*time.Second, "the new bot sees every acknowledged box", func() error {
		var got crdt.StateJSON
		var boxes int
		if err := bot2.Do(ctx, func(w *peer.World) { got, boxes = w.Replica().StateJSON(), len(w.EntitiesOf(arena.SchemaBox)) }); err != nil {
			return err
		}
		if err := migrationcheck.HoldsNewer(got, want); err != nil {
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
