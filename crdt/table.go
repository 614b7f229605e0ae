package crdt

import (
	"math/bits"
	"math/rand/v2"
	"slices"
)

// States of an LWW entry, as they are passed around (a slot encodes them in ref).
const (
	slotValue uint8 = iota + 1 // a component value (possibly empty bytes)
	slotTomb                   // a deleted component (tombstone)
)

const (
	refTomb  = 1 << 31     // in lwwSlot.ref: the entry is a tombstone
	refIndex = refTomb - 1 // in lwwSlot.ref: index+1 into lwwTable.vals
)

// lwwSlot is one LWW entry in the hash table: 16 bytes, so that the table of a large room stays
// in the CPU's L2 cache. The value bytes live in lwwTable.vals.
type lwwSlot struct {
	key uint64 // uint64(entity)<<32 | component
	ts  Timestamp
	ref uint32 // 0: empty slot; else refTomb flag | (index into vals)+1
}

// lwwTable is an open-addressing hash table with linear probing and backward-shift deletion,
// keyed by uint64(entity)<<32|component. The hash is seeded per table, so message keys chosen by
// a remote peer cannot be aimed at one probe chain without knowing the seed (a hardening, not a
// cryptographic guarantee). The table never exposes its order.
//
// Value buffers are kept in vals, addressed by the slots; a removed entry's buffer goes to a
// free list and is reused by the next new entry, so spawning and despawning entities does not
// churn allocations.
type lwwTable struct {
	slots []lwwSlot
	mask  uint64
	n     int
	seed  uint64
	vals  [][]byte
	free  []uint32 // indexes of unused vals
	// bytes is the size of the entries as ADR-117 messages (PUT_COMPONENT or DELETE_COMPONENT
	// each), kept by insert, set and remove: Replica.Size.
	bytes int
	// slab is room not yet handed out for small values: the first value of at most slabValue
	// bytes stored in a vals entry takes its buffer from here (capped at its length, so it never
	// grows into its neighbour's) instead of an allocation of its own. A late joiner merges
	// 40,000 values at once, and a heap object each was a quarter of its merge. Only an entry
	// without a buffer takes from a slab (removal keeps the buffer for the entry's next key), so
	// what slabs ever hold is bounded by the most values the table held at once.
	slab []byte
}

// slabValue is the largest value a slab holds; slabSize the size of one slab (what one value
// that outlives the others can keep alive).
const (
	slabValue = 64
	slabSize  = 4 << 10
)

// size is the encoded size of an occupied slot's entry.
func (t *lwwTable) size(s *lwwSlot) int {
	if s.ref&refTomb != 0 {
		return deleteCompSize
	}
	return putHeader + len(t.vals[s.ref&refIndex-1])
}

func (t *lwwTable) home(key uint64) uint64 {
	hi, lo := bits.Mul64(key^t.seed, 0x9e3779b97f4a7c15)
	return (hi ^ lo) & t.mask
}

// find returns the slot holding key, or nil.
func (t *lwwTable) find(key uint64) *lwwSlot {
	if t.n == 0 {
		return nil
	}
	slots := t.slots
	for i := t.home(key); ; i++ {
		s := &slots[i&t.mask]
		if s.ref == 0 {
			return nil
		}
		if s.key == key {
			return s
		}
	}
}

// state returns slotValue or slotTomb for an occupied slot.
func (s *lwwSlot) state() uint8 {
	if s.ref&refTomb != 0 {
		return slotTomb
	}
	return slotValue
}

// set stores a value (copied into the slot's buffer, reused) or a tombstone in an occupied slot.
func (t *lwwTable) set(s *lwwSlot, data []byte, state uint8) {
	t.bytes -= t.size(s)
	buf := t.data(s)
	if state == slotTomb {
		s.ref |= refTomb
		*buf = (*buf)[:0]
		t.bytes += deleteCompSize
		return
	}
	s.ref &^= refTomb
	if cap(*buf) > shrinkThreshold && len(data) < cap(*buf)/4 {
		*buf = nil // do not let one huge value pin memory for the life of the key
	}
	if n := len(data); cap(*buf) == 0 && n > 0 && n <= slabValue {
		if len(t.slab) < n {
			t.slab = make([]byte, slabSize)
		}
		*buf, t.slab = t.slab[:0:n], t.slab[n:]
	}
	*buf = append((*buf)[:0], data...)
	t.bytes += putHeader + len(data)
}

// data returns the value buffer of an occupied slot (a tombstone's is empty).
func (t *lwwTable) data(s *lwwSlot) *[]byte { return &t.vals[s.ref&refIndex-1] }

// insert adds key, which must not be present, as an empty value at timestamp 0 and returns its
// slot. Pointers to other slots are invalid afterwards.
func (t *lwwTable) insert(key uint64) *lwwSlot {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	i := t.home(key)
	for t.slots[i].ref != 0 {
		i = (i + 1) & t.mask
	}
	var v uint32
	if n := len(t.free); n > 0 {
		v = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		v = uint32(len(t.vals))
		t.vals = append(t.vals, nil)
	}
	t.slots[i] = lwwSlot{key: key, ref: v + 1}
	t.n++
	t.bytes += putHeader
	return &t.slots[i]
}

func (t *lwwTable) grow() {
	size := 2 * len(t.slots)
	if size < 64 {
		size = 64
	}
	old := t.slots
	if len(old) == 0 && t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	t.slots = make([]lwwSlot, size)
	t.mask = uint64(size - 1)
	for i := range old {
		if old[i].ref == 0 {
			continue
		}
		j := t.home(old[i].key)
		for t.slots[j].ref != 0 {
			j = (j + 1) & t.mask
		}
		t.slots[j] = old[i]
	}
}

// remove deletes key if present; its value buffer is kept for reuse. Slots move (backward
// shift), so slot pointers and indexes are invalid afterwards.
func (t *lwwTable) remove(key uint64) {
	if t.n == 0 {
		return
	}
	i := t.home(key)
	for {
		s := &t.slots[i]
		if s.ref == 0 {
			return
		}
		if s.key == key {
			break
		}
		i = (i + 1) & t.mask
	}
	t.bytes -= t.size(&t.slots[i])
	v := t.slots[i].ref&refIndex - 1
	t.vals[v] = t.vals[v][:0]
	if cap(t.vals[v]) > shrinkThreshold {
		t.vals[v] = nil
	}
	t.free = append(t.free, v)
	// Backward shift: pull later members of the probe run into the hole when their home
	// position does not lie cyclically in (hole, j].
	hole := i
	j := i
	for {
		j = (j + 1) & t.mask
		if t.slots[j].ref == 0 {
			break
		}
		h := t.home(t.slots[j].key)
		if (j-h)&t.mask < (j-hole)&t.mask {
			continue // h lies in (hole, j]: the entry stays reachable where it is
		}
		t.slots[hole] = t.slots[j]
		hole = j
	}
	t.slots[hole] = lwwSlot{}
	t.n--
}

// reserve makes room for n more keys without growing on the way.
func (t *lwwTable) reserve(n int) {
	want := t.n + n
	for want*4 > len(t.slots)*3 {
		t.grow()
	}
	if need := want - len(t.free); need > cap(t.vals) {
		t.vals = slices.Grow(t.vals, need-len(t.vals))
	}
}
