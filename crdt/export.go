package crdt

import (
	"cmp"
	"slices"
)

// Entry is one LWW entry as Range reports it.
type Entry struct {
	Entity    Entity
	Component ComponentID
	Timestamp Timestamp
	// Deleted marks a tombstone (a deleted component); Data is then nil.
	Deleted bool
	// Data aliases the replica's storage: valid until the replica is next modified.
	Data []byte
}

// AppendEntry is one value of an append set as RangeAppend reports it.
type AppendEntry struct {
	Entity    Entity
	Component ComponentID
	Timestamp Timestamp
	// Data aliases the replica's storage: valid until the replica is next modified.
	Data []byte
}

// sortedLWW returns the slot indexes of the LWW entries in ascending key order, that is by
// entity (the full 32-bit id) and then component. The order is cached until the key set changes.
func (r *Replica) sortedLWW() []int32 {
	if r.lwwOrderOK {
		return r.lwwOrder
	}
	// The keys are sorted with their slots beside them, by a radix sort over the bytes in
	// which they differ: a comparison sort through the slot indexes missed the cache on every
	// comparison, and the first Range after any key came or went (a host's snapshot for a
	// joining member, whose avatar it has just spawned) took milliseconds.
	ks := make([]keySlot, 0, r.lww.n)
	var or, and uint64 = 0, ^uint64(0)
	for i := range r.lww.slots {
		if s := &r.lww.slots[i]; s.ref != 0 {
			ks = append(ks, keySlot{s.key, int32(i)})
			or |= s.key
			and &= s.key
		}
	}
	radixSort(ks, or^and)
	order := r.lwwOrder[:0]
	for _, k := range ks {
		order = append(order, k.slot)
	}
	r.lwwOrder, r.lwwOrderOK = order, true
	return order
}

type keySlot struct {
	key  uint64
	slot int32
}

// radixSort sorts ks by key, least significant byte first, skipping the bytes in which no two
// keys differ (the set bits of differ).
func radixSort(ks []keySlot, differ uint64) {
	if len(ks) < 64 {
		slices.SortFunc(ks, func(a, b keySlot) int { return cmp.Compare(a.key, b.key) })
		return
	}
	tmp := make([]keySlot, len(ks))
	src, dst := ks, tmp
	for shift := uint(0); shift < 64; shift += 8 {
		if (differ>>shift)&0xff == 0 {
			continue
		}
		var count [257]int
		for _, k := range src {
			count[(k.key>>shift)&0xff+1]++
		}
		for i := 1; i < 257; i++ {
			count[i] += count[i-1]
		}
		for _, k := range src {
			b := (k.key >> shift) & 0xff
			dst[count[b]] = k
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ks[0] {
		copy(ks, src)
	}
}

// sortedApp returns the append keys in ascending order, cached until the key set changes.
func (r *Replica) sortedApp() []uint64 {
	if r.appOrderOK {
		return r.appOrder
	}
	order := r.appOrder[:0]
	for k := range r.app {
		order = append(order, k)
	}
	slices.Sort(order)
	r.appOrder, r.appOrderOK = order, true
	return order
}

// Range calls fn for every LWW entry in canonical order (entity, then component) until fn
// returns false. fn must not modify the replica.
func (r *Replica) Range(fn func(Entry) bool) {
	for _, i := range r.sortedLWW() {
		s := &r.lww.slots[i]
		e := Entry{Entity: keyEntity(s.key), Component: keyComponent(s.key), Timestamp: s.ts}
		if s.ref&refTomb != 0 {
			e.Deleted = true
		} else {
			e.Data = *r.lww.data(s)
		}
		if !fn(e) {
			return
		}
	}
}

// RangeDeleted calls fn for every entity number with a deleted version, in ascending number
// order, with the highest deleted version, until fn returns false.
func (r *Replica) RangeDeleted(fn func(number, version uint16) bool) {
	if r.nDeleted == 0 {
		return
	}
	for pi, p := range &r.del {
		if p == nil {
			continue
		}
		for j, st := range p {
			if st != 0 && !fn(uint16(pi<<8|j), uint16(st-1)) {
				return
			}
		}
	}
}

// RangeAppend calls fn for every append value: keys in canonical order (entity, then
// component), and within a key in ascending (timestamp, value) order, until fn returns false.
// fn must not modify the replica.
func (r *Replica) RangeAppend(fn func(AppendEntry) bool) {
	for _, k := range r.sortedApp() {
		for _, v := range r.app[k].vals {
			if !fn(AppendEntry{Entity: keyEntity(k), Component: keyComponent(k), Timestamp: v.ts, Data: v.data}) {
				return
			}
		}
	}
}

// stateWriter receives the canonical messages of a replica and appends those of its bucket.
type stateWriter struct {
	dst     []byte
	buckets uint32 // 0: every message
	bucket  uint32
}

func (w *stateWriter) emit(m *Message) {
	if w.buckets == 0 || uint32(m.Entity.Number())%w.buckets == w.bucket {
		w.dst = AppendMessage(w.dst, m)
	}
}

// walk emits the canonical message stream of the state: a DELETE_ENTITY for every deleted
// entity number (ascending number, highest deleted version), then a PUT_COMPONENT or
// DELETE_COMPONENT for every LWW entry (ascending entity, then component), then an APPEND_VALUE
// for every append value (ascending entity, then component, then (timestamp, value)).
func (r *Replica) walk(w *stateWriter) {
	var m Message
	r.RangeDeleted(func(number, version uint16) bool {
		m = Message{Type: DeleteEntity, Entity: NewEntity(number, version)}
		w.emit(&m)
		return true
	})
	for _, i := range r.sortedLWW() {
		s := &r.lww.slots[i]
		m = Message{Type: PutComponent, Entity: keyEntity(s.key), Component: keyComponent(s.key), Timestamp: s.ts, Data: *r.lww.data(s)}
		if s.ref&refTomb != 0 {
			m.Type, m.Data = DeleteComponent, nil
		}
		w.emit(&m)
	}
	for _, k := range r.sortedApp() {
		for _, v := range r.app[k].vals {
			m = Message{Type: AppendValue, Entity: keyEntity(k), Component: keyComponent(k), Timestamp: v.ts, Data: v.data}
			w.emit(&m)
		}
	}
}

// AppendState appends the whole state as a canonical @dcl/ecs message stream (the EngineApi
// crdtGetState): DELETE_ENTITY for each deleted number with its highest deleted version, then
// PUT_COMPONENT / DELETE_COMPONENT for every LWW entry, then APPEND_VALUE for every append value,
// each group in ascending order (see doc.go). Two replicas with equal state write equal bytes.
func (r *Replica) AppendState(dst []byte) []byte {
	w := stateWriter{dst: dst}
	r.walk(&w)
	return w.dst
}

// AppendBucketState appends the canonical messages of one bucket: those whose entity number
// satisfies number % buckets == bucket, in AppendState order. buckets below 1 count as 1; a
// bucket outside [0, buckets) appends nothing.
func (r *Replica) AppendBucketState(dst []byte, bucket, buckets int) []byte {
	if buckets < 1 {
		buckets = 1
	}
	if bucket < 0 || bucket >= buckets {
		return dst
	}
	w := stateWriter{dst: dst, buckets: uint32(buckets), bucket: uint32(bucket)}
	r.walk(&w)
	return w.dst
}

// MergeStream merges every message of a concatenated stream (an AppendState export, a scene
// state file, a batch from a peer) and returns how many were Applied. Messages of unknown types
// are skipped. A malformed message stops the merge with a *StreamError at its offset; the
// messages before it stay merged (any subset of messages is a valid CRDT state).
func (r *Replica) MergeStream(b []byte) (applied int, err error) {
	limit := r.maxMsg
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	var m Message
	for off := 0; off < len(b); {
		// Fast path for the common PUT_COMPONENT: the checks are those consumeMessage makes,
		// and anything else (including every error) takes the general path below.
		if rest := b[off:]; len(rest) >= putHeader {
			length := le.Uint32(rest)
			if MessageType(le.Uint32(rest[4:])) == PutComponent && length >= putHeader &&
				uint64(length) <= uint64(limit) && uint64(length) <= uint64(len(rest)) &&
				le.Uint32(rest[20:]) == length-putHeader {
				ts := Timestamp(le.Uint32(rest[16:]))
				if ts > r.clock {
					r.clock = ts
				}
				if r.mergeLWW(Entity(le.Uint32(rest[8:])), ComponentID(le.Uint32(rest[12:])), ts, rest[putHeader:length], slotValue) == Applied {
					applied++
				}
				off += int(length)
				continue
			}
		}
		n, err := consumeMessage(b[off:], &m, limit)
		if err != nil {
			return applied, &StreamError{Offset: off, Err: err}
		}
		off += n
		if r.Merge(&m) == Applied {
			applied++
		}
	}
	return applied, nil
}

// AppendCorrection appends the corrective message for m, the reply ADR-117 prescribes when a
// merge did not accept m: after Outdated, the local entry for m's key as a PUT_COMPONENT or
// DELETE_COMPONENT with its timestamp; after Ignored, the DELETE_ENTITY of the highest deleted
// version of m's entity number. Corrections always use the local (non-_NETWORK) types. When there
// is nothing to correct (no entry for the key, an append value, or m is exactly the recorded
// deletion) dst is returned unchanged. After Applied it appends the local entry, which equals m.
func (r *Replica) AppendCorrection(dst []byte, m *Message) []byte {
	if !m.Type.Known() {
		return dst
	}
	if st := r.deletedStored(m.Entity.Number()); st > uint32(m.Entity.Version()) {
		d := NewEntity(m.Entity.Number(), uint16(st-1))
		if (m.Type == DeleteEntity || m.Type == DeleteEntityNetwork) && d == m.Entity {
			return dst
		}
		c := Message{Type: DeleteEntity, Entity: d}
		return AppendMessage(dst, &c)
	}
	switch m.Type {
	case PutComponent, PutComponentNetwork, DeleteComponent, DeleteComponentNetwork:
		s := r.lww.find(lwwKey(m.Entity, m.Component))
		if s == nil {
			return dst
		}
		c := Message{Type: PutComponent, Entity: m.Entity, Component: m.Component, Timestamp: s.ts, Data: *r.lww.data(s)}
		if s.ref&refTomb != 0 {
			c.Type, c.Data = DeleteComponent, nil
		}
		return AppendMessage(dst, &c)
	}
	return dst
}

// LiveVersion returns the version of entity number n that holds entries, if any: at most one
// version of a number holds entries at a time.
func (r *Replica) LiveVersion(n uint16) (version uint16, ok bool) {
	if rec := r.nums.get(n); rec != nil {
		return rec.version, true
	}
	return 0, false
}

// RangeEntity calls fn for every LWW entry of entity e, in ascending component order, until fn
// returns false, and reports whether it ran to the end. Together with LiveVersion it lets a
// caller read part of the state (a few digest buckets) without walking the whole of it. fn must
// not modify the replica.
func (r *Replica) RangeEntity(e Entity, fn func(Entry) bool) bool {
	rec := r.nums.get(e.Number())
	if rec == nil || rec.version != e.Version() {
		return true
	}
	for _, c := range rec.lww {
		s := r.lww.find(lwwKey(e, c))
		en := Entry{Entity: e, Component: c, Timestamp: s.ts}
		if s.ref&refTomb != 0 {
			en.Deleted = true
		} else {
			en.Data = *r.lww.data(s)
		}
		if !fn(en) {
			return false
		}
	}
	return true
}

// RangeEntityAppend calls fn for every append value of entity e: components in ascending order,
// values within one in ascending (timestamp, value) order, until fn returns false, and reports
// whether it ran to the end. fn must not modify the replica.
func (r *Replica) RangeEntityAppend(e Entity, fn func(AppendEntry) bool) bool {
	rec := r.nums.get(e.Number())
	if rec == nil || rec.version != e.Version() {
		return true
	}
	for _, c := range rec.app {
		for _, v := range r.app[lwwKey(e, c)].vals {
			if !fn(AppendEntry{Entity: e, Component: c, Timestamp: v.ts, Data: v.data}) {
				return false
			}
		}
	}
	return true
}
