package peer

import (
	"fmt"
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// hostRole is the state a peer keeps while it is the host. The loop owns it. Its files:
// host.go (lifecycle, dispatch), host_members.go (arrivals and departures), host_sync.go
// (digests, snapshots, corrections), host_restamp.go (rejections and re-stamps), host_send.go
// (commands and updates out).
type hostRole struct {
	roleBase
	auth    *authority.Table
	mems    map[PeerIndex]*hostMember
	stopped bool
	// hist is the values sent to members that take deltas, shared by them (delta.go).
	hist deltaHist

	// Changes of the open batch, sent as one payload by flushCommands.
	spawns    []Entity
	despawns  []Entity
	transfers []netmsg.AuthorityTransfer
	rpcs      []netmsg.RPC
	actions   []netmsg.Action
	msgs      []queuedMessage // reliable application messages, sent after the commands
	entered   []netmsg.PeerInfo
	exited    []PeerIndex
	relay     []byte // CRDT messages TRNP cannot carry

	changed   []time.Time // per bucket: when it last changed here
	rejectLog int
	reassert  map[Entity]bool         // entities to re-stamp after rejected writes
	absent    map[uint64]bool         // keys of rejected corrections this host lacks: restamp deletes them
	restamped map[uint64]restampedKey // keys restamp rewrote, until their author writes again
	lost      map[Entity]lostAuthority

	// refusedLog counts refused inputs per reason, for rate-limited logs (host_admit.go).
	refusedLog [NumRefusals]uint64
	// conducts holds the members' skew budgets and strikes across their links, by identity and
	// by peer index (bounded: maxConducts, conductMemory).
	conducts map[string]*conduct
	// worldUse is the bytes each member's writes added to the world, by identity (or index):
	// WorldLimits.MemberBytes (world_limits.go).
	worldUse map[string]int
	// The survivors' correction window (host_admit.go, docs/protocol.md §5 "Limits"): the
	// earlier terms signaling had recorded the members synced in when this peer took over (a
	// member's report of syncing with this host must not erase it), the clock this peer took
	// over with, and the entities live then (what a previous host could have deleted).
	survivors   map[PeerIndex]Term
	present     map[PeerIndex]bool // the roster as this peer took over: members of the earlier term
	tookOver    crdt.Timestamp
	heldAtStart map[Entity]bool

	hc    netmsg.HostCommands
	snap  netmsg.HostSnapshot
	own   []uint64
	part  []uint64 // one member's digests when it follows part of the world
	ownAt uint64   // Replica.Changes() when own was computed
	arena []byte
	out   []byte
	upd   updater
	// recSize is the length of the last flush's shared recording, the next one's capacity hint.
	recSize int
	// dgrams is replay's scratch: the datagrams of a recording, for one call to a link.
	dgrams [][]byte
	// relayTo is forwardRelay's scratch: the recipients of one relayed message.
	relayTo []*hostMember
	// Interest management (host_interest.go): when the members' interest was last worked out,
	// scratch for the replica's numbers, and the command payloads for members that follow
	// everything (cmdAll) and for one that follows part (cmdPart, relayPart).
	interestAt                 time.Time
	flushes                    int // updates flushes, for farEvery
	numbers                    []uint16
	cmdAll, cmdPart, relayPart []byte
	// shared is the properties the host wrote since the last flush (entity → property mask),
	// one change list for every member; hostMember.dirty holds each member's exceptions.
	shared map[Entity]uint32
}

// hostMember is what the host knows of one member over its current link. It lives as long as
// that link: a new link (a new session) starts over.
type hostMember struct {
	link         *remote
	helloed      bool
	snapshotSent bool
	// acceptRelayed: the member's next CRDT batch answers its sync snapshot and may carry host
	// entities it received from the previous host.
	acceptRelayed bool
	// answered: the member has answered its sync snapshot (its corrections, if it had any, are
	// merged), so this host holds its latest writes.
	answered bool
	// snapClock and snapAt: the host's clock when it last sent this member a snapshot, and when
	// (staleDigest).
	snapClock crdt.Timestamp
	snapAt    time.Time
	// refused: the member runs another schema table; it got a Close and is served nothing more.
	refused bool
	info    PeerInfo
	// dirty is what this member lacks beyond hostRole.shared: relayed writes of other members,
	// and what an earlier flush did not send it (its link was not ready, past
	// MaxDatagramsPerFlush, or the send failed).
	dirty map[Entity]uint32
	// heldTerm is the term of the state the member's greeting says it holds (0: none); the
	// window opens only when signaling's record vouches for it (survivorWindow).
	heldTerm Term
	// buckets is the bucket count of the member's first digest; later digests must keep it.
	buckets int
	// conduct is the member's skew budget and strikes, shared with its earlier links.
	conduct *conduct
	// visible is the entity numbers the member follows (host_interest.go); nil: everything.
	visible map[uint16]bool
	// near is the successor's own interest, sent at the full rate; its other updates wait in
	// later for every farEvery-th flush (host_interest.go). Nil for the other members.
	near  map[uint16]bool
	later map[Entity]uint32
	// delta is the member's delta state once it asked for DeltaUpdates (its first Ack); nil:
	// it gets whole values (delta.go).
	delta *deltaTx
	// app is the member's application traffic still allowed, in messages (appAllowed).
	app budget
	// relayOut is the bytes the member may still have relayed, every copy counted; relayIn
	// the relayed bytes the host may still forward to it (host_relay.go).
	relayOut, relayIn budget
}

func newHostRole(b roleBase) *hostRole {
	return &hostRole{roleBase: b, mems: make(map[PeerIndex]*hostMember), changed: make([]time.Time, b.cfg.Buckets), shared: make(map[Entity]uint32)}
}

// memberOf returns the state of the member at the other end of r, made fresh for a new link.
func (h *hostRole) memberOf(r *remote) *hostMember {
	if hm := h.mems[r.idx]; hm != nil && hm.link == r {
		return hm
	}
	hm := &hostMember{link: r, conduct: h.conductOf(r.idx)}
	h.mems[r.idx] = hm
	return hm
}

// synced returns the member state of idx if its link is up and synced by a snapshot.
func (h *hostRole) synced(idx PeerIndex) *hostMember {
	if hm := h.mems[idx]; hm != nil && hm.snapshotSent {
		return hm
	}
	return nil
}

// forget drops the state kept for r's member (its link is gone or replaced).
func (h *hostRole) forget(r *remote) {
	if hm := h.mems[r.idx]; hm != nil && hm.link == r {
		delete(h.mems, r.idx)
	}
}

// start makes this peer the host: rebuild authority from the replica, let go of members that are
// gone, and resume the simulation with the clock above everything seen.
func (h *hostRole) start() {
	w := h.w
	now := h.env.now()
	w.setRole(true, h)
	w.heldTerm = w.term
	h.auth = authority.New(w.self, authority.Config{})
	for e, in := range w.ents {
		if in.auth.Kind != authority.KindHost {
			if err := h.auth.Restore(e, in.auth, now); err != nil {
				h.log.Warn().Err(err).Uint64("entity", uint64(e)).Msg("authority record not restored")
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
		if in.auth.Kind == authority.KindLock && in.auth.Peer == w.self {
			w.writeAuthority(e, authority.Record{})
		}
	}
	h.startWindow()
	h.log.Info().Int("entities", w.Len()).Uint32("clock", uint32(w.r.Clock())).Msg("now hosting")
	h.app.HostStart(w)
	if h.cfg.Kind != sigclient.KindHost {
		if _, ok := w.AvatarOf(w.self); !ok {
			h.spawnAvatar(PeerInfo{Index: w.self, ID: string(sigclient.NewIdentity(h.cfg.User, h.cfg.Device)), Kind: string(h.cfg.Kind)})
		}
	}
	w.events = append(w.events, Event{Kind: EventSynced, Term: w.term, Peer: w.self})
}

// stop ends the role; the peer closes the links.
func (h *hostRole) stop() {
	h.stopped = true
	clear(h.mems)
}

func (h *hostRole) tick(now time.Time) {
	for _, t := range h.auth.Expire(now) {
		h.log.Info().Uint64("entity", uint64(t.Entity)).Uint64("peer", uint64(t.From)).Msg("lock expired")
		h.authorityLost(t.Entity, t.From)
		h.w.writeAuthority(t.Entity, authority.Record{})
	}
}

// handle processes one decoded message from member r.
func (h *hostRole) handle(r *remote, t netmsg.Type, in *inbox) error {
	h.auth.Touch(r.idx, h.env.now())
	hm := h.memberOf(r)
	if hm.refused {
		h.count.dropped.Add(1)
		return nil
	}
	switch t {
	case netmsg.TypeHello:
		if fp := h.w.schemas.Fingerprint(); in.hello.SchemaFingerprint != fp {
			reason := fmt.Sprintf("schema table %016x differs from the host's %016x", in.hello.SchemaFingerprint, fp)
			h.env.send(r, link.Reliable, netmsg.AppendClose(nil, &netmsg.Close{Code: CloseSchemaMismatch, Reason: reason}))
			h.log.Warn().Uint64("peer", uint64(r.idx)).Msg("member runs another schema table; refused: " + reason)
			hm.refused = true
			return nil
		}
		if PeerIndex(in.hello.PeerIndex) != r.idx {
			return errMalformed
		}
		hm.helloed = true
		hm.heldTerm = Term(in.hello.Term)
		mem := h.env.roster()[r.idx]
		hm.info = PeerInfo{Index: r.idx, ID: string(mem.ID), Kind: string(mem.Kind)}
	case netmsg.TypeDigest:
		if !hm.helloed {
			return errMalformed
		}
		if hm.buckets == 0 {
			hm.buckets = len(in.dig.Digests)
		} else if len(in.dig.Digests) != hm.buckets {
			// Alternating bucket counts would defeat the quiet period and the digest cache.
			return h.refuse(hm, RefusedDigest, fmt.Sprintf("digest of %d buckets after %d", len(in.dig.Digests), hm.buckets))
		}
		if hm.snapshotSent && h.staleDigest(hm, &in.dig) {
			// Computed before the last snapshot arrived: it neither answers the sync snapshot
			// nor says what the snapshot repaired.
			return nil
		}
		if hm.snapshotSent {
			// A member sends its next digest after its corrections, on the same ordered
			// channel: its answer to the sync snapshot is in, and the window in which its
			// corrections may carry host entities closes.
			hm.answered = true
			hm.acceptRelayed = false
		}
		h.answerDigest(hm, &in.dig)
	case netmsg.TypePeerCommands:
		for _, rpc := range in.pc.RPCs {
			if err := h.rpc(hm, rpc); err != nil {
				return err
			}
		}
	case netmsg.TypeEntityUpdates:
		if !hm.snapshotSent {
			return nil
		}
		ts := crdt.Timestamp(in.eu.Time)
		if in.eu.Time <= uint64(^uint32(0)) && !h.stampOK(hm, ts) {
			return h.refuse(hm, RefusedStampSkew, fmt.Sprintf("updates stamped %d, more than %d above the host's clock %d", ts, maxStampSkew, h.w.r.Clock()))
		}
		applyUpdates(h.roleBase, &in.eu, r.idx, func(e Entity) bool { return h.admit(hm, e, ts) }, h.mergeWrite)
		if hm.refused {
			return fmt.Errorf("%w: forged writes", errOffender)
		}
	case netmsg.TypeCrdtBatch:
		return h.corrections(hm, &in.batch)
	case netmsg.TypeRelay:
		return h.relayMessage(hm, &in.relay, in.ch)
	case netmsg.TypeActions:
		return h.memberActions(hm, in.acts.Actions)
	case netmsg.TypeAck:
		if !h.cfg.Deltas || h.cfg.TRNPUpdates {
			return nil // whole values for everyone
		}
		if hm.delta == nil {
			hm.delta = newDeltaTx(&h.hist)
		}
		if err := hm.delta.ack(&in.ack); err != nil {
			return h.refuse(hm, RefusedAck, err.Error())
		}
	default:
		if t.IsApplication() {
			return h.appMessage(hm, uint8(t), in.app)
		}
		h.count.dropped.Add(1)
	}
	return nil
}

func (h *hostRole) spawnAvatar(info PeerInfo) {
	e, err := h.app.SpawnAvatar(h.w, info)
	if err != nil {
		h.log.Warn().Err(err).Uint64("peer", uint64(info.Index)).Msg("avatar not spawned")
		return
	}
	if e == 0 && !h.w.Exists(e) {
		return
	}
	if _, err := h.auth.SetAvatar(e, info.Index); err != nil {
		h.log.Warn().Err(err).Msg("avatar authority refused")
		return
	}
	h.w.writeAuthority(e, authority.Record{Kind: authority.KindAvatar, Peer: info.Index})
}

// Close codes Concord sends in a Close message.
const (
	CloseSchemaMismatch uint16 = 1
)
