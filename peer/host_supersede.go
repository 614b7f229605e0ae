package peer

import (
	"fmt"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
)

// Superseded entity numbers (docs/protocol.md §5 "Superseded numbers").
//
// A host restored from a checkpoint older than its room's last state (a durable room, a world
// region reopened on another node after its node died) allocates entity numbers from what the
// checkpoint knew, and may spawn a number its predecessor used and deleted after the checkpoint.
// Its members hold that deletion, and a deletion is final: a member ignores every write to the
// number at a version at or below the deleted one, so the host's entity never reaches it (in the
// world lab, a player resident with no avatar for good). Allocating only after merging the
// members' replicas would not do: members join when they like, after the spawn too, and a
// member's digest hashes what it holds without naming it. What does reach the host is the
// member's answer to the snapshot that repairs it: it carries the deletion back as a correction.
// The host takes that deletion as a fact about the member, not as an order: it records the
// deleted version (its allocator goes past it from then on, and a checkpoint keeps it) and moves
// a live entity the deletion would take to a fresh number with the same schema, creation, values
// and authority (EventRenumbered tells the app), which every member takes. This heals the split
// whatever caused it, and a member can do no more with it than move a host entity to another
// number, at most maxSuperseded times per link.

// maxSuperseded bounds the entity numbers one member link's deletions may make this host give up:
// an honest member holds only the deletions its previous host made after the checkpoint this host
// started from.
const maxSuperseded = 4096

// deletion takes a member's correction deleting m.Entity. Through the survivors' window (relayed)
// a deletion of what a previous host held is merged, as before; one this host must not merge
// (an entity it spawned since it took over, or any deletion outside the window) still tells it
// the member will never take the number at that version: the number is superseded.
//
// It reports false for a deletion it leaves to the ordinary path (authority refuses it): one
// outside the window of an entity this host held when it took over or merged from a checkpoint
// (a durable room's seed merges after the window started). That entity is no spawn of
// this host's that a member cannot take, but the checkpoint's or the previous host's own, which
// the member says a previous host deleted; moving it would bring back what that host removed (in
// the world lab, a block removed after the checkpoint came back over the block placed in its
// stead), and only the window vouches for the deletion itself.
func (h *hostRole) deletion(hm *hostMember, m *crdt.Message, relayed bool, orphaned *bool) (bool, error) {
	w := h.w
	if w.r.EntityDeleted(m.Entity) {
		return true, nil // held here already
	}
	why, reason := h.admitCorrection(hm, m, relayed, false)
	if reason == "" && !relayed && int(m.Entity.Version()) > int(w.knownVersion(m.Entity.Number()))+maxVersionAhead {
		why, reason = RefusedCorrection, fmt.Sprintf("deletion of %v, far above any version of number %d known here", m.Entity, m.Entity.Number())
	}
	switch {
	case reason == "" && relayed:
		// Only a host deletes entities, and a deletion is final in every replica that holds it:
		// refusing one (another member's avatar, say) would leave this member apart for good.
		// Its first batch carries what the previous host sent it, deletions included.
		w.mergeRemote(m, hm.link.idx)
		*orphaned = true
		return true, nil
	case why == RefusedCorrection:
		return true, h.refuse(hm, why, reason) // a reserved number, a version far above any known
	}
	if live, ok := w.byNumber.get(m.Entity.Number()); ok && live.Version() <= m.Entity.Version() && (h.heldAtStart[live] || w.restored[live]) {
		return false, nil
	}
	switch {
	case reason != "":
		// Counted, not a strike: a survivor of a host this one, restored from an older
		// checkpoint, succeeds relays such deletions honestly.
		h.noteRefused(hm.link.idx, why, reason)
	}
	if hm.superseded >= maxSuperseded {
		return true, h.refuse(hm, RefusedCorrection, fmt.Sprintf("deletion of %v: more than %d entity numbers superseded by one member", m.Entity, maxSuperseded))
	}
	hm.superseded++
	h.supersede(m.Entity)
	return true, nil
}

// supersede records that a member holds del's number deleted at del's version: this host deletes
// it at that version too, and a live entity of the number at or below it moves to a fresh number.
func (h *hostRole) supersede(del Entity) {
	w := h.w
	live, isLive := w.byNumber.get(del.Number())
	if isLive && live.Version() > del.Version() {
		isLive = false // the member takes the live entity; the deletion is of an older version
	}
	var (
		in     entityInfo
		values [][]byte
	)
	if isLive {
		in = *w.ents[live]
		values = make([][]byte, len(in.schema.Properties))
		for i := range in.schema.Properties {
			if v, ok := w.Get(live, i); ok {
				values[i] = append([]byte(nil), v...)
			}
		}
	}
	m := w.r.DeleteEntity(del)
	w.observe(&m, 0)
	h.count.superseded.Add(1)
	if !isLive {
		return
	}
	e, ok := w.allocate()
	if !ok {
		h.log.Warn().Uint64("entity", uint64(live)).Msg("superseded entity not moved: the world is full")
		return
	}
	rec := in.auth
	switch rec.Kind {
	case authority.KindAvatar:
		if _, err := h.auth.SetAvatar(e, rec.Peer); err != nil {
			rec = authority.Record{}
		}
	case authority.KindLock:
		rec = authority.Record{} // the lock ends with the old number; its holder asks again
	}
	if err := w.spawnAt(e, in.schema.ID, in.creation, values, rec); err != nil {
		h.log.Warn().Err(err).Uint64("entity", uint64(live)).Msg("superseded entity not moved")
		return
	}
	w.events = append(w.events, Event{Kind: EventRenumbered, Entity: e, From: live})
	h.log.Info().Uint64("from", uint64(live)).Uint64("to", uint64(e)).Msg("entity moved to a fresh number: a member holds its number deleted")
}
