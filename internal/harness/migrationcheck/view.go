package migrationcheck

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/peer"
)

// Key is one LWW key of a replica.
type Key struct {
	Entity    crdt.Entity
	Component crdt.ComponentID
}

// View is what the invariant needs from a replica: every key's timestamp, the deleted entity
// versions and the live entities. As a record (Absorb) it holds the maximum over several replicas.
type View struct {
	Self, Host peer.PeerIndex
	Term       peer.Term
	Hash       uint64
	Keys       map[Key]crdt.Timestamp
	Deleted    map[uint16]uint16
	Live       map[peer.Entity]bool
	Locks      int
	// Avatars maps a member to its arena avatar's position (a view of one replica only).
	Avatars map[peer.PeerIndex][]byte
}

// NewView returns an empty View.
func NewView() *View {
	return &View{Keys: make(map[Key]crdt.Timestamp), Deleted: make(map[uint16]uint16),
		Live: make(map[peer.Entity]bool), Avatars: make(map[peer.PeerIndex][]byte)}
}

// Read takes the view of w. It must run on w's peer loop.
func Read(w *peer.World) *View {
	v := NewView()
	v.Self, v.Host, v.Term = w.Self(), w.Host(), w.Term()
	r := w.Replica()
	v.Hash = r.Hash()
	r.Range(func(en crdt.Entry) bool {
		v.Keys[Key{en.Entity, en.Component}] = en.Timestamp
		return true
	})
	r.RangeDeleted(func(n, ver uint16) bool {
		v.Deleted[n] = ver
		return true
	})
	for _, e := range w.Entities() {
		v.Live[e] = true
		switch rec := w.AuthorityRecord(e); rec.Kind {
		case authority.KindLock:
			v.Locks++
		case authority.KindAvatar:
			pos, _ := w.Get(e, arena.AvatarPos)
			v.Avatars[peer.PeerIndex(rec.Peer)] = bytes.Clone(pos)
		}
	}
	return v
}

// Absorb raises v to the per-key maximum of v and o.
func (v *View) Absorb(o *View) {
	for k, ts := range o.Keys {
		if cur, ok := v.Keys[k]; !ok || ts > cur {
			v.Keys[k] = ts
		}
	}
	for n, ver := range o.Deleted {
		if cur, ok := v.Deleted[n]; !ok || ver > cur {
			v.Deleted[n] = ver
		}
	}
	for e := range o.Live {
		v.Live[e] = true
	}
	v.Locks = max(v.Locks, o.Locks)
}

// EntityDeleted reports whether version e of its number is deleted in v.
func (v *View) EntityDeleted(e crdt.Entity) bool {
	ver, ok := v.Deleted[e.Number()]
	return ok && ver >= e.Version()
}

// Check lists every way conv fails to dominate rec: a key lost or older, a deleted version
// forgotten, a live entity gone that mayVanish does not excuse. Empty means the invariant holds.
func Check(rec, conv *View, mayVanish func(peer.Entity) bool) []string {
	var out []string
	keys := make([]Key, 0, len(rec.Keys))
	for k := range rec.Keys {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(a.Entity, b.Entity); c != 0 {
			return c
		}
		return cmp.Compare(a.Component, b.Component)
	})
	for _, k := range keys {
		ts := rec.Keys[k]
		got, ok := conv.Keys[k]
		switch {
		case ok && got >= ts:
		case ok:
			out = append(out, fmt.Sprintf("entity %v component %d: timestamp %d, a survivor held %d", k.Entity, k.Component, got, ts))
		case conv.EntityDeleted(k.Entity) && mayVanish(k.Entity):
		case conv.EntityDeleted(k.Entity):
			out = append(out, fmt.Sprintf("entity %v component %d (timestamp %d): the entity was deleted", k.Entity, k.Component, ts))
		default:
			out = append(out, fmt.Sprintf("entity %v component %d (timestamp %d): lost", k.Entity, k.Component, ts))
		}
	}
	for n, ver := range rec.Deleted {
		if got, ok := conv.Deleted[n]; !ok || got < ver {
			out = append(out, fmt.Sprintf("entity number %d: deleted version %d forgotten (now %d, %v)", n, ver, got, ok))
		}
	}
	for e := range rec.Live {
		if !conv.Live[e] && !mayVanish(e) {
			out = append(out, fmt.Sprintf("entity %v vanished", e))
		}
	}
	return out
}

// HoldsState reports the first entry of want that got lacks or holds otherwise (got may hold
// more: a scene's state next to a game's own entities). Append sets are not compared: a want with
// any is an error.
func HoldsState(got, want crdt.StateJSON) error {
	rows := map[[2]uint32]crdt.LWWJSON{}
	for _, r := range got.LWW {
		rows[[2]uint32{r.Entity, r.Component}] = r
	}
	for _, w := range want.LWW {
		g, ok := rows[[2]uint32{w.Entity, w.Component}]
		if !ok || g.Timestamp != w.Timestamp || g.Deleted != w.Deleted || (g.Data == nil) != (w.Data == nil) || (g.Data != nil && *g.Data != *w.Data) {
			return fmt.Errorf("entity %d component %d: got %+v, want %+v", w.Entity, w.Component, g, w)
		}
	}
	for _, d := range want.DeletedEntities {
		if !slices.Contains(got.DeletedEntities, d) {
			return fmt.Errorf("deleted entity %+v missing", d)
		}
	}
	if len(want.Append) > 0 {
		return fmt.Errorf("append values in the state: compare them too")
	}
	return nil
}

// HoldsNewer reports the first LWW entry of want that got lacks or holds older, or holds at the
// same timestamp with other data: the migration invariant, for a world that may have written
// newer values since (a restoring host releases the locks of members gone). Deletions and append
// sets are not compared.
func HoldsNewer(got, want crdt.StateJSON) error {
	rows := map[[2]uint32]crdt.LWWJSON{}
	for _, r := range got.LWW {
		rows[[2]uint32{r.Entity, r.Component}] = r
	}
	for _, w := range want.LWW {
		g, ok := rows[[2]uint32{w.Entity, w.Component}]
		if !ok || g.Timestamp < w.Timestamp || g.Timestamp == w.Timestamp && ((g.Data == nil) != (w.Data == nil) || g.Data != nil && *g.Data != *w.Data) {
			return fmt.Errorf("entity %d component %d: got %+v, want at least %+v", w.Entity, w.Component, g, w)
		}
	}
	return nil
}

// BoxesState is the LWW state of the arena boxes of w: what a room keeps whoever hosts it
// (avatars leave with their members).
func BoxesState(w *peer.World) crdt.StateJSON {
	var boxes []uint32
	for _, e := range w.EntitiesOf(arena.SchemaBox) {
		boxes = append(boxes, uint32(e))
	}
	st := w.Replica().StateJSON()
	st.LWW = slices.DeleteFunc(st.LWW, func(r crdt.LWWJSON) bool { return !slices.Contains(boxes, r.Entity) })
	st.DeletedEntities, st.Append = nil, nil
	return st
}
