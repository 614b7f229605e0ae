package crdt

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// setHash is the reference definition of the state hash, computed from a canonical stream
// without the replica's incremental sums: the sum of ElementHash over its messages.
func setHash(t testing.TB, stream []byte) uint64 {
	t.Helper()
	var sum uint64
	var m Message
	for off := 0; off < len(stream); {
		n, err := ConsumeMessage(stream[off:], &m)
		if err != nil {
			t.Fatalf("stream at %d: %v", off, err)
		}
		sum += ElementHash(stream[off : off+n])
		off += n
	}
	return sum
}

// checkSums compares Hash and BucketDigests with the reference over the canonical export.
func checkSums(t *testing.T, r *Replica, step int) {
	t.Helper()
	if got, want := r.Hash(), setHash(t, r.AppendState(nil)); got != want {
		t.Fatalf("step %d: Hash %#x, reference %#x", step, got, want)
	}
	for _, buckets := range []int{1, 7, 256} {
		d := r.BucketDigests(buckets, nil)
		var total uint64
		for b := range buckets {
			if want := setHash(t, r.AppendBucketState(nil, b, buckets)); d[b] != want {
				t.Fatalf("step %d: digest %d of %d = %#x, reference %#x", step, b, buckets, d[b], want)
			}
			total += d[b]
		}
		if total != r.Hash() {
			t.Fatalf("step %d: digests of %d buckets do not add up to Hash", step, buckets)
		}
	}
}

// TestHashIncremental: the per-number sums track every kind of change (values, tombstones,
// append values and evictions, deletions explicit and implicit, WriteAt replacing a value at its
// own stamp), whether the hash is asked for after every change or after many.
func TestHashIncremental(t *testing.T) {
	for _, every := range []int{1, 5, 50} {
		rng := rand.New(rand.NewPCG(11, uint64(every)))
		r := New(Config{AppendRetention: 3})
		for step := range 2000 {
			m := randomMessage(rng)
			// Spread the numbers over several pages and buckets, not only 512…516.
			m.Entity = NewEntity(m.Entity.Number()+uint16(rng.IntN(4))*300, m.Entity.Version())
			if rng.IntN(10) == 0 && m.Type.HasData() && m.Type != AppendValue {
				r.WriteAt(m.Entity, m.Component, m.Timestamp, m.Data, false)
			} else {
				r.Merge(&m)
			}
			if step%every == 0 {
				checkSums(t, r, step)
			}
		}
		checkSums(t, r, -1)
		// A replica built from the export agrees, and so does one built in another order.
		cp := New(Config{AppendRetention: 3})
		if _, err := cp.MergeStream(r.AppendState(nil)); err != nil {
			t.Fatal(err)
		}
		if cp.Hash() != r.Hash() {
			t.Fatal("a copy hashes differently")
		}
	}
}

// TestHashAllocs: hashing after a few writes to existing keys allocates nothing.
func TestHashAllocs(t *testing.T) {
	r := New(Config{})
	for i := range 1000 {
		r.Put(NewEntity(uint16(512+i), 0), 1, []byte("value"))
	}
	var d []uint64
	d = r.BucketDigests(256, d)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		r.Put(NewEntity(uint16(512+i%1000), 0), 1, []byte("other"))
		r.Hash()
		d = r.BucketDigests(256, d[:0])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// TestRangeEntity: LiveVersion, RangeEntity and RangeEntityAppend read, number by number, exactly
// the entries Range and RangeAppend report.
func TestRangeEntity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := New(Config{})
	for range 2000 {
		m := randomMessage(rng)
		m.Entity = NewEntity(m.Entity.Number()+uint16(rng.IntN(8))*40, m.Entity.Version())
		r.Merge(&m)
	}
	var want, got []Entry
	r.Range(func(en Entry) bool { want = append(want, en); return true })
	var wantApp, gotApp []AppendEntry
	r.RangeAppend(func(a AppendEntry) bool { wantApp = append(wantApp, a); return true })
	var live []Entity
	for n := range 0x10000 {
		if v, ok := r.LiveVersion(uint16(n)); ok {
			live = append(live, NewEntity(uint16(n), v))
		}
	}
	slices.Sort(live)
	for _, e := range live {
		r.RangeEntity(e, func(en Entry) bool { got = append(got, en); return true })
		r.RangeEntityAppend(e, func(a AppendEntry) bool { gotApp = append(gotApp, a); return true })
		// A version that is not the live one holds nothing.
		r.RangeEntity(NewEntity(e.Number(), e.Version()+1), func(Entry) bool { t.Fatal("entry of a dead version"); return false })
	}
	if len(want) == 0 || len(wantApp) == 0 {
		t.Fatal("nothing to compare")
	}
	if !slices.EqualFunc(got, want, func(a, b Entry) bool {
		return a.Entity == b.Entity && a.Component == b.Component && a.Timestamp == b.Timestamp && a.Deleted == b.Deleted && string(a.Data) == string(b.Data)
	}) {
		t.Fatalf("RangeEntity: %d entries, Range: %d", len(got), len(want))
	}
	if !slices.EqualFunc(gotApp, wantApp, func(a, b AppendEntry) bool {
		return a.Entity == b.Entity && a.Component == b.Component && a.Timestamp == b.Timestamp && string(a.Data) == string(b.Data)
	}) {
		t.Fatalf("RangeEntityAppend: %d values, RangeAppend: %d", len(gotApp), len(wantApp))
	}
	if r.LiveEntities() != len(live) {
		t.Fatalf("LiveVersion found %d entities, LiveEntities %d", len(live), r.LiveEntities())
	}
}

// TestHashResum: when most of the state changed since the last hash, the sums are recomputed in
// one pass over the storage (resum) instead of number by number; both paths agree with the
// reference, and switching between them keeps the sums right.
func TestHashResum(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	r := New(Config{AppendRetention: 3})
	write := func(count, numbers int) {
		for range count {
			m := randomMessage(rng)
			m.Entity = NewEntity(uint16(512+rng.IntN(numbers)), m.Entity.Version())
			r.Merge(&m)
		}
	}
	write(5000, 3000) // most numbers dirty: resum
	if r.nDirty <= r.nums.n/2+64 {
		t.Fatalf("%d dirty of %d live: the test does not reach resum", r.nDirty, r.nums.n)
	}
	checkSums(t, r, 0)
	write(20, 3000) // a few: number by number
	if r.nDirty == 0 || r.nDirty > r.nums.n/2+64 {
		t.Fatalf("%d dirty of %d live: the test does not take the incremental path", r.nDirty, r.nums.n)
	}
	checkSums(t, r, 1)
	write(8000, 3000) // most again, deletions included
	checkSums(t, r, 2)
}
