package peer

import (
	"bytes"
	"errors"
	"time"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// The link layer: one remote per linked member, its session, readiness and reassembly. The loop
// owns every remote; link goroutines only post events. Closing a link waits for its goroutines,
// so it never happens on the loop: discard hands it to a goroutine that shutdown waits for.

// remote is one link to another member, owned by the loop. It holds link state only; what a role
// knows of the member at the other end is the role's (hostMember, memberRole).
type remote struct {
	idx       PeerIndex
	session   uint64
	l         Link
	ready     bool
	closing   bool
	reasm     *netmsg.Reassembler
	reasmHost bool      // reasm is sized for a host receiving from a member
	reasmAt   time.Time // when reasm's payload in progress started
	fragID    uint32
	lastHeard time.Time
	rtt       time.Duration
	pongs     uint64 // Pongs received: answers to this peer's pings (confirmGone)
	// answering is set while a worker makes this link's answer off the loop (answer.go); l is
	// nil until then.
	answering *answering
	// aside holds greetings (Hello, the Ack asking for deltas, Digest) received while this peer
	// was not the host, for when it becomes host.
	aside [][]byte
	// queued is reliable messages held for the next network flush (Peer.queue), at most
	// netmsg.MaxReliableMessage bytes.
	queued []byte
	// backlog is reliable data held back while the link's send buffer is over its high-water
	// mark (a snapshot larger than the mark, and whatever was sent after it), in order, at most
	// maxBacklog bytes (backlogBytes); backlogAt is when it last moved (drainBacklogs).
	backlog      [][]byte
	backlogBytes int
	backlogAt    time.Time
	// The signals of this link signaling did not relay (resend.go): shed is what to send again
	// (shedDescription, shedCandidates), resends how often it was, resendArmed whether a resend
	// is due.
	shed        uint8
	resends     uint8
	resendArmed bool
}

// Flow control of the reliable channel (docs/protocol.md §5, "Limits"). A link refuses a reliable
// send while its buffer holds more than its high-water mark (link.ErrBackpressure); the peer then
// holds that message and every later reliable one back, and sends them as the buffer drains, at
// every tick: a snapshot of a large world streams to a joiner at the link's pace instead of
// ending its link. A remote that takes nothing for backlogStall, or whose backlog would pass
// maxBacklog, cannot keep up: its link is closed.
const (
	// maxBacklog is the largest payload a member reassembles (netmsg.DefaultMaxTotal): a larger
	// backlog is not a snapshot on its way.
	maxBacklog = netmsg.DefaultMaxTotal
	// backlogStall is how long a backlog may sit without a byte taken.
	backlogStall = 10 * time.Second
)

// loopEvent is posted to the loop by link goroutines.
type loopEvent struct {
	r      *remote
	kind   uint8 // evMessage, evReady, evClosed, evLinked
	ch     link.Channel
	data   *[]byte
	closed error
}

const (
	evMessage = iota
	evReady
	evClosed
	evLinked // an answering worker made r's link (answer.go)
)

// connect makes a link to member idx and starts its watcher.
func (p *Peer) connect(idx PeerIndex, session uint64, offerer bool) *remote {
	r := &remote{idx: idx, session: session}
	l, err := p.cfg.Transport.Connect(p.linkConfig(r, offerer))
	if err != nil {
		p.log.Error().Err(err).Uint64("peer", uint64(idx)).Msg("cannot make link")
		return nil
	}
	p.remotes[idx] = r
	p.watch(r, l)
	return r
}

// linkConfig is the configuration of r's link; the answering workers use it off the loop, so it
// holds no reference to the loop's state but r, whose events it posts.
func (p *Peer) linkConfig(r *remote, offerer bool) LinkConfig {
	idx := r.idx
	return LinkConfig{
		Local: p.w.self, Remote: idx, Session: r.session, Offerer: offerer,
		ICEServers: p.iceServers, RelayOnly: p.cfg.RelayOnly,
		Logger: p.log.With().Uint64("peer", uint64(idx)).Logger(),
		Signal: func(pl sigclient.SignalPayload) error {
			h := p.sigNow.Load() // the current client: a resume may have replaced it
			if h == nil {
				return errNoSignaling
			}
			// Never blocks: this runs on the loop (an offer made by connect) as well as on
			// link goroutines. A lost signal makes the link time out and be made again.
			return h.c.TrySendSignal(idx, pl)
		},
		Handler: func(ch link.Channel, payload []byte) { p.post(r, ch, payload) },
	}
}

// watch makes l r's link and starts its watcher.
func (p *Peer) watch(r *remote, l Link) {
	r.l = l
	r.reasm = netmsg.NewReassembler(netmsg.Config{})
	p.goTracked(func() {
		select {
		case <-l.Ready():
			p.postState(r, evReady, nil)
		case <-l.Done():
		}
		<-l.Done()
		p.postState(r, evClosed, errors.New("link closed"))
	})
}

// handleSignal routes a WebRTC signal to the link it belongs to, making an answering link for a
// new offer when this peer is the host.
func (p *Peer) handleSignal(from PeerIndex, pl sigclient.SignalPayload) {
	r := p.remotes[from]
	// The host answers members' offers; a member answers standby offers (links that become the
	// links to it if it is elected next). A member's own link to the host is never replaced.
	isHostLink := p.member != nil && r != nil && r == p.member.hostLink
	if pl.Kind == sigclient.SignalOffer && (p.host != nil || !isHostLink) && (r == nil || r.session != pl.Session) {
		if r != nil {
			p.discard(r)
		}
		if !p.answersInline() {
			p.answer(from, pl) // off the loop (answer.go)
			return
		}
		if r = p.connect(from, pl.Session, false); r == nil {
			return
		}
	}
	if r == nil || r.session != pl.Session {
		p.log.Debug().Uint64("peer", uint64(from)).Str("kind", string(pl.Kind)).Msg("signal for no link; dropped")
		return
	}
	if r.answering != nil {
		p.early(r, pl) // the link is being made: fed to it once it is
		return
	}
	p.feed(r, pl)
}

// feed hands a signal to r's link, dropping the link if the signal is bad.
func (p *Peer) feed(r *remote, pl sigclient.SignalPayload) {
	if err := r.l.HandleSignal(pl); err != nil {
		p.log.Warn().Err(err).Uint64("peer", uint64(r.idx)).Msg("bad signal; closing link")
		p.drop(r)
	}
}

// post copies a received payload and hands it to the loop. It runs on a link's read goroutine.
func (p *Peer) post(r *remote, ch link.Channel, payload []byte) {
	bp := p.pool.Get().(*[]byte)
	*bp = append((*bp)[:0], payload...)
	ev := loopEvent{r: r, kind: evMessage, ch: ch, data: bp}
	if ch == link.Unreliable {
		if !p.events.TryPush(ev) {
			p.count.droppedIn.Add(1)
			p.release(bp)
		}
		return
	}
	if !p.events.PushWait(ev, p.quit, nil) {
		p.release(bp)
	}
}

func (p *Peer) postState(r *remote, kind uint8, err error) {
	p.events.PushWait(loopEvent{r: r, kind: kind, closed: err}, p.quit, nil)
}

func (p *Peer) release(bp *[]byte) {
	if bp != nil && cap(*bp) <= 64<<10 {
		p.pool.Put(bp)
	}
}

func (p *Peer) handleLinkEvent(ev loopEvent) {
	defer p.release(ev.data)
	r := ev.r
	if ev.kind == evLinked {
		p.linked(r) // closes the made link if r was replaced or dropped
		return
	}
	if p.remotes[r.idx] != r {
		return // a link that was replaced or dropped
	}
	switch ev.kind {
	case evReady:
		r.ready = true
		r.lastHeard = p.clock.Now()
		p.log.Debug().Uint64("peer", uint64(r.idx)).Msg("link ready")
		if p.member != nil && r == p.member.hostLink {
			p.member.linkReady()
		}
	case evClosed:
		p.log.Info().Uint64("peer", uint64(r.idx)).Msg("link closed")
		p.drop(r)
	case evMessage:
		// A message can overtake the link's ready event: the remote end opened the channels.
		r.ready = true
		p.count.bytesIn.Add(uint64(len(*ev.data)))
		r.lastHeard = p.clock.Now()
		if err := p.handlePayload(r, ev.ch, *ev.data, 0); err != nil {
			p.log.Warn().Err(err).Uint64("peer", uint64(r.idx)).Msg("protocol error; closing link")
			p.drop(r)
		}
	}
}

// send sends a payload to r, fragmenting a reliable payload above the message limit. What is
// queued for r goes first: the reliable channel keeps the order of everything sent on it.
func (p *Peer) send(r *remote, ch link.Channel, payload []byte) {
	if r == nil || r.l == nil || !r.ready || r.closing {
		return
	}
	if ch == link.Reliable && len(r.queued) > 0 && !p.flushQueue(r) {
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
			if !p.sendReliable(r, buf, false) {
				return
			}
		}
	}
	if ch == link.Reliable {
		p.sendReliable(r, payload, false)
		return
	}
	p.sendOne(r, ch, payload)
}

// sendReliable sends one reliable message to r after its backlog, or holds it in the backlog
// when there is one or the link's buffer is full (owned: b is the backlog's to keep, else it is
// copied); false means the link failed and is dropped.
func (p *Peer) sendReliable(r *remote, b []byte, owned bool) bool {
	if len(r.backlog) == 0 {
		err := r.l.Send(link.Reliable, b)
		if !errors.Is(err, link.ErrBackpressure) {
			return p.sent(r, err, len(b))
		}
		r.backlogAt = p.clock.Now()
	}
	if r.backlogBytes+len(b) > maxBacklog {
		p.log.Warn().Uint64("peer", uint64(r.idx)).Int("backlog", r.backlogBytes).Msg("peer cannot keep up (backlog full); closing link")
		p.drop(r)
		return false
	}
	if !owned {
		b = bytes.Clone(b)
	}
	r.backlog = append(r.backlog, b)
	r.backlogBytes += len(b)
	p.backlogged = true
	return true
}

// drainBacklogs sends what the links' buffers take of their backlogs (every tick), and drops the
// links whose backlog has not moved for backlogStall.
func (p *Peer) drainBacklogs(now time.Time) {
	if !p.backlogged {
		return
	}
	p.backlogged = false
	for _, r := range p.remotes {
		if len(r.backlog) == 0 {
			continue
		}
		if r.closing || r.l == nil {
			p.backlogged = true
			continue
		}
		moved := false
		for len(r.backlog) > 0 {
			b := r.backlog[0]
			err := link.SendOwned(r.l, link.Reliable, b)
			if errors.Is(err, link.ErrBackpressure) {
				break
			}
			if !p.sent(r, err, len(b)) {
				break
			}
			r.backlog[0] = nil
			r.backlog = r.backlog[1:]
			r.backlogBytes -= len(b)
			moved = true
		}
		switch {
		case r.closing:
		case len(r.backlog) == 0:
			r.backlog, r.backlogBytes = nil, 0
		case moved:
			r.backlogAt = now
		case now.Sub(r.backlogAt) > backlogStall:
			p.log.Warn().Uint64("peer", uint64(r.idx)).Int("backlog", r.backlogBytes).Msg("peer cannot keep up (backlog stalled); closing link")
			p.drop(r)
		}
		if len(r.backlog) > 0 {
			p.backlogged = true
		}
	}
}

// sendOwned sends unfragmented payloads the caller hands over, in order, in one call to the link
// (link.SendOwnedBatch).
func (p *Peer) sendOwned(r *remote, ch link.Channel, payloads [][]byte) {
	if r == nil || r.l == nil || !r.ready || r.closing {
		return
	}
	if ch == link.Reliable && len(r.queued) > 0 && !p.flushQueue(r) {
		return
	}
	if ch == link.Reliable {
		for _, b := range payloads {
			if !p.sendReliable(r, b, true) {
				return
			}
		}
		return
	}
	size := 0
	for _, b := range payloads {
		size += len(b)
	}
	p.sent(r, link.SendOwnedBatch(r.l, ch, payloads), size)
}

// queue holds reliable messages for r until the next network flush (flushQueued) or the next
// reliable send to r, whichever comes first, so that messages of many steps share one
// data-channel message (a host broadcasting to a crowd: see outbox.sendCommands). payload is a
// whole number of messages; what does not fit in one data-channel message goes at once.
func (p *Peer) queue(r *remote, payload []byte) {
	if r == nil || r.l == nil || !r.ready || r.closing {
		return
	}
	if len(r.queued)+len(payload) > netmsg.MaxReliableMessage {
		if len(r.queued) > 0 && !p.flushQueue(r) {
			return
		}
		if len(payload) > netmsg.MaxReliableMessage {
			p.send(r, link.Reliable, payload)
			return
		}
	}
	if len(r.queued) == 0 {
		p.queuedTo = append(p.queuedTo, r)
	}
	r.queued = append(r.queued, payload...)
}

// flushQueue sends what is queued for r; false means the link failed and is dropped.
func (p *Peer) flushQueue(r *remote) bool {
	b := r.queued
	r.queued = r.queued[:0]
	if r.closing || r.l == nil {
		return false
	}
	return p.sendReliable(r, b, false)
}

// flushQueued sends everything queued (at every network flush, before the updates).
func (p *Peer) flushQueued() {
	for _, r := range p.queuedTo {
		if len(r.queued) > 0 && p.remotes[r.idx] == r {
			p.flushQueue(r)
		}
		r.queued = r.queued[:0]
	}
	clear(p.queuedTo)
	p.queuedTo = p.queuedTo[:0]
}

// sendOne sends one message; false means the link failed and is dropped.
func (p *Peer) sendOne(r *remote, ch link.Channel, b []byte) bool {
	return p.sent(r, r.l.Send(ch, b), len(b))
}

// sent counts size bytes out when a send to r worked (err nil) and drops the link when it failed;
// false means it failed.
func (p *Peer) sent(r *remote, err error, size int) bool {
	if err == nil {
		p.count.bytesOut.Add(uint64(size))
		return true
	}
	if errors.Is(err, link.ErrNotReady) {
		p.count.dropped.Add(1) // the other channel is still opening; anti-entropy heals
		return true
	}
	if errors.Is(err, link.ErrBackpressure) {
		p.log.Warn().Uint64("peer", uint64(r.idx)).Msg("peer cannot keep up; closing link")
	} else {
		p.log.Debug().Err(err).Uint64("peer", uint64(r.idx)).Msg("send failed")
	}
	p.drop(r)
	return false
}

// drop closes r's link and tells the roles that it is gone; its closed event arrives later and
// is ignored.
func (p *Peer) drop(r *remote) {
	if p.remotes[r.idx] == r {
		if p.host != nil {
			p.host.linkClosed(r)
		}
		if p.member != nil && r == p.member.hostLink {
			p.member.hostLinkClosed()
		}
	}
	p.discard(r)
}

// discard removes r from the links and closes it on a tracked goroutine (Close waits for the
// link's goroutines; the loop never blocks on it). The roles are not told: the caller replaces or
// ends the link on purpose.
func (p *Peer) discard(r *remote) {
	if p.remotes[r.idx] == r {
		delete(p.remotes, r.idx)
	}
	if r.answering != nil {
		r.answering.abandoned.Store(true) // its worker, if still waiting for a place, makes nothing
	}
	if p.standby == r {
		p.standby = nil
	}
	if p.host != nil {
		p.host.forget(r)
	}
	if r.closing || r.l == nil {
		return
	}
	r.closing = true
	p.goTracked(func() {
		_ = r.l.Close()
		p.count.linkClosed(r.l.Stats()) // so Status.Channels never goes back
	})
}
