package peer

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// What a member does with the messages of its host.

// newTerm adopts a host announcement (term, host) from signaling into the member's fence
// (authority.Fence.Announce: a newer term, or a host named in the fence's own term when it holds
// "no host" or another host). When the host stays the same in a newer term (a resumed room), the
// link to it carries the new term.
func (m *memberRole) newTerm(term Term, host PeerIndex) {
	if m.fence.Announce(term, host) && m.hostLink != nil && m.hostLink.idx == host {
		m.linkTerm = term
	}
}

// fenced reports whether a message on the host link must be refused: the link became the host
// link in an older term than the one signaling announced last, or its peer is not the host of
// that term (including "no host"). A refused message is counted in Status.Fenced.
func (m *memberRole) fenced() bool {
	err := m.fence.Accept(m.linkTerm, m.hostLink.idx)
	if err == nil {
		return false
	}
	m.count.fenced.Add(1)
	m.log.Debug().Err(err).Uint64("peer", uint64(m.hostLink.idx)).Msg("host message fenced")
	return true
}

// hostClosed handles the host's Close. A schema mismatch cannot heal by reconnecting: Run returns
// an error that names both schema tables.
func (m *memberRole) hostClosed(c *netmsg.Close) {
	if c.Code != CloseSchemaMismatch || m.fenced() {
		return
	}
	m.env.fail(fmt.Errorf("%w: this peer runs schema table %016x; the host (peer %d) refused it: %s",
		ErrSchemaMismatch, m.w.schemas.Fingerprint(), m.hostLink.idx, c.Reason))
}

// handle processes one decoded message from the host link.
func (m *memberRole) handle(t netmsg.Type, in *inbox, stamp uint64) error {
	if m.fenced() {
		return nil
	}
	w := m.w
	defer func() { m.heardAt = m.env.now() }() // after the limits judged the message
	if m.refusedSync == m.hostLink && t != netmsg.TypeHostSnapshot {
		// This host's sync snapshot was refused: nothing it says builds on it.
		m.count.dropped.Add(1)
		return nil
	}
	switch t {
	case netmsg.TypeHostSnapshot:
		err := m.snapshot(&in.snap)
		// A snapshot is rare (a join, an anti-entropy answer, a migration) and the largest message:
		// its decoded Peers and Spawns are let go, not kept for the next one. Every member kept the
		// room's whole peer list: quadratic in the room, 14 KiB a member at 256. (The payload its
		// HostState aliases is the reassembler's, which lets go of more than 1 MiB by itself.)
		in.snap = netmsg.HostSnapshot{}
		return err
	case netmsg.TypeHostCommands:
		m.applyCommands(&in.hc, stamp)
	case netmsg.TypePeerEntered:
		w.events = append(w.events, Event{Kind: EventPeerEntered, Peer: PeerIndex(in.pe.Peer.PeerIndex)})
	case netmsg.TypePeerExited:
		w.events = append(w.events, Event{Kind: EventPeerExited, Peer: PeerIndex(in.px.PeerIndex)})
	case netmsg.TypeEntityUpdates:
		if !m.hostStampOK(in.eu.Time) {
			return nil
		}
		applyUpdates(m.roleBase, &in.eu, w.host, func(Entity) bool { return true }, w.mergeRemoteWrite)
	case netmsg.TypeCrdtBatch:
		if Term(in.batch.Term) != w.term {
			m.count.fenced.Add(1)
			return nil
		}
		var rd crdt.Reader
		var cm crdt.Message
		for rd.Reset(in.batch.Messages); rd.Next(&cm) == nil; {
			if !m.hostMessageOK(&cm) {
				continue
			}
			w.mergeRemote(&cm, w.host)
		}
	case netmsg.TypeForget:
		for _, id := range in.forgt.NetworkIDs {
			if id>>32 == 0 {
				w.evict(Entity(id).Number())
				if m.delta != nil {
					m.delta.tab.forget(Entity(id).Number())
				}
			}
		}
	case netmsg.TypeDeltaUpdates:
		if !m.hostStampOK(in.du.Time) {
			return nil
		}
		m.applyDeltas(&in.du)
	case netmsg.TypeRelay:
		m.appMessage(PeerIndex(in.relay.Peer), uint8(in.relay.AppType), in.relay.Data)
	default:
		if t.IsApplication() {
			m.appMessage(w.host, uint8(t), in.app)
			return nil
		}
		m.count.dropped.Add(1)
	}
	return nil
}

// appMessage hands an application message from peer from to the app.
func (m *memberRole) appMessage(from PeerIndex, typ uint8, data []byte) {
	if mh, ok := m.app.(MessageHandler); ok {
		mh.Message(m.w, from, typ, data)
		return
	}
	m.count.dropped.Add(1)
}

// snapshot merges a HostSnapshot and answers it with this member's corrections.
func (m *memberRole) snapshot(snap *netmsg.HostSnapshot) error {
	w := m.w
	if PeerIndex(snap.HostPeerIndex) != w.host || PeerIndex(snap.LocalPeerIndex) != w.self {
		m.count.fenced.Add(1)
		return nil
	}
	st, reason := m.snapshotBounds(snap)
	if reason != "" {
		// Refused whole, merged nowhere, unanswered: a member that refused its sync snapshot
		// stays unsynced with this host, and takes nothing else from it, until signaling
		// announces another.
		m.refused(RefusedSnapshot, reason)
		if !m.synced {
			m.refusedSync = m.hostLink
		}
		return nil
	}
	m.refusedSync = nil
	// A member that holds a replica judges the snapshot's deletions as a host's later input.
	judge := m.holdsReplica()
	// An event or so per value (EventSpawned, EventUpdated): room for them at once, not by
	// doubling through a late join's 40,000 (afterEvent lets the room go again); no more than
	// maxEventRoom on a snapshot's word, which a host may fill with values that change nothing.
	w.events = slices.Grow(w.events, min(st.Values+1, maxEventRoom))
	info, corr, err := hostsnapshot.Apply(w.r, w.schemas, snap, func(cm *crdt.Message) crdt.Outcome {
		if judge && (cm.Type == crdt.DeleteEntity || cm.Type == crdt.DeleteEntityNetwork) && !m.hostMessageOK(cm) {
			return crdt.Ignored
		}
		return w.mergeRemote(cm, w.host)
	}, m.corr[:0])
	if err != nil {
		return err
	}
	m.corr = corr
	if Term(info.Term) != w.term {
		m.count.fenced.Add(1)
	} else {
		w.heldTerm = w.term
	}
	if len(corr) > 0 || !m.synced {
		// The answer to the sync snapshot is sent even when empty: it closes the host's window
		// for corrections to host entities.
		m.buf = netmsg.AppendCrdtBatch(m.buf[:0], &netmsg.CrdtBatch{Term: uint64(w.term), Messages: corr})
		m.env.send(m.hostLink, link.Reliable, m.buf)
	}
	if !m.synced {
		m.synced = true
		w.events = append(w.events, Event{Kind: EventSynced, Term: w.term, Peer: w.host})
		m.log.Info().Int("entities", w.Len()).Int("corrections", len(corr)).Str("cover", info.Cover.String()).Msg("synced")
		m.env.memberSynced()
	}
	return nil
}

// applyCommands merges a HostCommands stamped with the host's Lamport time.
func (m *memberRole) applyCommands(hc *netmsg.HostCommands, stamp uint64) {
	w := m.w
	if stamp > uint64(^uint32(0)) {
		m.count.dropped.Add(1)
		return
	}
	if !m.hostStampOK(stamp) {
		return
	}
	ts := crdt.Timestamp(stamp)
	spawned := map[Entity]bool{}
	for i := range hc.Spawns {
		sp := &hc.Spawns[i]
		s, ok := w.schemas.Lookup(schema.ID(sp.SchemaID))
		if !ok || sp.NetworkID>>32 != 0 {
			m.count.dropped.Add(1)
			continue
		}
		e := Entity(sp.NetworkID)
		if err := hostsnapshot.SpawnValues(s, sp.UpdateData, func(int, []byte) {}); err != nil {
			m.count.dropped.Add(1)
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
	for _, d := range hc.Despawns {
		if d.NetworkID>>32 == 0 {
			cm := crdt.Message{Type: crdt.DeleteEntity, Entity: Entity(d.NetworkID)}
			if !m.hostMessageOK(&cm) {
				continue
			}
			w.mergeRemote(&cm, w.host)
		}
	}
	for _, t := range hc.AuthorityTransfers {
		if t.NetworkID>>32 != 0 {
			continue
		}
		e := Entity(t.NetworkID)
		// TRNP's transfer names only the new author; the record kind follows from context: a
		// transfer in the HostCommands that spawns the entity makes an avatar, a transfer to the
		// host returns the entity to the host, any other is a lock.
		rec := authority.Record{Kind: authority.KindLock, Peer: PeerIndex(t.NewAuthorIndex)}
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
	for _, rpc := range hc.RPCs {
		m.app.RPC(w, w.host, rpc.Type, rpc.Data)
	}
	for _, a := range hc.Actions {
		deliverAction(m.roleBase, w.host, a)
	}
}

// maxHostSkew is how far above a member's clock a synced member takes its host's stamps: an
// honest host is ahead by the ticks since the member last heard it, far less than 2¹⁶ (18 minutes
// at 60 Hz); a host stamping beyond would freeze every later host (docs/protocol.md §5, "Limits").
const maxHostSkew = 1 << 16

// What a member takes in a host's snapshot, its first from a new host included
// (docs/protocol.md §5, "Limits"); beyond, the snapshot is refused whole.
const (
	// maxSnapshotBytes bounds what a snapshot carries (host state, spawn data, peer ids): half
	// the reassembly limit, almost 7× a full 65,535-entity world of three-property entities (73
	// bytes each in hostsnapshot's TestScaleFragmented).
	maxSnapshotBytes = 32 << 20
	// maxSnapshotValues bounds the values it carries (spawned values and stream messages), which
	// Apply indexes: 2²¹ is 65,536 entities of 32 properties.
	maxSnapshotValues = 1 << 21
	// syncClockRate widens the skew a member that holds a replica allows a snapshot's clock, per
	// second since it last heard a host: an honest room's clock moves far slower (20 ticks a
	// second, plus its members' writes), so a member that was away comes back; a new host may
	// still not jump its survivors' clocks by more than maxHostSkew plus the pause.
	syncClockRate = 1 << 12
	// maxFreshClock is the highest snapshot clock a member that holds nothing takes: it has no
	// clock to judge by, but a host must leave it 2²⁸ of the wire clock's headroom (52 days at
	// 60 Hz), never a saturated clock to carry into a later term.
	maxFreshClock = math.MaxUint32 - 1<<28
)

// holdsReplica reports whether the member has a clock to judge a host by: it is synced, or its
// replica holds a previous host's state (a survivor of a migration, a member back from a pause).
func (m *memberRole) holdsReplica() bool { return m.synced || m.w.r.Clock() > 0 }

// maxEventRoom bounds the room for events a member makes ahead of a snapshot's merge.
const maxEventRoom = 1 << 16

// snapshotBounds returns what a host snapshot carries and why it is beyond what this member
// takes, or "".
func (m *memberRole) snapshotBounds(snap *netmsg.HostSnapshot) (hostsnapshot.Stats, string) {
	st, err := hostsnapshot.Inspect(snap)
	if err != nil {
		return hostsnapshot.Stats{}, "" // Apply refuses it as malformed
	}
	switch {
	case st.Bytes > maxSnapshotBytes:
		return st, fmt.Sprintf("snapshot of %d bytes, more than %d", st.Bytes, maxSnapshotBytes)
	case st.Values > maxSnapshotValues:
		return st, fmt.Sprintf("snapshot of %d values, more than %d", st.Values, maxSnapshotValues)
	case st.MaxStamp > st.Clock:
		return st, fmt.Sprintf("snapshot stamps a value %d, above its own clock %d", st.MaxStamp, st.Clock)
	}
	if !m.holdsReplica() {
		if st.Clock > maxFreshClock {
			return st, fmt.Sprintf("snapshot clock %d leaves less than %d of the wire clock", st.Clock, uint64(math.MaxUint32-maxFreshClock))
		}
		return st, ""
	}
	if limit := m.hostClockLimit(); uint64(st.Clock) > limit {
		return st, fmt.Sprintf("snapshot clock %d more than %d above this member's clock %d", st.Clock, limit-uint64(m.w.r.Clock()), m.w.r.Clock())
	}
	return st, ""
}

// hostClockLimit is the highest stamp a member that holds a replica takes from a host: its clock
// plus maxHostSkew, plus syncClockRate a second since it last heard a host.
func (m *memberRole) hostClockLimit() uint64 {
	limit := uint64(m.w.r.Clock()) + maxHostSkew
	if !m.heardAt.IsZero() {
		limit += uint64(max(0, m.env.now().Sub(m.heardAt).Seconds()) * syncClockRate)
	}
	return limit
}

// hostStampOK reports whether the member takes a host stamp (any, when it holds nothing to judge
// by); a refusal is counted and logged.
func (m *memberRole) hostStampOK(stamp uint64) bool {
	if !m.holdsReplica() {
		return true
	}
	limit := uint64(m.w.r.Clock()) + maxHostSkew
	if !m.synced {
		limit = m.hostClockLimit()
	}
	if stamp <= limit {
		return true
	}
	m.refused(RefusedHostStamp, fmt.Sprintf("host stamp %d more than %d above this member's clock %d", stamp, limit-uint64(m.w.r.Clock()), m.w.r.Clock()))
	return false
}

// hostMessageOK applies hostStampOK to a host's CRDT message, and refuses the deletion of an entity
// number far above any version this member knows (0xffff on every number would leave no number to
// spawn for good) and of the reserved numbers.
func (m *memberRole) hostMessageOK(cm *crdt.Message) bool {
	switch cm.Type {
	case crdt.DeleteEntity, crdt.DeleteEntityNetwork:
		if cm.Entity.Number() < FirstSpawnNumber && cm.Entity != RoomEntity {
			m.refused(RefusedHostDeletion, fmt.Sprintf("host deletes reserved entity %v", cm.Entity))
			return false
		}
		if !m.holdsReplica() {
			return true
		}
		if int(cm.Entity.Version()) > int(m.w.knownVersion(cm.Entity.Number()))+maxVersionAhead {
			m.refused(RefusedHostDeletion, fmt.Sprintf("host deletes %v, far above any version of its number known here", cm.Entity))
			return false
		}
		return true
	}
	return m.hostStampOK(uint64(cm.Timestamp))
}

// refused counts an input from the host refused by the limits, with a rate-limited warning.
func (m *memberRole) refused(why Refusal, reason string) {
	m.count.refuse(why)
	if m.refusedLog++; m.refusedLog <= 10 || m.refusedLog%1000 == 0 {
		m.log.Warn().Uint64("host", uint64(m.w.host)).Str("reason", why.String()).Uint64("count", m.refusedLog).Msg("host input refused: " + reason)
	}
}

// applyDeltas merges a DeltaUpdates from the host (docs/protocol.md §2.10): every value whole or
// rebuilt from the value an earlier datagram carried, which this member kept. A value whose
// baseline it does not hold is dropped (Status.DeltaMissed), an update it cannot read is dropped
// whole (Status.Dropped); either way the datagram is not acknowledged, so the host builds on
// nothing of it.
func (m *memberRole) applyDeltas(du *netmsg.DeltaUpdates) {
	w := m.w
	if du.Time > math.MaxUint32 || du.Seq == 0 {
		m.count.dropped.Add(1)
		return
	}
	x := m.delta
	if x == nil || x.link != m.hostLink {
		x = &deltaRx{link: m.hostLink}
		m.delta = x
	}
	x.received(du.Seq)
	ts := crdt.Timestamp(du.Time)
	var cm crdt.Message
	for k := range du.Updates {
		u := &du.Updates[k]
		e := Entity(u.NetworkID)
		in := w.ents[e]
		if u.NetworkID>>32 != 0 || in == nil || u.CheckMask(len(in.schema.Properties)) != nil {
			m.count.dropped.Add(1) // not spawned here yet (the unreliable channel overtook it), or bad
			x.spoil(du.Seq)
			continue
		}
		s := in.schema
		de := x.tab.get(e, len(s.Properties), true)
		if !x.rebuild(s, de, u, du.Seq) {
			m.count.dropped.Add(1)
			x.spoil(du.Seq)
			continue
		}
		k := 0
		for msk := u.Mask; msk != 0; msk &= msk - 1 {
			i := bits.TrailingZeros32(msk)
			sp := x.spans[k]
			k++
			if sp.a < 0 {
				m.count.deltaMissed.Add(1)
				x.spoil(du.Seq)
				continue
			}
			if sp.delta {
				m.count.deltas.Add(1)
			}
			v := x.vals[sp.a:sp.b:sp.b]
			if s.Properties[i].DeltaCapable() {
				de.rings[i].put(du.Seq, v)
			}
			cm = crdt.Message{Type: crdt.PutComponent, Entity: e, Component: s.Properties[i].Component, Timestamp: ts, Data: v}
			w.mergeRemoteWrite(&cm, w.host)
		}
	}
}
