package world

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// Bounds of a world definition (docs/protocol.md §11).
const (
	MaxName       = 32 // bytes of a world name
	MaxSide       = 64 // regions along one side
	DefaultView   = 1  // regions of view distance
	MaxView       = 4
	maxRegionSize = 1 << 24 // mm: a world of 64 regions still fits an int32
)

// ErrDef reports an invalid world definition.
var ErrDef = errors.New("world: bad definition")

// Vec is a world position or velocity in millimetres (mm/s).
type Vec struct{ X, Y int32 }

// PosEncoding is the encoding of a world position property: x and y as zigzag varints (3 bytes
// each up to ±1 km).
var PosEncoding = schema.Encoding{Kind: schema.KindVarint, Count: 2}

// AppendVec encodes v with PosEncoding.
func AppendVec(dst []byte, v Vec) []byte {
	return schema.AppendVarint(schema.AppendVarint(dst, int64(v.X)), int64(v.Y))
}

// ParseVec decodes a PosEncoding value; ok is false when b is not one.
func ParseVec(b []byte) (Vec, bool) {
	x, rest, err := schema.ConsumeVarint(b)
	if err != nil {
		return Vec{}, false
	}
	y, rest, err := schema.ConsumeVarint(rest)
	if err != nil || len(rest) != 0 || x != int64(int32(x)) || y != int64(int32(y)) {
		return Vec{}, false
	}
	return Vec{int32(x), int32(y)}, true
}

// AvatarSchema says which schema is the players' avatar and where its position and owner are.
type AvatarSchema struct {
	ID schema.ID
	// Pos is the index of the position property (PosEncoding); Owner of the UTF-8 "user/device".
	Pos, Owner int
}

// App is a world's game: what its region hosts run and what its clients read. Every method runs
// on one region host's loop with that region's world; none may block.
type App interface {
	Schemas() *schema.Table
	Avatar() AvatarSchema
	// Generate fills a region that was never visited (host only). seed is drawn from the world's
	// name and the region's coordinates: the same region always generates the same way.
	Generate(w *peer.World, r Region, seed uint64)
	// NewPlayer returns the avatar's property values, in schema order, of a player that arrives
	// for the first time; its position may lie in another region (the world hands it there).
	NewPlayer(r Region, owner string) [][]byte
	// Input applies one input of the resident player whose avatar is e (host only).
	Input(w *peer.World, r Region, e peer.Entity, data []byte)
	// Tick runs the region's systems (host only), before the world checks its avatars' bounds.
	Tick(w *peer.World, r Region, dt time.Duration)
}

// Def defines a world.
type Def struct {
	Name       string
	Cols, Rows int
	RegionSize int32 // millimetres
	View       int   // regions of view distance; 0: DefaultView
	App        App
}

// Check validates d and fills its defaults.
func (d *Def) Check() error {
	if err := CheckName(d.Name); err != nil {
		return err
	}
	switch {
	case d.Cols < 1 || d.Cols > MaxSide || d.Rows < 1 || d.Rows > MaxSide:
		return fmt.Errorf("%w: %d × %d regions, each side 1–%d", ErrDef, d.Cols, d.Rows, MaxSide)
	case d.RegionSize < 1 || d.RegionSize > maxRegionSize:
		return fmt.Errorf("%w: region size %d mm, 1–%d", ErrDef, d.RegionSize, maxRegionSize)
	case d.View < 0 || d.View > MaxView:
		return fmt.Errorf("%w: view %d, 0–%d", ErrDef, d.View, MaxView)
	case d.App == nil:
		return fmt.Errorf("%w: no App", ErrDef)
	}
	if d.View == 0 {
		d.View = DefaultView
	}
	return nil
}

// CheckName validates a world name: [A-Za-z0-9_-], 1–MaxName bytes.
func CheckName(name string) error {
	if name == "" || len(name) > MaxName {
		return fmt.Errorf("%w: name %q: 1–%d bytes", ErrDef, name, MaxName)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: name %q: only A-Z a-z 0-9 _ -", ErrDef, name)
		}
	}
	return nil
}

// Region is one region of a world.
type Region struct {
	World string
	X, Y  int
	// Min and Max bound it: Min ≤ pos < Max.
	Min, Max Vec
}

// Room is the region's room.
func (r Region) Room() signaling.RoomID { return RoomName(r.World, r.X, r.Y) }

// Contains reports whether p lies in r.
func (r Region) Contains(p Vec) bool {
	return p.X >= r.Min.X && p.X < r.Max.X && p.Y >= r.Min.Y && p.Y < r.Max.Y
}

// RoomName is the room of region (x, y) of world: "W.x.y".
func RoomName(world string, x, y int) signaling.RoomID {
	return signaling.RoomID(world + "." + strconv.Itoa(x) + "." + strconv.Itoa(y))
}

// ParseRoom splits a region room name; ok is false for any other name.
func ParseRoom(room signaling.RoomID) (world string, x, y int, ok bool) {
	world, rest, ok1 := strings.Cut(string(room), ".")
	xs, ys, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || CheckName(world) != nil {
		return "", 0, 0, false
	}
	x, err1 := strconv.Atoi(xs)
	y, err2 := strconv.Atoi(ys)
	if err1 != nil || err2 != nil || x < 0 || y < 0 || strconv.Itoa(x) != xs || strconv.Itoa(y) != ys {
		return "", 0, 0, false
	}
	return world, x, y, true
}

// Region returns region (x, y); ok is false outside the grid.
func (d *Def) Region(x, y int) (Region, bool) {
	if x < 0 || y < 0 || x >= d.Cols || y >= d.Rows {
		return Region{}, false
	}
	s := d.RegionSize
	return Region{World: d.Name, X: x, Y: y, Min: Vec{int32(x) * s, int32(y) * s}, Max: Vec{int32(x+1) * s, int32(y+1) * s}}, true
}

// Clamp brings p into the world.
func (d *Def) Clamp(p Vec) Vec {
	w, h := int32(d.Cols)*d.RegionSize, int32(d.Rows)*d.RegionSize
	p.X = min(max(p.X, 0), w-1)
	p.Y = min(max(p.Y, 0), h-1)
	return p
}

// RegionAt returns the region holding p (clamped into the world).
func (d *Def) RegionAt(p Vec) Region {
	p = d.Clamp(p)
	r, _ := d.Region(int(p.X/d.RegionSize), int(p.Y/d.RegionSize))
	return r
}

// InView reports whether region (x, y) is within view of region (cx, cy).
func (d *Def) InView(cx, cy, x, y int) bool {
	return abs(x-cx) <= d.View && abs(y-cy) <= d.View
}

// Rooms lists every region's room, row by row.
func (d *Def) Rooms() []signaling.RoomID {
	rooms := make([]signaling.RoomID, 0, d.Cols*d.Rows)
	for y := range d.Rows {
		for x := range d.Cols {
			rooms = append(rooms, RoomName(d.Name, x, y))
		}
	}
	return rooms
}

// Seed is the generator seed of region r: FNV-1a of "world.x.y".
func Seed(r Region) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(r.Room()))
	return h.Sum64()
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
