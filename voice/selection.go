package voice

import (
	"cmp"
	"slices"

	"github.com/concordrtc/concord/signaling"
)

// Pos is a member's avatar position in its room's world, in the game's units (the arena:
// millimetres). Known is false when the member has no avatar (yet) or no position.
type Pos struct {
	X, Y  float64
	Known bool
}

// candidate is a speaker a listener might hear.
type candidate struct {
	id   signaling.Identity
	pos  Pos
	dist float64 // squared distance to the listener
}

// nearest returns, in order of distance (ties: the smaller member id), the at most k of speakers
// within radius of at (squared distance ≤ radius²; radius 0: all of them, in id order). A speaker
// or a listener without a known position is out of range when radius is not 0. It reuses buf.
func nearest(buf []candidate, at Pos, speakers []candidate, radius float64, k int) []candidate {
	out := buf[:0]
	for _, c := range speakers {
		if radius > 0 {
			if !at.Known || !c.pos.Known {
				continue
			}
			dx, dy := c.pos.X-at.X, c.pos.Y-at.Y
			c.dist = dx*dx + dy*dy
			if c.dist > radius*radius {
				continue
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if c := cmp.Compare(a.dist, b.dist); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// assign maps the chosen speakers onto slots: a speaker that holds a slot keeps it, the others
// take the free slots in order. cur[i] is slot i's speaker ("" when empty); it returns the new
// mapping in next (len(cur)) and whether anything changed.
func assign(cur []signaling.Identity, chosen []candidate, next []signaling.Identity) bool {
	copy(next, cur)
	want := func(id signaling.Identity) bool {
		return slices.ContainsFunc(chosen, func(c candidate) bool { return c.id == id })
	}
	for i, id := range next {
		if id != "" && !want(id) {
			next[i] = ""
		}
	}
	for _, c := range chosen {
		if slices.Contains(next, c.id) {
			continue
		}
		if i := slices.Index(next, ""); i >= 0 {
			next[i] = c.id
		}
	}
	return !slices.Equal(cur, next)
}
