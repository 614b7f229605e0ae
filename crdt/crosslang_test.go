package crdt_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/testkit/golden"
)

// crossPath is the file of replica hashes, digests and canonical states that the JavaScript
// replica (web/static/js/crdt.js, tested by web/test/crdt.test.js) must reproduce exactly.
var crossPath = filepath.Join("..", "testdata", "crdt", "hashes.json")

// crossFile is the layout of testdata/crdt/hashes.json.
type crossFile struct {
	Note  string      `json:"note"`
	Cases []crossCase `json:"cases"`
}

// crossCase is one replica: the messages that build it (for "dcl" cases, the messages of the
// scenario of the same name, in the same position, in crdt/testdata/dcl/vectors.json), and what
// Go computes from it.
type crossCase struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Messages is the stream (hex) of a "random" case: every message, some duplicated, legacy
	// DELETE_ENTITY_NETWORK lengths and unknown types included.
	Messages string `json:"messages,omitempty"`
	// Clock is the replica's Lamport clock after merging every message.
	Clock uint32 `json:"clock"`
	// State is AppendState (hex); Hash is Hash as 16 hex digits.
	State string `json:"state"`
	Hash  string `json:"hash"`
	// Digests256 maps each bucket (of 256) whose digest is not 0 (an empty bucket's) to its digest.
	Digests256 map[string]string `json:"digests256"`
	// Digests7 lists every digest of BucketDigests(7).
	Digests7 []string `json:"digests7"`
	// Bucket5of7 is AppendBucketState(5, 7) (hex).
	Bucket5of7 string `json:"bucket5of7"`
	// Corrections is AppendCorrection of every message of Messages, in stream order, against the
	// final replica ("random" cases only).
	Corrections string `json:"corrections,omitempty"`
	// StateJSON is the canonical JSON state.
	StateJSON crdt.StateJSON `json:"stateJSON"`
}

func hex16(v uint64) string { return fmt.Sprintf("%016x", v) }

// crossRandomStream returns a stream of random messages that exercises every rule: ties, tombstones,
// versions (implicit deletions), network types, the legacy type-7 length, unknown types, extreme
// ids and timestamps, and append sets past their retention.
func crossRandomStream(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x63726f73736c616e))
	numbers := []uint16{0, 1, 2, 7, 255, 256, 511, 512, 513, 700, 65535}
	components := []crdt.ComponentID{1, 2, 1024, 1100, 0x7fffffff, 0xffffffff}
	entity := func() crdt.Entity {
		num := numbers[rng.IntN(len(numbers))]
		var ver uint16
		switch k := rng.IntN(100); {
		case k == 0:
			ver = 65535
		case k < 12:
			ver = uint16(1 + rng.IntN(3))
		}
		return crdt.NewEntity(num, ver)
	}
	ts := func() crdt.Timestamp {
		if rng.IntN(30) == 0 {
			return 0xffffffff
		}
		return crdt.Timestamp(rng.IntN(12))
	}
	data := func() []byte {
		d := make([]byte, rng.IntN(4))
		if rng.IntN(20) == 0 {
			d = make([]byte, 40+rng.IntN(200))
		}
		for i := range d {
			d[i] = byte(rng.IntN(3))
		}
		return d
	}
	var out []byte
	var prev []byte
	for range n {
		start := len(out)
		switch k := rng.IntN(20); {
		case k == 11 && rng.IntN(3) != 0, k == 12 && rng.IntN(3) != 0:
			m := crdt.Message{Type: crdt.AppendValue, Entity: entity(), Component: components[rng.IntN(len(components))], Timestamp: ts(), Data: data()}
			out = crdt.AppendMessage(out, &m)
		case k < 6:
			m := crdt.Message{Type: crdt.PutComponent, Entity: entity(), Component: components[rng.IntN(len(components))], Timestamp: ts(), Data: data()}
			out = crdt.AppendMessage(out, &m)
		case k < 8:
			m := crdt.Message{Type: crdt.PutComponentNetwork, Entity: entity(), Component: components[rng.IntN(len(components))], Timestamp: ts(), NetworkID: rng.Uint32(), Data: data()}
			out = crdt.AppendMessage(out, &m)
		case k < 10:
			m := crdt.Message{Type: crdt.DeleteComponent, Entity: entity(), Component: components[rng.IntN(len(components))], Timestamp: ts()}
			out = crdt.AppendMessage(out, &m)
		case k < 11:
			m := crdt.Message{Type: crdt.DeleteComponentNetwork, Entity: entity(), Component: components[rng.IntN(len(components))], Timestamp: ts(), NetworkID: rng.Uint32()}
			out = crdt.AppendMessage(out, &m)
		case k < 12:
			m := crdt.Message{Type: crdt.DeleteEntity, Entity: entity()}
			out = crdt.AppendMessage(out, &m)
		case k < 13:
			m := crdt.Message{Type: crdt.DeleteEntityNetwork, Entity: entity(), NetworkID: rng.Uint32()}
			out = crdt.AppendMessage(out, &m)
			if rng.IntN(2) == 0 {
				binary.LittleEndian.PutUint32(out[start:], 12) // the length @dcl/ecs ≤ 7.27 wrote
			}
		case k < 18:
			m := crdt.Message{Type: crdt.AppendValue, Entity: entity(), Component: components[rng.IntN(len(components))], Timestamp: ts(), Data: data()}
			out = crdt.AppendMessage(out, &m)
		case k < 19:
			m := crdt.Message{Type: crdt.MessageType(8 + rng.IntN(100)), Data: data()}
			out = crdt.AppendMessage(out, &m)
		default:
			if prev != nil {
				out = append(out, prev...) // a duplicate delivery
			}
		}
		prev = bytes.Clone(out[start:])
	}
	return out
}

// crossAppendFlood returns a stream of 400 distinct append values to two keys, far past the
// retention of 128, with repeated values at higher timestamps.
func crossAppendFlood(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []byte
	for i := range 400 {
		e := crdt.NewEntity(600, 0)
		c := uint32(2000 + i%2)
		v := []byte{byte(rng.IntN(256)), byte(rng.IntN(3))}
		m := crdt.Message{Type: crdt.AppendValue, Entity: e, Component: crdt.ComponentID(c), Timestamp: crdt.Timestamp(rng.IntN(50)), Data: v}
		out = crdt.AppendMessage(out, &m)
	}
	return out
}

// crossWide returns a stream of puts, tombstones and appends over thousands of entity numbers, so
// that every bucket of a digest holds something and the canonical order sorts many entities.
func crossWide(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	var out []byte
	for range 1000 {
		e := crdt.NewEntity(uint16(rng.IntN(65536)), uint16(rng.IntN(2)))
		c := crdt.ComponentID(1024 + rng.IntN(3))
		v := []byte{byte(rng.IntN(256)), byte(rng.IntN(256))}
		m := crdt.Message{Type: crdt.PutComponent, Entity: e, Component: c, Timestamp: crdt.Timestamp(1 + rng.IntN(1000)), Data: v}
		switch rng.IntN(10) {
		case 0:
			m.Type, m.Data = crdt.DeleteComponent, nil
		case 1:
			m.Type = crdt.AppendValue
		case 2:
			m = crdt.Message{Type: crdt.DeleteEntity, Entity: e}
		}
		out = crdt.AppendMessage(out, &m)
	}
	return out
}

func crossCaseOf(name, source string, stream []byte, withMessages bool) (crossCase, error) {
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(stream); err != nil {
		return crossCase{}, fmt.Errorf("%s: %w", name, err)
	}
	c := crossCase{
		Name:       name,
		Source:     source,
		Clock:      uint32(r.Clock()),
		State:      hex.EncodeToString(r.AppendState(nil)),
		Hash:       hex16(r.Hash()),
		Digests256: map[string]string{},
		Bucket5of7: hex.EncodeToString(r.AppendBucketState(nil, 5, 7)),
		StateJSON:  r.StateJSON(),
	}
	for b, d := range r.BucketDigests(256, nil) {
		if d != 0 {
			c.Digests256[strconv.Itoa(b)] = hex16(d)
		}
	}
	for _, d := range r.BucketDigests(7, nil) {
		c.Digests7 = append(c.Digests7, hex16(d))
	}
	if withMessages {
		c.Messages = hex.EncodeToString(stream)
		var rd crdt.Reader
		var m crdt.Message
		var corr []byte
		for rd.Reset(stream); rd.Next(&m) == nil; {
			corr = r.AppendCorrection(corr, &m)
		}
		c.Corrections = hex.EncodeToString(corr)
	}
	return c, nil
}

// buildCrossFile computes every case from the @dcl/ecs vectors and the seeded random streams.
func buildCrossFile() (*crossFile, error) {
	raw, err := os.ReadFile(filepath.Join("testdata", "dcl", "vectors.json"))
	if err != nil {
		return nil, err
	}
	var v struct {
		Scenarios []struct {
			Name     string   `json:"name"`
			Messages []string `json:"messages"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	f := &crossFile{Note: "Written by `go test ./crdt -run TestCrossLanguageVectors -update` (crdt/crosslang_test.go); " +
		"checked by that test and by web/test/crdt.test.js. Hashes and digests are set hashes (the sum mod 2^64 of fmix64(FNV-1a 64) over the canonical messages, docs/protocol.md §3) as 16 hex digits."}
	for _, sc := range v.Scenarios {
		var stream []byte
		for _, h := range sc.Messages {
			b, err := hex.DecodeString(h)
			if err != nil {
				return nil, err
			}
			stream = append(stream, b...)
		}
		c, err := crossCaseOf(sc.Name, "dcl", stream, false)
		if err != nil {
			return nil, err
		}
		f.Cases = append(f.Cases, c)
	}
	for seed := uint64(1); seed <= 6; seed++ {
		c, err := crossCaseOf(fmt.Sprintf("random %d", seed), "random", crossRandomStream(seed, 60*int(seed)), true)
		if err != nil {
			return nil, err
		}
		f.Cases = append(f.Cases, c)
	}
	for _, x := range []struct {
		name   string
		stream []byte
	}{
		{"append flood past retention", crossAppendFlood(1)},
		{"wide world", crossWide(1)},
	} {
		c, err := crossCaseOf(x.name, "random", x.stream, true)
		if err != nil {
			return nil, err
		}
		f.Cases = append(f.Cases, c)
	}
	return f, nil
}

// marshalCross writes the file compactly, one case per line, so that a change shows as a small diff.
func marshalCross(f *crossFile) ([]byte, error) {
	note, err := json.Marshal(f.Note)
	if err != nil {
		return nil, err
	}
	out := fmt.Appendf(nil, "{\"note\": %s,\n\"cases\": [\n", note)
	for i := range f.Cases {
		b, err := json.Marshal(&f.Cases[i])
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		if i < len(f.Cases)-1 {
			out = append(out, ',')
		}
		out = append(out, '\n')
	}
	return append(out, "]}\n"...), nil
}

// TestCrossLanguageVectors writes (with -update) or checks testdata/crdt/hashes.json: what Go
// computes for every @dcl/ecs scenario and for seeded random streams. The JavaScript replica must
// compute the same bytes, so the file must match what this Go code produces.
func TestCrossLanguageVectors(t *testing.T) {
	f, err := buildCrossFile()
	if err != nil {
		t.Fatal(err)
	}
	got, err := marshalCross(f)
	if err != nil {
		t.Fatal(err)
	}
	if golden.Check(t, crossPath, got, "go test ./crdt -run TestCrossLanguageVectors -update") {
		return
	}
	// The file must hold something that can fail: every random case has messages and a state.
	for _, c := range f.Cases {
		if c.Source == "random" && (c.Messages == "" || c.State == "") {
			t.Fatalf("case %q is empty", c.Name)
		}
	}
}
