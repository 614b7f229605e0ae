package hostsnapshot

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// TestCacheBuildsTheSame: a whole-world snapshot built through a Cache is, byte for byte, the one a
// fresh Build makes, after every round of random edits (values, tombstones, entity deletions,
// numbers reused at higher versions, entities without or with unknown meta, append values), when
// nothing changed, and when the cache moves to another replica.
func TestCacheBuildsTheSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 27))
	r := richWorld(t, 3)
	// Pages beyond richWorld's: a body world's entities over numbers 1,000–3,999 as well.
	for k, n := range numberRange(1000, 4000) {
		if k%3 == 0 {
			spawn(t, r, rng, crdt.NewEntity(n, uint16(k%2)), lookup(t, testTable, 1), 7, r.Clock()+1, 0)
		}
	}
	var cache Cache
	same := func(round int) {
		t.Helper()
		for _, o := range []Options{{}, {Cover: Only(64, allBuckets(64)...)}} {
			want := encode(t, r, testTable, o)
			o.Cache = &cache
			got := encode(t, r, testTable, o)
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d (cover %v): cached snapshot of %d bytes differs from a fresh build of %d", round, o.Cover, len(got), len(want))
			}
		}
	}
	same(-1)
	same(-2) // nothing changed
	s1, s3 := lookup(t, testTable, 1), lookup(t, testTable, 3)
	for round := range 200 {
		for range 1 + rng.IntN(6) {
			n := uint16(rng.IntN(5000))
			if rng.IntN(10) == 0 {
				n = uint16(65535 - rng.IntN(3))
			}
			ts := r.Clock() + 1
			v, live := r.LiveVersion(n)
			e := crdt.NewEntity(n, v)
			switch k := rng.IntN(9); {
			case k == 0 && live:
				delEntity(t, r, e)
			case k == 1:
				// A spawn, over a live entity at a higher version (an implicit deletion) or not.
				if live {
					e = crdt.NewEntity(n, v+1+uint16(rng.IntN(2)))
				}
				spawn(t, r, rng, e, s3, rng.Uint32()&s3.FullMask(), ts, 0)
			case k == 2 && live:
				tomb(t, r, e, s1.Properties[rng.IntN(3)].Component, ts)
			case k == 3:
				appendVal(t, r, e, compLog, ts, randBytes(rng, 4))
			case k == 4:
				put(t, r, e, compUnknown, ts, randBytes(rng, 3))
			case k == 5 && live:
				tomb(t, r, e, schema.ComponentMeta, ts)
			default:
				put(t, r, e, s1.Properties[0].Component, ts, randValue(rng, s1, 0, 0))
			}
		}
		if rng.IntN(4) == 0 {
			r.ObserveClock(r.Clock() + 10)
		}
		same(round)
	}
	// The cache follows the replica it is given.
	r = richWorld(t, 4)
	same(1000)
}

func allBuckets(n int) []int {
	bs := make([]int, n)
	for i := range bs {
		bs[i] = i
	}
	return bs
}

// BenchmarkBuild10kCached is BenchmarkBuild10k through a Cache while one page of the world moves
// (a host's late joins one after another while its first 100 entities move).
func BenchmarkBuild10kCached(b *testing.B) {
	src := benchWorld(b)
	var snap netmsg.HostSnapshot
	var cache Cache
	Build(&snap, src, benchTable, Options{Cache: &cache})
	val := make([]byte, 12)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for n := uint16(512); n < 612; n++ {
			val[0]++
			src.Merge(&crdt.Message{Type: crdt.PutComponent, Entity: crdt.NewEntity(n, 0), Component: 1100, Timestamp: src.Clock() + 1, Data: val})
		}
		Build(&snap, src, benchTable, Options{Cache: &cache})
	}
}
