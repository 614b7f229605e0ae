package schema_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/testkit/golden"
)

// testdata/schema/encodings.json: what each encoder writes and each decoder reads, for the
// JavaScript module (web/test/schema.test.js) to reproduce byte for byte. Numbers are IEEE 754
// float64 bits as 16 hex digits (JSON has no NaN, Inf or −0); integers are decimal strings.

type jNumCase struct {
	V       string `json:"v"`       // float64 bits
	Hex     string `json:"hex"`     // encoded
	Decoded string `json:"decoded"` // float64 bits of the decoded number
}

type jQuantized struct {
	Encoding jEncoding  `json:"encoding"`
	Width    int        `json:"width"`
	Steps    string     `json:"steps"`
	Cases    []jNumCase `json:"cases"`
}

type jIntCase struct {
	V   string `json:"v"`
	Hex string `json:"hex"`
}

type jInvalid struct {
	Kind     string     `json:"kind"`
	Encoding *jEncoding `json:"encoding,omitempty"`
	Hex      string     `json:"hex"`
	Error    string     `json:"error"`
}

type jEncodings struct {
	Note      string       `json:"note"`
	Quantized []jQuantized `json:"quantized"`
	Float16   []jNumCase   `json:"float16"`
	// Float16DecodeAll is FNV-1a 64 over, for every binary16 h from 0 to 0xffff: u8 1 if the
	// decoder accepts h (else 0), then the float64 bits (u64 LE) of what it decodes to (0 when it
	// refuses; every NaN as 0x7ff8000000000000).
	Float16DecodeAll string     `json:"float16DecodeAll"`
	Uvarint          []jIntCase `json:"uvarint"`
	Varint           []jIntCase `json:"varint"`
	Invalid          []jInvalid `json:"invalid"`
}

func f64hex(f float64) string { return fmt.Sprintf("%016x", math.Float64bits(f)) }

func errCode(err error) string {
	switch {
	case errors.Is(err, schema.ErrShortData):
		return "short_data"
	case errors.Is(err, schema.ErrBadValue):
		return "bad_value"
	default:
		panic(err)
	}
}

// crossNumbers returns awkward float64 inputs: signed zeros, infinities, NaN, extremes and
// random numbers around scale.
func crossNumbers(rng *rand.Rand, scale float64, n int) []float64 {
	out := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64,
		-math.MaxFloat64, math.SmallestNonzeroFloat64, 1, -1, 0.5, 1.0 / 3}
	for range n {
		out = append(out, (rng.Float64()*2-1)*scale*1.2)
	}
	return out
}

func buildEncodings() ([]byte, error) {
	rng := rand.New(rand.NewPCG(13, 2))
	out := jEncodings{Note: "Written by `go test ./crdt/schema -run TestEncodingVectors -update` " +
		"(crdt/schema/encodings_crosslang_test.go); checked by that test and by web/test/schema.test.js. " +
		"Numbers are float64 bits (16 hex digits), integers decimal strings."}
	for _, e := range []schema.Encoding{
		schema.Quantized(1, -1024, 1024, 1.0/256),
		schema.Quantized(1, 0, 1, 1.0/255),
		schema.Quantized(1, -32768, 32767, 1),
		schema.Quantized(1, -0.5, 0.5, 0.1),
		schema.Quantized(1, -1e9, 1e9, 1e-6),
		schema.Quantized(1, 0, 1<<53-1, 1),
		schema.Quantized(1, 3.7, 1234.5, 0.3),
	} {
		q := jQuantized{Encoding: *encJSON(e), Width: e.Width(), Steps: strconv.FormatUint(e.Steps(), 10)}
		nums := crossNumbers(rng, math.Max(math.Abs(e.Min), math.Abs(e.Max)), 24)
		for range 8 { // exact ties between two indexes
			i := rng.Uint64N(e.Steps())
			nums = append(nums, e.Min+(float64(i)+0.5)*e.Step)
		}
		nums = append(nums, e.Min, e.Max, math.Nextafter(e.Min, math.Inf(-1)), math.Nextafter(e.Max, math.Inf(1)))
		for _, v := range nums {
			b := schema.AppendQuantized(nil, e, v)
			d, _, err := schema.ConsumeQuantized(b, e)
			if err != nil {
				return nil, err
			}
			q.Cases = append(q.Cases, jNumCase{V: f64hex(v), Hex: hex.EncodeToString(b), Decoded: f64hex(d)})
		}
		out.Quantized = append(out.Quantized, q)
		w := e.Width()
		out.Invalid = append(out.Invalid,
			jInvalid{Kind: "quantized", Encoding: &q.Encoding, Hex: hex.EncodeToString(make([]byte, w-1)), Error: "short_data"})
		if top := e.Steps() + 1; top < 1<<(8*w) {
			b := binary.LittleEndian.AppendUint64(nil, top)[:w]
			out.Invalid = append(out.Invalid, jInvalid{Kind: "quantized", Encoding: &q.Encoding, Hex: hex.EncodeToString(b), Error: "bad_value"})
		}
	}

	f16 := crossNumbers(rng, 70000, 40)
	f16 = append(f16, 65504, 65519.99, 65520, 0x1p-24, 0x1p-25, 0x1.0000000000001p-25, 0x1p-14, 0x1.ffcp-15, math.Pi, 1e-7, -6.1e-5)
	for range 40 {
		f16 = append(f16, (rng.Float64()*2-1)*math.Ldexp(1, rng.IntN(50)-30))
	}
	for h := 0; h < 0x7c00; h += 0x3d7 { // midpoints between neighbours and both sides of them
		a, b := schema.Float16FromBits(uint16(h)), schema.Float16FromBits(uint16(h+1))
		mid := (a + b) / 2
		f16 = append(f16, mid, -mid, math.Nextafter(mid, 0), math.Nextafter(mid, 1e9))
	}
	for _, v := range f16 {
		b := schema.AppendFloat16(nil, v)
		d, _, err := schema.ConsumeFloat16(b)
		if err != nil {
			return nil, err
		}
		out.Float16 = append(out.Float16, jNumCase{V: f64hex(v), Hex: hex.EncodeToString(b), Decoded: f64hex(d)})
	}
	h := fnv.New64a()
	for x := range 1 << 16 {
		var rec [9]byte
		if v, _, err := schema.ConsumeFloat16([]byte{byte(x), byte(x >> 8)}); err == nil {
			bits := math.Float64bits(v)
			if math.IsNaN(v) {
				bits = 0x7ff8000000000000
			}
			rec[0] = 1
			binary.LittleEndian.PutUint64(rec[1:], bits)
		}
		h.Write(rec[:])
	}
	out.Float16DecodeAll = fmt.Sprintf("%016x", h.Sum64())
	out.Invalid = append(out.Invalid,
		jInvalid{Kind: "float16", Hex: "", Error: "short_data"}, jInvalid{Kind: "float16", Hex: "00", Error: "short_data"},
		jInvalid{Kind: "float16", Hex: "017c", Error: "bad_value"}, jInvalid{Kind: "float16", Hex: "00fe", Error: "bad_value"},
		jInvalid{Kind: "float16", Hex: "ffff", Error: "bad_value"})

	us := []uint64{0, 1, 127, 128, 255, 256, 300, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<32 - 1, 1 << 32, 1<<53 - 1, 1 << 53, 1<<63 - 1, 1 << 63, math.MaxUint64}
	for range 30 {
		us = append(us, rng.Uint64()>>rng.IntN(64))
	}
	for _, u := range us {
		out.Uvarint = append(out.Uvarint, jIntCase{V: strconv.FormatUint(u, 10), Hex: hex.EncodeToString(schema.AppendUvarint(nil, u))})
	}
	is := []int64{0, -1, 1, -2, 2, 63, -64, 64, -65, 1<<31 - 1, -1 << 31, 1<<53 - 1, -(1<<53 - 1), math.MaxInt64, math.MinInt64}
	for range 30 {
		is = append(is, rng.Int64()>>rng.IntN(64)*int64(1-2*rng.IntN(2)))
	}
	for _, v := range is {
		out.Varint = append(out.Varint, jIntCase{V: strconv.FormatInt(v, 10), Hex: hex.EncodeToString(schema.AppendVarint(nil, v))})
	}
	for _, bad := range []string{"", "80", "ffffff", "8000", "ff00", "ffffffffffffffffff02", "ffffffffffffffffff81",
		"80808080808080808080", "ffffffffffffffffff"} {
		b, _ := hex.DecodeString(bad)
		for _, kind := range []string{"uvarint", "varint"} {
			var err error
			if kind == "uvarint" {
				_, _, err = schema.ConsumeUvarint(b)
			} else {
				_, _, err = schema.ConsumeVarint(b)
			}
			out.Invalid = append(out.Invalid, jInvalid{Kind: kind, Hex: bad, Error: errCode(err)})
		}
	}
	j, err := json.MarshalIndent(out, "", " ")
	return append(j, '\n'), err
}

// TestEncodingVectors writes (with -update) or checks testdata/schema/encodings.json.
func TestEncodingVectors(t *testing.T) {
	got, err := buildEncodings()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(crossDir, "encodings.json"), got, "go test ./crdt/schema -run TestEncodingVectors -update")
}
