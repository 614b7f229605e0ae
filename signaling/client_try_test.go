package signaling

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// dialStuck dials a server that stops reading, over sockets with small buffers, with a
// one-message send queue: sends fill up at once.
func dialStuck(t *testing.T) (*Client, ClientConfig) {
	t.Helper()
	url := fakeServer(t, true, func(ws *websocket.Conn) {
		if tc, ok := ws.NetConn().(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4096)
		}
	})
	cfg := quietConfig(t)
	cfg.SendQueue = 1
	cfg.WriteWait = time.Minute
	cfg.Dialer = &websocket.Dialer{
		HandshakeTimeout: waitTimeout,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetWriteBuffer(4096)
			}
			return c, err
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := Dial(ctx, url, JoinOptions{Room: "r", User: "a"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg
}

// TestClientTryNeverBlocks: against a server that stops reading, the Try methods fail at once
// with ErrSendQueueFull once the queue is full, instead of waiting for room.
func TestClientTryNeverBlocks(t *testing.T) {
	c, _ := dialStuck(t)
	big := SignalPayload{Kind: SignalOffer, SDP: strings.Repeat("s", MaxSDPLen)}
	// fill sends until the queue is full. The writer may still take one message out after
	// that (the kernel's buffers absorb a little more before the stuck server's window closes),
	// so each Try method is checked right after a fill, a few times: it must never block, and
	// must say ErrSendQueueFull on a full queue.
	fill := func() {
		t.Helper()
		for i := 0; i < 1000; i++ {
			start := time.Now()
			err := c.TrySendSignal(2, big)
			if d := time.Since(start); d > time.Second {
				t.Fatalf("TrySendSignal took %v", d)
			}
			switch {
			case errors.Is(err, ErrSendQueueFull):
				return
			case err != nil:
				t.Fatal(err)
			}
		}
		t.Fatal("the send queue never filled")
	}
	for name, try := range map[string]func() error{
		"TrySetSynced":     c.TrySetSynced,
		"TryReportReplica": func() error { return c.TryReportReplica(Report{}) },
	} {
		var err error
		for range 20 {
			fill()
			start := time.Now()
			err = try()
			if d := time.Since(start); d > time.Second {
				t.Fatalf("%s took %v", name, d)
			}
			if errors.Is(err, ErrSendQueueFull) {
				break
			}
		}
		if !errors.Is(err, ErrSendQueueFull) {
			t.Fatalf("%s on a full queue = %v", name, err)
		}
	}
	if err := c.TrySendSignal(0, big); !errors.Is(err, ErrBadSignal) {
		t.Fatalf("TrySendSignal to 0 = %v", err)
	}
	_ = c.Close()
	if err := c.TrySetSynced(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TrySetSynced after Close = %v", err)
	}
}
