package peer

import (
	"testing"
	"time"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// An idle room's network flush walks none of its members (docs/protocol.md §5, "Idle members"):
// the host's 20 Hz flush went over every member's dirty set, link backlog and reassembly each
// time, a quarter of an idle host's CPU at 256 members. A write, the host's or a relayed one,
// still reaches every member, and the flush goes back to walking nothing once it has.
func TestIdleHostFlushWalksNoMember(t *testing.T) {
	n, h, app := newRoomOfFour(t)
	for range 3 { // the joins' leftovers go out
		h.flushUpdates()
		n.pump()
	}
	idle := func(what string) {
		t.Helper()
		walks := h.host.walks
		for range 10 {
			h.flushUpdates()
			n.pump()
		}
		if got := h.host.walks - walks; got != 0 {
			t.Fatalf("%s: 10 idle flushes walked the members %d times, want 0", what, got)
		}
	}
	idle("after the joins")

	n.do(1, func(w *World) { _ = w.Set(app.box, 0, []byte{9, 0, 0, 0}) })
	h.flushUpdates()
	n.pump()
	for idx := PeerIndex(2); idx <= 4; idx++ {
		if v, _ := value(n.peers[idx].w, app.box, boxPos); v != 9 {
			t.Errorf("member %d's box pos = %d after the host's write, want 9", idx, v)
		}
	}
	idle("after the host's write")

	a2 := n.moveAvatar(t, 2, h)
	walks := h.host.walks
	h.flushUpdates()
	n.pump()
	if h.host.walks != walks+1 {
		t.Fatalf("the flush after a relayed write walked the members %d times, want 1", h.host.walks-walks)
	}
	for idx := PeerIndex(3); idx <= 4; idx++ {
		if v, _ := value(n.peers[idx].w, a2, avatarPos); v != 5 {
			t.Errorf("member %d has member 2's avatar at %d, want 5", idx, v)
		}
	}
	idle("after a relayed write")
}

// expireReassembly walks the links only when the first unfinished payload is due: each
// unfinished payload is still dropped once it is reassemblyTimeout old, and not before.
func TestReassemblyExpiresEachInTurn(t *testing.T) {
	n, h, _, _ := room12(t)
	n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	start := func(idx PeerIndex) *remote {
		t.Helper()
		r := h.remotes[idx]
		n.send(idx, 1, link.Reliable, netmsg.AppendFragment(nil, &netmsg.Fragment{MessageID: 1, TotalLength: 1 << 16, Chunk: make([]byte, 1000)}))
		if !r.reasm.InProgress() {
			t.Fatalf("member %d's fragment was not taken", idx)
		}
		return r
	}
	r2 := start(2)
	n.clock.add(20 * time.Second)
	r3 := start(3)
	h.expireReassembly(n.clock.add(10 * time.Second)) // 2's is 30 s old, not older
	if h.remotes[2] != r2 || h.remotes[3] != r3 {
		t.Fatal("a payload dropped before reassemblyTimeout")
	}
	h.expireReassembly(n.clock.add(time.Second))
	if h.remotes[2] == r2 {
		t.Fatal("member 2's unfinished payload outlived reassemblyTimeout")
	}
	if h.remotes[3] != r3 {
		t.Fatal("member 3's payload, 11 s old, dropped with member 2's")
	}
	h.expireReassembly(n.clock.add(19 * time.Second)) // 3's is 30 s old
	if h.remotes[3] != r3 {
		t.Fatal("member 3's payload dropped before reassemblyTimeout")
	}
	h.expireReassembly(n.clock.add(time.Second))
	if h.remotes[3] == r3 {
		t.Fatal("member 3's unfinished payload outlived reassemblyTimeout")
	}
}

// A member lets go of a snapshot once it has applied it: it kept the decoded message, the
// room's whole peer list among it, until the next snapshot (quadratic in the room: 14 KiB a
// member at 256, most of a sleeping member's own memory after its link's).
func TestMemberLetsGoOfSnapshot(t *testing.T) {
	n := newStepNet(t)
	n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	for idx := PeerIndex(2); idx <= 4; idx++ {
		n.join(idx, &stepApp{table: stepSchemas()}, 1, 1)
	}
	for idx := PeerIndex(2); idx <= 4; idx++ {
		m := n.peers[idx]
		if !m.member.synced {
			t.Fatalf("member %d not synced", idx)
		}
		for i := range m.in {
			if s := &m.in[i].snap; s.Peers != nil || s.Spawns != nil || s.HostState != nil {
				t.Errorf("member %d keeps its applied snapshot (%d peers, %d spawns, %d bytes of state)",
					idx, len(s.Peers), len(s.Spawns), len(s.HostState))
			}
		}
	}
}
