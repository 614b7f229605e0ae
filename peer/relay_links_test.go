package peer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// relayCounter is an arena bot that counts the application messages it receives.
type relayCounter struct {
	*arena.Game
	msgs, bytes atomic.Int64
}

func (a *relayCounter) Message(_ *peer.World, _ peer.PeerIndex, _ uint8, data []byte) {
	a.msgs.Add(1)
	a.bytes.Add(int64(len(data)))
}

// TestAttackRelayToEveryone over pion links on loopback: one member relays the largest reliable
// message to everyone at its message limit (200 a second) for three seconds, with six honest
// members in the room. The host closes no link (no backpressure on any reliable channel), each
// honest member receives within its inbound relay budget, and the room converges.
func TestAttackRelayToEveryoneOverLinks(t *testing.T) {
	r := newRoom(t, nil)
	host := r.joinHost(arena.New(arena.Config{Boxes: 2}))
	honest := make([]*relayCounter, 6)
	for i := range honest {
		honest[i] = &relayCounter{Game: arena.New(arena.Config{})}
		r.join(fmt.Sprintf("honest%d", i), signaling.KindBot, honest[i])
	}
	mallory := r.join("mallory", signaling.KindBot, arena.New(arena.Config{}))
	poll.Until(t, 20*time.Second, "synced", func() error { return converged(r.peers) })

	big := make([]byte, peer.MaxMessage)
	start := time.Now()
	const attack = 3 * time.Second
	pace := time.NewTicker(50 * time.Millisecond) // the attacker's pace: 10 messages every 50 ms
	defer pace.Stop()
	for ; time.Since(start) < attack; <-pace.C {
		// The attacker sends as fast as its own link to the host carries, up to its limit: past
		// the high-water mark its own link would close (a slow machine, the race detector).
		if mallory.Status().Channels[link.Reliable].Buffered > link.DefaultReliableHighWater/2 {
			continue
		}
		if err := mallory.Do(context.Background(), func(w *peer.World) {
			for range 10 {
				if w.SendMessage(peer.Everyone, 200, big, true) != nil {
					return
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start).Seconds() + 1 // what is still in flight is counted below
	poll.Until(t, 20*time.Second, "converged after the attack", func() error { return converged(r.peers) })

	st := host.Status()
	if bp := st.Channels[link.Reliable].Backpressured; bp != 0 {
		t.Errorf("the host hit backpressure %d times: it closed members' links", bp)
	}
	if st.RefusedBy[peer.RefusedRelayBudget] == 0 {
		t.Error("the attacker's excess was not counted (relay_budget)")
	}
	if st.Offenders != 0 {
		t.Errorf("host Offenders = %d, want 0", st.Offenders)
	}
	for i, a := range honest {
		got := int(a.bytes.Load())
		if got == 0 {
			t.Errorf("honest member %d received nothing relayed", i)
		}
		if limit := peer.DefaultRecvRelayBurst + int(elapsed*peer.DefaultRecvRelayRate); got > limit {
			t.Errorf("honest member %d received %d relayed bytes, more than its inbound budget %d", i, got, limit)
		}
	}
}
