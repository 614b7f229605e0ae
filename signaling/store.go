package signaling

// RoomCounters are the counters of a room that must never go back: the last peer index issued and
// the term. A Store keeps them across restarts of the server.
type RoomCounters struct {
	LastIndex PeerIndex `json:"lastIndex"`
	Term      Term      `json:"term"`
}

// Store keeps each room's counters across restarts, so that no peer index and no term is issued
// twice for a room (Config.Store). The hub calls it from its goroutine: LoadRoom once when a room
// opens, SaveRoom when the room's counters pass what was last saved. Implementations must be safe
// for that one caller and should answer within milliseconds.
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

// loadCounters raises r's counters to what the store saved for it, and reports whether there was
// anything saved.
func (h *hub) loadCounters(r *room) bool {
	if h.cfg.Store == nil {
		return false
	}
	c, err := h.cfg.Store.LoadRoom(r.id)
	if err != nil {
		r.log.Error().Err(err).Msg("room counters not loaded: peer indices and terms may repeat those before a restart")
		return false
	}
	r.last, r.term = max(r.last, c.LastIndex), max(r.term, c.Term)
	r.saved = RoomCounters{LastIndex: r.last, Term: r.term}
	return c != RoomCounters{}
}

// saveCounters saves r's counters when they have passed the last save: the term as it is, the
// last index StoreReserve ahead.
func (h *hub) saveCounters(r *room) {
	if h.cfg.Store == nil || (r.last <= r.saved.LastIndex && r.term <= r.saved.Term) {
		return
	}
	c := RoomCounters{LastIndex: r.saved.LastIndex, Term: r.term}
	if r.last > c.LastIndex {
		c.LastIndex = r.last + StoreReserve
	}
	if err := h.cfg.Store.SaveRoom(r.id, c); err != nil {
		r.log.Error().Err(err).Msg("room counters not saved")
		return
	}
	r.saved = c
}
