package crdt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var dclVectorsPath = flag.String("dclvectors", filepath.Join("testdata", "dcl", "vectors.json"),
	"the @dcl/ecs differential vectors file (CRDT.md format)")

// dclVectors is the vectors file written by testdata/dcl/gen.mjs with @dcl/ecs.
type dclVectors struct {
	Generator string `json:"generator"`
	Messages  []struct {
		Name      string  `json:"name"`
		Type      uint32  `json:"type"`
		Entity    uint32  `json:"entity"`
		Component uint32  `json:"component"`
		Timestamp uint32  `json:"timestamp"`
		NetworkID uint32  `json:"networkId"`
		Data      *string `json:"data"`
		Hex       string  `json:"hex"`
		Note      string  `json:"note"`
	} `json:"messages"`
	Scenarios []struct {
		Name        string          `json:"name"`
		Seed        uint64          `json:"seed"`
		Messages    []string        `json:"messages"`
		State       json.RawMessage `json:"state"`
		DCLDiverges bool            `json:"dclDiverges"`
		Note        string          `json:"note"`
	} `json:"scenarios"`
}

// dclOrders is how many random orders (with duplicates) each scenario is replayed in.
const dclOrders = 24

// TestDCLVectors replays the @dcl/ecs differential vectors: every message must decode to its
// fields and re-encode to its exact bytes; every scenario, delivered in many orders with
// duplicates, must converge to exactly its "state". A missing file is a failure.
func TestDCLVectors(t *testing.T) {
	raw, err := os.ReadFile(*dclVectorsPath)
	if err != nil {
		t.Fatalf("the @dcl/ecs vectors are required (generate them with `npm run gen` in testdata/dcl): %v", err)
	}
	summary, errs := verifyDCLVectors(raw)
	t.Log(summary)
	for _, err := range errs {
		t.Error(err)
	}
}

// verifyDCLVectors checks a vectors file and returns every mismatch.
func verifyDCLVectors(raw []byte) (summary string, errs []error) {
	var v dclVectors
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return "", []error{fmt.Errorf("vectors: %w", err)}
	}
	if len(v.Messages) == 0 || len(v.Scenarios) == 0 {
		return "", []error{fmt.Errorf("vectors hold %d messages and %d scenarios", len(v.Messages), len(v.Scenarios))}
	}
	summary = fmt.Sprintf("%s: %d messages, %d scenarios x %d orders", v.Generator, len(v.Messages), len(v.Scenarios), dclOrders)
	for _, vm := range v.Messages {
		if err := verifyDCLMessage(vm.Hex, vm.Type, vm.Entity, vm.Component, vm.Timestamp, vm.NetworkID, vm.Data); err != nil {
			errs = append(errs, fmt.Errorf("message %q: %w", vm.Name, err))
		}
	}
	for _, sc := range v.Scenarios {
		if err := verifyDCLScenario(sc.Seed, sc.Messages, sc.State); err != nil {
			errs = append(errs, fmt.Errorf("scenario %q (dclDiverges=%v: %s): %w", sc.Name, sc.DCLDiverges, sc.Note, err))
		}
	}
	return summary, errs
}

func verifyDCLMessage(hexWire string, typ, entity, component, timestamp, networkID uint32, data *string) error {
	wire, err := hex.DecodeString(hexWire)
	if err != nil {
		return err
	}
	var m Message
	n, err := ConsumeMessage(wire, &m)
	if err != nil || n != len(wire) {
		return fmt.Errorf("ConsumeMessage = %d, %v; want %d", n, err, len(wire))
	}
	if uint32(m.Type) != typ || uint32(m.Entity) != entity || uint32(m.Component) != component ||
		uint32(m.Timestamp) != timestamp || m.NetworkID != networkID {
		return fmt.Errorf("decoded %+v, want type %d entity %d component %d timestamp %d networkId %d",
			m, typ, entity, component, timestamp, networkID)
	}
	switch {
	case data == nil && m.Data != nil:
		return fmt.Errorf("data %x, want null", m.Data)
	case data != nil && (m.Data == nil || hex.EncodeToString(m.Data) != *data):
		return fmt.Errorf("data %x, want %s", m.Data, *data)
	}
	want := wire
	if m.Type == DeleteEntityNetwork && le.Uint32(wire) == legacyDeleteEntityNetworkLength {
		// The legacy length is accepted but never written: 7.28 writes 16.
		want = bytes.Clone(wire)
		le.PutUint32(want, deleteEntNetSize)
	}
	if got := AppendMessage(nil, &m); !bytes.Equal(got, want) {
		return fmt.Errorf("re-encoded %x, want %x", got, want)
	}
	return nil
}

func verifyDCLScenario(seed uint64, hexes []string, state json.RawMessage) error {
	var want StateJSON
	dec := json.NewDecoder(bytes.NewReader(state))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		return err
	}
	msgs := make([]Message, len(hexes))
	var stream []byte
	for i, h := range hexes {
		wire, err := hex.DecodeString(h)
		if err != nil {
			return err
		}
		n, err := ConsumeMessage(wire, &msgs[i])
		if err != nil || n != len(wire) {
			return fmt.Errorf("message %d: ConsumeMessage = %d, %v (len %d)", i, n, err, len(wire))
		}
		stream = append(stream, wire...)
	}
	rng := rand.New(rand.NewPCG(seed, 0x636f6e636f7264))
	var hash uint64
	for k := range dclOrders {
		r := deliver(rng, msgs, Config{})
		got, err := json.Marshal(r.StateJSON())
		if err != nil {
			return err
		}
		if !bytes.Equal(got, wantJSON) {
			return fmt.Errorf("order %d:\n got %s\nwant %s", k, got, wantJSON)
		}
		if k == 0 {
			hash = r.Hash()
		} else if r.Hash() != hash {
			return fmt.Errorf("order %d: hash differs", k)
		}
	}
	// The messages as @dcl/ecs wrote them, as one stream.
	r := New(Config{})
	if _, err := r.MergeStream(stream); err != nil {
		return err
	}
	if r.Hash() != hash {
		return errors.New("MergeStream of the scenario differs")
	}
	return nil
}

// TestDCLVectorsChecker runs the checker on small hand-made vectors files in a temp dir: a
// correct one must pass and each broken one must fail, so a checker that accepts anything is
// caught even while the real file passes.
func TestDCLVectorsChecker(t *testing.T) {
	msgs := []Message{putMsg(NewEntity(512, 0), 1, 1, "\x01"), putMsg(NewEntity(512, 1), 2, 1, "\x02"), delMsg(513, 1, 2)}
	var hexes []string
	for i := range msgs {
		hexes = append(hexes, fmt.Sprintf("%q", hex.EncodeToString(AppendMessage(nil, &msgs[i]))))
	}
	const good = `{"lww":[{"entity":513,"component":1,"timestamp":2,"deleted":true,"data":null},` +
		`{"entity":66048,"component":2,"timestamp":1,"deleted":false,"data":"02"}],` +
		`"deletedEntities":[{"number":512,"version":0}],"append":[]}`
	file := func(putTimestamp int, legacyHex, state string) []byte {
		return fmt.Appendf(nil, `{"generator":"hand","messages":[
  {"name":"put","type":1,"entity":512,"component":1,"timestamp":%d,"networkId":0,"data":"01","hex":%s},
  {"name":"legacy","type":7,"entity":66048,"component":0,"timestamp":0,"networkId":7,"data":null,"hex":%q}],
 "scenarios":[{"name":"implicit","seed":1,"messages":[%s,%s,%s],"state":%s,"dclDiverges":true,"note":"n"}]}`,
			putTimestamp, hexes[0], legacyHex, hexes[0], hexes[1], hexes[2], state)
	}
	const legacy = "0c000000070000000002010007000000"
	tests := []struct {
		name    string
		file    []byte
		wantErr int
	}{
		{"correct", file(1, legacy, good), 0},
		{"wrong state", file(1, legacy, strings.Replace(good, `"02"`, `"03"`, 1)), 1},
		{"state with a deleted row kept", file(1, legacy, strings.Replace(good, `"deletedEntities":[{"number":512,"version":0}]`, `"deletedEntities":[]`, 1)), 1},
		{"wrong field", file(2, legacy, good), 1},
		{"truncated message", file(1, legacy[:24], good), 1},
		{"unknown field", bytes.Replace(file(1, legacy, good), []byte(`"note":"n"`), []byte(`"notes":"n"`), 1), 1},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, errs := verifyDCLVectors(raw); len(errs) != tc.wantErr {
				t.Fatalf("%d errors %v, want %d", len(errs), errs, tc.wantErr)
			}
		})
	}
}

// TestDCLExampleScene merges the example scene state file @dcl/ecs wrote (testdata/dcl, from the
// generator helper) and compares it with the state @dcl/ecs reports for it.
func TestDCLExampleScene(t *testing.T) {
	scene, err1 := os.ReadFile(filepath.Join("testdata", "dcl", "example-scene.crdt"))
	state, err2 := os.ReadFile(filepath.Join("testdata", "dcl", "example-scene.state.json"))
	if err1 != nil || err2 != nil {
		t.Skipf("example scene not generated: %v %v", err1, err2)
	}
	var want StateJSON
	if err := json.Unmarshal(state, &want); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	r := New(Config{})
	if _, err := r.MergeStream(scene); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(r.StateJSON()); !bytes.Equal(got, wantJSON) {
		t.Fatalf("scene state\n got %s\nwant %s", got, wantJSON)
	}
}
