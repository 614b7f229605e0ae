package netmsg

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestReaderBackToBack(t *testing.T) {
	var p []byte
	p = AppendHello(p, &Hello{Term: 1, PeerIndex: 2, SchemaFingerprint: 3})
	p = AppendExt(p, 42, []byte{1, 2}) // unknown extension
	p = AppendExt(p, 200, []byte("app"))
	p = AppendPeerExited(p, &PeerExited{PeerIndex: 9})
	p = AppendEntityUpdates(p, &EntityUpdates{Time: 5})

	type want struct {
		t    Type
		body []byte
		err  error
	}
	wants := []want{
		{TypeHello, p[5:29], nil},
		{42, []byte{1, 2}, ErrUnknownType},
		{200, []byte("app"), nil},
		{TypePeerExited, bld{}.u64(9), nil},
		{TypeEntityUpdates, bld{}.u64(5).u32(0), nil},
	}
	r := NewReader(p)
	for i, w := range wants {
		if !r.More() {
			t.Fatalf("More false before message %d", i)
		}
		m, err := r.Next()
		if !errors.Is(err, w.err) || (w.err == nil && err != nil) {
			t.Fatalf("message %d: err = %v, want %v", i, err, w.err)
		}
		if err != nil {
			var pe *ProtocolError
			if errors.As(err, &pe) {
				t.Fatalf("message %d: drop-message error is a *ProtocolError", i)
			}
		}
		if m.Type != w.t || !bytes.Equal(m.Body, w.body) {
			t.Errorf("message %d: %v body %x, want %v %x", i, m.Type, m.Body, w.t, w.body)
		}
		if cap(m.Raw) != len(m.Raw) {
			t.Errorf("message %d: Raw capacity %d reaches past the message", i, cap(m.Raw))
		}
	}
	if r.More() {
		t.Fatal("More true at end")
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next at end = %v, want io.EOF", err)
	}
	r.Reset(p[:5])
	if _, err := r.Next(); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("after Reset to a cut payload: %v", err)
	}
}

func TestReaderErrorIsSticky(t *testing.T) {
	p := AppendPing(nil, &Ping{Nonce: 1})
	p = append(p, byte(TypePeerExited), 1, 2) // truncated
	r := NewReader(p)
	if m, err := r.Next(); err != nil || m.Type != TypePing {
		t.Fatalf("first: %v %v", m.Type, err)
	}
	_, err := r.Next()
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Type != TypePeerExited || pe.Offset != 22 {
		t.Fatalf("second: %v, want PeerExited error at 22", err)
	}
	if r.More() {
		t.Error("More true after a protocol error")
	}
	if _, err2 := r.Next(); err2 != err {
		t.Errorf("Next after error = %v, want the same error", err2)
	}
	if r.Offset() != 21 {
		t.Errorf("Offset = %d, want 21 (start of the bad message)", r.Offset())
	}
}

func TestReaderZeroValue(t *testing.T) {
	var r Reader
	if r.More() {
		t.Fatal("zero Reader has more")
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("zero Reader Next = %v", err)
	}
}
