package peer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// Peers without a Transport make their own pion transport, loopback-only for a loopback
// signaling URL. A member reports the candidate types of its link to the host, which
// /api/rooms shows; the host's link counters keep what a closed link carried.
func TestOwnTransportReportsLink(t *testing.T) {
	r := newRoom(t, nil)
	own := func(c *peer.Config) { c.Transport = nil }
	host := r.joinWith(r.ctx, "host", signaling.KindHost, arena.New(arena.Config{}), own)
	poll.Until(t, 5*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host yet")
		}
		return nil
	})
	botCtx, stopBot := context.WithCancel(r.ctx)
	bot := r.joinWith(botCtx, "bot", signaling.KindBot, arena.New(arena.Config{Bot: &arena.BotConfig{Seed: 1}}), own)
	poll.Until(t, 10*time.Second, "the bot's link to the host is reported", func() error {
		st := bot.Status()
		if !st.Synced || st.HostLink == nil {
			return fmt.Errorf("synced %v, link %v", st.Synced, st.HostLink)
		}
		if st.HostLink.Local != link.CandidateHost {
			return fmt.Errorf("local candidate %q on a loopback-only peer, want host", st.HostLink.Local)
		}
		rooms, err := r.server.Rooms(context.Background())
		if err != nil {
			return err
		}
		for _, m := range rooms[0].Members {
			if m.PeerIndex == st.Self && (m.Link == nil || *m.Link != *st.HostLink) {
				return fmt.Errorf("/api/rooms link %v, the bot has %v", m.Link, st.HostLink)
			}
			if m.PeerIndex == st.Host && m.Link != nil {
				return fmt.Errorf("the host has a link entry %v", m.Link)
			}
		}
		hs := host.Status()
		if n := hs.Pairs[*st.HostLink]; n != 0 {
			return nil
		}
		return fmt.Errorf("host pairs %v", hs.Pairs)
	})
	var sent uint64
	poll.Until(t, 5*time.Second, "the host sends on both channels", func() error {
		ch := host.Status().Channels
		if ch[link.Reliable].BytesSent == 0 || ch[link.Unreliable].MessagesSent == 0 {
			return fmt.Errorf("channels %+v", ch)
		}
		sent = ch[link.Reliable].BytesSent
		return nil
	})
	stopBot()
	<-bot.Done()
	poll.Until(t, 10*time.Second, "the host drops the bot's link", func() error {
		if st := host.Status(); st.Links != 0 {
			return fmt.Errorf("%d links", st.Links)
		}
		return nil
	})
	if got := host.Status().Channels[link.Reliable].BytesSent; got < sent {
		t.Fatalf("reliable bytes sent went from %d back to %d after the link closed", sent, got)
	}
}

func TestICEMode(t *testing.T) {
	for _, s := range []string{"", "loopback", "any"} {
		if m, err := peer.ParseICEMode(s); err != nil || string(m) != s {
			t.Errorf("ParseICEMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := peer.ParseICEMode("public"); err == nil {
		t.Error("ParseICEMode accepted an unknown mode")
	}
	if _, err := peer.New(peer.Config{Server: "http://127.0.0.1:1", Room: "r", App: arena.New(arena.Config{}), ICE: "nope"}); err == nil {
		t.Error("New accepted an unknown ICE mode")
	}
}

// A member that lives through a host migration counts it and measures its pause, and reports
// both to signaling (the migration-pause histogram's source).
func TestMigrationPauseMeasured(t *testing.T) {
	r := newRoom(t, nil)
	hostCtx, stopHost := context.WithCancel(r.ctx)
	host := r.joinWith(hostCtx, "host", signaling.KindHost, arena.New(arena.Config{}), nil)
	poll.Until(t, 5*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host yet")
		}
		return nil
	})
	a := r.join("a", signaling.KindBot, arena.New(arena.Config{Bot: &arena.BotConfig{Seed: 1}}))
	b := r.join("b", signaling.KindBot, arena.New(arena.Config{Bot: &arena.BotConfig{Seed: 2}}))
	poll.Until(t, 10*time.Second, "both synced", func() error {
		if !a.Status().Synced || !b.Status().Synced {
			return fmt.Errorf("not synced")
		}
		return nil
	})
	stopHost()
	<-host.Done()
	poll.Until(t, 15*time.Second, "a migration measured by the member that stayed a member", func() error {
		for _, p := range []*peer.Peer{a, b} {
			st := p.Status()
			if st.IsHost || !st.Synced {
				continue
			}
			if st.Migrations != 1 || st.MigrationPause <= 0 || st.MigrationPause > 10*time.Second {
				return fmt.Errorf("migrations %d, pause %v", st.Migrations, st.MigrationPause)
			}
			rooms, err := r.server.Rooms(context.Background())
			if err != nil {
				return err
			}
			for _, m := range rooms[0].Members {
				if m.PeerIndex == st.Self && (m.Replica == nil || m.Replica.Migrations != 1 || m.Replica.PauseMicros == 0) {
					return fmt.Errorf("reported %+v", m.Replica)
				}
			}
			return nil
		}
		return fmt.Errorf("no synced member yet")
	})
}
