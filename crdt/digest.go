package crdt

import "math/bits"

// The state hash and the bucket digests are set hashes: each canonical message of the state (the
// messages AppendState writes) hashes on its own to an element hash, and a digest is the sum of
// the element hashes of its messages modulo 2⁶⁴. A sum does not depend on order, so the replica
// keeps, per entity number, the sum of that number's messages and recomputes only the numbers that
// changed since it last looked: hashing a 10,000-entity room in which 100 entities moved costs a
// hundred entities, not ten thousand. docs/protocol.md §3 "State hash" is the definition.

// FNV-1a 64 parameters.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// fmix64 is MurmurHash3's 64-bit finalizer. FNV-1a alone leaves the low bits of its result a
// near-linear function of the input (bit 0 is a parity), which a sum of hashes would keep; the
// finalizer spreads every input bit over every output bit.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// ElementHash returns the hash of one canonical message as the state hash counts it: fmix64 of
// the FNV-1a 64 hash of its encoding.
func ElementHash(encoded []byte) uint64 { return fmix64(fnv1a(fnvOffset, encoded)) }

// changed records a modification of the state that touched entity number n.
func (r *Replica) changed(n uint16) {
	r.changes++
	r.pageChanges[n>>8] = r.changes
	if bit := uint64(1) << (n & 63); r.dirty[n>>6]&bit == 0 {
		r.dirty[n>>6] |= bit
		r.nDirty++
	}
}

// refreshSums brings the per-number sums and their total up to date with the state.
func (r *Replica) refreshSums() {
	if r.nDirty == 0 {
		return
	}
	if r.nDirty > r.nums.n/2+64 {
		r.resum() // most of the state changed (a snapshot merged): one pass over all of it
		return
	}
	for wi := range r.dirty {
		for w := r.dirty[wi]; w != 0; w &= w - 1 {
			n := uint16(wi<<6 | bits.TrailingZeros64(w))
			sum := r.numberSum(n)
			page := r.sums[n>>8]
			if page == nil {
				if sum == 0 {
					continue
				}
				page = new([256]uint64)
				r.sums[n>>8] = page
			}
			r.total += sum - page[n&0xff]
			page[n&0xff] = sum
		}
		r.dirty[wi] = 0
	}
	r.nDirty = 0
}

// resum recomputes every per-number sum in one pass over the state's storage, in its memory order
// rather than number by number.
func (r *Replica) resum() {
	for _, page := range &r.sums {
		if page != nil {
			clear(page[:])
		}
	}
	add := func(n uint16, h uint64) {
		page := r.sums[n>>8]
		if page == nil {
			page = new([256]uint64)
			r.sums[n>>8] = page
		}
		page[n&0xff] += h
	}
	b := r.scratch[:0]
	var m Message
	r.RangeDeleted(func(number, version uint16) bool {
		m = Message{Type: DeleteEntity, Entity: NewEntity(number, version)}
		b = AppendMessage(b[:0], &m)
		add(number, ElementHash(b))
		return true
	})
	for i := range r.lww.slots {
		s := &r.lww.slots[i]
		if s.ref == 0 {
			continue
		}
		m = Message{Type: PutComponent, Entity: keyEntity(s.key), Component: keyComponent(s.key), Timestamp: s.ts, Data: *r.lww.data(s)}
		if s.ref&refTomb != 0 {
			m.Type, m.Data = DeleteComponent, nil
		}
		b = AppendMessage(b[:0], &m)
		add(m.Entity.Number(), ElementHash(b))
	}
	for k, set := range r.app {
		for _, v := range set.vals {
			m = Message{Type: AppendValue, Entity: keyEntity(k), Component: keyComponent(k), Timestamp: v.ts, Data: v.data}
			b = AppendMessage(b[:0], &m)
			add(m.Entity.Number(), ElementHash(b))
		}
	}
	r.keepScratch(b)
	r.total = 0
	for _, page := range &r.sums {
		if page != nil {
			for _, v := range page {
				r.total += v
			}
		}
	}
	clear(r.dirty[:])
	r.nDirty = 0
}

// numberSum returns the sum of the element hashes of the canonical messages of entity number n:
// its DELETE_ENTITY, if a version of it is deleted, and every entry of its live version.
func (r *Replica) numberSum(n uint16) uint64 {
	var sum uint64
	b := r.scratch[:0]
	var m Message
	if st := r.deletedStored(n); st != 0 {
		m = Message{Type: DeleteEntity, Entity: NewEntity(n, uint16(st-1))}
		b = AppendMessage(b[:0], &m)
		sum += ElementHash(b)
	}
	if rec := r.nums.get(n); rec != nil {
		e := NewEntity(n, rec.version)
		for _, c := range rec.lww {
			s := r.lww.find(lwwKey(e, c))
			m = Message{Type: PutComponent, Entity: e, Component: c, Timestamp: s.ts, Data: *r.lww.data(s)}
			if s.ref&refTomb != 0 {
				m.Type, m.Data = DeleteComponent, nil
			}
			b = AppendMessage(b[:0], &m)
			sum += ElementHash(b)
		}
		for _, c := range rec.app {
			for _, v := range r.app[lwwKey(e, c)].vals {
				m = Message{Type: AppendValue, Entity: e, Component: c, Timestamp: v.ts, Data: v.data}
				b = AppendMessage(b[:0], &m)
				sum += ElementHash(b)
			}
		}
	}
	r.keepScratch(b)
	return sum
}

// Hash returns the state hash: the sum modulo 2⁶⁴ of ElementHash over every message AppendState
// would write. Two replicas with equal state have equal hashes; the empty state hashes to 0. It
// costs time in proportion to the entities changed since the last Hash or BucketDigests.
func (r *Replica) Hash() uint64 {
	r.refreshSums()
	return r.total
}

// BucketDigests appends one digest per bucket to dst: digest b is the sum modulo 2⁶⁴ of
// ElementHash over the messages of AppendBucketState(nil, b, buckets), 0 for an empty bucket, so
// the digests of any bucket count add up to Hash. Replicas compare digests to find the buckets
// whose state differs and exchange only those. buckets below 1 count as 1. It costs time in
// proportion to the entities changed since the last call, plus the buckets and entity numbers.
func (r *Replica) BucketDigests(buckets int, dst []uint64) []uint64 {
	return r.bucketDigests(buckets, nil, dst)
}

// bucketDigests is BucketDigests over the numbers keep accepts (nil: all).
func (r *Replica) bucketDigests(buckets int, keep func(n uint16) bool, dst []uint64) []uint64 {
	if buckets < 1 {
		buckets = 1
	}
	r.refreshSums()
	start := len(dst)
	for range buckets {
		dst = append(dst, 0)
	}
	d := dst[start:]
	for pi, page := range &r.sums {
		if page == nil {
			continue
		}
		// Numbers pi<<8 … pi<<8+255; keep the bucket running instead of dividing every number.
		b := (pi << 8) % buckets
		for j, s := range page {
			if keep == nil || s != 0 && keep(uint16(pi<<8|j)) {
				d[b] += s
			}
			if b++; b == buckets {
				b = 0
			}
		}
	}
	return dst
}

// keepScratch keeps a message-sized scratch buffer for the next hash, but not a huge one.
func (r *Replica) keepScratch(b []byte) {
	if cap(b) <= shrinkThreshold {
		r.scratch = b[:0]
	} else {
		r.scratch = nil
	}
}
