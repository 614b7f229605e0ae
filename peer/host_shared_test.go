package peer

import (
	"bytes"
	"testing"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// updatesTo collects, per destination, the update datagrams (PackedUpdates) the host (peer 1) sends.
func updatesTo(n *stepNet) map[PeerIndex][][]byte {
	got := map[PeerIndex][][]byte{}
	n.onSend = func(from, to PeerIndex, ch link.Channel, b []byte) {
		if from == 1 && ch == link.Unreliable {
			got[to] = append(got[to], bytes.Clone(b))
		}
	}
	return got
}

// carries reports whether any of dgrams updates entity e.
func carries(t *testing.T, dgrams [][]byte, e Entity) bool {
	t.Helper()
	for _, d := range dgrams {
		var eu netmsg.EntityUpdates
		if _, err := netmsg.ConsumePackedUpdates(d, &eu); err != nil {
			t.Fatalf("host sent a bad PackedUpdates: %v", err)
		}
		for _, u := range eu.Updates {
			if Entity(u.NetworkID) == e {
				return true
			}
		}
	}
	return false
}

// Rule "shared change list": the host's own writes go into one change list for all members (no
// per-member mark), and every member receives the same datagrams; a relayed write goes to every
// member but its author.
func TestHostSharedChangeList(t *testing.T) {
	n := newStepNet(t)
	n.noDeltas = true // the shared path: members that take whole values
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 1, 1)
	for idx := PeerIndex(2); idx <= 4; idx++ {
		n.join(idx, &stepApp{table: stepSchemas()}, 1, 1)
	}
	h.flushUpdates()
	n.pump()
	got := updatesTo(n)

	n.do(1, func(w *World) { _ = w.Set(app.box, 0, []byte{9, 0, 0, 0}) })
	for idx, hm := range h.host.mems {
		if len(hm.dirty) != 0 {
			t.Errorf("member %d's own dirty set holds %v after a host write, want it in the shared list", idx, hm.dirty)
		}
	}
	if h.host.shared[app.box] == 0 {
		t.Fatal("the host's write is not in the shared change list")
	}
	h.flushUpdates()
	n.pump()
	if len(h.host.shared) != 0 {
		t.Errorf("shared change list %v after the flush, want empty", h.host.shared)
	}
	for idx := PeerIndex(2); idx <= 4; idx++ {
		if v, _ := value(n.peers[idx].w, app.box, boxPos); v != 9 {
			t.Errorf("member %d's box pos = %d, want 9", idx, v)
		}
		if len(got[idx]) != 1 || !bytes.Equal(got[idx][0], got[2][0]) {
			t.Errorf("member %d got %d datagrams, want the one datagram member 2 got", idx, len(got[idx]))
		}
	}

	// Member 2 moves its avatar; the host relays it to 3 and 4 only.
	clear(got)
	n.do(2, func(w *World) {
		a, _ := w.AvatarOf(2)
		if err := w.Set(a, 0, []byte{5, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	n.peers[2].flushUpdates()
	n.pump()
	a2, _ := h.w.AvatarOf(2)
	h.flushUpdates()
	n.pump()
	if carries(t, got[2], a2) {
		t.Error("the host sent member 2 its own relayed write")
	}
	for idx := PeerIndex(3); idx <= 4; idx++ {
		if !carries(t, got[idx], a2) {
			t.Errorf("member %d did not get member 2's relayed write", idx)
		}
		if v, _ := value(n.peers[idx].w, a2, avatarPos); v != 5 {
			t.Errorf("member %d has member 2's avatar at %d, want 5", idx, v)
		}
	}
}

// Rule "shared change list, leftovers": what one flush cannot send (past MaxDatagramsPerFlush)
// stays with every member, and the next flushes deliver it.
func TestHostSharedChangeListLeftovers(t *testing.T) {
	n := newStepNet(t)
	n.noDeltas = true // the shared path: members that take whole values
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 1, 1)
	n.join(2, &stepApp{table: stepSchemas()}, 1, 1)
	n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	h.cfg.MaxDatagramsPerFlush = 1
	var boxes []Entity
	n.do(1, func(w *World) {
		for range 1000 {
			e, err := w.Spawn(stepSchemaBox, nil, []byte{0, 0, 0, 0})
			if err != nil {
				t.Fatal(err)
			}
			boxes = append(boxes, e)
		}
	})
	n.pump()
	h.flushUpdates()
	n.pump()
	got := updatesTo(n)
	n.do(1, func(w *World) {
		for _, e := range boxes {
			_ = w.Set(e, 0, []byte{3, 0, 0, 0})
		}
	})
	flushes := 0
	for ; flushes < 20; flushes++ {
		left := 0
		for _, hm := range h.host.mems {
			left += len(hm.dirty)
		}
		if flushes > 0 && left == 0 {
			break
		}
		h.flushUpdates()
		n.pump()
	}
	if flushes < 3 {
		t.Errorf("1000 updates went out in %d flushes of one datagram each, want ≥ 3", flushes)
	}
	for idx := PeerIndex(2); idx <= 3; idx++ {
		if len(got[idx]) < 3 {
			t.Errorf("member %d got %d datagrams, want ≥ 3", idx, len(got[idx]))
		}
		for _, e := range boxes {
			if v, _ := value(n.peers[idx].w, e, boxPos); v != 3 {
				t.Fatalf("member %d has box %d at %d, want 3", idx, e, v)
			}
		}
	}
}
