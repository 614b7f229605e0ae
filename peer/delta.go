package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// Deltas against acknowledged values (docs/protocol.md §2.10). A member that takes them says so
// with an Ack after its Hello. The host then numbers every datagram it sends that member
// (DeltaUpdates.Seq) and keeps, per (entity, delta-capable property), the seqs of the last
// deltaRingSize values it sent (their bytes once, in a history shared by every member); the
// member acknowledges the seqs it received (Ack, riding on its updates or alone at most every
// ackInterval) and keeps a ring of the values it received. A property's value goes as the
// difference from the newest value in the host's ring whose datagram the member acknowledged, or
// whole when there is none: a lost datagram is never acknowledged, so nothing builds on it. The
// host's ring keeps the deltaRingSize highest seqs it sent, the member's the deltaRxRingSize
// highest it received, so a value the member acknowledged stays in its ring as long as it stays
// in the host's, unless the datagram that builds on it arrives behind more than
// deltaRxRingSize − deltaRingSize later ones (then that value alone is dropped, counted, and the
// next one repairs it).

const (
	// deltaRingSize is how many values the host names per member × (entity, property): the
	// member acks every one or two network intervals, so the host builds on a value one to three
	// datagrams old.
	deltaRingSize = 4
	// deltaRxRingSize is how many values the member keeps per (entity, property): more than the
	// host names, so that a datagram reordered behind up to 4 later ones still finds its baseline.
	deltaRxRingSize = 8
	// deltaWindow is how many of its latest seqs the host remembers acks for.
	deltaWindow = 1024
	// ackInterval is how often at most a member sends an Ack on its own (not riding on its
	// updates): every other flush at the default 50 ms network interval. The host then builds on
	// values two or three flushes old, well within deltaRingSize and histSize.
	ackInterval = 100 * time.Millisecond
)

// errBadAck: a member acknowledged a datagram the host never sent it.
var errBadAck = errors.New("peer: ack of a datagram never sent")

// deltaRing is a member's last deltaRxRingSize values of one property with the seqs of the
// datagrams that carried them (seq 0: empty).
type deltaRing struct {
	seq [deltaRxRingSize]uint64
	n   [deltaRxRingSize]uint8
	val [deltaRxRingSize][schema.MaxDeltaValue]byte
}

// put records v as carried by seq, keeping the deltaRxRingSize highest seqs. A value larger than
// schema.MaxDeltaValue is not kept (it cannot be a baseline on either side).
func (r *deltaRing) put(seq uint64, v []byte) {
	if len(v) > schema.MaxDeltaValue {
		return
	}
	low := 0
	for i := range r.seq {
		if r.seq[i] == seq {
			low = i
			break
		}
		if r.seq[i] < r.seq[low] {
			low = i
		}
	}
	if r.seq[low] > seq {
		return // older than every value kept
	}
	r.seq[low], r.n[low] = seq, uint8(len(v))
	copy(r.val[low][:], v)
}

// get returns the value seq carried, if kept.
func (r *deltaRing) get(seq uint64) ([]byte, bool) {
	for i := range r.seq {
		if r.seq[i] == seq && seq != 0 {
			return r.val[i][:r.n[i]], true
		}
	}
	return nil, false
}

// deltaEnt is the rings of one entity's properties (only the delta-capable ones are used).
type deltaEnt struct {
	e     Entity
	rings []deltaRing
}

// deltaTab holds the rings of the entities a link carried, by entity number: at most one entry
// per number (65,536), and only for entities the member follows.
type deltaTab struct {
	ents []*deltaEnt
}

// get returns e's rings, made (or made anew for another version of the number) when create is
// set; nil otherwise.
func (t *deltaTab) get(e Entity, props int, create bool) *deltaEnt {
	n := int(e.Number())
	if n < len(t.ents) {
		if de := t.ents[n]; de != nil && de.e == e {
			return de
		}
	}
	if !create {
		return nil
	}
	if n >= len(t.ents) {
		t.ents = append(t.ents, make([]*deltaEnt, n+1-len(t.ents))...)
	}
	de := t.ents[n]
	if de == nil || len(de.rings) != props {
		de = &deltaEnt{rings: make([]deltaRing, props)}
		t.ents[n] = de
	} else {
		clear(de.rings)
	}
	de.e = e
	return de
}

// forget drops entity number n's rings.
func (t *deltaTab) forget(n uint16) {
	if int(n) < len(t.ents) {
		t.ents[n] = nil
	}
}

// deltaTx is the host's delta state for one member: its datagram numbers, the acks it sent, and
// which values it sent it (their bytes are in the host's deltaHist, shared by every member).
type deltaTx struct {
	next  uint64 // the next seq to send, from 1
	acked [deltaWindow / 64]uint64
	ents  []*txEnt // by entity number
	hist  *deltaHist
	// The values of the update appendDeltaData wrote last sent as differences, and whole.
	deltas, wholes uint64
}

func newDeltaTx(hist *deltaHist) *deltaTx { return &deltaTx{next: 1, hist: hist} }

// txSlot is one value sent: the seq of its datagram, its time and its generation in deltaHist.
type txSlot struct {
	seq uint64
	t   crdt.Timestamp
	gen uint32
}

// txRing is the host's mirror of the member's deltaRing of one property: the same seqs (the
// deltaRingSize highest of the values of at most schema.MaxDeltaValue bytes), one cache line.
type txRing [deltaRingSize]txSlot

func (r *txRing) put(sl txSlot) {
	low := 0
	for i := range r {
		if r[i].seq == sl.seq {
			low = i
			break
		}
		if r[i].seq < r[low].seq {
			low = i
		}
	}
	if r[low].seq <= sl.seq {
		r[low] = sl
	}
}

type txEnt struct {
	e     Entity
	rings []txRing
}

// ent returns e's rings, made (anew for another version of its number) when absent.
func (d *deltaTx) ent(e Entity, props int) *txEnt {
	return perNumber(&d.ents, e, func(te *txEnt) bool { return te.e == e && len(te.rings) == props },
		func() *txEnt { return &txEnt{e: e, rings: make([]txRing, props)} })
}

// perNumber returns the value kept in *s for e's entity number if ok accepts it, else a new one
// from fresh, kept in its place (*s grows to hold the number).
func perNumber[T any](s *[]*T, e Entity, ok func(*T) bool, fresh func() *T) *T {
	n := int(e.Number())
	if n < len(*s) {
		if v := (*s)[n]; v != nil && ok(v) {
			return v
		}
	} else {
		*s = append(*s, make([]*T, n+1-len(*s))...)
	}
	v := fresh()
	(*s)[n] = v
	return v
}

// forget drops entity number n's rings.
func (d *deltaTx) forget(n uint16) {
	if int(n) < len(d.ents) {
		d.ents[n] = nil
	}
}

// seq takes the next datagram number.
func (d *deltaTx) seq() uint64 {
	s := d.next
	d.next++
	d.acked[s/64%uint64(len(d.acked))] &^= 1 << (s % 64) // forget the ack of s−deltaWindow
	return s
}

// isAcked reports whether the member acknowledged seq s, within the window.
func (d *deltaTx) isAcked(s uint64) bool {
	if s == 0 || s >= d.next || d.next-s > deltaWindow {
		return false
	}
	return d.acked[s/64%uint64(len(d.acked))]&(1<<(s%64)) != 0
}

func (d *deltaTx) setAcked(s uint64) {
	if s != 0 && s < d.next && d.next-s <= deltaWindow {
		d.acked[s/64%uint64(len(d.acked))] |= 1 << (s % 64)
	}
}

// ack takes an Ack from the member. Acks of seqs older than the window are ignored; an ack of a
// seq never sent is errBadAck, and nothing of it is taken.
func (d *deltaTx) ack(a *netmsg.Ack) error {
	if a.Highest == 0 {
		if a.Received != 0 {
			return fmt.Errorf("%w: bits below seq 0", errBadAck)
		}
		return nil // the capability alone
	}
	if a.Highest >= d.next {
		return fmt.Errorf("%w: seq %d, the last sent is %d", errBadAck, a.Highest, d.next-1)
	}
	if a.Highest <= 64 && a.Received>>(a.Highest-1) != 0 {
		return fmt.Errorf("%w: bits below seq 1", errBadAck)
	}
	d.setAcked(a.Highest)
	for m := a.Received; m != 0; m &= m - 1 {
		d.setAcked(a.Highest - 1 - uint64(bits.TrailingZeros64(m)))
	}
	return nil
}

// baseline returns the newest slot of r the member acknowledged.
func (d *deltaTx) baseline(r *txRing) (txSlot, bool) {
	best := -1
	for i := range r {
		if (best < 0 || r[i].seq > r[best].seq) && d.isAcked(r[i].seq) {
			best = i
		}
	}
	if best < 0 {
		return txSlot{}, false
	}
	return r[best], true
}

// appendDeltaData appends the DeltaUpdates data of one update (docs/protocol.md §2.10), numbered
// seq and stamped t, to dst: per property in mask, in order, vals[k] its value and gens[k] its
// generation in the shared history he (0: not kept there); a delta-capable property as a
// baseline distance (0: whole) then its whole value or its difference from the baseline,
// whichever is shorter. te holds the member's rings.
func (d *deltaTx) appendDeltaData(dst []byte, s *schema.Schema, mask uint32, vals [][]byte, gens []uint32, seq uint64, t crdt.Timestamp, te *txEnt, he *histEnt) []byte {
	d.deltas, d.wholes = 0, 0
	capable := s.DeltaMask()
	k := 0
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		v, gen := vals[k], gens[k]
		k++
		if capable&(1<<i) == 0 {
			dst = s.AppendValue(dst, i, v)
			continue
		}
		if b, ok := d.baseline(&te.rings[i]); ok && gen != 0 {
			if diff, ok := he.props[i].delta(&s.Properties[i], b.t, b.gen, t, gen, v); ok && len(diff) < len(v) {
				dst = binary.AppendUvarint(dst, seq-b.seq)
				dst = append(dst, diff...)
				d.deltas++
				continue
			}
		}
		d.wholes++
		dst = append(dst, 0)
		dst = s.AppendValue(dst, i, v)
	}
	return dst
}

// record notes the values of an update sent in datagram seq (their generations gens, as
// appendDeltaData took them) in the member's rings.
func (d *deltaTx) record(te *txEnt, s *schema.Schema, mask uint32, gens []uint32, seq uint64, t crdt.Timestamp) {
	k := 0
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		if gens[k] != 0 {
			te.rings[i].put(txSlot{seq: seq, t: t, gen: gens[k]})
		}
		k++
	}
}

// keep puts the values of every item into the shared history h, once per flush for every member
// that takes deltas: gens[it.ref+k] is the generation of the item's k-th value (0: not a
// delta-capable property, or too large), hes[j] item j's history.
func (h *deltaHist) keep(items []updItem, refs [][]byte, gens []uint32, hes []*histEnt) ([]uint32, []*histEnt) {
	gens, hes = resizeSlice(gens, len(refs)), resizeSlice(hes, len(items))
	for j := range items {
		it := &items[j]
		s := it.s
		he := h.get(it.e, len(s.Properties))
		hes[j] = he
		capable := s.DeltaMask()
		k := it.ref
		for m := it.mask; m != 0; m &= m - 1 {
			i := bits.TrailingZeros32(m)
			gens[k] = 0
			if capable&(1<<i) != 0 {
				gens[k] = he.props[i].put(it.ts, refs[k])
			}
			k++
		}
	}
	return gens, hes
}

// resizeSlice returns s with length n, reusing its array when it is large enough.
func resizeSlice[S ~[]E, E any](s S, n int) S {
	if cap(s) < n {
		return make(S, n)
	}
	return s[:n]
}

// deltaHist is the host's history of the values it sent members that take deltas, shared by all
// of them: per (entity, delta-capable property), the last histSize values with their times. A
// member's ring names a value by (time, generation); its bytes are here, once, and so is the
// difference between two of them, computed once for every member that acknowledged the same
// value (in steady state, all of them).
type deltaHist struct {
	ents []*histEnt // by entity number
}

// histSize is how many values deltaHist keeps per property: a member whose newest acknowledged
// value is older gets the value whole.
const histSize = 6

type histEnt struct {
	e     Entity
	props []propHist
}

// histVal is one value: gen 0 marks an empty slot.
type histVal struct {
	t   crdt.Timestamp
	gen uint32
	n   uint8
	val [schema.MaxDeltaValue]byte
}

// deltaMemo is one difference computed, from value (bt, bgen) to (t, gen).
type deltaMemo struct {
	bt, t     crdt.Timestamp
	bgen, gen uint32
	n         uint8
	d         [schema.MaxDeltaValue]byte
}

type propHist struct {
	vals    [histSize]histVal
	next    uint8  // the slot the next new value takes
	gen     uint32 // the last generation given
	last    uint8  // the slot put found or filled last
	memo    [2]deltaMemo
	memoNew uint8
}

// get returns e's history, made (anew for another version of its number) when absent.
func (h *deltaHist) get(e Entity, props int) *histEnt {
	return perNumber(&h.ents, e, func(he *histEnt) bool { return he.e == e && len(he.props) == props },
		func() *histEnt { return &histEnt{e: e, props: make([]propHist, props)} })
}

// forget drops entity number n's history (it was despawned).
func (h *deltaHist) forget(n uint16) {
	if int(n) < len(h.ents) {
		h.ents[n] = nil
	}
}

// put makes value v at time t part of the history and returns its generation, 0 when v is too
// large to be kept. Another value at the same time (a tie the CRDT settled the other way) takes a
// new generation, so nothing built on the old one matches it.
func (ph *propHist) put(t crdt.Timestamp, v []byte) uint32 {
	if len(v) > schema.MaxDeltaValue {
		return 0
	}
	if hv := &ph.vals[ph.last]; hv.gen != 0 && hv.t == t && string(hv.val[:hv.n]) == string(v) {
		return hv.gen
	}
	slot := int(ph.next)
	for i := range ph.vals {
		if ph.vals[i].gen != 0 && ph.vals[i].t == t {
			if string(ph.vals[i].val[:ph.vals[i].n]) == string(v) {
				ph.last = uint8(i)
				return ph.vals[i].gen
			}
			slot = i // replaced in place
			break
		}
	}
	if slot == int(ph.next) {
		ph.next = uint8((slot + 1) % histSize)
	}
	ph.gen++
	hv := &ph.vals[slot]
	hv.t, hv.gen, hv.n = t, ph.gen, uint8(len(v))
	copy(hv.val[:], v)
	ph.last = uint8(slot)
	return ph.gen
}

// delta returns the difference from value (bt, bgen) to v = (t, gen), false when the history no
// longer holds the baseline (or the difference is longer than a value it could replace).
func (ph *propHist) delta(p *schema.Property, bt crdt.Timestamp, bgen uint32, t crdt.Timestamp, gen uint32, v []byte) ([]byte, bool) {
	for i := range ph.memo {
		if m := &ph.memo[i]; m.gen == gen && m.bgen == bgen && m.t == t && m.bt == bt {
			return m.d[:m.n], true
		}
	}
	var base []byte
	for i := range ph.vals {
		if hv := &ph.vals[i]; hv.gen == bgen && hv.t == bt {
			base = hv.val[:hv.n]
			break
		}
	}
	if base == nil {
		return nil, false
	}
	m := &ph.memo[ph.memoNew]
	d := schema.AppendDelta(m.d[:0], p, base, v)
	if len(d) > len(m.d) {
		return nil, false // longer than any value kept: never used
	}
	ph.memoNew = (ph.memoNew + 1) % uint8(len(ph.memo))
	m.bt, m.t, m.bgen, m.gen, m.n = bt, t, bgen, gen, uint8(len(d))
	return m.d[:m.n], true
}

// deltaRx is a member's delta state for one link to its host: the seqs it received, for its
// acks, and the values they carried.
type deltaRx struct {
	link    *remote
	highest uint64 // the highest seq received (0: none)
	good    uint64 // bit i: seq highest−i received, and every value in it rebuilt and kept
	// spoiled is a seq whose datagram held a value this member could not rebuild or keep: it is
	// never acknowledged, so the host never builds on it.
	spoiled uint64
	// last is the Ack sent last, not sent again, at ackAt.
	last  netmsg.Ack
	ackAt time.Time
	tab   deltaTab
	// Scratch for one update: its values rebuilt, back to back, and where each is.
	vals  []byte
	spans []valSpan
}

// valSpan is where one rebuilt value sits in deltaRx.vals; a < 0: its baseline was missing.
type valSpan struct {
	a, b  int
	delta bool // it came as a difference
}

// rebuild reads update u of a DeltaUpdates numbered seq into x.vals and x.spans, one span per
// property in the mask. False: the data does not read as the schema says (the update is dropped
// whole).
func (x *deltaRx) rebuild(s *schema.Schema, de *deltaEnt, u *netmsg.Update, seq uint64) bool {
	x.vals, x.spans = x.vals[:0], x.spans[:0]
	data := u.Data
	for m := u.Mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		p := &s.Properties[i]
		ago := uint64(0)
		if p.DeltaCapable() {
			v, n := binary.Uvarint(data)
			if n <= 0 || n != uvarintSize(v) {
				return false
			}
			ago, data = v, data[n:]
		}
		a := len(x.vals)
		if ago == 0 {
			v, n, err := s.ConsumeValue(i, data)
			if err != nil {
				return false
			}
			x.vals = append(x.vals, v...)
			data = data[n:]
			x.spans = append(x.spans, valSpan{a: a, b: len(x.vals)})
			continue
		}
		base, ok := []byte(nil), false
		if ago < seq {
			base, ok = de.rings[i].get(seq - ago)
		}
		if !ok {
			n, err := schema.DeltaLen(p, data)
			if err != nil {
				return false
			}
			data = data[n:]
			x.spans = append(x.spans, valSpan{a: -1, delta: true})
			continue
		}
		vals, n, err := schema.ApplyDelta(x.vals, p, base, data)
		if err != nil {
			return false
		}
		x.vals, data = vals, data[n:]
		x.spans = append(x.spans, valSpan{a: a, b: len(x.vals), delta: true})
	}
	return len(data) == 0
}

// uvarintSize is the length of v as a shortest LEB128.
func uvarintSize(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// received marks seq s received, unless its datagram is spoiled. Seqs more than 63 below the
// highest are not acknowledged.
func (x *deltaRx) received(s uint64) {
	if s > x.highest {
		if d := s - x.highest; d >= 64 {
			x.good = 0
		} else {
			x.good <<= d
		}
		x.highest = s
	}
	if d := x.highest - s; d < 64 && s != x.spoiled {
		x.good |= 1 << d
	}
}

// spoil withdraws seq s from what the member acknowledges.
func (x *deltaRx) spoil(s uint64) {
	x.spoiled = s
	if d := x.highest - s; s <= x.highest && d < 64 {
		x.good &^= 1 << d
	}
}

// ackPending reports whether pendingAck has an Ack to send, without taking it.
func (x *deltaRx) ackPending() bool {
	if x.good == 0 {
		return false
	}
	z := uint64(bits.TrailingZeros64(x.good))
	return netmsg.Ack{Highest: x.highest - z, Received: x.good >> (z + 1)} != x.last
}

// pendingAck returns the Ack to send: the newest good seq and the 64 before it, unless nothing
// changed since the last Ack.
func (x *deltaRx) pendingAck() (netmsg.Ack, bool) {
	if x.good == 0 {
		return netmsg.Ack{}, false
	}
	z := uint64(bits.TrailingZeros64(x.good))
	a := netmsg.Ack{Highest: x.highest - z, Received: x.good >> (z + 1)}
	if a == x.last {
		return a, false
	}
	x.last = a
	return a, true
}
