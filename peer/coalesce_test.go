package peer

import (
	"testing"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// In a crowd (coalesceMembers members) the host holds the commands it broadcasts until the next
// network flush, so that the commands of many steps share one reliable message per member; a
// reliable message sent to a member in between sends what is held first, in order.
func TestCrowdCommandsShareAMessage(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	for i := range coalesceMembers {
		n.join(PeerIndex(2+i), &stepApp{table: stepSchemas()}, 1, 1)
	}
	startTimers(n)
	m := n.peers[2]
	msgs := 0
	n.onSend = func(from, to PeerIndex, ch link.Channel, _ []byte) {
		if from == 1 && to == 2 && ch == link.Reliable {
			msgs++
		}
	}
	var spawned []Entity
	for range 3 { // three steps, each spawning an entity
		n.do(1, func(w *World) {
			e, err := w.Spawn(stepSchemaBox, nil, []byte{1, 0, 0, 0})
			if err != nil {
				t.Fatal(err)
			}
			spawned = append(spawned, e)
		})
		n.pump()
	}
	if msgs != 0 || m.w.Exists(spawned[0]) {
		t.Fatalf("before the network flush: %d messages, member has the first spawn %v; want 0, false", msgs, m.w.Exists(spawned[0]))
	}
	n.advance(h.cfg.NetworkInterval)
	if msgs != 1 {
		t.Fatalf("the three steps' commands took %d reliable messages, want 1", msgs)
	}
	for _, e := range spawned {
		if !m.w.Exists(e) {
			t.Fatalf("member lacks %v after the flush", e)
		}
	}

	// A reliable message in between (the host's pong) sends what is held first.
	n.do(1, func(w *World) { spawned[0], _ = w.Spawn(stepSchemaBox, nil, []byte{2, 0, 0, 0}) })
	n.send(2, 1, link.Reliable, netmsg.AppendPing(nil, &netmsg.Ping{Nonce: 1}))
	if !m.w.Exists(spawned[0]) {
		t.Fatal("the pong overtook the held spawn")
	}
	n.advance(h.cfg.NetworkInterval)
	if h.w.r.Hash() != m.w.r.Hash() {
		t.Fatal("hashes differ")
	}
}
