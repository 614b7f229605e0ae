package peer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// TestInterestOverLinksAndMigration: a Go dedicated host with the arena's radius interest and four
// moving bots over real pion links. Members other than the successor hold less than the host;
// when the host leaves, the successor takes over with the whole world, and the members that held
// part of it converge with it (the new host has no policy: everyone follows everything).
func TestInterestOverLinksAndMigration(t *testing.T) {
	r := newRoom(t, nil)
	hostCtx, stopHost := context.WithCancel(r.ctx)
	defer stopHost()
	host := r.joinWith(hostCtx, "host", signaling.KindHost, arena.New(arena.Config{Boxes: 24}), func(c *peer.Config) {
		c.Interest = arena.RadiusInterest{Radius: 3000}
		c.InterestInterval = 100 * time.Millisecond
	})
	poll.Until(t, 5*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host yet")
		}
		return nil
	})
	var bots []*peer.Peer
	for i := range 4 {
		bots = append(bots, r.join(fmt.Sprintf("bot%d", i), signaling.KindBot, arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i + 1), MoveFor: 3 * time.Second}})))
	}
	all := 1 + 24 + 4 // the room entity, the boxes, the bots' avatars
	poll.Until(t, 20*time.Second, "every bot synced, the host holding the whole world", func() error {
		if n := host.Status().Entities; n != all {
			return fmt.Errorf("host holds %d entities, want %d", n, all)
		}
		for _, b := range bots {
			if !b.Status().Synced {
				return fmt.Errorf("bot %d not synced", b.Status().Self)
			}
		}
		return nil
	})
	// Some bot follows only part of the world (its surroundings); one (the successor) all of it.
	poll.Until(t, 20*time.Second, "a bot that follows part of the world, and one that follows all", func() error {
		part, whole := 0, 0
		for _, b := range bots {
			switch n := b.Status().Entities; {
			case n == all:
				whole++
			case n < all:
				part++
			}
		}
		if part == 0 || whole == 0 {
			return fmt.Errorf("%d bots hold part of the world, %d all of it", part, whole)
		}
		return nil
	})
	// The host leaves; the bot that held everything hosts now, with nothing lost.
	stopHost()
	poll.Until(t, 20*time.Second, "a bot hosts the whole world", func() error {
		for _, b := range bots {
			if st := b.Status(); st.IsHost {
				if st.Entities < all {
					return fmt.Errorf("the new host %d holds %d entities, want %d", st.Self, st.Entities, all)
				}
				return nil
			}
		}
		return fmt.Errorf("no bot hosts yet")
	})
	// The new host (a bot) has no interest policy: the members that held part of the world get
	// the rest, and every replica converges to one.
	poll.Until(t, 30*time.Second, "the bots' replicas equal", func() error { return converged(bots) })
	if n := bots[0].Status().Entities; n != all {
		t.Errorf("after the migration the room holds %d entities, want %d", n, all)
	}
}
