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

// hostRole is the state a peer keeps while it is the host. The loop owns it, and all of its
// parts. Each part keeps its own fields and reaches the others only through the pointers it is
// given in newHostRole:
//
//   - members (host_members.go): each member's state over its current link; the evidence that
//     one has left (sweeps, silence) stays with hostRole, since a departure touches every part;
//   - gate (host_admit.go, world_limits.go): what a member's inputs may do beyond authority:
//     stamps, application traffic, world bytes; refusals, strikes and closing a link;
//   - window (host_window.go): the survivors' correction window after a migration;
//   - restamper (host_restamp.go): rejected writes and the re-stamps that undo them;
//   - syncer (host_sync.go): digests in, snapshots out, the buckets' quiet periods;
//   - interest (host_interest.go): what each member follows;
//   - relayer (host_relay.go): members' messages to each other, within the relay budgets;
//   - outbox (host_send.go): the one send path: commands, updates (the shared change list and
//     each member's own), the host's messages and relayed ones.
//
// hostRole itself dispatches what members send (handle), and holds the rules that span parts:
// corrections and answerDigest (host_sync.go), RPCs and the application API (host_app.go), and
// the changeSink methods that turn the world's changes into traffic (host_send.go).
type hostRole struct {
	roleBase
	auth    *authority.Table
	stopped bool

	members
	gate
	window
	restamper
	syncer
	interest
	relayer
	outbox
}

func newHostRole(b roleBase) *hostRole {
	h := &hostRole{roleBase: b}
	h.gate = gate{roleBase: b}
	h.members = members{gate: &h.gate, mems: make(map[PeerIndex]*hostMember)}
	h.window = window{roleBase: b, gate: &h.gate}
	h.restamper = restamper{roleBase: b, gate: &h.gate}
	h.syncer = syncer{roleBase: b, changed: make([]time.Time, b.cfg.Buckets)}
	h.interest = interest{roleBase: b, members: &h.members, syncer: &h.syncer}
	h.relayer = relayer{roleBase: b, members: &h.members, gate: &h.gate, outbox: &h.outbox}
	h.outbox = outbox{roleBase: b, members: &h.members, interest: &h.interest, gate: &h.gate, shared: make(map[Entity]uint32)}
	return h
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
			h.settleAvatar(hm)
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
