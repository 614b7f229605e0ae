package peer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// runPeer starts a peer of the arena game on server url and returns it and the channel its Run's
// result arrives on (put back by whoever reads it, for the cleanup).
func runPeer(t *testing.T, url string, tr peer.Transport, log zerolog.Logger, user string, kind signaling.Kind, opts ...func(*peer.Config)) (*peer.Peer, chan error) {
	t.Helper()
	cfg := peer.Config{Server: url, Room: "arena", User: user, Device: "d", Kind: kind,
		App: arena.New(arena.Config{}), Transport: tr, Logger: log.With().Str("who", user).Logger(),
		RedialMin: 10 * time.Millisecond, RedialMax: 20 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := peer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, done
}

// runEnds waits for a Run result on done and checks it wraps want.
func runEnds(t *testing.T, done chan error, want error, what string) {
	t.Helper()
	select {
	case err := <-done:
		done <- err // for the cleanup
		if !errors.Is(err, want) {
			t.Fatalf("%s: Run returned %v, want %v", what, err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: Run did not end", what)
	}
}

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
	start := func(user string, kind signaling.Kind) (*peer.Peer, chan error) {
		return runPeer(t, hs.URL, tr, log, user, kind)
	}
	host, _ := start("host", signaling.KindHost)
	poll.Until(t, 10*time.Second, "host hosts", func() error {
		if !host.Status().IsHost {
			return errors.New("not host yet")
		}
		return nil
	})
	bot, botDone := start("bot", signaling.KindBot)
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
	runEnds(t, botDone, signaling.ErrKicked, "the kicked bot")
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
	_, again := start("bot", signaling.KindBot)
	runEnds(t, again, signaling.ErrBanned, "the banned bot")
}

// A peer that redials after a signaling outage and meets a ban (made while the server was down,
// kept in its ban file) ends its session: Run returns ErrBanned rather than playing on.
func TestBanEndsPeerOnResume(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	path := filepath.Join(t.TempDir(), "bans.json")
	o := newOutageServer(t, signaling.Config{Logger: log, Bans: signaling.NewBanFile(path),
		Rooms: map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}}})
	tr := &peer.MemoryTransport{Pipe: link.PipeConfig{Seed: 6}}
	host, _ := runPeer(t, o.url(), tr, log, "host", signaling.KindHost)
	bot, botDone := runPeer(t, o.url(), tr, log, "bot", signaling.KindBot)
	poll.Until(t, 10*time.Second, "the bot synced", func() error {
		if st := bot.Status(); !st.Synced || !host.Status().IsHost {
			return fmt.Errorf("bot synced %v", st.Synced)
		}
		return nil
	})
	o.crash()
	if err := signaling.NewBanFile(path).PutBan(signaling.Ban{Room: "arena", Target: "bot"}); err != nil {
		t.Fatal(err)
	}
	o.start()
	runEnds(t, botDone, signaling.ErrBanned, "the bot banned during the outage")
}

// A peer with EndWhenReplaced (a server's dedicated host) ends when another connection joins with
// its identity: Run returns ErrReplaced, so its supervisor sees it stop. Without it the replaced
// peer stays, without signaling, and its supervisor counts a host nobody can reach as running.
func TestReplacedPeerEndsWhenAsked(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	srv := signaling.New(signaling.Config{Logger: log})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { _ = srv.Close(); hs.Close() })
	tr := &peer.MemoryTransport{Pipe: link.PipeConfig{Seed: 7}}
	run := func(end bool) (*peer.Peer, chan error) {
		return runPeer(t, hs.URL, tr, log, "host", signaling.KindHost, func(c *peer.Config) { c.EndWhenReplaced = end })
	}
	first, firstDone := run(true)
	poll.Until(t, 10*time.Second, "the first host hosts", func() error {
		if !first.Status().IsHost {
			return errors.New("not host yet")
		}
		return nil
	})
	run(false)
	runEnds(t, firstDone, signaling.ErrReplaced, "the replaced dedicated host")
}
