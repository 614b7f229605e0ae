package peer

import (
	"bytes"
	"testing"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// updatesTo collects, per destination, the update datagrams (RunUpdates) the host (peer 1) sends.
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
		if _, err := netmsg.ConsumeRunUpdates(d, &eu); err != nil {
			t.Fatalf("host sent a bad RunUpdates: %v", err)
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
	a2 := n.moveAvatar(t, 2, h)
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

// Rule "shared datagrams, one buffer": the host hands every member, the lead included, the very
// same bytes of the shared datagrams (link.OwnedSender, no copy per member), from a buffer of
// that flush's own that nothing writes afterwards, and the next flush records into a new one.
// (The fake links keep the owned bytes uncopied until the pump delivers them.)
func TestHostSharedDatagramsSentOwned(t *testing.T) {
	n, h, _ := newRoomOfFour(t)
	var boxes []Entity
	n.do(1, func(w *World) {
		for range 300 { // a few datagrams' worth
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

	type sent struct{ b, was []byte }
	var flushes [2]map[PeerIndex][]sent
	for f := range flushes {
		owned := map[PeerIndex][]sent{}
		copied := 0
		n.onSend = func(from, _ PeerIndex, ch link.Channel, _ []byte) {
			if from == 1 && ch == link.Unreliable {
				copied++
			}
		}
		n.onSendOwned = func(from, to PeerIndex, ch link.Channel, b []byte) {
			if from == 1 && ch == link.Unreliable {
				copied--
				owned[to] = append(owned[to], sent{b, bytes.Clone(b)})
			}
		}
		n.do(1, func(w *World) {
			for _, e := range boxes {
				_ = w.Set(e, 0, []byte{byte(10 + f), 0, 0, 0})
			}
		})
		h.flushUpdates()
		n.pump()
		if copied != 0 {
			t.Fatalf("flush %d: %d datagrams went to members as copies", f, copied)
		}
		if len(owned[2]) < 2 {
			t.Fatalf("flush %d: member 2 got %d datagrams, want several", f, len(owned[2]))
		}
		for idx := PeerIndex(2); idx <= 4; idx++ {
			if len(owned[idx]) != len(owned[2]) {
				t.Fatalf("flush %d: member %d got %d datagrams, member 2 %d", f, idx, len(owned[idx]), len(owned[2]))
			}
			for i, d := range owned[idx] {
				if &d.b[0] != &owned[2][i].b[0] || len(d.b) != len(owned[2][i].b) {
					t.Fatalf("flush %d: member %d's datagram %d is not the bytes member 2 got", f, idx, i)
				}
			}
			for _, e := range boxes {
				if v, _ := value(n.peers[idx].w, e, boxPos); v != byte(10+f) {
					t.Fatalf("flush %d: member %d has box %d at %d, want %d", f, idx, e, v, 10+f)
				}
			}
		}
		flushes[f] = owned
	}
	if &flushes[0][2][0].b[0] == &flushes[1][2][0].b[0] {
		t.Error("the second flush recorded into the first flush's buffer")
	}
	for f, owned := range flushes {
		for idx, ds := range owned {
			for i, d := range ds {
				if !bytes.Equal(d.b, d.was) {
					t.Fatalf("flush %d: member %d's datagram %d was written after it was handed over", f, idx, i)
				}
			}
		}
	}
}

// moveAvatar has member idx write its avatar's first property and flush, and returns that
// avatar as host h knows it (the relay not yet flushed by the host).
func (n *stepNet) moveAvatar(t *testing.T, idx PeerIndex, h *stepPeer) Entity {
	t.Helper()
	n.do(idx, func(w *World) {
		a, _ := w.AvatarOf(idx)
		if err := w.Set(a, 0, []byte{5, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	n.peers[idx].flushUpdates()
	n.pump()
	a, _ := h.w.AvatarOf(idx)
	return a
}

// newRoomOfFour is a stepped room without deltas: host 1 (its app returned) and members 2–4
// joined.
func newRoomOfFour(t *testing.T) (*stepNet, *stepPeer, *stepApp) {
	n := newStepNet(t)
	n.noDeltas = true
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 1, 1)
	for idx := PeerIndex(2); idx <= 4; idx++ {
		n.join(idx, &stepApp{table: stepSchemas()}, 1, 1)
	}
	return n, h, app
}
