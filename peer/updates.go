package peer

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/concordrtc/concord/crdt"
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
}

// updater is a role's scratch for sending updates. items holds the updates the last send
// covered, until the next one.
type updater struct {
	items []updItem
	refs  [][]byte // property values, aliasing the replica for the duration of one send
	dgram []byte
	vals  []byte
	// The two encodings of updates (Config.TRNPUpdates chooses), kept here so that a send
	// allocates neither.
	packed netmsg.PackedUpdatesWriter
	plain  netmsg.EntityUpdatesWriter
}

// updatesWriter is netmsg's PackedUpdatesWriter or EntityUpdatesWriter.
type updatesWriter interface {
	Reset(dst []byte, time uint64, limit int) bool
	Add(u *netmsg.Update) bool
	Bytes() []byte
	Count() int
}

// send turns dirty (entity → property mask) into ≤ MaxDatagram datagrams, one PackedUpdates (or
// with Config.TRNPUpdates, one EntityUpdates) per timestamp (a relayed value keeps its author's stamp), and clears what it sent. Each property
// is read from the replica once. At most MaxDatagramsPerFlush datagrams go out; the rest stays
// dirty. A lost datagram is healed by the digest exchange (anti-entropy). When rec is not nil,
// every datagram sent is appended to *rec as a u16 length and its bytes.
func (u *updater) send(b roleBase, r *remote, dirty map[Entity]uint32, rec *[]byte) {
	if len(dirty) == 0 || !r.ready {
		return
	}
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
			it := updItem{ts: t, e: e, ref: len(refs)}
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
	slices.SortFunc(items, func(a, b updItem) int {
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		return cmp.Compare(a.e, b.e)
	})
	u.items, u.refs = items, refs
	defer clear(u.refs) // do not keep the replica's values reachable

	var wr updatesWriter = &u.packed
	if b.cfg.TRNPUpdates {
		wr = &u.plain
	}
	dgram := u.dgram[:0]
	open := false
	var cur crdt.Timestamp
	sent := 0
	for _, it := range items {
		in := w.ents[it.e]
		width, _ := netmsg.MaskWidth(len(in.schema.Properties))
		vals := u.vals[:0]
		k := it.ref
		for m := it.mask; m != 0; m &= m - 1 {
			vals = in.schema.AppendValue(vals, bits.TrailingZeros32(m), refs[k])
			k++
		}
		u.vals = vals
		up := netmsg.Update{NetworkID: uint64(it.e), Width: width, Mask: it.mask, Data: vals}
		if netmsg.SizeUpdate(&up)+netmsg.MaxDatagram/64 > netmsg.MaxDatagram {
			b.log.Warn().Uint64("entity", uint64(it.e)).Msg("update larger than a datagram; dropped")
			dirty[it.e] &^= it.mask
			continue
		}
		if !open || it.ts != cur {
			buf := wr.Bytes()
			if !open {
				buf = dgram[:0] // reuse the kept buffer rather than growing a new one every flush
			}
			if !wr.Reset(buf, uint64(it.ts), netmsg.MaxDatagram) {
				if sent++; !sendDatagram(b, r, wr.Bytes(), rec) || sent >= b.cfg.MaxDatagramsPerFlush {
					return
				}
				wr.Reset(dgram[:0], uint64(it.ts), netmsg.MaxDatagram)
			}
			open, cur = true, it.ts
		}
		if !wr.Add(&up) {
			if sent++; !sendDatagram(b, r, wr.Bytes(), rec) || sent >= b.cfg.MaxDatagramsPerFlush {
				return
			}
			wr.Reset(dgram[:0], uint64(it.ts), netmsg.MaxDatagram)
			wr.Add(&up)
		}
		if dirty[it.e] &^= it.mask; dirty[it.e] == 0 {
			delete(dirty, it.e)
		}
	}
	if open && wr.Count() > 0 {
		sendDatagram(b, r, wr.Bytes(), rec)
	}
	u.dgram = wr.Bytes()[:0]
}

// sendDatagram sends b unreliably to r and, when rec is not nil and the send worked, appends it
// to *rec as a u16 length and the bytes. False means the link failed (and is dropped).
func sendDatagram(b roleBase, r *remote, dgram []byte, rec *[]byte) bool {
	b.env.send(r, link.Unreliable, dgram)
	if r.closing {
		return false
	}
	if rec != nil {
		*rec = binary.LittleEndian.AppendUint16(*rec, uint16(len(dgram)))
		*rec = append(*rec, dgram...)
	}
	return true
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
