package authority_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/concordrtc/concord/authority"
)

// recordVectors are the golden encodings of the authority component.
var recordVectors = []struct {
	name string
	rec  authority.Record
	hex  string
}{
	{"host", authority.Record{}, "000000000000000000"},
	{"avatar-of-2", authority.Record{Kind: authority.KindAvatar, Peer: 2}, "010200000000000000"},
	{"lock-by-big", authority.Record{Kind: authority.KindLock, Peer: 0x0102030405060708}, "020807060504030201"},
	{"lock-by-max", authority.Record{Kind: authority.KindLock, Peer: ^authority.PeerIndex(0)}, "02ffffffffffffffff"},
}

func TestRecordGolden(t *testing.T) {
	for _, v := range recordVectors {
		t.Run(v.name, func(t *testing.T) {
			want, _ := hex.DecodeString(v.hex)
			got := authority.AppendRecord([]byte{0xAA}, v.rec)
			if !bytes.Equal(got[1:], want) || got[0] != 0xAA {
				t.Fatalf("AppendRecord = %x, want aa%x", got, want)
			}
			var r authority.Record
			n, err := authority.ConsumeRecord(append(want, 0xEE), &r) // a trailing byte is left alone
			if err != nil || n != authority.RecordSize || r != v.rec {
				t.Fatalf("ConsumeRecord = %+v, %d, %v; want %+v", r, n, err, v.rec)
			}
		})
	}
}

func TestConsumeRecordErrors(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want error
	}{
		{"empty", "", authority.ErrShortRecord},
		{"eight-bytes", "0100000000000000", authority.ErrShortRecord},
		{"kind-3", "030100000000000000", authority.ErrUnknownKind},
		{"kind-255", "ff0000000000000000", authority.ErrUnknownKind},
		{"host-with-peer", "000100000000000000", authority.ErrNonCanonical},
		{"host-with-high-peer", "000000000000000080", authority.ErrNonCanonical},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.hex)
			r := authority.Record{Kind: authority.KindAvatar, Peer: 42}
			n, err := authority.ConsumeRecord(b, &r)
			if !errors.Is(err, tc.want) || n != 0 {
				t.Fatalf("got %d, %v; want 0, %v", n, err, tc.want)
			}
			if r != (authority.Record{Kind: authority.KindAvatar, Peer: 42}) {
				t.Fatalf("record overwritten on error: %+v", r)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[authority.Kind]string{
		authority.KindHost: "host", authority.KindAvatar: "avatar", authority.KindLock: "lock", 7: "Kind(7)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestRecordNoAllocs(t *testing.T) {
	buf := make([]byte, 0, authority.RecordSize)
	src, _ := hex.DecodeString(recordVectors[2].hex)
	var r authority.Record
	if n := testing.AllocsPerRun(100, func() { buf = authority.AppendRecord(buf[:0], recordVectors[2].rec) }); n != 0 {
		t.Errorf("AppendRecord: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = authority.ConsumeRecord(src, &r) }); n != 0 {
		t.Errorf("ConsumeRecord: %v allocs", n)
	}
}

// FuzzConsumeRecord checks that no input panics, that an error consumes
// nothing, and that every accepted record re-encodes to exactly the bytes it
// came from (the encoding is canonical).
func FuzzConsumeRecord(f *testing.F) {
	for _, v := range recordVectors {
		b, _ := hex.DecodeString(v.hex)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r authority.Record
		n, err := authority.ConsumeRecord(b, &r)
		if err != nil {
			if n != 0 || r != (authority.Record{}) {
				t.Fatalf("error %v with n=%d, record %+v", err, n, r)
			}
			return
		}
		if n != authority.RecordSize {
			t.Fatalf("n = %d", n)
		}
		if again := authority.AppendRecord(nil, r); !bytes.Equal(again, b[:n]) {
			t.Fatalf("%+v re-encodes to %x, read from %x", r, again, b[:n])
		}
		if r.Kind == authority.KindHost && r.Peer != 0 {
			t.Fatalf("accepted a host record naming peer %d", r.Peer)
		}
	})
}

func BenchmarkConsumeRecord(b *testing.B) {
	src, _ := hex.DecodeString(recordVectors[2].hex)
	var r authority.Record
	b.ReportAllocs()
	b.SetBytes(authority.RecordSize)
	for b.Loop() {
		if _, err := authority.ConsumeRecord(src, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendRecord(b *testing.B) {
	buf := make([]byte, 0, authority.RecordSize)
	b.ReportAllocs()
	b.SetBytes(authority.RecordSize)
	for b.Loop() {
		buf = authority.AppendRecord(buf[:0], recordVectors[2].rec)
	}
}
