package schema

import (
	"encoding/binary"
	"fmt"
)

// Deltas: a numeric property's value written as its difference from an earlier value (the
// baseline) that the receiver is known to hold, for DeltaUpdates (docs/protocol.md §2.10). The
// difference is one zigzag LEB128 per number (AppendVarint), so a value that moved a little takes a
// byte or two per number whatever its full width.

// MaxDeltaValue is the largest value (in bytes, as stored) that serves as a baseline: a peer keeps
// a few baselines per property, so they stay small. Larger values always travel whole.
const MaxDeltaValue = 32

// DeltaCapable reports whether p's values may travel as differences: a quantized, float16,
// uvarint or varint encoding, or raw bytes of a fixed size of 1, 2, 4 or 8 (one little-endian
// unsigned integer, such as a time or a counter).
func (p *Property) DeltaCapable() bool {
	if p.Encoding.Kind != KindRaw {
		return true
	}
	switch p.Size {
	case 1, 2, 4, 8:
		return true
	}
	return false
}

// DeltaMask returns the mask of s's delta-capable properties.
func (s *Schema) DeltaMask() uint32 {
	if s.deltaSet {
		return s.deltaMask
	}
	var m uint32
	for i := range s.Properties {
		if s.Properties[i].DeltaCapable() {
			m |= 1 << i
		}
	}
	return m
}

// deltaNumbers returns how many numbers a value of p holds.
func (p *Property) deltaNumbers() int {
	if p.Encoding.Kind == KindRaw {
		return 1
	}
	return p.Encoding.count()
}

// deltaWidth is the width of one number of p's values for number: Encoding.Width for
// quantized, computed once per value rather than per number.
func (p *Property) deltaWidth() int {
	if p.Encoding.Kind == KindQuantized {
		if p.width > 0 {
			return p.width
		}
		return p.Encoding.Width()
	}
	return 0
}

// number reads the next number of value v of p at offset *off as the integer the delta works
// on: the quantized index (w bytes, from deltaWidth), the float16 bits, the uvarint, the varint
// as int64 bits, the raw integer. v must be a valid value of p.
func (p *Property) number(v []byte, off *int, w int) uint64 {
	switch p.Encoding.Kind {
	case KindQuantized:
		x := uintLE(v[*off:], w)
		*off += w
		return x
	case KindFloat16:
		x := uint64(binary.LittleEndian.Uint16(v[*off:]))
		*off += 2
		return x
	case KindUvarint, KindVarint:
		x, n, _ := uvarint(v[*off:])
		*off += n
		if p.Encoding.Kind == KindVarint {
			x = uint64(int64(x>>1) ^ -int64(x&1))
		}
		return x
	default:
		x := uintLE(v[*off:], p.Size)
		*off += p.Size
		return x
	}
}

// AppendDelta appends the difference from base to v, two valid values of the delta-capable
// property p (as the replica stores them): per number, the difference as AppendVarint writes it —
// of quantized indexes and float16 bits as integers, of uvarints, varints and 8-byte raw values
// modulo 2⁶⁴, of 1-, 2- and 4-byte raw values modulo 2^(8·size), taken as the signed difference of
// least magnitude.
func AppendDelta(dst []byte, p *Property, base, v []byte) []byte {
	ob, ov := 0, 0
	w := p.deltaWidth()
	for range p.deltaNumbers() {
		b, x := p.number(base, &ob, w), p.number(v, &ov, w)
		d := int64(x - b)
		if p.Encoding.Kind == KindRaw && p.Size < 8 {
			shift := 64 - 8*uint(p.Size)
			d = d << shift >> shift // sign-extend the difference modulo 2^(8·size)
		}
		dst = AppendVarint(dst, d)
	}
	return dst
}

// ApplyDelta reads the difference at the start of d (as AppendDelta writes it), applies it to
// base, a valid value of the delta-capable property p, and appends the resulting value to dst. It
// returns dst and the number of bytes of d read. It fails with ErrShortData when d ends inside the
// difference and ErrBadValue on a varint AppendVarint does not write or a result outside what p
// holds (a quantized index above Steps or below 0, a float16 outside 0..0xffff or a NaN other than
// 0x7e00, a raw difference beyond ±2^(8·size−1)); dst is then returned unchanged.
func ApplyDelta(dst []byte, p *Property, base, d []byte) ([]byte, int, error) {
	start := len(dst)
	ob, od := 0, 0
	e := p.Encoding
	w := p.deltaWidth()
	var steps uint64
	if e.Kind == KindQuantized {
		steps = e.Steps()
	}
	for range p.deltaNumbers() {
		b := p.number(base, &ob, w)
		zz, n, err := uvarint(d[od:])
		if err != nil {
			return dst[:start], 0, err
		}
		od += n
		delta := int64(zz>>1) ^ -int64(zz&1)
		x := b + uint64(delta)
		switch e.Kind {
		case KindQuantized:
			if delta >= 0 && uint64(delta) > steps-b || delta < 0 && uint64(-(delta+1)) >= b {
				return dst[:start], 0, fmt.Errorf("%w: quantized delta %d from index %d leaves 0..%d", ErrBadValue, delta, b, steps)
			}
			dst = appendUintLE(dst, x, w)
		case KindFloat16:
			if delta >= 0 && uint64(delta) > 0xffff-b || delta < 0 && uint64(-(delta+1)) >= b || !validFloat16(uint16(x)) {
				return dst[:start], 0, fmt.Errorf("%w: float16 delta %d from %#04x", ErrBadValue, delta, b)
			}
			dst = binary.LittleEndian.AppendUint16(dst, uint16(x))
		case KindUvarint:
			dst = AppendUvarint(dst, x)
		case KindVarint:
			dst = AppendVarint(dst, int64(x))
		default:
			if p.Size < 8 {
				if lim := int64(1) << (8*p.Size - 1); delta < -lim || delta >= lim {
					return dst[:start], 0, fmt.Errorf("%w: %d-byte delta %d beyond ±%d", ErrBadValue, p.Size, delta, lim)
				}
			}
			dst = appendUintLE(dst, x, p.Size)
		}
	}
	return dst, od, nil
}

// DeltaLen returns the length of the difference at the start of d for property p (its numbers'
// varints), without a baseline: a receiver that lacks the baseline steps over it. Errors are
// ApplyDelta's varint errors.
func DeltaLen(p *Property, d []byte) (int, error) {
	off := 0
	for range p.deltaNumbers() {
		_, n, err := uvarint(d[off:])
		if err != nil {
			return 0, err
		}
		off += n
	}
	return off, nil
}
