package peer

import (
	"testing"

	"github.com/concordrtc/concord/crdt"
)

// A host restored from a checkpoint older than its room's last state (a world region reopened on
// another node after its node was killed) allocates an entity number its predecessor used and
// deleted after that checkpoint. A member that lived through the predecessor holds the deletion
// and ignores the host's entity under that number for good: in the world lab, a player resident
// with no avatar. The host must learn the deletion from the member's answer and move the entity
// to a fresh number the member takes, and must allocate past the deletion from then on
// (host_supersede.go). Each case runs with the member's survivor window open (signaling recorded
// it synced in the earlier term) and closed (no record: its deletions are not merged as such).
func TestSupersededNumberReachesMember(t *testing.T) {
	for _, tc := range []struct {
		name       string
		unrecorded bool
		spawnFirst bool // the host spawns before the member joins (else after)
	}{
		{"spawned before the survivor joins", false, true},
		{"spawned before an unrecorded member joins", true, true},
		{"spawned after an unrecorded member joined", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newStepNet(t)
			h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1) // host of term 2, from a checkpoint
			h.host.startWindow()
			// What the host will allocate next is what its predecessor allocated after the
			// checkpoint, then deleted (four numbers: the member's avatar takes one of them).
			var next Entity
			n.do(1, func(w *World) {
				var ok bool
				if next, ok = w.allocate(); !ok {
					t.Fatal("no entity number")
				}
				w.next = next.Number()
			})
			var late Entity
			spawn := func() {
				n.do(1, func(w *World) {
					var err error
					if late, err = w.Spawn(stepSchemaBox, nil, []byte{42, 0, 0, 0}); err != nil {
						t.Fatal(err)
					}
				})
				if tc.spawnFirst && late != next {
					t.Fatalf("spawned %v, want %v (the predecessor's deleted entity)", late, next)
				}
			}
			if tc.spawnFirst {
				spawn()
			}
			n.unrecorded = tc.unrecorded
			m := n.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
				for i := range uint16(4) {
					w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(next.Number()+i, next.Version())})
				}
				w.heldTerm = 1
			})
			if !tc.spawnFirst {
				spawn()
			}
			for range 3 {
				h.flushUpdates()
				n.advance(2 * h.cfg.QuietPeriod) // digests, anti-entropy, its answer
			}
			found := Entity(0)
			for _, e := range m.w.EntitiesOf(stepSchemaBox) {
				if v, _ := value(m.w, e, boxPos); v == 42 {
					found = e
				}
			}
			if found == 0 {
				t.Fatalf("the member never saw the host's box (spawned as %v, a number it holds deleted)", late)
			}
			if m.w.r.EntityDeleted(found) {
				t.Fatalf("the member shows %v, a version it holds deleted", found)
			}
			if _, ok := m.w.AvatarOf(2); !ok {
				t.Error("the member has no avatar")
			}
			if h.w.Exists(late) && m.w.r.EntityDeleted(late) {
				t.Errorf("the host still holds %v, which the member never takes", late)
			}
			if got := h.publish().Superseded; got == 0 {
				t.Error("Superseded 0")
			}
			converge(t, h, m)
		})
	}
}

// A host restored from a checkpoint allocates away from where the checkpoint's host went on
// allocating after it (World.resumeAllocation): a member that lived through that host holds its
// later entities live, and the restored host's spawn under the same (number, version) would
// overwrite one of them in the member (the old entity lost, the member's corrections refused as
// older). Both entities reach the member.
func TestRestoredHostAllocatesPastCheckpoint(t *testing.T) {
	old := newStepNet(t)
	oh := old.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	var cp []byte
	var later Entity
	old.do(1, func(w *World) {
		for range 3 {
			if _, err := w.Spawn(stepSchemaBox, nil, []byte{1, 0, 0, 0}); err != nil {
				t.Fatal(err)
			}
		}
		cp, _ = w.Checkpoint()
		var err error
		// After the checkpoint: what members hold and the checkpoint lacks.
		if later, err = w.Spawn(stepSchemaBox, nil, []byte{7, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	state, _ := oh.w.Checkpoint()

	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	var fresh Entity
	n.do(1, func(w *World) {
		if err := w.MergeCheckpoint(cp); err != nil {
			t.Fatal(err)
		}
		var err error
		if fresh, err = w.Spawn(stepSchemaBox, nil, []byte{9, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	if fresh.Number() == later.Number() {
		t.Fatalf("the restored host spawned %v, the number its predecessor spawned %v under after the checkpoint", fresh, later)
	}
	m := n.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		if _, err := w.r.MergeStream(state); err != nil {
			t.Fatal(err)
		}
		w.heldTerm = 1
	})
	for range 3 {
		h.flushUpdates()
		n.advance(2 * h.cfg.QuietPeriod)
	}
	if v, _ := value(m.w, fresh, boxPos); v != 9 {
		t.Errorf("the member's %v = %d, want the restored host's 9", fresh, v)
	}
	if v, _ := value(m.w, later, boxPos); v != 7 {
		t.Errorf("the member's %v = %d, want its 7", later, v)
	}
}
