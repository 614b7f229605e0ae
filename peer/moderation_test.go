package peer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/arena"
	"github.com/concordrtc/concord/internal/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// A moderator's kick ends the kicked peer's session: Run returns an error wrapping
// signaling.ErrKicked, without redialing (a rejoin by itself would undo the kick), and the host
// ends its link, as on any leave. A ban refuses the peer's next Run with ErrBanned.
func TestKickEndsPeerSession(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv := signaling.New(signaling.Config{Logger: log,
		Rooms: map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}}})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { _ = srv.Close(); hs.Close() })
	tr := &peer.MemoryTransport{Pipe: link.PipeConfig{Seed: 5}}
	start := func(user string, kind signaling.Kind) (*peer.Peer, chan error, context.CancelFunc) {
		p, err := peer.New(peer.Config{Server: hs.URL, Room: "arena", User: user, Device: "d", Kind: kind,
			App: arena.New(arena.Config{}), Transport: tr, Logger: log.With().Str("who", user).Logger(),
			RedialMin: 10 * time.Millisecond, RedialMax: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return p, done, cancel
	}
	host, _, _ := start("host", signaling.KindHost)
	poll.Until(t, 10*time.Second, "host hosts", func() error {
		if !host.Status().IsHost {
			return errors.New("not host yet")
		}
		return nil
	})
	bot, botDone, _ := start("bot", signaling.KindBot)
	poll.Until(t, 10*time.Second, "the bot synced over its link", func() error {
		if st, hst := bot.Status(), host.Status(); !st.Synced || hst.Links != 1 {
			return fmt.Errorf("bot synced %v, host links %d", st.Synced, hst.Links)
		}
		return nil
	})
	joins := srv.Stats().Joins

	if _, err := srv.Kick(context.Background(), "arena", "bot", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-botDone:
		botDone <- err // for the cleanup
		if !errors.Is(err, signaling.ErrKicked) {
			t.Fatalf("the kicked bot's Run returned %v, want ErrKicked", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kicked bot's Run did not end")
	}
	poll.Until(t, 10*time.Second, "the host ended the bot's link", func() error {
		if st := host.Status(); st.Links != 0 || st.Members != 1 {
			return fmt.Errorf("host links %d members %d", st.Links, st.Members)
		}
		return nil
	})
	// Run has returned: nothing of the bot is left to rejoin.
	if n := srv.Stats().Joins; n != joins {
		t.Fatalf("joins %d after the kick, %d before: the bot rejoined", n, joins)
	}

	if _, err := srv.Ban(context.Background(), signaling.Ban{Room: "arena", Target: "bot"}); err != nil {
		t.Fatal(err)
	}
	_, again, _ := start("bot", signaling.KindBot)
	select {
	case err := <-again:
		again <- err
		if !errors.Is(err, signaling.ErrBanned) {
			t.Fatalf("the banned bot's Run returned %v, want ErrBanned", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the banned bot joined")
	}
}
