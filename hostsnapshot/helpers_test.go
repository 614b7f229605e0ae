package hostsnapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// Components the test worlds use outside any schema.
const (
	compUnknown crdt.ComponentID = 5000 // a component no schema names
	compRoom    crdt.ComponentID = 5001 // room state on entity 0
	compLog     crdt.ComponentID = 6000 // an append-only log
)

func genProps(n int, base crdt.ComponentID) []schema.Property {
	ps := make([]schema.Property, n)
	for i := range ps {
		size := i%4 + 1
		if i%3 == 1 {
			size = 0
		}
		ps[i] = schema.Property{Name: fmt.Sprintf("p%d", i), Component: base + crdt.ComponentID(i), Size: size}
	}
	return ps
}

// testTable holds schemas of 3, 1, 9, 17 and 32 properties (every mask width), fixed and variable.
// Schema 6 has only values of 8 bytes or more, so that a value can be found in the encoding;
// schema 7 lists its components in descending order.
var testTable = schema.MustTable(
	schema.Schema{ID: 1, Name: "player", Properties: []schema.Property{
		{Name: "pos", Component: 1100, Size: 12}, {Name: "name", Component: 1101}, {Name: "hp", Component: 1102, Size: 4},
	}},
	schema.Schema{ID: 2, Name: "door", Properties: []schema.Property{{Name: "open", Component: 1200, Size: 1}}},
	schema.Schema{ID: 3, Name: "p9", Properties: genProps(9, 1300)},
	schema.Schema{ID: 4, Name: "p17", Properties: genProps(17, 1400)},
	schema.Schema{ID: 5, Name: "p32", Properties: genProps(32, 1500)},
	schema.Schema{ID: 6, Name: "unique", Properties: []schema.Property{
		{Name: "a", Component: 1600, Size: 12}, {Name: "b", Component: 1601}, {Name: "c", Component: 1602, Size: 16},
	}},
	// Property order is not component order here: a spawn's values are not in key order.
	schema.Schema{ID: 7, Name: "reversed", Properties: []schema.Property{
		{Name: "z", Component: 1702, Size: 2}, {Name: "y", Component: 1701}, {Name: "x", Component: 1700, Size: 3},
	}},
)

// benchTable is the 3-property, 12-byte-value schema of the scale tests and benchmarks.
var benchTable = schema.MustTable(schema.Schema{ID: 1, Name: "body", Properties: []schema.Property{
	{Name: "pos", Component: 1100, Size: 12}, {Name: "vel", Component: 1101, Size: 12}, {Name: "rot", Component: 1102, Size: 12},
}})

func lookup(t testing.TB, tab *schema.Table, id schema.ID) *schema.Schema {
	t.Helper()
	s, ok := tab.Lookup(id)
	if !ok {
		t.Fatalf("schema %d missing", id)
	}
	return s
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// randValue returns a valid value for property i of s; variable values have minVar..minVar+20 bytes.
func randValue(rng *rand.Rand, s *schema.Schema, i, minVar int) []byte {
	n := s.Properties[i].Size
	if n == 0 {
		n = minVar + rng.IntN(21)
	}
	return randBytes(rng, n)
}

func merge(t testing.TB, r *crdt.Replica, m crdt.Message) {
	t.Helper()
	if o := r.Merge(&m); o == crdt.Invalid {
		t.Fatalf("merge %+v: %v", m, o)
	}
}

func put(t testing.TB, r *crdt.Replica, e crdt.Entity, c crdt.ComponentID, ts crdt.Timestamp, data []byte) {
	t.Helper()
	merge(t, r, crdt.Message{Type: crdt.PutComponent, Entity: e, Component: c, Timestamp: ts, Data: data})
}

func tomb(t testing.TB, r *crdt.Replica, e crdt.Entity, c crdt.ComponentID, ts crdt.Timestamp) {
	t.Helper()
	merge(t, r, crdt.Message{Type: crdt.DeleteComponent, Entity: e, Component: c, Timestamp: ts})
}

func delEntity(t testing.TB, r *crdt.Replica, e crdt.Entity) {
	t.Helper()
	merge(t, r, crdt.Message{Type: crdt.DeleteEntity, Entity: e})
}

func appendVal(t testing.TB, r *crdt.Replica, e crdt.Entity, c crdt.ComponentID, ts crdt.Timestamp, data []byte) {
	t.Helper()
	merge(t, r, crdt.Message{Type: crdt.AppendValue, Entity: e, Component: c, Timestamp: ts, Data: data})
}

// spawn writes the meta component of e and the properties of s named by mask, at timestamps from
// ts upwards (one per write), and returns the next free timestamp.
func spawn(t testing.TB, r *crdt.Replica, rng *rand.Rand, e crdt.Entity, s *schema.Schema, mask uint32, ts crdt.Timestamp, minVar int) crdt.Timestamp {
	t.Helper()
	put(t, r, e, schema.ComponentMeta, ts, schema.AppendMeta(nil, s.ID, randBytes(rng, rng.IntN(9))))
	ts++
	for i := range s.Properties {
		if mask&(1<<i) != 0 {
			put(t, r, e, s.Properties[i].Component, ts, randValue(rng, s, i, minVar))
			ts++
		}
	}
	return ts
}

// richWorld returns a replica holding every case a snapshot must carry: schemas of every mask
// width, partial masks, tombstoned properties, wrong-size values, components outside any schema
// (authority, unknown), entities without meta or with an unknown or malformed meta, deleted
// entities and reused numbers, append values, low numbers and entity 0 (room state), and a clock
// above every timestamp.
func richWorld(t testing.TB, seed uint64) *crdt.Replica {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	r := crdt.New(crdt.Config{})
	ts := crdt.Timestamp(1)
	ids := testTable.IDs()
	for n := uint16(512); n < 632; n++ {
		e := crdt.NewEntity(n, uint16(rng.IntN(3)))
		s := lookup(t, testTable, ids[int(n-512)/6%len(ids)])
		mask := s.FullMask()
		if n%4 == 1 {
			mask = rng.Uint32() & s.FullMask()
		}
		ts = spawn(t, r, rng, e, s, mask, ts, 0)
		switch n % 6 {
		case 0: // a tombstoned property
			tomb(t, r, e, s.Properties[0].Component, ts)
			ts++
		case 1: // authority and an unknown component
			put(t, r, e, schema.ComponentAuthority, ts, randBytes(rng, 16))
			put(t, r, e, compUnknown, ts+1, randBytes(rng, 5))
			ts += 2
		case 2: // append values next to the properties
			for k := range 3 {
				appendVal(t, r, e, compLog, ts+crdt.Timestamp(k), randBytes(rng, 6))
			}
			ts += 3
		case 3: // a value of the wrong size for a fixed property travels in the stream
			if p := s.Properties[0]; p.Size > 0 {
				put(t, r, e, p.Component, ts, randBytes(rng, p.Size+1))
				ts++
			}
		}
	}
	// Low numbers, among them entity 0, the room itself: room state outside any schema, and a
	// spawned low entity.
	put(t, r, crdt.NewEntity(0, 0), compRoom, ts, []byte("room state"))
	appendVal(t, r, crdt.NewEntity(0, 0), compLog, ts+1, []byte("joined"))
	appendVal(t, r, crdt.NewEntity(0, 0), compLog, ts+2, []byte("left"))
	ts += 3
	ts = spawn(t, r, rng, crdt.NewEntity(5, 0), lookup(t, testTable, 2), 1, ts, 0)
	// An entity without meta.
	put(t, r, crdt.NewEntity(800, 0), 1100, ts, randBytes(rng, 12))
	put(t, r, crdt.NewEntity(800, 0), compUnknown, ts+1, randBytes(rng, 3))
	// A meta naming an unknown schema, a meta too short to hold a schema id, a deleted meta.
	put(t, r, crdt.NewEntity(801, 0), schema.ComponentMeta, ts+2, schema.AppendMeta(nil, 99, []byte("??")))
	put(t, r, crdt.NewEntity(801, 0), 1100, ts+3, randBytes(rng, 12))
	put(t, r, crdt.NewEntity(802, 0), schema.ComponentMeta, ts+4, []byte{1, 0})
	ts = spawn(t, r, rng, crdt.NewEntity(803, 0), lookup(t, testTable, 1), 7, ts+5, 0)
	tomb(t, r, crdt.NewEntity(803, 0), schema.ComponentMeta, ts)
	ts++
	// A meta with no creation data and an empty variable property.
	put(t, r, crdt.NewEntity(804, 0), schema.ComponentMeta, ts, schema.AppendMeta(nil, 1, nil))
	put(t, r, crdt.NewEntity(804, 0), 1101, ts+1, []byte{})
	ts += 2
	// Deleted entities, explicit and implicit, and numbers reused with higher versions.
	delEntity(t, r, crdt.NewEntity(850, 0))
	ts = spawn(t, r, rng, crdt.NewEntity(851, 2), lookup(t, testTable, 1), 7, ts, 0)
	ts = spawn(t, r, rng, crdt.NewEntity(851, 3), lookup(t, testTable, 1), 7, ts, 0)
	ts = spawn(t, r, rng, crdt.NewEntity(852, 1), lookup(t, testTable, 2), 1, ts, 0)
	delEntity(t, r, crdt.NewEntity(852, 5))
	ts = spawn(t, r, rng, crdt.NewEntity(853, 65535), lookup(t, testTable, 3), 0x1ff, ts, 0)
	ts = spawn(t, r, rng, crdt.NewEntity(65535, 9), lookup(t, testTable, 2), 1, ts, 0)
	appendVal(t, r, crdt.NewEntity(852, 1), compLog, ts, []byte("gone")) // ignored: deleted version
	// Appends on an entity without meta.
	appendVal(t, r, crdt.NewEntity(800, 0), compLog, ts, []byte("a"))
	appendVal(t, r, crdt.NewEntity(800, 0), compLog, ts, []byte("b"))
	// The host's clock is above every stamp (it observed a later one elsewhere).
	r.ObserveClock(ts + 1000)
	return r
}

// clone copies a replica's state and clock.
func clone(t testing.TB, r *crdt.Replica) *crdt.Replica {
	t.Helper()
	c := crdt.New(crdt.Config{})
	if _, err := c.MergeStream(r.AppendState(nil)); err != nil {
		t.Fatal(err)
	}
	c.ObserveClock(r.Clock())
	return c
}

// encode builds a snapshot of r and encodes it as one HostSnapshot message.
func encode(t testing.TB, r *crdt.Replica, tab *schema.Table, o Options) []byte {
	t.Helper()
	var s netmsg.HostSnapshot
	Build(&s, r, tab, o)
	return netmsg.AppendHostSnapshot(nil, &s)
}

// decode decodes one HostSnapshot message.
func decode(t testing.TB, b []byte) *netmsg.HostSnapshot {
	t.Helper()
	var s netmsg.HostSnapshot
	n, err := netmsg.ConsumeHostSnapshot(b, &s)
	if err != nil {
		t.Fatalf("ConsumeHostSnapshot: %v", err)
	}
	if n != len(b) {
		t.Fatalf("ConsumeHostSnapshot consumed %d of %d bytes", n, len(b))
	}
	return &s
}

// messages decodes an ADR-117 stream, copying every message.
func messages(t testing.TB, stream []byte) []crdt.Message {
	t.Helper()
	var out []crdt.Message
	var rd crdt.Reader
	rd.Reset(stream)
	for {
		var m crdt.Message
		err := rd.Next(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		m.Data = bytes.Clone(m.Data)
		out = append(out, m)
	}
}

// countingMerge merges into r and counts the calls.
func countingMerge(r *crdt.Replica, calls *int) func(*crdt.Message) crdt.Outcome {
	return func(m *crdt.Message) crdt.Outcome {
		*calls++
		return r.Merge(m)
	}
}

func requireSameState(t testing.TB, got, want *crdt.Replica) {
	t.Helper()
	if got.Hash() != want.Hash() {
		g, w := got.StateJSON(), want.StateJSON()
		t.Fatalf("state differs: hash %016x, want %016x\nlww %d vs %d, deleted %d vs %d, append %d vs %d",
			got.Hash(), want.Hash(), len(g.LWW), len(w.LWW), len(g.DeletedEntities), len(w.DeletedEntities), len(g.Append), len(w.Append))
	}
	if !reflect.DeepEqual(got.StateJSON(), want.StateJSON()) {
		t.Fatal("StateJSON differs although the hashes are equal")
	}
}
