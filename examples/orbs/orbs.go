// Package orbs is a small Go-hosted game, the model of a dedicated host with its own schema:
// players walk to orbs; the host, the only judge, moves a taken orb and scores the taker. The
// browser page (web/) runs the same schema in JS; the host program is host/, a headless bot
// ../orbs-bot.
package orbs

import (
	"encoding/binary"
	"strings"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
)

// Schema ids and property indexes; web/orbs.js holds the same table (the room refuses a peer
// whose table's fingerprint differs).
const (
	SchemaOrb    schema.ID = 1
	SchemaPlayer schema.ID = 2
	SchemaScore  schema.ID = 3

	OrbPos = 0 // orb: position

	PlayerPos  = 0 // player: position, written by the player
	PlayerName = 1 // player: name, set by the host at spawn

	ScorePlayer = 0 // score: the player's peer index (u32 LE), set by the host
	ScorePoints = 1 // score: orbs taken (u32 LE), written by the host
)

// The field, in game units: positions are two uint16 LE (x, y).
const (
	Width  = 1000
	Height = 600
	// Reach is how close (in units, per axis and Euclidean) a player must come to take an orb.
	Reach = 30
	// Speed is how far a player walks per second.
	Speed = 300
	// Orbs is how many orbs the host keeps on the field.
	Orbs = 5
)

// Messages and Actions (the same numbers in web/orbs.js).
const (
	// MsgScored is the host's application message to a player that took an orb: its points (u32 LE).
	MsgScored uint8 = 200
	// MsgCheer is the host's application message to everyone: member (u32 LE) cheers.
	MsgCheer uint8 = 201
	// ActionCheer is a player's Action to the host: cheer (no data).
	ActionCheer uint32 = 1
)

var table = schema.MustTable(
	schema.Schema{ID: SchemaOrb, Name: "orb", Properties: []schema.Property{
		{Name: "pos", Component: 1024, Size: 4},
	}},
	schema.Schema{ID: SchemaPlayer, Name: "player", Properties: []schema.Property{
		{Name: "pos", Component: 1025, Size: 4},
		{Name: "name", Component: 1026}, // Size 0: variable length
	}},
	schema.Schema{ID: SchemaScore, Name: "score", Properties: []schema.Property{
		{Name: "player", Component: 1027, Size: 4},
		{Name: "points", Component: 1028, Size: 4},
	}},
)

// Pos is a position on the field.
type Pos struct{ X, Y int }

// Encode returns p as the 4-byte property value, clamped to the field.
func (p Pos) Encode() []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint16(b, uint16(min(max(p.X, 0), Width)))
	binary.LittleEndian.PutUint16(b[2:], uint16(min(max(p.Y, 0), Height)))
	return b
}

// DecodePos reads a position value; a value of the wrong size is the origin.
func DecodePos(b []byte) Pos {
	if len(b) != 4 {
		return Pos{}
	}
	return Pos{int(binary.LittleEndian.Uint16(b)), int(binary.LittleEndian.Uint16(b[2:]))}
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// Game is the orbs App for every peer: its host part scores, its member part does nothing but
// what a caller's Steer says (a bot steers; the browser page has its own JS).
type Game struct {
	// Steer, when set, is called on every tick of a member with its own avatar; it returns where
	// the avatar walks to. Nil: the avatar stands still.
	Steer func(w *peer.World, self peer.Entity) Pos
}

// Schemas is the table of every peer of an orbs room.
func (g *Game) Schemas() *schema.Table { return table }

// HostStart puts the orbs on a new field; after a migration the field is kept.
func (g *Game) HostStart(w *peer.World) {
	for i := len(w.EntitiesOf(SchemaOrb)); i < Orbs; i++ {
		_, _ = w.Spawn(SchemaOrb, nil, spot(uint32(i)*7919+1).Encode())
	}
}

// SpawnAvatar gives member p a player (the peer grants p authority over it) and a score that
// only the host writes.
func (g *Game) SpawnAvatar(w *peer.World, p peer.PeerInfo) (peer.Entity, error) {
	name, _, _ := strings.Cut(p.ID, "/") // "user/device": show the user
	if len(name) > 64 {
		name = name[:64]
	}
	start := Pos{X: 50 + int(p.Index)*97%(Width-100), Y: Height / 2}
	e, err := w.Spawn(SchemaPlayer, nil, start.Encode(), []byte(name))
	if err != nil {
		return 0, err
	}
	if _, ok := scoreOf(w, p.Index); !ok {
		if _, err := w.Spawn(SchemaScore, nil, u32(uint32(p.Index)), u32(0)); err != nil {
			return 0, err
		}
	}
	return e, nil
}

// Tick walks a member's avatar where Steer says, and on the host scores players that reach an
// orb and moves the orb.
func (g *Game) Tick(w *peer.World, dt time.Duration) {
	if !w.IsHost() {
		if self, ok := w.AvatarOf(w.Self()); ok && g.Steer != nil {
			walk(w, self, g.Steer(w, self), dt)
		}
		return
	}
	for _, pl := range w.EntitiesOf(SchemaPlayer) {
		v, _ := w.Get(pl, PlayerPos)
		at := DecodePos(v)
		for _, orb := range w.EntitiesOf(SchemaOrb) {
			ov, _ := w.Get(orb, OrbPos)
			o := DecodePos(ov)
			if dist2(at, o) > Reach*Reach {
				continue
			}
			who := w.Authority(pl)
			sc, ok := scoreOf(w, who)
			if !ok {
				continue
			}
			pv, _ := w.Get(sc, ScorePoints)
			points := binary.LittleEndian.Uint32(append(pv, 0, 0, 0, 0)) + 1
			_ = w.Set(sc, ScorePoints, u32(points))
			_ = w.Set(orb, OrbPos, spot(uint32(orb.Number())*31+points*7919).Encode())
			if who != w.Self() {
				_ = w.SendMessage(who, MsgScored, u32(points), true) // after the score, in order
			}
		}
	}
}

// RPC: orbs has no RPCs.
func (g *Game) RPC(*peer.World, peer.PeerIndex, uint32, []byte) {}

// Action: on the host, a player cheers; everyone hears who (an application message).
func (g *Game) Action(w *peer.World, from peer.PeerIndex, typ uint32, _ []byte) {
	if w.IsHost() && typ == ActionCheer {
		_ = w.SendMessage(peer.Everyone, MsgCheer, u32(uint32(from)), true)
	}
}

// Points returns the score of member p (0 when it has none).
func Points(w *peer.World, p peer.PeerIndex) uint32 {
	sc, ok := scoreOf(w, p)
	if !ok {
		return 0
	}
	v, _ := w.Get(sc, ScorePoints)
	if len(v) != 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(v)
}

// Nearest returns the orb nearest to at (ok false when there is none).
func Nearest(w *peer.World, at Pos) (Pos, bool) {
	best, found := Pos{}, false
	for _, orb := range w.EntitiesOf(SchemaOrb) {
		v, _ := w.Get(orb, OrbPos)
		if o := DecodePos(v); !found || dist2(at, o) < dist2(at, best) {
			best, found = o, true
		}
	}
	return best, found
}

// scoreOf finds member p's score entity (a scan: a room holds a few dozen entities).
func scoreOf(w *peer.World, p peer.PeerIndex) (peer.Entity, bool) {
	for _, sc := range w.EntitiesOf(SchemaScore) {
		if v, _ := w.Get(sc, ScorePlayer); len(v) == 4 && binary.LittleEndian.Uint32(v) == uint32(p) {
			return sc, true
		}
	}
	return 0, false
}

// walk moves the avatar self toward target at Speed.
func walk(w *peer.World, self peer.Entity, target Pos, dt time.Duration) {
	v, _ := w.Get(self, PlayerPos)
	at := DecodePos(v)
	step := int(Speed * dt.Seconds())
	next := Pos{X: at.X + clamp(target.X-at.X, step), Y: at.Y + clamp(target.Y-at.Y, step)}
	if next != at {
		_ = w.Set(self, PlayerPos, next.Encode())
	}
}

func clamp(d, step int) int { return min(max(d, -step), step) }

func dist2(a, b Pos) int { return (a.X-b.X)*(a.X-b.X) + (a.Y-b.Y)*(a.Y-b.Y) }

// spot is a position picked by a seed: deterministic, so a test can replay a game.
func spot(seed uint32) Pos {
	seed ^= seed << 13
	seed ^= seed >> 17
	seed ^= seed << 5
	return Pos{X: 40 + int(seed%(Width-80)), Y: 40 + int((seed/Width)%(Height-80))}
}
