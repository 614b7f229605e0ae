package netmsg

import (
	"encoding/binary"
	"math"
)

// RunUpdates is PackedUpdates with the updates of consecutive entities that share a mask and a
// data length written as one run: the network id, the length-and-width and the mask once, then
// every update's data. A host's flush writes the same properties of many entities it spawned in a
// row (the bench's 1,000 movers: ids 1–1,000, each a position and a time), so PackedUpdates'
// 3–4 header bytes per update (of 18) go to a few per run, and a datagram holds ~20% more
// updates: fewer datagrams, fewer SCTP packets, DTLS records and UDP sends per member per flush,
// which is where a host's fan-out CPU goes. Body layout (extension frame, unsigned LEB128
// varints, each in its shortest form):
//
//	time uvarint | Run*, to the end of the body
//	Run: networkId uvarint | count uvarint | lengthAndWidth uvarint | mask | data * count
//
// The run's k-th update (from 0) is entity networkId + k, with the run's mask and dataLength
// bytes of data. count is at least 1; a run whose dataLength is 0 holds one update (so that a
// body never decodes into more updates than it has bytes); networkId + count − 1 must not pass
// 2⁶⁴ − 1. It decodes into an EntityUpdates; decoded Data aliases the input.

// MaxRun is the most updates RunUpdatesWriter (and AppendRunUpdates) puts in one run: its count
// then always takes one byte, so a run grows in place. A decoder takes any count.
const MaxRun = 127

// AppendRunUpdates appends m as a RunUpdates message, consecutive updates in runs as
// RunUpdatesWriter makes them. It panics when an update cannot be encoded, as AppendUpdate does.
func AppendRunUpdates(dst []byte, m *EntityUpdates) []byte {
	var w RunUpdatesWriter
	w.Reset(dst, m.Time, math.MaxInt)
	for i := range m.Updates {
		w.Add(&m.Updates[i])
	}
	return w.Bytes()
}

// ConsumeRunUpdates decodes the RunUpdates at the start of b into m, reusing its slice, and
// returns its length. Varints as in ConsumePackedUpdates; a run of count 0, of count > 1 with
// no data, or whose ids pass 2⁶⁴ − 1 is ErrBodyLength; data past the body ErrShortBuffer. A nil
// m validates only. Every error is a *ProtocolError.
func ConsumeRunUpdates(b []byte, m *EntityUpdates) (n int, err error) {
	return consumeTimed(b, TypeRunUpdates, m)
}

// runs reads RunUpdates' runs to the end of the body into m (nil: validate only).
func (d *decoder) runs(m *EntityUpdates) {
	for d.err == nil && d.off < len(d.b) {
		id := d.uvarint("network id")
		at := d.off
		count := d.uvarint("run count")
		lwAt := d.off
		lw := d.uvarint("length and width")
		if d.err != nil {
			break
		}
		w := Width(lw & 3)
		size := lw >> 2
		switch {
		case count == 0:
			d.failf(at, ErrBodyLength, "run of no updates")
		case count > 1 && size == 0:
			d.failf(at, ErrBodyLength, "run of %d updates without data", count)
		case count-1 > math.MaxUint64-id:
			d.failf(at, ErrBodyLength, "run of %d updates from network id %d passes 2⁶⁴", count, id)
		case !w.Valid():
			d.failf(lwAt, ErrInvalidMaskWidth, "width code %d", w)
		case size > MaxUpdateData:
			d.failf(lwAt, ErrTooLarge, "update data of %d bytes, more than %d", size, MaxUpdateData)
		}
		if d.err != nil {
			break
		}
		mask := d.mask(w)
		if d.err == nil && size > 0 && count > uint64(len(d.b)-d.off)/size {
			d.failf(d.off, ErrShortBuffer, "run of %d updates of %d bytes runs past the body", count, size)
		}
		for k := uint64(0); k < count && d.err == nil; k++ {
			data := d.blob(size, "update data")
			if d.err == nil && m != nil {
				m.Updates = append(m.Updates, Update{NetworkID: id + k, Width: w, Mask: mask, Data: data})
			}
		}
	}
}

// RunUpdatesWriter builds RunUpdates messages in place, as PackedUpdatesWriter builds
// PackedUpdates: the same methods, the same use. An update that continues the open run (the
// next entity id, the same width, mask and data length, fewer than MaxRun in it) adds only its
// data. The zero value holds no message.
type RunUpdatesWriter struct {
	pw packedWriter
	// The open run: where its count byte is, the id the next update must have to join it, its
	// width, mask and data length, and how many updates it holds (0: no run open).
	countAt int
	next    uint64
	width   Width
	mask    uint32
	size    int
	n       int
}

// Reset appends the header of a new RunUpdates message stamped time to dst and makes it the
// current message. limit caps the length of the whole buffer (≤ 0: MaxDatagram). It reports
// false, leaving no message open, when the empty message would exceed limit.
func (w *RunUpdatesWriter) Reset(dst []byte, time uint64, limit int) bool {
	w.n = 0
	return w.pw.reset(dst, TypeRunUpdates, 0, time, limit)
}

// joins reports whether u continues the open run (not one of updates without data: a decoder
// refuses those past one update).
func (w *RunUpdatesWriter) joins(u *Update) bool {
	return w.n > 0 && w.n < MaxRun && u.NetworkID == w.next && u.Width == w.width && u.Mask == w.mask &&
		len(u.Data) == w.size && w.size > 0 && w.next != 0
}

// sizeOf returns how many bytes adding u takes.
func (w *RunUpdatesWriter) sizeOf(u *Update) int {
	if w.joins(u) {
		return len(u.Data)
	}
	return SizePackedUpdate(u) + 1
}

// Fits reports whether u can be added without exceeding the limit.
func (w *RunUpdatesWriter) Fits(u *Update) bool {
	return w.pw.open && w.pw.count < math.MaxInt32 && len(w.pw.buf)+w.sizeOf(u) <= w.pw.limit
}

// Add appends u to the current message and reports true, or reports false and changes nothing
// when u does not fit. It panics when u cannot be encoded, as AppendUpdate does.
func (w *RunUpdatesWriter) Add(u *Update) bool {
	if !u.Width.Valid() || len(u.Data) > MaxUpdateData || (u.Width != Width32 && u.Mask>>u.Width.Bits() != 0) {
		panic("netmsg: cannot encode Update: bad width, mask or data length")
	}
	if !w.Fits(u) {
		return false
	}
	b := w.pw.buf
	if w.joins(u) {
		b[w.countAt]++
		w.n++
	} else {
		b = binary.AppendUvarint(b, u.NetworkID)
		w.countAt = len(b)
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(u.Data))<<2|uint64(u.Width))
		b = appendMask(b, u.Width, u.Mask)
		w.width, w.mask, w.size, w.n = u.Width, u.Mask, len(u.Data), 1
	}
	w.next = u.NetworkID + 1
	w.pw.buf = FinishExt(append(b, u.Data...), w.pw.mark)
	w.pw.count++
	return true
}

// Bytes returns the buffer: what Reset was given followed by the current message.
func (w *RunUpdatesWriter) Bytes() []byte { return w.pw.buf }

// Count returns the number of updates in the current message.
func (w *RunUpdatesWriter) Count() int { return w.pw.count }

// Len returns len(w.Bytes()).
func (w *RunUpdatesWriter) Len() int { return len(w.pw.buf) }
