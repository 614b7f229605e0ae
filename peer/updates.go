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

// updItem is one Update to send: the properties of entity e whose current timestamp is ts.
type updItem struct {
	ts   crdt.Timestamp
	e    Entity
	mask uint32
}

// flushUpdates sends every remote its dirty properties as EntityUpdates datagrams.
//
// On the host, members usually hold the same dirty set (each of them hears every host write), so
// the host builds the datagrams once, for the first member, and sends the same bytes to every
// other member whose dirty set is equal, instead of re-reading, sorting and encoding the same
// updates once per member. Members whose set differs (the author of a relayed write, a member
// that joined mid-flush, leftovers past MaxDatagramsPerFlush) go through sendUpdates on their own.
func (p *Peer) flushUpdates() {
	if p.host != nil {
		p.flushHostUpdates()
		return
	}
	if p.member != nil && p.member.synced && p.member.hostLink != nil {
		p.sendUpdates(p.member.hostLink, p.member.dirty, nil)
	}
}

func (p *Peer) flushHostUpdates() {
	var lead *remote
	for _, r := range p.remotes {
		if r.snapshotSent && r.ready && len(r.dirty) > 0 {
			lead = r
			break
		}
	}
	if lead == nil {
		return
	}
	// Record the lead's datagrams as (length u16, bytes) frames in p.out, which is free scratch
	// outside flushCommands and snapshot sends.
	rec := p.out[:0]
	p.sendUpdates(lead, lead.dirty, &rec)
	p.out = rec
	if p.remotes[lead.idx] == lead && len(lead.dirty) == 0 {
		// Everything went out: p.items lists exactly what the datagrams carry.
		for _, r := range p.remotes {
			if r != lead && r.snapshotSent && r.ready && p.sameDirty(r.dirty) {
				p.replay(r, rec)
			}
		}
	}
	for _, r := range p.remotes {
		if r.snapshotSent {
			p.sendUpdates(r, r.dirty, nil)
		}
	}
}

// sameDirty reports whether dirty holds exactly the (entity, property) pairs of p.items, the
// updates the last sendUpdates sent.
func (p *Peer) sameDirty(dirty map[Entity]uint32) bool {
	bitsInItems := 0
	for _, it := range p.items {
		if dirty[it.e]&it.mask != it.mask {
			return false
		}
		bitsInItems += bits.OnesCount32(it.mask)
	}
	bitsInDirty := 0
	for _, mask := range dirty {
		bitsInDirty += bits.OnesCount32(mask)
	}
	return bitsInDirty == bitsInItems
}

// replay sends r the recorded datagrams and clears its dirty set. A failed send has dropped r.
func (p *Peer) replay(r *remote, rec []byte) {
	for len(rec) >= 2 {
		n := int(binary.LittleEndian.Uint16(rec))
		if !p.sendDatagram(r, rec[2:2+n], nil) {
			return
		}
		rec = rec[2+n:]
	}
	clear(r.dirty)
}

// sendUpdates turns dirty (entity → property mask) into ≤ 1200-byte datagrams, one EntityUpdates
// per timestamp (a relayed value keeps its author's stamp), and clears what it sent. At most
// MaxDatagramsPerFlush datagrams go out; the rest stays dirty. A lost datagram is healed by the
// digest exchange (anti-entropy). When rec is not nil, every datagram sent is appended to *rec as
// a u16 length and its bytes; p.items keeps the updates sent until the next call.
func (p *Peer) sendUpdates(r *remote, dirty map[Entity]uint32, rec *[]byte) {
	if len(dirty) == 0 || !r.ready {
		return
	}
	w := p.w
	items := p.items[:0]
	for e, mask := range dirty {
		in := w.ents[e]
		if in == nil {
			delete(dirty, e)
			continue
		}
		start := len(items)
		for m := mask; m != 0; m &= m - 1 {
			i := trailingZeros(m)
			_, ts, ok, deleted := w.r.Get(e, in.schema.Properties[i].Component)
			if !ok || deleted {
				continue
			}
			j := start
			for ; j < len(items) && items[j].ts != ts; j++ {
			}
			if j == len(items) {
				items = append(items, updItem{ts: ts, e: e})
			}
			items[j].mask |= 1 << i
		}
		if len(items) == start {
			delete(dirty, e)
		}
	}
	slices.SortFunc(items, func(a, b updItem) int {
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		return cmp.Compare(a.e, b.e)
	})
	p.items = items

	var wr netmsg.EntityUpdatesWriter
	dgram := p.dgram[:0]
	open := false
	var cur crdt.Timestamp
	sent := 0
	for _, it := range items {
		in := w.ents[it.e]
		width, _ := netmsg.MaskWidth(len(in.schema.Properties))
		vals := p.vals[:0]
		for m := it.mask; m != 0; m &= m - 1 {
			i := trailingZeros(m)
			v, _, _, _ := w.r.Get(it.e, in.schema.Properties[i].Component)
			vals = in.schema.AppendValue(vals, i, v)
		}
		p.vals = vals
		u := netmsg.Update{NetworkID: uint64(it.e), Width: width, Mask: it.mask, Data: vals}
		if netmsg.SizeUpdate(&u)+netmsg.MaxDatagram/64 > netmsg.MaxDatagram {
			p.log.Warn().Uint64("entity", uint64(it.e)).Msg("update larger than a datagram; dropped")
			dirty[it.e] &^= it.mask
			continue
		}
		if !open || it.ts != cur {
			buf := wr.Bytes()
			if !open {
				buf = dgram[:0] // reuse the kept buffer rather than growing a new one every flush
			}
			if !wr.Reset(buf, uint64(it.ts), netmsg.MaxDatagram) {
				if sent++; !p.sendDatagram(r, wr.Bytes(), rec) || sent >= p.cfg.MaxDatagramsPerFlush {
					return
				}
				wr.Reset(dgram[:0], uint64(it.ts), netmsg.MaxDatagram)
			}
			open, cur = true, it.ts
		}
		if !wr.Add(&u) {
			if sent++; !p.sendDatagram(r, wr.Bytes(), rec) || sent >= p.cfg.MaxDatagramsPerFlush {
				return
			}
			wr.Reset(dgram[:0], uint64(it.ts), netmsg.MaxDatagram)
			wr.Add(&u)
		}
		if dirty[it.e] &^= it.mask; dirty[it.e] == 0 {
			delete(dirty, it.e)
		}
	}
	if open && wr.Count() > 0 {
		p.sendDatagram(r, wr.Bytes(), rec)
	}
	p.dgram = wr.Bytes()[:0]
}

// sendDatagram sends b unreliably to r and, when rec is not nil and the send worked, appends it
// to *rec as a u16 length and the bytes.
func (p *Peer) sendDatagram(r *remote, b []byte, rec *[]byte) bool {
	if !p.sendOne(r, link.Unreliable, b) {
		return false
	}
	if rec != nil {
		*rec = binary.LittleEndian.AppendUint16(*rec, uint16(len(b)))
		*rec = append(*rec, b...)
	}
	return true
}

// applyUpdates merges an EntityUpdates message from origin with merge; admit decides, per entity,
// whether origin may write it (the host's authority check; members admit everything from the host).
func (p *Peer) applyUpdates(eu *netmsg.EntityUpdates, origin PeerIndex, admit func(e Entity) bool, merge func(m *crdt.Message, origin PeerIndex)) {
	if eu.Time > math.MaxUint32 {
		p.count.dropped.Add(1)
		return
	}
	ts := crdt.Timestamp(eu.Time)
	// One Message for every value: it escapes (the world hands it to its sink), so declaring it
	// per value would allocate once per merged property.
	var m crdt.Message
	for k := range eu.Updates {
		u := &eu.Updates[k]
		if u.NetworkID>>32 != 0 {
			p.count.dropped.Add(1)
			continue
		}
		e := Entity(u.NetworkID)
		in := p.w.ents[e]
		if in == nil || u.CheckMask(len(in.schema.Properties)) != nil {
			p.count.dropped.Add(1) // not spawned here yet (the unreliable channel overtook it), or bad
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
			p.count.dropped.Add(1)
		}
	}
}

func trailingZeros(m uint32) int { return bits.TrailingZeros32(m) }
