package netmsg

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// The Stamp and Digest codecs moved here from package peer; their golden frames are the
// ext.json vectors "Stamp (12) frame" and "Digest (13) frame, 2 buckets", which both test
// suites read.

func goldenExt(t *testing.T, name string) []byte {
	t.Helper()
	var vs []struct {
		Name   string         `json:"name"`
		Fields map[string]any `json:"fields"`
		Hex    string         `json:"hex"`
	}
	readJSON(t, "ext.json", &vs)
	for _, v := range vs {
		if v.Name == name {
			b, err := hex.DecodeString(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("ext.json has no vector %q", name)
	return nil
}

func TestStampGolden(t *testing.T) {
	b := goldenExt(t, "Stamp (12) frame")
	var m Stamp
	n, err := ConsumeStamp(b, &m)
	if err != nil || n != len(b) || m.Time != 1234 {
		t.Fatalf("ConsumeStamp = %d, %v, %+v", n, err, m)
	}
	if got := AppendStamp(nil, &m); !bytes.Equal(got, b) {
		t.Fatalf("AppendStamp = %x, want %x", got, b)
	}
}

func TestDigestGolden(t *testing.T) {
	b := goldenExt(t, "Digest (13) frame, 2 buckets")
	var m Digest
	n, err := ConsumeDigest(b, &m)
	want := Digest{Term: 3, Clock: 77, Digests: []uint64{0x0123456789abcdef, maxU64}}
	if err != nil || n != len(b) || !reflect.DeepEqual(m, want) {
		t.Fatalf("ConsumeDigest = %d, %v, %+v", n, err, m)
	}
	if got := AppendDigest(nil, &m); !bytes.Equal(got, b) {
		t.Fatalf("AppendDigest = %x, want %x", got, b)
	}
}

func TestSessionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		dig  bool
		want error
	}{
		{"stamp body 7", bld{12}.u32(7).raw(make([]byte, 7)...), false, ErrBodyLength},
		{"stamp body 9", bld{12}.u32(9).raw(make([]byte, 9)...), false, ErrBodyLength},
		{"stamp truncated", bld{12}.u32(8).u32(1), false, ErrShortBuffer},
		{"stamp wrong type", AppendPing(nil, &Ping{}), false, ErrWrongType},
		{"digest no buckets", bld{13}.u32(14).u64(1).u32(2).u16(0), true, ErrBodyLength},
		{"digest count past body", bld{13}.u32(22).u64(1).u32(2).u16(2).u64(5), true, ErrBodyLength},
		{"digest trailing bytes", bld{13}.u32(23).u64(1).u32(2).u16(1).u64(5).raw(0), true, ErrBodyLength},
		{"digest too many buckets", bld{13}.u32(14).u64(1).u32(2).u16(MaxDigestBuckets + 1), true, ErrBodyLength},
		{"digest short header", bld{13}.u32(13).raw(make([]byte, 13)...), true, ErrBodyLength},
		{"digest truncated", bld{13}.u32(22).u64(1), true, ErrShortBuffer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.dig {
				_, err = ConsumeDigest(tc.b, &Digest{})
			} else {
				_, err = ConsumeStamp(tc.b, &Stamp{})
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want a *ProtocolError wrapping %v", err, tc.want)
			}
		})
	}
}

func TestSessionAllocs(t *testing.T) {
	stamp := AppendStamp(nil, &Stamp{Time: 9})
	dig := AppendDigest(nil, &Digest{Term: 1, Clock: 2, Digests: make([]uint64, 256)})
	var s Stamp
	d := Digest{Digests: make([]uint64, 256)}
	buf := make([]byte, 0, 4096)
	for name, fn := range map[string]func(){
		"AppendStamp":   func() { buf = AppendStamp(buf[:0], &s) },
		"ConsumeStamp":  func() { _, _ = ConsumeStamp(stamp, &s) },
		"AppendDigest":  func() { buf = AppendDigest(buf[:0], &d) },
		"ConsumeDigest": func() { _, _ = ConsumeDigest(dig, &d) },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocs, want 0", name, a)
		}
	}
}

func FuzzConsumeStamp(f *testing.F) {
	fuzzDecoder(f, TypeStamp, ConsumeStamp, AppendStamp)
}

func FuzzConsumeDigest(f *testing.F) {
	fuzzDecoder(f, TypeDigest, ConsumeDigest, AppendDigest)
}
