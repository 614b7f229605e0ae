package crdt

import "slices"

// Partial replicas. A member that replicates only part of a world (the host's interest
// management) holds every message of the entity numbers it is given and nothing of the others:
// Forget drops a number it no longer follows, and the digests and states it exchanges are those
// of the numbers it keeps.

// Forget drops everything the replica holds of entity number n — its live version's entries and
// append values and its deleted version — as if it had never heard of it. Unlike a deletion it
// leaves nothing behind to merge or to spread: a later message about n is merged as new. It
// reports whether anything was dropped.
func (r *Replica) Forget(n uint16) bool {
	dropped := false
	if p := r.del[n>>8]; p != nil && p[n&0xff] != 0 {
		p[n&0xff] = 0
		r.nDeleted--
		dropped = true
	}
	if rec := r.nums.get(n); rec != nil {
		r.dropLive(n, rec)
		dropped = true
	}
	if dropped {
		r.changed(n)
	}
	return dropped
}

// BucketDigestsOf is BucketDigests over the entity numbers keep accepts: the digests a replica
// holding only those numbers would compute (keep is called once per number that holds state; nil
// keeps every number).
func (r *Replica) BucketDigestsOf(buckets int, keep func(n uint16) bool, dst []uint64) []uint64 {
	return r.bucketDigests(buckets, keep, dst)
}

// Numbers appends, in ascending order, every entity number the replica holds anything of (a
// live version's entries or a deleted version).
func (r *Replica) Numbers(dst []uint16) []uint16 {
	start := len(dst)
	for pi, p := range &r.nums.pages {
		if p == nil {
			continue
		}
		for j, rec := range p {
			if rec != nil {
				dst = append(dst, uint16(pi<<8|j))
			}
		}
	}
	r.RangeDeleted(func(n, _ uint16) bool {
		if r.nums.get(n) == nil {
			dst = append(dst, n)
		}
		return true
	})
	slices.Sort(dst[start:])
	return dst
}
