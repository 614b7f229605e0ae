package netmsg

import (
	"bytes"
	"errors"
	"testing"
)

func TestFragmentRoundTrip(t *testing.T) {
	g := newGen(2)
	for i := range 300 {
		payload := g.bytes(3000)
		max := FragmentOverhead + 1 + g.r.IntN(500)
		if i%10 == 0 {
			max = 0 // default
		}
		f := NewFragmenter(payload, uint32(i), max)
		var r Reassembler
		count := 0
		var buf []byte
		for {
			var ok bool
			buf, ok = f.Next(buf[:0])
			if !ok {
				break
			}
			count++
			limit := max
			if limit == 0 {
				limit = MaxReliableMessage
			}
			if len(buf) > limit || CheckReliable(buf) != nil {
				t.Fatalf("fragment of %d bytes over %d", len(buf), limit)
			}
			var fr Fragment
			if _, err := ConsumeFragment(buf, &fr); err != nil {
				t.Fatal(err)
			}
			got, done, err := r.Push(&fr)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				if !bytes.Equal(got, payload) {
					t.Fatalf("#%d: reassembled %d bytes, want %d", i, len(got), len(payload))
				}
				if r.InProgress() {
					t.Fatal("in progress after done")
				}
			} else if r.Buffered() != int(fr.Offset)+len(fr.Chunk) {
				t.Fatalf("Buffered %d", r.Buffered())
			}
		}
		if count != FragmentCount(len(payload), max) {
			t.Fatalf("#%d: %d fragments, FragmentCount says %d", i, count, FragmentCount(len(payload), max))
		}
	}
}

func TestReassemblerRules(t *testing.T) {
	frag := func(id, total, off uint32, n int) Fragment {
		return Fragment{MessageID: id, TotalLength: total, Offset: off, Chunk: pattern(n, byte(off))}
	}
	tests := []struct {
		name    string
		max     int
		frags   []Fragment
		wantErr error // on the last fragment; earlier ones must succeed
		done    bool
	}{
		{"in order", 0, []Fragment{frag(1, 10, 0, 4), frag(1, 10, 4, 6)}, nil, true},
		{"single", 0, []Fragment{frag(1, 3, 0, 3)}, nil, true},
		{"empty payload", 0, []Fragment{frag(1, 0, 0, 0)}, nil, true},
		{"partial", 0, []Fragment{frag(1, 10, 0, 4)}, nil, false},
		{"first not at zero", 0, []Fragment{frag(1, 10, 4, 4)}, ErrFragment, false},
		{"offset gap", 0, []Fragment{frag(1, 10, 0, 4), frag(1, 10, 5, 5)}, ErrFragment, false},
		{"offset overlap", 0, []Fragment{frag(1, 10, 0, 4), frag(1, 10, 3, 7)}, ErrFragment, false},
		{"out of order", 0, []Fragment{frag(1, 12, 0, 4), frag(1, 12, 8, 4)}, ErrFragment, false},
		{"total mismatch", 0, []Fragment{frag(1, 10, 0, 4), frag(1, 11, 4, 7)}, ErrFragment, false},
		{"message id mismatch", 0, []Fragment{frag(1, 10, 0, 4), frag(2, 10, 4, 6)}, ErrFragment, false},
		{"chunk past total", 0, []Fragment{frag(1, 10, 0, 4), frag(1, 10, 4, 7)}, ErrFragment, false},
		{"first chunk past total", 0, []Fragment{frag(1, 2, 0, 3)}, ErrFragment, false},
		{"empty chunk", 0, []Fragment{frag(1, 10, 0, 4), frag(1, 10, 4, 0)}, ErrFragment, false},
		{"exactly at cap", 100, []Fragment{frag(1, 100, 0, 60), frag(1, 100, 60, 40)}, nil, true},
		{"over cap", 100, []Fragment{frag(1, 101, 0, 60)}, ErrTooLarge, false},
		{"default cap", 0, []Fragment{frag(1, DefaultMaxTotal+1, 0, 1)}, ErrTooLarge, false},
		{"default cap exact", 0, []Fragment{frag(1, DefaultMaxTotal, 0, 1)}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReassembler(Config{MaxTotal: tt.max})
			var want []byte
			for i := range tt.frags {
				f := &tt.frags[i]
				want = append(want, f.Chunk...)
				got, done, err := r.Push(f)
				last := i == len(tt.frags)-1
				if !last || tt.wantErr == nil {
					if err != nil {
						t.Fatalf("fragment %d: %v", i, err)
					}
					if last && done != tt.done {
						t.Fatalf("done = %v, want %v", done, tt.done)
					}
					if done && !bytes.Equal(got, want) {
						t.Fatalf("payload %x, want %x", got, want)
					}
					continue
				}
				var pe *ProtocolError
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, ErrFragment) || !errors.As(err, &pe) || pe.Type != TypeFragment {
					t.Fatalf("err = %v, want *ProtocolError wrapping ErrFragment and %v", err, tt.wantErr)
				}
				if done || got != nil || r.InProgress() || r.Buffered() != 0 {
					t.Fatal("failed Push left state behind")
				}
			}
			// The reassembler is usable again after any outcome.
			r.Reset()
			if got, done, err := r.Push(&Fragment{MessageID: 9, TotalLength: 2, Chunk: []byte{1, 2}}); err != nil || !done || !bytes.Equal(got, []byte{1, 2}) {
				t.Fatalf("after reset: %x %v %v", got, done, err)
			}
		})
	}
}

func TestReassemblerReleasesLargeBuffers(t *testing.T) {
	var r Reassembler
	big := make([]byte, 2*retainBytes)
	f := NewFragmenter(big, 1, 0)
	var buf []byte
	for {
		var ok bool
		if buf, ok = f.Next(buf[:0]); !ok {
			break
		}
		var fr Fragment
		if _, err := ConsumeFragment(buf, &fr); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Push(&fr); err != nil {
			t.Fatal(err)
		}
	}
	if cap(r.buf) < len(big) {
		t.Fatal("payload not held")
	}
	if _, _, err := r.Push(&Fragment{MessageID: 2, TotalLength: 10, Chunk: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	if cap(r.buf) > retainBytes {
		t.Errorf("kept a %d-byte buffer after a new payload started", cap(r.buf))
	}
}

func TestFragmenterZeroValue(t *testing.T) {
	var f Fragmenter
	b, ok := f.Next(nil)
	if !ok {
		t.Fatal("zero Fragmenter produced nothing")
	}
	var fr Fragment
	if _, err := ConsumeFragment(b, &fr); err != nil || fr.TotalLength != 0 || len(fr.Chunk) != 0 {
		t.Fatalf("%+v %v", fr, err)
	}
	if _, ok := f.Next(nil); ok {
		t.Fatal("zero Fragmenter produced two fragments")
	}
}
