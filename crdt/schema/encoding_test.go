package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
)

// posEnc is the bench's position encoding: 1/256 over [−1024, 1024], 3 bytes a number.
var posEnc = Quantized(2, -1024, 1024, 1.0/256)

// encTable holds one property of every kind (and a raw variable one between them).
var encTable = MustTable(Schema{ID: 40, Name: "enc", Properties: []Property{
	{Name: "pos", Component: 1024, Encoding: posEnc},
	{Name: "angle", Component: 1025, Encoding: Quantized(1, 0, 1, 1.0/255)},
	{Name: "vel", Component: 1026, Encoding: Encoding{Kind: KindFloat16, Count: 3}},
	{Name: "name", Component: 1027},
	{Name: "seq", Component: 1028, Encoding: Encoding{Kind: KindUvarint}},
	{Name: "delta", Component: 1029, Encoding: Encoding{Kind: KindVarint, Count: 2}},
	{Name: "tag", Component: 1030, Size: 2},
}})

func encSchema(t testing.TB) *Schema {
	t.Helper()
	s, _ := encTable.Lookup(40)
	return s
}

func TestEncodingSizes(t *testing.T) {
	s := encSchema(t)
	for i, want := range []int{6, 1, 6, 0, 0, 0, 2} {
		if got := s.Properties[i].Size; got != want {
			t.Errorf("%s: Size %d, want %d", s.Properties[i].Name, got, want)
		}
	}
	if c := s.Properties[4].Encoding.Count; c != 1 {
		t.Errorf("Count 0 normalised to %d, want 1", c)
	}
	for _, tc := range []struct {
		e     Encoding
		width int
		steps uint64
	}{
		{posEnc, 3, 1 << 19},
		{Quantized(1, 0, 255, 1), 1, 255},
		{Quantized(1, 0, 256, 1), 2, 256},
		{Quantized(1, -1, 1, 2), 1, 1},
		{Quantized(1, 0, 1<<53-1, 1), 7, 1<<53 - 1},
		{Quantized(1, -32768, 32767, 1), 2, 65535},
		{Encoding{Kind: KindFloat16}, 2, 0},
		{Encoding{Kind: KindUvarint}, 0, 0},
	} {
		if w := tc.e.Width(); w != tc.width {
			t.Errorf("%+v: Width %d, want %d", tc.e, w, tc.width)
		}
		if tc.e.Kind == KindQuantized && tc.e.Steps() != tc.steps {
			t.Errorf("%+v: Steps %d, want %d", tc.e, tc.e.Steps(), tc.steps)
		}
	}
}

func TestNewTableEncodingValidation(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	bad := map[string]Property{
		"unknown kind":          {Encoding: Encoding{Kind: kindEnd}},
		"raw with count":        {Encoding: Encoding{Count: 2}},
		"raw with range":        {Size: 4, Encoding: Encoding{Max: 1}},
		"float16 with range":    {Encoding: Encoding{Kind: KindFloat16, Step: 1}},
		"negative count":        {Encoding: Encoding{Kind: KindUvarint, Count: -1}},
		"count above MaxCount":  {Encoding: Encoding{Kind: KindFloat16, Count: MaxCount + 1}},
		"min = max":             {Encoding: Quantized(1, 1, 1, 1)},
		"min > max":             {Encoding: Quantized(1, 2, 1, 1)},
		"zero step":             {Encoding: Quantized(1, 0, 1, 0)},
		"negative step":         {Encoding: Quantized(1, 0, 1, -1)},
		"NaN min":               {Encoding: Quantized(1, nan, 1, 1)},
		"infinite max":          {Encoding: Quantized(1, 0, inf, 1)},
		"step wider than range": {Encoding: Quantized(1, 0, 1, 3)},
		"2^53 steps":            {Encoding: Quantized(1, 0, 1<<53, 1)},
		"size disagrees":        {Size: 4, Encoding: Quantized(2, 0, 255, 1)},
		"varint with size":      {Size: 4, Encoding: Encoding{Kind: KindVarint}},
	}
	for name, p := range bad {
		p.Component = 1024
		if _, err := NewTable(Schema{ID: 1, Properties: []Property{p}}); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("%s: %v, want ErrInvalidSchema", name, err)
		}
	}
	if _, err := NewTable(Schema{ID: 1, Properties: []Property{{Component: 1024, Size: 2, Encoding: Quantized(2, 0, 255, 1)}}}); err != nil {
		t.Errorf("a Size that matches the encoding: %v", err)
	}
}

func TestFingerprintEncodings(t *testing.T) {
	one := func(p Property) uint64 {
		p.Component = 1100
		return MustTable(Schema{ID: 1, Properties: []Property{p}}).Fingerprint()
	}
	// The documented description, computed independently.
	var desc []byte
	desc = binary.LittleEndian.AppendUint32(desc, 1)
	desc = binary.LittleEndian.AppendUint32(desc, 1)
	desc = binary.LittleEndian.AppendUint32(desc, 1100)
	desc = binary.LittleEndian.AppendUint32(desc, 6|1<<31)
	desc = binary.LittleEndian.AppendUint32(desc, uint32(KindQuantized))
	desc = binary.LittleEndian.AppendUint32(desc, 2)
	for _, f := range []float64{-1024, 1024, 1.0 / 256} {
		desc = binary.LittleEndian.AppendUint64(desc, math.Float64bits(f))
	}
	h := fnv.New64a()
	h.Write(desc)
	fp := one(Property{Encoding: posEnc})
	if fp != h.Sum64() {
		t.Fatalf("fingerprint %016x, want %016x from the documented description", fp, h.Sum64())
	}
	if got := one(Property{Size: 6, Encoding: posEnc}); got != fp {
		t.Fatal("an explicit Size that matches changed the fingerprint")
	}
	if a, b := one(Property{Encoding: Encoding{Kind: KindVarint}}), one(Property{Encoding: Encoding{Kind: KindVarint, Count: 1}}); a != b {
		t.Fatal("Count 0 and Count 1 differ")
	}
	seen := map[uint64]string{fp: "pos"}
	for name, p := range map[string]Property{
		"raw 6 bytes":     {Size: 6},
		"raw variable":    {},
		"float16 ×3":      {Encoding: Encoding{Kind: KindFloat16, Count: 3}},
		"float16 ×2":      {Encoding: Encoding{Kind: KindFloat16, Count: 2}},
		"uvarint":         {Encoding: Encoding{Kind: KindUvarint}},
		"varint":          {Encoding: Encoding{Kind: KindVarint}},
		"varint ×2":       {Encoding: Encoding{Kind: KindVarint, Count: 2}},
		"other min":       {Encoding: Quantized(2, -1023, 1024, 1.0/256)},
		"other max":       {Encoding: Quantized(2, -1024, 1023, 1.0/256)},
		"other step":      {Encoding: Quantized(2, -1024, 1024, 1.0/128)},
		"one coordinate":  {Encoding: Quantized(1, -1024, 1024, 1.0/256)},
		"three of width2": {Encoding: Quantized(3, 0, 1000, 1)},
	} {
		f := one(p)
		if other, dup := seen[f]; dup {
			t.Errorf("%s and %s share fingerprint %016x", name, other, f)
		}
		seen[f] = name
	}
}

func TestQuantized(t *testing.T) {
	e := Quantized(1, -1024, 1024, 1.0/256)
	for _, tc := range []struct {
		v    float64
		want uint64
	}{
		{-1024, 0}, {1024, 1 << 19}, {0, 1 << 18}, {-2000, 0}, {5000, 1 << 19}, {math.NaN(), 0},
		{math.Inf(-1), 0}, {math.Inf(1), 1 << 19}, {1.0 / 512, 1<<18 + 1}, {-1.0 / 512, 1 << 18}, // half up
		{1.0/256 + 1e-9, 1<<18 + 1}, {math.Copysign(0, -1), 1 << 18},
	} {
		if got := QuantizeIndex(e, tc.v); got != tc.want {
			t.Errorf("QuantizeIndex(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		v := rng.Float64()*2048 - 1024
		b := AppendQuantized(nil, e, v)
		if len(b) != 3 {
			t.Fatalf("%d bytes", len(b))
		}
		got, rest, err := ConsumeQuantized(append(b, 0xaa), e)
		if err != nil || len(rest) != 1 || math.Abs(got-v) > 1.0/512 {
			t.Fatalf("%v → %x → %v (rest %x), %v", v, b, got, rest, err)
		}
		if again := AppendQuantized(nil, e, got); !bytes.Equal(again, b) {
			t.Fatalf("%v re-encodes as %x, was %x", got, again, b)
		}
	}
	if _, _, err := ConsumeQuantized([]byte{1, 0}, e); !errors.Is(err, ErrShortData) {
		t.Errorf("2 bytes: %v", err)
	}
	if _, _, err := ConsumeQuantized([]byte{1, 0, 8}, e); !errors.Is(err, ErrBadValue) {
		t.Errorf("index 2^19+1: %v", err)
	}
	if _, _, err := ConsumeQuantized([]byte{0, 0, 0}, Encoding{Kind: KindFloat16}); !errors.Is(err, ErrBadValue) {
		t.Errorf("not quantized: %v", err)
	}
	if _, _, err := ConsumeQuantized([]byte{0, 0, 0}, Quantized(1, 0, 0, 1)); !errors.Is(err, ErrBadValue) {
		t.Errorf("invalid range: %v", err)
	}
}

// TestFloat16Exhaustive decodes every binary16 and re-encodes it, and checks that rounding picks
// the nearest (ties to even) for numbers between and around every pair of neighbours.
func TestFloat16Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		v := Float16FromBits(uint16(h))
		valid := validFloat16(uint16(h))
		if math.IsNaN(v) {
			if got := Float16Bits(v); got != float16NaN {
				t.Fatalf("NaN encodes as %#04x", got)
			}
			if _, _, err := ConsumeFloat16([]byte{byte(h), byte(h >> 8)}); (err == nil) != valid || valid != (h == float16NaN) {
				t.Fatalf("NaN %#04x: %v", h, err)
			}
			continue
		}
		if got := Float16Bits(v); got != uint16(h) {
			t.Fatalf("%#04x → %v → %#04x", h, v, got)
		}
		if !valid {
			t.Fatalf("%#04x not valid", h)
		}
		// Midpoints with the next larger magnitude: ties to even, just below and above round to the nearer.
		if h&0x7fff >= 0x7c00 {
			continue
		}
		next := Float16FromBits(uint16(h + 1))
		if h&0x7fff == 0x7bff {
			next = math.Copysign(65536, v)
		}
		mid := (v + next) / 2
		even := uint16(h)
		if h&1 == 1 {
			even = uint16(h + 1)
		}
		if got := Float16Bits(mid); got != even {
			t.Fatalf("midpoint %v of %#04x and next: %#04x, want %#04x", mid, h, got, even)
		}
		if got := Float16Bits(math.Nextafter(mid, v)); got != uint16(h) {
			t.Fatalf("just inside %v: %#04x, want %#04x", mid, got, h)
		}
		if got := Float16Bits(math.Nextafter(mid, next)); got != uint16(h+1) {
			t.Fatalf("just past %v: %#04x, want %#04x", mid, got, h+1)
		}
	}
	for _, tc := range []struct {
		v    float64
		want uint16
	}{
		{0, 0}, {math.Copysign(0, -1), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65519.99, 0x7bff},
		{65520, 0x7c00}, {1e300, 0x7c00}, {-1e300, 0xfc00}, {math.Inf(1), 0x7c00}, {math.Inf(-1), 0xfc00},
		{0x1p-24, 1}, {0x1p-25, 0}, {0x1.0000000000001p-25, 1}, {-0x1p-26, 0x8000}, {0x1p-14, 0x400},
		{math.SmallestNonzeroFloat64, 0}, {1.0 / 3, 0x3555}, {math.Pi, 0x4248},
	} {
		if got := Float16Bits(tc.v); got != tc.want {
			t.Errorf("Float16Bits(%v) = %#04x, want %#04x", tc.v, got, tc.want)
		}
	}
	if _, _, err := ConsumeFloat16([]byte{1}); !errors.Is(err, ErrShortData) {
		t.Errorf("1 byte: %v", err)
	}
}

func TestVarints(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want string
	}{
		{0, "\x00"}, {1, "\x01"}, {127, "\x7f"}, {128, "\x80\x01"}, {300, "\xac\x02"}, {16383, "\xff\x7f"},
		{16384, "\x80\x80\x01"}, {math.MaxUint64, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"},
	} {
		b := AppendUvarint(nil, tc.v)
		if string(b) != tc.want {
			t.Errorf("AppendUvarint(%d) = %x, want %x", tc.v, b, tc.want)
		}
		got, rest, err := ConsumeUvarint(append(b, 7))
		if err != nil || got != tc.v || !bytes.Equal(rest, []byte{7}) {
			t.Errorf("ConsumeUvarint(%x) = %d, %x, %v", b, got, rest, err)
		}
	}
	for _, tc := range []struct {
		v    int64
		want uint64
	}{{0, 0}, {-1, 1}, {1, 2}, {-2, 3}, {2147483647, 4294967294}, {-2147483648, 4294967295},
		{math.MaxInt64, math.MaxUint64 - 1}, {math.MinInt64, math.MaxUint64}} {
		b := AppendVarint(nil, tc.v)
		if !bytes.Equal(b, AppendUvarint(nil, tc.want)) {
			t.Errorf("AppendVarint(%d) = %x, want zigzag %d", tc.v, b, tc.want)
		}
		if got, _, err := ConsumeVarint(b); err != nil || got != tc.v {
			t.Errorf("ConsumeVarint(%x) = %d, %v", b, got, err)
		}
	}
	for in, want := range map[string]error{
		"":             ErrShortData,
		"\x80":         ErrShortData,
		"\xff\xff\xff": ErrShortData,
		"\x80\x00":     ErrBadValue, // 0 in two bytes
		"\xff\x00":     ErrBadValue,
		"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02": ErrBadValue, // 2^64
		"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81": ErrBadValue,
		"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80": ErrBadValue,
	} {
		if _, rest, err := ConsumeUvarint([]byte(in)); !errors.Is(err, want) || len(rest) != len(in) {
			t.Errorf("ConsumeUvarint(%x): %v (rest %d bytes), want %v", in, err, len(rest), want)
		}
		if _, _, err := ConsumeVarint([]byte(in)); !errors.Is(err, want) {
			t.Errorf("ConsumeVarint(%x): %v, want %v", in, err, want)
		}
	}
}

// encValue returns a valid random value of an encoded property (raw ones as randValue).
func encValue(rng *rand.Rand, s *Schema, i int) []byte {
	p := &s.Properties[i]
	var b []byte
	for range p.Encoding.count() {
		switch p.Encoding.Kind {
		case KindQuantized:
			b = AppendQuantized(b, p.Encoding, p.Encoding.Min+rng.Float64()*(p.Encoding.Max-p.Encoding.Min))
		case KindFloat16:
			b = AppendFloat16(b, rng.NormFloat64()*100)
		case KindUvarint:
			b = AppendUvarint(b, rng.Uint64()>>rng.IntN(64))
		case KindVarint:
			b = AppendVarint(b, rng.Int64()>>rng.IntN(64)*int64(1-2*rng.IntN(2)))
		default:
			return randValue(rng, s, i)
		}
	}
	return b
}

func TestEncodersAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if a := testing.AllocsPerRun(100, func() {
		b := AppendQuantized(buf[:0], posEnc, 12.5)
		b = AppendFloat16(b, 1.5)
		b = AppendUvarint(b, 1<<40)
		b = AppendVarint(b, -1<<40)
		_, b, _ = ConsumeQuantized(b, posEnc)
		_, b, _ = ConsumeFloat16(b)
		_, b, _ = ConsumeUvarint(b)
		_, _, _ = ConsumeVarint(b)
	}); a != 0 {
		t.Fatalf("the encoders and decoders allocate %v times", a)
	}
}

func TestCheckValueEncodings(t *testing.T) {
	s := encSchema(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range s.Properties {
		for range 100 {
			if v := encValue(rng, s, i); s.CheckValue(i, v) != nil {
				t.Fatalf("%s: %x rejected: %v", s.Properties[i].Name, v, s.CheckValue(i, v))
			}
		}
	}
	for _, tc := range []struct {
		i    int
		v    string
		want error
	}{
		{0, "\x00\x00\x00\x00\x00", ErrValueSize},
		{0, "\x00\x00\x00\x01\x00\x08", ErrBadValue}, // y index 2^19+1
		{1, "\xff", nil},
		{2, "\x00\x7e\x00\x00\x00\x7c", nil},
		{2, "\x00\x7e\x01\x7e\x00\x00", ErrBadValue}, // a NaN other than 0x7e00
		{2, "\x00\x7e\x00\xfe\x00\x00", ErrBadValue},
		{4, "", ErrValueSize},
		{4, "\x80", ErrValueSize},
		{4, "\x01\x01", ErrValueSize},
		{4, "\x80\x00", ErrBadValue},
		{5, "\x01", ErrValueSize},
		{5, "\x01\x02", nil},
		{5, "\x01\x02\x03", ErrValueSize},
	} {
		err := s.CheckValue(tc.i, []byte(tc.v))
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s %x: %v, want %v", s.Properties[tc.i].Name, tc.v, err, tc.want)
		}
	}
}

func TestConsumeValuesEncodings(t *testing.T) {
	s := encSchema(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		mask := rng.Uint32() & s.FullMask()
		vals := make([][]byte, len(s.Properties))
		var data []byte
		for i := range vals {
			vals[i] = encValue(rng, s, i)
			if mask&(1<<i) != 0 {
				data = s.AppendValue(data, i, vals[i])
			}
		}
		var got uint32
		if err := s.ConsumeValues(data, mask, func(i int, v []byte) {
			got |= 1 << i
			if !bytes.Equal(v, vals[i]) {
				t.Fatalf("property %d: %x, want %x", i, v, vals[i])
			}
		}); err != nil || got != mask {
			t.Fatalf("mask %#x: %v (saw %#x)", mask, err, got)
		}
		if len(data) > 0 {
			if err := s.ConsumeValues(data[:len(data)-1], mask, func(int, []byte) { t.Fatal("fn called") }); err == nil {
				t.Fatalf("mask %#x: cut data accepted", mask)
			}
		}
	}
	// The varint properties carry no length prefix.
	data := s.AppendValue(nil, 4, AppendUvarint(nil, 300))
	if !bytes.Equal(data, []byte{0xac, 0x02}) || s.ValueSize(4, data) != 2 {
		t.Fatalf("uvarint wire form %x", data)
	}
	if err := s.ConsumeValues([]byte{0x80, 0x00}, 1<<4, func(int, []byte) {}); !errors.Is(err, ErrBadValue) {
		t.Fatalf("overlong varint: %v", err)
	}
	if err := s.ConsumeValues([]byte{0, 0, 0, 1, 0, 8}, 1, func(int, []byte) {}); !errors.Is(err, ErrBadValue) {
		t.Fatalf("quantized index out of range: %v", err)
	}
}

// The fuzz targets check each decoder: it never panics, an error wraps a sentinel and consumes
// nothing, and what it accepts re-encodes to exactly the bytes it consumed.

func FuzzConsumeQuantized(f *testing.F) {
	encs := []Encoding{posEnc, Quantized(1, 0, 1, 1.0/255), Quantized(1, 0, 1<<53-1, 1), Quantized(1, -0.5, 0.5, 0.1)}
	f.Add(uint8(0), []byte{0, 0, 4})
	f.Add(uint8(1), []byte{0xff})
	f.Add(uint8(2), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f})
	f.Add(uint8(3), []byte{10})
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		e := encs[int(which)%len(encs)]
		v, rest, err := ConsumeQuantized(b, e)
		if err != nil {
			if !errors.Is(err, ErrShortData) && !errors.Is(err, ErrBadValue) || len(rest) != len(b) {
				t.Fatalf("%v (rest %d of %d)", err, len(rest), len(b))
			}
			return
		}
		n := len(b) - len(rest)
		if again := AppendQuantized(nil, e, v); !bytes.Equal(again, b[:n]) {
			t.Fatalf("%x → %v → %x", b[:n], v, again)
		}
	})
}

func FuzzConsumeFloat16(f *testing.F) {
	f.Add([]byte{0x00, 0x3c})
	f.Add([]byte{0x00, 0x7e})
	f.Add([]byte{0x01, 0x7c})
	f.Add([]byte{0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, rest, err := ConsumeFloat16(b)
		if err != nil {
			if !errors.Is(err, ErrShortData) && !errors.Is(err, ErrBadValue) || len(rest) != len(b) {
				t.Fatalf("%v (rest %d of %d)", err, len(rest), len(b))
			}
			return
		}
		if again := AppendFloat16(nil, v); !bytes.Equal(again, b[:2]) || len(rest) != len(b)-2 {
			t.Fatalf("%x → %v → %x", b[:2], v, again)
		}
	})
}

func FuzzConsumeUvarint(f *testing.F) {
	f.Add([]byte{0xac, 0x02})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x80, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, rest, err := ConsumeUvarint(b)
		if err != nil {
			if !errors.Is(err, ErrShortData) && !errors.Is(err, ErrBadValue) || len(rest) != len(b) {
				t.Fatalf("%v (rest %d of %d)", err, len(rest), len(b))
			}
			return
		}
		n := len(b) - len(rest)
		if again := AppendUvarint(nil, v); !bytes.Equal(again, b[:n]) {
			t.Fatalf("%x → %d → %x", b[:n], v, again)
		}
	})
}

func FuzzConsumeVarint(f *testing.F) {
	f.Add([]byte{0x01})
	f.Add([]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, rest, err := ConsumeVarint(b)
		if err != nil {
			if !errors.Is(err, ErrShortData) && !errors.Is(err, ErrBadValue) || len(rest) != len(b) {
				t.Fatalf("%v (rest %d of %d)", err, len(rest), len(b))
			}
			return
		}
		n := len(b) - len(rest)
		if again := AppendVarint(nil, v); !bytes.Equal(again, b[:n]) {
			t.Fatalf("%x → %d → %x", b[:n], v, again)
		}
	})
}

// CheckValue of a quantized property (its fast path: widths and steps from NewTable) accepts
// indices up to Steps in every number and refuses one above it, and a wrong size.
func TestCheckValueQuantized(t *testing.T) {
	tab, err := NewTable(Schema{ID: 1, Name: "s", Properties: []Property{
		{Name: "xy", Component: 1024, Encoding: Quantized(2, 0, 10, 0.5)},      // steps 20, 1 byte
		{Name: "big", Component: 1025, Encoding: Quantized(1, 0, 1000, 0.001)}, // steps 1,000,000, 3 bytes
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tab.Lookup(1)
	for _, tc := range []struct {
		prop int
		v    []byte
		want error
	}{
		{0, []byte{20, 0}, nil},
		{0, []byte{0, 20}, nil},
		{0, []byte{21, 0}, ErrBadValue},
		{0, []byte{0, 21}, ErrBadValue},
		{0, []byte{1}, ErrValueSize},
		{1, []byte{0x40, 0x42, 0x0f}, nil},         // 1,000,000
		{1, []byte{0x41, 0x42, 0x0f}, ErrBadValue}, // 1,000,001
	} {
		err := s.CheckValue(tc.prop, tc.v)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckValue(%d, %x) = %v, want %v", tc.prop, tc.v, err, tc.want)
		}
	}
}
