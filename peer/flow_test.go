package peer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// Flow control of the reliable channel (docs/protocol.md §5, "Limits"): a world larger than a
// link's high-water mark reaches a late joiner as a snapshot streamed at the link's pace; before,
// the host took the full send buffer for a member that cannot keep up and closed every joiner's
// link, and the room was unjoinable.

// worldBytes is how large the test worlds grow: four times the default high-water mark.
const worldBytes = 4 << 20

// growWorld appends 1000-byte values to the host's boxes until its world holds worldBytes.
func growWorld(t *testing.T, host *peer.Peer) {
	t.Helper()
	value := make([]byte, 1000)
	err := host.Do(context.Background(), func(w *peer.World) {
		for _, e := range w.Entities() {
			for c := crdt.ComponentID(6000); c < 6000+peer.DefaultMaxAppendSets; c++ {
				for i := range crdt.DefaultAppendRetention {
					if w.Replica().Size() >= worldBytes {
						return
					}
					value[0], value[1], value[2] = byte(i), byte(c), byte(e)
					if err := w.Append(e, c, value); err != nil && !errors.Is(err, peer.ErrBadComponent) {
						t.Errorf("append: %v", err)
						return
					}
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "world grown", func() error {
		if st := host.Status(); st.WorldBytes < worldBytes {
			return fmt.Errorf("world of %d bytes", st.WorldBytes)
		}
		return nil
	})
}

// lateJoinerSyncs grows the host's world, joins a member and waits until it converged, then
// checks that the host's links were held back by their buffers (the test exercised flow control).
func lateJoinerSyncs(t *testing.T, host *peer.Peer, join func() *peer.Peer) {
	growWorld(t, host)
	start := time.Now()
	late := join()
	poll.Until(t, 60*time.Second, "late joiner synced the large world", func() error {
		return converged([]*peer.Peer{host, late})
	})
	t.Logf("a world of %d bytes synced in %v", host.Status().WorldBytes, time.Since(start).Round(time.Millisecond))
	if st := host.Status(); st.Channels[link.Reliable].Backpressured == 0 {
		t.Fatalf("no reliable send was held back (Status.Channels %+v): the test did not exercise flow control", st.Channels)
	}
	if st := late.Status(); st.Links != 1 {
		t.Fatalf("late joiner holds %d links after syncing, want 1", st.Links)
	}
}

func TestLargeWorldLateJoinerSyncsOverPion(t *testing.T) {
	r := newRoom(t, map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}})
	host := r.joinHost(arena.New(arena.Config{}))
	lateJoinerSyncs(t, host, func() *peer.Peer { return r.join("late", signaling.KindBot, arena.New(arena.Config{})) })
}

func TestLargeWorldLateJoinerSyncsOverMemory(t *testing.T) {
	r := newRoom(t, map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}})
	// A buffer of 64 KiB a direction: the snapshot is 64 times larger.
	tr := &peer.MemoryTransport{Pipe: link.PipeConfig{ReliableHighWater: 64 << 10}}
	memory := func(c *peer.Config) { c.Transport = tr }
	host := r.joinWith(r.ctx, "host", signaling.KindHost, arena.New(arena.Config{}), memory)
	poll.Until(t, 5*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return errors.New("not host yet")
		}
		return nil
	})
	lateJoinerSyncs(t, host, func() *peer.Peer {
		return r.joinWith(r.ctx, "late", signaling.KindBot, arena.New(arena.Config{}), memory)
	})
}
