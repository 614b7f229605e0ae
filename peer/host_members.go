package peer

import (
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// Members arriving and leaving, as the host sees them: signaling's word, the links, and silence.
// A departure is final (its avatars are deleted everywhere), so the host takes a member as gone
// only on evidence: listed nowhere and not linked, or silent.

// hostMember is what the host knows of one member over its current link. It lives as long as
// that link: a new link (a new session) starts over.
type hostMember struct {
	link         *remote
	helloed      bool
	snapshotSent bool
	// acceptRelayed: the member's next CRDT batch answers its sync snapshot and may carry host
	// entities it received from the previous host.
	acceptRelayed bool
	// avatarAfterAnswer: a survivor (acceptRelayed) whose avatar waits for its answer to the sync
	// snapshot: the avatar an earlier host gave it may be one this host never knew (its
	// checkpoint is older), and the answer brings it back (windowAvatarOK); a fresh one is
	// spawned only if it does not (settleAvatar).
	avatarAfterAnswer bool
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
	// answering: this host sent the member a snapshot, and its next CRDT batch answers it
	// (corrections: what it holds that the snapshot lacked).
	answering bool
	// superseded counts the entity numbers this member's deletions made this host give up
	// (host_supersede.go), bounded by maxSuperseded.
	superseded int
	// relayOut is the bytes the member may still have relayed, every copy counted; relayIn
	// the relayed bytes the host may still forward to it (host_relay.go).
	relayOut, relayIn budget
}

// members is the host's state of each member over its current link (hostMember), by peer index.
// A member's state lives as long as its link; memberOf starts it over for a new one, with the
// member's conduct (gate) carried across its links.
type members struct {
	gate *gate
	mems map[PeerIndex]*hostMember
	// probe is confirmGone's scratch: the Ping it sends.
	probe []byte
}

// memberOf returns the state of the member at the other end of r, made fresh for a new link.
func (ms *members) memberOf(r *remote) *hostMember {
	if hm := ms.mems[r.idx]; hm != nil && hm.link == r {
		return hm
	}
	hm := &hostMember{link: r, conduct: ms.gate.conductOf(r.idx)}
	ms.mems[r.idx] = hm
	return hm
}

// synced returns the member state of idx if its link is up and synced by a snapshot.
func (ms *members) synced(idx PeerIndex) *hostMember {
	if hm := ms.mems[idx]; hm != nil && hm.snapshotSent {
		return hm
	}
	return nil
}

// forget drops the state kept for r's member (its link is gone or replaced).
func (ms *members) forget(r *remote) {
	if hm := ms.mems[r.idx]; hm != nil && hm.link == r {
		delete(ms.mems, r.idx)
	}
}

// sweepGone takes the members that own avatars or locks but are not in the room (as signaling
// says) and have no open link to this host as gone. Without signaling it does nothing: absence
// from a room nobody can see proves nothing.
func (h *hostRole) sweepGone() {
	w := h.w
	if !h.env.signalingUp() {
		return
	}
	gone := map[PeerIndex]bool{}
	for _, in := range w.ents {
		if in.auth.Kind != authority.KindHost {
			idx := in.auth.Peer
			if _, ok := h.env.roster()[idx]; ok || idx == w.self {
				continue
			}
			if r := h.env.linkTo(idx); r != nil && r.ready {
				continue
			}
			gone[idx] = true
		}
	}
	for idx := range gone {
		h.log.Info().Uint64("peer", uint64(idx)).Msg("member gone: not in the room")
		h.memberLeft(idx)
	}
}

// sweepLater runs sweepGone once the members have had ResumeSettle to resume.
func (h *hostRole) sweepLater() {
	h.env.after(h.cfg.ResumeSettle, func() {
		if !h.stopped {
			h.sweepGone()
		}
	})
}

// memberLeft despawns the member's avatars and returns its locks to the host.
func (h *hostRole) memberLeft(idx PeerIndex) {
	if r := h.env.linkTo(idx); r != nil {
		h.env.discard(r)
	}
	avatars, released := h.auth.Leave(idx)
	for e, in := range h.w.ents { // avatars the table did not know (restored state)
		if in.auth.Kind == authority.KindAvatar && in.auth.Peer == idx {
			avatars = append(avatars, e)
		}
	}
	for _, e := range avatars {
		if h.w.Exists(e) {
			_ = h.w.Despawn(e)
		}
	}
	for _, t := range released {
		h.w.writeAuthority(t.Entity, authority.Record{})
	}
	h.exited = append(h.exited, idx)
	// The host's app hears it too: a world's region host keeps who is in its room.
	h.w.events = append(h.w.events, Event{Kind: EventPeerExited, Peer: idx})
}

// signalingLeft handles signaling's word that member idx left the room. A member whose link to
// this host is still up has only lost its signaling socket (a network fault on signaling's side;
// it redials and resumes its index): it keeps its avatar and locks until its link closes too.
// Despawning it now would delete its avatar for good, everywhere.
func (h *hostRole) signalingLeft(idx PeerIndex) {
	if r := h.env.linkTo(idx); r != nil && r.ready {
		h.log.Info().Uint64("peer", uint64(idx)).Msg("member left signaling but its link is up: kept while it is heard")
		h.confirmGone(idx)
		return
	}
	h.memberLeft(idx)
}

// confirmGone takes member idx, which signaling no longer lists, as gone once it has been silent
// on its link for a while: a member cut off from signaling alone still answers the ping this
// sends it (any peer answers a Ping with a Pong), and pings every ReportInterval itself while
// it has no signaling (as every member did before members slept). A member that sleeps (docs/protocol.md §5, "Idle members") sends nothing of its own for up to
// ReportKeepalive, so the host asks rather than waits to hear. A crashed member's link takes the
// ICE timeout to close; this does not wait for it.
func (h *hostRole) confirmGone(idx PeerIndex) {
	silence := 2 * max(h.cfg.DigestInterval, h.cfg.ReportInterval)
	asked := h.env.linkTo(idx)
	var pongs uint64
	if asked != nil && asked.ready {
		pongs = asked.pongs
		h.probe = netmsg.AppendPing(h.probe[:0], &netmsg.Ping{SendTime: uint64(h.env.monotonic())})
		h.env.send(asked, link.Reliable, h.probe)
	}
	h.env.after(silence, func() {
		if h.stopped {
			return
		}
		if _, listed := h.env.roster()[idx]; listed {
			return // resumed
		}
		r := h.env.linkTo(idx)
		if r == nil {
			return // its link closed: linkClosed took it as gone, or signaling is down
		}
		if r.ready && (r != asked || r.pongs != pongs || h.env.now().Sub(r.lastHeard) < silence) {
			h.confirmGone(idx)
			return
		}
		h.log.Info().Uint64("peer", uint64(idx)).Msg("member gone: not in the room and silent")
		h.memberLeft(idx)
	})
}

// linkClosed: a member that signaling no longer lists, and whose link is now gone too, has left.
// A member still listed may reconnect; so may anyone while signaling is down (absence from a
// room nobody can see proves nothing).
func (h *hostRole) linkClosed(r *remote) {
	if _, listed := h.env.roster()[r.idx]; !listed && h.env.signalingUp() && r.ready {
		h.memberLeft(r.idx)
	}
}

// respawnAvatars gives a new avatar to every synced member that has none (a deletion of its
// avatar by the previous host reached this host late).
func (h *hostRole) respawnAvatars() {
	for _, hm := range h.mems {
		if hm.snapshotSent && !hm.avatarAfterAnswer && hm.info.Kind != string(sigclient.KindHost) {
			if _, ok := h.w.AvatarOf(hm.link.idx); !ok {
				h.spawnAvatar(hm.info)
			}
		}
	}
}
