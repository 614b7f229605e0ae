package schema_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/testkit/golden"
)

// The schema tables, fingerprints and value encodings the JavaScript schema module
// (web/static/js/schema.js, tested by web/test/schema.test.js) must reproduce exactly.
var crossDir = filepath.Join("..", "..", "testdata", "schema")

type jProperty struct {
	Name      string     `json:"name"`
	Component uint32     `json:"component"`
	Size      int        `json:"size"`
	Encoding  *jEncoding `json:"encoding,omitempty"`
}

// jEncoding is a property's encoding as the JavaScript SchemaSpec writes it.
type jEncoding struct {
	Kind  string  `json:"kind"`
	Count int     `json:"count"`
	Min   float64 `json:"min,omitempty"`
	Max   float64 `json:"max,omitempty"`
	Step  float64 `json:"step,omitempty"`
}

func encJSON(e schema.Encoding) *jEncoding {
	if e.Kind == schema.KindRaw {
		return nil
	}
	return &jEncoding{Kind: e.Kind.String(), Count: e.Count, Min: e.Min, Max: e.Max, Step: e.Step}
}

type jSchema struct {
	ID         uint32      `json:"id"`
	Name       string      `json:"name"`
	Properties []jProperty `json:"properties"`
}

// jTable is a schema table with its fingerprint (16 hex digits).
type jTable struct {
	Name        string    `json:"name,omitempty"`
	Schemas     []jSchema `json:"schemas"`
	Fingerprint string    `json:"fingerprint"`
}

// jValues is one ConsumeValues call: the values it reports (index, hex) or the error it returns.
type jValues struct {
	Table  string   `json:"table"`
	Schema uint32   `json:"schema"`
	Mask   uint32   `json:"mask"`
	Data   string   `json:"data"`
	Values [][2]any `json:"values"`
	Error  string   `json:"error,omitempty"`
}

type jTables struct {
	Note   string    `json:"note"`
	Tables []jTable  `json:"tables"`
	Values []jValues `json:"values"`
}

func tableJSON(name string, t *schema.Table) jTable {
	jt := jTable{Name: name, Schemas: []jSchema{}, Fingerprint: fmt.Sprintf("%016x", t.Fingerprint())}
	for _, id := range t.IDs() {
		s, _ := t.Lookup(id)
		js := jSchema{ID: uint32(s.ID), Name: s.Name, Properties: []jProperty{}}
		for _, p := range s.Properties {
			js.Properties = append(js.Properties, jProperty{Name: p.Name, Component: uint32(p.Component), Size: p.Size, Encoding: encJSON(p.Encoding)})
		}
		jt.Schemas = append(jt.Schemas, js)
	}
	return jt
}

// crossProps returns n properties on components base.. with fixed sizes 1–5 and every third
// property variable.
func crossProps(n int, base crdt.ComponentID) []schema.Property {
	ps := make([]schema.Property, n)
	for i := range ps {
		size := i%5 + 1
		if i%3 == 1 {
			size = 0
		}
		ps[i] = schema.Property{Name: fmt.Sprintf("p%d", i), Component: base + crdt.ComponentID(i), Size: size}
	}
	return ps
}

// gameTable is a table a game would declare (the demo arena's, as the vector file names it).
var gameTable = schema.MustTable(
	schema.Schema{ID: 1, Name: "avatar", Properties: []schema.Property{
		{Name: "pos", Component: 1100, Encoding: schema.Quantized(2, -32768, 32767, 1)},
		{Name: "color", Component: 1101, Size: 4},
		{Name: "name", Component: 1102},
	}},
	schema.Schema{ID: 2, Name: "box", Properties: []schema.Property{
		{Name: "pos", Component: 1200, Encoding: schema.Quantized(2, -32768, 32767, 1)},
		{Name: "vel", Component: 1201, Encoding: schema.Encoding{Kind: schema.KindVarint, Count: 2}},
	}},
	schema.Schema{ID: 3, Name: "room", Properties: []schema.Property{
		{Name: "score", Component: 1300, Size: 4},
		{Name: "goals", Component: 1301, Size: 4},
	}},
)

// crossTables returns the tables the JavaScript module must fingerprint as Go does.
func crossTables() map[string]*schema.Table {
	return map[string]*schema.Table{
		"empty": schema.MustTable(),
		"arena": gameTable, // a game's table: the demo arena's schemas, copied so that crdt/schema does not import the demo
		"edges": schema.MustTable(
			schema.Schema{ID: 0, Name: "zero", Properties: []schema.Property{{Name: "v", Component: 1024, Size: schema.MaxValueSize}}},
			schema.Schema{ID: 0xffffffff, Name: "max", Properties: []schema.Property{{Name: "v", Component: 0xffffffff}}},
			schema.Schema{ID: 9, Name: "p9", Properties: crossProps(9, 2000)},
			schema.Schema{ID: 17, Name: "p17", Properties: crossProps(17, 3000)},
			schema.Schema{ID: 32, Name: "p32", Properties: crossProps(32, 4000)},
			schema.Schema{ID: 8, Name: "p8", Properties: crossProps(8, 1024)},
		),
		"renamed edges": schema.MustTable(
			schema.Schema{ID: 8, Name: "other", Properties: crossProps(8, 1024)},
		),
		"encoded": schema.MustTable(
			schema.Schema{ID: 1, Name: "kinds", Properties: []schema.Property{
				{Name: "pos", Component: 1024, Encoding: schema.Quantized(2, -1024, 1024, 1.0/256)},
				{Name: "angle", Component: 1025, Encoding: schema.Quantized(1, 0, 1, 1.0/255)},
				{Name: "vel", Component: 1026, Encoding: schema.Encoding{Kind: schema.KindFloat16, Count: 3}},
				{Name: "name", Component: 1027},
				{Name: "seq", Component: 1028, Encoding: schema.Encoding{Kind: schema.KindUvarint}},
				{Name: "delta", Component: 1029, Encoding: schema.Encoding{Kind: schema.KindVarint, Count: 2}},
				{Name: "tag", Component: 1030, Size: 2},
			}},
			schema.Schema{ID: 2, Name: "wide", Properties: []schema.Property{
				{Name: "big", Component: 1024, Encoding: schema.Quantized(2, -1e9, 1e9, 1e-6)},
				{Name: "tiny", Component: 1025, Encoding: schema.Quantized(1, -0.5, 0.5, 0.1)},
			}},
		),
	}
}

// crossValues returns ConsumeValues cases, valid and malformed, on the "edges" and "encoded" tables.
func crossValues(tables map[string]*schema.Table) []jValues {
	rng := rand.New(rand.NewPCG(5, 5))
	var out []jValues
	table := "edges"
	add := func(id schema.ID, mask uint32, data []byte) {
		s, _ := tables[table].Lookup(id)
		v := jValues{Table: table, Schema: uint32(id), Mask: mask, Data: hex.EncodeToString(data), Values: [][2]any{}}
		err := s.ConsumeValues(data, mask, func(i int, b []byte) {
			v.Values = append(v.Values, [2]any{i, hex.EncodeToString(b)})
		})
		switch {
		case err == nil:
		case errors.Is(err, schema.ErrMaskOutOfRange):
			v.Error = "mask_out_of_range"
		case errors.Is(err, schema.ErrValueSize):
			v.Error = "value_size"
		case errors.Is(err, schema.ErrShortData):
			v.Error = "short_data"
		case errors.Is(err, schema.ErrTrailingData):
			v.Error = "trailing_data"
		case errors.Is(err, schema.ErrBadValue):
			v.Error = "bad_value"
		default:
			panic(err)
		}
		out = append(out, v)
	}
	for _, id := range []schema.ID{8, 9, 17, 32} {
		s, _ := tables[table].Lookup(id)
		for range 6 {
			mask := rng.Uint32() & s.FullMask()
			var data []byte
			for i := range s.Properties {
				if mask&(1<<i) != 0 {
					n := s.Properties[i].Size
					if n == 0 {
						n = rng.IntN(6)
					}
					v := make([]byte, n)
					for j := range v {
						v[j] = byte(rng.Uint32())
					}
					data = s.AppendValue(data, i, v)
				}
			}
			add(id, mask, data)
			if len(data) > 0 {
				add(id, mask, data[:len(data)-1])
			}
			add(id, mask, append(bytes.Clone(data), 0))
		}
		add(id, s.FullMask()+1, nil)
	}
	add(0, 1, make([]byte, schema.MaxValueSize))
	add(0xffffffff, 1, []byte{0x01, 0x10})                                // a 4097-byte variable value
	add(0xffffffff, 1, append([]byte{0x00, 0x10}, make([]byte, 4096)...)) // exactly MaxValueSize
	add(0xffffffff, 1, []byte{0x05})
	add(9, 0, nil)
	add(9, 0, []byte{1})

	table = "encoded"
	kinds, _ := tables[table].Lookup(1)
	for range 12 {
		mask := rng.Uint32() & kinds.FullMask()
		var data []byte
		for i, p := range kinds.Properties {
			if mask&(1<<i) == 0 {
				continue
			}
			var v []byte
			for range max(p.Encoding.Count, 1) {
				switch p.Encoding.Kind {
				case schema.KindQuantized:
					v = schema.AppendQuantized(v, p.Encoding, p.Encoding.Min+rng.Float64()*(p.Encoding.Max-p.Encoding.Min))
				case schema.KindFloat16:
					v = schema.AppendFloat16(v, rng.NormFloat64()*1000)
				case schema.KindUvarint:
					v = schema.AppendUvarint(v, rng.Uint64()>>rng.IntN(64))
				case schema.KindVarint:
					v = schema.AppendVarint(v, rng.Int64()>>rng.IntN(64)*int64(1-2*rng.IntN(2)))
				default:
					v = make([]byte, max(p.Size, rng.IntN(5)))
					for j := range v {
						v[j] = byte(rng.Uint32())
					}
				}
			}
			data = kinds.AppendValue(data, i, v)
		}
		add(1, mask, data)
		if len(data) > 0 {
			add(1, mask, data[:len(data)-1])
		}
		add(1, mask, append(bytes.Clone(data), 0))
	}
	add(1, 1, []byte{0, 0, 8, 0, 0, 8})          // both at the top index, 2^19
	add(1, 1, []byte{1, 0, 8, 0, 0, 0})          // x above it
	add(1, 2, []byte{0xff})                      // angle: index 255 of 255
	add(1, 4, []byte{0, 0x7e, 0, 0x7c, 0, 0xfc}) // NaN, +Inf, −Inf
	add(1, 4, []byte{1, 0x7e, 0, 0, 0, 0})       // a NaN other than 0x7e00
	add(1, 1<<4, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	add(1, 1<<4, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	add(1, 1<<4, []byte{0x80, 0x00})
	add(1, 1<<4, []byte{0x80})
	add(1, 1<<5, []byte{0x01})
	add(1, 1<<5|1<<6, []byte{0x01, 0x02, 'a'})
	wide, _ := tables[table].Lookup(2)
	add(2, 3, schema.AppendQuantized(schema.AppendQuantized(schema.AppendQuantized(nil,
		wide.Properties[0].Encoding, 123456.789012), wide.Properties[0].Encoding, -1e9), wide.Properties[1].Encoding, 0.25))
	add(2, 2, []byte{11})
	return out
}

func buildCross() (arenaJSON []byte, tablesJSON []byte, err error) {
	tables := crossTables()
	arenaJSON, err = json.MarshalIndent(tableJSON("arena", tables["arena"]), "", "  ")
	if err != nil {
		return nil, nil, err
	}
	all := jTables{Note: "Written by `go test ./crdt/schema -run TestCrossLanguageVectors -update` (crdt/schema/crosslang_test.go); " +
		"checked by that test and by web/test/schema.test.js. Fingerprints are FNV-1a 64 as 16 hex digits."}
	for _, name := range []string{"empty", "arena", "edges", "renamed edges", "encoded"} {
		all.Tables = append(all.Tables, tableJSON(name, tables[name]))
	}
	all.Values = crossValues(tables)
	tablesJSON, err = json.MarshalIndent(all, "", " ")
	if err != nil {
		return nil, nil, err
	}
	return append(arenaJSON, '\n'), append(tablesJSON, '\n'), nil
}

// TestCrossLanguageVectors writes (with -update) or checks testdata/schema/arena.json (the arena's
// schema table and its fingerprint) and testdata/schema/tables.json (edge-case tables and
// ConsumeValues cases).
func TestCrossLanguageVectors(t *testing.T) {
	arenaJSON, tablesJSON, err := buildCross()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"arena.json": arenaJSON, "tables.json": tablesJSON}
	for name, got := range files {
		golden.Check(t, filepath.Join(crossDir, name), got, "go test ./crdt/schema -run TestCrossLanguageVectors -update")
	}
	if tablesJSON == nil || !bytes.Contains(arenaJSON, []byte(`"fingerprint"`)) {
		t.Fatal("nothing to check")
	}
}
