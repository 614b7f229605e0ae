package peer

import (
	"fmt"

	"github.com/concordrtc/concord/crdt"
)

// The world's bounds beyond properties (docs/protocol.md §5, "Limits"; docs/security.md §5,
// "Append sets and world size"). Properties are bounded by their schemas and by what a member
// may write (its avatar, its locks); append sets and CRDT corrections are not, so the host
// bounds what they add: the append sets one entity carries, the bytes one member's writes add to
// the world, and the world's size, kept below internal/durable's checkpoint cap so that a room
// can always be checkpointed and its snapshot stays of a size a joiner takes in seconds.

// Defaults of WorldLimits.
const (
	// DefaultMaxAppendSets is how many append sets (components) one entity may carry: a chat
	// log, an input stream, a few more. With crdt.DefaultAppendRetention values of up to
	// MaxAppendValue each, at most 2 MiB per entity.
	DefaultMaxAppendSets = 16
	// DefaultMaxMemberWorldBytes is how many bytes one member's writes may add to the world:
	// a full append set of 1 KiB values is 152 KiB, so about seven of them.
	DefaultMaxMemberWorldBytes = 1 << 20
	// DefaultMaxWorldBytes is the world's size past which nothing a member sends and no append
	// that grows it is admitted: 6 MiB, 2 MiB below internal/durable.MaxCheckpoint, room for the
	// host's own writes past the bound.
	DefaultMaxWorldBytes = 6 << 20
)

// WorldLimits bound what the world holds beyond properties. The zero value of each field means
// its default. Sizes are crdt.Replica.Size bytes: the world as an ADR-117 message stream, the
// bytes of a checkpoint.
type WorldLimits struct {
	// AppendSets is how many append sets one entity may carry; an append that would start one
	// more is refused (a member's, RefusedAppendSets) or fails (World.Append, ErrWorldLimit).
	// Default DefaultMaxAppendSets.
	AppendSets int
	// MemberBytes is how many bytes the writes of one member (its admitted append requests and
	// CRDT corrections, net of what they replaced) may add to the world; past it a write that
	// grows the world is refused (RefusedMemberWorld). The account is kept per identity for the
	// life of the host role. Default DefaultMaxMemberWorldBytes.
	MemberBytes int
	// RoomBytes is the world's size past which a member's write that grows it is refused
	// (RefusedWorldBytes) and World.Append fails (ErrWorldLimit). Default DefaultMaxWorldBytes.
	// A dedicated host with checkpoints should keep it below internal/durable.MaxCheckpoint.
	RoomBytes int
}

func (l WorldLimits) withDefaults() WorldLimits {
	if l.AppendSets <= 0 {
		l.AppendSets = DefaultMaxAppendSets
	}
	if l.MemberBytes <= 0 {
		l.MemberBytes = DefaultMaxMemberWorldBytes
	}
	if l.RoomBytes <= 0 {
		l.RoomBytes = DefaultMaxWorldBytes
	}
	return l
}

// appendFits checks an append against the bounds this peer can see: the append sets of e and
// the size of its own replica. On a member it is a courtesy (the host decides, with its own
// limits); on the host it is the bound.
func (w *World) appendFits(e Entity, c crdt.ComponentID, value []byte) error {
	m := crdt.Message{Type: crdt.AppendValue, Entity: e, Component: c, Data: value}
	if why, reason := appendBounds(w.r, w.limits, &m); reason != "" {
		return fmt.Errorf("%w: %s (%s)", ErrWorldLimit, reason, why)
	}
	return nil
}

// appendBounds checks m against the append sets of its entity and the room's size; it returns
// why and a reason to refuse, or "".
func appendBounds(r *crdt.Replica, l WorldLimits, m *crdt.Message) (Refusal, string) {
	if m.Type == crdt.AppendValue {
		if n, has := r.AppendSets(m.Entity, m.Component); !has && n >= l.AppendSets {
			return RefusedAppendSets, fmt.Sprintf("entity %v carries %d append sets, the limit", m.Entity, n)
		}
	}
	if g := r.Growth(m); g > 0 && r.Size()+g > l.RoomBytes {
		return RefusedWorldBytes, fmt.Sprintf("world of %d bytes, %d more would pass the room's %d", r.Size(), g, l.RoomBytes)
	}
	return 0, ""
}

// maxWorldAccounts bounds the members whose world account a host keeps; past it the smallest
// goes (a member that added little loses little).
const maxWorldAccounts = 4096

// worldKey names the account of the member linked as idx: its identity, else its index.
func (g *gate) worldKey(idx PeerIndex) string {
	if id := g.env.roster()[idx].ID; id != "" {
		return "id " + string(id)
	}
	return fmt.Sprintf("#%d", idx)
}

// admitGrowth checks a write of member hm against the world's bounds (admitWorld), with the
// bytes hm's writes added so far. It returns why and a reason to refuse m, or "".
func (g *gate) admitGrowth(hm *hostMember, m *crdt.Message) (Refusal, string) {
	return admitWorld(g.w.r, g.w.limits, g.worldUse[g.worldKey(hm.link.idx)], m)
}

// admitWorld is the admission rule of a member's write m that may grow the world r, whose
// writer's earlier writes added used bytes: the append sets of its entity, then the room's size,
// then the member's budget (testdata/peer/world_limits.json holds vectors of it, which the JS
// host checks too). A write that does not grow the world (a value replaced by one no longer)
// passes whatever the accounts say, so a member over its budget keeps playing. It returns why
// and a reason to refuse m, or "".
func admitWorld(r *crdt.Replica, l WorldLimits, used int, m *crdt.Message) (Refusal, string) {
	if why, reason := appendBounds(r, l, m); reason != "" {
		return why, reason
	}
	if g := r.Growth(m); g > 0 && used+g > l.MemberBytes {
		return RefusedMemberWorld, fmt.Sprintf("member's writes added %d bytes to the world, %d more would pass its %d", used, g, l.MemberBytes)
	}
	return 0, ""
}

// charge adds to hm's account what its write changed the world's size by since before (less
// when the write replaced more than it added; never below zero).
func (g *gate) charge(hm *hostMember, before int) {
	d := g.w.r.Size() - before
	if d == 0 {
		return
	}
	k := g.worldKey(hm.link.idx)
	if g.worldUse == nil {
		g.worldUse = make(map[string]int)
	}
	if _, ok := g.worldUse[k]; !ok && len(g.worldUse) >= maxWorldAccounts {
		least, lk := 0, ""
		for k, v := range g.worldUse {
			if lk == "" || v < least {
				least, lk = v, k
			}
		}
		delete(g.worldUse, lk)
	}
	g.worldUse[k] = max(0, g.worldUse[k]+d)
}
