package peer

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// EntityUpdates on the wire: a role's dirty set out as datagrams, and datagrams in as merges.

// updItem is one Update to send: the properties of entity e whose current timestamp is ts, and
// where their values sit in updater.refs (in ascending property order).
type updItem struct {
	ts   crdt.Timestamp
	e    Entity
	mask uint32
	ref  int
	s    *schema.Schema // the entity's
}

// updater is a role's scratch for sending updates. items holds the updates the last send
// covered, until the next one.
type updater struct {
	items  []updItem
	sorted []updItem // sortItems' scratch
	refs   [][]byte  // property values, aliasing the replica for the duration of one send
	dgram  []byte
	vals   []byte
	// The encodings of updates (RunUpdates, or EntityUpdates with Config.TRNPUpdates; DeltaUpdates
	// for a member that takes them), kept here so that a send allocates none.
	runs  netmsg.RunUpdatesWriter
	plain netmsg.EntityUpdatesWriter
	delta deltaWriter
	// gens and hes are the items' values' generations in the host's shared history and the
	// items' histories (deltaHist.keep), valid while kept is set (one collect).
	gens []uint32
	hes  []*histEnt
	kept bool
	// prefix is what the first datagram of the next send starts with (a member's Ack, riding on
	// its updates); emptied once sent.
	prefix []byte
}

// updatesWriter is netmsg's RunUpdatesWriter or EntityUpdatesWriter, or a deltaWriter.
type updatesWriter interface {
	Reset(dst []byte, time uint64, limit int) bool
	Add(u *netmsg.Update) bool
	Bytes() []byte
	Count() int
}

// deltaWriter is a DeltaUpdatesWriter whose messages carry seq.
type deltaWriter struct {
	netmsg.DeltaUpdatesWriter
	seq uint64
}

func (d *deltaWriter) Reset(dst []byte, time uint64, limit int) bool {
	return d.DeltaUpdatesWriter.Reset(dst, d.seq, time, limit)
}

// send turns dirty (entity → property mask) into ≤ MaxDatagram datagrams, one RunUpdates (or
// with Config.TRNPUpdates, one EntityUpdates; with dt, one DeltaUpdates) per timestamp (a relayed
// value keeps its author's stamp), and clears what it sent. Each property is read from the
// replica once. At most MaxDatagramsPerFlush datagrams go out; the rest stays dirty. A lost
// datagram is healed by the digest exchange (anti-entropy). When rec is not nil, every datagram
// sent is appended to *rec as a u16 length and its bytes.
func (u *updater) send(b roleBase, r *remote, dirty map[Entity]uint32, rec *[]byte, dt *deltaTx) {
	if len(dirty) == 0 || !r.ready {
		return
	}
	u.collect(b, dirty)
	n := u.emit(b, r, rec, dt)
	for _, it := range u.items[:n] {
		if dirty[it.e] &^= it.mask; dirty[it.e] == 0 {
			delete(dirty, it.e)
		}
	}
	u.release()
}

// release lets go of the replica's values.
func (u *updater) release() {
	clear(u.refs)
	clear(u.hes)
	u.kept = false
}

// collect reads dirty's values from the replica into u.items and u.refs, sorted by timestamp
// then entity, and removes from dirty what no longer exists.
func (u *updater) collect(b roleBase, dirty map[Entity]uint32) {
	w := b.w
	items, refs := u.items[:0], u.refs[:0]
	var ts [32]crdt.Timestamp
	var val [32][]byte
	for e, mask := range dirty {
		in := w.ents[e]
		if in == nil {
			delete(dirty, e)
			continue
		}
		var have uint32
		for m := mask; m != 0; m &= m - 1 {
			i := bits.TrailingZeros32(m)
			data, t, ok, deleted := w.r.Get(e, in.schema.Properties[i].Component)
			if ok && !deleted {
				have |= 1 << i
				ts[i], val[i] = t, data
			}
		}
		if have == 0 {
			delete(dirty, e)
			continue
		}
		// One item per distinct timestamp, its values in property order.
		for left := have; left != 0; {
			t := ts[bits.TrailingZeros32(left)]
			it := updItem{ts: t, e: e, ref: len(refs), s: in.schema}
			for m := left; m != 0; m &= m - 1 {
				if i := bits.TrailingZeros32(m); ts[i] == t {
					it.mask |= 1 << i
					refs = append(refs, val[i])
				}
			}
			left &^= it.mask
			items = append(items, it)
		}
	}
	u.sorted = sortItems(items, u.sorted)
	u.items, u.refs = items, refs
	u.kept = false
}

// itemKey orders items by timestamp, then entity.
func itemKey(it *updItem) uint64 { return uint64(it.ts)<<32 | uint64(it.e) }

// sortItems sorts items by itemKey and returns scratch, grown, for the next call. A flush
// collects its items from a map, in random order, and a comparison sort of 1,000 of them was
// 5% of a host's CPU; a least-significant-digit radix sort on the key's bytes, skipping the
// bytes all items share (typically the timestamp: a tick stamps all its writes alike), takes
// two or three linear passes.
func sortItems(items, scratch []updItem) []updItem {
	n := len(items)
	if n < 64 {
		slices.SortFunc(items, func(a, b updItem) int { return cmp.Compare(itemKey(&a), itemKey(&b)) })
		return scratch
	}
	scratch = slices.Grow(scratch[:0], n)[:n]
	src, dst := items, scratch
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for i := range src {
			count[byte(itemKey(&src[i])>>shift)]++
		}
		if count[byte(itemKey(&src[0])>>shift)] == n {
			continue // every item has this byte
		}
		pos := 0
		for b, c := range count {
			count[b] = pos
			pos += c
		}
		for i := range src {
			b := byte(itemKey(&src[i]) >> shift)
			dst[count[b]] = src[i]
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &items[0] {
		copy(items, src)
	}
	clear(scratch) // holds schema pointers
	return scratch
}

// emit sends u.items to r as datagrams and returns how many of them (a prefix of u.items) were
// sent or dropped as too large; the rest did not go (MaxDatagramsPerFlush, or the link failed).
// With dt, the datagrams are DeltaUpdates numbered for r's member.
func (u *updater) emit(b roleBase, r *remote, rec *[]byte, dt *deltaTx) int {
	var wr updatesWriter = &u.runs
	switch {
	case dt != nil:
		wr = &u.delta
	case b.cfg.TRNPUpdates:
		wr = &u.plain
	}
	if dt != nil && !u.kept {
		u.gens, u.hes = dt.hist.keep(u.items, u.refs, u.gens, u.hes)
		u.kept = true
	}
	dgram := u.dgram[:0]
	var up netmsg.Update // one for the whole send: Add takes its address
	open := false
	var cur crdt.Timestamp
	sent, done := 0, 0 // done: items in datagrams sent, or dropped
	// fresh starts a new datagram (with the prefix, if not sent yet) holding a message stamped ts.
	fresh := func(ts crdt.Timestamp) {
		if dt != nil {
			u.delta.seq = dt.seq()
		}
		wr.Reset(append(dgram[:0], u.prefix...), uint64(ts), netmsg.MaxDatagram)
	}
	// flush sends the open datagram, which holds the items before idx; false: stop (the limit,
	// or the link failed).
	flush := func(idx int) bool {
		u.prefix = u.prefix[:0]
		sent++
		if !sendDatagram(b, r, wr.Bytes(), rec) {
			return false
		}
		done = idx
		return sent < b.cfg.MaxDatagramsPerFlush
	}
	for idx := range u.items {
		it := &u.items[idx]
		s := it.s
		width, _ := netmsg.MaskWidth(len(s.Properties))
		vals := u.refs[it.ref : it.ref+bits.OnesCount32(it.mask)]
		var te *txEnt
		if dt != nil {
			te = dt.ent(it.e, len(s.Properties))
		}
		up = netmsg.Update{NetworkID: uint64(it.e), Width: width, Mask: it.mask}
		if !open && dt != nil {
			u.delta.seq = dt.next // the seq fresh will take
		}
		up.Data = u.encode(s, idx, vals, dt, te)
		if netmsg.SizeUpdate(&up)+netmsg.MaxDatagram/64 > netmsg.MaxDatagram {
			b.log.Warn().Uint64("entity", uint64(it.e)).Msg("update larger than a datagram; dropped")
			if !open {
				done = idx + 1
			}
			continue
		}
		if !open || it.ts != cur {
			if !open {
				fresh(it.ts)
			} else if !wr.Reset(wr.Bytes(), uint64(it.ts), netmsg.MaxDatagram) {
				if !flush(idx) {
					return done
				}
				fresh(it.ts)
				up.Data = u.encode(s, idx, vals, dt, te)
			}
			open, cur = true, it.ts
		}
		if !wr.Add(&up) {
			if !flush(idx) {
				return done
			}
			fresh(it.ts)
			up.Data = u.encode(s, idx, vals, dt, te)
			wr.Add(&up)
		}
		if dt != nil {
			dt.record(te, s, it.mask, u.gens[it.ref:it.ref+len(vals)], u.delta.seq, it.ts)
			b.count.deltas.Add(dt.deltas)
			b.count.wholes.Add(dt.wholes)
		}
	}
	if open && wr.Count() > 0 {
		u.prefix = u.prefix[:0]
		if !sendDatagram(b, r, wr.Bytes(), rec) {
			return done
		}
	}
	u.dgram = wr.Bytes()[:0]
	return len(u.items)
}

// encode writes the data of one update into u.vals and returns it: the values whole, or with
// dt, as DeltaUpdates data numbered u.delta.seq.
func (u *updater) encode(s *schema.Schema, idx int, vals [][]byte, dt *deltaTx, te *txEnt) []byte {
	v := u.vals[:0]
	it := &u.items[idx]
	if dt != nil {
		gens := u.gens[it.ref : it.ref+len(vals)]
		v = dt.appendDeltaData(v, s, it.mask, vals, gens, u.delta.seq, it.ts, te, u.hes[idx])
	} else {
		for k, m := 0, it.mask; m != 0; m &= m - 1 {
			v = s.AppendValue(v, bits.TrailingZeros32(m), vals[k])
			k++
		}
	}
	u.vals = v
	return v
}

// sendDatagram sends b unreliably to r; false means the link failed (and is dropped). When rec is
// not nil it only appends b to *rec as a u16 length and the bytes: outbox.flushShared sends
// that recording to every member, r included, by reference.
func sendDatagram(b roleBase, r *remote, dgram []byte, rec *[]byte) bool {
	if rec != nil {
		*rec = binary.LittleEndian.AppendUint16(*rec, uint16(len(dgram)))
		*rec = append(*rec, dgram...)
		return true
	}
	b.env.send(r, link.Unreliable, dgram)
	return !r.closing
}

// applyUpdates merges an EntityUpdates message from origin with merge; admit decides, per entity,
// whether origin may write it (the host's authority check; members admit everything from the host).
func applyUpdates(b roleBase, eu *netmsg.EntityUpdates, origin PeerIndex, admit func(e Entity) bool, merge func(m *crdt.Message, origin PeerIndex)) {
	if eu.Time > math.MaxUint32 {
		b.count.dropped.Add(1)
		return
	}
	ts := crdt.Timestamp(eu.Time)
	// One Message for every value: it escapes (the world hands it to its sink), so declaring it
	// per value would allocate once per merged property.
	var m crdt.Message
	for k := range eu.Updates {
		u := &eu.Updates[k]
		if u.NetworkID>>32 != 0 {
			b.count.dropped.Add(1)
			continue
		}
		e := Entity(u.NetworkID)
		in := b.w.ents[e]
		if in == nil || u.CheckMask(len(in.schema.Properties)) != nil {
			b.count.dropped.Add(1) // not spawned here yet (the unreliable channel overtook it), or bad
			continue
		}
		if !admit(e) {
			continue
		}
		s := in.schema
		err := s.ConsumeValues(u.Data, u.Mask, func(i int, v []byte) {
			m = crdt.Message{Type: crdt.PutComponent, Entity: e, Component: s.Properties[i].Component, Timestamp: ts, Data: v}
			merge(&m, origin)
		})
		if err != nil {
			b.count.dropped.Add(1)
		}
	}
}
