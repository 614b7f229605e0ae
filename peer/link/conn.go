package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/sctp"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"
)

// maxPendingCandidates bounds the remote candidates queued before the remote
// description arrives; a peer sending more is misbehaving.
const maxPendingCandidates = 64

// closeBound bounds each wait of a teardown on pion (teardown): pion's close normally takes
// well under a second (its SCTP Abort waits 200 ms for the ABORT to leave).
var closeBound = 10 * time.Second

// Teardowns of this process whose pion close outlived closeBound (StuckCloses).
var stuckForced, stuckAbandoned atomic.Uint64

// StuckCloses counts, for this process, the Conns whose pion close did not return within the
// bound (10 s): Forced, whose DTLS and ICE transports were then closed under pion, and of
// those Abandoned, whose close still had not returned 10 s later and whose goroutines
// were left behind so that Close returned. Each is logged; both should stay 0.
type StuckCloses struct{ Forced, Abandoned uint64 }

// CloseStuck returns the process's StuckCloses (metric concord_link_close_stuck_total).
func CloseStuck() StuckCloses {
	return StuckCloses{Forced: stuckForced.Load(), Abandoned: stuckAbandoned.Load()}
}

// ConnConfig configures one connection.
type ConnConfig struct {
	// Signal sends one outbound signal to the remote end, through whatever
	// signaling the caller uses. Required. It is called from the Conn's own
	// goroutine, in order: the offer or answer first, then trickled
	// candidates. It must not block for long and must not call Close (Close
	// waits for that goroutine). An error ends the Conn with ErrSignalFailed.
	Signal func(Signal) error
	// Handler receives inbound messages on the per-channel read goroutines
	// (see Handler). Default nil: messages are counted and discarded.
	Handler Handler
	// Logger receives this connection's events. Default: disabled.
	Logger zerolog.Logger
	// ICEServers are the STUN and TURN servers this connection gathers
	// server-reflexive and relay candidates from, in the browser's
	// RTCIceServer shape (signaling hands them out as is). A loopback-only
	// API drops every server not on loopback. Default none: host candidates
	// only.
	ICEServers []webrtc.ICEServer
	// RelayOnly restricts ICE to relay candidates (the browser's
	// iceTransportPolicy "relay"). Default false: every candidate type.
	RelayOnly bool
	// Trace, when set, is told of the connection's setup steps as they happen (TraceICE,
	// TraceDTLS, TraceChannelOpen), on pion's goroutines: what a benchmark breaks a join's
	// latency down by. It must not block. Default nil.
	Trace func(event string)
}

// Setup steps ConnConfig.Trace is told of.
const (
	TraceICE         = "ice connected"  // ICE selected a pair that answers
	TraceDTLS        = "dtls connected" // the DTLS handshake is done
	TraceChannelOpen = "channel open"   // a data channel opened (SCTP associated), once per channel
)

type role uint8

const (
	roleOfferer role = iota
	roleAnswerer
)

func (r role) String() string {
	if r == roleOfferer {
		return "offerer"
	}
	return "answerer"
}

// Conn is one pion PeerConnection with the two pre-negotiated data channels
// (id 0 reliable, id 1 unreliable), set up through an offer/answer exchange
// the caller relays. It implements Link.
//
// Goroutines: one run goroutine owns the connection's lifecycle (sends
// outbound signals, starts the readers, tears down); one read goroutine per
// open channel calls the Handler. pion's callbacks only post to them. Close
// joins all of them.
type Conn struct {
	api     *API
	pc      *webrtc.PeerConnection
	dtls    *webrtc.DTLSTransport // pc's, taken before teardown: pion's close holds the SCTP transport's lock
	ice     *webrtc.ICETransport  // dtls's
	closePC func() error          // pc.GracefulClose; tests make it stick
	role    role
	signal  func(Signal) error
	handler Handler
	log     zerolog.Logger
	trace   func(string) // ConnConfig.Trace, nil when not traced

	dcs   [NumChannels]*webrtc.DataChannel
	chans [NumChannels]atomic.Pointer[chanState] // set by run once a channel is open
	stats [NumChannels]counters

	opened chan *chanState // OnOpen → run; capacity NumChannels, one post per channel
	wake   chan struct{}   // outbound signals queued → run; capacity 1
	ready  chan struct{}   // closed by run when both channels are open
	dying  chan struct{}   // closed by fail, once
	done   chan struct{}   // closed by run after teardown
	exited chan struct{}   // closed when run returns

	failOnce sync.Once
	cause    error // written once before dying is closed

	pair atomic.Pointer[[2]string] // local and remote candidate types of the selected pair

	readers sync.WaitGroup // Add and Wait only on the run goroutine

	sigMu         sync.Mutex // serializes HandleSignal; guards the following
	remoteSet     bool
	pendingRemote []webrtc.ICECandidateInit

	outMu      sync.Mutex // guards the following
	descQueued bool       // the local offer/answer is in out
	held       []Signal   // candidates gathered before the description was queued
	out        []Signal   // signals for run to send, in order
	// sent holds the signals handed to ConnConfig.Signal until the link is ready (then nil: an
	// open link keeps none), for Resend: the description first, then the candidates.
	sent []Signal
}

type chanState struct {
	ch Channel
	dc *webrtc.DataChannel
	rw datachannel.ReadWriteCloser
	// The carried pion/sctp's owned writes on the SCTP stream under rw (streamOf, fastpath.go),
	// nil with stock pion/sctp: SendOwned and SendOwnedBatch then write through rw, which copies.
	owned ownedWriter
	batch ownedBatchWriter
}

var (
	_ Link             = (*Conn)(nil)
	_ OwnedSender      = (*Conn)(nil)
	_ OwnedBatchSender = (*Conn)(nil)
)

// NewOfferer creates a Conn that makes the offer. The offer, then its
// candidates, go out through cfg.Signal; feed the remote's answer and
// candidates to HandleSignal.
func (a *API) NewOfferer(cfg ConnConfig) (*Conn, error) {
	c, err := a.newConn(cfg, roleOfferer)
	if err != nil {
		return nil, err
	}
	offer, err := c.pc.CreateOffer(nil)
	if err == nil {
		err = c.pc.SetLocalDescription(offer)
	}
	if err != nil {
		c.fail(fmt.Errorf("%w: create offer: %w", ErrNegotiation, err))
		_ = c.Close()
		return nil, c.cause
	}
	c.queueLocal(SignalOffer)
	return c, nil
}

// NewAnswerer creates a Conn that waits for an offer. Feed the remote's offer
// and candidates to HandleSignal; the answer, then its candidates, go out
// through cfg.Signal.
func (a *API) NewAnswerer(cfg ConnConfig) (*Conn, error) {
	return a.newConn(cfg, roleAnswerer)
}

func (a *API) newConn(cfg ConnConfig, r role) (*Conn, error) {
	if cfg.Signal == nil {
		return nil, fmt.Errorf("%w: ConnConfig.Signal is nil", ErrConfig)
	}
	certs, err := a.cert.get()
	if err != nil {
		return nil, err
	}
	pcfg := webrtc.Configuration{ICEServers: a.allowedServers(cfg.ICEServers), Certificates: certs}
	if cfg.RelayOnly {
		pcfg.ICETransportPolicy = webrtc.ICETransportPolicyRelay
	}
	pc, err := a.pion.NewPeerConnection(pcfg)
	if err != nil {
		return nil, fmt.Errorf("link: new peer connection: %w", err)
	}
	c := &Conn{
		api:     a,
		pc:      pc,
		dtls:    pc.SCTP().Transport(),
		ice:     pc.SCTP().Transport().ICETransport(),
		closePC: pc.GracefulClose,
		role:    r,
		signal:  cfg.Signal,
		handler: cfg.Handler,
		log:     cfg.Logger.With().Stringer("role", r).Logger(),
		opened:  make(chan *chanState, NumChannels),
		wake:    make(chan struct{}, 1),
		ready:   make(chan struct{}),
		dying:   make(chan struct{}),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	for i := range NumChannels {
		ch := Channel(i)
		dc, err := pc.CreateDataChannel(ch.String(), channelInit(ch))
		if err != nil {
			_ = pc.GracefulClose()
			return nil, fmt.Errorf("link: create %s data channel: %w", ch, err)
		}
		c.dcs[ch] = dc
		dc.OnOpen(func() { c.onOpen(ch) })
	}
	pc.OnICECandidate(c.onCandidate)
	pc.OnConnectionStateChange(c.onState)
	if t := cfg.Trace; t != nil {
		pc.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) {
			if s == webrtc.ICEConnectionStateConnected {
				t(TraceICE)
			}
		})
		pc.SCTP().Transport().OnStateChange(func(s webrtc.DTLSTransportState) {
			if s == webrtc.DTLSTransportStateConnected {
				t(TraceDTLS)
			}
		})
	}
	c.trace = cfg.Trace
	// The selected pair is pushed by ICE, never polled: pion's GetSelectedCandidatePair reads the
	// transport's gatherer without its lock and races with the transport's start.
	c.ice.OnSelectedCandidatePairChange(func(p *webrtc.ICECandidatePair) {
		if p != nil && p.Local != nil && p.Remote != nil {
			c.pair.Store(&[2]string{p.Local.Typ.String(), p.Remote.Typ.String()})
		}
	})
	go c.run()
	return c, nil
}

// channelInit returns the W3C init of ch: pre-negotiated with a fixed id on
// both sides, so no DCEP handshake is needed and a browser peer creates the
// same pair with createDataChannel(label, {negotiated: true, id, …}).
func channelInit(ch Channel) *webrtc.DataChannelInit {
	negotiated := true
	id := uint16(ch)
	init := &webrtc.DataChannelInit{Negotiated: &negotiated, ID: &id}
	if ch == Unreliable {
		ordered := false
		retransmits := uint16(0)
		init.Ordered = &ordered
		init.MaxRetransmits = &retransmits
	}
	return init
}

// pion callbacks. They run on pion's goroutines and only post.

func (c *Conn) onOpen(ch Channel) {
	if c.trace != nil {
		c.trace(TraceChannelOpen)
	}
	// pion requires Detach inside OnOpen when DetachDataChannels is set.
	rw, err := c.dcs[ch].Detach()
	var stream *sctp.Stream
	if err == nil {
		stream, err = streamOf(rw)
	}
	if err == nil {
		err = applyReliability(stream, ch)
	}
	if err == nil {
		setAckCoalescing(stream, c.api.ackCoalesce) // the association's, so both channels agree
	}
	if err != nil {
		c.fail(fmt.Errorf("%w: open %s channel: %w", ErrConnectionLost, ch, err))
		return
	}
	select {
	case c.opened <- newChanState(ch, c.dcs[ch], rw, stream):
	default: // A second OnOpen for the same channel; the first one counts.
	}
}

func (c *Conn) onCandidate(cand *webrtc.ICECandidate) {
	if cand == nil {
		return // Gathering complete; end-of-candidates is implied.
	}
	init := cand.ToJSON()
	s := Signal{Kind: SignalCandidate, Candidate: &init}
	c.outMu.Lock()
	if c.descQueued {
		c.out = append(c.out, s)
	} else {
		c.held = append(c.held, s)
	}
	c.outMu.Unlock()
	c.poke()
}

func (c *Conn) onState(s webrtc.PeerConnectionState) {
	switch s {
	case webrtc.PeerConnectionStateDisconnected, webrtc.PeerConnectionStateFailed:
		c.fail(fmt.Errorf("%w: peer connection %s", ErrConnectionLost, s))
	case webrtc.PeerConnectionStateClosed:
		// Our own Close failed the Conn first, so reaching here means pion
		// closed it, which it does on the remote's DTLS close_notify.
		c.fail(fmt.Errorf("%w: peer connection closed", ErrPeerClosed))
	default:
	}
}

func (c *Conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// fail records the first cause of death and wakes run to tear down.
func (c *Conn) fail(err error) {
	c.failOnce.Do(func() {
		c.cause = err
		close(c.dying)
	})
}

func (c *Conn) isDead() bool {
	select {
	case <-c.dying:
		return true
	default:
		return false
	}
}

// deadErr is what operations on a dead Conn return: ErrClosed, wrapping the
// cause when the link died for another reason.
func (c *Conn) deadErr() error {
	if errors.Is(c.cause, ErrClosed) {
		return c.cause
	}
	return fmt.Errorf("%w: %w", ErrClosed, c.cause)
}

// queueLocal queues the current local description (offer or answer) for run
// to send, followed by the candidates gathered before it.
func (c *Conn) queueLocal(kind string) {
	desc := c.pc.LocalDescription() // Includes the candidates gathered so far.
	c.outMu.Lock()
	c.out = append(c.out, Signal{Kind: kind, SDP: desc.SDP})
	c.out = append(c.out, c.held...)
	c.held = nil
	c.descQueued = true
	c.outMu.Unlock()
	c.poke()
}

// run owns the lifecycle: it sends outbound signals, starts a reader per open
// channel, and on death tears everything down and closes done.
func (c *Conn) run() {
	defer close(c.exited)
	open := 0
	for {
		select {
		case <-c.wake:
			c.flushSignals()
		case st := <-c.opened:
			if c.isDead() || c.chans[st.ch].Load() != nil {
				continue
			}
			c.chans[st.ch].Store(st)
			c.readers.Add(1)
			go c.readLoop(st)
			if open++; open == NumChannels {
				c.log.Debug().Msg("link ready")
				c.outMu.Lock()
				c.sent = nil // nothing left to resend
				c.outMu.Unlock()
				close(c.ready)
			}
		case <-c.dying:
			c.teardown()
			return
		}
	}
}

func (c *Conn) flushSignals() {
	c.outMu.Lock()
	batch := c.out
	c.out = nil
	c.outMu.Unlock()
	for _, s := range batch {
		if c.isDead() {
			return
		}
		if err := c.signal(s); err != nil {
			c.fail(fmt.Errorf("%w: %s: %w", ErrSignalFailed, s.Kind, err))
			return
		}
		c.outMu.Lock()
		if !c.isReady() && !slices.ContainsFunc(c.sent, s.same) { // a resent one is kept once
			c.sent = append(c.sent, s)
		}
		c.outMu.Unlock()
	}
}

// same reports whether o is s: the description, or the same candidate.
func (s Signal) same(o Signal) bool {
	if s.Kind != SignalCandidate || o.Kind != SignalCandidate {
		return s.Kind == o.Kind
	}
	return s.Candidate != nil && o.Candidate != nil && s.Candidate.Candidate == o.Candidate.Candidate
}

func (c *Conn) isReady() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// Resend sends again signals signaling did not relay (refused as recipient_busy: the remote
// never saw them): for kind offer or answer, this Conn's description and every candidate sent so
// far; for kind candidate, every candidate sent so far (the remote ignores one it has). It does
// nothing once the link is ready or dead, and reports whether it queued anything. A resent
// signal never replaces a link: the remote's ICE may be connecting already, through candidates
// it did get or peer-reflexive ones.
func (c *Conn) Resend(kind string) bool {
	if c.isDead() || c.isReady() {
		return false
	}
	c.outMu.Lock()
	n := len(c.out)
	for _, s := range c.sent {
		if s.Kind == SignalCandidate || kind != SignalCandidate {
			c.out = append(c.out, s)
		}
	}
	queued := len(c.out) > n
	c.outMu.Unlock()
	if queued {
		c.poke()
	}
	return queued
}

func (c *Conn) teardown() {
	// Closing the PeerConnection closes the SCTP association, which ends the
	// blocked reads of the detached channels. GracefulClose also waits for
	// pion's own goroutines.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if err := c.closePC(); err != nil {
			c.log.Debug().Err(err).Msg("closing peer connection")
		}
	}()
	if c.awaitClose(closed) {
		c.readers.Wait()
	}
	c.log.Debug().Err(c.cause).Msg("link closed")
	close(c.done)
}

// awaitClose waits for pion's close, bounded: a close stuck in pion (an SCTP Abort waiting for
// a read loop that never ends) would otherwise stall whatever closes this Conn, a host's
// loop or a region's unload. Past closeBound it closes the DTLS and ICE transports under
// pion, which end a read blocked on them, and waits closeBound again; then it gives up
// (false): the close goroutine and the readers are left behind. Logged and counted
// (CloseStuck).
func (c *Conn) awaitClose(closed <-chan struct{}) bool {
	select {
	case <-closed:
		return true
	case <-time.After(closeBound):
	}
	stuckForced.Add(1)
	c.log.Warn().Dur("after", closeBound).Msg("link: pion's close is stuck; closing its DTLS and ICE transports")
	// Each on a goroutine of its own: it may take a lock pion's stuck close holds.
	go func() { _ = c.ice.Stop() }()
	go func() { _ = c.dtls.Stop() }()
	select {
	case <-closed:
		return true
	case <-time.After(closeBound):
	}
	stuckAbandoned.Add(1)
	c.log.Error().Dur("after", 2*closeBound).Msg("link: pion's close still stuck; abandoning the connection's goroutines")
	return false
}

// readLoop reads one channel into one reused buffer until the channel fails.
func (c *Conn) readLoop(st *chanState) {
	defer c.readers.Done()
	buf := make([]byte, MaxMessage(st.ch))
	ctr := &c.stats[st.ch]
	for {
		// Text messages (from a browser's send(string)) are treated as bytes.
		n, _, err := st.rw.ReadDataChannel(buf)
		if err != nil {
			c.fail(c.readErr(st.ch, err))
			return
		}
		ctr.msgsRecv.Add(1)
		ctr.bytesRecv.Add(uint64(n))
		if c.handler != nil {
			c.handler(st.ch, buf[:n])
		}
	}
}

func (c *Conn) readErr(ch Channel, err error) error {
	switch {
	case errors.Is(err, io.ErrShortBuffer):
		// sctp leaves the oversized message at the head of the stream, so
		// the channel cannot make progress: this is a protocol error for
		// the peer and ends the link.
		c.stats[ch].oversize.Add(1)
		return fmt.Errorf("%w: received a %s message over %d bytes", ErrTooLarge, ch, MaxMessage(ch))
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %s channel reset", ErrPeerClosed, ch)
	case errors.Is(err, sctp.ErrChunk), errors.Is(err, sctp.ErrResetPacketInStateNotExist):
		// The remote sent an SCTP ABORT, which is how pion's Close ends
		// the association. When the ABORT closes the association while the
		// stream is being read, pion reports the stream reset it could no
		// longer send instead (sctp v1.12).
		return fmt.Errorf("%w: %w", ErrPeerClosed, err)
	default:
		return fmt.Errorf("%w: read %s channel: %w", ErrConnectionLost, ch, err)
	}
}

// HandleSignal consumes one inbound signal from the remote end: an offer (on
// an answerer), an answer (on an offerer) or a candidate. Candidates that
// arrive before the remote description are queued and applied after it. The
// remote need not send candidates at all (Chromium on loopback sends none):
// pion learns its address from its first connectivity check.
//
// A candidate signal with a nil Candidate (a browser's end-of-candidates) is
// ignored. A malformed or out-of-place signal returns ErrBadSignal and leaves the Conn
// as it was; a description pion rejects ends the Conn with ErrNegotiation.
// Renegotiation is not supported: each Conn takes exactly one offer/answer.
// Safe for concurrent use, though signals should be fed in arrival order.
func (c *Conn) HandleSignal(s Signal) error {
	c.sigMu.Lock()
	defer c.sigMu.Unlock()
	if c.isDead() {
		return c.deadErr()
	}
	switch s.Kind {
	case SignalOffer, SignalAnswer:
		return c.handleDescription(s)
	case SignalCandidate:
		if s.Candidate == nil {
			// A browser's end-of-candidates (onicecandidate with a null
			// candidate), forwarded as is. Nothing to do.
			return nil
		}
		if !c.remoteSet {
			if len(c.pendingRemote) >= maxPendingCandidates {
				return fmt.Errorf("%w: more than %d candidates before the remote description", ErrBadSignal, maxPendingCandidates)
			}
			c.pendingRemote = append(c.pendingRemote, *s.Candidate)
			return nil
		}
		if err := c.pc.AddICECandidate(*s.Candidate); err != nil {
			return fmt.Errorf("%w: add candidate: %w", ErrBadSignal, err)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown kind %q", ErrBadSignal, s.Kind)
	}
}

// handleDescription applies a remote offer or answer. Called with sigMu held.
func (c *Conn) handleDescription(s Signal) error {
	want, typ := SignalAnswer, webrtc.SDPTypeAnswer
	if c.role == roleAnswerer {
		want, typ = SignalOffer, webrtc.SDPTypeOffer
	}
	if s.Kind != want || c.remoteSet {
		return fmt.Errorf("%w: unexpected %s for an %s (remote description set: %t)", ErrBadSignal, s.Kind, c.role, c.remoteSet)
	}
	if s.SDP == "" {
		return fmt.Errorf("%w: %s without SDP", ErrBadSignal, s.Kind)
	}
	if err := c.pc.SetRemoteDescription(webrtc.SessionDescription{Type: typ, SDP: s.SDP}); err != nil {
		c.fail(fmt.Errorf("%w: set remote %s: %w", ErrNegotiation, s.Kind, err))
		return c.cause
	}
	c.remoteSet = true
	for _, cand := range c.pendingRemote {
		if err := c.pc.AddICECandidate(cand); err != nil {
			c.log.Debug().Err(err).Msg("dropping a queued remote candidate")
		}
	}
	c.pendingRemote = nil
	if c.role == roleOfferer {
		return nil
	}
	answer, err := c.pc.CreateAnswer(nil)
	if err == nil {
		err = c.pc.SetLocalDescription(answer)
	}
	if err != nil {
		c.fail(fmt.Errorf("%w: create answer: %w", ErrNegotiation, err))
		return c.cause
	}
	c.queueLocal(SignalAnswer)
	return nil
}

// Send implements Link. It may be called from any goroutine. Before Ready it
// returns ErrNotReady; after the Conn died, an error wrapping ErrClosed.
func (c *Conn) Send(ch Channel, payload []byte) error {
	return c.send(ch, payload, false)
}

// SendOwned implements OwnedSender: Send, but SCTP keeps payload (sub-slices
// of it) until its chunks are acknowledged or abandoned instead of copying it.
func (c *Conn) SendOwned(ch Channel, payload []byte) error {
	return c.send(ch, payload, true)
}

// SendOwnedBatch implements OwnedBatchSender. On the unreliable channel the
// datagrams go to SCTP in one write (the carried pion/sctp's
// WriteSCTPOwnedBatch; with stock pion/sctp one copying Write each, stopping
// at the first error); the ones that would find more than the drop limit
// buffered, counting those before them, are dropped as Send drops them. On the
// reliable channel it is SendOwned of each.
func (c *Conn) SendOwnedBatch(ch Channel, payloads [][]byte) error {
	if ch != Unreliable || slices.ContainsFunc(payloads, func(p []byte) bool { return len(p) == 0 }) {
		for _, p := range payloads {
			if err := c.send(ch, p, true); err != nil {
				return err
			}
		}
		return nil
	}
	st, err := c.sendable(ch, payloads...)
	if err != nil {
		return err
	}
	ctr := &c.stats[ch]
	buffered := st.dc.BufferedAmount()
	n, size := 0, uint64(0)
	for _, p := range payloads {
		if buffered > c.api.dropAt {
			break
		}
		buffered += uint64(len(p))
		size += uint64(len(p))
		n++
	}
	ctr.dropped.Add(uint64(len(payloads) - n))
	if n == 0 {
		return nil
	}
	if st.batch == nil {
		for _, p := range payloads[:n] {
			// sctp copies p into its chunks before Write returns.
			if _, err := st.rw.Write(p); err != nil {
				return c.sendFailed(ch, err)
			}
			ctr.msgsSent.Add(1)
			ctr.bytesSent.Add(uint64(len(p)))
		}
		return nil
	}
	if err := st.batch.WriteSCTPOwnedBatch(payloads[:n], sctp.PayloadTypeWebRTCBinary); err != nil {
		return c.sendFailed(ch, err)
	}
	ctr.msgsSent.Add(uint64(n))
	ctr.bytesSent.Add(size)
	return nil
}

// sendable returns ch's state if payloads may be sent on it now: a channel that
// exists and is open, on a live Conn, and none of them over the channel's limit.
func (c *Conn) sendable(ch Channel, payloads ...[]byte) (*chanState, error) {
	if ch >= NumChannels {
		return nil, fmt.Errorf("%w: %d", ErrBadChannel, ch)
	}
	for _, p := range payloads {
		if len(p) > MaxMessage(ch) {
			return nil, fmt.Errorf("%w: %d-byte %s message, limit %d", ErrTooLarge, len(p), ch, MaxMessage(ch))
		}
	}
	if c.isDead() {
		return nil, c.deadErr()
	}
	st := c.chans[ch].Load()
	if st == nil {
		return nil, ErrNotReady
	}
	return st, nil
}

// sendFailed is the error of a write to ch's stream that failed with err.
func (c *Conn) sendFailed(ch Channel, err error) error {
	if c.isDead() {
		return c.deadErr()
	}
	return fmt.Errorf("link: send on %s channel: %w", ch, err)
}

func (c *Conn) send(ch Channel, payload []byte, owned bool) error {
	st, err := c.sendable(ch, payload)
	if err != nil {
		return err
	}
	ctr := &c.stats[ch]
	buffered := st.dc.BufferedAmount()
	if ch == Unreliable {
		if buffered > c.api.dropAt {
			ctr.dropped.Add(1)
			return nil
		}
	} else if buffered > c.api.highAt {
		ctr.backpressured.Add(1)
		return &BackpressureError{Channel: ch, Buffered: buffered, Limit: c.api.highAt}
	}
	if owned && len(payload) > 0 && st.owned != nil {
		// What datachannel.WriteDataChannel does for a binary message, minus the copy (the
		// carried pion/sctp's WriteSCTPOwned). pion's own per-channel message counters
		// (webrtc's getStats) do not see these messages; Concord's Stats do.
		_, err = st.owned.WriteSCTPOwned(payload, sctp.PayloadTypeWebRTCBinary)
	} else {
		// sctp copies payload into its chunks before Write returns.
		_, err = st.rw.Write(payload)
	}
	if err != nil {
		return c.sendFailed(ch, err)
	}
	ctr.msgsSent.Add(1)
	ctr.bytesSent.Add(uint64(len(payload)))
	return nil
}

// Ready is closed when both data channels are open and Send can be used. If
// the connection dies first it is never closed: select on Done as well, or use
// WaitReady.
func (c *Conn) Ready() <-chan struct{} { return c.ready }

// WaitReady blocks until both channels are open, the Conn dies (its Err is
// returned) or ctx ends. A Conn whose remote never answers stays pending until
// it is closed, so callers bound the setup with ctx and Close on timeout.
func (c *Conn) WaitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done implements Link: closed once the Conn is dead and its goroutines (the
// readers and pion's) have finished; Close still waits for the last one.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the Conn died (wrapping ErrClosed, ErrPeerClosed,
// ErrConnectionLost, ErrTooLarge, ErrSignalFailed or ErrNegotiation), or nil
// while it is alive.
func (c *Conn) Err() error {
	if !c.isDead() {
		return nil
	}
	return c.cause
}

// Close implements Link: it closes the connection and waits for every
// goroutine of the Conn, so it must not be called from the Handler or the
// Signal callback. Idempotent; always returns nil. The wait on pion is bounded
// (20 s): a Conn whose pion close is stuck past it is abandoned (CloseStuck).
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	<-c.exited
	return nil
}

// Stats implements Link.
func (c *Conn) Stats() Stats {
	var s Stats
	for i := range NumChannels {
		var buffered uint64
		if st := c.chans[i].Load(); st != nil {
			buffered = st.dc.BufferedAmount()
		}
		s.Channels[i] = c.stats[i].snapshot(buffered)
	}
	return s
}
