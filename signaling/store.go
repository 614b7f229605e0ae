package signaling

import (
	"errors"
	"fmt"
	"time"
)

// RoomCounters are the counters of a room that must never go back: the last peer index issued and
// the term. A Store keeps them across restarts of the server.
type RoomCounters struct {
	LastIndex PeerIndex `json:"lastIndex"`
	Term      Term      `json:"term"`
}

// Store keeps each room's counters across restarts, so that no peer index and no term is issued
// twice for a room (Config.Store). The hub never calls it from its own goroutine: each call runs on
// a goroutine of the server, at most one at a time per room (calls for different rooms run
// concurrently), and the hub acts on the answer when it arrives. A call may block (a JetStream
// round trip); it delays only its own room, and Server.Close waits for calls under way, so an
// implementation should bound each call with a timeout of its own.
type Store interface {
	// LoadRoom returns the counters saved for room, zero ones when none were.
	LoadRoom(room RoomID) (RoomCounters, error)
	// SaveRoom records the counters of room; they only ever grow.
	SaveRoom(room RoomID, c RoomCounters) error
}

// StoreReserve is how far past the last peer index issued the hub saves it: one save covers the
// next StoreReserve joins, and a restarted server starts past every index it may have issued (a
// skipped index is harmless, a reused one is not). The term is saved exactly, at every change and
// before any member hears of it, so that a host that survives a restart of the server resumes in
// its own term (no migration).
const StoreReserve = 64

// How the hub waits for its store (docs/protocol.md §4 "Signaling: limits").
const (
	// DefaultStoreTimeout is Config.StoreTimeout's default.
	DefaultStoreTimeout = 10 * time.Second
	// storeRetryMin and storeRetryMax bound the backoff between attempts of a failed save.
	storeRetryMin = 250 * time.Millisecond
	storeRetryMax = 5 * time.Second
	// maxDeferredJoins bounds the joins waiting for one room's counters to load; past it a join
	// gets server_busy at once.
	maxDeferredJoins = 256
)

// errStore is the cause given to joins refused because the room's store did not answer.
var errStore = errors.New("room storage unavailable")

// A room's counters travel between the hub and its Store by message (docs/protocol.md §4
// "Signaling: durable counters"):
//   - Opening a room loads its counters. Until they arrive the room is loading: joins to it wait
//     in room.deferred and are replayed in order; after Config.StoreTimeout (or a failed load)
//     they get server_busy and the room closes again. Other rooms never wait.
//   - When a room's counters pass what was saved (a new term, a peer index past the reserve),
//     the hub saves them and holds every frame it would send to that room's members
//     (room.held, in order) until the save is confirmed: no member hears of a term or a peer
//     index that a restart could issue again. A failed save is retried with backoff, the frames
//     still held. Signals between members already announced are not held.

// evStoreLoaded and evStoreSaved are a Store call's answer; seq tells a stale one apart.
type evStoreLoaded struct {
	r   *room
	seq uint64
	c   RoomCounters
	err error
}

type evStoreSaved struct {
	r   *room
	seq uint64
	c   RoomCounters
	err error
}

// evStoreRetry starts the next attempt of a failed save; evStoreTimeout ends a load that took
// longer than Config.StoreTimeout.
type evStoreRetry struct {
	r   *room
	seq uint64
}

type evStoreTimeout struct {
	r   *room
	seq uint64
}

// heldFrame is a frame for m kept until its room's counters are durable.
type heldFrame struct {
	m     *member
	frame []byte
}

// storeState is a room's side of the exchange with the Store; the hub owns it.
type storeState struct {
	// saved: the counters the Store holds for the room.
	saved RoomCounters
	// loading: the room's counters are being loaded; deferred joins wait for them. opener and
	// remembered are what the first join needs to know once they arrive (fromClaims).
	loading    bool
	deferred   []*evJoin
	remembered bool
	// dirty: the counters passed saved during the current event; saving: a save is under way or
	// waiting for its retry; held: the frames sent meanwhile, in order.
	dirty, saving bool
	held          []heldFrame
	retry         time.Duration
	// seq numbers the room's store calls and timers.
	seq       uint64
	stopTimer func() bool
}

// holding reports whether frames to r's members must wait for its counters to be saved.
func (r *room) holding() bool { return r.store.dirty || r.store.saving }

// covered reports whether the saved counters cover r's.
func (r *room) covered() bool {
	return r.last <= r.store.saved.LastIndex && r.term <= r.store.saved.Term
}

// beginLoad starts loading r's counters for the join ev, which waits with any that follow.
func (h *hub) beginLoad(r *room, ev *evJoin, remembered bool) {
	st := &r.store
	st.loading, st.remembered = true, remembered
	st.deferred = append(st.deferred, ev)
	st.seq++
	seq, id := st.seq, r.id
	st.stopTimer = h.cfg.AfterFunc(h.cfg.StoreTimeout, func() { h.post(&evStoreTimeout{r: r, seq: seq}) })
	h.spawn(func() {
		c, err := h.cfg.Store.LoadRoom(id)
		h.post(&evStoreLoaded{r: r, seq: seq, c: c, err: err})
	})
}

// deferJoin queues ev behind r's loading counters, or refuses it when too many wait.
func (h *hub) deferJoin(r *room, ev *evJoin) {
	if len(r.store.deferred) >= maxDeferredJoins {
		ev.reply <- joinResult{err: fmt.Errorf("%w: %d joins wait for room %q's counters to load", ErrServerBusy, len(r.store.deferred), r.id)}
		return
	}
	r.store.deferred = append(r.store.deferred, ev)
}

func (h *hub) loaded(ev *evStoreLoaded) {
	r := ev.r
	if h.rooms[r.id] != r || !r.store.loading || r.store.seq != ev.seq {
		return
	}
	if ev.err != nil {
		h.stats.storeErrors.Add(1)
		h.loadFailed(r, ev.err)
		return
	}
	st := &r.store
	if st.stopTimer != nil {
		st.stopTimer()
		st.stopTimer = nil
	}
	r.last, r.term = max(r.last, ev.c.LastIndex), max(r.term, ev.c.Term)
	st.saved = RoomCounters{LastIndex: r.last, Term: r.term}
	st.loading = false
	joins := st.deferred
	st.deferred = nil
	// A room that a claim opens afresh (the server restarted) has only its members' word for
	// its term; any other room's terms are all the server's own.
	r.fromClaims = joins[0].req.resume != nil && !st.remembered && ev.c == RoomCounters{}
	for _, j := range joins {
		h.join(j)
	}
}

// loadTimedOut ends a load that did not answer within StoreTimeout.
func (h *hub) loadTimedOut(ev *evStoreTimeout) {
	r := ev.r
	if h.rooms[r.id] != r || !r.store.loading || r.store.seq != ev.seq {
		return
	}
	h.stats.storeErrors.Add(1)
	h.loadFailed(r, fmt.Errorf("no answer within %v", h.cfg.StoreTimeout))
}

// loadFailed refuses the joins waiting for r and closes it again: without its counters the
// server could issue a peer index or a term twice.
func (h *hub) loadFailed(r *room, err error) {
	st := &r.store
	if st.stopTimer != nil {
		st.stopTimer()
		st.stopTimer = nil
	}
	st.loading = false
	st.seq++ // the load may still answer: ignore it
	r.log.Error().Err(err).Int("joins", len(st.deferred)).Msg("room counters not loaded: joins refused")
	for _, j := range st.deferred {
		j.reply <- joinResult{err: fmt.Errorf("%w: %w of room %q: %w", ErrServerBusy, errStore, r.id, err)}
	}
	st.deferred = nil
	if r.last == 0 && r.term == 0 {
		delete(h.rooms, r.id)
		h.stats.rooms.Add(-1)
		return
	}
	h.retire(r) // keep what the server remembered of it
}

// saveCounters notes that r's counters may have passed what was saved: if they have, frames to
// its members are held from now on, and a save starts once the current event is handled
// (startSaves), so that one save covers all an event changed.
func (h *hub) saveCounters(r *room) {
	if h.cfg.Store == nil || r.covered() || r.store.dirty {
		return
	}
	r.store.dirty = true
	if !r.store.saving {
		h.dirty = append(h.dirty, r)
	}
}

// startSaves starts the saves that the last event made necessary. A room retired meanwhile is
// saved too: its term must outlive it.
func (h *hub) startSaves() {
	for _, r := range h.dirty {
		if r.store.dirty && !r.store.saving {
			h.beginSave(r)
		}
	}
	clear(h.dirty)
	h.dirty = h.dirty[:0]
}

// beginSave saves r's counters: the term as it is, the last index StoreReserve ahead.
func (h *hub) beginSave(r *room) {
	st := &r.store
	c := RoomCounters{LastIndex: st.saved.LastIndex, Term: r.term}
	if r.last > c.LastIndex {
		c.LastIndex = r.last + StoreReserve
	}
	st.dirty, st.saving = false, true
	st.seq++
	seq, id := st.seq, r.id
	h.spawn(func() {
		err := h.cfg.Store.SaveRoom(id, c)
		h.post(&evStoreSaved{r: r, seq: seq, c: c, err: err})
	})
}

func (h *hub) saved(ev *evStoreSaved) {
	r, st := ev.r, &ev.r.store
	if !st.saving || st.seq != ev.seq {
		return
	}
	if ev.err != nil {
		h.stats.storeErrors.Add(1)
		st.retry = min(max(2*st.retry, storeRetryMin), storeRetryMax)
		r.log.Error().Err(ev.err).Uint64("term", uint64(r.term)).Int("held", len(st.held)).Dur("retry", st.retry).
			Msg("room counters not saved: the room's announcements wait")
		st.seq++
		seq := st.seq
		st.stopTimer = h.cfg.AfterFunc(st.retry, func() { h.post(&evStoreRetry{r: r, seq: seq}) })
		return
	}
	st.retry = 0
	st.saved.LastIndex, st.saved.Term = max(st.saved.LastIndex, ev.c.LastIndex), max(st.saved.Term, ev.c.Term)
	st.saving = false
	if !r.covered() {
		h.beginSave(r) // the counters moved on while this save ran
		return
	}
	// An event during the save may have marked the room dirty against the counters saved before
	// it; this save covers them, and frames must not be held again for a save that never starts.
	st.dirty = false
	held := st.held
	st.held = nil
	for _, hf := range held {
		if h.members[hf.m.c] == hf.m {
			h.send(hf.m, hf.frame)
		}
	}
}

func (h *hub) saveRetry(ev *evStoreRetry) {
	r := ev.r
	if r.store.saving && r.store.seq == ev.seq {
		r.store.stopTimer = nil
		h.beginSave(r)
	}
}
