package crdt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestEntity(t *testing.T) {
	e := NewEntity(512, 3)
	if uint32(e) != 3<<16|512 || e.Number() != 512 || e.Version() != 3 || e.String() != "512.3" {
		t.Fatalf("NewEntity(512, 3) = %d (%d, %d, %s)", e, e.Number(), e.Version(), e)
	}
	if e := NewEntity(0xffff, 0xffff); uint32(e) != 0xffffffff {
		t.Fatalf("NewEntity(max, max) = %#x", uint32(e))
	}
}

func TestStrings(t *testing.T) {
	for typ, want := range map[MessageType]string{
		PutComponent: "PUT_COMPONENT", DeleteComponent: "DELETE_COMPONENT", DeleteEntity: "DELETE_ENTITY",
		AppendValue: "APPEND_VALUE", PutComponentNetwork: "PUT_COMPONENT_NETWORK",
		DeleteComponentNetwork: "DELETE_COMPONENT_NETWORK", DeleteEntityNetwork: "DELETE_ENTITY_NETWORK",
		0: "MessageType(0)", 8: "MessageType(8)",
	} {
		if got := typ.String(); got != want {
			t.Errorf("MessageType(%d).String() = %q, want %q", uint32(typ), got, want)
		}
	}
	for o, want := range map[Outcome]string{NoChange: "NoChange", Applied: "Applied", Outdated: "Outdated", Ignored: "Ignored", Invalid: "Invalid", 9: "Outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, want)
		}
	}
}

// goldenMessages are @dcl/ecs encodings written out by hand from its writers (all uint32 LE).
var goldenMessages = []struct {
	name string
	hex  string
	msg  Message
}{
	{"put", "1a000000 01000000 00020000 01000000 05000000 02000000 0102",
		Message{Type: PutComponent, Entity: 512, Component: 1, Timestamp: 5, Data: []byte{1, 2}}},
	{"put empty", "18000000 01000000 01020100 ffffffff 00000000 00000000",
		Message{Type: PutComponent, Entity: NewEntity(513, 1), Component: 0xffffffff, Timestamp: 0, Data: []byte{}}},
	{"delete component", "14000000 02000000 00020000 07000000 09000000",
		Message{Type: DeleteComponent, Entity: 512, Component: 7, Timestamp: 9}},
	{"delete entity", "0c000000 03000000 00020200",
		Message{Type: DeleteEntity, Entity: NewEntity(512, 2)}},
	{"append", "1b000000 04000000 00020000 03000000 00000000 03000000 616263",
		Message{Type: AppendValue, Entity: 512, Component: 3, Timestamp: 0, Data: []byte("abc")}},
	{"put network", "1d000000 05000000 05000000 01000000 02000000 2a000000 01000000 ff",
		Message{Type: PutComponentNetwork, Entity: 5, Component: 1, Timestamp: 2, NetworkID: 42, Data: []byte{0xff}}},
	{"delete component network", "18000000 06000000 05000000 01000000 02000000 2a000000",
		Message{Type: DeleteComponentNetwork, Entity: 5, Component: 1, Timestamp: 2, NetworkID: 42}},
	{"delete entity network", "10000000 07000000 05000100 2a000000",
		Message{Type: DeleteEntityNetwork, Entity: NewEntity(5, 1), NetworkID: 42}},
	{"unknown type", "0d000000 09000000 0102030405",
		Message{Type: 9, Data: []byte{1, 2, 3, 4, 5}}},
}

func TestCodecGolden(t *testing.T) {
	for _, tc := range goldenMessages {
		t.Run(tc.name, func(t *testing.T) {
			wire := mustHex(t, tc.hex)
			if got := AppendMessage(nil, &tc.msg); !bytes.Equal(got, wire) {
				t.Fatalf("AppendMessage = %x, want %x", got, wire)
			}
			if n := SizeMessage(&tc.msg); n != len(wire) {
				t.Fatalf("SizeMessage = %d, want %d", n, len(wire))
			}
			// Decode after a trailing message, into a dirty Message: every field must be set.
			in := append(append([]byte(nil), wire...), 0xee, 0xee)
			m := Message{Type: 77, Entity: 1, Component: 2, Timestamp: 3, NetworkID: 4, Data: []byte{9}}
			n, err := ConsumeMessage(in, &m)
			if err != nil || n != len(wire) {
				t.Fatalf("ConsumeMessage = %d, %v; want %d, nil", n, err, len(wire))
			}
			if !reflect.DeepEqual(m, tc.msg) {
				t.Fatalf("decoded %+v, want %+v", m, tc.msg)
			}
			if cap(m.Data) != len(m.Data) {
				t.Fatalf("Data capacity %d not clipped to %d", cap(m.Data), len(m.Data))
			}
		})
	}
}

func TestConsumeLegacyDeleteEntityNetwork(t *testing.T) {
	// @dcl/ecs ≤ 7.27 declared length 12 for the 16 bytes it wrote.
	legacy := mustHex(t, "0c000000 07000000 05000100 2a000000")
	next := mustHex(t, "0c000000 03000000 00020000")
	var m Message
	n, err := ConsumeMessage(append(append([]byte(nil), legacy...), next...), &m)
	if err != nil || n != 16 {
		t.Fatalf("ConsumeMessage(legacy) = %d, %v; want 16, nil", n, err)
	}
	want := Message{Type: DeleteEntityNetwork, Entity: NewEntity(5, 1), NetworkID: 42}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("decoded %+v, want %+v", m, want)
	}
	// Re-encoding writes the 7.28 length.
	if got := AppendMessage(nil, &m); !bytes.Equal(got, mustHex(t, "10000000 07000000 05000100 2a000000")) {
		t.Fatalf("re-encoded %x", got)
	}
	// The stream continues at the next message.
	var rd Reader
	rd.Reset(append(append([]byte(nil), legacy...), next...))
	if err := rd.Next(&m); err != nil || m.Type != DeleteEntityNetwork {
		t.Fatalf("Next = %v, %v", err, m.Type)
	}
	if err := rd.Next(&m); err != nil || m.Type != DeleteEntity || m.Entity != 512 {
		t.Fatalf("Next = %v, %+v", err, m)
	}
	if err := rd.Next(&m); err != io.EOF {
		t.Fatalf("Next at end = %v", err)
	}
	// Only 12 bytes: the networkId is missing.
	if _, err := ConsumeMessage(legacy[:12], &m); !errors.Is(err, ErrTruncated) {
		t.Fatalf("legacy with 12 bytes: %v, want ErrTruncated", err)
	}
}

func TestConsumeMessageErrors(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want error
	}{
		{"empty", "", ErrTruncated},
		{"short header", "0c0000 00", ErrTruncated},
		{"zero length", "00000000 01000000", ErrBadLength},
		{"length 7", "07000000 09000000 00", ErrBadLength},
		{"length past end", "10000000 09000000 0000", ErrTruncated},
		{"too large", "01000001 01000000", ErrTooLarge},
		{"too large before truncation", "ffffffff 01000000", ErrTooLarge},
		{"put below header", "14000000 01000000 00020000 01000000 01000000", ErrBadLength},
		{"put dataLen past end", "18000000 01000000 00020000 01000000 01000000 ffffffff", ErrTruncated},
		{"put dataLen past end of input", "19000000 01000000 00020000 01000000 01000000 05000000 01", ErrTruncated},
		{"put dataLen short of length", "1a000000 01000000 00020000 01000000 01000000 01000000 0102", ErrBadLength},
		{"append dataLen mismatch", "19000000 04000000 00020000 01000000 01000000 00000000 01", ErrBadLength},
		{"put network below header", "18000000 05000000 00020000 01000000 01000000 00000000", ErrBadLength},
		{"put network dataLen past end", "1c000000 05000000 00020000 01000000 01000000 00000000 09000000", ErrTruncated},
		{"delete component long", "18000000 02000000 00020000 01000000 01000000 00000000", ErrBadLength},
		{"delete component short", "10000000 02000000 00020000 01000000", ErrBadLength},
		{"delete component network short", "14000000 06000000 00020000 01000000 01000000", ErrBadLength},
		{"delete entity long", "10000000 03000000 00020000 00000000", ErrBadLength},
		{"delete entity short", "08000000 03000000", ErrBadLength},
		{"delete entity network 20", "14000000 07000000 00020000 00000000 00000000", ErrBadLength},
		{"delete entity network 8", "08000000 07000000", ErrBadLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			n, err := ConsumeMessage(mustHex(t, tc.hex), &m)
			if !errors.Is(err, tc.want) || n != 0 {
				t.Fatalf("ConsumeMessage = %d, %v; want 0, %v", n, err, tc.want)
			}
		})
	}
}

func TestReaderErrorsWithOffsets(t *testing.T) {
	ok := "0c000000 03000000 00020000"                                // 12 bytes
	unknown := "0c000000 2a000000 01020304"                           // 12 bytes, skipped
	put := "19000000 01000000 00020000 01000000 01000000 01000000 aa" // 25 bytes
	tests := []struct {
		name     string
		hex      string
		msgs     int
		skipped  int
		wantErr  error // nil: clean end
		wantOffs int
	}{
		{"clean", ok + put + unknown + ok, 3, 1, nil, 0},
		{"empty", "", 0, 0, nil, 0},
		{"truncated header", ok + "0c00", 1, 0, ErrTruncated, 12},
		{"truncated body", ok + strings.TrimSuffix(put, " aa"), 1, 0, ErrTruncated, 12},
		{"unknown with length below 8", ok + unknown + "04000000 2a000000", 1, 1, ErrBadLength, 24},
		{"unknown with zero length", "00000000 2a000000" + ok, 0, 0, ErrBadLength, 0},
		{"unknown with length past end", ok + "ff000000 2a000000 00", 1, 0, ErrTruncated, 12},
		{"dataLen past end", put + "19000000 01000000 00020000 01000000 01000000 02000000 aa", 1, 0, ErrTruncated, 25},
		{"too large", ok + ok + "00000002 01000000", 2, 0, ErrTooLarge, 24},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := mustHex(t, tc.hex)
			var rd Reader
			rd.Reset(in)
			var m Message
			msgs := 0
			var err error
			for i := 0; ; i++ {
				if i > len(in) { // each step consumes ≥ 8 bytes: this would be a loop
					t.Fatal("reader does not terminate")
				}
				if err = rd.Next(&m); err != nil {
					break
				}
				msgs++
			}
			if msgs != tc.msgs || rd.Skipped() != tc.skipped {
				t.Fatalf("read %d messages, skipped %d; want %d, %d", msgs, rd.Skipped(), tc.msgs, tc.skipped)
			}
			if tc.wantErr == nil {
				if err != io.EOF {
					t.Fatalf("end = %v, want io.EOF", err)
				}
				return
			}
			var se *StreamError
			if !errors.As(err, &se) || !errors.Is(err, tc.wantErr) || se.Offset != tc.wantOffs || rd.Offset() != tc.wantOffs {
				t.Fatalf("err = %v (offset %d, reader at %d), want %v at %d", err, se.Offset, rd.Offset(), tc.wantErr, tc.wantOffs)
			}
			if again := rd.Next(&m); again != err {
				t.Fatalf("error not sticky: %v then %v", err, again)
			}
			// MergeStream reports the same offset and merges what came before.
			r := New(Config{})
			_, merr := r.MergeStream(in)
			if !errors.As(merr, &se) || se.Offset != tc.wantOffs || !errors.Is(merr, tc.wantErr) {
				t.Fatalf("MergeStream err = %v, want %v at %d", merr, tc.wantErr, tc.wantOffs)
			}
		})
	}
}

func TestReaderMaxMessageSize(t *testing.T) {
	put := mustHex(t, "19000000 01000000 00020000 01000000 01000000 01000000 aa")
	rd := Reader{MaxMessageSize: 24}
	rd.Reset(put)
	var m Message
	if err := rd.Next(&m); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Next = %v, want ErrTooLarge", err)
	}
	rd.MaxMessageSize = 25
	rd.Reset(put)
	if err := rd.Next(&m); err != nil {
		t.Fatalf("Next = %v", err)
	}
	r := New(Config{MaxMessageSize: 24})
	if _, err := r.MergeStream(put); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("MergeStream = %v, want ErrTooLarge", err)
	}
}

func TestStreamErrorMessage(t *testing.T) {
	err := error(&StreamError{Offset: 12, Err: ErrTruncated})
	if got := err.Error(); got != "crdt: malformed message at offset 12: crdt: truncated message" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestCodecAllocs(t *testing.T) {
	m := Message{Type: PutComponent, Entity: 512, Component: 1, Timestamp: 5, Data: make([]byte, 44)}
	buf := make([]byte, 0, 256)
	wire := AppendMessage(nil, &m)
	var out Message
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendMessage(buf[:0], &m)
		if _, err := ConsumeMessage(wire, &out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("AppendMessage+ConsumeMessage allocate %v times", n)
	}
	var rd Reader
	stream := bytes.Repeat(wire, 4)
	if n := testing.AllocsPerRun(100, func() {
		rd.Reset(stream)
		for rd.Next(&out) == nil {
		}
	}); n != 0 {
		t.Fatalf("Reader allocates %v times", n)
	}
}
