package netmsg

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Fragmenter cuts a payload into Fragment messages, each at most maxFragment
// bytes long, to be sent in order on the reliable channel. Every payload
// yields at least one fragment (an empty payload yields one with an empty
// chunk).
//
//	f := netmsg.NewFragmenter(payload, id, netmsg.MaxReliableMessage)
//	for {
//		msg, ok := f.Next(buf[:0])
//		if !ok {
//			break
//		}
//		send(msg)
//	}
type Fragmenter struct {
	payload []byte
	id      uint32
	chunk   int
	off     int
	started bool
}

// NewFragmenter returns a Fragmenter for payload. maxFragment is the size
// limit of each Fragment message; zero or less means MaxReliableMessage. It
// panics when maxFragment is not in (FragmentOverhead, MaxReliableMessage]
// or the payload is longer than a u32 can express.
func NewFragmenter(payload []byte, messageID uint32, maxFragment int) Fragmenter {
	if maxFragment <= 0 {
		maxFragment = MaxReliableMessage
	}
	if maxFragment <= FragmentOverhead || maxFragment > MaxReliableMessage {
		panic(fmt.Sprintf("netmsg: fragment size %d outside (%d, %d]", maxFragment, FragmentOverhead, MaxReliableMessage))
	}
	if uint64(len(payload)) > math.MaxUint32 {
		panic(fmt.Sprintf("netmsg: payload of %d bytes cannot be fragmented", len(payload)))
	}
	return Fragmenter{payload: payload, id: messageID, chunk: maxFragment - FragmentOverhead}
}

// FragmentCount returns how many fragments NewFragmenter(payload of
// payloadLen bytes, …, maxFragment) yields.
func FragmentCount(payloadLen, maxFragment int) int {
	if maxFragment <= 0 {
		maxFragment = MaxReliableMessage
	}
	chunk := maxFragment - FragmentOverhead
	if payloadLen <= 0 || chunk <= 0 {
		return 1
	}
	return (payloadLen + chunk - 1) / chunk
}

// Next appends the next Fragment message to dst and reports true, or
// returns dst and false when every fragment has been produced. With enough
// capacity in dst it allocates nothing.
func (f *Fragmenter) Next(dst []byte) ([]byte, bool) {
	if f.started && f.off >= len(f.payload) {
		return dst, false
	}
	f.started = true
	chunk := f.chunk
	if chunk <= 0 { // zero Fragmenter
		chunk = MaxReliableMessage - FragmentOverhead
	}
	chunk = min(chunk, len(f.payload)-f.off)
	dst = append(dst, byte(TypeFragment))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(fragmentHeaderSize+chunk))
	dst = binary.LittleEndian.AppendUint32(dst, f.id)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.payload)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(f.off))
	dst = append(dst, f.payload[f.off:f.off+chunk]...)
	f.off += chunk
	return dst, true
}

// Config configures a Reassembler. The zero value works.
type Config struct {
	// MaxTotal caps the totalLength of a reassembled payload in bytes.
	// If zero or less, the default of 64 MiB is used.
	MaxTotal int
}

// DefaultMaxTotal is the default Config.MaxTotal.
const DefaultMaxTotal = 64 << 20

// retainBytes is the buffer capacity a Reassembler keeps between payloads;
// a larger buffer is released when the next payload starts.
const retainBytes = 1 << 20

// Reassembler rebuilds payloads from Fragment messages received in order
// on one reliable channel. It is pure: no goroutines, no locks; use one per
// channel from the goroutine that reads it. The zero value uses the default
// Config.
//
// Any Fragment that breaks the rules (see ErrFragment) is a *ProtocolError,
// and the partial payload is dropped. Memory grows with the bytes received,
// not with the announced totalLength, so a peer that announces a large total
// and stops costs only what it sent.
type Reassembler struct {
	maxTotal int
	active   bool
	id       uint32
	total    uint32
	buf      []byte
}

// NewReassembler returns a Reassembler configured by cfg.
func NewReassembler(cfg Config) *Reassembler {
	return &Reassembler{maxTotal: cfg.MaxTotal}
}

// Push adds f. When f completes a payload, Push returns it with done true;
// the payload is valid until the next call to Push or Reset. f.Chunk is
// copied, so the input may be reused once Push returns.
func (r *Reassembler) Push(f *Fragment) (payload []byte, done bool, err error) {
	if !r.active {
		if f.Offset != 0 {
			return r.fail(ErrFragment, "message %d starts at offset %d, want 0", f.MessageID, f.Offset)
		}
		if limit := r.limit(); uint64(f.TotalLength) > uint64(limit) {
			return r.fail(ErrTooLarge, "message %d of %d bytes exceeds %d", f.MessageID, f.TotalLength, limit)
		}
		if cap(r.buf) > retainBytes {
			r.buf = nil
		}
		r.active, r.id, r.total, r.buf = true, f.MessageID, f.TotalLength, r.buf[:0]
	} else {
		switch {
		case f.MessageID != r.id:
			return r.fail(ErrFragment, "message %d interrupts message %d", f.MessageID, r.id)
		case f.TotalLength != r.total:
			return r.fail(ErrFragment, "message %d changed total length from %d to %d", f.MessageID, r.total, f.TotalLength)
		case uint64(f.Offset) != uint64(len(r.buf)):
			return r.fail(ErrFragment, "message %d fragment at offset %d, want %d", f.MessageID, f.Offset, len(r.buf))
		}
	}
	if uint64(f.Offset)+uint64(len(f.Chunk)) > uint64(r.total) {
		return r.fail(ErrFragment, "message %d chunk of %d bytes at %d runs past total %d", f.MessageID, len(f.Chunk), f.Offset, r.total)
	}
	if len(f.Chunk) == 0 && r.total != 0 {
		return r.fail(ErrFragment, "message %d empty chunk at offset %d", f.MessageID, f.Offset)
	}
	r.buf = append(r.buf, f.Chunk...)
	if uint64(len(r.buf)) < uint64(r.total) {
		return nil, false, nil
	}
	r.active = false
	return r.buf, true, nil
}

// InProgress reports whether a payload is partly received.
func (r *Reassembler) InProgress() bool { return r.active }

// Buffered returns the bytes received of the payload in progress.
func (r *Reassembler) Buffered() int {
	if !r.active {
		return 0
	}
	return len(r.buf)
}

// Reset drops the payload in progress and releases a large buffer.
func (r *Reassembler) Reset() {
	r.active = false
	if cap(r.buf) > retainBytes {
		r.buf = nil
	}
	r.buf = r.buf[:0]
}

func (r *Reassembler) limit() int {
	if r.maxTotal <= 0 {
		return DefaultMaxTotal
	}
	return r.maxTotal
}

func (r *Reassembler) fail(sentinel error, format string, args ...any) ([]byte, bool, error) {
	r.Reset()
	msg := fmt.Sprintf(format, args...)
	var err error
	if sentinel == ErrFragment {
		err = fmt.Errorf("%w: %s", ErrFragment, msg)
	} else {
		err = fmt.Errorf("%w: %w: %s", ErrFragment, sentinel, msg)
	}
	return nil, false, &ProtocolError{Type: TypeFragment, Offset: -1, Err: err}
}
