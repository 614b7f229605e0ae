package signaling

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// chanPipe is a Pipe whose other side is the test.
type chanPipe struct {
	in   chan Frame
	dead chan struct{}
	out  chan Frame // what was sent, bounded: a test reads what it expects

	mu   sync.Mutex // guards sent
	sent []Frame
}

func newChanPipe() *chanPipe {
	return &chanPipe{in: make(chan Frame, 8), dead: make(chan struct{}), out: make(chan Frame, 64)}
}

func (p *chanPipe) Send(f Frame) error {
	f.Data = append([]byte(nil), f.Data...) // Send may not keep f.Data
	p.mu.Lock()
	p.sent = append(p.sent, f)
	p.mu.Unlock()
	select {
	case p.out <- f:
	default:
	}
	return nil
}
func (p *chanPipe) Recv() <-chan Frame    { return p.in }
func (p *chanPipe) Done() <-chan struct{} { return p.dead }
func (p *chanPipe) Close() error          { return nil }

// pipeRouter routes every room through one pipe: this node is the edge of every room.
type pipeRouter struct{ p *chanPipe }

func (r pipeRouter) Route(context.Context, RoomID) (Pipe, error) { return r.p, nil }
func (r pipeRouter) Rooms(context.Context) ([]RoomInfo, error)   { return nil, nil }

// next is the next frame the edge sent up whose kind is kind.
func (p *chanPipe) next(t *testing.T, kind FrameKind) Frame {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case f := <-p.out:
			if f.Kind == kind {
				return f
			}
		case <-deadline:
			t.Fatalf("no frame of kind %d sent", kind)
		}
	}
}

// TestRelayEdge: on the edge, a member's websocket is carried by a Pipe: the join goes up first,
// the owner's messages come down, the member's pings go up, and when the owner falls silent
// (the pipe's Done) the member is closed with 1001 server_closing, so that it redials and resumes.
func TestRelayEdge(t *testing.T) {
	p := newChanPipe()
	e := newEnv(t, Config{Router: pipeRouter{p}})
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","user":"alice"}`)
	if f := p.next(t, FrameText); !strings.Contains(string(f.Data), `"join"`) {
		t.Fatalf("first frame up: %q", f.Data)
	}
	p.in <- Frame{Kind: FrameText, Data: []byte(`{"v":1,"type":"from-owner"}`)}
	if m := rawRead(t, ws); m["type"] != "from-owner" {
		t.Fatalf("member read %v", m)
	}
	_ = ws.WriteControl(websocket.PingMessage, []byte("hi"), time.Now().Add(waitTimeout))
	if f := p.next(t, FramePing); string(f.Data) != "hi" {
		t.Fatalf("ping up carried %q", f.Data)
	}
	close(p.dead)
	var ce *websocket.CloseError
	if err := rawReadClose(t, ws); !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway || ce.Text != string(CodeServerClosing) {
		t.Fatalf("member closed with %v, want 1001 server_closing", err)
	}
	if f := p.next(t, FrameClose); len(f.Data) < 2 || int(f.Data[0])<<8|int(f.Data[1]) != websocket.CloseAbnormalClosure {
		t.Fatalf("close up %q, want 1006", f.Data)
	}
}

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
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sent) != 1 || p.sent[0].Kind != FrameText {
		t.Fatalf("sent %v", p.sent)
	}
}
