package crdt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// vectorSeeds returns the message bytes of the @dcl/ecs vectors, when the file is there.
func vectorSeeds() [][]byte {
	raw, err := os.ReadFile(filepath.Join("testdata", "dcl", "vectors.json"))
	if err != nil {
		return nil
	}
	var v dclVectors
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out [][]byte
	for _, m := range v.Messages {
		if b, err := hex.DecodeString(m.Hex); err == nil && len(b) < 1024 {
			out = append(out, b)
		}
	}
	for _, sc := range v.Scenarios {
		var stream []byte
		for _, h := range sc.Messages {
			if b, err := hex.DecodeString(h); err == nil {
				stream = append(stream, b...)
			}
		}
		if len(stream) < 4096 {
			out = append(out, stream)
		}
	}
	return out
}

func goldenSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, g := range goldenMessages {
		out = append(out, mustHex(t, g.hex))
	}
	return out
}

func FuzzConsumeMessage(f *testing.F) {
	for _, b := range append(goldenSeeds(f), vectorSeeds()...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		n, err := ConsumeMessage(b, &m)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with n=%d", err, n)
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBadLength) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if n < HeaderSize || n > len(b) {
			t.Fatalf("n=%d of %d", n, len(b))
		}
		enc := AppendMessage(nil, &m)
		if len(enc) != SizeMessage(&m) {
			t.Fatalf("SizeMessage %d, wrote %d", SizeMessage(&m), len(enc))
		}
		legacy := m.Type == DeleteEntityNetwork && le.Uint32(b) == legacyDeleteEntityNetworkLength
		if !legacy && !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoded %x, input %x", enc, b[:n])
		}
		var m2 Message
		n2, err := ConsumeMessage(enc, &m2)
		if err != nil || n2 != len(enc) || !reflect.DeepEqual(m, m2) {
			t.Fatalf("decode(encode) = %+v, %d, %v; want %+v", m2, n2, err, m)
		}
		if enc2 := AppendMessage(nil, &m2); !bytes.Equal(enc, enc2) {
			t.Fatal("encoding not stable")
		}
		// Merging any decoded message never panics, and a second merge never applies.
		r := New(Config{AppendRetention: 2})
		r.Merge(&m)
		if r.Merge(&m) == Applied {
			t.Fatalf("second merge of %+v applied", m)
		}
		r.AppendCorrection(nil, &m)
	})
}

func FuzzReader(f *testing.F) {
	for _, b := range append(goldenSeeds(f), vectorSeeds()...) {
		f.Add(b, uint16(len(b)/2))
	}
	f.Add(mustHex(f, "0c000000 03000000 00020000 00000000 2a000000"), uint16(12))
	f.Fuzz(func(t *testing.T, b []byte, split uint16) {
		var rd Reader
		rd.Reset(b)
		var m Message
		var msgs []Message
		var ends []int
		for steps := 0; ; steps++ {
			if steps > len(b)/HeaderSize+1 {
				t.Fatal("reader loops")
			}
			err := rd.Next(&m)
			if err == io.EOF {
				if rd.Offset() != len(b) {
					t.Fatalf("EOF at %d of %d", rd.Offset(), len(b))
				}
				break
			}
			if err != nil {
				var se *StreamError
				if !errors.As(err, &se) || se.Offset != rd.Offset() || se.Offset >= len(b) {
					t.Fatalf("error %v at reader offset %d, len %d", err, rd.Offset(), len(b))
				}
				break
			}
			if !m.Type.Known() {
				t.Fatalf("unknown type %d returned", m.Type)
			}
			m.Data = bytes.Clone(m.Data)
			msgs = append(msgs, m)
			ends = append(ends, rd.Offset())
		}
		// Split: reading a prefix yields exactly the messages that end inside it.
		k := int(split) % (len(b) + 1)
		want, lastEnd := 0, 0
		for i, e := range ends {
			if e <= k {
				want, lastEnd = i+1, e
			}
		}
		var prd Reader
		prd.Reset(b[:k])
		got := 0
		for {
			err := prd.Next(&m)
			if err != nil {
				var se *StreamError
				if err != io.EOF && (!errors.As(err, &se) || se.Offset < lastEnd || se.Offset > k) {
					t.Fatalf("prefix %d: error %v, last full message ends at %d", k, err, lastEnd)
				}
				break
			}
			m.Data = bytes.Clone(m.Data)
			if got >= len(msgs) || !reflect.DeepEqual(m, msgs[got]) {
				t.Fatalf("prefix %d: message %d differs", k, got)
			}
			got++
		}
		if got != want {
			t.Fatalf("prefix %d: %d messages, want %d", k, got, want)
		}
		// MergeStream sees the same messages.
		r1, r2 := New(Config{}), New(Config{})
		for i := range msgs {
			r1.Merge(&msgs[i])
		}
		r2.MergeStream(b)
		if r1.Hash() != r2.Hash() {
			t.Fatal("MergeStream differs from merging the read messages")
		}
	})
}

// opsFromBytes turns fuzz bytes into messages over a small key space, 4 bytes per message, so
// that random inputs produce meaningful conflicts.
func opsFromBytes(b []byte) []Message {
	var out []Message
	for ; len(b) >= 4; b = b[4:] {
		m := Message{
			Entity:    NewEntity(512+uint16(b[1]%4), uint16(b[1]>>2)%4),
			Component: ComponentID(b[2] % 3),
			Timestamp: Timestamp(b[2] >> 3 % 6),
		}
		switch b[0] % 8 {
		case 0, 1:
			m.Type = PutComponent
		case 2:
			m.Type = PutComponentNetwork
		case 3:
			m.Type = DeleteComponent
		case 4:
			m.Type = DeleteComponentNetwork
		case 5:
			m.Type = AppendValue
		case 6:
			m.Type, m.Component, m.Timestamp = DeleteEntity, 0, 0
		case 7:
			if b[0]&8 != 0 {
				m.Type, m.Component, m.Timestamp = DeleteEntityNetwork, 0, 0
			} else {
				m.Type = AppendValue
			}
		}
		if m.Type.HasData() {
			m.Data = []byte(dataPool[int(b[3])%len(dataPool)])
		}
		out = append(out, m)
	}
	return out
}

func FuzzMergeCommutes(f *testing.F) {
	f.Add([]byte("\x00\x01\x10\x02\x03\x01\x10\x00"), []byte("\x06\x05\x00\x00\x00\x01\x10\x05"))
	f.Add([]byte("\x05\x00\x08\x01\x05\x00\x10\x02\x05\x00\x18\x03\x05\x00\x00\x04"), []byte("\x05\x00\x08\x04\x05\x00\x28\x01"))
	seeds := goldenSeeds(f)
	f.Add(seeds[0], seeds[2])
	f.Fuzz(func(t *testing.T, a, b []byte) {
		cfg := Config{AppendRetention: 3}
		opsA, opsB := opsFromBytes(a), opsFromBytes(b)
		ab, ba := New(cfg), New(cfg)
		mergeAll(ab, opsA...)
		ab.MergeStream(a)
		mergeAll(ab, opsB...)
		ab.MergeStream(b)
		ba.MergeStream(b)
		mergeAll(ba, opsB...)
		ba.MergeStream(a)
		mergeAll(ba, opsA...)
		if ab.Hash() != ba.Hash() {
			t.Fatalf("A then B:\n%s\nB then A:\n%s", stateString(t, ab), stateString(t, ba))
		}
		// Idempotent: merging A again changes nothing.
		h := ab.Hash()
		mergeAll(ab, opsA...)
		if ab.Hash() != h {
			t.Fatal("merging A twice changed the state")
		}
		// State-based join agrees with the operation-based merge.
		ra, rb := New(cfg), New(cfg)
		mergeAll(ra, opsA...)
		ra.MergeStream(a)
		mergeAll(rb, opsB...)
		rb.MergeStream(b)
		if j := join(t, cfg, rb, ra); j.Hash() != h {
			t.Fatal("join of the exports differs")
		}
		// And the structured operations match the declarative reference.
		ref := New(cfg)
		both := append(append([]Message(nil), opsA...), opsB...)
		mergeAll(ref, both...)
		if got, want := stateString(t, ref), referenceJSON(t, both, cfg.AppendRetention); got != want {
			t.Fatalf("state %s\nreference %s", got, want)
		}
	})
}
