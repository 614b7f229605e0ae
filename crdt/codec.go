package crdt

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

const (
	// HeaderSize is the size of the length|type header that starts every message.
	HeaderSize = 8
	// DefaultMaxMessageSize caps the length field of a message (16 MiB) when no other cap is
	// configured. It is checked right after the header is read.
	DefaultMaxMessageSize = 16 << 20

	putHeader        = 24 // header + entity, component, timestamp, dataLen
	putNetworkHeader = 28 // header + entity, component, timestamp, networkId, dataLen
	deleteCompSize   = 20
	deleteCompNetSz  = 24
	deleteEntitySize = 12
	deleteEntNetSize = 16
	// legacyDeleteEntityNetworkLength is the length @dcl/ecs ≤ 7.27 declared for the 16 bytes
	// of a DELETE_ENTITY_NETWORK it wrote.
	legacyDeleteEntityNetworkLength = 12
)

var le = binary.LittleEndian

// SizeMessage returns the number of bytes AppendMessage writes for m.
func SizeMessage(m *Message) int {
	switch m.Type {
	case PutComponent, AppendValue:
		return putHeader + len(m.Data)
	case PutComponentNetwork:
		return putNetworkHeader + len(m.Data)
	case DeleteComponent:
		return deleteCompSize
	case DeleteComponentNetwork:
		return deleteCompNetSz
	case DeleteEntity:
		return deleteEntitySize
	case DeleteEntityNetwork:
		return deleteEntNetSize
	}
	return HeaderSize + len(m.Data)
}

// AppendMessage appends the @dcl/ecs encoding of m to dst and returns the extended slice. Only
// the fields of m.Type are written. DELETE_ENTITY_NETWORK is always written with length 16 (the
// 7.28 encoding). A message of an unknown type is written as the header followed by m.Data, the
// inverse of what ConsumeMessage decodes for it. len(m.Data) must fit the uint32 length field.
func AppendMessage(dst []byte, m *Message) []byte {
	size := SizeMessage(m)
	dst = slices.Grow(dst, size)
	dst = le.AppendUint32(dst, uint32(size))
	dst = le.AppendUint32(dst, uint32(m.Type))
	switch m.Type {
	case PutComponent, AppendValue:
		dst = le.AppendUint32(dst, uint32(m.Entity))
		dst = le.AppendUint32(dst, uint32(m.Component))
		dst = le.AppendUint32(dst, uint32(m.Timestamp))
		dst = le.AppendUint32(dst, uint32(len(m.Data)))
		dst = append(dst, m.Data...)
	case PutComponentNetwork:
		dst = le.AppendUint32(dst, uint32(m.Entity))
		dst = le.AppendUint32(dst, uint32(m.Component))
		dst = le.AppendUint32(dst, uint32(m.Timestamp))
		dst = le.AppendUint32(dst, m.NetworkID)
		dst = le.AppendUint32(dst, uint32(len(m.Data)))
		dst = append(dst, m.Data...)
	case DeleteComponent:
		dst = le.AppendUint32(dst, uint32(m.Entity))
		dst = le.AppendUint32(dst, uint32(m.Component))
		dst = le.AppendUint32(dst, uint32(m.Timestamp))
	case DeleteComponentNetwork:
		dst = le.AppendUint32(dst, uint32(m.Entity))
		dst = le.AppendUint32(dst, uint32(m.Component))
		dst = le.AppendUint32(dst, uint32(m.Timestamp))
		dst = le.AppendUint32(dst, m.NetworkID)
	case DeleteEntity:
		dst = le.AppendUint32(dst, uint32(m.Entity))
	case DeleteEntityNetwork:
		dst = le.AppendUint32(dst, uint32(m.Entity))
		dst = le.AppendUint32(dst, m.NetworkID)
	default:
		dst = append(dst, m.Data...)
	}
	return dst
}

// ConsumeMessage decodes the message at the start of b into m and returns its size in bytes.
// m.Data aliases b (valid until b is reused); its capacity is clipped to the message, so
// appending to it never overwrites what follows.
//
// The length field is checked against DefaultMaxMessageSize first, then against len(b), then
// against the layout of the type: fixed-size types must declare exactly their size, and PUT,
// APPEND and PUT_NETWORK must declare exactly their header plus dataLen. One exception keeps
// @dcl/ecs ≤ 7.27 readable: a DELETE_ENTITY_NETWORK declaring length 12 is read as the 16 bytes
// those versions actually wrote (entity and networkId, as every @dcl/ecs reader reads it), and n
// is 16; fewer than 16 remaining bytes is ErrTruncated.
//
// A message of an unknown type with 8 ≤ length ≤ len(b) is not an error: m.Type is set, m.Data
// holds its body, the other fields are zero and n = length, so a caller can skip it. On error n
// is 0 and the error wraps ErrTruncated, ErrBadLength or ErrTooLarge.
func ConsumeMessage(b []byte, m *Message) (n int, err error) {
	return consumeMessage(b, m, DefaultMaxMessageSize)
}

func consumeMessage(b []byte, m *Message, limit int) (int, error) {
	if len(b) < HeaderSize {
		return 0, fmt.Errorf("%w: %d of %d header bytes", ErrTruncated, len(b), HeaderSize)
	}
	length := le.Uint32(b)
	typ := MessageType(le.Uint32(b[4:]))
	if uint64(length) > uint64(limit) {
		return 0, fmt.Errorf("%w: length %d exceeds %d", ErrTooLarge, length, limit)
	}
	if length < HeaderSize {
		return 0, fmt.Errorf("%w: length %d below the header size", ErrBadLength, length)
	}
	size := int(length)
	if typ == DeleteEntityNetwork && length == legacyDeleteEntityNetworkLength {
		size = deleteEntNetSize
	}
	if size > len(b) {
		return 0, fmt.Errorf("%w: %s needs %d bytes, %d remain", ErrTruncated, typ, size, len(b))
	}
	switch typ {
	case PutComponent, AppendValue, PutComponentNetwork:
		hdr := putHeader
		if typ == PutComponentNetwork {
			hdr = putNetworkHeader
		}
		if size < hdr {
			return 0, fmt.Errorf("%w: %s length %d below %d", ErrBadLength, typ, size, hdr)
		}
		dataLen := le.Uint32(b[hdr-4:])
		if uint64(dataLen) != uint64(size-hdr) {
			if uint64(hdr)+uint64(dataLen) > uint64(len(b)) {
				return 0, fmt.Errorf("%w: %s dataLen %d past the end", ErrTruncated, typ, dataLen)
			}
			return 0, fmt.Errorf("%w: %s length %d with dataLen %d", ErrBadLength, typ, size, dataLen)
		}
		m.Type = typ
		m.Entity = Entity(le.Uint32(b[8:]))
		m.Component = ComponentID(le.Uint32(b[12:]))
		m.Timestamp = Timestamp(le.Uint32(b[16:]))
		if typ == PutComponentNetwork {
			m.NetworkID = le.Uint32(b[20:])
		} else {
			m.NetworkID = 0
		}
		m.Data = b[hdr:size:size]
	case DeleteComponent, DeleteComponentNetwork:
		want := deleteCompSize
		if typ == DeleteComponentNetwork {
			want = deleteCompNetSz
		}
		if size != want {
			return 0, fmt.Errorf("%w: %s length %d, want %d", ErrBadLength, typ, size, want)
		}
		m.Type = typ
		m.Entity = Entity(le.Uint32(b[8:]))
		m.Component = ComponentID(le.Uint32(b[12:]))
		m.Timestamp = Timestamp(le.Uint32(b[16:]))
		if typ == DeleteComponentNetwork {
			m.NetworkID = le.Uint32(b[20:])
		} else {
			m.NetworkID = 0
		}
		m.Data = nil
	case DeleteEntity, DeleteEntityNetwork:
		want := deleteEntitySize
		if typ == DeleteEntityNetwork {
			want = deleteEntNetSize
		}
		if size != want {
			return 0, fmt.Errorf("%w: %s length %d, want %d", ErrBadLength, typ, size, want)
		}
		m.Type = typ
		m.Entity = Entity(le.Uint32(b[8:]))
		m.Component = 0
		m.Timestamp = 0
		if typ == DeleteEntityNetwork {
			m.NetworkID = le.Uint32(b[12:])
		} else {
			m.NetworkID = 0
		}
		m.Data = nil
	default:
		*m = Message{Type: typ, Data: b[HeaderSize:size:size]}
	}
	return size, nil
}

// Reader reads a stream of concatenated messages from one buffer. Every successful step consumes
// at least 8 bytes and nothing is read past the end, so a Reader always terminates. Messages of
// unknown types are skipped (they have a valid length by the time they are skipped). The zero
// Reader reads an empty stream; call Reset to give it a buffer.
type Reader struct {
	// MaxMessageSize caps the length field of every message. If zero, DefaultMaxMessageSize.
	MaxMessageSize int

	buf     []byte
	off     int
	skipped int
	err     error
}

// Reset starts reading b from its beginning. MaxMessageSize is kept.
func (r *Reader) Reset(b []byte) {
	r.buf, r.off, r.skipped, r.err = b, 0, 0, nil
}

// Next decodes the next known message into m (m.Data aliases the buffer). It returns io.EOF at
// the end of the stream and a *StreamError for a malformed message; both are sticky.
func (r *Reader) Next(m *Message) error {
	if r.err != nil {
		return r.err
	}
	limit := r.MaxMessageSize
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	for r.off < len(r.buf) {
		n, err := consumeMessage(r.buf[r.off:], m, limit)
		if err != nil {
			r.err = &StreamError{Offset: r.off, Err: err}
			return r.err
		}
		r.off += n
		if m.Type.Known() {
			return nil
		}
		r.skipped++
	}
	r.err = io.EOF
	return r.err
}

// Offset returns the offset of the next message to read (after an error: of the bad message).
func (r *Reader) Offset() int { return r.off }

// Skipped returns how many messages of unknown types were skipped so far.
func (r *Reader) Skipped() int { return r.skipped }
