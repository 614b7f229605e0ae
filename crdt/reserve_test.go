package crdt

import "testing"

// TestReserveNoGrowth: after Reserve, merging as many values as reserved neither grows the LWW
// table nor moves its value list (what a member's first snapshot merge relies on), and the state is
// the one merging without Reserve gives.
func TestReserveNoGrowth(t *testing.T) {
	const entities, comps = 500, 4
	r, plain := New(Config{}), New(Config{})
	r.Reserve(entities, entities*comps)
	slots, vals := len(r.lww.slots), cap(r.lww.vals)
	for n := range entities {
		for c := range comps {
			m := Message{Type: PutComponent, Entity: NewEntity(uint16(n+1), 0), Component: ComponentID(c + 1), Timestamp: Timestamp(n*comps + c + 1), Data: []byte{byte(n), byte(c)}}
			if r.Merge(&m) != Applied || plain.Merge(&m) != Applied {
				t.Fatalf("message %+v not applied", m)
			}
		}
	}
	if len(r.lww.slots) != slots || cap(r.lww.vals) != vals {
		t.Fatalf("table grew from %d slots (%d values) to %d (%d)", slots, vals, len(r.lww.slots), cap(r.lww.vals))
	}
	if r.Hash() != plain.Hash() || r.Len() != plain.Len() || r.Size() != plain.Size() {
		t.Fatal("a reserved replica differs from a plain one")
	}
}
