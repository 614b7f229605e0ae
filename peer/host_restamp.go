package peer

import (
	"time"

	"github.com/concordrtc/concord/crdt"
)

// Rejected writes and re-stamps (docs/protocol.md §5, "Authority on the host"): a member's write
// to an entity it may not write is refused, and the host re-asserts its own state of the entity
// above the refused write so that every replica, the writer's included, converges to it.

// restamper undoes rejected writes: it remembers which entities to re-assert (rejected,
// rejectedAbsent), re-stamps them into the relay stream once their owners have answered
// (restamp), and lets an author's writes that a re-stamp buried win again (mergeWrite). It
// strikes members through gate.
type restamper struct {
	roleBase
	gate      *gate
	rejectLog int
	reassert  map[Entity]bool         // entities to re-stamp after rejected writes
	absent    map[uint64]bool         // keys of rejected corrections this host lacks: restamp deletes them
	restamped map[uint64]restampedKey // keys restamp rewrote, until their author writes again
	lost      map[Entity]lostAuthority
}

// admit checks a member's write stamped ts, logs a refusal, and re-asserts the host's state of the
// entity so that the member (which keeps its own write, stamped higher) converges back.
func (h *hostRole) admit(hm *hostMember, e Entity, ts crdt.Timestamp) bool {
	err := h.auth.AdmitWrite(hm.link.idx, e)
	if err == nil {
		return true
	}
	h.rejected(hm, e, ts, err, true)
	return false
}

// raceWindow is how long after a member lost the authority over an entity (it handed a lock
// back, or the lock expired) its writes to it are an expected race rather than a fault: the
// member keeps writing until the host's transfer reaches it, one round trip later.
const raceWindow = 2 * time.Second

// lostAuthority records that peer stopped being an entity's author at a time.
type lostAuthority struct {
	peer PeerIndex
	at   time.Time
}

// authorityLost notes that member from no longer writes e.
func (r *restamper) authorityLost(e Entity, from PeerIndex) {
	if from == r.w.self || from == 0 {
		return
	}
	if r.lost == nil || len(r.lost) > maxRestamped {
		r.lost = make(map[Entity]lostAuthority)
	}
	r.lost[e] = lostAuthority{peer: from, at: r.env.now()}
}

// race reports whether a rejected write of member idx to e is an expected race of normal play.
func (r *restamper) race(idx PeerIndex, e Entity) bool {
	l, ok := r.lost[e]
	return ok && l.peer == idx && r.env.now().Sub(l.at) < raceWindow
}

func (r *restamper) rejected(hm *hostMember, e Entity, ts crdt.Timestamp, err error, live bool) {
	idx := hm.link.idx
	r.count.rejected.Add(1)
	if r.race(idx, e) {
		r.count.rejectedRace.Add(1)
		r.log.Debug().Err(err).Uint64("peer", uint64(idx)).Uint64("entity", uint64(e)).Msg("write rejected: authority just moved (expected race)")
	} else {
		if r.rejectLog < 20 || r.rejectLog%1000 == 0 {
			r.log.Warn().Err(err).Uint64("peer", uint64(idx)).Uint64("entity", uint64(e)).Msg("write rejected")
		}
		r.rejectLog++
		if live {
			// A live write the member could not have made in a race: every one costs a re-stamp
			// broadcast to the room, so a member that keeps at it is dropped (strike).
			_ = r.gate.strike(hm, err.Error())
		}
	}
	if uint64(ts) > uint64(r.w.r.Clock())+maxStampSkew {
		// Never followed: stampOK refused it before; this guards any other caller.
		return
	}
	r.w.r.ObserveClock(ts)
	if r.reassert == nil {
		r.reassert = make(map[Entity]bool)
	}
	r.reassert[e] = true
}

// rejectedAbsent notes a rejected correction m to a key this host does not hold at all (the
// previous host wrote it after this one stopped hearing it): rewriting the entity's entries
// would leave the key to its writer for good, so restamp deletes it above the write instead.
func (r *restamper) rejectedAbsent(m *crdt.Message) {
	if !r.reassert[m.Entity] || (m.Type != crdt.PutComponent && m.Type != crdt.DeleteComponent) {
		return // not re-stamped (a stamp out of bounds), or not a component's value
	}
	if _, _, ok, _ := r.w.r.Get(m.Entity, m.Component); ok {
		return
	}
	if r.absent == nil || len(r.absent) > maxRestamped {
		r.absent = make(map[uint64]bool)
	}
	r.absent[entryKey(m.Entity, m.Component)] = true
}

// restamp rewrites every entry of the entities queued by rejected with the open batch's stamp
// (above every rejected write) and appends them to relay, so that every replica takes the host's
// state; a rejected key the host lacks is deleted at that stamp (rejectedAbsent). An entity whose
// owner is pending (its answer to its sync snapshot not in yet) waits for a later batch.
func (r *restamper) restamp(relay []byte, pending func(Entity) bool) []byte {
	if len(r.reassert) == 0 {
		return relay
	}
	w := r.w
	var now map[Entity]bool
	for e := range r.reassert {
		if pending(e) {
			continue // kept for a later batch
		}
		if now == nil {
			now = make(map[Entity]bool)
		}
		now[e] = true
		delete(r.reassert, e)
	}
	if len(now) == 0 {
		return relay
	}
	var entries []crdt.Entry
	for e := range now {
		w.r.RangeEntity(e, func(en crdt.Entry) bool {
			en.Data = append([]byte(nil), en.Data...)
			entries = append(entries, en)
			return true
		})
	}
	for k := range r.absent {
		e, c := Entity(k>>32), crdt.ComponentID(k)
		if !now[e] {
			continue // kept for a later batch, with its entity
		}
		delete(r.absent, k)
		if _, _, ok, _ := w.r.Get(e, c); !ok && w.Exists(e) {
			entries = append(entries, crdt.Entry{Entity: e, Component: c, Deleted: true})
		}
	}
	if len(entries) == 0 {
		return relay
	}
	ts := w.batchStamp()
	if r.restamped == nil || len(r.restamped) > maxRestamped {
		r.restamped = make(map[uint64]restampedKey)
	}
	for _, en := range entries {
		w.r.WriteAt(en.Entity, en.Component, ts, en.Data, en.Deleted)
		k := entryKey(en.Entity, en.Component)
		before := en.Timestamp
		if prev, ok := r.restamped[k]; ok && prev.after == before {
			before = prev.before // re-stamped again, unchanged since: keep its author's stamp
		}
		r.restamped[k] = restampedKey{before: before, after: ts}
		en.Timestamp = ts
		relay = appendEntry(relay, en)
	}
	return relay
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
func (r *restamper) mergeWrite(m *crdt.Message, origin PeerIndex) {
	w := r.w
	if w.mergeRemote(m, origin) != crdt.Outdated || len(r.restamped) == 0 {
		return
	}
	k := entryKey(m.Entity, m.Component)
	rk, ok := r.restamped[k]
	if !ok {
		return
	}
	if _, ts, found, _ := w.r.Get(m.Entity, m.Component); !found || ts != rk.after {
		delete(r.restamped, k) // written since the re-stamp: nothing left to make up for
		return
	}
	if m.Timestamp <= rk.before {
		return // older than the value re-stamped (a late datagram)
	}
	ts := w.batchStamp()
	deleted := m.Type == crdt.DeleteComponent || m.Type == crdt.DeleteComponentNetwork
	if w.r.WriteAt(m.Entity, m.Component, ts, m.Data, deleted) == crdt.Applied {
		// The author's next writes of the burst, stamped before it hears of ts, are newer still.
		r.restamped[k] = restampedKey{before: m.Timestamp, after: ts}
		rewritten := *m
		rewritten.Timestamp = ts
		w.observe(&rewritten, w.self) // to every member, the author included: its stamp changed
	}
}
