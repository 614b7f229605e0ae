package follow

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// DefaultUser is the identity user of followers when Config.Peer.User is empty.
const DefaultUser = "concord-follow"

// Config configures a Follower.
type Config struct {
	// Peer is the follower's peer configuration: Server, Room, Token and its WebRTC (Transport,
	// ICE, …) are the caller's. New sets App, NoHost and Kind ("host": no avatar), and User to
	// DefaultUser when empty.
	Peer peer.Config
	// Schemas is the game's schema table, which the follower decodes the host's snapshots with.
	// Required.
	Schemas *schema.Table
	// Writer, if not nil, receives the follower's checkpoints (durable.App in Follow mode).
	Writer *durable.Writer
	// Seed is the room's stored checkpoint (durable.LoadSeed). The follower checks, at its first
	// sync, that the room's world holds it (the room's first host restored it) and otherwise
	// writes no checkpoint: a world started afresh must not replace the stored one.
	Seed durable.Seed
	// Interval is durable.AppConfig.Interval (0: its default).
	Interval time.Duration
	// MaxWorld bounds the world the follower holds, in crdt.Replica.Size bytes (a checkpoint's):
	// past it the follower leaves the room and Run returns ErrWorldTooLarge, so that a hostile
	// host cannot grow the server's memory without end; no checkpoint of that world is written.
	// If zero, durable.MaxCheckpoint (a larger world could not be checkpointed anyway).
	MaxWorld int
	// OnEvent, if not nil, hears every event of the world on the peer's loop, with the view; it
	// must not block.
	OnEvent func(v View, ev peer.Event)
	// Logger is the follower's and its peer's (Peer.Logger is not used); the zero value
	// discards.
	Logger zerolog.Logger
}

// ErrNoSchemas: Config.Schemas is nil.
var ErrNoSchemas = errors.New("follow: no schema table")

// ErrWorldTooLarge: the room's world grew past Config.MaxWorld; the follower left.
var ErrWorldTooLarge = errors.New("follow: the room's world is over the follower's bound")

// Follower follows one room read-only (see the package doc).
type Follower struct {
	p       *peer.Peer
	app     *followApp
	durable *durable.App // nil without Writer and Seed
	changes chan struct{}
	synced  atomic.Bool
	// stop ends Run's peer (set by Run, called on the loop by the App); tooBig says why.
	stop   context.CancelFunc
	tooBig bool
}

// New makes a follower; Run runs it.
func New(cfg Config) (*Follower, error) {
	if cfg.Schemas == nil {
		return nil, ErrNoSchemas
	}
	f := &Follower{changes: make(chan struct{}, 1)}
	if cfg.MaxWorld <= 0 {
		cfg.MaxWorld = durable.MaxCheckpoint
	}
	f.app = &followApp{f: f, schemas: cfg.Schemas, onEvent: cfg.OnEvent, maxWorld: cfg.MaxWorld}
	pc := cfg.Peer
	pc.App, pc.NoHost, pc.Kind = f.app, true, signaling.KindHost
	if pc.User == "" {
		pc.User = DefaultUser
	}
	pc.Logger = cfg.Logger
	if cfg.Writer != nil || cfg.Seed.Data != nil {
		f.durable = durable.NewApp(f.app, durable.AppConfig{Room: signaling.RoomID(pc.Room), Writer: cfg.Writer,
			Seed: cfg.Seed.Data, SeedClock: cfg.Seed.Clock, Interval: cfg.Interval, Follow: true,
			Logger: cfg.Logger})
		pc.App = f.durable
	}
	p, err := peer.New(pc)
	if err != nil {
		return nil, err
	}
	f.p = p
	return f, nil
}

// Run follows the room until ctx ends or the peer fails (a host of another schema table:
// peer.ErrSchemaMismatch), then writes the final checkpoint of what it saw.
func (f *Follower) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.stop = cancel
	err := f.p.Run(ctx)
	if f.tooBig {
		return ErrWorldTooLarge
	}
	if f.durable != nil {
		f.durable.Final() // Run has returned: the world is this goroutine's
	}
	return err
}

// Do runs fn on the peer's loop with a read-only view of the world and waits for it.
func (f *Follower) Do(ctx context.Context, fn func(v View)) error {
	return f.p.Do(ctx, func(w *peer.World) { fn(View{w}) })
}

// Changes receives a value after a tick in which the world changed (capacity 1: a reader that
// is behind gets one value for many changes, then reads the view).
func (f *Follower) Changes() <-chan struct{} { return f.changes }

// Synced reports whether the follower holds a host's world (it has synced once).
func (f *Follower) Synced() bool { return f.synced.Load() }

// Done is closed when Run's peer has stopped.
func (f *Follower) Done() <-chan struct{} { return f.p.Done() }

// Peer is the follower's peer (its Status, its refusal counters).
func (f *Follower) Peer() *peer.Peer { return f.p }

// followApp is the follower's peer.App: it writes nothing and tells of changes.
type followApp struct {
	f        *Follower
	schemas  *schema.Table
	onEvent  func(View, peer.Event)
	maxWorld int
	changes  uint64 // the replica's change count at the last notice
}

func (a *followApp) Schemas() *schema.Table { return a.schemas }

// HostStart never runs (NoHost); a follower elected anyway (an old server ignores NoHost)
// serves the world it holds and spawns nothing.
func (a *followApp) HostStart(*peer.World) {}

func (a *followApp) SpawnAvatar(*peer.World, peer.PeerInfo) (peer.Entity, error) {
	return 0, nil
}

func (a *followApp) RPC(*peer.World, peer.PeerIndex, uint32, []byte) {}

func (a *followApp) Tick(w *peer.World, _ time.Duration) {
	if c := w.Replica().Changes(); c != a.changes {
		a.changes = c
		if w.Replica().Size() > a.maxWorld && !a.f.tooBig {
			a.f.tooBig = true
			a.f.stop()
			return
		}
		select {
		case a.f.changes <- struct{}{}:
		default:
		}
	}
}

func (a *followApp) OnEvent(w *peer.World, ev peer.Event) {
	if ev.Kind == peer.EventSynced {
		a.f.synced.Store(true)
	}
	if a.onEvent != nil {
		a.onEvent(View{w}, ev)
	}
}

// View is a read-only view of a follower's world, valid only inside Do or Config.OnEvent.
type View struct{ w *peer.World }

// Term is the host term the follower knows.
func (v View) Term() peer.Term { return v.w.Term() }

// Host is the host's peer index (0: none).
func (v View) Host() peer.PeerIndex { return v.w.Host() }

// Entities lists the live entities of a schema this follower runs, in ascending order.
func (v View) Entities() []peer.Entity { return v.w.Entities() }

// EntitiesOf lists the live entities of schema id.
func (v View) EntitiesOf(id schema.ID) []peer.Entity { return v.w.EntitiesOf(id) }

// SchemaOf returns e's schema.
func (v View) SchemaOf(e peer.Entity) (*schema.Schema, bool) { return v.w.SchemaOf(e) }

// Get returns property prop of e; the slice aliases the replica: copy it to keep it.
func (v View) Get(e peer.Entity, prop int) ([]byte, bool) { return v.w.Get(e, prop) }

// Creation returns e's creation data.
func (v View) Creation(e peer.Entity) []byte { return v.w.Creation(e) }

// Authority returns the peer that writes e.
func (v View) Authority(e peer.Entity) peer.PeerIndex { return v.w.Authority(e) }

// AvatarOf returns member p's avatar.
func (v View) AvatarOf(p peer.PeerIndex) (peer.Entity, bool) { return v.w.AvatarOf(p) }

// Values returns the append set c of e.
func (v View) Values(e peer.Entity, c crdt.ComponentID) [][]byte { return v.w.Values(e, c) }

// Clock is the replica's Lamport clock.
func (v View) Clock() crdt.Timestamp { return v.w.Replica().Clock() }

// Checkpoint returns the whole world as a canonical ADR-117 message stream and its clock.
func (v View) Checkpoint() ([]byte, crdt.Timestamp) { return v.w.Checkpoint() }
