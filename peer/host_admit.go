package peer

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// What a host admits from a member beyond authority (docs/protocol.md §5, "Limits"): stamps within
// a bounded skew of its clock, corrections within a bounded batch, and nothing from a member that
// keeps offending.

const (
	// maxStampSkew is how far above the host's Lamport clock a member's stamp may be. An honest
	// member is a few ticks ahead at most (its writes since it last heard the host), a survivor's
	// corrections after a migration a few hundred; a member claiming more is broken or hostile.
	// The wire clock is u32: without this bound one datagram stamped 2³²−1 freezes the room.
	maxStampSkew = 1 << 12
	// stampRate is how fast a member's skew budget refills, in ticks per second: the stamps a
	// member sends may move the host's clock by at most maxStampSkew at once and stampRate per
	// second in the long run (2³² is then decades away).
	stampRate = 1 << 10
	// maxCorrectionMessages and maxCorrectionBytes bound one CRDT batch of corrections.
	maxCorrectionMessages = 1 << 14
	maxCorrectionBytes    = 4 << 20
	// maxVersionAhead bounds how far above the version this host knows of an entity number a
	// relayed deletion may be: a survivor relays what the previous host deleted, the previous
	// host reused a number a few times at most; 0xffff on every number is an attack.
	maxVersionAhead = 4
	// maxStrikes is how many refused inputs a member may send in a burst before its link is
	// closed; strikes drain at one a second.
	maxStrikes = 32
	// maxConducts bounds the conduct records a host keeps (one per identity and one per peer
	// index): past it, the least recently used goes.
	maxConducts = 4096
	// conductMemory is how long a record outlives its last use: by then its strikes have
	// drained and its budget refilled (maxStampSkew/stampRate = 4 s), so forgetting it
	// forgives nothing.
	conductMemory = maxStrikes * time.Second
)

// conduct is what a host holds against a member beyond one link: its skew budget and strikes.
// A member that reconnects (a new link, the same identity or the same peer index after a resume)
// finds its record again, so that reconnecting between offences wipes nothing.
type conduct struct {
	// budget is how far the member's stamps may still move the host's clock (stampOK), as of
	// budgetAt; strikes counts its refused inputs, draining from strikeAt (strike).
	budget, strikes    float64
	budgetAt, strikeAt time.Time
	// used is when the record was last charged or given to a link.
	used time.Time
}

// conductOf returns the record of the member linked as idx: the one of its identity or of its
// index (the one with more strikes when both exist), else a new one; kept under both keys.
func (h *hostRole) conductOf(idx PeerIndex) *conduct {
	now := h.env.now()
	keys := []string{"#" + strconv.FormatUint(uint64(idx), 10)}
	if id := h.env.roster()[idx].ID; id != "" {
		keys = append(keys, "id "+string(id))
	}
	var c *conduct
	for _, k := range keys {
		if o := h.conducts[k]; o != nil && now.Sub(o.used) < conductMemory && (c == nil || o.strikes > c.strikes) {
			c = o
		}
	}
	if c == nil {
		c = &conduct{}
	}
	c.used = now
	if h.conducts == nil {
		h.conducts = make(map[string]*conduct)
	}
	for _, k := range keys {
		if _, ok := h.conducts[k]; !ok && len(h.conducts) >= maxConducts {
			h.evictConduct(now)
		}
		h.conducts[k] = c
	}
	return c
}

// evictConduct makes room for a record: it drops the records past conductMemory, else the least
// recently used one.
func (h *hostRole) evictConduct(now time.Time) {
	var oldest string
	var at time.Time
	for k, c := range h.conducts {
		if now.Sub(c.used) >= conductMemory {
			delete(h.conducts, k)
			continue
		}
		if oldest == "" || c.used.Before(at) {
			oldest, at = k, c.used
		}
	}
	if len(h.conducts) >= maxConducts {
		delete(h.conducts, oldest)
	}
}

// CloseRefused is the Close code a host sends a member it drops for refused inputs; the reason
// names the last one.
const CloseRefused uint16 = 2

var errOffender = errors.New("peer: member dropped for refused inputs")

// stampOK checks a member's stamp against the host's clock and the member's skew budget, and
// charges the budget for how far the stamp moves the clock.
func (h *hostRole) stampOK(hm *hostMember, ts crdt.Timestamp) bool {
	clock := h.w.r.Clock()
	if ts <= clock {
		return true
	}
	d := float64(ts - clock)
	now := h.env.now()
	c := hm.conduct
	if c.budgetAt.IsZero() {
		c.budget = maxStampSkew
	} else {
		c.budget = min(maxStampSkew, c.budget+now.Sub(c.budgetAt).Seconds()*stampRate)
	}
	c.budgetAt, c.used = now, now
	if d > c.budget {
		return false
	}
	c.budget -= d
	return true
}

// refuse counts an input refused for reason, logs it (warn, rate-limited), and returns
// errOffender when the member has offended maxStrikes times in a burst: the caller closes its
// link after a Close that says why.
func (h *hostRole) refuse(hm *hostMember, why Refusal, reason string) error {
	h.noteRefused(hm.link.idx, why, reason)
	return h.strike(hm, reason)
}

// noteRefused counts an input of member idx refused for reason and logs it (warn, rate-limited),
// without a strike.
func (h *hostRole) noteRefused(idx PeerIndex, why Refusal, reason string) {
	h.count.refuse(why)
	n := &h.refusedLog[why]
	if *n++; *n <= 10 || *n%1000 == 0 {
		h.log.Warn().Uint64("peer", uint64(idx)).Str("reason", why.String()).Uint64("count", *n).Msg("input refused: " + reason)
	}
}

// strike counts one offence of hm; at maxStrikes in a burst it closes hm's link with a Close that
// says why and returns errOffender.
func (h *hostRole) strike(hm *hostMember, reason string) error {
	if hm.refused {
		return nil
	}
	now := h.env.now()
	c := hm.conduct
	if !c.strikeAt.IsZero() {
		c.strikes = max(0, c.strikes-now.Sub(c.strikeAt).Seconds())
	}
	c.strikeAt, c.used = now, now
	if c.strikes = min(c.strikes+1, maxStrikes); c.strikes < maxStrikes {
		return nil
	}
	h.count.offenders.Add(1)
	h.log.Warn().Uint64("peer", uint64(hm.link.idx)).Msg("member keeps sending refused inputs; closing its link: " + reason)
	h.env.send(hm.link, link.Reliable, netmsg.AppendClose(nil, &netmsg.Close{Code: CloseRefused, Reason: reason}))
	hm.refused = true
	return fmt.Errorf("%w: %s", errOffender, reason)
}

// admitCorrection applies the limits of a correction beyond authority: its stamp, a relayed
// deletion's version, and authority records. It returns why and a reason to refuse m, or "".
func (h *hostRole) admitCorrection(hm *hostMember, m *crdt.Message, relayed bool) (Refusal, string) {
	idx := hm.link.idx
	switch m.Type {
	case crdt.DeleteEntity, crdt.DeleteEntityNetwork:
		if m.Entity.Number() < FirstSpawnNumber {
			return RefusedCorrection, fmt.Sprintf("deletion of reserved entity %v", m.Entity)
		}
		if relayed && int(m.Entity.Version()) > int(h.w.knownVersion(m.Entity.Number()))+maxVersionAhead {
			return RefusedCorrection, fmt.Sprintf("deletion of %v, far above any version of number %d known here", m.Entity, m.Entity.Number())
		}
		if relayed {
			// A previous host deleted only what it had: never an entity this host spawned
			// since it took over (a deletion takes every lower version of its number too).
			if live, ok := h.w.byNumber[m.Entity.Number()]; ok && !windowDeletionOK(live.Version(), h.heldAtStart[live], m.Entity.Version()) {
				return RefusedSurvivor, fmt.Sprintf("relayed deletion of %v, spawned by this host after it took over", live)
			}
		}
		return 0, ""
	}
	if !h.stampOK(hm, m.Timestamp) {
		return RefusedStampSkew, fmt.Sprintf("correction stamped %d, more than %d above the host's clock %d", m.Timestamp, maxStampSkew, h.w.r.Clock())
	}
	if m.Component == schema.ComponentAuthority && (m.Type == crdt.PutComponent || m.Type == crdt.PutComponentNetwork) {
		var rec authority.Record
		if _, err := authority.ConsumeRecord(m.Data, &rec); err == nil && rec.Kind != authority.KindHost && h.w.AuthorityRecord(m.Entity) != rec {
			if rec.Peer == idx {
				return RefusedCorrection, fmt.Sprintf("authority record handing %v to its sender", m.Entity)
			}
			if relayed && !windowRecordOK(rec.Peer, h.w.self, h.present[rec.Peer] || h.survivorTerm(rec.Peer) != 0) {
				// A previous host handed entities only to its own members: a member that joined
				// after this peer took over, and that signaling never recorded synced in an
				// earlier term, held nothing of it (an accomplice).
				return RefusedSurvivor, fmt.Sprintf("relayed authority record handing %v to member %d, not a member of an earlier term", m.Entity, rec.Peer)
			}
		}
	}
	return 0, ""
}

// entityVerdict is what authority decided of one entity's corrections in a batch: err refuses
// them; windowed says they are admitted only because the batch is a survivor's (relayed).
type entityVerdict struct {
	err      error
	windowed bool
}

// The survivors' correction window (docs/protocol.md §5 "Limits"). A member whose greeting says
// it holds an earlier host's state may, in its answer to its sync snapshot, relay host entities
// this host missed. What a greeting says is the member's word; what the window admits rests on
// signaling's record instead: the last term the server recorded the member synced in
// (signaling.Member.SyncedTerm), and on what the room held when this peer took over.

// startWindow records, as this peer takes over, the earlier terms signaling recorded the members
// synced in, the clock, and the live entities.
func (h *hostRole) startWindow() {
	w := h.w
	h.tookOver = w.r.Clock()
	h.survivors = make(map[PeerIndex]Term)
	h.present = make(map[PeerIndex]bool)
	for idx, m := range h.env.roster() {
		h.present[idx] = true
		if m.SyncedTerm != 0 && m.SyncedTerm < w.term {
			h.survivors[idx] = m.SyncedTerm
		}
	}
	h.heldAtStart = make(map[Entity]bool, len(w.ents))
	for e := range w.ents {
		h.heldAtStart[e] = true
	}
}

// survivorTerm is the last term before this host's in which signaling recorded member idx synced,
// 0 if none: the record as this peer took over, or a later one of an earlier term (a member that
// resumed after a restart of the server, which rebuilt its record from the member's claim).
func (h *hostRole) survivorTerm(idx PeerIndex) Term {
	rec := h.survivors[idx]
	if t := h.env.roster()[idx].SyncedTerm; t < h.w.term && t > rec {
		rec = t
	}
	return rec
}

// survivorWindow reports whether hm's answer to its sync snapshot may relay host entities: its
// greeting names an earlier term that signaling's record covers (greeting ≤ record < this term).
// A greeting that claims more than the record is counted and opens nothing.
func (h *hostRole) survivorWindow(hm *hostMember) bool {
	if hm.heldTerm == 0 || hm.heldTerm >= h.w.term {
		return false
	}
	rec := h.survivorTerm(hm.link.idx)
	if windowOpen(hm.heldTerm, rec, h.w.term) {
		return true
	}
	// Not a strike: a member whose report of syncing reached signaling only after the election
	// that ended its term may be honest (its first sync, as the previous host went away).
	h.noteRefused(hm.link.idx, RefusedSurvivor, fmt.Sprintf("greeting claims term %d's state, signaling recorded it synced in term %d at most; no correction window", hm.heldTerm, rec))
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

// knownVersion is the highest version of entity number n this world knows of: live, deleted, or 0.
func (w *World) knownVersion(n uint16) uint16 {
	var v uint16
	if e, ok := w.byNumber[n]; ok {
		v = e.Version()
	}
	if dv, ok := w.r.DeletedVersion(n); ok && dv > v {
		v = dv
	}
	return v
}
