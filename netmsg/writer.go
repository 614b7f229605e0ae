package netmsg

import (
	"encoding/binary"
	"math"
)

// EntityUpdatesWriter builds EntityUpdates messages in place, stopping
// before a size limit, so that a sender can fill one datagram with as many
// updates as fit. It never allocates when the buffer it is given has
// capacity for the limit. Several messages (one per time stamp) can share a
// buffer: start the next one with Reset(w.Bytes(), …).
//
//	var w netmsg.EntityUpdatesWriter
//	w.Reset(buf[:0], now, netmsg.MaxDatagram)
//	for i := range pending {
//		if !w.Add(&pending[i]) {
//			break // datagram full
//		}
//	}
//	send(w.Bytes())
//
// The zero value holds no message; Add fails until Reset succeeds.
type EntityUpdatesWriter struct {
	buf   []byte
	start int // index of the current message's type byte
	count uint32
	limit int
	open  bool
}

// Reset appends the header of a new EntityUpdates message stamped time to
// dst and makes it the current message. limit caps the length of the whole
// buffer, dst included; zero or less means MaxDatagram. Reset reports
// false, leaving no message open, when the empty message would exceed limit.
func (w *EntityUpdatesWriter) Reset(dst []byte, time uint64, limit int) bool {
	if limit <= 0 {
		limit = MaxDatagram
	}
	w.buf, w.count, w.limit, w.open = dst, 0, limit, false
	if len(dst)+entityUpdatesHeaderSize > limit {
		return false
	}
	w.start = len(dst)
	w.buf = append(w.buf, byte(TypeEntityUpdates))
	w.buf = binary.LittleEndian.AppendUint64(w.buf, time)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, 0)
	w.open = true
	return true
}

// Fits reports whether u can be added without exceeding the limit.
func (w *EntityUpdatesWriter) Fits(u *Update) bool {
	return w.open && w.count < math.MaxUint32 && len(w.buf)+SizeUpdate(u) <= w.limit
}

// Add appends u to the current message and reports true, or reports false
// and changes nothing when u does not fit. Like AppendUpdate it panics on an
// Update that cannot be encoded.
func (w *EntityUpdatesWriter) Add(u *Update) bool {
	if !w.Fits(u) {
		return false
	}
	w.buf = AppendUpdate(w.buf, u)
	w.count++
	binary.LittleEndian.PutUint32(w.buf[w.start+entityUpdatesCountOffset:], w.count)
	return true
}

// Bytes returns the buffer: what Reset was given followed by the current
// message, complete with its update count.
func (w *EntityUpdatesWriter) Bytes() []byte { return w.buf }

// Count returns the number of updates in the current message.
func (w *EntityUpdatesWriter) Count() int { return int(w.count) }

// Len returns len(w.Bytes()).
func (w *EntityUpdatesWriter) Len() int { return len(w.buf) }
