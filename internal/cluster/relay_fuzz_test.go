package cluster

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
)

// FuzzOwnerFrames feeds arbitrary relay frames, as another node could publish them, to an owner
// socket: each read gives a message, a close error or a timeout, never a panic, and a text
// message over the read limit is refused.
func FuzzOwnerFrames(f *testing.F) {
	f.Add([]byte("T{\"v\":1,\"type\":\"join\"}"), []byte("C\x03\xe8bye"))
	f.Add([]byte("P"), []byte("C"))
	f.Add([]byte("O\x00"), []byte("B"))
	f.Add([]byte("H"), []byte("Xjunk"))
	f.Add([]byte("T"), []byte(""))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ep := newEndpoint("id", "peer")
		s := &ownerSocket{ep: ep, closed: make(chan struct{})}
		s.SetReadLimit(16)
		pings := 0
		s.SetPingHandler(func(string) error { pings++; return nil })
		s.SetPongHandler(func(string) error { return nil })
		ep.deliver(&nats.Msg{Data: a})
		ep.deliver(&nats.Msg{Data: b})
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

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
