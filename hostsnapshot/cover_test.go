package hostsnapshot

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

func TestCover(t *testing.T) {
	tests := []struct {
		name    string
		c       Cover
		count   int
		covered []int
	}{
		{"zero", Cover{}, DefaultBuckets, nil},
		{"all default", All(0), DefaultBuckets, nil},
		{"all negative", All(-3), DefaultBuckets, nil},
		{"all 10", All(10), 10, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"only some", Only(256, 0, 7, 8, 255), 256, []int{0, 7, 8, 255}},
		{"only ignores outside", Only(10, -1, 3, 10, 11, 3), 10, []int{3}},
		{"only none", Only(16), 16, []int{}},
		{"only every", Only(3, 0, 1, 2), 3, []int{0, 1, 2}},
		{"only zero count", Only(0, 5), DefaultBuckets, []int{5}},
		{"only negative count", Only(-1, 5), DefaultBuckets, []int{5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.c.Count() != tc.count {
				t.Fatalf("Count() = %d, want %d", tc.c.Count(), tc.count)
			}
			covered := tc.covered
			if covered == nil { // every bucket
				covered = make([]int, tc.count)
				for i := range covered {
					covered[i] = i
				}
			}
			for b := -2; b < tc.count+10; b++ {
				if got, want := tc.c.Has(b), slices.Contains(covered, b); got != want {
					t.Fatalf("Has(%d) = %v, want %v", b, got, want)
				}
			}
			for _, n := range []uint16{0, 1, 255, 256, 511, 512, 65535} {
				if got, want := tc.c.Number(n), slices.Contains(covered, int(n)%tc.count); got != want {
					t.Fatalf("Number(%d) = %v, want %v", n, got, want)
				}
			}
			if tc.c.Len() != len(covered) || tc.c.IsAll() != (len(covered) == tc.count) {
				t.Fatalf("Len() = %d, IsAll() = %v; want %d of %d", tc.c.Len(), tc.c.IsAll(), len(covered), tc.count)
			}
			if want := fmt.Sprintf("%d/%d buckets", len(covered), tc.count); tc.c.String() != want {
				t.Fatalf("String() = %q, want %q", tc.c.String(), want)
			}
			bm := tc.c.appendBitmap(nil)
			if len(bm) != (tc.count+7)/8 {
				t.Fatalf("bitmap of %d bytes for %d buckets", len(bm), tc.count)
			}
			back := Cover{count: tc.count, some: bm}
			for b := range tc.count {
				if back.Has(b) != tc.c.Has(b) {
					t.Fatalf("bitmap round trip differs at bucket %d", b)
				}
			}
		})
	}
}

func coveredNumbers(t *testing.T, c Cover, s *netmsg.HostSnapshot) {
	t.Helper()
	for _, sp := range s.Spawns {
		if n := crdt.Entity(sp.NetworkID).Number(); !c.Number(n) {
			t.Fatalf("spawn of number %d outside the cover", n)
		}
	}
	h, err := parseHostState(s.HostState)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range messages(t, h.stream) {
		if !c.Number(m.Entity.Number()) {
			t.Fatalf("%v of number %d outside the cover", m.Type, m.Entity.Number())
		}
	}
}

func TestPartialCoverCarriesOnlyCovered(t *testing.T) {
	src := richWorld(t, 21)
	// Bucket 0 holds entity 0 and 512, 83 holds 851 (a reused number), 84 holds 852 (deleted
	// with appends), 255 holds 65535.
	cover := Only(256, 0, 83, 84, 255, 200)
	s := decode(t, encode(t, src, testTable, Options{Cover: cover}))
	coveredNumbers(t, cover, s)
	full := decode(t, encode(t, src, testTable, Options{}))
	if len(s.Spawns) == 0 || len(s.Spawns) >= len(full.Spawns) {
		t.Fatalf("%d spawns in the partial snapshot, %d in the full one", len(s.Spawns), len(full.Spawns))
	}

	dst := crdt.New(crdt.Config{})
	info, corr, err := Apply(dst, testTable, s, dst.Merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(corr) != 0 {
		t.Fatalf("%d correction bytes from an empty receiver", len(corr))
	}
	if info.Cover.Count() != 256 || info.Cover.Len() != cover.Len() || info.Cover.IsAll() {
		t.Fatalf("info cover %v, want %v", info.Cover, cover)
	}
	for b := range 256 {
		if info.Cover.Has(b) != cover.Has(b) {
			t.Fatalf("info cover bucket %d: %v", b, info.Cover.Has(b))
		}
		got, want := dst.AppendBucketState(nil, b, 256), src.AppendBucketState(nil, b, 256)
		if !cover.Has(b) {
			want = nil
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("bucket %d: %d bytes, want %d", b, len(got), len(want))
		}
	}
	if dst.Clock() != src.Clock() {
		t.Fatalf("clock %d, want %d", dst.Clock(), src.Clock())
	}
}

func TestPartialCorrectionsOnlyCovered(t *testing.T) {
	host, recv := divergedPair(t, 22)
	const count = 64
	hd, rd := host.BucketDigests(count, nil), recv.BucketDigests(count, nil)
	var differ []int
	for b := range count {
		if hd[b] != rd[b] {
			differ = append(differ, b)
		}
	}
	if len(differ) < 4 {
		t.Fatalf("only %d buckets differ", len(differ))
	}
	cover := Only(count, differ[:len(differ)/2]...)
	before := make([][]byte, count)
	for b := range count {
		before[b] = recv.AppendBucketState(nil, b, count)
	}
	s := decode(t, encode(t, host, testTable, Options{Cover: cover}))
	_, corr, err := Apply(recv, testTable, s, recv.Merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(corr) == 0 {
		t.Fatal("no corrections")
	}
	for _, m := range messages(t, corr) {
		if !cover.Number(m.Entity.Number()) {
			t.Fatalf("correction %v for number %d outside the cover", m.Type, m.Entity.Number())
		}
	}
	if _, err := host.MergeStream(corr); err != nil {
		t.Fatal(err)
	}
	for b := range count {
		got := recv.AppendBucketState(nil, b, count)
		if !cover.Has(b) {
			if !bytes.Equal(got, before[b]) {
				t.Fatalf("uncovered bucket %d of the receiver changed", b)
			}
			continue
		}
		if !bytes.Equal(got, host.AppendBucketState(nil, b, count)) {
			t.Fatalf("covered bucket %d differs after the exchange", b)
		}
	}
}

// bodyWorld spawns one benchTable entity per number with all three 12-byte properties.
func bodyWorld(t testing.TB, numbers []uint16, seed uint64) *crdt.Replica {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	r := crdt.New(crdt.Config{})
	s := lookup(t, benchTable, 1)
	meta := schema.AppendMeta(nil, s.ID, nil)
	val := make([]byte, 12)
	// Merged directly: t.Helper in a per-value helper costs more than the merge here.
	for k, n := range numbers {
		e := crdt.NewEntity(n, 0)
		ts := crdt.Timestamp(1 + k%1000)
		r.Merge(&crdt.Message{Type: crdt.PutComponent, Entity: e, Component: schema.ComponentMeta, Timestamp: ts, Data: meta})
		for _, p := range s.Properties {
			for j := range val {
				val[j] = byte(rng.Uint32())
			}
			r.Merge(&crdt.Message{Type: crdt.PutComponent, Entity: e, Component: p.Component, Timestamp: ts + 1, Data: val})
		}
	}
	if r.Len() != 4*len(numbers) {
		t.Fatalf("world holds %d entries, want %d", r.Len(), 4*len(numbers))
	}
	return r
}

func numberRange(from, to int) []uint16 {
	ns := make([]uint16, 0, to-from)
	for n := from; n < to; n++ {
		ns = append(ns, uint16(n))
	}
	return ns
}

// divergeBuckets makes random changes, on either replica, to entities of the given buckets only.
func divergeBuckets(t testing.TB, rng *rand.Rand, a, b *crdt.Replica, count int, buckets []int, live []uint16) {
	t.Helper()
	s := lookup(t, benchTable, 1)
	var inBucket []uint16
	for _, n := range live {
		if slices.Contains(buckets, int(n)%count) {
			inBucket = append(inBucket, n)
		}
	}
	if len(inBucket) == 0 {
		t.Fatal("no entity in the chosen buckets")
	}
	for _, bucket := range buckets {
		// Every chosen bucket gets at least one change on one side.
		var mine []uint16
		for _, n := range inBucket {
			if int(n)%count == bucket {
				mine = append(mine, n)
			}
		}
		for range 1 + rng.IntN(4) {
			r := a
			if rng.IntN(2) == 0 {
				r = b
			}
			n := mine[rng.IntN(len(mine))]
			e := crdt.NewEntity(n, 0)
			ts := r.Clock() + 1 + crdt.Timestamp(rng.IntN(3))
			switch rng.IntN(6) {
			case 0, 1:
				put(t, r, e, s.Properties[rng.IntN(3)].Component, ts, randBytes(rng, 12))
			case 2:
				tomb(t, r, e, s.Properties[rng.IntN(3)].Component, ts)
			case 3:
				delEntity(t, r, e)
			case 4:
				appendVal(t, r, e, compLog, ts, randBytes(rng, 5))
			case 5: // the number reused with a higher version
				spawn(t, r, rng, crdt.NewEntity(n, 1+uint16(rng.IntN(2))), s, s.FullMask(), ts, 0)
			}
		}
	}
}

func differingBuckets(a, b *crdt.Replica, count int) []int {
	da, db := a.BucketDigests(count, nil), b.BucketDigests(count, nil)
	var out []int
	for i := range da {
		if da[i] != db[i] {
			out = append(out, i)
		}
	}
	return out
}

// TestPartialSyncProperty: two replicas that differ in a few buckets find them by digest and
// converge by exchanging snapshots of those buckets only, whichever way they exchange.
func TestPartialSyncProperty(t *testing.T) {
	live := numberRange(512, 812)
	base := bodyWorld(t, live, 31)
	for trial := range 24 {
		rng := rand.New(rand.NewPCG(uint64(trial), 32))
		count := []int{1, 7, 64, 256, 1000, MaxBuckets}[trial%6]
		var chosen []int
		for range 1 + rng.IntN(4) {
			chosen = append(chosen, int(live[rng.IntN(len(live))])%count)
		}
		a, b := clone(t, base), clone(t, base)
		divergeBuckets(t, rng, a, b, count, chosen, live)
		differ := differingBuckets(a, b, count)
		for _, d := range differ {
			if !slices.Contains(chosen, d) {
				t.Fatalf("trial %d: bucket %d differs but was not changed", trial, d)
			}
		}
		cover := Only(count, differ...)
		t.Run(fmt.Sprintf("trial%d/buckets%d/differ%d", trial, count, len(differ)), func(t *testing.T) {
			// Host to member, corrections back.
			host, member := clone(t, a), clone(t, b)
			s := decode(t, encode(t, host, benchTable, Options{Cover: cover}))
			_, corr, err := Apply(member, benchTable, s, member.Merge, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := host.MergeStream(corr); err != nil {
				t.Fatal(err)
			}
			requireSameState(t, host, member)
			requireSameState(t, host, join(t, a, b))

			// Partial snapshots both ways, corrections ignored.
			a2, b2 := clone(t, a), clone(t, b)
			sa := decode(t, encode(t, a2, benchTable, Options{Cover: cover}))
			if _, _, err := Apply(b2, benchTable, sa, b2.Merge, nil); err != nil {
				t.Fatal(err)
			}
			sb := decode(t, encode(t, b2, benchTable, Options{Cover: cover}))
			if _, _, err := Apply(a2, benchTable, sb, a2.Merge, nil); err != nil {
				t.Fatal(err)
			}
			requireSameState(t, a2, b2)
			if len(differingBuckets(a2, b2, count)) != 0 {
				t.Fatal("digests still differ")
			}
		})
	}
}

// TestPartialSnapshotScalesWithDifference: in a 10,000-entity world where 3 buckets of 256
// differ, the partial snapshot is a small fraction of the full one and still converges.
func TestPartialSnapshotScalesWithDifference(t *testing.T) {
	live := numberRange(512, 10512)
	base := bodyWorld(t, live, 41)
	a, b := clone(t, base), clone(t, base)
	rng := rand.New(rand.NewPCG(41, 42))
	divergeBuckets(t, rng, a, b, 256, []int{3, 100, 250}, live)
	differ := differingBuckets(a, b, 256)
	if len(differ) == 0 || len(differ) > 3 {
		t.Fatalf("differing buckets %v", differ)
	}
	full := encode(t, a, benchTable, Options{})
	partial := encode(t, a, benchTable, Options{Cover: Only(256, differ...)})
	t.Logf("full snapshot %d bytes, partial (%d buckets) %d bytes", len(full), len(differ), len(partial))
	if len(partial)*40 > len(full) {
		t.Fatalf("partial snapshot %d bytes is more than 1/40 of the full %d bytes", len(partial), len(full))
	}
	_, corr, err := Apply(b, benchTable, decode(t, partial), b.Merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(corr)*40 > len(full) {
		t.Fatalf("corrections %d bytes", len(corr))
	}
	if _, err := a.MergeStream(corr); err != nil {
		t.Fatal(err)
	}
	requireSameState(t, a, b)
}
