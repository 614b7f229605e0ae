package peer

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// What the host sends: the open batch's commands (reliable) after every step, and the members'
// dirty properties (unreliable) at the network rate. The changeSink methods fill both.

// outbox is the host's one send path. It holds the open batch (the changes of this step, sent
// as one reliable payload by sendCommands, and the reliable application messages after them),
// the shared change list of the host's own writes and the members' own dirty sets (sent as
// EntityUpdates by flushUpdates), and the scratch of both. The host's own messages and members'
// relayed ones leave through deliver. It reads the members through members and what each
// follows through interest, and counts refused relays through gate.
type outbox struct {
	roleBase
	members  *members
	interest *interest
	gate     *gate

	// Changes of the open batch, sent as one payload by sendCommands.
	spawns    []Entity
	despawns  []Entity
	transfers []netmsg.AuthorityTransfer
	rpcs      []netmsg.RPC
	actions   []netmsg.Action
	msgs      []queuedMessage // reliable application messages, sent after the commands
	entered   []netmsg.PeerInfo
	exited    []PeerIndex
	relay     []byte // CRDT messages TRNP cannot carry
	// shared is the properties the host wrote since the last flush (entity → property mask),
	// one change list for every member; hostMember.dirty holds each member's exceptions.
	shared map[Entity]uint32
	// hist is the values sent to members that take deltas, shared by them (delta.go).
	hist deltaHist

	hc    netmsg.HostCommands
	arena []byte
	upd   updater
	// recSize is the length of the last flush's shared recording, the next one's capacity hint.
	recSize int
	// dgrams is replay's scratch: the datagrams of a recording, for one call to a link.
	dgrams [][]byte
	// The command payloads for members that follow everything (cmdAll) and for one that follows
	// part (cmdPart, relayPart).
	cmdAll, cmdPart, relayPart []byte
	flushes                    int // updates flushes, for farEvery
	// dirtyLeft is false only when no member's dirty or later set holds anything: every write
	// to them sets it (flushShared, propChanged), the walk of flushUpdates clears it when it
	// leaves them all empty. An idle room's flush then walks none of its members: it ran 20
	// times a second over every member, a quarter of an idle host's CPU at 256 members.
	dirtyLeft bool
	walks     int // flushes that walked the members (TestIdleHostFlushWalksNoMember)
}

// flushCommands re-stamps what rejected writes left to re-assert (into the relay stream), then
// sends the open batch.
func (h *hostRole) flushCommands() {
	h.relay = h.restamp(h.relay, h.ownerPending)
	h.sendCommands()
}

// sendCommands sends the open batch's spawns, despawns, authority transfers, RPCs, membership
// changes and relayed CRDT messages to every synced member, as one reliable payload.
func (o *outbox) sendCommands() {
	if len(o.spawns)+len(o.despawns)+len(o.transfers)+len(o.rpcs)+len(o.actions)+len(o.entered)+len(o.exited)+len(o.relay)+len(o.msgs) == 0 {
		return
	}
	pol, _ := o.interest.policy()
	built := false
	// In a crowd the commands of many steps share one reliable message per member until the next
	// network flush: a burst of joins is a spawn and an entered message per join for every
	// member, O(members²) messages, each a datagram to encrypt, send, receive and acknowledge.
	coalesce := len(o.members.mems) >= coalesceMembers
	for _, hm := range o.members.mems {
		if !hm.snapshotSent {
			continue
		}
		if hm.visible == nil {
			// One payload for every member that follows everything, built once.
			if !built {
				o.cmdAll, built = o.commandPayload(o.cmdAll[:0], nil), true
			}
			if len(o.cmdAll) > 0 {
				if coalesce {
					o.env.queue(hm.link, o.cmdAll)
				} else {
					o.env.send(hm.link, link.Reliable, o.cmdAll)
				}
			}
			continue
		}
		entered := o.interest.widen(hm, pol, o.spawns, o.transfers)
		o.cmdPart = o.commandPayload(o.cmdPart[:0], hm)
		if len(o.cmdPart) > 0 {
			o.env.send(hm.link, link.Reliable, o.cmdPart)
		}
		o.interest.enter(hm, entered)
	}
	o.flushMessages()
	o.spawns, o.despawns, o.transfers, o.rpcs, o.actions = o.spawns[:0], o.despawns[:0], o.transfers[:0], nil, nil
	o.entered, o.exited, o.relay = o.entered[:0], o.exited[:0], o.relay[:0]
}

// coalesceMembers is the room size (members with a link to the host) from which the host holds
// the commands it broadcasts for the next network flush (at most NetworkInterval) rather than
// sending them after every step. Anything else the host sends a member on the reliable channel
// sends what is held first, so the order members see is unchanged.
const coalesceMembers = 32

// commandPayload appends the open batch's commands, membership changes and relayed CRDT
// messages, as member hm follows them (nil: everything), to buf.
func (o *outbox) commandPayload(buf []byte, hm *hostMember) []byte {
	w := o.w
	if len(o.spawns)+len(o.despawns)+len(o.transfers)+len(o.rpcs)+len(o.actions) > 0 {
		stamp := w.stamp
		if stamp == 0 {
			stamp = w.r.Clock()
		}
		buf = netmsg.AppendStamp(buf, &netmsg.Stamp{Time: uint64(stamp)})
		buf = netmsg.AppendHostCommands(buf, o.commands(hm))
	}
	for i := range o.entered {
		buf = netmsg.AppendPeerEntered(buf, &netmsg.PeerEntered{Peer: o.entered[i]})
	}
	for _, idx := range o.exited {
		buf = netmsg.AppendPeerExited(buf, &netmsg.PeerExited{PeerIndex: uint64(idx)})
	}
	relay := o.relay
	if hm != nil && len(relay) > 0 {
		o.relayPart = filterRelay(o.relayPart[:0], relay, hm)
		relay = o.relayPart
	}
	if len(relay) > 0 {
		buf = netmsg.AppendCrdtBatch(buf, &netmsg.CrdtBatch{Term: uint64(w.term), Messages: relay})
	}
	return buf
}

// commands fills o.hc with the open batch's spawns, despawns, transfers and RPCs, of the entities
// member hm follows (nil: every entity). Each spawned property is read from the replica once.
func (o *outbox) commands(hm *hostMember) *netmsg.HostCommands {
	w := o.w
	hc := &o.hc
	hc.Spawns, hc.Despawns, hc.AuthorityTransfers = hc.Spawns[:0], hc.Despawns[:0], hc.AuthorityTransfers[:0]
	o.arena = o.arena[:0]
	type span struct{ a, b int }
	var spans []span
	var vals [32][]byte
	for _, e := range o.spawns {
		in := w.ents[e]
		if in == nil || hm != nil && !hm.sees(e.Number()) {
			continue
		}
		var mask uint32
		for i, prop := range in.schema.Properties {
			if v, _, ok, del := w.r.Get(e, prop.Component); ok && !del {
				mask |= 1 << i
				vals[i] = v
			}
		}
		a := len(o.arena)
		o.arena = hostsnapshot.AppendSpawnUpdate(o.arena, in.schema, mask, func(i int) []byte { return vals[i] })
		spans = append(spans, span{a, len(o.arena)})
		hc.Spawns = append(hc.Spawns, netmsg.Spawn{NetworkID: uint64(e), SchemaID: uint32(in.schema.ID), CreationData: in.creation})
	}
	clear(vals[:])
	for i := range hc.Spawns {
		hc.Spawns[i].UpdateData = o.arena[spans[i].a:spans[i].b]
	}
	for _, e := range o.despawns {
		if hm == nil || hm.sees(e.Number()) {
			hc.Despawns = append(hc.Despawns, netmsg.Despawn{NetworkID: uint64(e)})
		}
	}
	for _, t := range o.transfers {
		if hm == nil || hm.sees(Entity(t.NetworkID).Number()) {
			hc.AuthorityTransfers = append(hc.AuthorityTransfers, t)
		}
	}
	hc.RPCs, hc.Actions = o.rpcs, o.actions
	return hc
}

// flushUpdates sends every member its dirty properties as EntityUpdates datagrams.
//
// What the host wrote since the last flush is one change list, o.shared, the same for every
// member: the host builds its datagrams once, through the first ready member's link, and sends
// the same bytes to every other ready member. Each member's own dirty set holds only its
// exceptions (relayed writes of other members, what an earlier flush did not send it), sent
// through updater.send on their own after the shared datagrams.
func (o *outbox) flushUpdates() {
	o.interest.updateInterest()
	if len(o.shared) > 0 {
		o.flushShared()
		o.dirtyLeft = true
	}
	o.flushes++
	if !o.dirtyLeft {
		return
	}
	o.walks++
	far, left := o.flushes%farEvery == 0, false
	for _, hm := range o.members.mems {
		if far && len(hm.later) > 0 {
			orInto(hm.dirty, hm.later)
			clear(hm.later)
		}
		if hm.snapshotSent {
			o.upd.send(o.roleBase, hm.link, hm.dirty, nil, hm.delta)
		}
		left = left || len(hm.dirty) > 0 || len(hm.later) > 0
	}
	o.dirtyLeft = left
}

// flushShared sends o.shared to every synced member and empties it. How a member takes it
// depends on its kind (shareKind): the members that take whole values share one recording of
// the datagrams; the others take it into their own dirty sets, or (deltas) their own datagrams.
// A member keeps what a send left (past MaxDatagramsPerFlush) in its own dirty set.
func (o *outbox) flushShared() {
	var lead *hostMember
	deltas := false
	for _, hm := range o.members.mems {
		if !hm.snapshotSent {
			continue
		}
		switch hm.shareKind() {
		case sharePart:
			// Its part of the world, through its own dirty set.
			for e, mask := range o.shared {
				if hm.visible[e.Number()] {
					hm.dirty[e] |= mask
				}
			}
		case shareNear:
			// Its own interest now, the rest of the world every farEvery-th flush.
			if hm.later == nil {
				hm.later = make(map[Entity]uint32)
			}
			for e, mask := range o.shared {
				if hm.near[e.Number()] {
					hm.dirty[e] |= mask
				} else {
					hm.later[e] |= mask
				}
			}
		case shareNotReady:
			orInto(hm.dirty, o.shared)
		case shareDeltas:
			deltas = true
		case shareWhole:
			if lead == nil {
				lead = hm
			}
		}
	}
	if lead == nil && !deltas {
		clear(o.shared)
		return
	}
	// The values are read from the replica once, for every member.
	u := &o.upd
	u.collect(o.roleBase, o.shared)
	defer u.release()
	if lead != nil {
		// Record the datagrams as (length u16, bytes) frames in a buffer of this flush's own, never
		// written again once emit returns: every member's link, the lead's too, takes the same
		// bytes by reference (link.OwnedSender) instead of a copy each; the GC frees the buffer
		// once they are all done with it.
		rec := make([]byte, 0, o.recSize+o.recSize/8)
		n := u.emit(o.roleBase, lead.link, &rec, nil)
		o.recSize = len(rec)
		for _, hm := range o.members.mems {
			if !hm.snapshotSent || hm.shareKind() != shareWhole || !o.replay(hm, rec) {
				continue
			}
			keepItems(hm.dirty, u.items[n:]) // what the send left
		}
	}
	if deltas {
		// Members that take deltas: their own datagrams, encoded against what each acknowledged.
		for _, hm := range o.members.mems {
			if !hm.snapshotSent || hm.shareKind() != shareDeltas {
				continue
			}
			n := u.emit(o.roleBase, hm.link, nil, hm.delta)
			keepItems(hm.dirty, u.items[n:])
		}
	}
	clear(o.shared)
}

// shareKind is how a synced member takes the host's shared change list (flushShared).
type shareKind uint8

const (
	// sharePart: it follows part of the world (interest), so the change list is filtered into
	// its own dirty set.
	sharePart shareKind = iota
	// shareNear: the successor, which follows everything; its own interest goes into its dirty
	// set now, the rest into later, sent every farEvery-th flush.
	shareNear
	// shareNotReady: its link is not ready; everything waits in its own dirty set.
	shareNotReady
	// shareDeltas: it takes deltas, encoded for it against what it acknowledged.
	shareDeltas
	// shareWhole: it takes whole values: the datagrams recorded once, replayed to each.
	shareWhole
)

// shareKind returns how hm takes the shared change list; the order of the tests is the order of
// precedence.
func (hm *hostMember) shareKind() shareKind {
	switch {
	case hm.visible != nil:
		return sharePart
	case hm.near != nil:
		return shareNear
	case !hm.link.ready:
		return shareNotReady
	case hm.delta != nil:
		return shareDeltas
	default:
		return shareWhole
	}
}

// keepItems adds the properties of items to dirty.
func keepItems(dirty map[Entity]uint32, items []updItem) {
	for _, it := range items {
		dirty[it.e] |= it.mask
	}
}

// orInto adds src's property masks to dst's.
func orInto(dst, src map[Entity]uint32) {
	for e, mask := range src {
		dst[e] |= mask
	}
}

// replay sends hm the recorded datagrams, owned (rec is flushShared's recording), in one call to
// its link. False means the send failed (and dropped the link).
func (o *outbox) replay(hm *hostMember, rec []byte) bool {
	dgrams := o.dgrams[:0]
	for len(rec) >= 2 {
		n := int(binary.LittleEndian.Uint16(rec))
		dgrams = append(dgrams, rec[2:2+n:2+n])
		rec = rec[2+n:]
	}
	o.env.sendOwned(hm.link, link.Unreliable, dgrams)
	clear(dgrams) // the recording is the links' now; keep no reference to it
	o.dgrams = dgrams[:0]
	return !hm.link.closing
}

// deliver sends q's frame on ch: a reliable frame after this step's commands (flushMessages), so
// that a message never overtakes the state change before it; an unreliable one at once. The
// host's own messages and its members' relayed ones leave here alike.
func (o *outbox) deliver(q queuedMessage, ch link.Channel) {
	if ch == link.Reliable {
		o.msgs = append(o.msgs, q)
		return
	}
	o.sendNow(q, ch)
}

// sendNow sends q's frame on ch to its recipients: a relayed copy to its member within the relay
// backlog (sendRelayed), the host's own to member q.to (or every synced member but q.except).
func (o *outbox) sendNow(q queuedMessage, ch link.Channel) {
	if q.relayed {
		if dm := o.members.synced(q.to); dm != nil {
			o.sendRelayed(dm, q.except, ch, q.frame)
		}
		return
	}
	for idx, hm := range o.members.mems {
		if hm.snapshotSent && idx != q.except && (q.to == Everyone || q.to == idx) {
			o.env.send(hm.link, ch, q.frame)
		}
	}
}

// flushMessages sends the queued reliable messages; sendCommands calls it after the commands.
func (o *outbox) flushMessages() {
	for _, q := range o.msgs {
		o.sendNow(q, link.Reliable)
	}
	clear(o.msgs)
	o.msgs = o.msgs[:0]
}

// sendRelayed sends a relayed copy from member from to dm now, unless dm's queue on ch is past
// its relay backlog: then the copy is dropped and counted.
func (o *outbox) sendRelayed(dm *hostMember, from PeerIndex, ch link.Channel, frame []byte) {
	limit := uint64(o.cfg.RelayBacklog)
	if ch == link.Unreliable {
		limit = unreliableRelayBacklog
	}
	if dm.link.l != nil {
		if buffered := dm.link.l.Stats().Channels[ch].Buffered; buffered > limit {
			o.gate.noteRefused(from, RefusedRelayBacklog, fmt.Sprintf("relay to member %d, whose %s queue holds %d bytes (relay backlog %d)", dm.link.idx, ch, buffered, limit))
			return
		}
	}
	o.env.send(dm.link, ch, frame)
}

func (h *hostRole) rpc(hm *hostMember, rpc netmsg.RPC) error {
	idx := hm.link.idx
	if rpc.Type < FirstSystemRPC {
		if h.appAllowed(hm) {
			h.app.RPC(h.w, idx, rpc.Type, rpc.Data)
		}
		return nil
	}
	if rpc.Type == rpcAppend {
		if h.appAllowed(hm) {
			return h.appendRequested(hm, rpc.Data)
		}
		return nil
	}
	if len(rpc.Data) != 4 {
		h.count.dropped.Add(1)
		return nil
	}
	e := Entity(binary.LittleEndian.Uint32(rpc.Data))
	switch rpc.Type {
	case rpcLockRequest:
		t, err := h.auth.RequestLock(idx, e, h.env.now())
		if err != nil {
			h.log.Debug().Err(err).Uint64("peer", uint64(idx)).Msg("lock refused")
			return nil
		}
		if t.From != t.To {
			h.authorityLost(e, t.From)
			h.w.writeAuthority(e, authority.Record{Kind: authority.KindLock, Peer: idx})
		}
	case rpcRelinquish:
		if _, err := h.auth.Relinquish(idx, e); err == nil {
			h.authorityLost(e, idx)
			h.w.writeAuthority(e, authority.Record{})
		}
	default:
		h.count.dropped.Add(1)
	}
	return nil
}

// changeSink: the host turns accepted changes into traffic.

func (h *hostRole) broadcastRPC(typ uint32, data []byte) error {
	if typ >= FirstSystemRPC {
		return ErrNoAuthority
	}
	h.rpcs = append(h.rpcs, netmsg.RPC{Type: typ, Data: append([]byte(nil), data...)})
	return nil
}

func (h *hostRole) sendRPC(uint32, []byte, bool) error { return ErrNotHost }

// propChanged marks a property to send: the host's own write in the shared change list, a
// relayed write in every member's dirty set but its author's.
func (h *hostRole) propChanged(e Entity, prop int, origin PeerIndex) {
	h.touch(e)
	if origin == 0 {
		h.shared[e] |= 1 << prop
		return
	}
	for idx, hm := range h.mems {
		if hm.snapshotSent && idx != origin && hm.sees(e.Number()) {
			hm.dirty[e] |= 1 << prop
			h.dirtyLeft = true
		}
	}
}

func (h *hostRole) spawned(e Entity, origin PeerIndex) {
	h.touch(e)
	if origin == 0 {
		h.spawns = append(h.spawns, e)
		return
	}
	h.relayEntity(e)
}

func (h *hostRole) despawned(e Entity, origin PeerIndex) {
	h.touch(e)
	h.auth.Despawn(e)
	h.hist.forget(e.Number())
	delete(h.shared, e)
	for _, hm := range h.mems {
		delete(hm.dirty, e)
		delete(hm.later, e)
	}
	h.despawns = append(h.despawns, e)
}

func (h *hostRole) authorityChanged(e Entity, rec authority.Record, origin PeerIndex) {
	h.touch(e)
	if origin != 0 {
		// A correction restored a record: adopt it, and relay the exact record.
		_ = h.auth.Restore(e, rec, h.env.now())
		h.relayKey(e, 2)
		return
	}
	to := h.w.self
	if rec.Kind != authority.KindHost {
		to = rec.Peer
	}
	h.transfers = append(h.transfers, netmsg.AuthorityTransfer{NetworkID: uint64(e), NewAuthorIndex: uint64(to)})
}

func (h *hostRole) otherChanged(m *crdt.Message, origin PeerIndex) {
	h.touch(m.Entity)
	h.relay = crdt.AppendMessage(h.relay, m)
}

// relayEntity relays every entry of an entity that arrived as a correction (exact CRDT messages).
func (o *outbox) relayEntity(e Entity) {
	o.w.r.Range(func(en crdt.Entry) bool {
		if en.Entity == e {
			o.relay = appendEntry(o.relay, en)
		}
		return en.Entity <= e
	})
}

func (o *outbox) relayKey(e Entity, c crdt.ComponentID) {
	data, ts, ok, deleted := o.w.r.Get(e, c)
	if ok {
		o.relay = appendEntry(o.relay, crdt.Entry{Entity: e, Component: c, Timestamp: ts, Deleted: deleted, Data: data})
	}
}

func appendEntry(dst []byte, en crdt.Entry) []byte {
	m := crdt.Message{Type: crdt.PutComponent, Entity: en.Entity, Component: en.Component, Timestamp: en.Timestamp, Data: en.Data}
	if en.Deleted {
		m.Type, m.Data = crdt.DeleteComponent, nil
	}
	return crdt.AppendMessage(dst, &m)
}

// wirePeerID makes an identity fit TRNP's peer id (≤ 256 bytes of UTF-8): signaling admits
// "user/device" of up to 257 bytes, so cut at a character boundary.
func wirePeerID(id string) string {
	if netmsg.ValidPeerID(id) == nil {
		return id
	}
	b := []byte(strings.ToValidUTF8(id, "\uFFFD"))
	for len(b) > netmsg.MaxPeerIDLen {
		_, size := utf8.DecodeLastRune(b)
		b = b[:len(b)-size]
	}
	return string(b)
}
