package signaling

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// chanPipe is a Pipe whose other side is the test.
type chanPipe struct {
	in   chan Frame
	dead chan struct{}
	sent []Frame
}

func newChanPipe() *chanPipe { return &chanPipe{in: make(chan Frame, 8), dead: make(chan struct{})} }

func (p *chanPipe) Send(f Frame) error    { p.sent = append(p.sent, f); return nil }
func (p *chanPipe) Recv() <-chan Frame    { return p.in }
func (p *chanPipe) Done() <-chan struct{} { return p.dead }
func (p *chanPipe) Close() error          { return nil }

// FuzzRelayedSocket feeds any two frames, as another node could send them, to a relayed socket on
// the owner: each read gives a message within the read limit, a close error, the read limit's
// error or a timeout, never a panic.
func FuzzRelayedSocket(f *testing.F) {
	f.Add(uint8(FrameText), []byte(`{"v":1,"type":"join"}`), uint8(FrameClose), []byte("\x03\xe8bye"))
	f.Add(uint8(FramePing), []byte{}, uint8(FrameClose), []byte{})
	f.Add(uint8(FramePong), []byte{0}, uint8(FrameBinary), []byte{})
	f.Add(uint8(0), []byte("x"), uint8(99), []byte("junk"))
	f.Fuzz(func(t *testing.T, ka uint8, a []byte, kb uint8, b []byte) {
		p := newChanPipe()
		s := newRelayedSocket(p)
		s.SetReadLimit(16)
		s.SetPingHandler(func(string) error { return nil })
		s.SetPongHandler(func(string) error { return nil })
		p.in <- Frame{Kind: FrameKind(ka), Data: a}
		p.in <- Frame{Kind: FrameKind(kb), Data: b}
		for range 3 {
			_ = s.SetReadDeadline(time.Now().Add(time.Millisecond))
			typ, r, err := s.NextReader()
			var ce *websocket.CloseError
			switch {
			case err == nil:
				data, _ := io.ReadAll(r)
				if typ == websocket.TextMessage && len(data) > 16 {
					t.Fatalf("message of %d bytes past a limit of 16", len(data))
				}
			case errors.As(err, &ce), errors.Is(err, websocket.ErrReadLimit), isTimeout(err):
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
}

// A relayed socket ends with ErrRelayLost when its pipe's other side is gone, and a write after
// Close is refused as after a close frame.
func TestRelayedSocketEnds(t *testing.T) {
	p := newChanPipe()
	s := newRelayedSocket(p)
	close(p.dead)
	if _, _, err := s.NextReader(); !errors.Is(err, ErrRelayLost) {
		t.Fatalf("read on a dead pipe: %v", err)
	}
	if err := s.WriteMessage(websocket.TextMessage, []byte("x")); err != nil {
		t.Fatalf("write before Close: %v", err)
	}
	_ = s.Close()
	if err := s.WriteMessage(websocket.TextMessage, []byte("x")); !errors.Is(err, websocket.ErrCloseSent) {
		t.Fatalf("write after Close: %v", err)
	}
	if len(p.sent) != 1 || p.sent[0].Kind != FrameText {
		t.Fatalf("sent %v", p.sent)
	}
}
