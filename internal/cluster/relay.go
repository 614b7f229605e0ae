package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/concordrtc/concord/signaling"
)

// Frame kinds on the relay subjects (doc.go).
const (
	kindText      = 'T'
	kindPing      = 'P'
	kindPong      = 'O'
	kindClose     = 'C'
	kindHeartbeat = 'H'
	kindBinary    = 'B' // a binary message, which the protocol refuses: only its kind travels
)

// relayQueue bounds the frames waiting for one side of a relay; past it the relay fails (a slow
// consumer), as a websocket whose send queue overflows.
const relayQueue = 1024

// endpoint is one side of a relay, known to the heartbeat loop.
type endpoint struct {
	id     string
	peer   string // the subject its heartbeats go to
	heard  atomic.Int64
	in     chan []byte // frames from the other side, bounded
	dead   chan struct{}
	once   sync.Once
	sub    *nats.Subscription
	failed atomic.Bool // the other side fell silent or the queue overflowed
}

func newEndpoint(id, peer string) *endpoint {
	e := &endpoint{id: id, peer: peer, in: make(chan []byte, relayQueue), dead: make(chan struct{})}
	e.heard.Store(time.Now().UnixNano())
	return e
}

// deliver is the subscription's callback: it queues a frame without blocking.
func (e *endpoint) deliver(m *nats.Msg) {
	e.heard.Store(time.Now().UnixNano())
	if len(m.Data) == 0 || m.Data[0] == kindHeartbeat {
		return
	}
	select {
	case e.in <- m.Data:
	default:
		e.fail()
	}
}

// fail ends the endpoint: the other side is gone or too slow.
func (e *endpoint) fail() {
	e.failed.Store(true)
	e.end()
}

func (e *endpoint) end() {
	e.once.Do(func() { close(e.dead) })
}

func frame(kind byte, data []byte) []byte {
	b := make([]byte, 1+len(data))
	b[0] = kind
	copy(b[1:], data)
	return b
}

// edgeRelay is a websocket accepted here whose room another node owns.
type edgeRelay struct {
	n  *Node
	ep *endpoint
	up string // subject of frames to the owner
}

// Serve implements signaling.Relay: the websocket's messages and control frames go up, the
// owner's come down, until either side closes, the owner falls silent or quit is closed.
func (r *edgeRelay) Serve(ws signaling.Socket, first []byte, quit <-chan struct{}) {
	defer r.n.forget(r.ep)
	defer func() { _ = r.ep.sub.Unsubscribe() }()
	nc := r.n.nc
	_ = ws.SetReadDeadline(time.Time{})
	ws.SetPingHandler(func(data string) error { return nc.Publish(r.up, frame(kindPing, []byte(data))) })
	ws.SetPongHandler(func(data string) error { return nc.Publish(r.up, frame(kindPong, []byte(data))) })
	if err := nc.Publish(r.up, frame(kindText, first)); err != nil {
		_ = ws.Close()
		return
	}
	readerDone := make(chan struct{})
	go func() { // ends when ws fails, which the loop below makes sure of before it returns
		defer close(readerDone)
		for {
			typ, rd, err := ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				code := websocket.CloseAbnormalClosure
				text := ""
				if errors.As(err, &ce) {
					code, text = ce.Code, ce.Text
				}
				_ = nc.Publish(r.up, frame(kindClose, closePayload(code, text)))
				return
			}
			if typ != websocket.TextMessage {
				// Not part of the protocol: the owner refuses it as the binary message it is.
				_ = nc.Publish(r.up, []byte{kindBinary})
				continue
			}
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(rd); err != nil {
				continue
			}
			if err := nc.Publish(r.up, frame(kindText, buf.Bytes())); err != nil {
				_ = ws.Close()
			}
		}
	}()
	closeWS := func(code int, text string) {
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(r.n.cfg.WriteWait))
		t := time.NewTimer(r.n.cfg.CloseGrace)
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
		case f := <-r.ep.in:
			_ = ws.SetWriteDeadline(time.Now().Add(r.n.cfg.WriteWait))
			var err error
			switch f[0] {
			case kindText:
				err = ws.WriteMessage(websocket.TextMessage, f[1:])
			case kindPing:
				err = ws.WriteControl(websocket.PingMessage, f[1:], time.Now().Add(r.n.cfg.WriteWait))
			case kindPong:
				err = ws.WriteControl(websocket.PongMessage, f[1:], time.Now().Add(r.n.cfg.WriteWait))
			case kindClose:
				code, text := parseClose(f[1:])
				if code == websocket.CloseAbnormalClosure || code == websocket.CloseNoStatusReceived {
					_ = ws.Close()
					<-readerDone
					return
				}
				closeWS(code, text)
				return
			}
			if err != nil {
				_ = nc.Publish(r.up, frame(kindClose, closePayload(websocket.CloseAbnormalClosure, "")))
				_ = ws.Close()
				<-readerDone
				return
			}
		case <-r.ep.dead:
			// The owner fell silent (or this side overflowed): the member redials and resumes.
			_ = nc.Publish(r.up, frame(kindClose, closePayload(websocket.CloseAbnormalClosure, "")))
			closeWS(websocket.CloseGoingAway, string(signaling.CodeServerClosing))
			return
		case <-readerDone:
			// The member's side ended; the close went up. Wait briefly for the owner's close frame.
			t := time.NewTimer(r.n.cfg.CloseGrace)
			select {
			case <-t.C:
			case <-r.ep.dead:
			case f := <-r.ep.in:
				if f[0] == kindText {
					_ = ws.WriteMessage(websocket.TextMessage, f[1:])
				}
			}
			t.Stop()
			_ = ws.Close()
			return
		case <-quit:
			_ = nc.Publish(r.up, frame(kindClose, closePayload(websocket.CloseGoingAway, "")))
			closeWS(websocket.CloseGoingAway, string(signaling.CodeServerClosing))
			return
		}
	}
}

func closePayload(code int, text string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(code))
	return append(b, text...)
}

// parseClose reads a close payload; a short one is an abnormal closure.
func parseClose(b []byte) (int, string) {
	if len(b) < 2 {
		return websocket.CloseAbnormalClosure, ""
	}
	return int(binary.BigEndian.Uint16(b)), string(b[2:])
}

// ownerSocket is, on the owner, a websocket another node accepted: a signaling.Socket whose
// frames travel on the relay subjects.
type ownerSocket struct {
	n    *Node
	ep   *endpoint
	down string

	mu       sync.Mutex // guards the handlers and the deadline
	onPing   func(string) error
	onPong   func(string) error
	deadline time.Time
	limit    int64

	closeOnce sync.Once
	closed    chan struct{}
	sentClose atomic.Bool
}

var _ signaling.Socket = (*ownerSocket)(nil)

func (s *ownerSocket) SetReadLimit(limit int64) { s.mu.Lock(); s.limit = limit; s.mu.Unlock() }
func (s *ownerSocket) SetPongHandler(h func(string) error) {
	s.mu.Lock()
	s.onPong = h
	s.mu.Unlock()
}
func (s *ownerSocket) SetPingHandler(h func(string) error) {
	s.mu.Lock()
	s.onPing = h
	s.mu.Unlock()
}
func (s *ownerSocket) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
	return nil
}
func (s *ownerSocket) SetWriteDeadline(time.Time) error { return nil }

// errRelayLost: the edge fell silent or the relay overflowed.
var errRelayLost = errors.New("cluster: relay lost")

// NextReader returns the next text message from the edge, running the ping and pong handlers on
// the way, until the read deadline (an error whose Timeout is true), a close frame (a
// *websocket.CloseError) or the relay's end.
func (s *ownerSocket) NextReader() (int, io.Reader, error) {
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
		case f := <-s.ep.in:
			switch f[0] {
			case kindText:
				if limit > 0 && int64(len(f)-1) > limit {
					return 0, nil, websocket.ErrReadLimit
				}
				return websocket.TextMessage, bytes.NewReader(f[1:]), nil
			case kindBinary:
				return websocket.BinaryMessage, bytes.NewReader(nil), nil
			case kindPing, kindPong:
				s.mu.Lock()
				h := s.onPong
				if f[0] == kindPing {
					h = s.onPing
				}
				s.mu.Unlock()
				if h != nil {
					if err := h(string(f[1:])); err != nil {
						return 0, nil, err
					}
				}
			case kindClose:
				code, text := parseClose(f[1:])
				return 0, nil, &websocket.CloseError{Code: code, Text: text}
			}
		case <-s.ep.dead:
			return 0, nil, errRelayLost
		case <-s.closed:
			return 0, nil, net.ErrClosed
		case <-timeout:
			return 0, nil, os.ErrDeadlineExceeded
		}
	}
}

func (s *ownerSocket) publish(kind byte, data []byte) error {
	select {
	case <-s.closed:
		return websocket.ErrCloseSent
	default:
	}
	return s.n.nc.Publish(s.down, frame(kind, data))
}

func (s *ownerSocket) WriteMessage(_ int, data []byte) error { return s.publish(kindText, data) }

// NextWriter buffers one message and publishes it on Close.
func (s *ownerSocket) NextWriter(int) (io.WriteCloser, error) { return &msgWriter{s: s}, nil }

type msgWriter struct {
	s   *ownerSocket
	buf []byte
}

func (w *msgWriter) Write(p []byte) (int, error) {
	if len(w.buf) == 0 {
		w.buf = append(w.buf, kindText)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *msgWriter) Close() error {
	if len(w.buf) == 0 {
		w.buf = append(w.buf, kindText)
	}
	select {
	case <-w.s.closed:
		return websocket.ErrCloseSent
	default:
	}
	return w.s.n.nc.Publish(w.s.down, w.buf)
}

func (s *ownerSocket) WriteControl(typ int, data []byte, _ time.Time) error {
	switch typ {
	case websocket.PingMessage:
		return s.publish(kindPing, data)
	case websocket.PongMessage:
		return s.publish(kindPong, data)
	case websocket.CloseMessage:
		s.sentClose.Store(true)
		return s.publish(kindClose, data)
	}
	return nil
}

// Close ends the relay: the edge is told (an abnormal closure unless a close frame went already).
func (s *ownerSocket) Close() error {
	s.closeOnce.Do(func() {
		if !s.sentClose.Load() {
			_ = s.n.nc.Publish(s.down, frame(kindClose, closePayload(websocket.CloseAbnormalClosure, "")))
		}
		close(s.closed)
		_ = s.ep.sub.Unsubscribe()
		s.n.forget(s.ep)
	})
	return nil
}
