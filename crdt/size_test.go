package crdt

import (
	"math/rand/v2"
	"testing"
)

// TestSizeAndGrowth: after every merge, WriteAt, Forget and local write Size is the length of
// AppendState, and a merge never adds more than Growth said it would.
func TestSizeAndGrowth(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := New(Config{AppendRetention: 3})
		for i := range 400 {
			m := randomMessage(rng)
			before, growth := r.Size(), r.Growth(&m)
			switch x := rng.IntN(20); {
			case x == 0:
				r.Forget(m.Entity.Number())
			case x == 1 && !m.Type.HasData() || x == 1 && m.Type == AppendValue:
				r.WriteAt(m.Entity, m.Component, m.Timestamp, nil, true)
			case x == 2:
				r.Put(m.Entity, m.Component, m.Data)
			default:
				r.Merge(&m)
				if d := r.Size() - before; d > growth {
					t.Fatalf("seed %d step %d: %v grew the state by %d bytes, Growth said at most %d", seed, i, m.Type, d, growth)
				}
			}
			if got, want := r.Size(), len(r.AppendState(nil)); got != want {
				t.Fatalf("seed %d step %d: Size %d, AppendState %d bytes", seed, i, got, want)
			}
		}
	}
}

// TestAppendSets counts an entity's append sets, of its live version only.
func TestAppendSets(t *testing.T) {
	r := New(Config{})
	e := NewEntity(600, 1)
	for _, c := range []ComponentID{2000, 2002, 2001} {
		r.AppendValue(e, c, []byte("x"))
	}
	r.Put(e, 5, []byte("p"))
	if n, has := r.AppendSets(e, 2001); n != 3 || !has {
		t.Fatalf("AppendSets = %d, %v; want 3, true", n, has)
	}
	if n, has := r.AppendSets(e, 2003); n != 3 || has {
		t.Fatalf("AppendSets of a component without a set = %d, %v; want 3, false", n, has)
	}
	if n, _ := r.AppendSets(NewEntity(600, 0), 2000); n != 0 {
		t.Fatalf("another version holds %d sets; want 0", n)
	}
}
