package signaling

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 10 * time.Second

// checkFor polls cond until it returns nil or the deadline passes.
func checkFor(t testing.TB, total time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", total, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// goroutineMarkers name the functions of this package's goroutines.
var (
	serverMarkers = []string{"signaling.(*Server)", "signaling.(*conn)", "signaling.(*hub)", "signaling.New.func"}
	clientMarkers = []string{"signaling.(*Client)"}
)

// ourGoroutines returns the stacks of live goroutines that run code of this
// package matching markers.
func ourGoroutines(markers []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, m := range markers {
			if strings.Contains(g, m) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// checkNoGoroutines fails if goroutines of this package outlive the test.
func checkNoGoroutines(t testing.TB) {
	t.Helper()
	checkFor(t, waitTimeout, func() error {
		if gs := ourGoroutines(append(append([]string(nil), serverMarkers...), clientMarkers...)); len(gs) > 0 {
			return fmt.Errorf("%d goroutines left, first:\n%s", len(gs), gs[0])
		}
		return nil
	})
}

type testEnv struct {
	t    *testing.T
	srv  *Server
	hs   *httptest.Server
	url  string
	logs *syncbuf.Buffer
	// conns holds each client's TCP connection (*Client → net.Conn), for kill.
	conns sync.Map
}

// newEnv starts a server on 127.0.0.1:0 with test-friendly intervals for the
// zero fields of cfg. Cleanup closes clients, the server and the listener,
// then checks that no goroutine of the package is left.
func newEnv(t *testing.T, cfg Config) *testEnv {
	return newEnvWith(t, cfg, nil)
}

// newEnvWith is newEnv with a hook to adjust the httptest server before start.
func newEnvWith(t *testing.T, cfg Config, adjust func(*httptest.Server)) *testEnv {
	t.Helper()
	t.Cleanup(func() { checkNoGoroutines(t) })
	logs := &syncbuf.Buffer{}
	cfg.Logger = zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), logs)).Level(zerolog.InfoLevel).With().Timestamp().Logger()
	if cfg.PingInterval == 0 {
		cfg.PingInterval = 100 * time.Millisecond
	}
	if cfg.PongWait == 0 {
		cfg.PongWait = 3 * time.Second
	}
	if cfg.CloseGrace == 0 {
		cfg.CloseGrace = 500 * time.Millisecond
	}
	srv := New(cfg)
	hs := httptest.NewUnstartedServer(srv.Handler())
	if adjust != nil {
		adjust(hs)
	}
	hs.Start()
	t.Cleanup(hs.Close)
	t.Cleanup(func() { _ = srv.Close() })
	return &testEnv{t: t, srv: srv, hs: hs, url: hs.URL, logs: logs}
}

func (e *testEnv) clientConfig() ClientConfig {
	return ClientConfig{
		Logger:       zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.InfoLevel),
		PingInterval: 100 * time.Millisecond,
		PongWait:     3 * time.Second,
		CloseGrace:   500 * time.Millisecond,
	}
}

// dial joins with opts and registers Close for cleanup.
func (e *testEnv) dial(opts JoinOptions) *Client {
	e.t.Helper()
	c, err := e.dialErr(opts, e.clientConfig())
	if err != nil {
		e.t.Fatalf("Dial %+v: %v", opts, err)
	}
	return c
}

func (e *testEnv) dialErr(opts JoinOptions, cfg ClientConfig) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var conn net.Conn
	if cfg.Dialer == nil {
		// Keep the client's TCP connection, for kill.
		cfg.Dialer = &websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var err error
			conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return conn, err
		}}
	}
	c, err := Dial(ctx, e.url, opts, cfg)
	if err == nil {
		e.t.Cleanup(func() { _ = c.Close() })
		if conn != nil {
			e.conns.Store(c, conn)
		}
	}
	return c, err
}

// kill closes c's TCP connection without a close frame, as a crashed process or a pulled
// cable would.
func (e *testEnv) kill(c *Client) {
	conn, ok := e.conns.Load(c)
	if !ok {
		e.t.Fatal("kill: a client dialed with its own Dialer")
	}
	_ = conn.(net.Conn).Close()
}

// joined dials and consumes the Joined event.
func (e *testEnv) joined(opts JoinOptions) (*Client, Joined) {
	e.t.Helper()
	c := e.dial(opts)
	j := next[Joined](e.t, c)
	return c, j
}

// nextEvent returns the next event of c, failing after waitTimeout.
func nextEvent(t testing.TB, c *Client) Event {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		if !ok {
			t.Fatalf("peer %d: events closed", c.Self())
		}
		return ev
	case <-time.After(waitTimeout):
		t.Fatalf("peer %d: no event within %v", c.Self(), waitTimeout)
	}
	return nil
}

// next returns the next event of c and fails unless it is a T.
func next[T Event](t testing.TB, c *Client) T {
	t.Helper()
	ev := nextEvent(t, c)
	v, ok := ev.(T)
	if !ok {
		var want T
		t.Fatalf("peer %d: got %T %+v, want %T", c.Self(), ev, ev, want)
	}
	return v
}

// until skips events of c until one is a T for which match holds.
func until[T Event](t testing.TB, c *Client, match func(T) bool) T {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				var want T
				t.Fatalf("peer %d: events closed while waiting for %T", c.Self(), want)
			}
			if v, ok := ev.(T); ok && (match == nil || match(v)) {
				return v
			}
			if cl, ok := ev.(Closed); ok {
				var want T
				t.Fatalf("peer %d: closed (%v) while waiting for %T", c.Self(), cl.Err, want)
			}
		case <-deadline:
			var want T
			t.Fatalf("peer %d: no %T within %v", c.Self(), want, waitTimeout)
		}
	}
}

// closedEvent waits for Closed and checks that the channel closes after it.
func closedEvent(t testing.TB, c *Client) Closed {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatalf("events closed without Closed")
			}
			cl, isClosed := ev.(Closed)
			if !isClosed {
				continue
			}
			select {
			case ev, ok := <-c.Events():
				if ok {
					t.Fatalf("event %T after Closed", ev)
				}
			case <-deadline:
				t.Fatalf("events not closed after Closed")
			}
			return cl
		case <-deadline:
			t.Fatalf("no Closed within %v", waitTimeout)
		}
	}
}

// raw dials a bare websocket (for clients that misbehave on purpose).
func (e *testEnv) raw(d *websocket.Dialer) *websocket.Conn {
	e.t.Helper()
	if d == nil {
		d = &websocket.Dialer{HandshakeTimeout: waitTimeout}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	u, _ := wsURL(e.url)
	ws, resp, err := d.DialContext(ctx, u, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		e.t.Fatalf("raw dial: %v", err)
	}
	e.t.Cleanup(func() { _ = ws.Close() })
	return ws
}

// rawSend writes one text message.
func rawSend(t testing.TB, ws *websocket.Conn, msg string) {
	t.Helper()
	_ = ws.SetWriteDeadline(time.Now().Add(waitTimeout))
	if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("raw write: %v", err)
	}
}

// rawRead reads one text message as a generic JSON object.
func rawRead(t testing.TB, ws *websocket.Conn) map[string]any {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(waitTimeout))
	_, b, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("raw read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("raw read %s: %v", b, err)
	}
	return m
}

// rawReadClose reads until the server closes and returns the close error.
func rawReadClose(t testing.TB, ws *websocket.Conn) error {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return err
		}
	}
}

// get fetches path and returns the status and body.
func (e *testEnv) get(path string) (int, []byte) {
	e.t.Helper()
	return e.getWith(path, "", "")
}

// getWith fetches path with a Host header and an Authorization bearer ("" for none).
func (e *testEnv) getWith(path, host, bearer string) (int, []byte) {
	e.t.Helper()
	return e.request(http.MethodGet, path, host, bearer, nil)
}

// request sends method path with a Host header and an Authorization bearer ("" for none) and
// body (nil for none), and returns the status and the response body.
func (e *testEnv) request(method, path, host, bearer string, body io.Reader) (int, []byte) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, e.url+path, body)
	if host != "" {
		req.Host = host
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	client := e.hs.Client()
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// rooms returns the server's rooms.
func (e *testEnv) rooms() []RoomInfo {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	rs, err := e.srv.Rooms(ctx)
	if err != nil {
		e.t.Fatalf("Rooms: %v", err)
	}
	return rs
}

// smallBufferListener shrinks the send buffer of every accepted connection,
// so that a client that does not read fills the server's queue quickly.
type smallBufferListener struct {
	net.Listener
}

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}
