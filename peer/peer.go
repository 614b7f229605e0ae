package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

var (
	errMalformed   = errors.New("peer: malformed message")
	errNoSignaling = errors.New("peer: signaling is down")
)

// Peer is one member of a room: a signaling client, links to other members, and the host or
// member role over a World. One goroutine, the loop started by Run, owns all of its state;
// link callbacks only post events to it.
type Peer struct {
	cfg Config
	log zerolog.Logger
	app App
	w   *World

	sig       *signaling.Client // nil while signaling is down
	sigEvents <-chan signaling.Event
	// sigNow is sig for link goroutines, which signal through whichever client is current.
	sigNow      atomic.Pointer[signaling.Client]
	resumeToken string                // the server's proof of this peer's index, for a resume
	iceServers  []signaling.ICEServer // from the latest joined: every new link uses them
	// migratingSince is when this synced member learned of a new host (zero when not migrating);
	// lastPause is how long its latest migration took, until the new host's snapshot merged.
	migratingSince time.Time
	lastPause      time.Duration
	held           bool  // the replica has held the room's state (synced or hosted)
	resumeErr      error // why signaling refused to resume this peer, if it did
	members        map[PeerIndex]signaling.Member
	pinned         []signaling.Identity
	remotes        map[PeerIndex]*remote // host: one per member; member: the host (and a standby)
	standby        *remote               // member with Config.Standby: idle link to the next host
	session        uint64

	host   *hostRole   // non-nil while this peer is the host
	member *memberRole // non-nil while it is not

	events chan loopEvent
	calls  chan func()
	done   chan struct{} // closed when Run has returned
	quit   chan struct{} // closed when Run starts shutting down: helper goroutines give up
	linkWG sync.WaitGroup

	status atomic.Pointer[Status]
	hash   uint64 // the replica hash last published, computed at Replica.Changes() == hashAt
	hashAt uint64
	hashOK bool
	count  counters
	out    []byte // scratch for outgoing payloads
	items  []updItem
	dgram  []byte
	vals   []byte
	pool   sync.Pool
}

// loopEvent is posted to the loop by link goroutines.
type loopEvent struct {
	r      *remote
	kind   uint8 // evMessage, evReady, evClosed
	ch     link.Channel
	data   *[]byte
	closed error
}

const (
	evMessage = iota
	evReady
	evClosed
)

// New checks cfg and returns a Peer; Run joins the room.
func New(cfg Config) (*Peer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Peer{
		cfg:     cfg,
		log:     cfg.Logger.With().Str("room", cfg.Room).Logger(),
		app:     cfg.App,
		w:       newWorld(cfg.App.Schemas(), crdt.Config{}),
		members: make(map[PeerIndex]signaling.Member),
		remotes: make(map[PeerIndex]*remote),
		events:  make(chan loopEvent, 4096),
		calls:   make(chan func()),
		done:    make(chan struct{}),
		quit:    make(chan struct{}),
	}
	p.pool.New = func() any { b := make([]byte, 0, 2048); return &b }
	p.status.Store(&Status{})
	return p, nil
}

// Run joins the room and runs the peer until ctx ends or a fatal error. It closes every link and
// the signaling connection before it returns.
func (p *Peer) Run(ctx context.Context) error {
	defer close(p.done)
	// Helper goroutines (the signaling redial) end with Run, whatever ends it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.cfg.Transport == nil {
		api, err := LinkAPI(p.cfg)
		if err != nil {
			return err
		}
		defer api.Close() // after shutdown has closed every link
		p.cfg.Transport = PionTransport{API: api}
	}
	sig, err := signaling.Dial(ctx, p.cfg.Server, signaling.JoinOptions{
		Room: signaling.RoomID(p.cfg.Room), User: p.cfg.User, Device: p.cfg.Device, Kind: p.cfg.Kind, Token: p.cfg.Token,
	}, p.cfg.SignalingConfig)
	if err != nil {
		return err
	}
	p.sig = sig
	p.sigNow.Store(sig)
	p.sigEvents = sig.Events()
	j := sig.Joined()
	p.resumeToken = j.ResumeToken
	p.iceServers = j.ICEServers
	p.w.self = j.Self
	p.log = p.log.With().Uint64("peer", uint64(j.Self)).Logger()
	for _, m := range j.Members {
		p.members[m.Index] = m
	}
	p.pinned = j.PinnedHosts
	p.log.Info().Uint64("term", uint64(j.Term)).Uint64("host", uint64(j.Host)).Int("members", len(j.Members)).Msg("joined room")
	defer p.shutdown()
	defer cancel() // before shutdown waits for the redial goroutine
	p.setHost(j.Term, j.Host)
	p.afterEvent()
	return p.loop(ctx)
}

func (p *Peer) loop(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.TickInterval)
	defer tick.Stop()
	report := time.NewTicker(p.cfg.ReportInterval)
	defer report.Stop()
	digest := time.NewTicker(p.cfg.DigestInterval)
	defer digest.Stop()
	last := p.cfg.Now()
	var lastFlush time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-p.sigEvents:
			if !ok {
				p.sigEvents = nil // signaling is gone; links and the world go on
				continue
			}
			if err := p.handleSignaling(ctx, ev); err != nil {
				return err
			}
		case ev := <-p.events:
			p.handleLinkEvent(ev)
		case now := <-tick.C:
			dt := now.Sub(last)
			last = now
			p.app.Tick(p.w, dt)
			if p.host != nil {
				p.host.tick(now)
			}
			// Updates leave right after the tick that made them (a separate ticker could fire
			// first and hold a tick's writes back one interval), at most every NetworkInterval.
			if now.Sub(lastFlush) >= p.cfg.NetworkInterval-p.cfg.TickInterval/2 {
				lastFlush = now
				p.flushUpdates()
			}
		case <-report.C:
			p.report(ctx)
		case <-digest.C:
			if p.member != nil {
				p.member.sendDigest()
			}
		case fn := <-p.calls:
			fn()
		}
		p.afterEvent()
	}
}

// afterEvent runs after every event: the host sends the commands the event produced, the app
// hears what happened, and the write batch closes.
func (p *Peer) afterEvent() {
	if p.host != nil {
		p.host.flushCommands()
	}
	if h, ok := p.app.(EventHandler); ok {
		for i := 0; i < len(p.w.events); i++ { // handlers may add events
			h.OnEvent(p.w, p.w.events[i])
		}
	}
	p.w.events = p.w.events[:0]
	p.w.closeBatch()
}

// Do runs fn on the loop goroutine with the world and waits for it. It is how tools and tests
// read or change a running peer.
func (p *Peer) Do(ctx context.Context, fn func(w *World)) error {
	done := make(chan struct{})
	select {
	case p.calls <- func() { fn(p.w); close(done) }:
	case <-p.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-p.quit:
		return ErrClosed
	}
}

// Done is closed when Run has returned.
func (p *Peer) Done() <-chan struct{} { return p.done }

func (p *Peer) shutdown() {
	close(p.quit)
	for idx, r := range p.remotes {
		r.close()
		delete(p.remotes, idx)
	}
	if p.sig != nil {
		_ = p.sig.Close()
	}
	// Link watchers exit once their links are done; drain events so none blocks.
	waited := make(chan struct{})
	go func() { p.linkWG.Wait(); close(waited) }()
	for {
		select {
		case <-waited:
			return
		case ev := <-p.events:
			p.release(ev.data)
		}
	}
}

func (p *Peer) handleSignaling(ctx context.Context, ev signaling.Event) error {
	switch ev := ev.(type) {
	case signaling.MemberJoined:
		p.members[ev.Member.Index] = ev.Member
	case signaling.MemberSynced:
		if m, ok := p.members[ev.Index]; ok {
			m.Synced = true
			p.members[ev.Index] = m
		}
	case signaling.MemberLeft:
		delete(p.members, ev.Index)
		if p.host != nil {
			p.host.signalingLeft(ev.Index)
		}
	case signaling.HostChanged:
		p.setHost(ev.Term, ev.Host)
	case signaling.Signal:
		p.handleSignal(ev.From, ev.Payload)
	case signaling.Error:
		p.log.Warn().Str("code", string(ev.Code)).Str("message", ev.Message).Msg("signaling error")
	case signaling.Closed:
		// Links stay up: the room keeps playing without signaling, and nothing is lost; the
		// peer redials and resumes its index (resume.go).
		p.signalingLost(ctx, ev.Err)
	}
	p.updateStandby()
	return nil
}

// setHost adopts a host announcement. The same term and host again (a resumed signaling
// connection) changes nothing; neither does "no host" in the term this peer knows a host for:
// that is a server waiting for the host to resume (its resume grace), which announces the host
// in the same term if it comes back and a new term otherwise.
func (p *Peer) setHost(term Term, host PeerIndex) {
	if term < p.w.term || (term == p.w.term && (host == p.w.host || (host == 0 && p.w.host != 0))) {
		p.publish()
		return
	}
	prevHost := p.w.host
	p.w.term, p.w.host = term, host
	p.w.events = append(p.w.events, Event{Kind: EventHostChanged, Term: term, Peer: host})
	p.log.Info().Uint64("term", uint64(term)).Uint64("host", uint64(host)).Msg("host changed")
	switch {
	case host == p.w.self:
		if p.host == nil {
			p.becomeHost()
		}
	case host == 0:
		// Nobody may host: keep the replica and wait.
		if p.host != nil {
			p.stepDown()
		}
	default:
		if p.host != nil {
			p.stepDown()
		}
		if p.member == nil {
			p.member = newMemberRole(p)
		}
		if prevHost != host {
			p.member.follow(host)
		}
	}
	p.publish()
}

func (p *Peer) becomeHost() {
	if p.member != nil {
		p.member.stop()
		p.member = nil
	}
	p.held = true
	p.host = newHostRole(p)
	p.host.start()
	for _, r := range p.remotes {
		aside := r.aside
		r.aside = nil
		for _, raw := range aside {
			if err := p.handlePayload(r, link.Reliable, raw, 0); err != nil {
				p.dropRemote(r)
				break
			}
		}
	}
}

func (p *Peer) stepDown() {
	p.host.stop()
	p.host = nil
	p.w.isHost = false
	p.w.sink = nopSink{}
}

// handleSignal routes a WebRTC signal to the link it belongs to, making an answering link for a
// new offer when this peer is the host.
func (p *Peer) handleSignal(from PeerIndex, pl signaling.SignalPayload) {
	r := p.remotes[from]
	// The host answers members' offers; a member answers standby offers (links that become the
	// links to it if it is elected next). A member's own link to the host is never replaced.
	isHostLink := p.member != nil && r != nil && r == p.member.hostLink
	if pl.Kind == signaling.SignalOffer && (p.host != nil || !isHostLink) && (r == nil || r.session != pl.Session) {
		if r != nil {
			if r == p.standby {
				p.standby = nil
			}
			delete(p.remotes, from)
			go r.close()
		}
		r = p.connect(from, pl.Session, false)
		if r == nil {
			return
		}
	}
	if r == nil || r.session != pl.Session {
		p.log.Debug().Uint64("from", uint64(from)).Str("kind", string(pl.Kind)).Msg("signal for no link; dropped")
		return
	}
	if err := r.l.HandleSignal(pl); err != nil {
		p.log.Warn().Err(err).Uint64("from", uint64(from)).Msg("bad signal; closing link")
		p.dropRemote(r)
	}
}

// connect makes a link to member idx and starts its watcher.
func (p *Peer) connect(idx PeerIndex, session uint64, offerer bool) *remote {
	r := &remote{idx: idx, session: session, p: p}
	ctx := context.Background()
	l, err := p.cfg.Transport.Connect(LinkConfig{
		Local: p.w.self, Remote: idx, Session: session, Offerer: offerer,
		ICEServers: p.iceServers, RelayOnly: p.cfg.RelayOnly,
		Logger: p.log.With().Uint64("remote", uint64(idx)).Logger(),
		Signal: func(pl signaling.SignalPayload) error {
			sig := p.sigNow.Load() // the current client: a resume may have replaced it
			if sig == nil {
				return errNoSignaling
			}
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return sig.SendSignal(sctx, idx, pl)
		},
		Handler: func(ch link.Channel, payload []byte) { p.post(r, ch, payload) },
	})
	if err != nil {
		p.log.Error().Err(err).Uint64("remote", uint64(idx)).Msg("cannot make link")
		return nil
	}
	r.l = l
	r.reasm = netmsg.NewReassembler(netmsg.Config{})
	p.remotes[idx] = r
	p.linkWG.Add(1)
	go func() {
		defer p.linkWG.Done()
		select {
		case <-l.Ready():
			p.postState(r, evReady, nil)
		case <-l.Done():
		}
		<-l.Done()
		p.postState(r, evClosed, errors.New("link closed"))
	}()
	return r
}

// post copies a received payload and hands it to the loop. It runs on a link's read goroutine.
func (p *Peer) post(r *remote, ch link.Channel, payload []byte) {
	bp := p.pool.Get().(*[]byte)
	*bp = append((*bp)[:0], payload...)
	ev := loopEvent{r: r, kind: evMessage, ch: ch, data: bp}
	if ch == link.Unreliable {
		select {
		case p.events <- ev:
		default:
			p.count.droppedIn.Add(1)
			p.release(bp)
		}
		return
	}
	select {
	case p.events <- ev:
	case <-p.quit:
		p.release(bp)
	}
}

func (p *Peer) postState(r *remote, kind uint8, err error) {
	select {
	case p.events <- loopEvent{r: r, kind: kind, closed: err}:
	case <-p.quit:
	}
}

func (p *Peer) release(bp *[]byte) {
	if bp != nil && cap(*bp) <= 64<<10 {
		p.pool.Put(bp)
	}
}

func (p *Peer) handleLinkEvent(ev loopEvent) {
	defer p.release(ev.data)
	r := ev.r
	if p.remotes[r.idx] != r {
		return // a link that was replaced or dropped
	}
	switch ev.kind {
	case evReady:
		r.ready = true
		r.lastHeard = p.cfg.Now()
		p.log.Debug().Uint64("remote", uint64(r.idx)).Msg("link ready")
		if p.member != nil && r == p.member.hostLink {
			p.member.linkReady()
		}
	case evClosed:
		p.log.Info().Uint64("remote", uint64(r.idx)).Msg("link closed")
		delete(p.remotes, r.idx)
		if r == p.standby {
			p.standby = nil
		}
		if p.host != nil {
			p.host.linkClosed(r)
		}
		if p.member != nil && r == p.member.hostLink {
			p.member.hostLinkClosed()
		}
	case evMessage:
		// A message can overtake the link's ready event: the remote end opened the channels.
		r.ready = true
		p.count.bytesIn.Add(uint64(len(*ev.data)))
		r.lastHeard = p.cfg.Now()
		if err := p.handlePayload(r, ev.ch, *ev.data, 0); err != nil {
			p.log.Warn().Err(err).Uint64("remote", uint64(r.idx)).Msg("protocol error; closing link")
			p.dropRemote(r)
		}
	}
}

// handlePayload walks the messages of one payload. A *netmsg.ProtocolError (or any returned error)
// ends the link; a message that is merely unusable is dropped and counted.
func (p *Peer) handlePayload(r *remote, ch link.Channel, payload []byte, depth int) error {
	if ch == link.Unreliable {
		if err := netmsg.CheckDatagram(payload); err != nil {
			return err
		}
	}
	rd := netmsg.NewReader(payload)
	var stamp uint64
	for rd.More() {
		m, err := rd.Next()
		if err != nil {
			var pe *netmsg.ProtocolError
			if errors.As(err, &pe) {
				return err
			}
			p.count.dropped.Add(1)
			continue
		}
		switch m.Type {
		case netmsg.TypeFragment:
			if depth > 0 {
				return fmt.Errorf("%w: fragment inside a fragmented payload", errMalformed)
			}
			var f netmsg.Fragment
			if _, err := netmsg.ConsumeFragment(m.Raw, &f); err != nil {
				return err
			}
			whole, done, err := r.reasm.Push(&f)
			if err != nil {
				return err
			}
			if done {
				if err := p.handlePayload(r, ch, whole, depth+1); err != nil {
					return err
				}
			}
			continue
		case typeStamp:
			if stamp, err = parseStamp(m.Body); err != nil {
				return err
			}
			continue
		case netmsg.TypePing:
			var ping netmsg.Ping
			if _, err := netmsg.ConsumePing(m.Raw, &ping); err != nil {
				return err
			}
			p.send(r, link.Reliable, netmsg.AppendPong(p.out[:0], &netmsg.Pong{Nonce: ping.Nonce, EchoTime: ping.SendTime}))
			continue
		case netmsg.TypePong:
			var pong netmsg.Pong
			if _, err := netmsg.ConsumePong(m.Raw, &pong); err != nil {
				return err
			}
			r.rtt = time.Duration(p.monotonic() - int64(pong.EchoTime))
			continue
		case netmsg.TypeClose:
			var c netmsg.Close
			if _, err := netmsg.ConsumeClose(m.Raw, &c); err == nil {
				p.log.Warn().Uint64("remote", uint64(r.idx)).Uint16("code", c.Code).Str("reason", c.Reason).Msg("remote closed the session")
			}
			continue
		}
		var err2 error
		switch {
		case p.host != nil:
			err2 = p.host.handle(r, m)
		case p.member != nil && r == p.member.hostLink:
			err2 = p.member.handle(m, stamp)
		default:
			p.count.fenced.Add(1) // a message from a peer that is not the host of this term
			if p.host == nil && (m.Type == netmsg.TypeHello || m.Type == typeDigest) {
				// A member that learned of the new term first greets us over its standby link
				// before we learn we are its host: keep the greeting aside (TRNP keeps messages
				// aside in case the host changes) and answer it when we become host.
				if len(r.aside) >= 4 {
					r.aside = r.aside[1:]
				}
				r.aside = append(r.aside, bytes.Clone(m.Raw))
			}
		}
		if err2 != nil {
			return err2
		}
	}
	return nil
}

var monoStart = time.Now()

func (p *Peer) monotonic() int64 { return int64(time.Since(monoStart)) }

// send sends a payload to r, fragmenting a reliable payload above the message limit.
func (p *Peer) send(r *remote, ch link.Channel, payload []byte) {
	if r == nil || r.l == nil || !r.ready {
		return
	}
	if ch == link.Reliable && len(payload) > netmsg.MaxReliableMessage {
		r.fragID++
		f := netmsg.NewFragmenter(payload, r.fragID, netmsg.MaxReliableMessage)
		var buf []byte
		for {
			var ok bool
			buf, ok = f.Next(buf[:0])
			if !ok {
				return
			}
			if !p.sendOne(r, ch, buf) {
				return
			}
		}
	}
	p.sendOne(r, ch, payload)
}

func (p *Peer) sendOne(r *remote, ch link.Channel, b []byte) bool {
	err := r.l.Send(ch, b)
	if err == nil {
		p.count.bytesOut.Add(uint64(len(b)))
		return true
	}
	if errors.Is(err, link.ErrNotReady) {
		p.count.dropped.Add(1) // the other channel is still opening; anti-entropy heals
		return true
	}
	if errors.Is(err, link.ErrBackpressure) {
		p.log.Warn().Uint64("remote", uint64(r.idx)).Msg("remote cannot keep up; closing link")
	} else {
		p.log.Debug().Err(err).Uint64("remote", uint64(r.idx)).Msg("send failed")
	}
	p.dropRemote(r)
	return false
}

// dropRemote closes r's link; its closed event arrives later and is ignored.
func (p *Peer) dropRemote(r *remote) {
	if p.remotes[r.idx] == r {
		delete(p.remotes, r.idx)
		if p.host != nil {
			p.host.linkClosed(r)
		}
		if p.member != nil && r == p.member.hostLink {
			p.member.hostLinkClosed()
		}
	}
	go r.close() // Close waits for the link's goroutines; never block the loop on it
}

func (p *Peer) report(ctx context.Context) {
	p.updateStandby() // also after links the other end closed
	st := p.publish()
	if p.member != nil {
		p.member.ping() // with or without signaling: the host hears that this member is alive
	}
	if p.sig == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := p.sig.ReportReplica(rctx, signaling.Report{
		Term: st.Term, Clock: uint64(st.Clock), Entities: uint64(st.Entities), Hash: st.Hash,
		Link: st.HostLink, RTTMicros: uint64(st.RTT.Microseconds()),
		Migrations: st.Migrations, PauseMicros: uint64(st.MigrationPause.Microseconds()),
	}); err != nil {
		p.log.Debug().Err(err).Msg("replica report failed")
	}
}

// after runs fn on the loop once d has passed, unless the peer stops first.
func (p *Peer) after(d time.Duration, fn func()) {
	p.linkWG.Add(1)
	go func() {
		defer p.linkWG.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.quit:
			return
		}
		select {
		case p.calls <- fn:
		case <-p.quit:
		}
	}()
}

// updateStandby keeps, for a synced member with Config.Standby, one idle link to the member that
// signaling would elect if the host went away (DESIGN §4), computed with the server's own
// election function over what this peer knows of the room.
func (p *Peer) updateStandby() {
	target := PeerIndex(0)
	if p.cfg.Standby && p.member != nil && p.member.synced {
		cands := make([]signaling.Candidate, 0, len(p.members))
		for _, m := range p.members {
			if m.Index != p.w.host {
				c := m.Candidate()
				if m.Index == p.w.self {
					c.Synced = true // the server announces other members' sync, not our own
				}
				cands = append(cands, c)
			}
		}
		if next, ok := signaling.Elect(cands, p.pinned); ok && next != p.w.self {
			target = next
		}
	}
	if s := p.standby; s != nil && s.idx != target {
		p.standby = nil
		if p.remotes[s.idx] == s {
			delete(p.remotes, s.idx)
		}
		go s.close()
	}
	if target == 0 || p.standby != nil {
		return
	}
	if r := p.remotes[target]; r != nil {
		return // it offered us a standby link first; keep one link per pair
	}
	p.session++
	p.standby = p.connect(target, p.session, true)
}

// setSynced tells signaling that this member holds the host's world (and may host next).
func (p *Peer) setSynced() {
	if p.sig == nil || p.sigEvents == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.sig.SetSynced(ctx); err != nil {
		p.log.Warn().Err(err).Msg("cannot report synced")
	}
}

// remote is one link to another member, owned by the loop.
type remote struct {
	p         *Peer
	idx       PeerIndex
	session   uint64
	l         Link
	ready     bool
	reasm     *netmsg.Reassembler
	fragID    uint32
	lastHeard time.Time
	rtt       time.Duration
	// host side
	helloed      bool
	snapshotSent bool
	// acceptRelayed: the member's next CRDT batch answers its sync snapshot and may carry host
	// entities it received from the previous host.
	acceptRelayed bool
	// aside holds greetings (Hello, Digest) received while this peer was not the host, for
	// when it becomes host.
	aside [][]byte
	// answered: the member has answered its sync snapshot (its corrections, if it had any, are
	// merged), so this host holds its latest writes.
	answered  bool
	info      PeerInfo
	dirty     map[Entity]uint32
	closeOnce sync.Once
}

func (r *remote) close() {
	r.closeOnce.Do(func() {
		if r.l != nil {
			_ = r.l.Close()
			if r.p != nil {
				r.p.count.linkClosed(r.l.Stats()) // so Status.Channels never goes back
			}
		}
	})
}
