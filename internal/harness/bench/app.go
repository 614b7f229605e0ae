package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
)

const (
	room = "bench"
	// hostUser is the identity of the bench host; the bench rooms pin it, so a new bench host
	// takes the room over once it has synced.
	hostUser = "benchhost"

	schemaMover schema.ID = 1
	propPos               = 0 // x, y: posEncoding, 6 bytes; changes every tick
	propSent              = 1 // int64 unix nanos: when the host wrote the tick
	tick                  = 50 * time.Millisecond
)

// Bounds of the options, so that a typo cannot take the machine down.
const (
	MaxBots     = 64
	MaxEntities = 20000
	MaxDuration = 10 * time.Minute
	MaxTrials   = 500
)

// posEncoding is the movers' position as a game would choose it: x and y quantized to 1/256 over
// [−1024, 1024] (3 bytes each). Colyseus's side of the comparison keeps two float32 (8 bytes).
var posEncoding = schema.Quantized(2, -1024, 1024, 1.0/256)

var schemas = schema.MustTable(schema.Schema{ID: schemaMover, Name: "mover", Properties: []schema.Property{
	{Name: "pos", Component: 1024, Encoding: posEncoding},
	{Name: "sent", Component: 1025, Size: 8},
}})

// plainSchemas is the same mover as a user would first write it (-schema plain): the position as
// 8 raw bytes, two little-endian float32, as Colyseus's side holds it.
var plainSchemas = schema.MustTable(schema.Schema{ID: schemaMover, Name: "mover", Properties: []schema.Property{
	{Name: "pos", Component: 1024, Size: 8},
	{Name: "sent", Component: 1025, Size: 8},
}})

// Schema names of -schema.
const (
	SchemaQuantized = "quantized" // the default: posEncoding, 6 bytes
	SchemaPlain     = "plain"     // two float32, 8 bytes
)

// validSchema checks a -schema name ("" is the default, quantized).
func validSchema(name string) error {
	switch name {
	case "", SchemaQuantized, SchemaPlain:
		return nil
	}
	return fmt.Errorf("-schema %q: want %s or %s", name, SchemaQuantized, SchemaPlain)
}

// schemaTable is the bench schema of a -schema name.
func schemaTable(name string) *schema.Table {
	if name == SchemaPlain {
		return plainSchemas
	}
	return schemas
}

// appendPos encodes a mover's position.
func appendPos(dst []byte, x, y float64) []byte {
	return schema.AppendQuantized(schema.AppendQuantized(dst, posEncoding, x), posEncoding, y)
}

// appendPlainPos encodes a mover's position as plainSchemas holds it.
func appendPlainPos(dst []byte, x, y float64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(x)))
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(y)))
}

// windowInterest is the bench's interest policy: member p follows the `follow` movers from mover
// p·follow on (wrapping), an explicit entity set as a game would give each player its
// surroundings. Movers are spawned in order from peer.FirstSpawnNumber.
type windowInterest struct{ follow, movers int }

func (wi windowInterest) Interest(_ *peer.World, member peer.PeerIndex, e peer.Entity) bool {
	i := int(e.Number()) - int(peer.FirstSpawnNumber)
	if i < 0 || i >= wi.movers {
		return false
	}
	start := int(member) * wi.follow % wi.movers
	return (i-start+wi.movers)%wi.movers < wi.follow
}

// probe is what a bot's app records for the driver. The atomics may be read from any goroutine;
// hist and seen belong to the peer's loop (read them through Peer.Do or after Run returned).
type probe struct {
	recording *atomic.Bool // shared: record latencies while set

	hist hist
	// seen is the newest sent time seen per entity (migration only; nil in fanout).
	seen map[peer.Entity]int64

	hostTerm      atomic.Uint64
	host          atomic.Uint64
	hostChangedAt atomic.Int64 // unix nanos
	syncedTerm    atomic.Uint64
	syncedAt      atomic.Int64
	lastSent      atomic.Int64 // newest sent time seen on any entity
	freshAfter    atomic.Int64 // set by the driver: values sent after this are fresh
	freshAt       atomic.Int64 // when the first fresh value arrived (0: not yet)
}

func newProbe(recording *atomic.Bool, track bool) *probe {
	pr := &probe{recording: recording}
	if track {
		pr.seen = make(map[peer.Entity]int64)
	}
	return pr
}

// expectFresh resets the fresh-value watch: the next value sent after t counts.
func (pr *probe) expectFresh(t time.Time) {
	pr.freshAt.Store(0)
	pr.freshAfter.Store(t.UnixNano())
}

// app is the peer.App of every bench peer. As host it spawns `entities` movers in an empty
// world and, every tick, moves the first moving ones: a new position and the current wall-clock
// time, so that receivers can measure latency. As member it only records (probe).
type app struct {
	entities int          // host: entities in a new world
	moving   int          // host: entities moved per tick; 0 moves all
	hold     *atomic.Bool // host: while set, do not move (nil: never hold)
	probe    *probe       // nil: record nothing
	plain    bool         // plainSchemas instead of schemas (-schema plain)
	// idle makes the app a peer.Idler whose members are always idle (the idle benchmark's
	// members sleep); the other benchmarks' members tick.
	idle bool

	movers []peer.Entity
	pos    []byte
	sent   [8]byte
	ticks  int
	// The clock is read once per arriving tick (the values of one datagram carry one sent time),
	// or every 64 values, so that measuring costs little next to what is measured.
	lastSent, now int64
	sinceNow      int
}

func (a *app) Schemas() *schema.Table {
	if a.plain {
		return plainSchemas
	}
	return schemas
}

// appendPos encodes a position in the app's schema.
func (a *app) appendPos(dst []byte, x, y float64) []byte {
	if a.plain {
		return appendPlainPos(dst, x, y)
	}
	return appendPos(dst, x, y)
}

// HostStart spawns the world when it is empty. A world that survived a migration is kept as is:
// respawning missing entities would hide a loss.
func (a *app) HostStart(w *peer.World) {
	have := w.EntitiesOf(schemaMover)
	if len(have) == 0 {
		for i := range a.entities {
			a.pos = a.appendPos(a.pos[:0], float64(i%1000), 0)
			binary.LittleEndian.PutUint64(a.sent[:], 0)
			if _, err := w.Spawn(schemaMover, nil, a.pos, a.sent[:]); err != nil {
				break
			}
		}
		have = w.EntitiesOf(schemaMover)
	}
	if a.moving > 0 && a.moving < len(have) {
		have = have[:a.moving]
	}
	a.movers = have
}

// SpawnAvatar gives bench members no avatar: they are passive receivers.
func (a *app) SpawnAvatar(*peer.World, peer.PeerInfo) (peer.Entity, error) { return 0, nil }

func (a *app) RPC(*peer.World, peer.PeerIndex, uint32, []byte) {}

// Idle: a member's Tick does nothing; with a.idle it says so (peer.Idler), and the member sleeps.
func (a *app) Idle(w *peer.World) bool { return a.idle && !w.IsHost() }

// Tick moves the movers on the host: every one gets a new position, x = (i + tick) mod 1000 and
// y = tick mod 1000 as on Colyseus's side, and the tick's time.
func (a *app) Tick(w *peer.World, _ time.Duration) {
	if !w.IsHost() || (a.hold != nil && a.hold.Load()) {
		return
	}
	a.ticks++
	now := time.Now().UnixNano()
	binary.LittleEndian.PutUint64(a.sent[:], uint64(now))
	for i, e := range a.movers {
		a.pos = a.appendPos(a.pos[:0], float64((i+a.ticks)%1000), float64(a.ticks%1000))
		if w.Set(e, propPos, a.pos) != nil {
			continue // despawned or not ours: nothing to move
		}
		_ = w.Set(e, propSent, a.sent[:])
	}
}

// OnEvent records latency (now − sent) of every sent value that arrives, and the host changes and
// syncs the migration driver waits for.
func (a *app) OnEvent(w *peer.World, ev peer.Event) {
	pr := a.probe
	if pr == nil {
		return
	}
	switch ev.Kind {
	case peer.EventUpdated:
		if ev.Props&(1<<propSent) != 0 {
			a.recordSent(w, ev.Entity)
		}
	case peer.EventHostChanged:
		pr.host.Store(uint64(ev.Peer))
		pr.hostTerm.Store(uint64(ev.Term))
		pr.hostChangedAt.Store(time.Now().UnixNano())
	case peer.EventSynced:
		pr.syncedAt.Store(time.Now().UnixNano())
		pr.syncedTerm.Store(uint64(ev.Term))
	default:
	}
}

// recordSent records the sent time entity e now holds.
func (a *app) recordSent(w *peer.World, e peer.Entity) {
	pr := a.probe
	v, ok := w.Get(e, propSent)
	if !ok || len(v) != 8 {
		return
	}
	sent := int64(binary.LittleEndian.Uint64(v))
	if sent == 0 {
		return // spawned, never moved
	}
	if sent != a.lastSent || a.sinceNow >= 64 {
		a.lastSent, a.now, a.sinceNow = sent, time.Now().UnixNano(), 0
	}
	a.sinceNow++
	now := a.now
	if pr.recording != nil && pr.recording.Load() {
		pr.hist.add(now - sent)
	}
	if sent > pr.lastSent.Load() {
		pr.lastSent.Store(sent)
	}
	if fa := pr.freshAfter.Load(); fa != 0 && sent > fa && pr.freshAt.Load() == 0 {
		pr.freshAt.Store(now)
	}
	if pr.seen != nil && sent > pr.seen[e] {
		pr.seen[e] = sent
	}
}
