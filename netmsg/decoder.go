package netmsg

import (
	"encoding/binary"
	"fmt"
	"math"
)

// decoder is a cursor over one message. Its reads are sticky: after the
// first failure every read returns a zero value and err keeps the first
// *ProtocolError, so decode functions check err once per element.
type decoder struct {
	b   []byte
	off int
	t   Type
	err *ProtocolError
}

// failf records the first error, found at byte offset at.
func (d *decoder) failf(at int, sentinel error, format string, args ...any) {
	if d.err != nil {
		return
	}
	d.err = &ProtocolError{Type: d.t, Offset: at, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

// have reports whether n more bytes are available, recording ErrShortBuffer
// when they are not. It is small enough to inline; the failure path is not.
func (d *decoder) have(n int, what string) bool {
	if d.err == nil && n <= len(d.b)-d.off {
		return true
	}
	d.short(n, what)
	return false
}

//go:noinline
func (d *decoder) short(n int, what string) {
	d.failf(d.off, ErrShortBuffer, "%s needs %d bytes, %d left", what, n, len(d.b)-d.off)
}

func (d *decoder) u8(what string) uint8 {
	if !d.have(1, what) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) u16(what string) uint16 {
	if !d.have(2, what) {
		return 0
	}
	v := binary.LittleEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *decoder) u32(what string) uint32 {
	if !d.have(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64(what string) uint64 {
	if !d.have(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// blob returns the next n bytes, aliasing the input with its capacity
// clipped so that appending to it cannot overwrite the bytes that follow.
func (d *decoder) blob(n uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.failf(d.off, ErrShortBuffer, "%s of %d bytes, %d left", what, n, len(d.b)-d.off)
		return nil
	}
	end := d.off + int(n)
	s := d.b[d.off:end:end]
	d.off = end
	return s
}

// count reads a u32 element count and checks that count elements of at
// least minSize bytes each fit in the remaining input, so that no slice is
// grown for elements the input cannot hold.
func (d *decoder) count(what string, minSize int) int {
	at := d.off
	c := d.u32(what)
	if d.err != nil {
		return 0
	}
	left := len(d.b) - d.off
	if uint64(c)*uint64(minSize) > uint64(left) {
		d.failf(at, ErrShortBuffer, "%s %d needs at least %d bytes, %d left", what, c, uint64(c)*uint64(minSize), left)
		return 0
	}
	return int(c)
}

// msgType reads the type byte and checks it is want.
func (d *decoder) msgType(want Type) {
	d.t = want
	if !d.have(1, "type") {
		return
	}
	if got := Type(d.b[d.off]); got != want {
		d.t = got
		d.failf(d.off, ErrWrongType, "got %v, want %v", got, want)
		return
	}
	d.off++
}

// extFrame reads the type byte and frame header of an extension message of
// type want, restricts the decoder to the frame and returns the body length.
func (d *decoder) extFrame(want Type) int {
	d.msgType(want)
	n := d.u32("body length")
	if d.err != nil {
		return 0
	}
	if uint64(n) > uint64(len(d.b)-d.off) {
		d.failf(d.off, ErrShortBuffer, "body of %d bytes, %d left", n, len(d.b)-d.off)
		return 0
	}
	d.b = d.b[:d.off+int(n)]
	return int(n)
}

// result returns the bytes consumed or the error.
func (d *decoder) result() (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	return d.off, nil
}

// resize returns s with length n, reusing its array when it is large enough.
// Elements are not cleared: decoders overwrite every field.
func resize[S ~[]E, E any](s S, n int) S {
	if cap(s) < n {
		return make(S, n)
	}
	return s[:n]
}

// setString sets *dst to b, keeping the current string (and allocating
// nothing) when it already holds those bytes.
func setString(dst *string, b []byte) {
	if *dst != string(b) {
		*dst = string(b)
	}
}

// Encoding helpers. They panic on values the field cannot express: such
// values are bugs in the calling code, never input from the network.

func appendLen32(dst []byte, n int, what string) []byte {
	if uint64(n) > math.MaxUint32 {
		panic(fmt.Sprintf("netmsg: %s %d does not fit in u32", what, n))
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}

func appendBlob32(dst, b []byte, what string) []byte {
	dst = appendLen32(dst, len(b), what)
	return append(dst, b...)
}
