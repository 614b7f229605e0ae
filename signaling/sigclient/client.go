package sigclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/boundq"
)

// JoinOptions say which room to join and as whom.
type JoinOptions struct {
	// Room is the room to join. Required.
	Room RoomID
	// User is the user name. Required in open mode; with a token it may be
	// empty (the token names the user) or must match the token.
	User string
	// Device tells this connection apart from the user's others; a join with
	// the same user and device replaces the older connection. If empty (and
	// the token names none), the server makes up a unique device.
	Device string
	// Kind is browser, bot or host. If empty, the token's kind or "browser".
	Kind Kind
	// Token is the join token, required when the server has a secret.
	Token string
	// Resume, if not nil, reclaims the peer index this member held on an earlier connection
	// (see Resume). Dial then fails with an error that wraps ErrResumeRefused if the server
	// refuses the claim or gives another index.
	Resume *Resume
	// NoHost declines hosting: the member is never elected, whatever its token allows (a
	// server-side follower, docs/protocol.md §6 "Kept rooms").
	NoHost bool
}

// ClientConfig configures a Client. The zero value works.
type ClientConfig struct {
	// Logger receives the client's logs. The zero value discards them.
	Logger zerolog.Logger
	// Dialer dials the websocket. If nil, a dialer with a 10s handshake
	// timeout, no proxy and write buffers lent from a pool while a message is
	// written is used.
	Dialer *websocket.Dialer
	// Header is sent with the websocket handshake (for example Origin).
	Header http.Header
	// EventQueue is the capacity of Events. Signals are shed (dropped and
	// counted, see Client.ShedSignals) once the queue is three quarters full,
	// so that a flood of signals from other members cannot disconnect the
	// client; WebRTC negotiation retries. If the queue fills up with other
	// events and stays full for EventWait (Events is not drained), the client
	// disconnects with ErrEventOverflow rather than lose an event. If zero,
	// 256.
	EventQueue int
	// EventWait is how long the reader waits for room when the event queue
	// is full, before it disconnects with ErrEventOverflow: a burst of joins
	// slows the client down instead of disconnecting it. Keep it well below
	// the server's PongWait (the client answers no ping while it waits). If
	// zero, 3s.
	EventWait time.Duration
	// SendQueue is the number of outbound messages queued. If zero, 64.
	SendQueue int
	// PingInterval is how often the client pings the server. If zero, the
	// client does not ping: the server pings it (Config.PingInterval) and the
	// client answers, so keepalives cost two frames per server interval.
	PingInterval time.Duration
	// PongWait is how long the server may stay silent (no message and no
	// ping) before the client gives up on it; keep it above the server's
	// PingInterval. If zero, DefaultPongWait (12s).
	PongWait time.Duration
	// WriteWait bounds every socket write. If zero, 5s.
	WriteWait time.Duration
	// CloseGrace is how long Close waits for the server's close frame. If
	// zero, 1s.
	CloseGrace time.Duration
}

// Defaults for zero ClientConfig fields; the server's Config (package signaling) uses the same.
const (
	DefaultEventWait  = 3 * time.Second
	DefaultPongWait   = 12 * time.Second
	DefaultWriteWait  = 5 * time.Second
	DefaultCloseGrace = time.Second
)

func (c ClientConfig) withDefaults() ClientConfig {
	if c.Dialer == nil {
		// The write buffer is borrowed from a pool only while a message is written, as the
		// server's: an idle member's client holds none.
		c.Dialer = &websocket.Dialer{HandshakeTimeout: 10 * time.Second, WriteBufferPool: &writeBuffers}
	}
	if c.EventQueue <= 0 {
		c.EventQueue = 256
	}
	if c.EventWait <= 0 {
		c.EventWait = DefaultEventWait
	}
	if c.EventQueue < 2 {
		c.EventQueue = 2 // one slot is reserved for Closed
	}
	if c.SendQueue <= 0 {
		c.SendQueue = 64
	}
	if c.PongWait <= 0 {
		c.PongWait = DefaultPongWait
	}
	if c.WriteWait <= 0 {
		c.WriteWait = DefaultWriteWait
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = DefaultCloseGrace
	}
	return c
}

// writeBuffers lends the default dialer's websockets their write buffers (gorilla's BufferPool).
var writeBuffers sync.Pool

// Client is a member's connection to the signaling server. Its methods may be
// called from any goroutine. It runs two goroutines (a reader and a writer)
// until Close or until the connection fails.
type Client struct {
	cfg    ClientConfig
	ws     *websocket.Conn
	log    zerolog.Logger
	joined Joined

	events chan Event // only the reader sends; closed after Closed
	// send is the outbound queue, of SendQueue frames; its storage grows with what it holds (a
	// channel of the peer's 1,024 slots cost every idle member 24 KiB).
	send *boundq.Queue[[]byte]

	done       chan struct{} // closed by shutdown
	readerDone chan struct{}
	writerDone chan struct{}
	once       sync.Once
	err        error // why the client ended; written in once before done closes
	graceful   bool  // likewise

	// resumeToken is the latest resume token (Joined's, then each HostChanged's); the reader
	// stores it.
	resumeToken atomic.Pointer[string]
	shed        atomic.Uint64 // signals shed by the reader

	// Owned by the reader goroutine.
	buf bytes.Buffer
	msg ServerMessage
	// lastError is the reader's last Error event: a close frame with its code ends the
	// connection for the reason it gave (a kick's or ban's words, not the bare code).
	lastError Error
}

// WebSocketURL turns a server base URL into its websocket endpoint.
func WebSocketURL(serverURL string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("signaling: server URL: %w", err)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("signaling: server URL %q: scheme must be http, https, ws or wss", serverURL)
	}
	if u.Host == "" {
		return "", fmt.Errorf("signaling: server URL %q has no host", serverURL)
	}
	if !strings.HasSuffix(u.Path, "/ws") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/ws"
	}
	return u.String(), nil
}

// Dial connects to the server at serverURL (its base URL, e.g.
// http://127.0.0.1:7880; the client appends /ws unless the path already ends
// in /ws), joins, and returns once the server has answered. A refused join
// returns an error that wraps the server's Error (errors.Is(err,
// ErrTokenExpired) and so on). ctx bounds the handshake and the join only.
//
// The first event on Events is the Joined that Dial received.
func Dial(ctx context.Context, serverURL string, opts JoinOptions, cfg ClientConfig) (*Client, error) {
	cfg = cfg.withDefaults()
	endpoint, err := WebSocketURL(serverURL)
	if err != nil {
		return nil, err
	}
	join := ClientMessage{V: ProtocolVersion, Type: TypeJoin, Room: opts.Room, User: opts.User, Device: opts.Device, Kind: opts.Kind, Token: opts.Token, Resume: opts.Resume, Batch: true, NoHost: opts.NoHost}
	frame, err := json.Marshal(join)
	if err != nil {
		return nil, fmt.Errorf("signaling: encoding join: %w", err)
	}
	// Check locally what the server would refuse anyway.
	if err := DecodeClientMessage(frame, new(ClientMessage)); err != nil {
		return nil, err
	}
	ws, resp, err := cfg.Dialer.DialContext(ctx, endpoint, cfg.Header)
	var refusal []byte
	if resp != nil && resp.Body != nil {
		if err != nil && resp.StatusCode == http.StatusServiceUnavailable {
			refusal, _ = io.ReadAll(io.LimitReader(resp.Body, 512))
		}
		_ = resp.Body.Close()
	}
	if err != nil {
		if code, msg, ok := strings.Cut(strings.TrimSpace(string(refusal)), ": "); ok && ErrorCode(code) == CodeServerBusy {
			err = Error{Code: CodeServerBusy, Message: msg} // a connection cap, before the upgrade
		}
		return nil, fmt.Errorf("signaling: dial %s: %w", endpoint, err)
	}
	c := &Client{
		cfg: cfg, ws: ws,
		log:        cfg.Logger.With().Str("room", string(opts.Room)).Logger(),
		events:     make(chan Event, cfg.EventQueue),
		send:       boundq.New[[]byte](cfg.SendQueue, idleSendSlots),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	joined, err := c.handshake(ctx, frame)
	if err == nil && opts.Resume != nil && joined.Self != opts.Resume.Index {
		// A server that predates resume ignored the claim and issued a new index: leave at
		// once, so that the room does not count this member twice.
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
			time.Now().Add(c.cfg.WriteWait))
		err = fmt.Errorf("%w: claimed peer %d, joined as %d", ErrResumeIgnored, opts.Resume.Index, joined.Self)
	}
	if err != nil {
		_ = ws.Close()
		return nil, fmt.Errorf("signaling: join %q: %w", opts.Room, err)
	}
	c.joined = joined
	c.log = c.log.With().Uint64("peer", uint64(joined.Self)).Logger()
	c.events <- joined // the queue is empty: this cannot block
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

// handshake writes the join and reads the answer, within ctx.
func (c *Client) handshake(ctx context.Context, frame []byte) (Joined, error) {
	// Unblock the socket when ctx ends; the deadline is reset afterwards.
	stop := context.AfterFunc(ctx, func() {
		_ = c.ws.NetConn().SetDeadline(time.Now())
	})
	defer stop()
	// A server that accepts the socket but never answers is given up after
	// WriteWait+PongWait even if ctx has no deadline. ctx's own deadline
	// works through the AfterFunc, so that the error is ctx's.
	deadline := time.Now().Add(c.cfg.WriteWait + c.cfg.PongWait)
	_ = c.ws.SetWriteDeadline(deadline)
	_ = c.ws.SetReadDeadline(deadline)
	fail := func(err error) (Joined, error) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Joined{}, ctxErr
		}
		return Joined{}, err
	}
	if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		return fail(err)
	}
	for {
		data, err := c.next()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				if e, ok := closeFrameError(ce); ok {
					return fail(e)
				}
			}
			return fail(err)
		}
		ev, err := DecodeServerMessage(data, &c.msg)
		if err != nil {
			return fail(err)
		}
		switch ev := ev.(type) {
		case Joined:
			if !stop() {
				return fail(ctx.Err())
			}
			_ = c.ws.SetWriteDeadline(time.Time{})
			_ = c.ws.SetReadDeadline(time.Now().Add(c.cfg.PongWait))
			return ev, nil
		case Error:
			return fail(ev)
		}
		// Anything else before joined is ignored.
	}
}

// closeFrameError maps a server's 1008 or 1001 close frame to its Error.
func closeFrameError(ce *websocket.CloseError) (Error, bool) {
	switch ce.Code {
	case websocket.ClosePolicyViolation, websocket.CloseGoingAway:
		code := ErrorCode(ce.Text)
		if sentinelOf(code) != nil {
			return Error{Code: code, Message: "connection closed by the server"}, true
		}
	}
	return Error{}, false
}

// Joined returns what the server said when this client joined.
func (c *Client) Joined() Joined {
	j := c.joined
	j.Members = append([]Member(nil), j.Members...)
	j.PinnedHosts = append([]Identity(nil), j.PinnedHosts...)
	return j
}

// ResumeToken returns the latest resume token the server gave this client: the one of Joined,
// replaced by each HostChanged that carries one. A resume claim should carry it, because it
// vouches for the latest term (a claim more than MaxTermSkew terms ahead of its token's is
// refused). Empty on an open server.
func (c *Client) ResumeToken() string {
	if p := c.resumeToken.Load(); p != nil {
		return *p
	}
	return c.joined.ResumeToken
}

// ShedSignals returns how many received signals the client dropped because its event queue
// was three quarters full (see ClientConfig.EventQueue).
func (c *Client) ShedSignals() uint64 { return c.shed.Load() }

// Self returns this client's peer index.
func (c *Client) Self() PeerIndex { return c.joined.Self }

// Events returns the event channel: Joined first, Closed last, then the
// channel is closed. Drain it promptly (see ClientConfig.EventQueue).
func (c *Client) Events() <-chan Event { return c.events }

// SendSignal relays payload to the member with peer index to. It returns once
// the message is queued, or with ctx's error, or ErrClosed.
func (c *Client) SendSignal(ctx context.Context, to PeerIndex, payload SignalPayload) error {
	return c.signal(ctx, to, payload, true)
}

// SetSynced tells the server that this member has applied the host's
// snapshot, which makes it eligible as host.
func (c *Client) SetSynced(ctx context.Context) error {
	return c.queue(ctx, ClientMessage{V: ProtocolVersion, Type: TypeSynced}, true)
}

// ReportReplica sends the server a summary of this member's replica (about
// once a second), shown in /api/rooms.
func (c *Client) ReportReplica(ctx context.Context, r Report) error {
	return c.queue(ctx, ClientMessage{V: ProtocolVersion, Type: TypeReport, Replica: &r}, true)
}

// TrySendSignal is SendSignal that never blocks: when the send queue is full
// it returns ErrSendQueueFull at once and the signal is not sent. An owner
// loop that must not wait on the network uses the Try methods.
func (c *Client) TrySendSignal(to PeerIndex, payload SignalPayload) error {
	return c.signal(context.Background(), to, payload, false)
}

// TrySetSynced is SetSynced that never blocks (see TrySendSignal).
func (c *Client) TrySetSynced() error {
	return c.queue(context.Background(), ClientMessage{V: ProtocolVersion, Type: TypeSynced}, false)
}

// TryReportReplica is ReportReplica that never blocks (see TrySendSignal).
func (c *Client) TryReportReplica(r Report) error {
	return c.queue(context.Background(), ClientMessage{V: ProtocolVersion, Type: TypeReport, Replica: &r}, false)
}

func (c *Client) signal(ctx context.Context, to PeerIndex, payload SignalPayload, wait bool) error {
	if to == 0 {
		return fmt.Errorf("%w: peer index 0", ErrBadSignal)
	}
	if err := payload.Validate(); err != nil {
		return err
	}
	return c.queue(ctx, ClientMessage{V: ProtocolVersion, Type: TypeSignal, To: to, Payload: &payload}, wait)
}

// queue puts m on the send queue. With wait it waits for room until ctx
// ends; without, a full queue fails at once with ErrSendQueueFull.
func (c *Client) queue(ctx context.Context, m ClientMessage, wait bool) error {
	frame, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("signaling: encoding %s: %w", m.Type, err)
	}
	select {
	case <-c.done:
		return ErrClosed
	default:
	}
	if !wait {
		if !c.send.TryPush(frame) {
			return fmt.Errorf("%w (%s)", ErrSendQueueFull, m.Type)
		}
		return nil
	}
	if c.send.PushWait(frame, c.done, ctx.Done()) {
		return nil
	}
	select {
	case <-c.done:
		return ErrClosed
	default:
		return ctx.Err()
	}
}

// idleSendSlots is the largest send queue storage kept once the writer drains it.
const idleSendSlots = 8

// Close leaves the room: it sends a close frame and waits for the server's
// answer and for both goroutines to end. After CloseGrace it stops waiting
// for the server and closes the socket, so Close returns within about
// CloseGrace even if the server or the network is stuck. It is idempotent and
// always returns nil.
func (c *Client) Close() error {
	c.shutdown(nil, true)
	t := time.NewTimer(c.cfg.CloseGrace)
	select {
	case <-c.writerDone:
	case <-t.C:
		_ = c.ws.Close()
	}
	t.Stop()
	<-c.readerDone
	<-c.writerDone
	return nil
}

// shutdown starts ending the client; the first call wins.
func (c *Client) shutdown(err error, graceful bool) {
	c.once.Do(func() {
		c.err, c.graceful = err, graceful
		close(c.done)
		if !graceful {
			_ = c.ws.Close()
		}
	})
}

func (c *Client) next() ([]byte, error) {
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return nil, err
		}
		if typ != websocket.TextMessage {
			continue
		}
		c.buf.Reset()
		if _, err := c.buf.ReadFrom(r); err != nil {
			return nil, err
		}
		return c.buf.Bytes(), nil
	}
}

func (c *Client) alive() { _ = c.ws.SetReadDeadline(time.Now().Add(c.cfg.PongWait)) }

func (c *Client) readLoop() {
	defer close(c.readerDone)
	c.ws.SetPongHandler(func(string) error { c.alive(); return nil })
	c.ws.SetPingHandler(func(data string) error {
		c.alive()
		err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.cfg.WriteWait))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) && !isTimeout(err) {
			return err
		}
		return nil
	})
	err := c.readMessages()
	c.shutdown(err, false)
	// Every exit goes through shutdown, so c.err is final here.
	<-c.done
	cause := c.err
	if cause != nil {
		cause = fmt.Errorf("%w: %w", ErrDisconnected, cause)
	}
	c.events <- Closed{Err: cause} // a slot is always free: see emit
	close(c.events)
}

// readMessages returns why the connection ended.
func (c *Client) readMessages() error {
	for {
		data, err := c.next()
		if err != nil {
			var ce *websocket.CloseError
			switch {
			case errors.As(err, &ce):
				if e, ok := closeFrameError(ce); ok {
					if c.lastError.Code == e.Code {
						return c.lastError
					}
					return e
				}
				return err
			case isTimeout(err):
				return fmt.Errorf("server silent for %v: %w", c.cfg.PongWait, err)
			}
			return err
		}
		c.alive()
		// A batch carries several messages separated by '\n' (we asked for batches in the join).
		for line := range bytes.SplitSeq(data, []byte{'\n'}) {
			if err := c.handleMessage(line); err != nil {
				return err
			}
		}
		if c.buf.Cap() > idleReadBuffer {
			c.buf = bytes.Buffer{} // a burst's batches (up to 32 KiB) are not kept by an idle member
		}
	}
}

// idleReadBuffer is the largest read buffer the reader keeps between messages.
const idleReadBuffer = 4 << 10

// handleMessage decodes one server message and queues its event. Only a full event queue is an
// error; an undecodable or unknown message is logged and skipped.
func (c *Client) handleMessage(data []byte) error {
	ev, err := DecodeServerMessage(data, &c.msg)
	if err != nil {
		c.log.Warn().Err(err).Msg("undecodable server message ignored")
		return nil
	}
	if ev == nil {
		c.log.Debug().Str("type", string(c.msg.Type)).Msg("unknown server message ignored")
		return nil
	}
	switch ev := ev.(type) {
	case Joined:
		return nil
	case Error:
		c.lastError = ev
	case HostChanged:
		if ev.ResumeToken != "" {
			c.resumeToken.Store(&ev.ResumeToken)
		}
	case Signal:
		// The last quarter of the queue is for events that cannot be lost.
		if len(c.events) >= cap(c.events)-max(1, cap(c.events)/4) {
			if n := c.shed.Add(1); n&(n-1) == 0 { // log at 1, 2, 4, 8, ...
				c.log.Warn().Uint64("shed", n).Uint64("from", uint64(ev.From)).Msg("event queue three quarters full: signal shed")
			}
			return nil
		}
	}
	if !c.emit(ev) {
		return ErrEventOverflow
	}
	return nil
}

// emit queues an event without taking the last slot, which is kept for Closed. When the queue
// is full (a burst of joins outran the consumer) it waits up to EventWait for the consumer, not
// reading the socket meanwhile (TCP slows the server down), and reports false only then. Only
// the reader sends on c.events, so the check cannot race; a consumer taking an event is seen
// by polling, as a channel cannot signal that one slot short of full is free.
func (c *Client) emit(ev Event) bool {
	if len(c.events) >= cap(c.events)-1 {
		wait := time.NewTimer(c.cfg.EventWait)
		defer wait.Stop()
		poll := time.NewTicker(eventPoll)
		defer poll.Stop()
		for len(c.events) >= cap(c.events)-1 {
			select {
			case <-poll.C:
			case <-wait.C:
				return false
			case <-c.done:
				return false
			}
		}
	}
	c.events <- ev
	return true
}

// eventPoll is how often a reader waiting for room in a full event queue looks again.
const eventPoll = 5 * time.Millisecond

func (c *Client) writeLoop() {
	defer close(c.writerDone)
	var pings <-chan time.Time // nil: the server pings
	if c.cfg.PingInterval > 0 {
		ping := time.NewTicker(c.cfg.PingInterval)
		defer ping.Stop()
		pings = ping.C
	}
	for {
		select {
		case <-c.send.Ready():
			f, ok := c.send.Pop()
			if !ok {
				continue
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(c.cfg.WriteWait))
			if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
				c.shutdown(err, false)
			}
		case <-pings:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.cfg.WriteWait)); err != nil {
				c.shutdown(err, false)
			}
		case <-c.done:
			if c.graceful {
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
					time.Now().Add(c.cfg.WriteWait))
				t := time.NewTimer(c.cfg.CloseGrace)
				select {
				case <-c.readerDone:
				case <-t.C:
				}
				t.Stop()
			}
			_ = c.ws.Close()
			return
		}
	}
}

// MaxServers bounds the node URLs of a failover list (ParseServers).
const MaxServers = 64

// ParseServers splits a comma-separated list of server base URLs (the nodes of a cluster, in
// the order a client tries them) and checks each as Dial would. Blanks around a URL are
// trimmed; an empty entry, a bad URL or more than MaxServers entries is an error. A single URL
// is a list of one.
func ParseServers(list string) ([]string, error) {
	parts := strings.Split(list, ",")
	if len(parts) > MaxServers {
		return nil, fmt.Errorf("signaling: %d server URLs, the limit is %d", len(parts), MaxServers)
	}
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("signaling: server list %q: entry %d is empty", list, i+1)
		}
		if _, err := WebSocketURL(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
