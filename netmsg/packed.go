package netmsg

import (
	"encoding/binary"
	"math"
)

// PackedUpdates is EntityUpdates with variable-length integers, for the updates that dominate a
// host's traffic: the network id, the time and the length fields of TRNP's Update take 10 fixed
// bytes where 2–4 varint bytes say the same (entity ids are below 2³², numbers mostly below
// 2¹⁴). The values and the mask are TRNP's. Body layout (extension frame, unsigned LEB128
// varints, each in its shortest form):
//
//	time uvarint | Update*, to the end of the body
//	Update: networkId uvarint | lengthAndWidth uvarint (dataLength<<2 | width) | mask (1, 2 or 4 bytes LE) | data
//
// It decodes into an EntityUpdates; decoded Data aliases the input.

// SizePackedUpdate returns the encoded size of u in a PackedUpdates message.
func SizePackedUpdate(u *Update) int {
	return uvarintLen(u.NetworkID) + uvarintLen(uint64(len(u.Data))<<2|uint64(u.Width)) + u.Width.Bytes() + len(u.Data)
}

// AppendPackedUpdate appends u as one Update of a PackedUpdates body. It panics when u cannot be
// encoded, as AppendUpdate does.
func AppendPackedUpdate(dst []byte, u *Update) []byte {
	if !u.Width.Valid() || len(u.Data) > MaxUpdateData || (u.Width != Width32 && u.Mask>>u.Width.Bits() != 0) {
		panic("netmsg: cannot encode Update: bad width, mask or data length")
	}
	dst = binary.AppendUvarint(dst, u.NetworkID)
	dst = binary.AppendUvarint(dst, uint64(len(u.Data))<<2|uint64(u.Width))
	return append(appendMask(dst, u.Width, u.Mask), u.Data...)
}

// AppendPackedUpdates appends m as a PackedUpdates message.
func AppendPackedUpdates(dst []byte, m *EntityUpdates) []byte {
	dst, mark := StartExt(dst, TypePackedUpdates)
	dst = binary.AppendUvarint(dst, m.Time)
	for i := range m.Updates {
		dst = AppendPackedUpdate(dst, &m.Updates[i])
	}
	return FinishExt(dst, mark)
}

// ConsumePackedUpdates decodes the PackedUpdates at the start of b into m, reusing its slice, and
// returns its length. A varint that is not in its shortest form, overflows, or runs past the body
// is an error (ErrBodyLength, ErrShortBuffer), as is a width code of 3 (ErrInvalidMaskWidth). A
// nil m validates only. Every error is a *ProtocolError.
func ConsumePackedUpdates(b []byte, m *EntityUpdates) (n int, err error) {
	return consumeTimed(b, TypePackedUpdates, m)
}

// consumeTimed decodes a PackedUpdates or a RunUpdates (t), a time and then updates, into m (nil:
// validate only). (A method value for the updates would make the decoder escape: an allocation.)
func consumeTimed(b []byte, t Type, m *EntityUpdates) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(t)
	if !d.checkBody(body, 1, false) {
		return d.result()
	}
	time := d.uvarint("time")
	if m != nil {
		m.Time = time
		m.Updates = m.Updates[:0]
	}
	if t == TypeRunUpdates {
		d.runs(m)
	} else {
		d.packedUpdates(m)
	}
	return d.result()
}

// packedUpdates reads PackedUpdates' Updates to the end of the body into m (nil: validate only).
func (d *decoder) packedUpdates(m *EntityUpdates) {
	for d.err == nil && d.off < len(d.b) {
		id := d.uvarint("network id")
		at := d.off
		lw := d.uvarint("length and width")
		if d.err != nil {
			break
		}
		w := Width(lw & 3)
		if !w.Valid() {
			d.failf(at, ErrInvalidMaskWidth, "width code %d", w)
			break
		}
		if lw>>2 > MaxUpdateData {
			d.failf(at, ErrTooLarge, "update data of %d bytes, more than %d", lw>>2, MaxUpdateData)
			break
		}
		mask := d.mask(w)
		data := d.blob(lw>>2, "update data")
		if d.err == nil && m != nil {
			m.Updates = append(m.Updates, Update{NetworkID: id, Width: w, Mask: mask, Data: data})
		}
	}
}

// uvarint reads an unsigned LEB128 varint in its shortest form.
func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		d.failf(d.off, ErrShortBuffer, "%s: varint runs past the end", what)
		return 0
	case n < 0:
		d.failf(d.off, ErrBodyLength, "%s: varint overflows 64 bits", what)
		return 0
	case n != uvarintLen(v):
		d.failf(d.off, ErrBodyLength, "%s: varint not in its shortest form", what)
		return 0
	}
	d.off += n
	return v
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// PackedUpdatesWriter builds PackedUpdates messages in place, as EntityUpdatesWriter builds
// EntityUpdates: the same methods, the same use. The zero value holds no message.
type PackedUpdatesWriter struct{ pw packedWriter }

// Reset appends the header of a new PackedUpdates message stamped time to dst and makes it the
// current message. limit caps the length of the whole buffer (≤ 0: MaxDatagram). It reports
// false, leaving no message open, when the empty message would exceed limit.
func (w *PackedUpdatesWriter) Reset(dst []byte, time uint64, limit int) bool {
	return w.pw.reset(dst, TypePackedUpdates, 0, time, limit)
}

// Fits reports whether u can be added without exceeding the limit.
func (w *PackedUpdatesWriter) Fits(u *Update) bool { return w.pw.fits(u) }

// Add appends u to the current message and reports true, or reports false and changes nothing
// when u does not fit.
func (w *PackedUpdatesWriter) Add(u *Update) bool { return w.pw.add(u) }

// Bytes returns the buffer: what Reset was given followed by the current message.
func (w *PackedUpdatesWriter) Bytes() []byte { return w.pw.buf }

// Count returns the number of updates in the current message.
func (w *PackedUpdatesWriter) Count() int { return w.pw.count }

// Len returns len(w.Bytes()).
func (w *PackedUpdatesWriter) Len() int { return len(w.pw.buf) }

// packedWriter builds PackedUpdates or DeltaUpdates messages in place.
type packedWriter struct {
	buf   []byte
	mark  int // index of the current message's frame header
	count int
	limit int
	open  bool
}

// reset starts a message of type t (PackedUpdates, or DeltaUpdates with seq before the time).
func (w *packedWriter) reset(dst []byte, t Type, seq, time uint64, limit int) bool {
	if limit <= 0 {
		limit = MaxDatagram
	}
	w.buf, w.count, w.limit, w.open = dst, 0, limit, false
	head := extHeaderSize + uvarintLen(time)
	if t == TypeDeltaUpdates {
		head += uvarintLen(seq)
	}
	if len(dst)+head > limit {
		return false
	}
	w.buf, w.mark = StartExt(dst, t)
	if t == TypeDeltaUpdates {
		w.buf = binary.AppendUvarint(w.buf, seq)
	}
	w.buf = binary.AppendUvarint(w.buf, time)
	w.buf = FinishExt(w.buf, w.mark)
	w.open = true
	return true
}

func (w *packedWriter) fits(u *Update) bool {
	return w.open && w.count < math.MaxInt32 && len(w.buf)+SizePackedUpdate(u) <= w.limit
}

func (w *packedWriter) add(u *Update) bool {
	if !w.fits(u) {
		return false
	}
	w.buf = FinishExt(AppendPackedUpdate(w.buf, u), w.mark)
	w.count++
	return true
}
