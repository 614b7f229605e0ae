package hostsnapshot

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/concordrtc/concord/crdt"
)

// walkStream records what walkCover reports as a canonical message stream.
func walkStream(r *crdt.Replica, cover Cover) []byte {
	var out []byte
	walkCover(r, cover, func(number, version uint16) {
		m := crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(number, version)}
		out = crdt.AppendMessage(out, &m)
	}, func(en crdt.Entry) {
		m := crdt.Message{Type: crdt.PutComponent, Entity: en.Entity, Component: en.Component, Timestamp: en.Timestamp, Data: en.Data}
		if en.Deleted {
			m.Type, m.Data = crdt.DeleteComponent, nil
		}
		out = crdt.AppendMessage(out, &m)
	}, func(a crdt.AppendEntry) {
		m := crdt.Message{Type: crdt.AppendValue, Entity: a.Entity, Component: a.Component, Timestamp: a.Timestamp, Data: a.Data}
		out = crdt.AppendMessage(out, &m)
	})
	return out
}

// TestWalkCoverSparse: reading a few buckets number by number yields exactly the canonical
// messages of those buckets, in canonical order, as the whole-replica walk does.
func TestWalkCoverSparse(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	r := crdt.New(crdt.Config{})
	for range 3000 {
		e := crdt.NewEntity(uint16(rng.IntN(2000)), uint16(rng.IntN(3)))
		m := crdt.Message{Type: crdt.PutComponent, Entity: e, Component: crdt.ComponentID(1 + rng.IntN(4)), Timestamp: crdt.Timestamp(rng.IntN(50)), Data: []byte{byte(rng.IntN(256))}}
		switch x := rng.IntN(10); {
		case x == 0:
			m.Type, m.Component, m.Timestamp, m.Data = crdt.DeleteEntity, 0, 0, nil
		case x == 1:
			m.Type, m.Data = crdt.DeleteComponent, nil
		case x == 2:
			m.Type = crdt.AppendValue
		}
		r.Merge(&m)
	}
	for _, tc := range []struct {
		count   int
		buckets []int
	}{
		{256, []int{0}}, {256, []int{3, 200, 255}}, {64, []int{1, 2, 63}}, {1000, []int{999}}, {4096, []int{7, 4095}},
	} {
		cover := Only(tc.count, tc.buckets...)
		if cover.Len()*sparseCover >= cover.Count() {
			t.Fatalf("cover %v is not sparse", cover)
		}
		var want []byte
		// The reference: the canonical export, filtered by bucket.
		var rd crdt.Reader
		var m crdt.Message
		state := r.AppendState(nil)
		for rd.Reset(state); rd.Next(&m) == nil; {
			if cover.Number(m.Entity.Number()) {
				want = crdt.AppendMessage(want, &m)
			}
		}
		if len(want) == 0 {
			t.Fatalf("cover %v: nothing to compare", cover)
		}
		if got := walkStream(r, cover); !bytes.Equal(got, want) {
			t.Fatalf("cover %v: the sparse walk differs from the canonical export (%d vs %d bytes)", cover, len(got), len(want))
		}
	}
}
