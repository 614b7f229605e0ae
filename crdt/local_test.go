package crdt

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestWriteChangedIsGetThenWriteAt: WriteChanged gives what a world's Set did with Get and
// WriteAt — NoChange without a write when the live value is the same, else WriteAt's outcome —
// and leaves the same state, hash, size and clock, over random writes, tombstones, merges at
// other stamps and deletions (explicit and implicit, by a higher version) of a few keys.
func TestWriteChangedIsGetThenWriteAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := New(Config{}), New(Config{}) // a: WriteChanged; b: Get then WriteAt
	ents := []Entity{Entity(600), Entity(601), Entity(1<<16 | 600), Entity(2<<16 | 601)}
	for i := range 20000 {
		e := ents[rng.IntN(len(ents))]
		c := ComponentID(1100 + rng.IntN(2))
		data := []byte{byte(rng.IntN(3))}
		ts := Timestamp(1 + i/4 + rng.IntN(3))
		switch rng.IntN(10) {
		case 0: // a tombstone, merged
			m := Message{Type: DeleteComponent, Entity: e, Component: c, Timestamp: ts}
			a.Merge(&m)
			b.Merge(&m)
		case 1: // a value at another stamp, merged
			m := Message{Type: PutComponent, Entity: e, Component: c, Timestamp: ts + 2, Data: data}
			a.Merge(&m)
			b.Merge(&m)
		case 2:
			if rng.IntN(20) == 0 {
				a.DeleteEntity(e)
				b.DeleteEntity(e)
			}
		default:
			got := a.WriteChanged(e, c, ts, data)
			want := NoChange
			if cur, _, ok, del := b.Get(e, c); !ok || del || !bytes.Equal(cur, data) {
				want = b.WriteAt(e, c, ts, data, false)
			}
			if got != want {
				t.Fatalf("step %d: WriteChanged(%v, %d, %d, %x) = %v, Get+WriteAt %v", i, e, c, ts, data, got, want)
			}
		}
		if a.Hash() != b.Hash() || a.Size() != b.Size() || a.Clock() != b.Clock() {
			t.Fatalf("step %d: hash %x/%x size %d/%d clock %d/%d", i, a.Hash(), b.Hash(), a.Size(), b.Size(), a.Clock(), b.Clock())
		}
	}
	if !bytes.Equal(a.AppendState(nil), b.AppendState(nil)) {
		t.Fatal("states differ")
	}
}
