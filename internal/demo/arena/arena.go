package arena

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
)

// Schema ids.
const (
	SchemaAvatar schema.ID = 1
	SchemaBox    schema.ID = 2
	SchemaRoom   schema.ID = 3
)

// Property indexes.
const (
	AvatarPos   = 0 // x, y mm: PosEncoding, 4 bytes
	AvatarColor = 1 // RGBA
	AvatarName  = 2 // UTF-8, variable

	BoxPos = 0 // x, y mm: PosEncoding, 4 bytes
	BoxVel = 1 // vx, vy mm/s: VelEncoding, 2–20 bytes (2 at rest, 4 at walking speed)

	RoomScore = 0 // uint32
	RoomGoals = 1 // uint32, boxes scored since the room began
)

// The world's geometry, in millimetres.
const (
	Width        = 20000
	Height       = 12000
	GoalX        = 19000 // a box whose centre passes GoalX scores
	BoxRadius    = 400
	AvatarRadius = 350
	// Friction keeps this fraction of a free box's velocity per second.
	frictionPerSecond = 0.25
	restSpeed         = 30   // mm/s: slower than this is at rest
	pushSpeed         = 2500 // mm/s given to a box an avatar walks into
	avatarSpeed       = 3000 // mm/s
)

var (
	// PosEncoding is a position: x and y in whole millimetres over [−32768, 32767] (the 20 m × 12 m
	// world with room to spare), 2 bytes each. A coordinate outside clamps to the range.
	PosEncoding = schema.Quantized(2, -32768, 32767, 1)
	// VelEncoding is a velocity: vx and vy in mm/s as zigzag varints (1 byte at rest, 2 up to
	// ±8191 mm/s).
	VelEncoding = schema.Encoding{Kind: schema.KindVarint, Count: 2}
)

var table = schema.MustTable(
	schema.Schema{ID: SchemaAvatar, Name: "avatar", Properties: []schema.Property{
		{Name: "pos", Component: 1100, Encoding: PosEncoding},
		{Name: "color", Component: 1101, Size: 4},
		{Name: "name", Component: 1102},
	}},
	schema.Schema{ID: SchemaBox, Name: "box", Properties: []schema.Property{
		{Name: "pos", Component: 1200, Encoding: PosEncoding},
		{Name: "vel", Component: 1201, Encoding: VelEncoding},
	}},
	schema.Schema{ID: SchemaRoom, Name: "room", Properties: []schema.Property{
		{Name: "score", Component: 1300, Size: 4},
		{Name: "goals", Component: 1301, Size: 4},
	}},
)

// Schemas is the arena's schema table.
func Schemas() *schema.Table { return table }

// Vec is a fixed-point vector in millimetres (or mm/s).
type Vec struct{ X, Y int32 }

// AppendVec encodes position v with PosEncoding (each coordinate clamped to its range).
func AppendVec(dst []byte, v Vec) []byte {
	dst = schema.AppendQuantized(dst, PosEncoding, float64(v.X))
	return schema.AppendQuantized(dst, PosEncoding, float64(v.Y))
}

// ErrNoAvatar: the member has no avatar (yet) to move.
var ErrNoAvatar = errors.New("arena: no avatar yet")

// MoveSelf moves the member's own avatar to v, as its player does: a write to the world (its
// owner's, so any member may). ErrNoAvatar before the host spawned it.
func MoveSelf(w *peer.World, v Vec) error {
	e, ok := w.AvatarOf(w.Self())
	if !ok {
		return ErrNoAvatar
	}
	return w.Set(e, AvatarPos, AppendVec(nil, v))
}

// ParseVec decodes a position; a value that is not one is the zero Vec.
func ParseVec(b []byte) Vec {
	x, rest, err := schema.ConsumeQuantized(b, PosEncoding)
	if err != nil {
		return Vec{}
	}
	y, rest, err := schema.ConsumeQuantized(rest, PosEncoding)
	if err != nil || len(rest) != 0 {
		return Vec{}
	}
	return Vec{int32(x), int32(y)}
}

// AppendVel encodes velocity v with VelEncoding.
func AppendVel(dst []byte, v Vec) []byte {
	return schema.AppendVarint(schema.AppendVarint(dst, int64(v.X)), int64(v.Y))
}

// ParseVel decodes a velocity; a value that is not one is the zero Vec.
func ParseVel(b []byte) Vec {
	x, rest, err := schema.ConsumeVarint(b)
	if err != nil {
		return Vec{}
	}
	y, rest, err := schema.ConsumeVarint(rest)
	if err != nil || len(rest) != 0 || x != int64(int32(x)) || y != int64(int32(y)) {
		return Vec{}
	}
	return Vec{int32(x), int32(y)}
}

// ParseU32 decodes a uint32 property; a value of the wrong size is 0.
func ParseU32(b []byte) uint32 { return u32(b) }

func u32(b []byte) uint32 {
	if len(b) != 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func appendU32(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }

// Config configures a Game.
type Config struct {
	// Boxes is the number of boxes a new room starts with; default 8.
	Boxes int
	// Bot, when set, drives this peer's avatar with scripted input (move, grab, release).
	Bot *BotConfig
}

// BotConfig is the scripted behaviour of a bot.
type BotConfig struct {
	// Seed makes the behaviour reproducible.
	Seed uint64
	// MoveFor stops all writing after this long (zero: never); the bot stays connected.
	MoveFor time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Game is the arena as a peer.App.
type Game struct {
	cfg Config
	bot *bot
	buf []byte
	// seen is each avatar's position at the host's previous physics step: only an avatar that
	// moved since pushes boxes, so a crowd standing still leaves the world at rest.
	seen map[peer.Entity]Vec
}

// New returns a Game.
func New(cfg Config) *Game {
	if cfg.Boxes <= 0 {
		cfg.Boxes = 8
	}
	g := &Game{cfg: cfg, seen: make(map[peer.Entity]Vec)}
	if cfg.Bot != nil {
		now := cfg.Bot.Now
		if now == nil {
			now = time.Now
		}
		g.bot = &bot{rng: rand.New(rand.NewPCG(cfg.Bot.Seed, 0x5eed)), moveFor: cfg.Bot.MoveFor, now: now}
	}
	return g
}

// Schemas implements peer.App.
func (g *Game) Schemas() *schema.Table { return table }

// HostStart spawns the room and the boxes in a new room; after a migration the world is kept.
func (g *Game) HostStart(w *peer.World) {
	if !w.Exists(peer.RoomEntity) {
		_ = w.SpawnRoom(SchemaRoom, nil, appendU32(nil, 0), appendU32(nil, 0))
	}
	if len(w.EntitiesOf(SchemaBox)) > 0 {
		return
	}
	for i := range g.cfg.Boxes {
		pos := Vec{int32(3000 + (i%4)*3500), int32(3000 + (i/4%3)*3000)}
		_, _ = w.Spawn(SchemaBox, nil, AppendVec(nil, pos), AppendVel(nil, Vec{}))
	}
}

// SpawnAvatar gives every member an avatar at a spot of its own.
func (g *Game) SpawnAvatar(w *peer.World, p peer.PeerInfo) (peer.Entity, error) {
	i := int32(p.Index)
	pos := Vec{1000 + (i*1700)%(Width-2000), 1000 + (i*1100)%(Height-2000)}
	color := []byte{byte(60 + i*97%180), byte(60 + i*57%180), byte(60 + i*31%180), 255}
	name := p.ID
	if len(name) > 64 {
		name = name[:64]
	}
	return w.Spawn(SchemaAvatar, nil, AppendVec(nil, pos), color, []byte(name))
}

// RPC: the arena uses none.
func (g *Game) RPC(*peer.World, peer.PeerIndex, uint32, []byte) {}

// Tick runs the host's physics (when hosting) and the bot's input (when a bot).
func (g *Game) Tick(w *peer.World, dt time.Duration) {
	if dt <= 0 || dt > time.Second {
		dt = 50 * time.Millisecond
	}
	if g.bot != nil {
		g.bot.tick(w, dt)
	}
	if w.IsHost() {
		g.physics(w, dt)
	}
}

// physics moves free boxes, pushes boxes that moving avatars walk into, and scores goals. An
// avatar standing still pushes nothing (a box pinned between it and a wall, or bounced between
// standing avatars, would move forever): a room where nobody moves comes to rest.
func (g *Game) physics(w *peer.World, dt time.Duration) {
	sec := dt.Seconds()
	keep := math.Pow(frictionPerSecond, sec)
	avatars := w.EntitiesOf(SchemaAvatar)
	moving := make([]Vec, 0, len(avatars))
	seen := make(map[peer.Entity]Vec, len(avatars))
	for _, a := range avatars {
		ap, _ := w.Get(a, AvatarPos)
		apos := ParseVec(ap)
		seen[a] = apos
		if last, ok := g.seen[a]; ok && last != apos {
			moving = append(moving, apos)
		}
	}
	g.seen = seen
	for _, b := range w.EntitiesOf(SchemaBox) {
		if !w.CanWrite(b) {
			continue // a member holds it: it writes the box
		}
		pv, _ := w.Get(b, BoxPos)
		vv, _ := w.Get(b, BoxVel)
		pos, vel := ParseVec(pv), ParseVel(vv)
		for _, apos := range moving {
			dx, dy := float64(pos.X-apos.X), float64(pos.Y-apos.Y)
			d := math.Hypot(dx, dy)
			if d < BoxRadius+AvatarRadius && d > 0 {
				vel = Vec{int32(dx / d * pushSpeed), int32(dy / d * pushSpeed)}
			}
		}
		if vel == (Vec{}) {
			continue
		}
		pos.X += int32(float64(vel.X) * sec)
		pos.Y += int32(float64(vel.Y) * sec)
		vel = Vec{int32(float64(vel.X) * keep), int32(float64(vel.Y) * keep)}
		// Walls stop a box (no bounce: a box an avatar pins to a wall comes to rest).
		if pos.X < BoxRadius || pos.X > Width-BoxRadius {
			vel.X = 0
			pos.X = clamp(pos.X, BoxRadius, Width-BoxRadius)
		}
		if pos.Y < BoxRadius || pos.Y > Height-BoxRadius {
			vel.Y = 0
			pos.Y = clamp(pos.Y, BoxRadius, Height-BoxRadius)
		}
		if math.Hypot(float64(vel.X), float64(vel.Y)) < restSpeed {
			vel = Vec{}
		}
		if pos.X > GoalX {
			g.score(w)
			pos, vel = Vec{Width / 2, Height / 2}, Vec{}
		}
		_ = w.Set(b, BoxPos, AppendVec(g.buf[:0], pos))
		_ = w.Set(b, BoxVel, AppendVel(g.buf[:0], vel))
	}
}

func (g *Game) score(w *peer.World) {
	s, _ := w.Get(peer.RoomEntity, RoomScore)
	n, _ := w.Get(peer.RoomEntity, RoomGoals)
	_ = w.Set(peer.RoomEntity, RoomScore, appendU32(nil, u32(s)+10))
	_ = w.Set(peer.RoomEntity, RoomGoals, appendU32(nil, u32(n)+1))
}

func clamp(v, lo, hi int32) int32 { return max(lo, min(hi, v)) }

// bot is scripted input: walk to random targets, grab the nearest box now and then, carry it,
// let go.
type bot struct {
	rng     *rand.Rand
	moveFor time.Duration
	now     func() time.Time
	started time.Time
	target  Vec
	holding peer.Entity
	held    time.Duration
	nextTry time.Duration
	elapsed time.Duration
	stopped bool
}

func (b *bot) tick(w *peer.World, dt time.Duration) {
	me, ok := w.AvatarOf(w.Self())
	if !ok || !w.CanWrite(me) {
		return
	}
	if b.started.IsZero() {
		b.started = b.now()
		b.target = b.randomTarget()
		b.nextTry = time.Duration(1000+b.rng.IntN(2000)) * time.Millisecond
	}
	if b.moveFor > 0 && b.now().Sub(b.started) >= b.moveFor {
		if !b.stopped {
			b.stopped = true
			if b.holding != 0 {
				_ = w.Relinquish(b.holding)
				b.holding = 0
			}
		}
		return
	}
	b.elapsed += dt
	pv, _ := w.Get(me, AvatarPos)
	pos := ParseVec(pv)
	step := float64(avatarSpeed) * dt.Seconds()
	dx, dy := float64(b.target.X-pos.X), float64(b.target.Y-pos.Y)
	if d := math.Hypot(dx, dy); d <= step {
		pos = b.target
		b.target = b.randomTarget()
	} else {
		pos.X += int32(dx / d * step)
		pos.Y += int32(dy / d * step)
	}
	_ = w.Set(me, AvatarPos, AppendVec(nil, pos))

	// Carry a held box along; let go after a while.
	if b.holding != 0 {
		if !w.Exists(b.holding) || w.Authority(b.holding) != w.Self() {
			if w.Exists(b.holding) && b.held < 500*time.Millisecond {
				b.held += dt // the grant may still be on its way
				return
			}
			b.holding, b.held = 0, 0
			return
		}
		b.held += dt
		_ = w.Set(b.holding, BoxPos, AppendVec(nil, Vec{clamp(pos.X+AvatarRadius+BoxRadius, BoxRadius, Width-BoxRadius), clamp(pos.Y, BoxRadius, Height-BoxRadius)}))
		_ = w.Set(b.holding, BoxVel, AppendVel(nil, Vec{}))
		if b.held > 2*time.Second {
			_ = w.Relinquish(b.holding)
			b.holding, b.held = 0, 0
		}
		return
	}
	if b.elapsed >= b.nextTry {
		b.elapsed = 0
		b.nextTry = time.Duration(2000+b.rng.IntN(3000)) * time.Millisecond
		if box, ok := nearest(w, pos); ok && !w.IsHost() {
			if w.RequestLock(box) == nil {
				b.holding, b.held = box, 0
			}
		}
	}
}

func (b *bot) randomTarget() Vec {
	return Vec{int32(1000 + b.rng.IntN(Width-3000)), int32(1000 + b.rng.IntN(Height-2000))}
}

func nearest(w *peer.World, pos Vec) (peer.Entity, bool) {
	best, bestD := peer.Entity(0), math.Inf(1)
	for _, e := range w.EntitiesOf(SchemaBox) {
		if w.Authority(e) != w.Host() {
			continue
		}
		pv, _ := w.Get(e, BoxPos)
		p := ParseVec(pv)
		if d := math.Hypot(float64(p.X-pos.X), float64(p.Y-pos.Y)); d < bestD {
			best, bestD = e, d
		}
	}
	return best, bestD < math.Inf(1)
}

// RadiusInterest is an interest policy for the arena (peer.Config.Interest): a member follows the
// avatars and boxes within Radius millimetres of its own avatar (the room entity and its own
// entities always). A member without an avatar yet follows nothing else.
type RadiusInterest struct {
	Radius int
}

// Interest implements peer.InterestPolicy.
func (ri RadiusInterest) Interest(w *peer.World, member peer.PeerIndex, e peer.Entity) bool {
	me, ok := w.AvatarOf(member)
	if !ok {
		return false
	}
	mv, _ := w.Get(me, AvatarPos)
	ev, ok := w.Get(e, AvatarPos) // BoxPos is property 0 too
	if !ok {
		return false
	}
	a, b := ParseVec(mv), ParseVec(ev)
	dx, dy := int64(a.X-b.X), int64(a.Y-b.Y)
	r := int64(ri.Radius)
	return dx*dx+dy*dy <= r*r
}
