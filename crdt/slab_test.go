package crdt

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestSlabValuesStayApart: values that share a slab (lwwTable.slab) never see one another's
// writes: after random puts of every size around the slab's bound, in place and growing, and
// deletions, every key reads back what was last written to it.
func TestSlabValuesStayApart(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	r := New(Config{})
	want := map[uint64][]byte{}
	ts := Timestamp(1)
	for range 20_000 {
		e, c := NewEntity(uint16(1+rng.IntN(300)), 0), ComponentID(1+rng.IntN(4))
		k := lwwKey(e, c)
		if rng.IntN(20) == 0 {
			r.Merge(&Message{Type: DeleteComponent, Entity: e, Component: c, Timestamp: ts})
			delete(want, k)
		} else {
			v := make([]byte, rng.IntN(slabValue+8))
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			r.Merge(&Message{Type: PutComponent, Entity: e, Component: c, Timestamp: ts, Data: v})
			want[k] = v
		}
		ts++
	}
	n := 0
	r.Range(func(en Entry) bool {
		if en.Deleted {
			return true
		}
		n++
		if w := want[lwwKey(en.Entity, en.Component)]; !bytes.Equal(en.Data, w) {
			t.Fatalf("%v/%d reads %x, last written %x", en.Entity, en.Component, en.Data, w)
		}
		return true
	})
	if n != len(want) {
		t.Fatalf("%d values, want %d", n, len(want))
	}
}
