// Package tiles is the demo world of docs/protocol.md §11: 8 × 8 regions of 16 × 16 tiles of
// 1000 mm, where players walk and place or remove blocks on the tiles of their region.
package tiles

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/world"
)

// The world's shape.
const (
	Name       = "tiles"
	Cols, Rows = 8, 8
	TilesPer   = 16   // tiles along a region's side
	Tile       = 1000 // mm
	MaxSpeed   = 4000 // mm/s
	Reach      = 3    // tiles from the avatar a block may be placed or removed
	Kinds      = 7
)

// Schema ids and property indexes.
const (
	SchemaPlayer schema.ID = 1
	SchemaBlock  schema.ID = 2

	PlayerPos   = 0
	PlayerVel   = 1
	PlayerColor = 2
	PlayerName  = 3
	PlayerOwner = 4

	BlockX    = 0
	BlockY    = 1
	BlockKind = 2
)

// Input kinds (the first byte of an input's data).
const (
	InputWalk   = 1 // vx i16 | vy i16
	InputPlace  = 2 // tx i32 | ty i32 | kind u8
	InputRemove = 3 // tx i32 | ty i32
)

var table = schema.MustTable(
	schema.Schema{ID: SchemaPlayer, Name: "player", Properties: []schema.Property{
		{Name: "pos", Component: 2100, Encoding: world.PosEncoding},
		{Name: "vel", Component: 2101, Encoding: world.PosEncoding},
		{Name: "color", Component: 2102, Size: 4},
		{Name: "name", Component: 2103},
		{Name: "owner", Component: 2104},
	}},
	schema.Schema{ID: SchemaBlock, Name: "block", Properties: []schema.Property{
		{Name: "x", Component: 2200, Size: 4},
		{Name: "y", Component: 2201, Size: 4},
		{Name: "kind", Component: 2202, Size: 1},
	}},
)

// Def is the tiles world.
func Def() world.Def {
	return world.Def{Name: Name, Cols: Cols, Rows: Rows, RegionSize: TilesPer * Tile, View: 1, App: &App{}}
}

// App is the tiles world's game.
type App struct{}

// Schemas implements world.App.
func (*App) Schemas() *schema.Table { return table }

// Avatar implements world.App.
func (*App) Avatar() world.AvatarSchema {
	return world.AvatarSchema{ID: SchemaPlayer, Pos: PlayerPos, Owner: PlayerOwner}
}

// Generate scatters some blocks, drawn from the region's seed.
func (*App) Generate(w *peer.World, r world.Region, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x711e5))
	n := 4 + rng.IntN(8)
	used := map[[2]int32]bool{}
	for range n {
		tx := r.Min.X/Tile + int32(rng.IntN(TilesPer))
		ty := r.Min.Y/Tile + int32(rng.IntN(TilesPer))
		if used[[2]int32{tx, ty}] {
			continue
		}
		used[[2]int32{tx, ty}] = true
		_, _ = w.Spawn(SchemaBlock, nil, i32(tx), i32(ty), []byte{byte(1 + rng.IntN(Kinds))})
	}
}

// NewPlayer starts a player in the middle of the world's first region, a colour of its own.
func (*App) NewPlayer(r world.Region, owner string) [][]byte {
	h := uint32(2166136261)
	for _, c := range []byte(owner) {
		h = (h ^ uint32(c)) * 16777619
	}
	pos := world.Vec{X: r.Min.X + (r.Max.X-r.Min.X)/2, Y: r.Min.Y + (r.Max.Y-r.Min.Y)/2}
	name := owner
	if len(name) > 64 {
		name = name[:64]
	}
	color := []byte{byte(60 + h%180), byte(60 + (h>>8)%180), byte(60 + (h>>16)%180), 255}
	return [][]byte{world.AppendVec(nil, pos), world.AppendVec(nil, world.Vec{}), color, []byte(name), []byte(owner)}
}

// Input applies a walk, a place or a remove.
func (a *App) Input(w *peer.World, r world.Region, e peer.Entity, data []byte) {
	if len(data) == 0 {
		return
	}
	switch data[0] {
	case InputWalk:
		if len(data) != 5 {
			return
		}
		v := world.Vec{X: clamp(int32(int16(binary.LittleEndian.Uint16(data[1:])))), Y: clamp(int32(int16(binary.LittleEndian.Uint16(data[3:]))))}
		_ = w.Set(e, PlayerVel, world.AppendVec(nil, v))
	case InputPlace, InputRemove:
		if len(data) < 9 {
			return
		}
		tx, ty := int32(binary.LittleEndian.Uint32(data[1:])), int32(binary.LittleEndian.Uint32(data[5:]))
		if !a.owns(r, tx, ty) || !a.near(w, e, tx, ty) {
			return
		}
		b, found := BlockAt(w, tx, ty)
		if data[0] == InputRemove {
			if found {
				_ = w.Despawn(b)
			}
			return
		}
		if len(data) != 10 || data[9] < 1 || data[9] > Kinds {
			return
		}
		if found {
			_ = w.Set(b, BlockKind, data[9:10])
			return
		}
		_, _ = w.Spawn(SchemaBlock, nil, i32(tx), i32(ty), data[9:10])
	}
}

// Tick walks every avatar by its velocity.
func (*App) Tick(w *peer.World, r world.Region, dt time.Duration) {
	for _, e := range w.EntitiesOf(SchemaPlayer) {
		vb, _ := w.Get(e, PlayerVel)
		v, ok := world.ParseVec(vb)
		if !ok || v == (world.Vec{}) {
			continue
		}
		pb, _ := w.Get(e, PlayerPos)
		p, _ := world.ParseVec(pb)
		ms := int64(dt / time.Millisecond)
		p.X += int32(int64(v.X) * ms / 1000)
		p.Y += int32(int64(v.Y) * ms / 1000)
		_ = w.Set(e, PlayerPos, world.AppendVec(nil, p))
	}
}

func (*App) owns(r world.Region, tx, ty int32) bool {
	return r.Contains(world.Vec{X: tx * Tile, Y: ty * Tile})
}

func (*App) near(w *peer.World, e peer.Entity, tx, ty int32) bool {
	pb, _ := w.Get(e, PlayerPos)
	p, ok := world.ParseVec(pb)
	if !ok {
		return false
	}
	dx, dy := p.X/Tile-tx, p.Y/Tile-ty
	return dx >= -Reach && dx <= Reach && dy >= -Reach && dy <= Reach
}

// BlockAt finds the block on tile (tx, ty).
func BlockAt(w *peer.World, tx, ty int32) (peer.Entity, bool) {
	for _, b := range w.EntitiesOf(SchemaBlock) {
		x, _ := w.Get(b, BlockX)
		y, _ := w.Get(b, BlockY)
		if len(x) == 4 && len(y) == 4 && int32(binary.LittleEndian.Uint32(x)) == tx && int32(binary.LittleEndian.Uint32(y)) == ty {
			return b, true
		}
	}
	return 0, false
}

// Walk is a walk input.
func Walk(vx, vy int16) []byte {
	b := []byte{InputWalk}
	b = binary.LittleEndian.AppendUint16(b, uint16(vx))
	return binary.LittleEndian.AppendUint16(b, uint16(vy))
}

// Place is a place input.
func Place(tx, ty int32, kind byte) []byte {
	return append(append(append([]byte{InputPlace}, i32(tx)...), i32(ty)...), kind)
}

// Remove is a remove input.
func Remove(tx, ty int32) []byte { return append(append([]byte{InputRemove}, i32(tx)...), i32(ty)...) }

// ParseI32 decodes a block coordinate.
func ParseI32(b []byte) int32 {
	if len(b) != 4 {
		return 0
	}
	return int32(binary.LittleEndian.Uint32(b))
}

func i32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

func clamp(v int32) int32 { return min(max(v, -MaxSpeed), MaxSpeed) }
