package signaling

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// conn is one websocket on the server. Its reader is the HTTP handler's
// goroutine (readLoop); its writer is writeLoop, which alone writes data
// messages and runs only while there is something to write (a queued frame, a
// due ping, the close): an idle member costs one goroutine, not two, and no
// queue. Control frames (pongs, close) go through websocket.Conn.WriteControl,
// which is safe from any goroutine.
type conn struct {
	s  *Server
	ws socket

	// queue holds the frames for the writer, oldest at head, allocated on demand and dropped
	// once drained (a fixed channel of SendQueue frames cost every idle member 6 KiB).
	// Up to SendQueue frames it is the send queue; past it, frames that cannot be lost
	// (membership, host changes) spill on, up to spillCap more. A burst of joins or leaves in a
	// big room outpaces any fixed queue (each one is broadcast to every member), and dropping a
	// member for it (above all the room's host, whose drop costs the room a migration) turns a
	// crowd into an outage. Signals are counted apart (sigAt): they are refused, as to a busy
	// recipient, once three quarters of SendQueue signals are queued, however many other frames
	// are, and those other frames' bound does not count them; so signals never make a slow
	// consumer, and a burst's membership frames never shed a signal (the offers and answers
	// that make the burst's links). Slices shared by a broadcast: 24 bytes each.
	qMu   sync.Mutex
	queue [][]byte // guarded by qMu
	head  int      // guarded by qMu: queue[:head] is written
	// sigAt holds the positions (counted by pushed and popped) of the queued signals, oldest
	// first: at most three quarters of SendQueue.
	sigAt          []uint64 // guarded by qMu
	pushed, popped uint64   // guarded by qMu: frames ever queued and taken
	writing        bool     // guarded by qMu: a writeLoop runs
	pingDue        bool     // guarded by qMu: the pinger fired; the writer pings
	spillCap       int
	wake           chan struct{} // capacity 1: frames were queued (or a ping is due) while the writer ran
	pinger         *time.Timer   // every PingInterval: sets pingDue; nil until start

	// batch is set from the join when the client reads batched messages; the writer then joins
	// the frames it finds queued into one websocket message (docs/protocol.md §4 "Batched
	// messages"), except the first one it writes (joined or the refusal), which stays alone.
	batch     atomic.Bool
	wroteOne  bool        // owned by the writer
	batchList [][]byte    // owned by the writer: scratch for one batch
	linger    *time.Timer // owned by the writer: Config.MembershipLinger

	done       chan struct{} // closed by shutdown
	readerDone chan struct{} // closed when readLoop returns
	once       sync.Once
	info       closeInfo // written inside once before done is closed; read after <-done
	// log is the server's logger; every line of the connection carries remote and, from the
	// reader once joined, the room and peer (logw, logr). They are added per line, not kept in a
	// child logger: zerolog's With reserves 500 bytes, which every idle member would hold.
	log    zerolog.Logger
	remote string

	// strikes counts refused messages; the reader and the hub both strike.
	strikeMu sync.Mutex
	strikes  tokenBucket // guarded by strikeMu

	// Owned by the reader goroutine.
	// first is the join, read already when the server routed the socket (cluster.go); refuse, if
	// set, refuses it.
	first  []byte
	refuse error
	joined bool
	room   RoomID
	id     Identity
	index  PeerIndex
	buf    *bytes.Buffer // the message being handled, from readBuffers; nil while the reader waits
	msg    clientMessage
}

// tokenBucket limits a rate; its zero value starts full.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

func (b *tokenBucket) allow(now time.Time, rate float64, burst int) bool {
	if b.last.IsZero() {
		b.tokens = float64(burst)
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(burst), b.tokens+d.Seconds()*rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// closeInfo says how a connection ends.
type closeInfo struct {
	reason LeaveReason // why the member leaves, if it had joined
	// When graceful, the writer flushes the queue and sends a close frame
	// with code and text, then waits CloseGrace for the peer's answer.
	// Otherwise the socket is closed at once.
	graceful bool
	code     int
	text     string
}

func newConn(s *Server, ws socket, log zerolog.Logger) *conn {
	return &conn{
		s: s, ws: ws, log: log,
		spillCap:   spillFrames(&s.cfg),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
}

// logw adds the connection's remote address to e; any goroutine may call it.
func (c *conn) logw(e *zerolog.Event) *zerolog.Event { return e.Str("remote", c.remote) }

// logr adds the remote address and, once joined, the room and peer to e; the reader's.
func (c *conn) logr(e *zerolog.Event) *zerolog.Event {
	e = c.logw(e)
	if c.joined {
		e = e.Str("room", string(c.room)).Uint64("peer", uint64(c.index)).Str("peerId", string(c.id))
	}
	return e
}

// spillFrames is the spill's bound: four membership events (joined, synced, left, and a host
// change) for each member of a full room, and never less than the queue itself.
func spillFrames(cfg *Config) int { return 4 * max(cfg.MaxMembers, cfg.SendQueue) }

// enqueue queues frame without blocking and reports whether it fit, in the queue or the spill
// (the signals queued do not count: they have a share of their own, enqueueSignal).
func (c *conn) enqueue(frame []byte) bool {
	c.qMu.Lock()
	defer c.qMu.Unlock()
	if len(c.queue)-c.head-len(c.sigAt) >= c.s.cfg.SendQueue+c.spillCap {
		return false
	}
	c.pushLocked(frame)
	return true
}

// enqueueSignal queues a relayed signal (or an answer to a refused message) unless three
// quarters of SendQueue signals are queued already: a flood of signals is shed (the senders are
// told), and only messages that cannot be lost (membership, host) can make a slow consumer. The
// other frames queued do not count: in a burst of joins every member's queue fills with
// membership frames (each join and each sync goes to every member), and shedding the offers and
// answers behind them left the joiners waiting out their connect timeouts (docs/protocol.md §4).
// A signal waits behind them instead, in order.
func (c *conn) enqueueSignal(frame []byte) bool {
	c.qMu.Lock()
	defer c.qMu.Unlock()
	if len(c.sigAt) >= signalShare(c.s.cfg.SendQueue) {
		return false
	}
	c.sigAt = append(c.sigAt, c.pushed)
	c.pushLocked(frame)
	return true
}

// signalShare is how many signals a socket's queue holds at most: three quarters of SendQueue.
func signalShare(sendQueue int) int { return sendQueue - max(1, sendQueue/4) }

// idleQueueCap is the largest queue array kept once drained; a bigger one (left by a burst) is
// dropped, so that an idle member holds at most this much.
const idleQueueCap = 8

// pushLocked appends frame to the queue and kicks the writer; c.qMu is held.
func (c *conn) pushLocked(frame []byte) {
	if c.head > 0 && len(c.queue) == cap(c.queue) { // reuse the written front before growing
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue, c.head = c.queue[:n], 0
	}
	c.queue = append(c.queue, frame)
	c.pushed++
	c.kickLocked()
}

// popLocked takes the oldest queued frame; c.qMu is held.
func (c *conn) popLocked() ([]byte, bool) {
	if c.head == len(c.queue) {
		return nil, false
	}
	f := c.queue[c.head]
	c.queue[c.head] = nil
	c.head++
	if len(c.sigAt) > 0 && c.sigAt[0] == c.popped {
		c.sigAt = c.sigAt[:copy(c.sigAt, c.sigAt[1:])]
	}
	c.popped++
	if c.head == len(c.queue) {
		if cap(c.queue) > idleQueueCap {
			c.queue = nil
		} else {
			c.queue = c.queue[:0]
		}
		c.head = 0
		if cap(c.sigAt) > idleQueueCap {
			c.sigAt = nil
		}
	}
	return f, true
}

// pop takes the oldest queued frame.
func (c *conn) pop() ([]byte, bool) {
	c.qMu.Lock()
	defer c.qMu.Unlock()
	return c.popLocked()
}

// kickLocked starts the writer, or wakes it if it runs; c.qMu is held. Its callers (the
// reader, the hub, the pinger, Close) hold a place in the server's wait group, so adding the
// writer's cannot race with Close's Wait.
func (c *conn) kickLocked() {
	if c.writing {
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return
	}
	c.writing = true
	c.s.wg.Add(1)
	go c.writeLoop()
}

// start arms the pinger: every PingInterval the writer pings the peer.
func (c *conn) start() {
	c.qMu.Lock()
	defer c.qMu.Unlock()
	c.pinger = time.AfterFunc(c.s.cfg.PingInterval, c.pingSoon)
}

// pingSoon has the writer ping the peer (it re-arms the pinger once it has).
func (c *conn) pingSoon() {
	if !c.s.enter() {
		return
	}
	defer c.s.wg.Done()
	c.qMu.Lock()
	defer c.qMu.Unlock()
	c.pingDue = true
	c.kickLocked()
}

// Bounds of one batched websocket message: a batch stops growing at either.
const (
	maxBatchFrames = 128
	maxBatchBytes  = 32 << 10
)

// writeQueued writes f and, on a batching connection, every frame queued behind it that fits in
// the same websocket message.
func (c *conn) writeQueued(f []byte) bool {
	if !c.batching() {
		return c.write(f)
	}
	fs := append(c.batchList[:0], f)
	size := len(f)
	// lazy: every frame so far is a membership message, which may wait for more. It waits only
	// on an empty queue: whatever is queued (a spill too) joins the batch at once.
	lazy := c.s.cfg.MembershipLinger > 0 && isMembership(f)
	lingering := false
collect:
	for len(fs) < maxBatchFrames && size < maxBatchBytes {
		g, ok := c.pop()
		if !ok {
			if !lazy {
				break collect
			}
			if !lingering {
				lingering = true
				if c.linger == nil {
					c.linger = time.NewTimer(c.s.cfg.MembershipLinger)
				} else {
					c.linger.Reset(c.s.cfg.MembershipLinger)
				}
			}
			select {
			case <-c.wake: // frames were queued (or a ping is due): look again
				continue
			case <-c.linger.C:
				lingering = false
				break collect
			case <-c.done:
				break collect
			}
		}
		fs = append(fs, g)
		size += 1 + len(g)
		lazy = lazy && isMembership(g)
	}
	if lingering {
		c.linger.Stop()
	}
	ok := c.writeAll(fs)
	clear(fs)
	c.batchList = fs[:0]
	return ok
}

// membershipPrefix starts every membership message the hub writes (member-joined, member-synced,
// member-left): struct fields marshal in order, v and type first.
var membershipPrefix = fmt.Appendf(nil, `{"v":%d,"type":"member-`, ProtocolVersion)

// isMembership reports whether frame is a membership message, which may wait a little
// (Config.MembershipLinger) for others to share its websocket message.
func isMembership(frame []byte) bool { return bytes.HasPrefix(frame, membershipPrefix) }

// batching reports whether the writer may join frames now: the client asked for it and the
// first message is out.
func (c *conn) batching() bool { return c.wroteOne && c.batch.Load() }

// writeAll writes fs in order: one websocket message each, or, on a batching connection, as few
// messages of at most maxBatchFrames frames and maxBatchBytes bytes as fit.
func (c *conn) writeAll(fs [][]byte) bool {
	for len(fs) > 0 {
		n := 1
		if c.batching() {
			size := len(fs[0])
			for n < len(fs) && n < maxBatchFrames && size+1+len(fs[n]) <= maxBatchBytes {
				size += 1 + len(fs[n])
				n++
			}
		}
		if !c.writeMessage(fs[:n]) {
			return false
		}
		fs = fs[n:]
	}
	return true
}

// write writes one data message; on failure it shuts the connection down.
func (c *conn) write(f []byte) bool { return c.writeMessage([][]byte{f}) }

// writeMessage writes frames as one websocket message, separated by '\n'; on failure it shuts
// the connection down.
func (c *conn) writeMessage(frames [][]byte) bool {
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteWait))
	err := c.writeFrames(frames)
	c.wroteOne = true
	if err != nil {
		c.logw(c.log.Debug()).Err(err).Msg("write failed")
		c.shutdown(closeInfo{reason: ReasonLost})
		return false
	}
	return true
}

func (c *conn) writeFrames(frames [][]byte) error {
	if len(frames) == 1 {
		return c.ws.WriteMessage(websocket.TextMessage, frames[0])
	}
	w, err := c.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	for i, f := range frames {
		if i > 0 {
			if _, err := w.Write(newline); err != nil {
				return err
			}
		}
		if _, err := w.Write(f); err != nil {
			return err
		}
	}
	return w.Close()
}

var newline = []byte{'\n'}

// shutdown starts ending the connection; the first call wins. It never
// blocks, so the hub may call it.
func (c *conn) shutdown(info closeInfo) {
	c.once.Do(func() {
		c.info = info
		close(c.done)
		if !info.graceful {
			_ = c.ws.Close()
		}
		c.qMu.Lock()
		c.kickLocked() // the writer finishes the socket
		c.qMu.Unlock()
	})
}

// writeLoop writes the queue and a due ping until both are done, and returns (kickLocked
// starts it again); after shutdown it finishes the socket and never returns to writing.
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	cfg := &c.s.cfg
	for {
		c.qMu.Lock()
		select {
		case <-c.done: // checked under qMu: shutdown closes done before it kicks
			c.qMu.Unlock()
			c.finish()
			return
		default:
		}
		ping := c.pingDue
		c.pingDue = false
		f, ok := c.popLocked()
		if !ok && !ping {
			c.writing = false
			c.qMu.Unlock()
			return
		}
		c.qMu.Unlock()
		if ping {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WriteWait)); err != nil {
				c.logw(c.log.Debug()).Err(err).Msg("ping failed")
				c.shutdown(closeInfo{reason: ReasonLost})
			} else {
				c.pinger.Reset(cfg.PingInterval)
			}
		}
		if ok {
			c.writeQueued(f)
		}
	}
}

// finish ends the socket after shutdown.
func (c *conn) finish() {
	cfg := &c.s.cfg
	c.qMu.Lock()
	if c.pinger != nil {
		c.pinger.Stop()
	}
	pending := append([][]byte(nil), c.queue[c.head:]...)
	c.queue, c.head, c.sigAt = nil, 0, nil
	c.popped = c.pushed
	c.qMu.Unlock()
	if c.info.graceful {
		// Flush what is queued now, within one WriteWait in total, so that
		// an error message reaches the peer before the close frame.
		_ = c.ws.SetWriteDeadline(time.Now().Add(cfg.WriteWait))
		for _, f := range pending {
			if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
				break
			}
		}
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.info.code, c.info.text), time.Now().Add(cfg.WriteWait))
		// Wait for the peer's close frame (the reader returns on it), so the
		// socket is not reset under data the peer has yet to read.
		t := time.NewTimer(cfg.CloseGrace)
		select {
		case <-c.readerDone:
		case <-t.C:
		}
		t.Stop()
	}
	_ = c.ws.Close()
}

// readLoop runs on the handler goroutine: the join, then every message, then
// the leave.
func (c *conn) readLoop() {
	defer close(c.readerDone)
	cfg := &c.s.cfg
	c.ws.SetReadLimit(cfg.ReadLimit)
	c.ws.SetPongHandler(func(string) error { c.alive(); return nil })
	c.ws.SetPingHandler(func(data string) error {
		c.alive()
		err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(cfg.WriteWait))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) && !isTimeout(err) {
			return err
		}
		return nil
	})
	_ = c.ws.SetReadDeadline(time.Now().Add(cfg.JoinTimeout))
	if !c.join() {
		c.drain()
		return
	}
	reason := c.readMessages()
	c.s.post(&evLeave{c: c, reason: reason})
	c.shutdown(closeInfo{reason: reason})
}

// alive extends the read deadline of a joined socket: any frame from the peer
// proves it is alive. Before the join only JoinTimeout counts.
func (c *conn) alive() {
	if c.joined {
		_ = c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.PongWait))
	}
}

// readBuffers lends readers the buffer of the message they handle, so that a member waiting for
// its next message holds none.
var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// next reads one message into c.buf; what it returns is valid until the next call. It returns
// binary=true for a binary message, which the protocol does not use.
func (c *conn) next() (data []byte, binary bool, err error) {
	if c.buf != nil {
		readBuffers.Put(c.buf)
		c.buf = nil
	}
	if c.first != nil {
		data, c.first = c.first, nil
		return data, false, nil
	}
	typ, r, err := c.ws.NextReader()
	if err != nil {
		return nil, false, err
	}
	c.buf = readBuffers.Get().(*bytes.Buffer)
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(r); err != nil {
		return nil, false, err
	}
	return c.buf.Bytes(), typ != websocket.TextMessage, nil
}

// join reads and admits the first message. It returns false if the socket
// must close.
func (c *conn) join() bool {
	data, binary, err := c.next()
	switch {
	case err != nil:
		if isTimeout(err) {
			c.reject(fmt.Errorf("%w: no join within %v", ErrJoinTimeout, c.s.cfg.JoinTimeout))
		} else {
			c.shutdown(closeInfo{})
		}
		return false
	case binary:
		c.reject(fmt.Errorf("%w: binary messages are not part of the protocol", ErrBadMessage))
		return false
	}
	if err := decodeClientMessage(data, &c.msg); err != nil {
		c.reject(err)
		return false
	}
	if c.msg.Type != typeJoin {
		c.reject(fmt.Errorf("%w: got %q", ErrJoinRequired, c.msg.Type))
		return false
	}
	if c.refuse != nil {
		c.reject(c.refuse)
		return false
	}
	c.batch.Store(c.msg.Batch)
	req, err := c.s.authorize(&c.msg)
	if err == nil {
		err = c.s.checkResume(&c.msg, &req)
	}
	if err != nil {
		c.reject(err)
		return false
	}
	reply := make(chan joinResult, 1)
	if !c.s.post(&evJoin{c: c, req: req, reply: reply}) {
		return false
	}
	var res joinResult
	select {
	case res = <-reply:
	case <-c.s.quit:
		return false
	}
	if res.err != nil {
		c.reject(res.err)
		return false
	}
	c.joined, c.index = true, res.index
	c.room, c.id = req.room, res.id
	c.alive()
	return true
}

// reject answers a failed join with an error message and a 1008 close frame.
func (c *conn) reject(err error) {
	c.s.stats.rejected.Add(1)
	c.s.stats.refuse(err)
	c.logr(c.log.Info()).Err(err).Msg("join rejected")
	c.enqueue(encodeError(err, 0))
	c.shutdown(closeInfo{graceful: true, code: websocket.ClosePolicyViolation, text: string(codeOf(err))})
}

// drain reads and discards until the peer answers the close frame or
// CloseGrace passes.
func (c *conn) drain() {
	_ = c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.CloseGrace))
	for {
		if _, _, err := c.ws.NextReader(); err != nil {
			return
		}
	}
}

// readMessages handles a joined member's messages until the socket fails,
// and returns why the member leaves.
func (c *conn) readMessages() LeaveReason {
	for {
		data, binary, err := c.next()
		if err != nil {
			return c.leaveReason(err)
		}
		c.alive()
		if binary {
			c.replyError(fmt.Errorf("%w: binary messages are not part of the protocol", ErrBadMessage), 0)
			continue
		}
		if err := decodeClientMessage(data, &c.msg); err != nil {
			c.replyError(err, 0)
			continue
		}
		switch m := &c.msg; m.Type {
		case typeJoin:
			c.replyError(fmt.Errorf("%w: this socket joined as peer %d", ErrAlreadyJoined, c.index), 0)
		case typeSignal:
			frame := mustMarshal(signalMsg{V: ProtocolVersion, Type: typeSignal, From: c.index, To: m.To, Payload: *m.Payload})
			c.s.post(&evSignal{c: c, to: m.To, room: m.Room, frame: frame, kind: m.Payload.Kind, session: m.Payload.Session})
		case typeSynced:
			c.s.post(&evSynced{c: c})
		case typeReport:
			c.s.post(&evReport{c: c, r: *m.Replica})
		}
	}
}

// replyError answers one bad message; the connection stays up.
func (c *conn) replyError(err error, peer PeerIndex) {
	c.s.stats.badMessages.Add(1)
	c.s.stats.refuse(err)
	c.logr(c.log.Debug()).Err(err).Msg("bad message")
	c.enqueueSignal(encodeError(err, peer)) // shed when the queue is full, like a signal
	c.strike(err)
}

// strike counts a refused message against the member. Past Config.ErrorBurst refusals
// (refilled at ErrorRate per second) it is a repeat offender: told too_many_errors and dropped.
// A signal refused because its recipient is busy is no offence of the sender's.
func (c *conn) strike(err error) {
	if errors.Is(err, ErrRecipientBusy) {
		return
	}
	select {
	case <-c.done:
		return // already going
	default:
	}
	cfg := &c.s.cfg
	c.strikeMu.Lock()
	ok := c.strikes.allow(cfg.Clock.Now(), cfg.ErrorRate, cfg.ErrorBurst)
	c.strikeMu.Unlock()
	if ok {
		return
	}
	drop := fmt.Errorf("%w: more than %d refused messages (last: %v)", ErrTooManyErrors, cfg.ErrorBurst, err)
	c.s.stats.refuse(drop)
	c.logw(c.log.Warn()).Err(err).Int("burst", cfg.ErrorBurst).Msg("repeat offender dropped")
	c.enqueue(encodeError(drop, 0))
	c.shutdown(closeInfo{reason: ReasonError, graceful: true, code: websocket.ClosePolicyViolation, text: string(CodeTooManyErrors)})
}

func (c *conn) leaveReason(err error) LeaveReason {
	select {
	case <-c.done:
		if c.info.reason != "" {
			return c.info.reason
		}
		return ReasonLeft
	default:
	}
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce) && ce.Code != websocket.CloseAbnormalClosure:
		return ReasonLeft
	case errors.Is(err, websocket.ErrReadLimit):
		c.logr(c.log.Info()).Int64("limit", c.s.cfg.ReadLimit).Msg("message over the read limit")
		return ReasonError
	case isTimeout(err):
		c.s.stats.timeouts.Add(1)
		c.logr(c.log.Info()).Dur("pongWait", c.s.cfg.PongWait).Msg("ping timeout")
		return ReasonTimeout
	}
	c.logr(c.log.Debug()).Err(err).Msg("socket lost")
	return ReasonLost
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
