package schema_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/testkit/golden"
)

// testdata/schema/deltas.json: what AppendDelta writes and ApplyDelta rebuilds, for
// web/test/schema.test.js to reproduce byte for byte.

type jDeltaCase struct {
	Base  string `json:"base"`
	Value string `json:"value"`
	Delta string `json:"delta"`
}

type jDeltaInvalid struct {
	Base  string `json:"base"`
	Delta string `json:"delta"`
	Error string `json:"error"`
}

type jDeltaProperty struct {
	Property jProperty       `json:"property"`
	Cases    []jDeltaCase    `json:"cases"`
	Invalid  []jDeltaInvalid `json:"invalid"`
}

type jDeltas struct {
	Note       string           `json:"note"`
	Properties []jDeltaProperty `json:"properties"`
}

// deltaProps are the delta-capable properties the vectors cover, validated by a table.
func deltaProps(t testing.TB) []schema.Property {
	props := []schema.Property{
		{Name: "pos", Component: 1024, Encoding: schema.Quantized(2, -1024, 1024, 1.0/256)},
		{Name: "wide", Component: 1025, Encoding: schema.Quantized(1, 0, 1<<53-1, 1)},
		{Name: "byte", Component: 1026, Encoding: schema.Quantized(1, 0, 1, 1.0/255)},
		{Name: "half", Component: 1027, Encoding: schema.Encoding{Kind: schema.KindFloat16, Count: 2}},
		{Name: "count", Component: 1028, Encoding: schema.Encoding{Kind: schema.KindUvarint, Count: 2}},
		{Name: "offset", Component: 1029, Encoding: schema.Encoding{Kind: schema.KindVarint}},
		{Name: "u8", Component: 1030, Size: 1},
		{Name: "u16", Component: 1031, Size: 2},
		{Name: "u32", Component: 1032, Size: 4},
		{Name: "time", Component: 1033, Size: 8},
	}
	tab, err := schema.NewTable(schema.Schema{ID: 1, Name: "deltas", Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tab.Lookup(1)
	return s.Properties
}

// randomValue returns a valid value of p: near near (a value of p) when it is not nil.
func randomValue(rng *rand.Rand, p *schema.Property, near []byte) []byte {
	e := p.Encoding
	n := max(e.Count, 1)
	var v []byte
	switch e.Kind {
	case schema.KindQuantized:
		for k := range n {
			i := rng.Uint64N(e.Steps() + 1)
			if near != nil && rng.IntN(4) > 0 {
				i = 0
				for j := range e.Width() {
					i |= uint64(near[k*e.Width()+j]) << (8 * j)
				}
				i = uint64(min(max(int64(i)+rng.Int64N(2049)-1024, 0), int64(e.Steps())))
			}
			v = binary.LittleEndian.AppendUint64(v, i)[:len(v)+e.Width()]
		}
	case schema.KindFloat16:
		for range n {
			v = schema.AppendFloat16(v, (rng.Float64()*2-1)*float64(rng.IntN(70000)))
		}
	case schema.KindUvarint:
		for range n {
			v = schema.AppendUvarint(v, rng.Uint64()>>rng.IntN(64))
		}
	case schema.KindVarint:
		v = schema.AppendVarint(v, rng.Int64()>>rng.IntN(64)*int64(1-2*rng.IntN(2)))
	default:
		var x uint64
		if near != nil && rng.IntN(2) == 0 {
			for j := range p.Size {
				x |= uint64(near[j]) << (8 * j)
			}
			x += uint64(rng.Int64N(1 << 20))
		} else {
			x = rng.Uint64()
		}
		v = binary.LittleEndian.AppendUint64(v, x)[:p.Size]
	}
	return v
}

func buildDeltas(t testing.TB) []byte {
	rng := rand.New(rand.NewPCG(13, 18))
	out := jDeltas{Note: "Written by `go test ./crdt/schema -run TestDeltaVectors -update` (crdt/schema/delta_test.go); " +
		"checked by that test and by web/test/schema.test.js. Values and deltas are hex."}
	for _, p := range deltaProps(t) {
		jp := jDeltaProperty{Property: jProperty{Name: p.Name, Component: uint32(p.Component), Size: p.Size, Encoding: encJSON(p.Encoding)}}
		for i := range 12 {
			base := randomValue(rng, &p, nil)
			v := base
			if i > 0 {
				v = randomValue(rng, &p, base)
			}
			d := schema.AppendDelta(nil, &p, base, v)
			got, n, err := schema.ApplyDelta(nil, &p, base, d)
			if err != nil || n != len(d) || !bytes.Equal(got, v) {
				t.Fatalf("%s: base %x value %x delta %x: applied %x, %d, %v", p.Name, base, v, d, got, n, err)
			}
			jp.Cases = append(jp.Cases, jDeltaCase{hex.EncodeToString(base), hex.EncodeToString(v), hex.EncodeToString(d)})
		}
		base, _ := hex.DecodeString(jp.Cases[0].Base)
		for _, bad := range []string{"", "80", "ff", "8000", "feffffffffffffffff01"} {
			d, _ := hex.DecodeString(bad)
			d = append(bytes.Repeat([]byte{0}, max(p.Encoding.Count, 1)-1), d...) // the last number is the bad one
			if _, _, err := schema.ApplyDelta(nil, &p, base, d); err != nil {
				jp.Invalid = append(jp.Invalid, jDeltaInvalid{hex.EncodeToString(base), hex.EncodeToString(d), errCode(err)})
			}
		}
		out.Properties = append(out.Properties, jp)
	}
	j, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(j, '\n')
}

// TestDeltaVectors writes (with -update) or checks testdata/schema/deltas.json, and checks that
// every delta rebuilds its value.
func TestDeltaVectors(t *testing.T) {
	golden.Check(t, filepath.Join(crossDir, "deltas.json"), buildDeltas(t), "go test ./crdt/schema -run TestDeltaVectors -update")
}

func TestDeltaExamples(t *testing.T) {
	ps := deltaProps(t)
	pos, time, u8 := &ps[0], &ps[9], &ps[6]
	// The bench's mover, one tick later: x and y one unit (256 steps) on, the time 50 ms on.
	a := append(schema.AppendQuantized(nil, pos.Encoding, 10), schema.AppendQuantized(nil, pos.Encoding, 20)...)
	b := append(schema.AppendQuantized(nil, pos.Encoding, 11), schema.AppendQuantized(nil, pos.Encoding, 21)...)
	if d := schema.AppendDelta(nil, pos, a, b); len(d) != 4 {
		t.Errorf("position delta %x, want 4 bytes", d)
	}
	t0 := binary.LittleEndian.AppendUint64(nil, 1_700_000_000_000_000_000)
	t1 := binary.LittleEndian.AppendUint64(nil, 1_700_000_000_050_000_000)
	if d := schema.AppendDelta(nil, time, t0, t1); len(d) != 4 {
		t.Errorf("time delta %x, want 4 bytes", d)
	}
	// A 1-byte counter wraps: 250 → 4 is +10.
	if d := schema.AppendDelta(nil, u8, []byte{250}, []byte{4}); !bytes.Equal(d, []byte{20}) {
		t.Errorf("wrapping delta %x, want 14", d)
	}
	if _, _, err := schema.ApplyDelta(nil, u8, []byte{250}, []byte{0x80, 0x02}); err == nil {
		t.Error("a 1-byte delta of 128 was taken")
	}
}

// FuzzApplyDelta: ApplyDelta never panics, and what it takes is exactly what AppendDelta writes
// for the value it rebuilt (one value, one encoding).
func FuzzApplyDelta(f *testing.F) {
	f.Add(uint8(0), uint64(1), []byte{0x02, 0x80, 0x04})
	f.Add(uint8(3), uint64(2), []byte{0xff, 0xff, 0x03, 0x01})
	f.Add(uint8(9), uint64(3), []byte{0x80, 0xc2, 0xd7, 0x2f})
	f.Add(uint8(6), uint64(4), []byte{0xff, 0x01})
	ps := deltaProps(f)
	s := &schema.Schema{ID: 1, Name: "deltas", Properties: ps}
	f.Fuzz(func(t *testing.T, which uint8, seed uint64, d []byte) {
		p := &ps[int(which)%len(ps)]
		base := randomValue(rand.New(rand.NewPCG(seed, 1)), p, nil)
		got, n, err := schema.ApplyDelta([]byte{0xee}, p, base, d)
		if err != nil {
			if len(got) != 1 || n != 0 {
				t.Fatalf("failed apply returned %x, %d", got, n)
			}
			return
		}
		v := got[1:]
		if err := s.CheckValue(int(which)%len(ps), v); err != nil {
			t.Fatalf("rebuilt value %x is invalid: %v", v, err)
		}
		if again := schema.AppendDelta(nil, p, base, v); !bytes.Equal(again, d[:n]) {
			t.Fatalf("base %x delta %x → %x, re-encoded %x", base, d[:n], v, again)
		}
	})
}

// The delta codec allocates nothing on the hot path (the host encodes one per member × entity
// × property, the member applies one per value).
func TestDeltaZeroAllocs(t *testing.T) {
	ps := deltaProps(t)
	buf := make([]byte, 0, 64)
	for i := range ps {
		p := &ps[i]
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		base := randomValue(rng, p, nil)
		v := randomValue(rng, p, base)
		d := schema.AppendDelta(nil, p, base, v)
		if n := testing.AllocsPerRun(100, func() { buf = schema.AppendDelta(buf[:0], p, base, v) }); n != 0 {
			t.Errorf("%s: AppendDelta allocates %v times", p.Name, n)
		}
		if n := testing.AllocsPerRun(100, func() {
			var err error
			if buf, _, err = schema.ApplyDelta(buf[:0], p, base, d); err != nil {
				panic(err)
			}
		}); n != 0 {
			t.Errorf("%s: ApplyDelta allocates %v times", p.Name, n)
		}
	}
}
