package peer

import (
	"math/rand/v2"
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// memberRole is the state a peer keeps while it follows a host. The loop owns it.
type memberRole struct {
	roleBase
	hostLink *remote
	// fence is the (term, host) signaling announced last; linkTerm is the term in which hostLink
	// became the link to the host. Host messages are checked against both (fence.go).
	fence    authority.Fence
	linkTerm Term
	synced   bool
	stopped  bool
	// refusedLog counts the host's inputs refused by the limits, for rate-limited logs.
	refusedLog uint64
	// refusedSync is the host link whose sync snapshot this member refused (snapshotBounds).
	refusedSync *remote
	// heardAt is when this member last heard a host (a message past the fence): the clock a
	// snapshot may claim grows with the time since (hostClockLimit).
	heardAt time.Time
	// greetedAt is when Hello and Digest last went to the host.
	greetedAt time.Time
	// Adaptive anti-entropy: digestAt is Replica.Changes() when the last digest went out,
	// digestSent when, digestGap the pause before the next one while nothing changes.
	digestAt   uint64
	digestSent time.Time
	digestGap  time.Duration
	// connectFails counts the links to the host in a row that were not up in time.
	connectFails uint
	dirty        map[Entity]uint32 // this member's own writes not yet sent
	pending      []byte            // this member's own CRDT messages not yet sent (flushPending)

	upd updater
	// delta is what this member received as DeltaUpdates on its current host link (delta.go).
	delta *deltaRx
	dig   netmsg.Digest
	buf   []byte
	corr  []byte
	meta  []byte
}

func newMemberRole(b roleBase) *memberRole {
	m := &memberRole{roleBase: b, dirty: make(map[Entity]uint32)}
	b.w.setRole(false, m)
	return m
}

// follow connects to a new host. The replica is kept: the new host's snapshot is merged into it.
func (m *memberRole) follow(host PeerIndex) {
	if m.hostLink != nil {
		m.env.discard(m.hostLink)
		m.hostLink = nil
	}
	if m.synced {
		m.w.events = append(m.w.events, Event{Kind: EventMigrating, Term: m.w.term, Peer: host})
	}
	m.synced = false
	m.linkTerm = m.w.term
	r := m.env.takeStandby(host)
	if r != nil {
		// The standby link becomes the link to the new host: no ICE/DTLS handshake.
		m.count.promoted.Add(1)
		m.log.Info().Uint64("host", uint64(host)).Bool("ready", r.ready).Msg("standby link promoted")
		m.hostLink = r
		if r.ready {
			m.linkReady()
			return
		}
		// Still being made (or never answered): it gets the connect timeout of a new link.
	} else {
		if r := m.env.linkTo(host); r != nil {
			m.env.discard(r) // an inbound standby link from the new host: replace it
		}
		r = m.env.dial(host)
		m.hostLink = r
		if r == nil {
			m.retry(host)
			return
		}
	}
	// A link that is not up in time (an offer lost, ICE stuck) is dropped and made again. Each
	// timeout in a row doubles the next one (up to maxConnectTimeout), with jitter: under a
	// burst of joins a host's handshakes take longer than connectTimeout, and tearing down links
	// that are still being made, all at once, only adds work (seen with 512 bots: most links
	// were torn down and made again, and few members ever synced).
	wait := min(connectTimeout<<min(m.connectFails, 3), maxConnectTimeout)
	wait += rand.N(wait / 2)
	m.env.after(wait, func() {
		if !m.stopped && m.hostLink == r && !r.ready {
			m.connectFails++
			m.log.Warn().Uint64("host", uint64(host)).Dur("waited", wait).Msg("link to host not up in time; retrying")
			m.env.drop(r)
		}
	})
}

// connectTimeout bounds how long a member waits for its first link to the host to open;
// maxConnectTimeout bounds the doubled timeouts after it.
const (
	connectTimeout    = 5 * time.Second
	maxConnectTimeout = 30 * time.Second
)

// retryDelay is the pause before a member links to its host again after the link closed.
const retryDelay = 500 * time.Millisecond

func (m *memberRole) stop() {
	m.stopped = true
	if m.hostLink != nil {
		m.env.discard(m.hostLink)
		m.hostLink = nil
	}
}

// linkReady greets the host and sends the digests it answers with a snapshot.
func (m *memberRole) linkReady() {
	m.connectFails = 0
	w := m.w
	b := netmsg.AppendHello(m.buf[:0], &netmsg.Hello{Term: uint64(w.heldTerm), PeerIndex: uint64(w.self), SchemaFingerprint: w.schemas.Fingerprint()})
	if !m.cfg.NoDeltas && !m.cfg.TRNPUpdates {
		// Ask for deltas against acknowledged values (an older host drops the Ack, counted).
		b = netmsg.AppendAck(b, &netmsg.Ack{})
	}
	b = m.appendDigest(b)
	m.buf = b
	m.greetedAt = m.env.now()
	m.digestSent, m.digestGap = m.greetedAt, m.cfg.DigestInterval
	m.env.send(m.hostLink, link.Reliable, b)
}

func (m *memberRole) appendDigest(b []byte) []byte {
	m.digestAt = m.w.r.Changes()
	m.dig.Term = uint64(m.w.term)
	m.dig.Clock = uint32(m.w.r.Clock())
	m.dig.Digests = m.w.r.BucketDigests(m.cfg.Buckets, m.dig.Digests[:0])
	return netmsg.AppendDigest(b, &m.dig)
}

// sendDigest runs every DigestInterval: the host repairs the buckets that differ. It is adaptive
// (docs/protocol.md §5, "anti-entropy"): a digest goes out when this replica changed since the
// last one, else only once the pause since the last one reaches digestGap, which doubles after
// each such digest up to DigestMaxInterval. A changed replica may differ from the host's (a lost
// update, a write of its own); an unchanged one still digests now and then, in case the host
// changed and the update was lost.
func (m *memberRole) sendDigest() {
	if m.hostLink == nil || !m.hostLink.ready {
		return
	}
	if !m.synced {
		// Greeted, and the host has sent nothing since (the greeting reached it before it knew it
		// was host, and it had no standby state to keep it aside): greet again. Never while an
		// answer is arriving: a second digest would count as this member's answer to it.
		if !m.greetedAt.IsZero() && m.hostLink.lastHeard.Before(m.greetedAt) && m.env.now().Sub(m.greetedAt) >= m.cfg.DigestInterval {
			m.linkReady()
		}
		return
	}
	now := m.env.now()
	switch {
	case m.w.r.Changes() != m.digestAt:
		m.digestGap = m.cfg.DigestInterval
	case now.Sub(m.digestSent) >= m.digestGap-m.cfg.DigestInterval/2: // timers fire a little early or late
		m.digestGap = min(2*m.digestGap, m.cfg.DigestMaxInterval)
	default:
		return
	}
	m.digestSent = now
	m.buf = m.appendDigest(m.buf[:0])
	m.env.send(m.hostLink, link.Reliable, m.buf)
}

// digestDue is when sendDigest next has a digest to send (a sleeping member's wake-up): the base
// interval after the last one once the replica changed, else the back-off pause after it.
func (m *memberRole) digestDue() time.Time {
	if m.w.r.Changes() != m.digestAt {
		return m.digestSent.Add(m.cfg.DigestInterval)
	}
	return m.digestSent.Add(m.digestGap)
}

func (m *memberRole) ping() {
	if m.hostLink == nil || !m.hostLink.ready {
		return
	}
	m.buf = netmsg.AppendPing(m.buf[:0], &netmsg.Ping{Nonce: uint64(m.w.r.Clock()), SendTime: uint64(m.env.monotonic())})
	m.env.send(m.hostLink, link.Reliable, m.buf)
}

// hostLinkClosed reconnects to the same host after a pause unless a new host is announced first.
func (m *memberRole) hostLinkClosed() {
	host := m.hostLink.idx
	m.hostLink = nil
	m.retry(host)
}

func (m *memberRole) retry(host PeerIndex) {
	m.env.after(retryDelay, func() {
		if !m.stopped && m.hostLink == nil && m.w.host == host {
			m.follow(host)
		}
	})
}

// flushUpdates sends the host this member's own dirty properties, and its Ack of the DeltaUpdates
// that arrived since the last one: in the first datagram of its updates, or alone.
func (m *memberRole) flushUpdates() {
	if !m.synced || m.hostLink == nil || !m.hostLink.ready {
		return
	}
	if x := m.delta; x != nil && x.link == m.hostLink {
		// Alone, an Ack goes at most every ackInterval (each costs the host a datagram to read
		// and a SACK to send); riding on this member's own updates, every flush.
		now := m.env.now()
		if len(m.dirty) > 0 || now.Sub(x.ackAt) >= ackInterval-m.cfg.NetworkInterval/2 {
			if a, ok := x.pendingAck(); ok {
				m.upd.prefix = netmsg.AppendAck(m.upd.prefix[:0], &a)
				x.ackAt = now
			}
		}
	}
	m.upd.send(m.roleBase, m.hostLink, m.dirty, nil, nil)
	if len(m.upd.prefix) > 0 {
		m.env.send(m.hostLink, link.Unreliable, m.upd.prefix)
		m.upd.prefix = m.upd.prefix[:0]
	}
}

func (m *memberRole) sendRPC(typ uint32, data []byte, app bool) error {
	if app && typ >= FirstSystemRPC {
		return ErrNoAuthority
	}
	if m.hostLink == nil || !m.hostLink.ready {
		return ErrClosed
	}
	m.buf = netmsg.AppendPeerCommands(m.buf[:0], &netmsg.PeerCommands{RPCs: []netmsg.RPC{{Type: typ, Data: data}}})
	m.env.send(m.hostLink, link.Reliable, m.buf)
	return nil
}

// changeSink: a member sends only its own writes.

func (m *memberRole) propChanged(e Entity, prop int, origin PeerIndex) {
	if origin == 0 {
		m.dirty[e] |= 1 << prop
	}
}
func (m *memberRole) spawned(Entity, PeerIndex) {}
func (m *memberRole) despawned(e Entity, _ PeerIndex) {
	delete(m.dirty, e)
}
func (m *memberRole) authorityChanged(Entity, authority.Record, PeerIndex) {}
func (m *memberRole) broadcastRPC(uint32, []byte) error                    { return ErrNotHost }

// otherChanged queues this member's own changes that updates cannot carry (a deleted property)
// for the host, as CRDT messages sent after the step (flushPending).
func (m *memberRole) otherChanged(cm *crdt.Message, origin PeerIndex) {
	if origin == 0 && m.synced {
		m.pending = crdt.AppendMessage(m.pending, cm)
	}
}

// flushPending sends the queued CRDT messages to the host, stamped with the term. The member's
// answer to its sync snapshot has gone before (m.synced), so these never take its place.
func (m *memberRole) flushPending() {
	if len(m.pending) == 0 {
		return
	}
	if m.synced && m.hostLink != nil && m.hostLink.ready {
		m.buf = netmsg.AppendCrdtBatch(m.buf[:0], &netmsg.CrdtBatch{Term: uint64(m.w.term), Messages: m.pending})
		m.env.send(m.hostLink, link.Reliable, m.buf)
	}
	// Unsent (no link): the next digest exchange reconciles the replicas.
	m.pending = m.pending[:0]
}

// hostReady reports whether the link to the host can carry a message now.
func (m *memberRole) hostReady() error {
	if m.hostLink == nil || !m.hostLink.ready {
		return ErrClosed
	}
	return nil
}

func (m *memberRole) sendMessage(to PeerIndex, typ uint8, data []byte, reliable bool) error {
	if err := m.hostReady(); err != nil {
		return err
	}
	if to == m.w.host {
		m.buf = netmsg.AppendExt(m.buf[:0], netmsg.Type(typ), data)
	} else {
		m.buf = netmsg.AppendRelay(m.buf[:0], &netmsg.Relay{Peer: uint64(to), AppType: netmsg.Type(typ), Data: data})
	}
	m.env.send(m.hostLink, channelOf(reliable), m.buf)
	return nil
}

func (m *memberRole) sendAction(typ uint32, data []byte) error {
	if err := m.hostReady(); err != nil {
		return err
	}
	m.buf = netmsg.AppendActions(m.buf[:0], &netmsg.Actions{Actions: []netmsg.Action{{Type: typ, Data: data}}})
	m.env.send(m.hostLink, link.Reliable, m.buf)
	return nil
}

func (m *memberRole) requestAppend(e Entity, c crdt.ComponentID, value []byte) error {
	return m.sendRPC(rpcAppend, appendRequest(e, c, value), false)
}

func (m *memberRole) grant(Entity, PeerIndex) error { return ErrNotHost }
func (m *memberRole) revoke(Entity) error           { return ErrNotHost }
