package cluster

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/concordrtc/concord/signaling"
)

// The relay frames on the wire, byte for byte (docs/protocol.md §7 "Messages between nodes"),
// and what ConsumeFrame makes of bytes no node sends.
func TestConsumeFrame(t *testing.T) {
	long := strings.Repeat("x", maxControlPayload)
	for _, tc := range []struct {
		name string
		wire string
		want Frame
		err  error
	}{
		{"text", "T{\"v\":1}", Frame{Kind: KindText, Data: []byte(`{"v":1}`)}, nil},
		{"empty text", "T", Frame{Kind: KindText, Data: []byte{}}, nil},
		{"binary", "B", Frame{Kind: KindBinary, Data: []byte{}}, nil},
		{"ping", "Pabc", Frame{Kind: KindPing, Data: []byte("abc")}, nil},
		{"pong at the bound", "O" + long, Frame{Kind: KindPong, Data: []byte(long)}, nil},
		{"close", "C\x03\xe8bye", Frame{Kind: KindClose, Data: []byte("\x03\xe8bye")}, nil},
		{"close lost", "C", Frame{Kind: KindClose, Data: []byte{}}, nil},
		{"heartbeat", "H", Frame{Kind: KindHeartbeat, Data: []byte{}}, nil},
		{"empty", "", Frame{}, ErrShortFrame},
		{"close of one byte", "C\x03", Frame{}, ErrShortFrame},
		{"unknown kind", "Xjunk", Frame{}, ErrUnknownKind},
		{"ping past the bound", "P" + long + "y", Frame{}, ErrFrameTooLong},
		{"close past the bound", "C\x03\xe8" + long, Frame{}, ErrFrameTooLong},
		{"heartbeat with data", "Hx", Frame{}, ErrFrameTooLong},
		{"binary with data", "Bx", Frame{}, ErrFrameTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ConsumeFrame([]byte(tc.wire))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if f.Kind != tc.want.Kind || !bytes.Equal(f.Data, tc.want.Data) {
				t.Fatalf("got %v %q, want %v %q", f.Kind, f.Data, tc.want.Kind, tc.want.Data)
			}
			if got := AppendFrame(nil, f); string(got) != tc.wire || SizeFrame(f) != len(tc.wire) {
				t.Fatalf("appended %q (size %d), want %q", got, SizeFrame(f), tc.wire)
			}
		})
	}
}

// AppendFrame into a buffer with room does not allocate; ConsumeFrame never does.
func TestFrameAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	f := Frame{Kind: KindText, Data: []byte(`{"v":1,"type":"ping"}`)}
	if n := testing.AllocsPerRun(100, func() {
		b := AppendFrame(buf[:0], f)
		if _, err := ConsumeFrame(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per frame", n)
	}
}

// A member's frames cross the wire and come back as they were; a close frame without a code
// arrives as a lost socket (1006).
func TestSignalingFrames(t *testing.T) {
	for _, f := range []signaling.Frame{
		{Kind: signaling.FrameText, Data: []byte("hello")},
		{Kind: signaling.FramePing, Data: []byte("p")},
		{Kind: signaling.FramePong, Data: []byte{}},
		{Kind: signaling.FrameClose, Data: []byte("\x03\xe8bye")},
		{Kind: signaling.FrameBinary},
	} {
		wf, ok := fromSignaling(f)
		if !ok {
			t.Fatalf("%v not sent", f)
		}
		back, err := ConsumeFrame(AppendFrame(nil, wf))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := toSignaling(back)
		if !ok || got.Kind != f.Kind || !bytes.Equal(got.Data, f.Data) {
			t.Fatalf("%v came back as %v", f, got)
		}
	}
	wf, _ := fromSignaling(signaling.Frame{Kind: signaling.FrameClose})
	if got, _ := toSignaling(wf); !bytes.Equal(got.Data, []byte{0x03, 0xee}) {
		t.Fatalf("a close without a code arrived as %q, want 1006", got.Data)
	}
	if _, ok := toSignaling(Frame{Kind: KindHeartbeat}); ok {
		t.Fatal("a heartbeat reached the member")
	}
}

// The control messages' bounds: a relay id is one subject token (a wildcard id would have
// subscribed the owner to every relay's frames), names have no wildcard or control character,
// and another version is refused as such.
func TestControlBounds(t *testing.T) {
	ok := OpenRequest{V: Version, ID: "ABCDEFGHIJKLMNOPQRSTUVWXYZ", Room: "room one", Edge: "node-1.example"}
	if got, err := DecodeOpenRequest(encode(ok)); err != nil || got != ok {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		m    OpenRequest
		err  error
	}{
		{"wildcard id", OpenRequest{V: Version, ID: ">", Room: "r", Edge: "a"}, ErrBadMessage},
		{"token wildcard id", OpenRequest{V: Version, ID: "*", Room: "r", Edge: "a"}, ErrBadMessage},
		{"dotted id", OpenRequest{V: Version, ID: "a.b", Room: "r", Edge: "a"}, ErrBadMessage},
		{"long id", OpenRequest{V: Version, ID: strings.Repeat("A", maxRelayID+1), Room: "r", Edge: "a"}, ErrBadMessage},
		{"no room", OpenRequest{V: Version, ID: "A", Edge: "a"}, ErrBadMessage},
		{"long room", OpenRequest{V: Version, ID: "A", Room: signaling.RoomID(strings.Repeat("r", maxRoomName+1)), Edge: "a"}, ErrBadMessage},
		{"control room", OpenRequest{V: Version, ID: "A", Room: "r\x00", Edge: "a"}, ErrBadMessage},
		{"edge wildcard", OpenRequest{V: Version, ID: "A", Room: "r", Edge: "a>"}, ErrBadMessage},
		{"no version", OpenRequest{ID: "A", Room: "r", Edge: "a"}, ErrVersion},
		{"next version", OpenRequest{V: Version + 1, ID: "A", Room: "r", Edge: "a"}, ErrVersion},
	} {
		if _, err := DecodeOpenRequest(encode(tc.m)); !errors.Is(err, tc.err) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
		}
	}
	if _, err := DecodeOpenRequest([]byte(`{"v":1,"id":"A","room":"r","edge":"` + strings.Repeat("e", maxOpenRequest) + `"}`)); !errors.Is(err, ErrBadMessage) {
		t.Errorf("an open request past %d bytes: %v", maxOpenRequest, err)
	}
	if _, err := DecodeAlive([]byte(`{"v":1,"node":"a b"}`)); !errors.Is(err, ErrBadMessage) {
		t.Errorf("a node name with a space: %v", err)
	}
	if _, err := DecodeRoomsReply([]byte(`{"v":1,"rooms":[{"room":""}]}`)); !errors.Is(err, ErrBadMessage) {
		t.Errorf("a rooms reply with an empty room: %v", err)
	}
	long := refusal(OpenBadRequest, strings.Repeat("<", 2*maxReason)) // every '<' escaped to 6 bytes
	if m, err := DecodeOpenReply(encode(long)); err != nil || m != long {
		t.Errorf("a long refusal decoded as %+v, %v", m, err)
	}
	name := Alive{V: Version, Node: strings.Repeat("<", maxNodeName)}
	if m, err := DecodeAlive(encode(name)); err != nil || m != name {
		t.Errorf("a presence of the longest name decoded as %+v, %v", m, err)
	}
	if _, err := DecodeOpenReply([]byte(`ok`)); !errors.Is(err, ErrBadMessage) {
		t.Errorf("a reply of an older node: %v", err)
	}
}

// An owner's refusal matches the sentinel of its code, so Route picks its consequence with
// errors.Is.
func TestOpenError(t *testing.T) {
	for code, want := range map[OpenCode]error{OpenNotOwner: ErrNotOwner, OpenClosing: ErrClosing, OpenBadRequest: ErrBadMessage, OpenVersion: ErrVersion} {
		err := error(&OpenError{Node: "b", Code: code, Reason: "x"})
		if !errors.Is(err, want) {
			t.Errorf("%s does not match %v", code, want)
		}
		if code != OpenNotOwner && errors.Is(err, ErrNotOwner) {
			t.Errorf("%s matches ErrNotOwner", code)
		}
	}
	if errors.Is(&OpenError{Code: OpenInternal}, ErrNotOwner) {
		t.Error("internal matches ErrNotOwner")
	}
}

// FuzzConsumeFrame: any bytes another node publishes on a relay subject either decode to a
// frame that encodes back to the same bytes, or are refused with one of the package's errors;
// never a panic, never a control payload past RFC 6455's 125 bytes.
func FuzzConsumeFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ConsumeFrame(b)
		if err != nil {
			if !errors.Is(err, ErrShortFrame) && !errors.Is(err, ErrUnknownKind) && !errors.Is(err, ErrFrameTooLong) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if fr.Kind != KindText && len(fr.Data) > maxControlPayload {
			t.Fatalf("%v frame of %d bytes", fr.Kind, len(fr.Data))
		}
		if got := AppendFrame(nil, fr); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %q, read %q", got, b)
		}
		if sf, ok := toSignaling(fr); ok {
			wf, ok := fromSignaling(sf)
			if !ok {
				t.Fatalf("%v does not go back on the wire", sf)
			}
			if _, err := ConsumeFrame(AppendFrame(nil, wf)); err != nil {
				t.Fatalf("%v re-sent as %v: %v", fr, wf, err)
			}
		}
	})
}

// FuzzDecodeControl: any bytes on a control subject either decode to a message within its bounds
// that encodes and decodes to itself, or are refused with ErrBadMessage or ErrVersion.
func FuzzDecodeControl(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		check := func(err error) bool {
			if err != nil && !errors.Is(err, ErrBadMessage) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			return err == nil
		}
		roundTrip := func(m any, decode func([]byte) (any, error)) {
			again, err := decode(encode(m))
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("%+v decoded again as %+v, %v", m, again, err)
			}
		}
		switch which % 4 {
		case 0:
			m, err := DecodeOpenRequest(b)
			if check(err) {
				if checkRelayID(m.ID) != nil || strings.ContainsAny(m.ID, ".*> ") {
					t.Fatalf("relay id %q accepted", m.ID)
				}
				roundTrip(m, func(b []byte) (any, error) { return DecodeOpenRequest(b) })
			}
		case 1:
			m, err := DecodeOpenReply(b)
			if check(err) {
				roundTrip(m, func(b []byte) (any, error) { return DecodeOpenReply(b) })
			}
		case 2:
			m, err := DecodeRoomsReply(b)
			if check(err) && len(m.Rooms) > maxRooms {
				t.Fatalf("%d rooms", len(m.Rooms))
			}
		case 3:
			m, err := DecodeAlive(b)
			if check(err) {
				if len(m.Node) > maxNodeName || strings.ContainsAny(m.Node, "*> ") {
					t.Fatalf("node name %q accepted", m.Node)
				}
				roundTrip(m, func(b []byte) (any, error) { return DecodeAlive(b) })
			}
		}
	})
}

// BenchmarkFrame measures one relay frame's way through the codec: a member's text message
// appended for the wire, consumed and handed back to signaling.
func BenchmarkFrame(b *testing.B) {
	msg := signaling.Frame{Kind: signaling.FrameText, Data: []byte(`{"v":1,"type":"signal","to":2,"payload":{"sdp":"v=0 o=- 1 2 IN IP4 127.0.0.1"}}`)}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		wf, _ := fromSignaling(msg)
		f, err := ConsumeFrame(AppendFrame(buf[:0], wf))
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := toSignaling(f); !ok {
			b.Fatal("lost")
		}
	}
}
