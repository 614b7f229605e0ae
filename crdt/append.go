package crdt

import (
	"bytes"
	"slices"
)

// appendVal is one member of an append set: a distinct value with the highest timestamp it was
// appended with.
type appendVal struct {
	ts   Timestamp
	data []byte
}

// appendSet is a grow-only set of distinct values, truncated to the greatest N by (timestamp,
// value), kept in ascending order. The top N of a grow-only set (each value counted once, at its
// highest timestamp) is itself a join: every replica that saw the same values keeps the same N.
type appendSet struct {
	vals []appendVal
}

// lessVal orders append values: by timestamp, then as the LWW tie-break orders bytes (shorter
// first, then unsigned bytes).
func lessVal(ats Timestamp, a []byte, bts Timestamp, b []byte) bool {
	if ats != bts {
		return ats < bts
	}
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return bytes.Compare(a, b) < 0
}

// find returns the index of the value equal to data, or -1.
func (s *appendSet) find(data []byte) int {
	for i := range s.vals {
		if bytes.Equal(s.vals[i].data, data) {
			return i
		}
	}
	return -1
}

// insertAt returns where (ts, data) belongs in the ascending order.
func (s *appendSet) insertAt(ts Timestamp, data []byte) int {
	i, _ := slices.BinarySearchFunc(s.vals, appendVal{ts: ts, data: data}, func(v, t appendVal) int {
		if lessVal(v.ts, v.data, t.ts, t.data) {
			return -1
		}
		if lessVal(t.ts, t.data, v.ts, v.data) {
			return 1
		}
		return 0
	})
	return i
}

func (r *Replica) appendRetention() int {
	if r.retention <= 0 {
		return DefaultAppendRetention
	}
	return r.retention
}

// mergeAppend adds (ts, data) to the append set of (e, c). A value already present keeps the
// higher of its two timestamps. When the set is full, a value below its least member is dropped
// (NoChange) and otherwise the least member is evicted, its buffer reused.
func (r *Replica) mergeAppend(e Entity, c ComponentID, ts Timestamp, data []byte) Outcome {
	if !r.admit(e) {
		return Ignored
	}
	key := lwwKey(e, c)
	set := r.app[key]
	if set == nil {
		if r.app == nil {
			r.app = make(map[uint64]*appendSet)
		}
		set = &appendSet{}
		r.app[key] = set
		r.index(e, c, true)
	}
	var buf []byte
	if i := set.find(data); i >= 0 {
		if ts <= set.vals[i].ts {
			return NoChange
		}
		buf = set.vals[i].data
		set.vals = slices.Delete(set.vals, i, i+1)
	} else {
		if n := r.appendRetention(); len(set.vals) >= n {
			if lessVal(ts, data, set.vals[0].ts, set.vals[0].data) {
				return NoChange
			}
			buf = set.vals[0].data
			r.appBytes -= putHeader + len(buf)
			set.vals = slices.Delete(set.vals, 0, 1)
		}
		buf = append(buf[:0], data...)
		r.appBytes += putHeader + len(buf)
	}
	i := set.insertAt(ts, buf)
	set.vals = slices.Insert(set.vals, i, appendVal{ts: ts, data: buf})
	r.changed(e.Number())
	return Applied
}
