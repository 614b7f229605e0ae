package peer

import (
	"encoding/binary"
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// memberRole is the state a peer keeps while it follows a host. The loop owns it.
type memberRole struct {
	p        *Peer
	w        *World
	hostLink *remote
	synced   bool
	// greetedAt is when Hello and Digest last went to the host.
	greetedAt time.Time
	dirty     map[Entity]uint32 // this member's own writes not yet sent

	snap netmsg.HostSnapshot
	hc   netmsg.HostCommands
	eu   netmsg.EntityUpdates
	dig  digestMsg
	buf  []byte
	corr []byte
	meta []byte
}

func newMemberRole(p *Peer) *memberRole {
	m := &memberRole{p: p, w: p.w, dirty: make(map[Entity]uint32)}
	p.migratingSince = time.Time{} // a fresh member (or a former host) is not migrating
	p.w.sink = m
	p.w.isHost = false
	return m
}

// follow connects to a new host. The replica is kept: the new host's snapshot is merged into it.
func (m *memberRole) follow(host PeerIndex) {
	p := m.p
	if m.hostLink != nil {
		delete(p.remotes, m.hostLink.idx)
		go m.hostLink.close()
		m.hostLink = nil
	}
	if m.synced {
		m.w.events = append(m.w.events, Event{Kind: EventMigrating, Term: m.w.term, Peer: host})
		p.migratingSince = p.cfg.Now() // the pause ends when the new host's snapshot is merged
	}
	m.synced = false
	if s := p.standby; s != nil && s.idx == host && p.remotes[host] == s {
		// The standby link becomes the link to the new host: no ICE/DTLS handshake.
		p.standby = nil
		m.hostLink = s
		if s.ready {
			m.linkReady()
		}
		p.count.promoted.Add(1)
		p.log.Info().Uint64("host", uint64(host)).Msg("standby link promoted")
		return
	}
	if r := p.remotes[host]; r != nil {
		delete(p.remotes, host) // an inbound standby link from the new host: replace it
		go r.close()
	}
	p.session++
	r := p.connect(host, p.session, true)
	m.hostLink = r
	if r == nil {
		m.retry(host)
		return
	}
	// A link that is not up in time (an offer lost, ICE stuck) is dropped and made again.
	p.after(connectTimeout, func() {
		if m.hostLink == r && !r.ready {
			p.log.Warn().Uint64("host", uint64(host)).Msg("link to host not up in time; retrying")
			p.dropRemote(r)
		}
	})
}

// connectTimeout bounds how long a member waits for its link to the host to open.
const connectTimeout = 5 * time.Second

func (m *memberRole) stop() {
	if m.hostLink != nil {
		delete(m.p.remotes, m.hostLink.idx)
		go m.hostLink.close()
		m.hostLink = nil
	}
}

// linkReady greets the host and sends the digests it answers with a snapshot.
func (m *memberRole) linkReady() {
	p, w := m.p, m.w
	b := netmsg.AppendHello(m.buf[:0], &netmsg.Hello{Term: uint64(w.term), PeerIndex: uint64(w.self), SchemaFingerprint: w.schemas.Fingerprint()})
	b = m.appendDigest(b)
	m.buf = b
	m.greetedAt = p.cfg.Now()
	p.send(m.hostLink, link.Reliable, b)
}

func (m *memberRole) appendDigest(b []byte) []byte {
	m.dig.term = uint64(m.w.term)
	m.dig.clock = uint32(m.w.r.Clock())
	m.dig.digests = m.w.r.BucketDigests(m.p.cfg.Buckets, m.dig.digests[:0])
	return appendDigest(b, &m.dig)
}

// sendDigest runs every DigestInterval: the host repairs the buckets that differ.
func (m *memberRole) sendDigest() {
	if m.hostLink == nil || !m.hostLink.ready {
		return
	}
	if !m.synced {
		// Greeted, and the host has sent nothing since (the greeting reached it before it knew it
		// was host, and it had no standby state to keep it aside): greet again. Never while an
		// answer is arriving: a second digest would count as this member's answer to it.
		if !m.greetedAt.IsZero() && m.hostLink.lastHeard.Before(m.greetedAt) && m.p.cfg.Now().Sub(m.greetedAt) >= m.p.cfg.DigestInterval {
			m.linkReady()
		}
		return
	}
	m.buf = m.appendDigest(m.buf[:0])
	m.p.send(m.hostLink, link.Reliable, m.buf)
}

func (m *memberRole) ping() {
	if m.hostLink == nil || !m.hostLink.ready {
		return
	}
	m.buf = netmsg.AppendPing(m.buf[:0], &netmsg.Ping{Nonce: uint64(m.p.w.r.Clock()), SendTime: uint64(m.p.monotonic())})
	m.p.send(m.hostLink, link.Reliable, m.buf)
}

// hostLinkClosed reconnects to the same host after a pause unless a new host is announced first.
func (m *memberRole) hostLinkClosed() {
	host := m.hostLink.idx
	m.hostLink = nil
	m.retry(host)
}

func (m *memberRole) retry(host PeerIndex) {
	p := m.p
	p.after(500*time.Millisecond, func() {
		if p.member == m && m.hostLink == nil && p.w.host == host {
			m.follow(host)
		}
	})
}

// handle processes one message from the host of the current term.
func (m *memberRole) handle(msg netmsg.Message, stamp uint64) error {
	p, w := m.p, m.w
	switch msg.Type {
	case netmsg.TypeHostSnapshot:
		if _, err := netmsg.ConsumeHostSnapshot(msg.Raw, &m.snap); err != nil {
			return err
		}
		if PeerIndex(m.snap.HostPeerIndex) != w.host || PeerIndex(m.snap.LocalPeerIndex) != w.self {
			p.count.fenced.Add(1)
			return nil
		}
		info, corr, err := hostsnapshot.Apply(w.r, w.schemas, &m.snap, func(cm *crdt.Message) crdt.Outcome {
			return w.mergeRemote(cm, w.host)
		}, m.corr[:0])
		if err != nil {
			return err
		}
		m.corr = corr
		if Term(info.Term) != w.term {
			p.count.fenced.Add(1)
		}
		if len(corr) > 0 || !m.synced {
			// The answer to the sync snapshot is sent even when empty: it closes the host's window
			// for corrections to host entities.
			m.buf = netmsg.AppendCrdtBatch(m.buf[:0], &netmsg.CrdtBatch{Term: uint64(w.term), Messages: corr})
			p.send(m.hostLink, link.Reliable, m.buf)
		}
		if !m.synced {
			m.synced = true
			p.held = true
			p.migrated()
			w.events = append(w.events, Event{Kind: EventSynced, Term: w.term, Peer: w.host})
			p.log.Info().Int("entities", w.Len()).Int("corrections", len(corr)).Str("cover", info.Cover.String()).Msg("synced")
			p.setSynced()
			p.updateStandby()
		}
	case netmsg.TypeHostCommands:
		if _, err := netmsg.ConsumeHostCommands(msg.Raw, &m.hc); err != nil {
			return err
		}
		m.applyCommands(stamp)
	case netmsg.TypePeerEntered:
		var pe netmsg.PeerEntered
		if _, err := netmsg.ConsumePeerEntered(msg.Raw, &pe); err != nil {
			return err
		}
		w.events = append(w.events, Event{Kind: EventPeerEntered, Peer: PeerIndex(pe.Peer.PeerIndex)})
	case netmsg.TypePeerExited:
		var px netmsg.PeerExited
		if _, err := netmsg.ConsumePeerExited(msg.Raw, &px); err != nil {
			return err
		}
		w.events = append(w.events, Event{Kind: EventPeerExited, Peer: PeerIndex(px.PeerIndex)})
	case netmsg.TypeEntityUpdates:
		if _, err := netmsg.ConsumeEntityUpdates(msg.Raw, &m.eu); err != nil {
			return err
		}
		p.applyUpdates(&m.eu, w.host, func(Entity) bool { return true }, w.mergeRemoteWrite)
	case netmsg.TypeCrdtBatch:
		var b netmsg.CrdtBatch
		if _, err := netmsg.ConsumeCrdtBatch(msg.Raw, &b); err != nil {
			return err
		}
		if Term(b.Term) != w.term {
			p.count.fenced.Add(1)
			return nil
		}
		var rd crdt.Reader
		var cm crdt.Message
		for rd.Reset(b.Messages); rd.Next(&cm) == nil; {
			w.mergeRemote(&cm, w.host)
		}
	default:
		p.count.dropped.Add(1)
	}
	return nil
}

// applyCommands merges a HostCommands stamped with the host's Lamport time.
func (m *memberRole) applyCommands(stamp uint64) {
	p, w := m.p, m.w
	if stamp > uint64(^uint32(0)) {
		p.count.dropped.Add(1)
		return
	}
	ts := crdt.Timestamp(stamp)
	spawned := map[Entity]bool{}
	for i := range m.hc.Spawns {
		sp := &m.hc.Spawns[i]
		s, ok := w.schemas.Lookup(schema.ID(sp.SchemaID))
		if !ok || sp.NetworkID>>32 != 0 {
			p.count.dropped.Add(1)
			continue
		}
		e := Entity(sp.NetworkID)
		if err := hostsnapshot.SpawnValues(s, sp.UpdateData, func(int, []byte) {}); err != nil {
			p.count.dropped.Add(1)
			continue
		}
		m.meta = schema.AppendMeta(m.meta[:0], s.ID, sp.CreationData)
		cm := crdt.Message{Type: crdt.PutComponent, Entity: e, Component: schema.ComponentMeta, Timestamp: ts, Data: m.meta}
		w.mergeRemote(&cm, w.host)
		_ = hostsnapshot.SpawnValues(s, sp.UpdateData, func(i int, v []byte) {
			cm := crdt.Message{Type: crdt.PutComponent, Entity: e, Component: s.Properties[i].Component, Timestamp: ts, Data: v}
			w.mergeRemote(&cm, w.host)
		})
		spawned[e] = true
	}
	for _, d := range m.hc.Despawns {
		if d.NetworkID>>32 == 0 {
			cm := crdt.Message{Type: crdt.DeleteEntity, Entity: Entity(d.NetworkID)}
			w.mergeRemote(&cm, w.host)
		}
	}
	for _, t := range m.hc.AuthorityTransfers {
		if t.NetworkID>>32 != 0 {
			continue
		}
		e := Entity(t.NetworkID)
		// TRNP's transfer names only the new author; the record kind follows from context: a
		// transfer in the HostCommands that spawns the entity makes an avatar, a transfer to the
		// host returns the entity to the host, any other is a lock.
		rec := authority.Record{Kind: authority.KindLock, Peer: authority.PeerIndex(t.NewAuthorIndex)}
		switch {
		case spawned[e]:
			rec.Kind = authority.KindAvatar
		case PeerIndex(t.NewAuthorIndex) == w.host:
			rec = authority.Record{}
		}
		m.meta = authority.AppendRecord(m.meta[:0], rec)
		cm := crdt.Message{Type: crdt.PutComponent, Entity: e, Component: schema.ComponentAuthority, Timestamp: ts, Data: m.meta}
		w.mergeRemote(&cm, w.host)
	}
	for _, rpc := range m.hc.RPCs {
		p.app.RPC(w, w.host, rpc.Type, rpc.Data)
	}
	for _, a := range m.hc.Actions {
		p.app.RPC(w, w.host, a.Type, a.Data)
	}
}

// SendRPC sends an application RPC to the host (members only; the host calls its handler directly).
func (w *World) SendRPC(typ uint32, data []byte) error {
	m, ok := w.sink.(*memberRole)
	if !ok {
		return ErrNotHost
	}
	if typ >= FirstSystemRPC {
		return ErrNoAuthority
	}
	return m.sendRPC(typ, data)
}

// RequestLock asks the host for a temporary lock on e; the grant arrives as an authority change.
func (w *World) RequestLock(e Entity) error { return w.systemRPC(rpcLockRequest, e) }

// Relinquish hands a lock on e back to the host.
func (w *World) Relinquish(e Entity) error { return w.systemRPC(rpcRelinquish, e) }

func (w *World) systemRPC(typ uint32, e Entity) error {
	m, ok := w.sink.(*memberRole)
	if !ok {
		return ErrNotHost
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(e))
	return m.sendRPC(typ, b[:])
}

func (m *memberRole) sendRPC(typ uint32, data []byte) error {
	if m.hostLink == nil || !m.hostLink.ready {
		return ErrClosed
	}
	m.buf = netmsg.AppendPeerCommands(m.buf[:0], &netmsg.PeerCommands{RPCs: []netmsg.RPC{{Type: typ, Data: data}}})
	m.p.send(m.hostLink, link.Reliable, m.buf)
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
func (m *memberRole) otherChanged(*crdt.Message, PeerIndex)                {}
