package signaling

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestWSURL(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "http base", in: "http://127.0.0.1:7880", want: "ws://127.0.0.1:7880/ws"},
		{name: "http slash", in: "http://127.0.0.1:7880/", want: "ws://127.0.0.1:7880/ws"},
		{name: "https prefix", in: "https://example.test/signal", want: "wss://example.test/signal/ws"},
		{name: "ws endpoint", in: "ws://127.0.0.1:1/ws", want: "ws://127.0.0.1:1/ws"},
		{name: "wss endpoint", in: "wss://h/x/ws", want: "wss://h/x/ws"},
		{name: "bad scheme", in: "ftp://h", wantErr: true},
		{name: "no host", in: "http://", wantErr: true},
		{name: "unparsable", in: "http://[::1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wsURL(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("wsURL(%q) = %q, %v", tt.in, got, err)
			}
		})
	}
}

// fakeServer answers joins itself, to test the client against a server that
// misbehaves. behave runs after the join was read and, if answer is true,
// answered.
func fakeServer(t *testing.T, answer bool, behave func(ws *websocket.Conn)) string {
	t.Helper()
	t.Cleanup(func() { checkNoGoroutines(t) })
	var wg sync.WaitGroup
	done := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
		if answer {
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"v":1,"type":"joined","room":"r","self":1,"peerId":"a/~1","term":1,"host":1,"members":[{"peerIndex":1,"peerId":"a/~1","kind":"bot","power":0,"mayHost":true,"synced":true}]}`))
		}
		if behave != nil {
			behave(ws)
		}
		<-done
	}))
	t.Cleanup(func() {
		close(done)
		hs.CloseClientConnections()
		hs.Close()
		wg.Wait()
	})
	return hs.URL
}

// dialFake joins room r as a on the fake server at url; the client closes at cleanup.
func dialFake(t *testing.T, url string, cfg ClientConfig) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := Dial(ctx, url, JoinOptions{Room: "r", User: "a"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func quietConfig(t *testing.T) ClientConfig {
	return ClientConfig{PingInterval: 100 * time.Millisecond, PongWait: 3 * time.Second, CloseGrace: 200 * time.Millisecond}
}

func TestDialErrors(t *testing.T) {
	t.Run("invalid join is refused locally", func(t *testing.T) {
		_, err := Dial(context.Background(), "http://127.0.0.1:1", JoinOptions{User: "a"}, ClientConfig{})
		if !errors.Is(err, ErrBadMessage) {
			t.Fatalf("Dial = %v", err)
		}
	})
	t.Run("bad URL", func(t *testing.T) {
		if _, err := Dial(context.Background(), "gopher://x", JoinOptions{Room: "r", User: "a"}, ClientConfig{}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		if _, err := Dial(context.Background(), "http://"+addr, JoinOptions{Room: "r", User: "a"}, ClientConfig{}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("server never answers the join", func(t *testing.T) {
		url := fakeServer(t, false, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := Dial(ctx, url, JoinOptions{Room: "r", User: "a"}, quietConfig(t))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Dial = %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("Dial took %v", d)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		gotJoin := make(chan struct{})
		url := fakeServer(t, false, func(*websocket.Conn) { close(gotJoin) })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// Cancel while Dial waits for the answer to its join.
			<-gotJoin
			cancel()
		}()
		if _, err := Dial(ctx, url, JoinOptions{Room: "r", User: "a"}, quietConfig(t)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Dial = %v", err)
		}
	})
}

func TestClientCloseIdempotent(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Close()
		}()
	}
	wg.Wait()
	if cl := closedEvent(t, c); cl.Err != nil {
		t.Fatalf("Closed.Err = %v, want nil after Close", cl.Err)
	}
	ctx := context.Background()
	if err := c.SetSynced(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetSynced after Close = %v", err)
	}
	if err := c.SendSignal(ctx, 2, SignalPayload{Kind: SignalOffer, SDP: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("SendSignal after Close = %v", err)
	}
	if err := c.ReportReplica(ctx, Report{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("ReportReplica after Close = %v", err)
	}
	if err := c.SendSignal(ctx, 0, SignalPayload{Kind: SignalOffer, SDP: "x"}); !errors.Is(err, ErrBadSignal) {
		t.Fatalf("SendSignal to 0 = %v", err)
	}
	if err := c.SendSignal(ctx, 2, SignalPayload{Kind: SignalOffer}); !errors.Is(err, ErrBadSignal) {
		t.Fatalf("SendSignal without sdp = %v", err)
	}
	if j := c.Joined(); j.Self != 1 || len(j.Members) != 1 {
		t.Fatalf("Joined = %+v", j)
	}
}

// TestClientEventOverflow: a client whose Events are not drained for EventWait
// disconnects instead of blocking or losing events; Closed still arrives last.
func TestClientEventOverflow(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.clientConfig()
	cfg.EventQueue = 4
	cfg.EventWait = 100 * time.Millisecond
	x, err := e.dialErr(JoinOptions{Room: "r", User: "x"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	watcher, _ := e.joined(JoinOptions{Room: "r", User: "w"})
	for i := range 6 {
		c := e.dial(JoinOptions{Room: "r", User: "u" + string(rune('a'+i))})
		_ = c
	}
	// x leaves the room because it overflowed.
	until(t, watcher, func(l MemberLeft) bool { return l.Index == 1 })
	var evs []Event
	for ev := range x.Events() {
		evs = append(evs, ev)
	}
	if len(evs) != 4 {
		t.Fatalf("got %d events, want 4 (Joined, 2 x MemberJoined, Closed): %+v", len(evs), evs)
	}
	if _, ok := evs[0].(Joined); !ok {
		t.Fatalf("first event %T", evs[0])
	}
	if cl, ok := evs[3].(Closed); !ok || !errors.Is(cl.Err, ErrEventOverflow) {
		t.Fatalf("last event %+v", evs[3])
	}
}

// TestClientSendBounded: against a server that stops reading, SendSignal
// returns with the context's error instead of blocking forever.
func TestClientSendBounded(t *testing.T) {
	c, cfg := dialStuck(t)
	big := SignalPayload{Kind: SignalOffer, SDP: strings.Repeat("s", MaxSDPLen)}
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("SendSignal never blocked")
		}
		sctx, scancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := c.SendSignal(sctx, 2, big)
		scancel()
		if errors.Is(err, context.DeadlineExceeded) {
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("SendSignal returned after %v", d)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Close is bounded by CloseGrace even though a write is stuck.
	start := time.Now()
	_ = c.Close()
	if d := time.Since(start); d > cfg.CloseGrace+2*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

// TestClientServerSilent: a server that stops answering is given up after
// PongWait; Closed reports it.
func TestClientServerSilent(t *testing.T) {
	url := fakeServer(t, true, func(ws *websocket.Conn) {
		// Stop reading: no pongs are sent back.
	})
	cfg := quietConfig(t)
	cfg.PongWait = 500 * time.Millisecond
	c := dialFake(t, url, cfg)
	if cl := closedEvent(t, c); !errors.Is(cl.Err, ErrDisconnected) {
		t.Fatalf("Closed = %v", cl.Err)
	}
}

// TestKeepaliveOneDirection: with the default ClientConfig the client never pings; the server's
// pings alone keep both sides alive, and the client still gives up on a server silent for
// PongWait.
func TestKeepaliveOneDirection(t *testing.T) {
	var clientPings atomic.Int64
	stopPinging := make(chan struct{})
	url := fakeServer(t, true, func(ws *websocket.Conn) {
		ws.SetPingHandler(func(string) error { clientPings.Add(1); return nil })
		go func() {
			for {
				if _, _, err := ws.NextReader(); err != nil {
					return
				}
			}
		}()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if err := ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
					return
				}
			case <-stopPinging:
				return
			}
		}
	})
	cfg := ClientConfig{PongWait: 400 * time.Millisecond, CloseGrace: 200 * time.Millisecond}
	c := dialFake(t, url, cfg)
	next[Joined](t, c)
	// Five PongWaits on server pings alone.
	select {
	case ev := <-c.Events():
		t.Fatalf("client got %T %+v while the server pinged", ev, ev)
	case <-time.After(2 * time.Second):
	}
	if n := clientPings.Load(); n != 0 {
		t.Fatalf("the client sent %d pings, want none", n)
	}
	close(stopPinging)
	start := time.Now()
	if cl := closedEvent(t, c); !errors.Is(cl.Err, ErrDisconnected) {
		t.Fatalf("Closed = %v", cl.Err)
	}
	if d := time.Since(start); d > cfg.PongWait+time.Second {
		t.Fatalf("silent server noticed after %v, want within PongWait %v", d, cfg.PongWait)
	}
}

// TestClientJoinBurst: a burst of joins that outruns the consumer fills the event queue; the
// client waits for the consumer (up to EventWait) instead of disconnecting, and loses nothing.
func TestClientJoinBurst(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.clientConfig()
	cfg.EventQueue = 8
	cfg.EventWait = waitTimeout
	h, err := e.dialErr(JoinOptions{Room: "r", User: "host"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		e.dial(JoinOptions{Room: "r", User: fmt.Sprintf("m%d", i)})
	}
	// Nobody drained h while they joined: its queue is full and its reader waits.
	checkFor(t, waitTimeout, func() error {
		if got := len(h.Events()); got != cfg.EventQueue-1 {
			return fmt.Errorf("%d events queued, want the queue full (%d)", got, cfg.EventQueue-1)
		}
		return nil
	})
	next[Joined](t, h)
	for i := range n {
		if ev := next[MemberJoined](t, h); ev.Member.Index != PeerIndex(i+2) {
			t.Fatalf("member-joined %d: %+v", i, ev)
		}
	}
	if rs := e.rooms(); len(rs[0].Members) != n+1 {
		t.Fatalf("%d members, want %d: the host left", len(rs[0].Members), n+1)
	}
}

// TestParseServers: a failover list is split, trimmed and checked entry by entry.
func TestParseServers(t *testing.T) {
	got, err := ParseServers(" http://10.0.0.1:7880, https://b.example/base/ ,ws://c:1/ws")
	if err != nil || len(got) != 3 || got[0] != "http://10.0.0.1:7880" || got[1] != "https://b.example/base/" || got[2] != "ws://c:1/ws" {
		t.Fatalf("ParseServers: %q, %v", got, err)
	}
	for _, bad := range []string{"", "http://a,", "http://a,,http://b", "ftp://a", "http://", strings.Repeat("http://a,", MaxServers) + "http://a"} {
		if _, err := ParseServers(bad); err == nil {
			t.Errorf("ParseServers(%q) accepted", bad)
		}
	}
}
