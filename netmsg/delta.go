package netmsg

import "encoding/binary"

// DeltaUpdates is PackedUpdates numbered for one receiver, so that the receiver can acknowledge it
// (Ack) and the sender can encode later values as differences from values the receiver is known
// to hold (docs/protocol.md §2.10). Body layout (extension frame, unsigned LEB128 varints in
// their shortest form):
//
//	seq uvarint | time uvarint | Update*, to the end of the body
//	Update: as in PackedUpdates
//
// netmsg does not look inside an Update's data: the session layer (package peer) writes each
// property of a numeric encoding there as a baseline distance and either its full value or its
// difference from the baseline (schema.AppendDelta).
type DeltaUpdates struct {
	// Seq numbers the datagram on its link, from 1 up, one per datagram.
	Seq uint64
	EntityUpdates
}

// AppendDeltaUpdates appends m as a DeltaUpdates message. It panics on an Update that cannot be
// encoded, as AppendPackedUpdates does.
func AppendDeltaUpdates(dst []byte, m *DeltaUpdates) []byte {
	dst, mark := StartExt(dst, TypeDeltaUpdates)
	dst = binary.AppendUvarint(dst, m.Seq)
	dst = binary.AppendUvarint(dst, m.Time)
	for i := range m.Updates {
		dst = AppendPackedUpdate(dst, &m.Updates[i])
	}
	return FinishExt(dst, mark)
}

// ConsumeDeltaUpdates decodes the DeltaUpdates at the start of b into m, reusing its slice, and
// returns its length. Errors are those of ConsumePackedUpdates. A nil m validates only. Decoded
// Data aliases b.
func ConsumeDeltaUpdates(b []byte, m *DeltaUpdates) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeDeltaUpdates)
	if !d.checkBody(body, 2, false) {
		return d.result()
	}
	seq := d.uvarint("seq")
	t := d.uvarint("time")
	var eu *EntityUpdates
	if m != nil {
		m.Seq, m.Time = seq, t
		m.Updates = m.Updates[:0]
		eu = &m.EntityUpdates
	}
	d.packedUpdates(eu)
	return d.result()
}

// DeltaUpdatesWriter builds DeltaUpdates messages in place, as PackedUpdatesWriter builds
// PackedUpdates. The zero value holds no message.
type DeltaUpdatesWriter struct{ pw packedWriter }

// Reset appends the header of a new DeltaUpdates message numbered seq and stamped time to dst
// and makes it the current message. limit caps the length of the whole buffer (≤ 0:
// MaxDatagram). It reports false, leaving no message open, when the empty message would exceed
// limit.
func (w *DeltaUpdatesWriter) Reset(dst []byte, seq, time uint64, limit int) bool {
	return w.pw.reset(dst, TypeDeltaUpdates, seq, time, limit)
}

// Fits reports whether u can be added without exceeding the limit.
func (w *DeltaUpdatesWriter) Fits(u *Update) bool { return w.pw.fits(u) }

// Add appends u to the current message and reports true, or reports false and changes nothing
// when u does not fit.
func (w *DeltaUpdatesWriter) Add(u *Update) bool { return w.pw.add(u) }

// Bytes returns the buffer: what Reset was given followed by the current message.
func (w *DeltaUpdatesWriter) Bytes() []byte { return w.pw.buf }

// Count returns the number of updates in the current message.
func (w *DeltaUpdatesWriter) Count() int { return w.pw.count }

// Len returns len(w.Bytes()).
func (w *DeltaUpdatesWriter) Len() int { return len(w.pw.buf) }

// Ack acknowledges DeltaUpdates datagrams, member → host, on either channel: the highest seq
// received and which of the 64 before it were received too. A member that can take
// DeltaUpdates says so by sending an Ack (Highest 0: nothing received yet) on the reliable channel
// after its Hello. Body layout:
//
//	highest uvarint | received u64 LE (bit i: seq highest−1−i was received)
type Ack struct {
	Highest  uint64
	Received uint64
}

// ackMinSize is the smallest Ack body: a one-byte highest and the bitmap.
const ackMinSize = 1 + 8

// AppendAck appends m as an Ack message.
func AppendAck(dst []byte, m *Ack) []byte {
	dst, mark := StartExt(dst, TypeAck)
	dst = binary.AppendUvarint(dst, m.Highest)
	dst = binary.LittleEndian.AppendUint64(dst, m.Received)
	return FinishExt(dst, mark)
}

// ConsumeAck decodes the Ack at the start of b into m and returns its length. A body that is not
// exactly a shortest-form varint and 8 bytes is ErrBodyLength. A nil m validates only.
func ConsumeAck(b []byte, m *Ack) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeAck)
	if !d.checkBody(body, ackMinSize, false) {
		return d.result()
	}
	h := d.uvarint("highest")
	if d.err == nil && len(d.b)-d.off != 8 {
		d.failf(1, ErrBodyLength, "Ack body of %d bytes, want %d", body, uvarintLen(h)+8)
		return d.result()
	}
	r := d.u64("received")
	if d.err == nil && m != nil {
		m.Highest, m.Received = h, r
	}
	return d.result()
}
