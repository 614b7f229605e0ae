package crdt

// WriteAt writes a component value (or, with deleted, a tombstone) locally at timestamp ts, for a
// writer that stamps a whole batch of writes (one simulation tick) with one timestamp. It differs
// from Merge in one way: an existing entry with the same timestamp is replaced, so that the
// writer's later write within the batch wins over its earlier one whatever the values. The caller
// must own ts: it took ts above its clock for this batch, and nothing else was merged at ts since,
// and it sends only the final value of each key of the batch. The clock observes ts.
// An entry with a higher timestamp is kept (Outdated), as Merge would.
func (r *Replica) WriteAt(e Entity, c ComponentID, ts Timestamp, data []byte, deleted bool) Outcome {
	if ts > r.clock {
		r.clock = ts
	}
	state := slotValue
	if deleted {
		state, data = slotTomb, nil
	}
	if !r.admit(e) {
		return Ignored
	}
	if s := r.lww.find(lwwKey(e, c)); s != nil && s.ts == ts {
		if compareStored(&r.lww, s, data, state) == 0 {
			return NoChange
		}
		r.lww.set(s, data, state)
		r.changed(e.Number())
		return Applied
	}
	return r.mergeLWW(e, c, ts, data, state)
}
