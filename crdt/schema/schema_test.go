package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/concordrtc/concord/crdt"
)

// props returns n properties on components 1024+base.. with a mix of fixed and variable sizes:
// every third property (index 1, 4, 7, …) is variable, the others fixed at 1 to 5 bytes.
func props(n int, base crdt.ComponentID) []Property {
	ps := make([]Property, n)
	for i := range ps {
		size := i%5 + 1
		if i%3 == 1 {
			size = 0
		}
		ps[i] = Property{Name: fmt.Sprintf("p%d", i), Component: FirstAppComponent + base + crdt.ComponentID(i), Size: size}
	}
	return ps
}

// fixtureTable holds schemas of 1 (fixed and variable), 8, 9, 16, 17 and 32 properties: every
// mask width and the edges between them.
var fixtureTable = MustTable(
	Schema{ID: 1, Name: "fixed1", Properties: []Property{{Name: "v", Component: 1024, Size: 4}}},
	Schema{ID: 2, Name: "var1", Properties: []Property{{Name: "v", Component: 1024, Size: 0}}},
	Schema{ID: 8, Name: "p8", Properties: props(8, 0)},
	Schema{ID: 9, Name: "p9", Properties: props(9, 0)},
	Schema{ID: 16, Name: "p16", Properties: props(16, 0)},
	Schema{ID: 17, Name: "p17", Properties: props(17, 0)},
	Schema{ID: 32, Name: "p32", Properties: props(32, 0)},
)

func fixture(t testing.TB, id ID) *Schema {
	t.Helper()
	s, ok := fixtureTable.Lookup(id)
	if !ok {
		t.Fatalf("fixture schema %d missing", id)
	}
	return s
}

// randValue returns a valid random value for property i of s (variable values 0..40 bytes).
func randValue(rng *rand.Rand, s *Schema, i int) []byte {
	n := s.Properties[i].Size
	if n == 0 {
		n = rng.IntN(41)
	}
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(rng.Uint32())
	}
	return v
}

func TestNewTableValidation(t *testing.T) {
	ok := func(id ID) Schema { return Schema{ID: id, Name: "ok", Properties: props(3, 0)} }
	tests := []struct {
		name    string
		schemas []Schema
		wantErr bool
	}{
		{"empty table", nil, false},
		{"one schema", []Schema{ok(1)}, false},
		{"two schemas share components", []Schema{ok(1), ok(2)}, false},
		{"schema id 0", []Schema{ok(0)}, false},
		{"duplicate id", []Schema{ok(7), ok(7)}, true},
		{"zero properties", []Schema{{ID: 1, Name: "none"}}, true},
		{"32 properties", []Schema{{ID: 1, Properties: props(32, 0)}}, false},
		{"33 properties", []Schema{{ID: 1, Properties: props(33, 0)}}, true},
		{"component 1023 reserved", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: 1023, Size: 1}}}}, true},
		{"component 0 reserved", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: 0, Size: 1}}}}, true},
		{"meta component reserved", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: ComponentMeta, Size: 1}}}}, true},
		{"component 1024 allowed", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: 1024, Size: 1}}}}, false},
		{"duplicate component", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: 2000, Size: 1}, {Name: "b", Component: 2000, Size: 0}}}}, true},
		{"negative size", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: 2000, Size: -1}}}}, true},
		{"size MaxValueSize", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: 2000, Size: MaxValueSize}}}}, false},
		{"size above MaxValueSize", []Schema{{ID: 1, Properties: []Property{{Name: "a", Component: 2000, Size: MaxValueSize + 1}}}}, true},
		{"bad schema after good one", []Schema{ok(1), {ID: 2}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := NewTable(tc.schemas...)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidSchema) {
					t.Fatalf("NewTable error = %v, want ErrInvalidSchema", err)
				}
				if tab != nil {
					t.Fatalf("NewTable returned a table with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("NewTable: %v", err)
			}
			if len(tab.IDs()) != len(tc.schemas) {
				t.Fatalf("IDs() = %v, want %d ids", tab.IDs(), len(tc.schemas))
			}
			for _, s := range tc.schemas {
				got, ok := tab.Lookup(s.ID)
				if !ok || len(got.Properties) != len(s.Properties) {
					t.Fatalf("Lookup(%d) = %v, %v", s.ID, got, ok)
				}
			}
		})
	}
}

func TestMustTablePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustTable of an invalid schema did not panic")
		}
	}()
	MustTable(Schema{ID: 1})
}

func TestTableIsolatedFromCaller(t *testing.T) {
	ps := props(2, 0)
	tab := MustTable(Schema{ID: 3, Properties: ps})
	fp := tab.Fingerprint()
	ps[0].Size = 99
	ps[1].Component = 9999
	s, _ := tab.Lookup(3)
	if s.Properties[0].Size == 99 || s.Properties[1].Component == 9999 {
		t.Fatal("table shares the caller's property slice")
	}
	if MustTable(Schema{ID: 3, Properties: props(2, 0)}).Fingerprint() != fp {
		t.Fatal("fingerprint changed after the caller modified its slice")
	}
}

func TestIDsSorted(t *testing.T) {
	tab := MustTable(
		Schema{ID: 30, Properties: props(1, 0)},
		Schema{ID: 2, Properties: props(1, 0)},
		Schema{ID: 17, Properties: props(1, 0)},
	)
	want := []ID{2, 17, 30}
	if got := tab.IDs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("IDs() = %v, want %v", got, want)
	}
	if _, ok := tab.Lookup(5); ok {
		t.Fatal("Lookup(5) found a schema that was never registered")
	}
}

func TestFingerprint(t *testing.T) {
	base := func() []Schema {
		return []Schema{
			{ID: 1, Name: "player", Properties: []Property{{Name: "pos", Component: 1100, Size: 12}, {Name: "name", Component: 1101}}},
			{ID: 2, Name: "door", Properties: []Property{{Name: "open", Component: 1200, Size: 1}}},
		}
	}
	fp := MustTable(base()...).Fingerprint()
	if again := MustTable(base()...).Fingerprint(); again != fp {
		t.Fatalf("fingerprint not stable: %016x then %016x", fp, again)
	}
	// The documented canonical description, computed independently: ids ascending; per schema id
	// u32, property count u32, then per property component u32 and size u32; FNV-1a 64.
	var desc []byte
	for _, s := range []Schema{base()[0], base()[1]} {
		desc = binary.LittleEndian.AppendUint32(desc, uint32(s.ID))
		desc = binary.LittleEndian.AppendUint32(desc, uint32(len(s.Properties)))
		for _, p := range s.Properties {
			desc = binary.LittleEndian.AppendUint32(desc, uint32(p.Component))
			desc = binary.LittleEndian.AppendUint32(desc, uint32(p.Size))
		}
	}
	h := fnv.New64a()
	h.Write(desc)
	if want := h.Sum64(); fp != want {
		t.Fatalf("fingerprint %016x, want %016x from the documented description", fp, want)
	}

	same := []struct {
		name string
		edit func([]Schema) []Schema
	}{
		{"renamed schema", func(s []Schema) []Schema { s[0].Name = "avatar"; return s }},
		{"renamed property", func(s []Schema) []Schema { s[0].Properties[1].Name = "nick"; return s }},
		{"registration order", func(s []Schema) []Schema { return []Schema{s[1], s[0]} }},
	}
	for _, tc := range same {
		t.Run("same/"+tc.name, func(t *testing.T) {
			if got := MustTable(tc.edit(base())...).Fingerprint(); got != fp {
				t.Fatalf("fingerprint %016x, want %016x", got, fp)
			}
		})
	}
	differ := []struct {
		name string
		edit func([]Schema) []Schema
	}{
		{"component id", func(s []Schema) []Schema { s[0].Properties[0].Component = 1102; return s }},
		{"fixed size", func(s []Schema) []Schema { s[0].Properties[0].Size = 16; return s }},
		{"fixed to variable", func(s []Schema) []Schema { s[1].Properties[0].Size = 0; return s }},
		{"schema id", func(s []Schema) []Schema { s[1].ID = 3; return s }},
		{"property order", func(s []Schema) []Schema {
			s[0].Properties[0], s[0].Properties[1] = s[0].Properties[1], s[0].Properties[0]
			return s
		}},
		{"extra property", func(s []Schema) []Schema {
			s[1].Properties = append(s[1].Properties, Property{Name: "locked", Component: 1201, Size: 1})
			return s
		}},
		{"extra schema", func(s []Schema) []Schema {
			return append(s, Schema{ID: 9, Properties: []Property{{Component: 1300, Size: 1}}})
		}},
		{"schema removed", func(s []Schema) []Schema { return s[:1] }},
		// Moving a property from one schema to the next keeps the concatenated property list
		// equal; the per-schema counts must still tell them apart.
		{"property moved between schemas", func(s []Schema) []Schema {
			s[1].Properties = append([]Property{s[0].Properties[1]}, s[1].Properties...)
			s[0].Properties = s[0].Properties[:1]
			return s
		}},
	}
	for _, tc := range differ {
		t.Run("differ/"+tc.name, func(t *testing.T) {
			if got := MustTable(tc.edit(base())...).Fingerprint(); got == fp {
				t.Fatalf("fingerprint unchanged (%016x)", got)
			}
		})
	}
	if empty := MustTable().Fingerprint(); empty == fp || empty != 0xcbf29ce484222325 {
		t.Fatalf("empty table fingerprint %016x, want the FNV-1a offset basis", empty)
	}
}

func TestFullMask(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 17, 31, 32} {
		s := Schema{Properties: props(n, 0)}
		want := uint32(1<<n - 1)
		if got := s.FullMask(); got != want {
			t.Errorf("FullMask(%d properties) = %#x, want %#x", n, got, want)
		}
	}
}

func TestIndex(t *testing.T) {
	s := fixture(t, 17)
	for i, p := range s.Properties {
		if got, ok := s.Index(p.Component); !ok || got != i {
			t.Fatalf("Index(%d) = %d, %v; want %d", p.Component, got, ok, i)
		}
	}
	if _, ok := s.Index(1023); ok {
		t.Fatal("Index of a foreign component reported ok")
	}
}

func TestCheckValue(t *testing.T) {
	s := MustTable(Schema{ID: 1, Name: "s", Properties: []Property{{Name: "f", Component: 1024, Size: 3}, {Name: "v", Component: 1025}}})
	sc, _ := s.Lookup(1)
	tests := []struct {
		name string
		i    int
		v    []byte
		ok   bool
	}{
		{"fixed exact", 0, []byte{1, 2, 3}, true},
		{"fixed short", 0, []byte{1, 2}, false},
		{"fixed long", 0, []byte{1, 2, 3, 4}, false},
		{"fixed nil", 0, nil, false},
		{"variable empty", 1, nil, true},
		{"variable max", 1, make([]byte, MaxValueSize), true},
		{"variable over max", 1, make([]byte, MaxValueSize+1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sc.CheckValue(tc.i, tc.v)
			if tc.ok != (err == nil) {
				t.Fatalf("CheckValue = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrValueSize) {
				t.Fatalf("CheckValue error %v does not wrap ErrValueSize", err)
			}
		})
	}
}

type consumed struct {
	i int
	v []byte
}

// encodeValues encodes vals (indexed by property) for the properties named by mask.
func encodeValues(s *Schema, mask uint32, vals [][]byte) []byte {
	var b []byte
	for i := range s.Properties {
		if mask&(1<<i) != 0 {
			if err := s.CheckValue(i, vals[i]); err != nil {
				panic(err)
			}
			before := len(b)
			b = s.AppendValue(b, i, vals[i])
			if len(b)-before != s.ValueSize(i, vals[i]) {
				panic("ValueSize disagrees with AppendValue")
			}
		}
	}
	return b
}

func TestValuesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, id := range fixtureTable.IDs() {
		s := fixture(t, id)
		masks := []uint32{0, s.FullMask(), 1, 1 << (len(s.Properties) - 1)}
		for range 50 {
			masks = append(masks, rng.Uint32()&s.FullMask())
		}
		t.Run(s.Name, func(t *testing.T) {
			for _, mask := range masks {
				vals := make([][]byte, len(s.Properties))
				for i := range vals {
					vals[i] = randValue(rng, s, i)
				}
				data := encodeValues(s, mask, vals)
				var got []consumed
				if err := s.ConsumeValues(data, mask, func(i int, v []byte) { got = append(got, consumed{i, v}) }); err != nil {
					t.Fatalf("mask %#x: ConsumeValues: %v", mask, err)
				}
				var want []int
				for i := range s.Properties {
					if mask&(1<<i) != 0 {
						want = append(want, i)
					}
				}
				if len(got) != len(want) {
					t.Fatalf("mask %#x: %d values, want %d", mask, len(got), len(want))
				}
				var again []byte
				for k, c := range got {
					if c.i != want[k] {
						t.Fatalf("mask %#x: value %d is property %d, want %d (property order)", mask, k, c.i, want[k])
					}
					if !bytes.Equal(c.v, vals[c.i]) {
						t.Fatalf("mask %#x: property %d = %x, want %x", mask, c.i, c.v, vals[c.i])
					}
					if len(c.v) != cap(c.v) {
						t.Fatalf("mask %#x: property %d value has spare capacity %d (appending would overwrite the next value)", mask, c.i, cap(c.v)-len(c.v))
					}
					again = s.AppendValue(again, c.i, c.v)
				}
				if !bytes.Equal(again, data) {
					t.Fatalf("mask %#x: re-encoded %x, want %x", mask, again, data)
				}
			}
		})
	}
}

func TestVariableWireForm(t *testing.T) {
	s := fixture(t, 2) // one variable property
	got := s.AppendValue(nil, 0, []byte("abc"))
	if want := []byte{3, 0, 'a', 'b', 'c'}; !bytes.Equal(got, want) {
		t.Fatalf("AppendValue = %x, want %x (uint16 LE length, bytes)", got, want)
	}
	if got := s.AppendValue(nil, 0, nil); !bytes.Equal(got, []byte{0, 0}) {
		t.Fatalf("AppendValue(empty) = %x, want 0000", got)
	}
	f := fixture(t, 1) // one fixed property of 4 bytes
	if got := f.AppendValue(nil, 0, []byte{1, 2, 3, 4}); !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Fatalf("fixed AppendValue = %x, want the bytes alone", got)
	}
}

func TestConsumeValuesErrors(t *testing.T) {
	p8 := fixture(t, 8) // sizes: 1, var, 3, 4, var, 1, 2, var
	valid := encodeValues(p8, p8.FullMask(), [][]byte{{1}, []byte("xy"), {1, 2, 3}, {1, 2, 3, 4}, nil, {9}, {1, 2}, []byte("z")})
	oversize := binary.LittleEndian.AppendUint16(nil, MaxValueSize+1)
	oversize = append(oversize, make([]byte, MaxValueSize+1)...)
	tests := []struct {
		name string
		s    *Schema
		data []byte
		mask uint32
		want error
	}{
		{"mask bit 8 of 8 properties", p8, valid, 1 << 8, ErrMaskOutOfRange},
		{"mask bit 31 of 8 properties", p8, valid, 1<<31 | 1, ErrMaskOutOfRange},
		{"mask bit 1 of 1 property", fixture(t, 1), []byte{1, 2, 3, 4}, 3, ErrMaskOutOfRange},
		{"mask bit 17 of 17 properties", fixture(t, 17), nil, 1 << 17, ErrMaskOutOfRange},
		{"fixed short", fixture(t, 1), []byte{1, 2, 3}, 1, ErrShortData},
		{"fixed empty", fixture(t, 1), nil, 1, ErrShortData},
		{"fixed trailing", fixture(t, 1), []byte{1, 2, 3, 4, 5}, 1, ErrTrailingData},
		{"variable length short", fixture(t, 2), []byte{3}, 1, ErrShortData},
		{"variable data short", fixture(t, 2), []byte{3, 0, 'a', 'b'}, 1, ErrShortData},
		{"variable trailing", fixture(t, 2), []byte{1, 0, 'a', 'b'}, 1, ErrTrailingData},
		{"variable oversize", fixture(t, 2), oversize, 1, ErrValueSize},
		{"variable oversize length only", fixture(t, 2), oversize[:2], 1, ErrValueSize},
		{"empty mask with data", p8, []byte{0}, 0, ErrTrailingData},
		{"full mask truncated by one", p8, valid[:len(valid)-1], p8.FullMask(), ErrShortData},
		{"full mask with a trailing byte", p8, append(bytes.Clone(valid), 0), p8.FullMask(), ErrTrailingData},
		{"last value bad after good ones", p8, append(bytes.Clone(valid[:len(valid)-3]), 5, 0, 'z'), p8.FullMask(), ErrShortData},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := tc.s.ConsumeValues(tc.data, tc.mask, func(int, []byte) { calls++ })
			if !errors.Is(err, tc.want) {
				t.Fatalf("ConsumeValues error = %v, want %v", err, tc.want)
			}
			if calls != 0 {
				t.Fatalf("fn called %d times on malformed data", calls)
			}
		})
	}
	// Every strict prefix of a valid full-mask encoding is short, and fn sees none of it.
	for n := range len(valid) {
		calls := 0
		if err := p8.ConsumeValues(valid[:n], p8.FullMask(), func(int, []byte) { calls++ }); err == nil || calls != 0 {
			t.Fatalf("prefix %d of %d: err %v, %d calls", n, len(valid), err, calls)
		}
	}
}

func TestConsumeValuesAllocs(t *testing.T) {
	for _, s := range []*Schema{fixture(t, 17), encSchema(t)} {
		t.Run(s.Name, func(t *testing.T) { testConsumeValuesAllocs(t, s) })
	}
}

func testConsumeValuesAllocs(t *testing.T, s *Schema) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([][]byte, len(s.Properties))
	for i := range vals {
		vals[i] = encValue(rng, s, i)
	}
	data := encodeValues(s, s.FullMask(), vals)
	n := 0
	fn := func(int, []byte) { n++ }
	if a := testing.AllocsPerRun(100, func() {
		if err := s.ConsumeValues(data, s.FullMask(), fn); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("ConsumeValues allocates %v times per call", a)
	}
	buf := make([]byte, 0, 1024)
	if a := testing.AllocsPerRun(100, func() {
		b := buf[:0]
		for i := range s.Properties {
			b = s.AppendValue(b, i, vals[i])
		}
	}); a != 0 {
		t.Fatalf("AppendValue allocates %v times per schema", a)
	}
}

func TestMeta(t *testing.T) {
	v := AppendMeta(nil, 0x01020304, []byte("creation"))
	if want := append([]byte{4, 3, 2, 1}, "creation"...); !bytes.Equal(v, want) {
		t.Fatalf("AppendMeta = %x, want %x", v, want)
	}
	id, creation, ok := ParseMeta(v)
	if !ok || id != 0x01020304 || string(creation) != "creation" {
		t.Fatalf("ParseMeta = %d, %q, %v", id, creation, ok)
	}
	if id, creation, ok := ParseMeta(AppendMeta(nil, 7, nil)); !ok || id != 7 || len(creation) != 0 {
		t.Fatalf("ParseMeta(no creation data) = %d, %q, %v", id, creation, ok)
	}
	for n := range 4 {
		if _, _, ok := ParseMeta(v[:n]); ok {
			t.Fatalf("ParseMeta of %d bytes reported ok", n)
		}
	}
}

// fuzzSchemas indexes the fixture schemas for the fuzz target, the encoded one last.
var fuzzSchemas = func() []*Schema {
	var out []*Schema
	for _, id := range fixtureTable.IDs() {
		s, _ := fixtureTable.Lookup(id)
		out = append(out, s)
	}
	s, _ := encTable.Lookup(40)
	return append(out, s)
}()

// FuzzConsumeValues feeds arbitrary update data and masks to every fixture schema. It must never
// panic; on success every value is valid for its property, in property order, exactly the
// properties of the mask, and re-encoding the values yields the input bytes; on error fn was
// never called.
func FuzzConsumeValues(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for k, s := range fuzzSchemas {
		for _, mask := range []uint32{s.FullMask(), rng.Uint32() & s.FullMask()} {
			vals := make([][]byte, len(s.Properties))
			for i := range vals {
				vals[i] = encValue(rng, s, i)
			}
			f.Add(uint8(k), mask, encodeValues(s, mask, vals))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, mask uint32, data []byte) {
		s := fuzzSchemas[int(which)%len(fuzzSchemas)]
		var got []consumed
		err := s.ConsumeValues(data, mask, func(i int, v []byte) { got = append(got, consumed{i, v}) })
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v after %d calls", err, len(got))
			}
			if !errors.Is(err, ErrMaskOutOfRange) && !errors.Is(err, ErrShortData) &&
				!errors.Is(err, ErrTrailingData) && !errors.Is(err, ErrValueSize) && !errors.Is(err, ErrBadValue) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if mask&^s.FullMask() != 0 {
			t.Fatalf("mask %#x accepted for %d properties", mask, len(s.Properties))
		}
		var again []byte
		var seen uint32
		last := -1
		for _, c := range got {
			if c.i <= last {
				t.Fatalf("property %d after %d", c.i, last)
			}
			last = c.i
			seen |= 1 << c.i
			if err := s.CheckValue(c.i, c.v); err != nil {
				t.Fatalf("accepted an invalid value: %v", err)
			}
			again = s.AppendValue(again, c.i, c.v)
		}
		if seen != mask {
			t.Fatalf("values for mask %#x, want %#x", seen, mask)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encoded %x, want %x", again, data)
		}
	})
}
