package netmsg

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// addGoldenSeeds adds the hex of every committed vector (valid and invalid)
// whose first byte satisfies keep.
func addGoldenSeeds(f *testing.F, keep func(Type) bool) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var vecs []struct {
			Hex string `json:"hex"`
		}
		if json.Unmarshal(raw, &vecs) != nil {
			continue // fragmentation.json, mask_width.json
		}
		for _, v := range vecs {
			b, err := hex.DecodeString(v.Hex)
			if err == nil && len(b) > 0 && len(b) <= 4096 && keep(Type(b[0])) {
				f.Add(b)
			}
		}
	}
}

// fuzzDecoder checks a typed decoder: no panic; every error is a
// *ProtocolError at an offset inside the input; validate-only (nil value)
// agrees with decoding; a decoded message re-encodes to exactly the bytes it
// came from; decoding into a dirty, reused value gives the same result.
// decodeValidates decodes b into m and validates it (a nil message): both must agree, an error
// must be a *ProtocolError within b, and a success must consume 1..len(b) bytes. ok: it decoded.
func decodeValidates[T any](t *testing.T, b []byte, m *T, consume func([]byte, *T) (int, error)) (n int, ok bool) {
	t.Helper()
	n, err := consume(b, m)
	nv, errv := consume(b, nil)
	if n != nv || (err == nil) != (errv == nil) {
		t.Fatalf("decode n=%d err=%v, validate n=%d err=%v", n, err, nv, errv)
	}
	if err != nil {
		checkProtocolError(t, err, len(b))
		if errv.Error() != err.Error() {
			t.Fatalf("decode error %v, validate error %v", err, errv)
		}
		return 0, false
	}
	if n <= 0 || n > len(b) {
		t.Fatalf("n = %d for %d bytes", n, len(b))
	}
	return n, true
}

func fuzzDecoder[T any](f *testing.F, typ Type, consume func([]byte, *T) (int, error), appendT func([]byte, *T) []byte) {
	addGoldenSeeds(f, func(t Type) bool { return t == typ })
	f.Add([]byte{byte(typ)})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m T
		n, ok := decodeValidates(t, b, &m, consume)
		if !ok {
			return
		}
		enc := appendT(nil, &m)
		if !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", enc, b[:n])
		}
		var m2 T
		if n2, err := consume(enc, &m2); err != nil || n2 != len(enc) || !reflect.DeepEqual(m, m2) {
			t.Fatalf("second decode: n=%d err=%v\n%+v\n%+v", n2, err, m, m2)
		}
		// m2 is now dirty; decoding b again into it must give m.
		if _, err := consume(b, &m2); err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("reused decode differs: %v\n%+v\n%+v", err, m, m2)
		}
	})
}

func checkProtocolError(t *testing.T, err error, n int) {
	t.Helper()
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *ProtocolError", err)
	}
	if pe.Offset < 0 || pe.Offset > n {
		t.Fatalf("error offset %d outside input of %d bytes: %v", pe.Offset, n, err)
	}
	for _, s := range errorNames {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v wraps no sentinel", err)
}

func FuzzConsumeHostSnapshot(f *testing.F) {
	fuzzDecoder(f, TypeHostSnapshot, ConsumeHostSnapshot, AppendHostSnapshot)
}

func FuzzConsumePeerEntered(f *testing.F) {
	fuzzDecoder(f, TypePeerEntered, ConsumePeerEntered, AppendPeerEntered)
}

func FuzzConsumePeerExited(f *testing.F) {
	fuzzDecoder(f, TypePeerExited, ConsumePeerExited, AppendPeerExited)
}

func FuzzConsumeHostCommands(f *testing.F) {
	fuzzDecoder(f, TypeHostCommands, ConsumeHostCommands, AppendHostCommands)
}

func FuzzConsumePeerCommands(f *testing.F) {
	fuzzDecoder(f, TypePeerCommands, ConsumePeerCommands, AppendPeerCommands)
}

func FuzzConsumeEntityUpdates(f *testing.F) {
	fuzzDecoder(f, TypeEntityUpdates, ConsumeEntityUpdates, AppendEntityUpdates)
}

func FuzzConsumeFragment(f *testing.F) {
	fuzzDecoder(f, TypeFragment, ConsumeFragment, AppendFragment)
}

func FuzzConsumeCrdtBatch(f *testing.F) {
	fuzzDecoder(f, TypeCrdtBatch, ConsumeCrdtBatch, AppendCrdtBatch)
}

func FuzzConsumePing(f *testing.F) {
	fuzzDecoder(f, TypePing, ConsumePing, AppendPing)
}

func FuzzConsumePong(f *testing.F) {
	fuzzDecoder(f, TypePong, ConsumePong, AppendPong)
}

func FuzzConsumeClose(f *testing.F) {
	fuzzDecoder(f, TypeClose, ConsumeClose, AppendClose)
}

func FuzzConsumeHello(f *testing.F) {
	fuzzDecoder(f, TypeHello, ConsumeHello, AppendHello)
}

func FuzzConsumeRelay(f *testing.F) {
	fuzzDecoder(f, TypeRelay, ConsumeRelay, AppendRelay)
}

func FuzzConsumeActions(f *testing.F) {
	fuzzDecoder(f, TypeActions, ConsumeActions, AppendActions)
}

func FuzzConsumeForget(f *testing.F) {
	fuzzDecoder(f, TypeForget, ConsumeForget, AppendForget)
}

func FuzzConsumePackedUpdates(f *testing.F) {
	fuzzDecoder(f, TypePackedUpdates, ConsumePackedUpdates, AppendPackedUpdates)
}

// FuzzConsumeRunUpdates: a decoder takes any split of the updates into runs, the encoder makes
// the longest (up to MaxRun), so the property is on the updates, not the bytes: re-encoded, they
// decode to the same, and the re-encoding is stable; decoding never yields more updates than
// the body has bytes.
func FuzzConsumeRunUpdates(f *testing.F) {
	addGoldenSeeds(f, func(t Type) bool { return t == TypeRunUpdates })
	f.Add([]byte{byte(TypeRunUpdates)})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m EntityUpdates
		n, ok := decodeValidates(t, b, &m, ConsumeRunUpdates)
		if !ok {
			return
		}
		if len(m.Updates) > n {
			t.Fatalf("%d updates from %d bytes", len(m.Updates), n)
		}
		enc := AppendRunUpdates(nil, &m)
		if len(enc) > n {
			t.Fatalf("re-encoding of %d bytes is longer than the %d decoded", len(enc), n)
		}
		var m2 EntityUpdates
		if n2, err := ConsumeRunUpdates(enc, &m2); err != nil || n2 != len(enc) || !reflect.DeepEqual(m, m2) {
			t.Fatalf("second decode: n=%d err=%v\n%+v\n%+v", n2, err, m, m2)
		}
		if again := AppendRunUpdates(nil, &m2); !bytes.Equal(again, enc) {
			t.Fatalf("re-encoding not stable:\n got %x\nwant %x", again, enc)
		}
		// The same updates as PackedUpdates decode to the same.
		var m3 EntityUpdates
		if _, err := ConsumePackedUpdates(AppendPackedUpdates(nil, &m), &m3); err != nil || !reflect.DeepEqual(m, m3) {
			t.Fatalf("as PackedUpdates: %v\n%+v\n%+v", err, m, m3)
		}
	})
}

func FuzzConsumeDeltaUpdates(f *testing.F) {
	fuzzDecoder(f, TypeDeltaUpdates, ConsumeDeltaUpdates, AppendDeltaUpdates)
}

func FuzzConsumeAck(f *testing.F) {
	fuzzDecoder(f, TypeAck, ConsumeAck, AppendAck)
}

func FuzzConsumeExt(f *testing.F) {
	addGoldenSeeds(f, Type.IsFramed)
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, body, n, err := ConsumeExt(b)
		if err != nil {
			checkProtocolError(t, err, len(b))
			if len(b) > 0 && !Type(b[0]).IsFramed() && !errors.Is(err, ErrWrongType) {
				t.Fatalf("TRNP type %d: %v", b[0], err)
			}
			return
		}
		if n != extHeaderSize+len(body) || n > len(b) || typ != Type(b[0]) {
			t.Fatalf("n=%d body=%d type=%v", n, len(body), typ)
		}
		if enc := AppendExt(nil, typ, body); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", enc, b[:n])
		}
		// A known type's own decoder accepts at most what the frame does.
		if typ.Known() {
			if nk, err := messageLen(b); err == nil && nk != n {
				t.Fatalf("typed decoder consumed %d, frame %d", nk, n)
			}
		}
	})
}

type readResult struct {
	msgs [][]byte // raw messages
	ends []int    // end offset of each message
	err  error
}

// readPayload walks b with a Reader, checking each message against its
// typed decoder.
func readPayload(t *testing.T, b []byte) readResult {
	t.Helper()
	var res readResult
	r := NewReader(b)
	for i := 0; r.More(); i++ {
		if i > len(b) {
			t.Fatal("Reader does not advance")
		}
		m, err := r.Next()
		if err != nil && !errors.Is(err, ErrUnknownType) {
			checkProtocolError(t, err, len(b))
			res.err = err
			return res
		}
		if len(m.Raw) == 0 || m.Type != Type(m.Raw[0]) {
			t.Fatalf("message %d: type %v raw %x", i, m.Type, m.Raw)
		}
		if nk, derr := codecFor(m.Type).consume(m.Raw); derr != nil || nk != len(m.Raw) {
			t.Fatalf("Reader accepted a %v its decoder rejects: n=%d err=%v", m.Type, nk, derr)
		}
		res.msgs = append(res.msgs, m.Raw)
		res.ends = append(res.ends, r.Offset())
	}
	return res
}

// FuzzReader walks a payload whole and split in two halves. Messages are
// self-delimiting, so when both halves read cleanly the whole reads as
// their concatenation, and when the whole reads cleanly each half split at a
// message boundary reads cleanly.
func FuzzReader(f *testing.F) {
	addGoldenSeeds(f, func(Type) bool { return true })
	f.Fuzz(func(t *testing.T, b []byte) {
		whole := readPayload(t, b)
		k := len(b) / 2
		if len(b) > 0 {
			k = int(b[len(b)-1]) % (len(b) + 1)
		}
		a, c := readPayload(t, b[:k]), readPayload(t, b[k:])
		if a.err == nil && c.err == nil {
			if whole.err != nil {
				t.Fatalf("halves read cleanly, whole fails: %v", whole.err)
			}
			if !reflect.DeepEqual(whole.msgs, append(a.msgs, c.msgs...)) {
				t.Fatal("whole and halves differ")
			}
		}
		if whole.err == nil {
			boundary := k == 0
			for _, e := range whole.ends {
				boundary = boundary || e == k
			}
			if boundary && (a.err != nil || c.err != nil) {
				t.Fatalf("split at boundary %d fails: %v / %v", k, a.err, c.err)
			}
		}
	})
}

// FuzzReassembler drives a Reassembler with a compact stream of fragments
// and compares it with a direct model of the rules in WIRE.md.
func FuzzReassembler(f *testing.F) {
	f.Add([]byte{1, 10, 0, 0, 0, 4, 1, 10, 0, 4, 0, 6})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 2, 200, 0, 0, 0, 63, 2, 200, 0, 63, 0, 63})
	f.Add([]byte{1, 10, 0, 4, 0, 4, 3, 5, 0, 0, 0, 5})
	f.Fuzz(reasmBody)
}

var reasmChunks = pattern(64+256, 0)

func reasmBody(t *testing.T, ops []byte) {
	if len(ops) > 24*6 {
		ops = ops[:24*6] // keep inputs short: minimizing long ones takes minutes
	}
	{
		const maxTotal = 250
		r := NewReassembler(Config{MaxTotal: maxTotal})
		var (
			active bool
			id     uint32
			total  uint32
			want   []byte
		)
		for i := 0; i+6 <= len(ops); i += 6 {
			op := ops[i : i+6]
			fr := Fragment{
				MessageID:   uint32(op[0] & 3),
				TotalLength: uint32(binary.LittleEndian.Uint16(op[1:])) % 300,
				Offset:      uint32(binary.LittleEndian.Uint16(op[3:])) % 300,
				Chunk:       reasmChunks[op[0] : int(op[0])+int(op[5]%64)],
			}
			// The model.
			ok := true
			if !active {
				ok = fr.Offset == 0 && fr.TotalLength <= maxTotal
				total = fr.TotalLength
				want = want[:0]
			} else {
				ok = fr.MessageID == id && fr.TotalLength == total && fr.Offset == uint32(len(want))
			}
			ok = ok && fr.Offset+uint32(len(fr.Chunk)) <= total && (len(fr.Chunk) > 0 || total == 0)
			payload, done, err := r.Push(&fr)
			if ok != (err == nil) {
				t.Fatalf("op %d %+v: err = %v, model ok = %v", i/6, fr, err, ok)
			}
			if !ok {
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Offset != -1 || pe.Type != TypeFragment || !errors.Is(err, ErrFragment) {
					t.Fatalf("error %v is not a reassembly *ProtocolError", err)
				}
				active, want = false, want[:0]
				if r.InProgress() {
					t.Fatal("in progress after an error")
				}
				continue
			}
			id, active = fr.MessageID, true
			want = append(want, fr.Chunk...)
			wantDone := uint32(len(want)) == total
			if done != wantDone {
				t.Fatalf("op %d: done = %v, want %v", i/6, done, wantDone)
			}
			if done {
				if !bytes.Equal(payload, want) {
					t.Fatalf("payload %x, want %x", payload, want)
				}
				active = false
			} else if r.Buffered() != len(want) {
				t.Fatalf("Buffered %d, want %d", r.Buffered(), len(want))
			}
		}
	}
}

// FuzzFragmenter cuts a payload and reassembles it.
func FuzzFragmenter(f *testing.F) {
	f.Add([]byte("a payload"), uint16(FragmentOverhead+2), uint32(1))
	f.Add([]byte{}, uint16(0), uint32(0))
	f.Add(bytes.Repeat([]byte{7}, 5000), uint16(1000), uint32(99))
	f.Fuzz(func(t *testing.T, payload []byte, max uint16, id uint32) {
		mf := int(max) % (MaxReliableMessage + 1)
		if mf != 0 && mf <= FragmentOverhead {
			mf += FragmentOverhead + 1
		}
		fr := NewFragmenter(payload, id, mf)
		var r Reassembler
		var buf []byte
		count := 0
		for done := false; !done; {
			var ok bool
			buf, ok = fr.Next(buf[:0])
			if !ok {
				t.Fatal("fragments ended before the payload was complete")
			}
			count++
			if CheckReliable(buf) != nil || (mf != 0 && len(buf) > mf) {
				t.Fatalf("fragment of %d bytes, limit %d", len(buf), mf)
			}
			var m Fragment
			if _, err := ConsumeFragment(buf, &m); err != nil || m.MessageID != id {
				t.Fatalf("ConsumeFragment: %v", err)
			}
			var got []byte
			var err error
			got, done, err = r.Push(&m)
			if err != nil {
				t.Fatal(err)
			}
			if done && !bytes.Equal(got, payload) {
				t.Fatal("reassembled payload differs")
			}
		}
		if _, ok := fr.Next(nil); ok {
			t.Fatal("fragments after the payload was complete")
		}
		if count != FragmentCount(len(payload), mf) {
			t.Fatalf("%d fragments, FragmentCount %d", count, FragmentCount(len(payload), mf))
		}
	})
}

// FuzzEntityUpdatesWriter fills a buffer under a limit with updates drawn
// from the input and checks the result decodes to exactly what was added.
func FuzzEntityUpdatesWriter(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint16(MaxDatagram))
	f.Add(bytes.Repeat([]byte{0xff}, 300), uint16(100))
	f.Fuzz(func(t *testing.T, in []byte, limit uint16) {
		var w EntityUpdatesWriter
		lim := int(limit)
		if !w.Reset(nil, uint64(len(in)), lim) {
			if lim > 0 && lim >= entityUpdatesHeaderSize {
				t.Fatalf("Reset failed under limit %d", lim)
			}
			return
		}
		if lim <= 0 {
			lim = MaxDatagram
		}
		var added []Update
		for i := 0; i+3 <= len(in); i += 3 {
			wd := Width(in[i] % 3)
			u := Update{
				NetworkID: uint64(in[i+1]) << (in[i] % 57),
				Width:     wd,
				Mask:      uint32(in[i+2]) << (8 * (wd.Bytes() - 1)),
				Data:      pattern(int(in[i+1])%50, in[i+2]),
			}
			fits := w.Fits(&u)
			if w.Add(&u) != fits {
				t.Fatal("Add disagrees with Fits")
			}
			if fits {
				added = append(added, u)
			}
			if w.Len() > lim {
				t.Fatalf("Len %d over limit %d", w.Len(), lim)
			}
		}
		var m EntityUpdates
		n, err := ConsumeEntityUpdates(w.Bytes(), &m)
		if err != nil || n != w.Len() || len(m.Updates) != len(added) || w.Count() != len(added) {
			t.Fatalf("decode: n=%d err=%v updates=%d added=%d", n, err, len(m.Updates), len(added))
		}
		for i := range added {
			a, g := added[i], m.Updates[i]
			if a.NetworkID != g.NetworkID || a.Width != g.Width || a.Mask != g.Mask || !bytes.Equal(a.Data, g.Data) {
				t.Fatalf("update %d: %+v, want %+v", i, g, a)
			}
		}
	})
}
