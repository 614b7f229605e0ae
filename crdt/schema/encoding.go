package schema

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Kind names how a property's value is encoded. The replica stores the encoded bytes and the wire
// carries them unchanged; the kind tells both sides how long the value is and which bytes are valid.
type Kind uint8

const (
	// KindRaw is opaque bytes: exactly Size bytes, or (Size 0) a uint16 LE length and at most
	// MaxValueSize bytes.
	KindRaw Kind = iota
	// KindQuantized is Count fixed-point numbers in [Min, Max] with resolution Step, each the index
	// round((v−Min)/Step) as an unsigned little-endian integer of the fewest bytes that hold
	// round((Max−Min)/Step).
	KindQuantized
	// KindFloat16 is Count IEEE 754 binary16 numbers, 2 bytes LE each.
	KindFloat16
	// KindUvarint is Count unsigned LEB128 integers (1–10 bytes each, minimal). The value is
	// self-delimiting: no length prefix on the wire.
	KindUvarint
	// KindVarint is Count signed integers, zigzag-mapped to unsigned ((v<<1)^(v>>63)) then LEB128 as
	// KindUvarint.
	KindVarint
	kindEnd
)

func (k Kind) String() string {
	switch k {
	case KindRaw:
		return "raw"
	case KindQuantized:
		return "quantized"
	case KindFloat16:
		return "float16"
	case KindUvarint:
		return "uvarint"
	case KindVarint:
		return "varint"
	default:
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
}

const (
	// MaxCount is the most numbers one encoded property may hold.
	MaxCount = 64
	// MaxQuantizedSteps is the largest round((Max−Min)/Step): every index is an integer a float64
	// (and a JavaScript number) holds exactly, so the widest quantized number is 7 bytes.
	MaxQuantizedSteps = 1<<53 - 1
	// MaxVarintLen is the longest LEB128 encoding of a 64-bit integer.
	MaxVarintLen = 10
	// float16NaN is the one NaN the encoders write and the decoders accept (quiet, sign clear).
	float16NaN = 0x7e00
)

// Encoding is a property's compact encoding. The zero Encoding is KindRaw.
type Encoding struct {
	Kind Kind
	// Count is how many numbers the property holds (x and y: 2); 0 means 1. Not for KindRaw.
	Count int
	// Min, Max and Step define KindQuantized: Min < Max, Step > 0, all finite. Numbers outside
	// [Min, Max] clamp to it. Zero for every other kind.
	Min, Max, Step float64
}

// Quantized returns a KindQuantized encoding of count numbers over [min, max] with resolution step.
func Quantized(count int, min, max, step float64) Encoding {
	return Encoding{Kind: KindQuantized, Count: count, Min: min, Max: max, Step: step}
}

// count is Count with 0 read as 1.
func (e Encoding) count() int { return max(e.Count, 1) }

// Steps is the largest index of a KindQuantized encoding, round((Max−Min)/Step).
func (e Encoding) Steps() uint64 {
	// (Max−Min)/Step ≥ 0 here, where Go's half-away-from-zero math.Round and JavaScript's
	// half-up Math.round agree.
	return uint64(math.Round((e.Max - e.Min) / e.Step))
}

// Width is the size in bytes of one number: the fewest bytes holding Steps for KindQuantized, 2
// for KindFloat16, 0 (variable) otherwise.
func (e Encoding) Width() int {
	switch e.Kind {
	case KindQuantized:
		return max(1, (bits.Len64(e.Steps())+7)/8)
	case KindFloat16:
		return 2
	default:
		return 0
	}
}

// validate checks e and returns it normalised (Count 1 for 0) with the fixed size of its values (0
// for raw and varint kinds).
func (e Encoding) validate() (Encoding, int, error) {
	if e.Kind >= kindEnd {
		return e, 0, fmt.Errorf("unknown encoding %d", e.Kind)
	}
	if e.Kind != KindQuantized && (e.Min != 0 || e.Max != 0 || e.Step != 0) {
		return e, 0, fmt.Errorf("%s encoding with a range", e.Kind)
	}
	if e.Kind == KindRaw {
		if e.Count != 0 {
			return e, 0, fmt.Errorf("raw encoding with count %d", e.Count)
		}
		return e, 0, nil
	}
	if e.Count < 0 || e.Count > MaxCount {
		return e, 0, fmt.Errorf("count %d (want 1..%d)", e.Count, MaxCount)
	}
	e.Count = e.count()
	switch e.Kind {
	case KindQuantized:
		fin := func(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
		if !fin(e.Min) || !fin(e.Max) || !fin(e.Step) || !(e.Min < e.Max) || !(e.Step > 0) {
			return e, 0, fmt.Errorf("quantized range [%v, %v] step %v (want finite, min < max, step > 0)", e.Min, e.Max, e.Step)
		}
		if q := (e.Max - e.Min) / e.Step; !(q >= 0.5 && q <= MaxQuantizedSteps) {
			return e, 0, fmt.Errorf("quantized range [%v, %v] step %v has %v steps (want 1..%d)", e.Min, e.Max, e.Step, q, uint64(MaxQuantizedSteps))
		}
		return e, e.Count * e.Width(), nil
	case KindFloat16:
		return e, 2 * e.Count, nil
	default:
		return e, 0, nil
	}
}

// appendFingerprint appends the canonical description of e (after the size word).
func (e Encoding) appendFingerprint(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Kind))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Count))
	if e.Kind == KindQuantized {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Min))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Max))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Step))
	}
	return b
}

// scan returns the length of the encoded value at the start of b, checking every number in it.
// e is a validated non-raw encoding.
func (e Encoding) scan(b []byte) (int, error) {
	n := e.Count
	switch e.Kind {
	case KindQuantized:
		w := e.Width()
		if len(b) < n*w {
			return 0, ErrShortData
		}
		steps := e.Steps()
		for k := range n {
			if uintLE(b[k*w:], w) > steps {
				return 0, fmt.Errorf("%w: quantized index above %d", ErrBadValue, steps)
			}
		}
		return n * w, nil
	case KindFloat16:
		if len(b) < 2*n {
			return 0, ErrShortData
		}
		for k := range n {
			if !validFloat16(binary.LittleEndian.Uint16(b[2*k:])) {
				return 0, fmt.Errorf("%w: float16 NaN other than %#04x", ErrBadValue, float16NaN)
			}
		}
		return 2 * n, nil
	default: // varints: the zigzag mapping is a bijection, so both kinds check the same way
		off := 0
		for range n {
			_, m, err := uvarint(b[off:])
			if err != nil {
				return 0, err
			}
			off += m
		}
		return off, nil
	}
}

func uintLE(b []byte, w int) uint64 {
	var v uint64
	for i := w - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func appendUintLE(dst []byte, v uint64, w int) []byte {
	for range w {
		dst = append(dst, byte(v))
		v >>= 8
	}
	return dst
}

// QuantizeIndex returns the index AppendQuantized writes for v: v clamped to [Min, Max] (NaN reads
// as Min), then round((v−Min)/Step), at most Steps.
func QuantizeIndex(e Encoding, v float64) uint64 {
	if !(v >= e.Min) {
		v = e.Min
	} else if v > e.Max {
		v = e.Max
	}
	return min(uint64(math.Round((v-e.Min)/e.Step)), e.Steps())
}

// DequantizeIndex returns the number index i stands for, Min + i·Step.
func DequantizeIndex(e Encoding, i uint64) float64 {
	// The conversion forbids fusing into an FMA, which JavaScript cannot do.
	return e.Min + float64(float64(i)*e.Step)
}

// AppendQuantized appends one number of quantized encoding e (see QuantizeIndex): Width bytes LE.
// e must be a valid KindQuantized encoding (as NewTable accepts).
func AppendQuantized(dst []byte, e Encoding, v float64) []byte {
	return appendUintLE(dst, QuantizeIndex(e, v), e.Width())
}

// ConsumeQuantized decodes one number of quantized encoding e from the start of b and returns it
// with the rest of b. It fails with ErrShortData on fewer than Width bytes and ErrBadValue on an
// index above Steps or an invalid e.
func ConsumeQuantized(b []byte, e Encoding) (float64, []byte, error) {
	if e.Kind != KindQuantized {
		return 0, b, fmt.Errorf("%w: %s is not a quantized encoding", ErrBadValue, e.Kind)
	}
	if _, _, err := e.validate(); err != nil {
		return 0, b, fmt.Errorf("%w: %v", ErrBadValue, err)
	}
	w := e.Width()
	if len(b) < w {
		return 0, b, fmt.Errorf("%w: quantized number needs %d bytes, %d left", ErrShortData, w, len(b))
	}
	i := uintLE(b, w)
	if i > e.Steps() {
		return 0, b, fmt.Errorf("%w: quantized index %d above %d", ErrBadValue, i, e.Steps())
	}
	return DequantizeIndex(e, i), b[w:], nil
}

// Float16Bits returns the IEEE 754 binary16 nearest to v, ties to even: magnitudes from 65520 up
// are ±Inf, below 2⁻²⁵ ±0 (the sign kept), every NaN is 0x7e00. It rounds once, from float64.
func Float16Bits(v float64) uint16 {
	if math.IsNaN(v) {
		return float16NaN
	}
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	switch {
	case v >= 65520: // halfway between 65504 (the largest) and 65536 rounds to even: up, to Inf
		return sign | 0x7c00
	case v < 0x1p-14: // subnormal: units of 2⁻²⁴ (rounding up to 0x400 is the smallest normal)
		return sign | uint16(roundEven(v*0x1p24))
	}
	// Normal: v = m·2^exp with m in [1, 2). Every step is exact in float64 (scaling by a power of
	// two, Sterbenz subtraction), so JavaScript computes the same bits.
	exp := int(math.Float64bits(v)>>52&0x7ff) - 1023
	frac := roundEven((v*math.Ldexp(1, -exp) - 1) * 1024)
	h := uint16(exp+15)<<10 + uint16(frac) // frac 1024 carries into the exponent
	return sign | h
}

// roundEven rounds a non-negative float64 to the nearest integer, ties to even.
func roundEven(x float64) uint64 {
	r := math.Floor(x)
	if d := x - r; d > 0.5 || d == 0.5 && math.Mod(r, 2) == 1 {
		r++
	}
	return uint64(r)
}

// Float16FromBits returns the number binary16 h stands for (any NaN is NaN).
func Float16FromBits(h uint16) float64 {
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	var v float64
	switch exp {
	case 0:
		v = frac * 0x1p-24
	case 31:
		if frac != 0 {
			return math.NaN()
		}
		v = math.Inf(1)
	default:
		v = math.Ldexp(1024+frac, exp-25)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

// validFloat16 reports whether h is an encoding Float16Bits writes: any but a NaN other than 0x7e00.
func validFloat16(h uint16) bool {
	return h&0x7c00 != 0x7c00 || h&0x3ff == 0 || h == float16NaN
}

// AppendFloat16 appends Float16Bits(v), 2 bytes LE.
func AppendFloat16(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint16(dst, Float16Bits(v))
}

// ConsumeFloat16 decodes one binary16 from the start of b and returns it with the rest of b. It
// fails with ErrShortData on fewer than 2 bytes and ErrBadValue on a NaN other than 0x7e00 (one
// number, one encoding).
func ConsumeFloat16(b []byte) (float64, []byte, error) {
	if len(b) < 2 {
		return 0, b, fmt.Errorf("%w: float16 needs 2 bytes, %d left", ErrShortData, len(b))
	}
	h := binary.LittleEndian.Uint16(b)
	if !validFloat16(h) {
		return 0, b, fmt.Errorf("%w: float16 NaN %#04x (only %#04x)", ErrBadValue, h, float16NaN)
	}
	return Float16FromBits(h), b[2:], nil
}

// AppendUvarint appends v as unsigned LEB128 (7 bits a byte, least significant first, the high bit
// set on every byte but the last).
func AppendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// ConsumeUvarint decodes one unsigned LEB128 from the start of b and returns it with the rest of b.
// It fails with ErrShortData when b ends inside it and ErrBadValue on an encoding AppendUvarint does
// not write: longer than needed (a last byte 0x00 after others) or above 2⁶⁴−1.
func ConsumeUvarint(b []byte) (uint64, []byte, error) {
	v, n, err := uvarint(b)
	if err != nil {
		return 0, b, err
	}
	return v, b[n:], nil
}

func uvarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := range min(len(b), MaxVarintLen) {
		c := b[i]
		if i == MaxVarintLen-1 && c > 1 {
			return 0, 0, fmt.Errorf("%w: varint above 2^64-1", ErrBadValue)
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, 0, fmt.Errorf("%w: varint longer than needed", ErrBadValue)
			}
			return v, i + 1, nil
		}
	}
	if len(b) >= MaxVarintLen {
		return 0, 0, fmt.Errorf("%w: varint longer than %d bytes", ErrBadValue, MaxVarintLen)
	}
	return 0, 0, fmt.Errorf("%w: varint cut after %d bytes", ErrShortData, len(b))
}

// AppendVarint appends v zigzag-mapped ((v<<1)^(v>>63): 0, −1, 1, −2 … become 0, 1, 2, 3 …) as
// unsigned LEB128.
func AppendVarint(dst []byte, v int64) []byte {
	return AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// ConsumeVarint decodes one zigzag LEB128 from the start of b (errors as ConsumeUvarint).
func ConsumeVarint(b []byte) (int64, []byte, error) {
	u, rest, err := ConsumeUvarint(b)
	if err != nil {
		return 0, b, err
	}
	return int64(u>>1) ^ -int64(u&1), rest, nil
}
