package peer

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestLateJoinersSyncThroughSnapshotCache: members join one after another while the host
// writes, despawns and spawns across many pages of entity numbers between the joins; each
// joiner's snapshot comes through the host's snapshot cache (syncer.cache), re-encoding only the
// pages that changed, and each joiner's replica equals the host's once it has joined.
func TestLateJoinersSyncThroughSnapshotCache(t *testing.T) {
	n := newStepNet(t)
	host := n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	rng := rand.New(rand.NewPCG(27, 3))
	v := make([]byte, 4)
	var boxes []Entity
	n.do(1, func(w *World) {
		for i := range 2_000 {
			binary.LittleEndian.PutUint32(v, uint32(i))
			e, err := w.Spawn(stepSchemaBox, nil, v)
			if err != nil {
				t.Fatal(err)
			}
			boxes = append(boxes, e)
		}
	})
	n.pump()
	for idx := PeerIndex(2); idx < 10; idx++ {
		n.do(1, func(w *World) {
			for range 1 + rng.IntN(20) {
				k := rng.IntN(len(boxes))
				switch rng.IntN(5) {
				case 0:
					_ = w.Despawn(boxes[k])
					binary.LittleEndian.PutUint32(v, rng.Uint32())
					e, err := w.Spawn(stepSchemaBox, nil, v)
					if err != nil {
						t.Fatal(err)
					}
					boxes[k] = e
				default:
					binary.LittleEndian.PutUint32(v, rng.Uint32())
					if err := w.Set(boxes[k], 0, v); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
		n.pump()
		m := n.join(idx, &stepApp{table: stepSchemas()}, 1, 1)
		if !m.member.synced {
			t.Fatalf("member %d not synced", idx)
		}
		if got, want := m.w.r.Hash(), host.w.r.Hash(); got != want {
			t.Fatalf("member %d's replica (hash %x) differs from the host's (%x) after its join", idx, got, want)
		}
	}
}
