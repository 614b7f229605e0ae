package world

import (
	"testing"

	"github.com/concordrtc/concord/signaling"
)

// The client's rule on MsgResident (docs/protocol.md §11 "Cluster restart"): a word newer by
// generation is taken whoever of the region hosts says it (a restarted cluster's redirect
// included), an older one is dropped, and only the named region's own host renumbers the inputs.
func TestWorldResidentRule(t *testing.T) {
	reg := func(x, y int) Region { return Region{World: "w", X: x, Y: y} }
	res, far, near := reg(0, 5), reg(0, 3), reg(1, 5)
	const gen, ack = 4, 19
	for _, c := range []struct {
		name     string
		hinted   bool
		from     signaling.RoomID
		to       Region
		m        resident
		word     residentWord
		renumber bool
	}{
		// A restarted cluster's host says the player is resident out of view with the record's
		// newer generation (without it the client stayed where no host held it).
		// A third region's host: followed, not taken (it read a record a claim may yet put back).
		{"redirect newer", false, near.Room(), far, resident{Gen: gen + 1}, wordRedirect, false},
		// The resident region's own host, restarted, no longer holds the player: taken.
		{"resident region's host redirects", false, res.Room(), far, resident{Gen: gen + 1}, wordTake, false},
		{"redirect older", false, near.Room(), far, resident{Gen: gen - 1}, wordDrop, false},
		{"redirect same generation elsewhere", false, near.Room(), far, resident{Gen: gen}, wordDrop, false},
		{"hint without generation once resident", false, near.Room(), far, resident{}, wordDrop, false},
		// The redirect's ack (0) is another host's: the inputs keep their numbers until the
		// destination's own host says what it applied.
		{"destination says ack 0", false, far.Room(), far, resident{Gen: gen + 1}, wordTake, true},
		{"handover source's ack", false, res.Room(), far, resident{Gen: gen + 1, Ack: ack}, wordTake, false},
		// The resident region's own host restored the player at the same generation with ack 0
		// (without renumbering its inputs were dropped as out of order for ever).
		{"own host forgot the sequence", false, res.Room(), res, resident{Gen: gen, Ack: 0}, wordAck, true},
		{"own host acknowledges more", false, res.Room(), res, resident{Gen: gen, Ack: ack + 3}, wordAck, false},
		{"another host repeats an old ack", false, near.Room(), res, resident{Gen: gen, Ack: 2}, wordAck, false},
	} {
		word, renumber := residentRule(res, gen, ack, c.hinted, false, c.from, c.to, c.m)
		if word != c.word || renumber != c.renumber {
			t.Errorf("%s: word %d renumber %v, want %d %v", c.name, word, renumber, c.word, c.renumber)
		}
	}
	// Before the player is resident: a generation-0 hint is followed once.
	if w, _ := residentRule(Region{}, 0, 0, false, false, near.Room(), far, resident{}); w != wordHint {
		t.Fatalf("first hint: %d", w)
	}
	if w, _ := residentRule(Region{}, 0, 0, true, false, near.Room(), res, resident{}); w != wordDrop {
		t.Fatalf("second hint: %d", w)
	}
}
