package peer

import (
	"encoding/binary"
	"testing"
)

// The host's send path under load, in a steppable room (no sockets): what one network flush costs
// the host. The members' datagrams are dropped on arrival, so only the host's work is measured.

const (
	benchMembers = 16
	benchBoxes   = 200
)

// benchRoom is a host (peer 1) with benchMembers members that take whole values, and
// benchBoxes boxes the host writes.
func benchRoom(b *testing.B) (*stepNet, *stepPeer, []Entity) {
	n := newStepNet(b)
	n.noDeltas = true
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 1, 1)
	n.loseTo = map[PeerIndex]bool{}
	for idx := PeerIndex(2); idx <= benchMembers+1; idx++ {
		n.join(idx, &stepApp{table: stepSchemas()}, 1, 1)
		n.loseTo[idx] = true
	}
	var boxes []Entity
	n.do(1, func(w *World) {
		for range benchBoxes {
			e, err := w.Spawn(stepSchemaBox, nil, []byte{0, 0, 0, 0})
			if err != nil {
				b.Fatal(err)
			}
			boxes = append(boxes, e)
		}
	})
	h.flushUpdates()
	n.pump()
	return n, h, boxes
}

// BenchmarkHostFlushShared: every flush the host writes every box once and sends the change list
// to every member (the shared recording, replayed to each).
func BenchmarkHostFlushShared(b *testing.B) {
	n, h, boxes := benchRoom(b)
	v := make([]byte, 4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		binary.LittleEndian.PutUint32(v, uint32(i+1))
		n.do(1, func(w *World) {
			for _, e := range boxes {
				_ = w.Set(e, 0, v)
			}
		})
		h.flushUpdates()
		n.pump()
	}
}

// BenchmarkHostFanoutRelayed: every flush each member moves its avatar, and the host relays each
// write to every other member (the members' own dirty sets).
func BenchmarkHostFanoutRelayed(b *testing.B) {
	n, h, _ := benchRoom(b)
	v := make([]byte, 4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		binary.LittleEndian.PutUint32(v, uint32(i+1))
		for idx := PeerIndex(2); idx <= benchMembers+1; idx++ {
			n.do(idx, func(w *World) {
				a, _ := w.AvatarOf(idx)
				_ = w.Set(a, 0, v)
			})
			n.peers[idx].flushUpdates()
		}
		n.pump()
		h.flushUpdates()
		n.pump()
	}
}

// BenchmarkWorldSet: the host's app writes every box a new value, one step (one batch stamp) per
// round, as a game moves its entities every tick; ns/op is per Set.
func BenchmarkWorldSet(b *testing.B) {
	n, h, boxes := benchRoom(b)
	v := make([]byte, 4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		binary.LittleEndian.PutUint32(v, uint32(i+1))
		n.do(1, func(w *World) {
			for _, e := range boxes {
				_ = w.Set(e, 0, v)
			}
		})
		i += len(boxes)
		b.StopTimer()
		h.flushUpdates() // empties the change list, as the network flush does
		n.pump()
		b.StartTimer()
	}
}

// BenchmarkIdleHostTick: one tick and network flush of a host whose 256 members are synced and
// idle, nothing written (docs/protocol.md §5, "Idle members"): what an idle room costs its host
// 20 times a second.
func BenchmarkIdleHostTick(b *testing.B) {
	n := newStepNet(b)
	h := n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	for idx := PeerIndex(2); idx <= 257; idx++ {
		n.join(idx, &stepApp{table: stepSchemas()}, 1, 1)
	}
	for range 3 {
		h.flushUpdates()
		n.pump()
	}
	now := n.clock.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now = now.Add(h.cfg.TickInterval)
		h.tick(now, h.cfg.TickInterval)
	}
}
