package signaling

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// A member's websocket may reach a node of a cluster that does not own its room (cluster.go).
// That node, the edge, keeps the websocket and moves its frames through a Pipe (relay); the owner
// serves the Pipe's other end as one of its own connections (relayedSocket, ServeRelayed). The
// websocket itself never leaves this package: between nodes only Frames travel.

// ErrRelayLost: the other side of a relayed member's Pipe fell silent or could not keep up.
var ErrRelayLost = errors.New("signaling: relay lost")

// closeFrame is a close Frame with code and text (RFC 6455 §5.5.1).
func closeFrame(code int, text string) Frame {
	return Frame{Kind: FrameClose, Data: append(binary.BigEndian.AppendUint16(nil, uint16(code)), text...)}
}

// parseClose reads a close frame's payload; a short one is an abnormal closure.
func parseClose(b []byte) (int, string) {
	if len(b) < 2 {
		return websocket.CloseAbnormalClosure, ""
	}
	return int(binary.BigEndian.Uint16(b)), string(b[2:])
}

// relay carries ws, whose first message (the join) was first, through p to the node that owns
// its room: the member's messages and control frames go up, the owner's come down, until either
// side closes, the owner falls silent or the server closes. It runs on the websocket handler's
// goroutine plus one reader, which has ended when it returns; ws and p are closed then.
func (s *Server) relay(ws *websocket.Conn, p Pipe, first []byte) {
	defer func() { _ = p.Close() }()
	cfg := &s.cfg
	_ = ws.SetReadDeadline(time.Time{})
	ws.SetPingHandler(func(data string) error { return p.Send(Frame{Kind: FramePing, Data: []byte(data)}) })
	ws.SetPongHandler(func(data string) error { return p.Send(Frame{Kind: FramePong, Data: []byte(data)}) })
	if err := p.Send(Frame{Kind: FrameText, Data: first}); err != nil {
		_ = ws.Close()
		return
	}
	readerDone := make(chan struct{})
	go func() { // ends when ws fails, which the loop below makes sure of before it returns
		defer close(readerDone)
		var buf bytes.Buffer
		for {
			typ, rd, err := ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				code, text := websocket.CloseAbnormalClosure, ""
				if errors.As(err, &ce) {
					code, text = ce.Code, ce.Text
				}
				_ = p.Send(closeFrame(code, text))
				return
			}
			if typ != websocket.TextMessage {
				// Not part of the protocol: the owner refuses it as the binary message it is.
				_ = p.Send(Frame{Kind: FrameBinary})
				continue
			}
			buf.Reset()
			if _, err := buf.ReadFrom(rd); err != nil {
				continue
			}
			if err := p.Send(Frame{Kind: FrameText, Data: buf.Bytes()}); err != nil {
				_ = ws.Close()
			}
		}
	}()
	closeWS := func(code int, text string) {
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(cfg.WriteWait))
		t := time.NewTimer(cfg.CloseGrace)
		select {
		case <-readerDone:
		case <-t.C:
		}
		t.Stop()
		_ = ws.Close()
		<-readerDone
	}
	for {
		select {
		case f := <-p.Recv():
			_ = ws.SetWriteDeadline(time.Now().Add(cfg.WriteWait))
			var err error
			switch f.Kind {
			case FrameText:
				err = ws.WriteMessage(websocket.TextMessage, f.Data)
			case FramePing:
				err = ws.WriteControl(websocket.PingMessage, f.Data, time.Now().Add(cfg.WriteWait))
			case FramePong:
				err = ws.WriteControl(websocket.PongMessage, f.Data, time.Now().Add(cfg.WriteWait))
			case FrameClose:
				code, text := parseClose(f.Data)
				if code == websocket.CloseAbnormalClosure || code == websocket.CloseNoStatusReceived {
					_ = ws.Close()
					<-readerDone
					return
				}
				closeWS(code, text)
				return
			case FrameBinary: // the owner sends none
			}
			if err != nil {
				_ = p.Send(closeFrame(websocket.CloseAbnormalClosure, ""))
				_ = ws.Close()
				<-readerDone
				return
			}
		case <-p.Done():
			// The owner fell silent (or this side overflowed): the member redials and resumes.
			_ = p.Send(closeFrame(websocket.CloseAbnormalClosure, ""))
			closeWS(websocket.CloseGoingAway, string(CodeServerClosing))
			return
		case <-readerDone:
			// The member's side ended; the close went up. Wait briefly for the owner's close frame.
			t := time.NewTimer(cfg.CloseGrace)
			select {
			case <-t.C:
			case <-p.Done():
			case f := <-p.Recv():
				if f.Kind == FrameText {
					_ = ws.WriteMessage(websocket.TextMessage, f.Data)
				}
			}
			t.Stop()
			_ = ws.Close()
			return
		case <-s.quit:
			_ = p.Send(closeFrame(websocket.CloseGoingAway, ""))
			closeWS(websocket.CloseGoingAway, string(CodeServerClosing))
			return
		}
	}
}

// relayedSocket is, on the owner, a member's websocket that another node accepted: the socket a
// conn reads and writes, over the frames of a Pipe. Read deadlines, the read limit and the ping
// and pong handlers work as gorilla/websocket's; write deadlines are the Pipe's (Send does not
// wait).
type relayedSocket struct {
	p Pipe

	mu       sync.Mutex // guards the following fields
	onPing   func(string) error
	onPong   func(string) error
	deadline time.Time
	limit    int64

	closeOnce sync.Once
	closed    chan struct{}
}

var _ socket = (*relayedSocket)(nil)

func newRelayedSocket(p Pipe) *relayedSocket {
	return &relayedSocket{p: p, closed: make(chan struct{})}
}

func (s *relayedSocket) SetReadLimit(limit int64) { s.mu.Lock(); s.limit = limit; s.mu.Unlock() }
func (s *relayedSocket) SetPongHandler(h func(string) error) {
	s.mu.Lock()
	s.onPong = h
	s.mu.Unlock()
}
func (s *relayedSocket) SetPingHandler(h func(string) error) {
	s.mu.Lock()
	s.onPing = h
	s.mu.Unlock()
}
func (s *relayedSocket) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
	return nil
}
func (s *relayedSocket) SetWriteDeadline(time.Time) error { return nil }

// NextReader returns the next text message from the edge, running the ping and pong handlers on
// the way, until the read deadline (an error whose Timeout is true), a close frame (a
// *websocket.CloseError) or the Pipe's end (ErrRelayLost).
func (s *relayedSocket) NextReader() (int, io.Reader, error) {
	// One timer per call, moved when a handler moves the deadline (a pong extends it).
	var t *time.Timer
	var armed time.Time
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		s.mu.Lock()
		dl, limit := s.deadline, s.limit
		s.mu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, nil, os.ErrDeadlineExceeded
			}
			if t == nil {
				t = time.NewTimer(d)
			} else if !dl.Equal(armed) {
				t.Reset(d)
			}
			armed = dl
			timeout = t.C
		}
		select {
		case f := <-s.p.Recv():
			switch f.Kind {
			case FrameText:
				if limit > 0 && int64(len(f.Data)) > limit {
					return 0, nil, websocket.ErrReadLimit
				}
				return websocket.TextMessage, bytes.NewReader(f.Data), nil
			case FrameBinary:
				return websocket.BinaryMessage, bytes.NewReader(nil), nil
			case FramePing, FramePong:
				s.mu.Lock()
				h := s.onPong
				if f.Kind == FramePing {
					h = s.onPing
				}
				s.mu.Unlock()
				if h != nil {
					if err := h(string(f.Data)); err != nil {
						return 0, nil, err
					}
				}
			case FrameClose:
				code, text := parseClose(f.Data)
				return 0, nil, &websocket.CloseError{Code: code, Text: text}
			}
		case <-s.p.Done():
			return 0, nil, ErrRelayLost
		case <-s.closed:
			return 0, nil, net.ErrClosed
		case <-timeout:
			return 0, nil, os.ErrDeadlineExceeded
		}
	}
}

func (s *relayedSocket) send(f Frame) error {
	select {
	case <-s.closed:
		return websocket.ErrCloseSent
	default:
	}
	return s.p.Send(f)
}

func (s *relayedSocket) WriteMessage(_ int, data []byte) error {
	return s.send(Frame{Kind: FrameText, Data: data})
}

// NextWriter buffers one message and sends it on Close.
func (s *relayedSocket) NextWriter(int) (io.WriteCloser, error) { return &relayWriter{s: s}, nil }

type relayWriter struct {
	s   *relayedSocket
	buf []byte
}

func (w *relayWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *relayWriter) Close() error { return w.s.send(Frame{Kind: FrameText, Data: w.buf}) }

func (s *relayedSocket) WriteControl(typ int, data []byte, _ time.Time) error {
	switch typ {
	case websocket.PingMessage:
		return s.send(Frame{Kind: FramePing, Data: data})
	case websocket.PongMessage:
		return s.send(Frame{Kind: FramePong, Data: data})
	case websocket.CloseMessage:
		return s.send(Frame{Kind: FrameClose, Data: data})
	}
	return nil
}

// Close ends the relay: the edge is told (an abnormal closure unless a close frame went already).
func (s *relayedSocket) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		_ = s.p.Close()
	})
	return nil
}
