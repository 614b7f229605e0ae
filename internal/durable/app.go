package durable

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// Defaults for zero AppConfig fields.
const (
	DefaultInterval = 3 * time.Second
	// DefaultSlice is the work one tick of a pass does, in units of one entity number looked at
	// (a map lookup) or half an entry encoded: 2048 empty numbers or about 1000 entries, some
	// 60 µs (BenchmarkCheckpointSlice: p50 60 µs, p99 160 µs on a busy 2-core machine). At
	// 10,000 arena entities a pass takes 62 ticks, 3.1 s at 20 Hz.
	DefaultSlice = 2048
)

// AppConfig configures an App. Room is required.
type AppConfig struct {
	Room signaling.RoomID
	// Writer receives the checkpoints; if nil, the App only seeds the room.
	Writer *Writer
	// Seed is a validated message stream (the room's last checkpoint or its scene) merged into the
	// world before the game's first HostStart; nil for none.
	Seed []byte
	// SeedClock is the Lamport clock stored with the seed (a checkpoint's): the world's clock is
	// raised to it, so the host's next writes are above everything the checkpointing host saw.
	SeedClock crdt.Timestamp
	// Interval is the least time between two checkpoints of a changing world; a world that does
	// not change is not written again. If zero, DefaultInterval.
	Interval time.Duration
	// Slice is the work one tick of a pass does (see DefaultSlice). If zero, DefaultSlice.
	Slice int
	// Logger; the zero value discards.
	Logger zerolog.Logger
	// Now is the clock; if nil, time.Now.
	Now func() time.Time
	// Follow checkpoints a member's replica too, once it has synced with a host: the App of a
	// server-side follower (internal/follow), which never hosts. Its Seed (the stored
	// checkpoint) is not merged but checked: at its first sync the room's world must hold it
	// (Descends). A room whose first host did not restore it is not checkpointed, so that its
	// stored world is not replaced by a new one (logged as an error; the room is reported by
	// Writer.RefusedRooms as "not_restored").
	Follow bool
}

// App wraps the peer.App of a room's dedicated host with checkpoints: HostStart merges the seed
// before the game's own; while the peer hosts, Tick encodes a checkpoint a slice of entity
// numbers at a time, every Interval while the world changes and at every host change, and hands
// it to the Writer. Each entity number is encoded whole within one tick, so a checkpoint is a
// valid ADR-117 state: per number, the state at the tick that encoded it (a CRDT state the room
// went through or below, never beyond). Final writes the whole world when the peer has stopped.
// All methods but Final run on the peer's loop.
type App struct {
	inner peer.App
	cfg   AppConfig

	world  *peer.World
	seeded bool
	// synced: a follower's replica holds a host's world (EventSynced); it stays true while the
	// room migrates, since the replica only grows. notRestored: the world did not hold the
	// follower's seed at its first sync; it writes nothing.
	synced, notRestored bool

	// The pass in progress: the next number to encode, the stream so far and the replica's
	// change count when the pass began.
	passing     bool
	cursor      int
	buf         []byte
	passChanges uint64
	// The last checkpoint handed over: its change count and time; force asks for one now.
	savedChanges uint64
	hasSaved     bool
	savedAt      time.Time
	force        bool
	lastSize     int
}

// NewApp wraps inner.
func NewApp(inner peer.App, cfg AppConfig) *App {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Slice <= 0 {
		cfg.Slice = DefaultSlice
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &App{inner: inner, cfg: cfg}
}

// Schemas implements peer.App.
func (a *App) Schemas() *schema.Table { return a.inner.Schemas() }

// HostStart merges the seed into the world (once), then runs the game's HostStart, then asks for
// a checkpoint.
func (a *App) HostStart(w *peer.World) {
	a.world = w
	a.mergeSeed(w)
	a.inner.HostStart(w)
	a.force = true
}

// mergeSeed merges the seed into the world, once.
func (a *App) mergeSeed(w *peer.World) {
	if !a.seeded && a.cfg.Seed != nil {
		start := time.Now()
		err := w.MergeCheckpoint(a.cfg.Seed)
		w.Replica().ObserveClock(a.cfg.SeedClock)
		if err != nil {
			// Validated before the host started; this would be a bug.
			a.cfg.Logger.Error().Err(err).Str("room", string(a.cfg.Room)).Msg("seed not merged")
		} else {
			a.cfg.Logger.Info().Str("room", string(a.cfg.Room)).Int("entities", w.Replica().LiveEntities()).
				Uint32("clock", uint32(w.Replica().Clock())).Dur("took", time.Since(start)).Msg("room restored")
		}
		a.cfg.Seed = nil
	}
	a.seeded = true
}

// SpawnAvatar implements peer.App.
func (a *App) SpawnAvatar(w *peer.World, p peer.PeerInfo) (peer.Entity, error) {
	return a.inner.SpawnAvatar(w, p)
}

// RPC implements peer.App.
func (a *App) RPC(w *peer.World, from peer.PeerIndex, typ uint32, data []byte) {
	a.inner.RPC(w, from, typ, data)
}

// OnEvent passes events on and asks for a checkpoint at every host change.
func (a *App) OnEvent(w *peer.World, ev peer.Event) {
	if h, ok := a.inner.(peer.EventHandler); ok {
		h.OnEvent(w, ev)
	}
	switch ev.Kind {
	case peer.EventHostChanged:
		a.force = true
	case peer.EventSynced:
		if a.cfg.Follow && !a.synced && !w.IsHost() {
			a.checkRestored(w)
		}
		a.synced = true
	}
}

// Tick runs the game's tick, then one slice of checkpoint encoding while hosting.
func (a *App) Tick(w *peer.World, dt time.Duration) {
	a.inner.Tick(w, dt)
	a.world = w
	if a.cfg.Writer == nil {
		return
	}
	if !a.writes(w) {
		a.passing = false
		return
	}
	start := time.Now()
	if a.step(w) {
		a.cfg.Writer.ObserveLoop(time.Since(start))
	}
}

// writes reports whether this peer checkpoints its world now: it hosts, or it follows and has
// synced.
func (a *App) writes(w *peer.World) bool {
	return w.IsHost() || a.cfg.Follow && a.synced && !a.notRestored
}

// checkRestored checks, at a follower's first sync, that the room's world holds the stored
// checkpoint (its seed).
func (a *App) checkRestored(w *peer.World) {
	seed := a.cfg.Seed
	a.cfg.Seed, a.seeded = nil, true
	if seed == nil {
		return
	}
	if err := Descends(w.Replica(), seed); err != nil {
		a.notRestored = true
		if a.cfg.Writer != nil {
			a.cfg.Writer.notRestored(a.cfg.Room)
		}
		a.cfg.Logger.Error().Err(err).Str("room", string(a.cfg.Room)).
			Msg("the room's host did not restore its checkpoint: the room is not checkpointed, its stored world stays (docs/protocol.md §6 \"Kept rooms\")")
	}
}

// step starts or continues a pass and reports whether it did any work.
func (a *App) step(w *peer.World) bool {
	r := w.Replica()
	if !a.passing {
		now := a.cfg.Now()
		changed := !a.hasSaved || r.Changes() != a.savedChanges
		if !(a.force || changed && now.Sub(a.savedAt) >= a.cfg.Interval) {
			return false
		}
		a.passing, a.cursor, a.force = true, 0, false
		// Room for the whole pass up front: growing a megabyte buffer mid-pass costs a tick.
		a.buf = make([]byte, 0, max(a.lastSize+a.lastSize/8, r.Len()*40))
		a.passChanges = r.Changes()
	}
	a.buf, a.cursor = AppendNumbers(a.buf, r, a.cursor, a.cfg.Slice)
	if a.cursor == 1<<16 {
		a.finish(w, a.buf, r.Clock(), a.passChanges)
		a.passing = false
	}
	return true
}

func (a *App) finish(w *peer.World, data []byte, clock crdt.Timestamp, changes uint64) {
	a.cfg.Writer.Submit(Checkpoint{Room: a.cfg.Room, Term: w.Term(), Clock: clock, Data: data})
	a.savedChanges, a.hasSaved, a.savedAt, a.lastSize = changes, true, a.cfg.Now(), len(data)
	a.buf = nil
}

// Final writes the whole world if this peer hosted it (or, following, synced it) and it changed since the last checkpoint.
// Call it after the peer's Run has returned (on Run's goroutine), never while it runs.
func (a *App) Final() {
	w := a.world
	if w == nil || a.cfg.Writer == nil || !a.writes(w) || (a.hasSaved && !a.passing && w.Replica().Changes() == a.savedChanges) {
		return
	}
	data, clock := w.Checkpoint()
	a.finish(w, data, clock, w.Replica().Changes())
	a.passing = false
}

// AppendNumbers appends the state of entity numbers from lo on as ADR-117 messages until it has
// done budget units of work (a number looked at: 1, a message written: 2) or reached the last
// number, and returns the next number (1<<16 at the end): per number, its deleted version
// (DELETE_ENTITY), then the LWW entries and append values of its live version. Each number is
// written whole. Concatenated over [0, 65536) it is the whole state (in an order other than
// AppendState's; crdt.Replica.AppendState of the merged stream gives the canonical bytes).
func AppendNumbers(dst []byte, r *crdt.Replica, lo, budget int) ([]byte, int) {
	var m crdt.Message
	cost := 0
	n := lo
	for ; n < 1<<16 && cost < budget; n++ {
		cost++
		num := uint16(n)
		if v, ok := r.DeletedVersion(num); ok {
			m = crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(num, v)}
			dst = crdt.AppendMessage(dst, &m)
		}
		v, ok := r.LiveVersion(num)
		if !ok {
			continue
		}
		e := crdt.NewEntity(num, v)
		r.RangeEntity(e, func(en crdt.Entry) bool {
			m = crdt.Message{Type: crdt.PutComponent, Entity: en.Entity, Component: en.Component, Timestamp: en.Timestamp, Data: en.Data}
			if en.Deleted {
				m.Type, m.Data = crdt.DeleteComponent, nil
			}
			dst = crdt.AppendMessage(dst, &m)
			cost += 2
			return true
		})
		r.RangeEntityAppend(e, func(en crdt.AppendEntry) bool {
			m = crdt.Message{Type: crdt.AppendValue, Entity: en.Entity, Component: en.Component, Timestamp: en.Timestamp, Data: en.Data}
			dst = crdt.AppendMessage(dst, &m)
			cost += 2
			return true
		})
	}
	return dst, n
}
