package peer

import (
	"time"

	"github.com/concordrtc/concord/crdt"
)

// Rejected writes and re-stamps (docs/protocol.md §5, "Authority on the host"): a member's write
// to an entity it may not write is refused, and the host re-asserts its own state of the entity
// above the refused write so that every replica, the writer's included, converges to it.

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
func (h *hostRole) authorityLost(e Entity, from PeerIndex) {
	if from == h.w.self || from == 0 {
		return
	}
	if h.lost == nil || len(h.lost) > maxRestamped {
		h.lost = make(map[Entity]lostAuthority)
	}
	h.lost[e] = lostAuthority{peer: from, at: h.env.now()}
}

// race reports whether a rejected write of member idx to e is an expected race of normal play.
func (h *hostRole) race(idx PeerIndex, e Entity) bool {
	l, ok := h.lost[e]
	return ok && l.peer == idx && h.env.now().Sub(l.at) < raceWindow
}

func (h *hostRole) rejected(hm *hostMember, e Entity, ts crdt.Timestamp, err error, live bool) {
	idx := hm.link.idx
	h.count.rejected.Add(1)
	if h.race(idx, e) {
		h.count.rejectedRace.Add(1)
		h.log.Debug().Err(err).Uint64("peer", uint64(idx)).Uint64("entity", uint64(e)).Msg("write rejected: authority just moved (expected race)")
	} else {
		if h.rejectLog < 20 || h.rejectLog%1000 == 0 {
			h.log.Warn().Err(err).Uint64("peer", uint64(idx)).Uint64("entity", uint64(e)).Msg("write rejected")
		}
		h.rejectLog++
		if live {
			// A live write the member could not have made in a race: every one costs a re-stamp
			// broadcast to the room, so a member that keeps at it is dropped (strike).
			_ = h.strike(hm, err.Error())
		}
	}
	if uint64(ts) > uint64(h.w.r.Clock())+maxStampSkew {
		// Never followed: stampOK refused it before; this guards any other caller.
		return
	}
	h.w.r.ObserveClock(ts)
	if h.reassert == nil {
		h.reassert = make(map[Entity]bool)
	}
	h.reassert[e] = true
}

// rejectedAbsent notes a rejected correction m to a key this host does not hold at all (the
// previous host wrote it after this one stopped hearing it): rewriting the entity's entries
// would leave the key to its writer for good, so restamp deletes it above the write instead.
func (h *hostRole) rejectedAbsent(m *crdt.Message) {
	if !h.reassert[m.Entity] || (m.Type != crdt.PutComponent && m.Type != crdt.DeleteComponent) {
		return // not re-stamped (a stamp out of bounds), or not a component's value
	}
	if _, _, ok, _ := h.w.r.Get(m.Entity, m.Component); ok {
		return
	}
	if h.absent == nil || len(h.absent) > maxRestamped {
		h.absent = make(map[uint64]bool)
	}
	h.absent[entryKey(m.Entity, m.Component)] = true
}

// restamp rewrites every entry of the entities queued by rejected with the open batch's stamp
// (above every rejected write) and relays them, so that every replica takes the host's state;
// a rejected key the host lacks is deleted at that stamp (rejectedAbsent).
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
	for k := range h.absent {
		e, c := Entity(k>>32), crdt.ComponentID(k)
		if !now[e] {
			continue // kept for a later batch, with its entity
		}
		delete(h.absent, k)
		if _, _, ok, _ := w.r.Get(e, c); !ok && w.Exists(e) {
			entries = append(entries, crdt.Entry{Entity: e, Component: c, Deleted: true})
		}
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
