package peer

import (
	"fmt"
	"math"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
)

// The survivors' correction window (docs/protocol.md §5 "Limits"). A member whose greeting says
// it holds an earlier host's state may, in its answer to its sync snapshot, relay host entities
// this host missed. What a greeting says is the member's word; what the window admits rests on
// signaling's record instead: the last term the server recorded the member synced in
// (signaling.Member.SyncedTerm), and on what the room held when this peer took over.

// window is the host's record of the room as it took over, for the survivors' correction window:
// the earlier terms signaling had recorded the members synced in (a member's report of syncing
// with this host must not erase it), the roster then (members of the earlier term), the clock
// this peer took over with, and the entities live then (what a previous host could have
// deleted). It refuses through gate.
type window struct {
	roleBase
	gate        *gate
	survivors   map[PeerIndex]Term
	present     map[PeerIndex]bool
	tookOver    crdt.Timestamp
	heldAtStart map[Entity]bool
}

// startWindow records, as this peer takes over, the earlier terms signaling recorded the members
// synced in, the clock, and the live entities.
func (win *window) startWindow() {
	w := win.w
	win.tookOver = w.r.Clock()
	win.survivors = make(map[PeerIndex]Term)
	win.present = make(map[PeerIndex]bool)
	for idx, m := range win.env.roster() {
		win.present[idx] = true
		if m.SyncedTerm != 0 && m.SyncedTerm < w.term {
			win.survivors[idx] = m.SyncedTerm
		}
	}
	win.heldAtStart = make(map[Entity]bool, len(w.ents))
	for e := range w.ents {
		win.heldAtStart[e] = true
	}
}

// survivorTerm is the last term before this host's in which signaling recorded member idx synced,
// 0 if none: the record as this peer took over, or a later one of an earlier term (a member that
// resumed after a restart of the server, which rebuilt its record from the member's claim).
func (win *window) survivorTerm(idx PeerIndex) Term {
	rec := win.survivors[idx]
	if t := win.env.roster()[idx].SyncedTerm; t < win.w.term && t > rec {
		rec = t
	}
	return rec
}

// survivorWindow reports whether hm's answer to its sync snapshot may relay host entities: its
// greeting names an earlier term that signaling's record covers (greeting ≤ record < this term).
// A greeting that claims more than the record is counted and opens nothing.
func (win *window) survivorWindow(hm *hostMember) bool {
	if hm.heldTerm == 0 || hm.heldTerm >= win.w.term {
		return false
	}
	rec := win.survivorTerm(hm.link.idx)
	if windowOpen(hm.heldTerm, rec, win.w.term) {
		return true
	}
	// Not a strike: a member whose report of syncing reached signaling only after the election
	// that ended its term may be honest (its first sync, as the previous host went away).
	win.gate.noteRefused(hm.link.idx, RefusedSurvivor, fmt.Sprintf("greeting claims term %d's state, signaling recorded it synced in term %d at most; no correction window", hm.heldTerm, rec))
	return false
}

// The window's rules as functions of plain values, checked against the vectors the browser host
// shares (testdata/peer/survivor_window.json, web/test/survivor.test.js).

// windowOpen reports whether a member whose greeting names term held, and whom signaling recorded
// synced in term rec at most, may relay an earlier host's state to the host of term.
func windowOpen(held, rec, term Term) bool {
	return held != 0 && held <= rec && rec < term
}

// windowCeiling is the highest stamp a correction admitted through the window may carry: what a
// survivor saw, the previous host stamped before this one took over, and this peer's clock then
// (tookOver) trailed the previous host's by less than the skew bound.
func windowCeiling(tookOver crdt.Timestamp) crdt.Timestamp {
	if tookOver > math.MaxUint32-maxStampSkew {
		return math.MaxUint32
	}
	return tookOver + maxStampSkew
}

// windowDeletionOK reports whether a relayed deletion at version del may take the live entity of
// its number, at version live: only one this host held when it took over (a deletion takes every
// lower version of its number; a higher one it leaves alone).
func windowDeletionOK(live uint16, heldAtStart bool, del uint16) bool {
	return live > del || heldAtStart
}

// windowRecordOK reports whether a relayed authority record may name peer: this host, or a member
// of an earlier term (earlier: in the room when this host took over, or recorded synced in an
// earlier term by signaling).
func windowRecordOK(peer, self PeerIndex, earlier bool) bool {
	return peer == self || earlier
}

// lacks reports whether this world holds nothing of e: no live entity of its number, and no
// tombstone of its version or a later one.
func (w *World) lacks(e Entity) bool {
	if _, ok := w.byNumber.get(e.Number()); ok {
		return false
	}
	dv, deleted := w.r.DeletedVersion(e.Number())
	return !deleted || dv < e.Version()
}

// knownVersion is the highest version of entity number n this world knows of: live, deleted, or 0.
func (w *World) knownVersion(n uint16) uint16 {
	var v uint16
	if e, ok := w.byNumber.get(n); ok {
		v = e.Version()
	}
	if dv, ok := w.r.DeletedVersion(n); ok && dv > v {
		v = dv
	}
	return v
}

// windowAvatarOK reports whether an authority record of kind naming its sender may be admitted:
// only a survivor's (relayed) avatar, for an entity this host lacked when the batch first named
// it, while the survivor has no avatar here (its avatar waits for this answer, avatarless). That
// is the avatar a previous host spawned for it after the checkpoint this host restored: refused,
// the survivor lost its avatar and what it last wrote there. A member never gives itself a
// lock, nor takes an entity this host holds, nor gets a second avatar.
func windowAvatarOK(kind authority.Kind, relayed, lacked, avatarless bool) bool {
	return kind == authority.KindAvatar && relayed && lacked && avatarless
}

// admitCorrection applies the limits of a correction beyond authority: its stamp, a relayed
// deletion's version, and authority records. lacked says this host held nothing of m's entity
// when the batch first named it. It returns why and a reason to refuse m, or "".
func (win *window) admitCorrection(hm *hostMember, m *crdt.Message, relayed, lacked bool) (Refusal, string) {
	idx := hm.link.idx
	switch m.Type {
	case crdt.DeleteEntity, crdt.DeleteEntityNetwork:
		if m.Entity.Number() < FirstSpawnNumber {
			return RefusedCorrection, fmt.Sprintf("deletion of reserved entity %v", m.Entity)
		}
		if relayed && int(m.Entity.Version()) > int(win.w.knownVersion(m.Entity.Number()))+maxVersionAhead {
			return RefusedCorrection, fmt.Sprintf("deletion of %v, far above any version of number %d known here", m.Entity, m.Entity.Number())
		}
		if relayed {
			// A previous host deleted only what it had: never an entity this host spawned
			// since it took over (a deletion takes every lower version of its number too).
			if live, ok := win.w.byNumber.get(m.Entity.Number()); ok && !windowDeletionOK(live.Version(), win.heldAtStart[live], m.Entity.Version()) {
				return RefusedSurvivor, fmt.Sprintf("relayed deletion of %v, spawned by this host after it took over", live)
			}
		}
		return 0, ""
	}
	if !win.gate.stampOK(hm, m.Timestamp) {
		return RefusedStampSkew, fmt.Sprintf("correction stamped %d, more than %d above the host's clock %d", m.Timestamp, maxStampSkew, win.w.r.Clock())
	}
	if m.Component == schema.ComponentAuthority && (m.Type == crdt.PutComponent || m.Type == crdt.PutComponentNetwork) {
		var rec authority.Record
		if _, err := authority.ConsumeRecord(m.Data, &rec); err == nil && rec.Kind != authority.KindHost && win.w.AuthorityRecord(m.Entity) != rec {
			if rec.Peer == idx {
				// One avatar a member: the first record brought back ends the wait.
				_, has := win.w.AvatarOf(idx)
				if windowAvatarOK(rec.Kind, relayed, lacked, hm.avatarAfterAnswer && !has) {
					return 0, ""
				}
				return RefusedCorrection, fmt.Sprintf("authority record handing %v to its sender", m.Entity)
			}
			if relayed && !windowRecordOK(rec.Peer, win.w.self, win.present[rec.Peer] || win.survivorTerm(rec.Peer) != 0) {
				// A previous host handed entities only to its own members: a member that joined
				// after this peer took over, and that signaling never recorded synced in an
				// earlier term, held nothing of it (an accomplice).
				return RefusedSurvivor, fmt.Sprintf("relayed authority record handing %v to member %d, not a member of an earlier term", m.Entity, rec.Peer)
			}
		}
	}
	return 0, ""
}
