package peer

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/testkit/golden"
	"github.com/concordrtc/concord/netmsg"
)

// testdata/peer/delta_updates.json: a host's DeltaUpdates to one member over a run with a lost
// datagram, as this host encodes them (deltaTx, the shared history), with the values the member
// must rebuild; web/test/delta.test.js replays them through the JavaScript member's decoder.

type jDeltaStep struct {
	Seq    uint64   `json:"seq"`
	Time   uint32   `json:"time"`
	Mask   uint32   `json:"mask"`
	Values []string `json:"values"` // hex, per property in the mask
	Hex    string   `json:"hex"`    // the DeltaUpdates message
	Lost   bool     `json:"lost"`   // never delivered, never acknowledged
}

type jDeltaRun struct {
	Note   string          `json:"note"`
	Schema json.RawMessage `json:"schema"`
	Entity uint32          `json:"entity"`
	Steps  []jDeltaStep    `json:"steps"`
}

const deltaRunSchema = `{"id": 1, "name": "mover", "properties": [
  {"name": "pos", "component": 1024, "encoding": {"kind": "quantized", "count": 2, "min": -1024, "max": 1024, "step": 0.00390625}},
  {"name": "sent", "component": 1025, "size": 8},
  {"name": "label", "component": 1026, "size": 0},
  {"name": "hp", "component": 1027, "encoding": {"kind": "varint", "count": 1}}
]}`

func deltaRunTable(t *testing.T) *schema.Schema {
	t.Helper()
	tab, err := schema.NewTable(schema.Schema{ID: 1, Name: "mover", Properties: []schema.Property{
		{Name: "pos", Component: 1024, Encoding: schema.Quantized(2, -1024, 1024, 1.0/256)},
		{Name: "sent", Component: 1025, Size: 8},
		{Name: "label", Component: 1026},
		{Name: "hp", Component: 1027, Encoding: schema.Encoding{Kind: schema.KindVarint, Count: 1}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tab.Lookup(1)
	return s
}

func TestDeltaCrossLanguage(t *testing.T) {
	s := deltaRunTable(t)
	e := crdt.NewEntity(600, 3)
	hist := &deltaHist{}
	dt := newDeltaTx(hist)
	var rx deltaRx
	run := jDeltaRun{
		Note: "Written by `go test ./peer -run TestDeltaCrossLanguage -update` (peer/delta_crosslang_test.go); " +
			"checked by that test and by web/test/delta.test.js. A host's DeltaUpdates to one member; lost steps " +
			"never arrive and are never acknowledged; every other step is acknowledged before the next.",
		Schema: json.RawMessage(deltaRunSchema), Entity: uint32(e),
	}
	var x, y float64 = 10, -20
	sent := uint64(1_700_000_000_000_000_000)
	hp := int64(100)
	for k := range 12 {
		x, y, sent, hp = x+1.5, y-0.25, sent+50_000_000, hp-int64(k%3)
		mask := uint32(0b1011)
		vals := [][]byte{
			schema.AppendQuantized(schema.AppendQuantized(nil, s.Properties[0].Encoding, x), s.Properties[0].Encoding, y),
			binary.LittleEndian.AppendUint64(nil, sent),
			schema.AppendVarint(nil, hp),
		}
		if k%4 == 2 {
			mask = 0b1111 // the label now and then
			vals = append(vals[:2], []byte("mover"), vals[2])
		}
		if k == 7 {
			x = 1000 // a jump: whole again
			mask = 0b0001
			vals = [][]byte{schema.AppendQuantized(schema.AppendQuantized(nil, s.Properties[0].Encoding, x), s.Properties[0].Encoding, y)}
		}
		ts := crdt.Timestamp(100 + 3*k)
		seq := dt.seq()
		te := dt.ent(e, len(s.Properties))
		items := []updItem{{ts: ts, e: e, mask: mask, s: s}}
		gens, hes := hist.keep(items, vals, nil, nil)
		data := dt.appendDeltaData(nil, s, mask, vals, gens, seq, ts, te, hes[0])
		dt.record(te, s, mask, gens, seq, ts)
		width, _ := netmsg.MaskWidth(len(s.Properties))
		msg := netmsg.AppendDeltaUpdates(nil, &netmsg.DeltaUpdates{Seq: seq, EntityUpdates: netmsg.EntityUpdates{
			Time: uint64(ts), Updates: []netmsg.Update{{NetworkID: uint64(e), Width: width, Mask: mask, Data: data}},
		}})
		lost := k == 4 || k == 9
		step := jDeltaStep{Seq: seq, Time: uint32(ts), Mask: mask, Hex: hex.EncodeToString(msg), Lost: lost}
		for _, v := range vals {
			step.Values = append(step.Values, hex.EncodeToString(v))
		}
		run.Steps = append(run.Steps, step)
		if lost {
			continue
		}
		// The member rebuilds exactly the values, keeps them and acknowledges the datagram.
		rx.received(seq)
		de := rx.tab.get(e, len(s.Properties), true)
		u := netmsg.Update{NetworkID: uint64(e), Width: width, Mask: mask, Data: data}
		if !rx.rebuild(s, de, &u, seq) {
			t.Fatalf("step %d: the member cannot read %x", k, data)
		}
		for j, sp := range rx.spans {
			if sp.a < 0 || !bytes.Equal(rx.vals[sp.a:sp.b], vals[j]) {
				t.Fatalf("step %d value %d: rebuilt %+v, want %x", k, j, sp, vals[j])
			}
		}
		j := 0
		for m := mask; m != 0; m &= m - 1 {
			i := trailingZeros(m)
			if s.Properties[i].DeltaCapable() {
				de.rings[i].put(seq, vals[j])
			}
			j++
		}
		a, _ := rx.pendingAck()
		if err := dt.ack(&a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := json.MarshalIndent(run, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "testdata", "peer", "delta_updates.json"), append(got, '\n'),
		"go test ./peer -run TestDeltaCrossLanguage -update")
}

func trailingZeros(m uint32) int {
	n := 0
	for m&1 == 0 {
		m >>= 1
		n++
	}
	return n
}
