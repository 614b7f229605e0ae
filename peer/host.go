package peer

import (
	"bytes"
	"encoding/binary"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// hostRole is the state a peer keeps while it is the host. The loop owns it.
type hostRole struct {
	p    *Peer
	w    *World
	auth *authority.Table

	// Changes of the open batch, sent as one payload by flushCommands.
	spawns    []Entity
	despawns  []Entity
	transfers []netmsg.AuthorityTransfer
	rpcs      []netmsg.RPC
	entered   []netmsg.PeerInfo
	exited    []PeerIndex
	relay     []byte // CRDT messages TRNP cannot carry

	changed   []time.Time // per bucket: when it last changed here
	rejectLog int
	reassert  map[Entity]bool         // entities to re-stamp after rejected writes
	restamped map[uint64]restampedKey // keys restamp rewrote, until their author writes again

	hc    netmsg.HostCommands
	eu    netmsg.EntityUpdates
	pc    netmsg.PeerCommands
	snap  netmsg.HostSnapshot
	dig   digestMsg
	own   []uint64
	ownAt uint64 // Replica.Changes() when own was computed
	arena []byte
}

func newHostRole(p *Peer) *hostRole {
	return &hostRole{p: p, w: p.w, changed: make([]time.Time, p.cfg.Buckets)}
}

// start makes this peer the host: rebuild authority from the replica, let go of members that are
// gone, and resume the simulation with the clock above everything seen.
func (h *hostRole) start() {
	p, w := h.p, h.w
	if s := p.standby; s != nil {
		// This peer is the host now: its own standby link has no use.
		p.standby = nil
		if p.remotes[s.idx] == s {
			delete(p.remotes, s.idx)
		}
		go s.close()
	}
	now := p.cfg.Now()
	w.isHost = true
	w.sink = h
	h.auth = authority.New(authority.PeerIndex(w.self), authority.Config{})
	for e, in := range w.ents {
		if in.auth.Kind != authority.KindHost {
			if err := h.auth.Restore(authority.EntityID(e), in.auth, now); err != nil {
				p.log.Warn().Err(err).Uint64("entity", uint64(e)).Msg("authority record not restored")
			}
		}
	}
	// Members that are gone lose their avatars and locks, but not at once: this peer may have
	// been elected by a signaling server that was losing its sockets one by one, and that view
	// of who is in the room would delete the avatars of members that are only cut off from
	// signaling; a deletion is final. Members that are in the room by then, or linked and
	// heard, stay.
	h.sweepLater()
	// A lock this peer held as a member is now plain host ownership.
	for e, in := range w.ents {
		if in.auth.Kind == authority.KindLock && PeerIndex(in.auth.Peer) == w.self {
			w.writeAuthority(e, authority.Record{})
		}
	}
	p.log.Info().Int("entities", w.Len()).Uint32("clock", uint32(w.r.Clock())).Msg("now hosting")
	p.app.HostStart(w)
	if p.cfg.Kind != signaling.KindHost {
		if _, ok := w.AvatarOf(w.self); !ok {
			h.spawnAvatar(PeerInfo{Index: w.self, ID: string(signaling.NewIdentity(p.cfg.User, p.cfg.Device)), Kind: string(p.cfg.Kind)})
		}
	}
	w.events = append(w.events, Event{Kind: EventSynced, Term: w.term, Peer: w.self})
}

// sweepGone takes the members that own avatars or locks but are not in the room (as signaling
// says) and have no open link to this host as gone. Without signaling it does nothing: absence
// from a room nobody can see proves nothing.
func (h *hostRole) sweepGone() {
	p, w := h.p, h.w
	if p.sig == nil {
		return
	}
	gone := map[PeerIndex]bool{}
	for _, in := range w.ents {
		if in.auth.Kind != authority.KindHost {
			idx := PeerIndex(in.auth.Peer)
			if _, ok := p.members[idx]; ok || idx == w.self {
				continue
			}
			if r := p.remotes[idx]; r != nil && r.ready && p.host == h {
				continue
			}
			gone[idx] = true
		}
	}
	for idx := range gone {
		p.log.Info().Uint64("member", uint64(idx)).Msg("member gone: not in the room")
		h.memberLeft(idx)
	}
}

// sweepLater runs sweepGone once the members have had ResumeSettle to resume.
func (h *hostRole) sweepLater() {
	p := h.p
	p.after(p.cfg.ResumeSettle, func() {
		if p.host == h {
			h.sweepGone()
		}
	})
}

func (h *hostRole) stop() {
	for idx, r := range h.p.remotes {
		r.close()
		delete(h.p.remotes, idx)
	}
}

func (h *hostRole) spawnAvatar(info PeerInfo) {
	e, err := h.p.app.SpawnAvatar(h.w, info)
	if err != nil {
		h.p.log.Warn().Err(err).Uint64("member", uint64(info.Index)).Msg("avatar not spawned")
		return
	}
	if e == 0 && !h.w.Exists(e) {
		return
	}
	if _, err := h.auth.SetAvatar(authority.EntityID(e), authority.PeerIndex(info.Index)); err != nil {
		h.p.log.Warn().Err(err).Msg("avatar authority refused")
		return
	}
	h.w.writeAuthority(e, authority.Record{Kind: authority.KindAvatar, Peer: authority.PeerIndex(info.Index)})
}

// memberLeft despawns the member's avatars and returns its locks to the host.
func (h *hostRole) memberLeft(idx PeerIndex) {
	if r := h.p.remotes[idx]; r != nil {
		delete(h.p.remotes, idx)
		go r.close()
	}
	avatars, released := h.auth.Leave(authority.PeerIndex(idx))
	for e, in := range h.w.ents { // avatars the table did not know (restored state)
		if in.auth.Kind == authority.KindAvatar && PeerIndex(in.auth.Peer) == idx {
			avatars = append(avatars, authority.EntityID(e))
		}
	}
	for _, e := range avatars {
		if h.w.Exists(Entity(e)) {
			_ = h.w.Despawn(Entity(e))
		}
	}
	for _, t := range released {
		h.w.writeAuthority(Entity(t.Entity), authority.Record{})
	}
	h.exited = append(h.exited, idx)
}

// signalingLeft handles signaling's word that member idx left the room. A member whose link to
// this host is still up has only lost its signaling socket (a network fault on signaling's side;
// it redials and resumes its index): it keeps its avatar and locks until its link closes too.
// Despawning it now would delete its avatar for good, everywhere.
func (h *hostRole) signalingLeft(idx PeerIndex) {
	if r := h.p.remotes[idx]; r != nil && r.ready {
		h.p.log.Info().Uint64("member", uint64(idx)).Msg("member left signaling but its link is up: kept while it is heard")
		h.confirmGone(idx)
		return
	}
	h.memberLeft(idx)
}

// confirmGone takes member idx, which signaling no longer lists, as gone once it has been silent
// on its link for a while: a member cut off from signaling alone still sends its digests (every
// DigestInterval) and pings (every ReportInterval). A crashed member's link takes the ICE timeout
// to close; this does not wait for it.
func (h *hostRole) confirmGone(idx PeerIndex) {
	p := h.p
	silence := 2 * max(p.cfg.DigestInterval, p.cfg.ReportInterval)
	p.after(silence, func() {
		if p.host != h {
			return
		}
		if _, listed := p.members[idx]; listed {
			return // resumed
		}
		r := p.remotes[idx]
		if r == nil {
			return // its link closed: linkClosed took it as gone, or signaling is down
		}
		if r.ready && p.cfg.Now().Sub(r.lastHeard) < silence {
			h.confirmGone(idx)
			return
		}
		p.log.Info().Uint64("member", uint64(idx)).Msg("member gone: not in the room and silent")
		h.memberLeft(idx)
	})
}

// linkClosed: a member that signaling no longer lists, and whose link is now gone too, has left.
// A member still listed may reconnect; so may anyone while signaling is down (absence from a
// room nobody can see proves nothing).
func (h *hostRole) linkClosed(r *remote) {
	if _, listed := h.p.members[r.idx]; !listed && h.p.sig != nil && r.ready {
		h.memberLeft(r.idx)
	}
}

func (h *hostRole) tick(now time.Time) {
	for _, t := range h.auth.Expire(now) {
		h.p.log.Info().Uint64("entity", uint64(t.Entity)).Uint64("holder", uint64(t.From)).Msg("lock expired")
		h.w.writeAuthority(Entity(t.Entity), authority.Record{})
	}
}

// handle processes one message from member r.
func (h *hostRole) handle(r *remote, m netmsg.Message) error {
	p := h.p
	h.auth.Touch(authority.PeerIndex(r.idx), p.cfg.Now())
	switch m.Type {
	case netmsg.TypeHello:
		var hello netmsg.Hello
		if _, err := netmsg.ConsumeHello(m.Raw, &hello); err != nil {
			return err
		}
		if hello.SchemaFingerprint != h.w.schemas.Fingerprint() {
			p.send(r, link.Reliable, netmsg.AppendClose(nil, &netmsg.Close{Code: CloseSchemaMismatch, Reason: "schema table differs from the host's"}))
			p.log.Warn().Uint64("member", uint64(r.idx)).Msg("member runs another schema table; refused")
			return nil
		}
		if PeerIndex(hello.PeerIndex) != r.idx {
			return errMalformed
		}
		r.helloed = true
		mem := p.members[r.idx]
		r.info = PeerInfo{Index: r.idx, ID: string(mem.ID), Kind: string(mem.Kind)}
	case typeDigest:
		if !r.helloed {
			return errMalformed
		}
		if err := parseDigest(m.Body, &h.dig); err != nil {
			return err
		}
		if r.snapshotSent {
			// A member sends its next digest after its corrections, on the same ordered
			// channel: its answer to the sync snapshot is in, and the window in which its
			// corrections may carry host entities closes.
			r.answered = true
			r.acceptRelayed = false
		}
		h.answerDigest(r)
	case netmsg.TypePeerCommands:
		if _, err := netmsg.ConsumePeerCommands(m.Raw, &h.pc); err != nil {
			return err
		}
		for _, rpc := range h.pc.RPCs {
			h.rpc(r, rpc)
		}
	case netmsg.TypeEntityUpdates:
		if !r.snapshotSent {
			return nil
		}
		if _, err := netmsg.ConsumeEntityUpdates(m.Raw, &h.eu); err != nil {
			return err
		}
		p.applyUpdates(&h.eu, r.idx, func(e Entity) bool { return h.admit(r, e, crdt.Timestamp(h.eu.Time)) }, h.mergeWrite)
	case netmsg.TypeCrdtBatch:
		var b netmsg.CrdtBatch
		if _, err := netmsg.ConsumeCrdtBatch(m.Raw, &b); err != nil {
			return err
		}
		h.corrections(r, &b)
	default:
		p.count.dropped.Add(1)
	}
	return nil
}

// admit checks a member's write stamped ts, logs a refusal, and re-asserts the host's state of the
// entity so that the member (which keeps its own write, stamped higher) converges back.
func (h *hostRole) admit(r *remote, e Entity, ts crdt.Timestamp) bool {
	err := h.auth.AdmitWrite(authority.PeerIndex(r.idx), authority.EntityID(e))
	if err == nil {
		return true
	}
	h.rejected(r, e, ts, err)
	return false
}

// maxClockSkew bounds how far above its own clock the host follows a timestamp it rejected: a
// member writing from a stale lock is a few ticks ahead; one claiming 2^31 is broken or hostile
// and only poisons its own replica.
const maxClockSkew = 1 << 20

func (h *hostRole) rejected(r *remote, e Entity, ts crdt.Timestamp, err error) {
	h.p.count.rejected.Add(1)
	if h.rejectLog < 20 || h.rejectLog%1000 == 0 {
		h.p.log.Warn().Err(err).Uint64("member", uint64(r.idx)).Uint64("entity", uint64(e)).Msg("write rejected")
	}
	h.rejectLog++
	if uint64(ts) > uint64(h.w.r.Clock())+maxClockSkew {
		return
	}
	h.w.r.ObserveClock(ts)
	if h.reassert == nil {
		h.reassert = make(map[Entity]bool)
	}
	h.reassert[e] = true
}

// restamp rewrites every entry of the entities queued by rejected with the open batch's stamp
// (above every rejected write) and relays them, so that every replica takes the host's state.
func (h *hostRole) restamp() {
	if len(h.reassert) == 0 {
		return
	}
	w := h.w
	var now map[Entity]bool
	for e := range h.reassert {
		if h.ownerPending(e) {
			continue // kept for a later batch
		}
		if now == nil {
			now = make(map[Entity]bool)
		}
		now[e] = true
		delete(h.reassert, e)
	}
	if len(now) == 0 {
		return
	}
	var entries []crdt.Entry
	for e := range now {
		w.r.RangeEntity(e, func(en crdt.Entry) bool {
			en.Data = append([]byte(nil), en.Data...)
			entries = append(entries, en)
			return true
		})
	}
	if len(entries) == 0 {
		return
	}
	ts := w.batchStamp()
	if h.restamped == nil || len(h.restamped) > maxRestamped {
		h.restamped = make(map[uint64]restampedKey)
	}
	for _, en := range entries {
		w.r.WriteAt(en.Entity, en.Component, ts, en.Data, en.Deleted)
		k := entryKey(en.Entity, en.Component)
		before := en.Timestamp
		if prev, ok := h.restamped[k]; ok && prev.after == before {
			before = prev.before // re-stamped again, unchanged since: keep its author's stamp
		}
		h.restamped[k] = restampedKey{before: before, after: ts}
		en.Timestamp = ts
		h.relay = appendEntry(h.relay, en)
	}
}

// restampedKey is what restamp did to one key: the entry's timestamp before, and the host's
// stamp it rewrote the entry with.
type restampedKey struct{ before, after crdt.Timestamp }

// maxRestamped bounds the keys remembered; past it the memory starts over (a rejection storm).
const maxRestamped = 1 << 16

func entryKey(e Entity, c crdt.ComponentID) uint64 { return uint64(e)<<32 | uint64(c) }

// mergeWrite merges an admitted write from a member: the entity's author, or a peer it lets write.
// A re-stamp puts the host's value above the rejected write, so the author's next writes, stamped
// by a clock that has not yet seen the re-stamp, arrive below it; yet they are newer than the
// value that was re-stamped. Such a write wins: the host rewrites it under its own stamp.
func (h *hostRole) mergeWrite(m *crdt.Message, origin PeerIndex) {
	w := h.w
	if w.mergeRemote(m, origin) != crdt.Outdated || len(h.restamped) == 0 {
		return
	}
	k := entryKey(m.Entity, m.Component)
	rk, ok := h.restamped[k]
	if !ok {
		return
	}
	if _, ts, found, _ := w.r.Get(m.Entity, m.Component); !found || ts != rk.after {
		delete(h.restamped, k) // written since the re-stamp: nothing left to make up for
		return
	}
	if m.Timestamp <= rk.before {
		return // older than the value re-stamped (a late datagram)
	}
	ts := w.batchStamp()
	deleted := m.Type == crdt.DeleteComponent || m.Type == crdt.DeleteComponentNetwork
	if w.r.WriteAt(m.Entity, m.Component, ts, m.Data, deleted) == crdt.Applied {
		// The author's next writes of the burst, stamped before it hears of ts, are newer still.
		h.restamped[k] = restampedKey{before: m.Timestamp, after: ts}
		rewritten := *m
		rewritten.Timestamp = ts
		w.observe(&rewritten, w.self) // to every member, the author included: its stamp changed
	}
}

// answerDigest compares a member's bucket digests with the host's. The first digest of a link
// gets the HostSnapshot that syncs the member: the buckets that differ, so a member that already
// holds the world (after a migration) receives only what differs. Later digests repair buckets
// that differ and have been quiet here for QuietPeriod (anti-entropy for lost datagrams).
func (h *hostRole) answerDigest(r *remote) {
	p, w := h.p, h.w
	n := len(h.dig.digests)
	if h.ownAt != w.r.Changes() || len(h.own) != n {
		// Between two changes of the replica every member's digest is compared with one computation.
		h.own = w.r.BucketDigests(n, h.own[:0])
		h.ownAt = w.r.Changes()
	}
	now := p.cfg.Now()
	var differ []int
	for b := range n {
		if h.own[b] == h.dig.digests[b] {
			continue
		}
		if r.snapshotSent && n == len(h.changed) && now.Sub(h.changed[b]) < p.cfg.QuietPeriod {
			continue
		}
		differ = append(differ, b)
	}
	first := !r.snapshotSent
	if !first && len(differ) == 0 {
		return
	}
	h.sendSnapshot(r, hostsnapshot.Only(n, differ...))
	if first {
		r.snapshotSent = true
		r.acceptRelayed = true
		r.dirty = make(map[Entity]uint32)
		h.entered = append(h.entered, netmsg.PeerInfo{PeerIndex: uint64(r.idx), PeerID: wirePeerID(r.info.ID)})
		if r.info.Kind != string(signaling.KindHost) {
			if _, ok := w.AvatarOf(r.idx); !ok {
				h.spawnAvatar(r.info)
			}
		}
		p.log.Info().Uint64("member", uint64(r.idx)).Int("buckets", len(differ)).Msg("member synced by snapshot")
	}
}

func (h *hostRole) sendSnapshot(r *remote, cover hostsnapshot.Cover) {
	p, w := h.p, h.w
	peers := make([]netmsg.PeerInfo, 0, len(p.members))
	for _, m := range p.members {
		peers = append(peers, netmsg.PeerInfo{PeerIndex: uint64(m.Index), PeerID: wirePeerID(string(m.ID))})
	}
	hostsnapshot.Build(&h.snap, w.r, w.schemas, hostsnapshot.Options{
		Term: uint64(w.term), LocalPeerIndex: uint64(r.idx), HostPeerIndex: uint64(w.self), Peers: peers, Cover: cover,
	})
	p.out = netmsg.AppendHostSnapshot(p.out[:0], &h.snap)
	p.send(r, link.Reliable, p.out)
}

// corrections merges a member's CRDT corrections that authority allows. In the member's first
// batch after its sync snapshot, corrections to host entities are admitted too: they are values
// the member received from the previous host that this host missed (migration).
func (h *hostRole) corrections(r *remote, b *netmsg.CrdtBatch) {
	if Term(b.Term) != h.w.term {
		h.p.count.fenced.Add(1)
		return
	}
	relayed := r.acceptRelayed
	r.acceptRelayed = false
	r.answered = true
	var rd crdt.Reader
	var m crdt.Message
	orphaned := false
	for rd.Reset(b.Messages); rd.Next(&m) == nil; {
		if relayed && (m.Type == crdt.DeleteEntity || m.Type == crdt.DeleteEntityNetwork) && !h.w.r.EntityDeleted(m.Entity) {
			// Only a host deletes entities, and a deletion is final in every replica that holds
			// it: refusing one (another member's avatar, say) would leave this member apart for
			// good. Its first batch carries what the previous host sent it, deletions included.
			h.w.mergeRemote(&m, r.idx)
			orphaned = true
			continue
		}
		if err := h.auth.AdmitCorrection(authority.PeerIndex(r.idx), authority.EntityID(m.Entity), relayed); err != nil {
			if h.holds(&m) {
				// This host already has the value or a newer one: the member converges to it
				// without a re-stamp (which would bury any newer write of the entity's owner
				// still on its way here).
				h.p.count.rejected.Add(1)
				continue
			}
			h.rejected(r, m.Entity, m.Timestamp, err)
			continue
		}
		h.w.mergeRemote(&m, r.idx)
	}
	if orphaned {
		h.respawnAvatars()
	}
}

// respawnAvatars gives a new avatar to every synced member that has none (a deletion of its
// avatar by the previous host reached this host late).
func (h *hostRole) respawnAvatars() {
	for _, r := range h.p.remotes {
		if r.snapshotSent && r.info.Kind != string(signaling.KindHost) {
			if _, ok := h.w.AvatarOf(r.idx); !ok {
				h.spawnAvatar(r.info)
			}
		}
	}
}

// holds reports whether the replica's entry for m's key is newer than m, or the same value.
func (h *hostRole) holds(m *crdt.Message) bool {
	if m.Type != crdt.PutComponent && m.Type != crdt.DeleteComponent {
		return false
	}
	data, ts, ok, deleted := h.w.r.Get(m.Entity, m.Component)
	if !ok || ts < m.Timestamp {
		return false
	}
	if ts > m.Timestamp {
		return true
	}
	if m.Type == crdt.DeleteComponent {
		return deleted
	}
	return !deleted && bytes.Equal(data, m.Data)
}

// ownerPending reports whether e is written by another member (its avatar, or a lock it holds)
// whose answer to its sync snapshot has not arrived yet. Until it has, this host may hold an
// older value of the owner's writes than a member whose correction it rejected, and re-stamping
// the entity now would put that older value above the owner's latest write (seen in
// TestMigrationKeepsLastWrites): re-stamping waits for the owner's corrections.
func (h *hostRole) ownerPending(e Entity) bool {
	owner := PeerIndex(h.auth.Author(authority.EntityID(e)))
	if owner == h.w.self {
		return false
	}
	if _, present := h.p.members[owner]; !present {
		return false // memberLeft returns its entities to the host
	}
	r := h.p.remotes[owner]
	return r == nil || !r.answered
}

func (h *hostRole) rpc(r *remote, rpc netmsg.RPC) {
	p := h.p
	if rpc.Type < FirstSystemRPC {
		p.app.RPC(h.w, r.idx, rpc.Type, rpc.Data)
		return
	}
	if len(rpc.Data) != 4 {
		p.count.dropped.Add(1)
		return
	}
	e := Entity(binary.LittleEndian.Uint32(rpc.Data))
	switch rpc.Type {
	case rpcLockRequest:
		t, err := h.auth.RequestLock(authority.PeerIndex(r.idx), authority.EntityID(e), p.cfg.Now())
		if err != nil {
			p.log.Debug().Err(err).Uint64("member", uint64(r.idx)).Msg("lock refused")
			return
		}
		if t.From != t.To {
			h.w.writeAuthority(e, authority.Record{Kind: authority.KindLock, Peer: authority.PeerIndex(r.idx)})
		}
	case rpcRelinquish:
		if _, err := h.auth.Relinquish(authority.PeerIndex(r.idx), authority.EntityID(e)); err == nil {
			h.w.writeAuthority(e, authority.Record{})
		}
	default:
		p.count.dropped.Add(1)
	}
}

// BroadcastRPC queues an application RPC to every member (host only).
func (w *World) BroadcastRPC(typ uint32, data []byte) error {
	h, ok := w.sink.(*hostRole)
	if !ok {
		return ErrNotHost
	}
	if typ >= FirstSystemRPC {
		return ErrNoAuthority
	}
	h.rpcs = append(h.rpcs, netmsg.RPC{Type: typ, Data: append([]byte(nil), data...)})
	return nil
}

// flushCommands sends the open batch's spawns, despawns, authority transfers, RPCs, membership
// changes and relayed CRDT messages to every synced member, as one reliable payload.
func (h *hostRole) flushCommands() {
	h.restamp()
	if len(h.spawns)+len(h.despawns)+len(h.transfers)+len(h.rpcs)+len(h.entered)+len(h.exited)+len(h.relay) == 0 {
		return
	}
	p, w := h.p, h.w
	buf := p.out[:0]
	if len(h.spawns)+len(h.despawns)+len(h.transfers)+len(h.rpcs) > 0 {
		stamp := w.stamp
		if stamp == 0 {
			stamp = w.r.Clock()
		}
		buf = appendStamp(buf, uint64(stamp))
		hc := &h.hc
		hc.Spawns, hc.Despawns, hc.AuthorityTransfers = hc.Spawns[:0], hc.Despawns[:0], hc.AuthorityTransfers[:0]
		h.arena = h.arena[:0]
		type span struct{ a, b int }
		var spans []span
		for _, e := range h.spawns {
			in := w.ents[e]
			if in == nil {
				continue
			}
			var mask uint32
			for i, prop := range in.schema.Properties {
				if _, _, ok, del := w.r.Get(e, prop.Component); ok && !del {
					mask |= 1 << i
				}
			}
			a := len(h.arena)
			h.arena = hostsnapshot.AppendSpawnUpdate(h.arena, in.schema, mask, func(i int) []byte {
				v, _ := w.Get(e, i)
				return v
			})
			spans = append(spans, span{a, len(h.arena)})
			hc.Spawns = append(hc.Spawns, netmsg.Spawn{NetworkID: uint64(e), SchemaID: uint32(in.schema.ID), CreationData: in.creation})
		}
		for i := range hc.Spawns {
			hc.Spawns[i].UpdateData = h.arena[spans[i].a:spans[i].b]
		}
		for _, e := range h.despawns {
			hc.Despawns = append(hc.Despawns, netmsg.Despawn{NetworkID: uint64(e)})
		}
		hc.AuthorityTransfers = append(hc.AuthorityTransfers, h.transfers...)
		hc.RPCs = h.rpcs
		buf = netmsg.AppendHostCommands(buf, hc)
	}
	for i := range h.entered {
		buf = netmsg.AppendPeerEntered(buf, &netmsg.PeerEntered{Peer: h.entered[i]})
	}
	for _, idx := range h.exited {
		buf = netmsg.AppendPeerExited(buf, &netmsg.PeerExited{PeerIndex: uint64(idx)})
	}
	if len(h.relay) > 0 {
		buf = netmsg.AppendCrdtBatch(buf, &netmsg.CrdtBatch{Term: uint64(w.term), Messages: h.relay})
	}
	p.out = buf
	for _, r := range p.remotes {
		if r.snapshotSent {
			p.send(r, link.Reliable, buf)
		}
	}
	h.spawns, h.despawns, h.transfers, h.rpcs = h.spawns[:0], h.despawns[:0], h.transfers[:0], nil
	h.entered, h.exited, h.relay = h.entered[:0], h.exited[:0], h.relay[:0]
}

// changeSink: the host turns accepted changes into traffic.

func (h *hostRole) touch(e Entity) {
	if n := len(h.changed); n > 0 {
		h.changed[int(e.Number())%n] = h.p.cfg.Now()
	}
}

func (h *hostRole) propChanged(e Entity, prop int, origin PeerIndex) {
	h.touch(e)
	for _, r := range h.p.remotes {
		if r.snapshotSent && r.idx != origin {
			r.dirty[e] |= 1 << prop
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
	h.auth.Despawn(authority.EntityID(e))
	for _, r := range h.p.remotes {
		delete(r.dirty, e)
	}
	h.despawns = append(h.despawns, e)
}

func (h *hostRole) authorityChanged(e Entity, rec authority.Record, origin PeerIndex) {
	h.touch(e)
	if origin != 0 {
		// A correction restored a record: adopt it, and relay the exact record.
		_ = h.auth.Restore(authority.EntityID(e), rec, h.p.cfg.Now())
		h.relayKey(e, 2)
		return
	}
	to := h.w.self
	if rec.Kind != authority.KindHost {
		to = PeerIndex(rec.Peer)
	}
	h.transfers = append(h.transfers, netmsg.AuthorityTransfer{NetworkID: uint64(e), NewAuthorIndex: uint64(to)})
}

func (h *hostRole) otherChanged(m *crdt.Message, origin PeerIndex) {
	h.touch(m.Entity)
	h.relay = crdt.AppendMessage(h.relay, m)
}

// relayEntity relays every entry of an entity that arrived as a correction (exact CRDT messages).
func (h *hostRole) relayEntity(e Entity) {
	h.w.r.Range(func(en crdt.Entry) bool {
		if en.Entity == e {
			h.relay = appendEntry(h.relay, en)
		}
		return en.Entity <= e
	})
}

func (h *hostRole) relayKey(e Entity, c crdt.ComponentID) {
	data, ts, ok, deleted := h.w.r.Get(e, c)
	if ok {
		h.relay = appendEntry(h.relay, crdt.Entry{Entity: e, Component: c, Timestamp: ts, Deleted: deleted, Data: data})
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

// Close codes Concord sends in a Close message.
const (
	CloseSchemaMismatch uint16 = 1
)
