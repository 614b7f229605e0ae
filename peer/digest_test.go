package peer

import (
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// startTimers starts the periodic work (ticks, reports, digests) of every peer of n, as Run does.
func startTimers(n *stepNet) {
	for _, sp := range n.peers {
		sp.startTimers()
	}
}

// onMessages calls fn with every message (its type, its decoded form and its length) of the
// payloads that links from → to send, for the pairs want accepts.
func onMessages(n *stepNet, want func(from, to PeerIndex) bool, fn func(t netmsg.Type, in *inbox, size int)) {
	n.onSend = func(from, to PeerIndex, _ link.Channel, b []byte) {
		if !want(from, to) {
			return
		}
		var in inbox
		for len(b) > 0 {
			t, k, err := in.decode(b)
			if err != nil {
				return
			}
			fn(t, &in, k)
			b = b[k:]
		}
	}
}

// countDigests counts the Digest messages and their bytes that members send to host 1.
func countDigests(n *stepNet) (msgs, bytes *int) {
	msgs, bytes = new(int), new(int)
	onMessages(n, func(_, to PeerIndex) bool { return to == 1 }, func(t netmsg.Type, _ *inbox, size int) {
		if t == netmsg.TypeDigest {
			*msgs++
			*bytes += size
		}
	})
	return msgs, bytes
}

// Adaptive anti-entropy (docs/protocol.md §5): members of an idle room back off to one digest
// every DigestMaxInterval instead of one every DigestInterval.
func TestDigestBacksOffWhileIdle(t *testing.T) {
	n := newStepNet(t)
	n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	const members = 4
	for i := range members {
		n.join(PeerIndex(2+i), &stepApp{table: stepSchemas()}, 1, 1)
	}
	startTimers(n)
	msgs, bytes := countDigests(n)
	const idle = 128 * time.Second
	for range int(idle / time.Second) {
		n.advance(time.Second)
	}
	// 1 s, 2, 4, 8, 16, 32 s apart, then every 32 s: about 9 per member in 128 s, not 128.
	perMember := *msgs / members
	t.Logf("idle: %d digests per member in %v, %d B/s per member (every second: ~%d B/s)", perMember, idle, *bytes/members/int(idle/time.Second), *bytes / *msgs)
	if perMember < 3 || perMember > 12 {
		t.Fatalf("%d digests per member in %v while idle, want 3..12", perMember, idle)
	}

	// A member that writes digests again at the base interval.
	*msgs = 0
	for i := range 5 {
		n.do(2, func(w *World) {
			me, _ := w.AvatarOf(2)
			_ = w.Set(me, 0, []byte{byte(i + 1), 0, 0, 0})
		})
		n.advance(time.Second)
	}
	if *msgs < 5 {
		t.Fatalf("%d digests in 5 s while members write, want one a second", *msgs)
	}
}

// An idle member that lost a host update still converges, within DigestMaxInterval.
func TestDigestRepairsLossWhileIdle(t *testing.T) {
	n, h, m, app := room12(t)
	startTimers(n)
	for range 70 {
		n.advance(time.Second) // backed off to DigestMaxInterval
	}
	n.lose = true
	n.do(1, func(w *World) { _ = w.Set(app.box, 0, []byte{9, 0, 0, 0}) })
	n.advance(100 * time.Millisecond) // the host's update leaves and is lost
	n.lose = false
	if v, _ := value(m.w, app.box, boxPos); v == 9 {
		t.Fatal("the update was not lost")
	}
	max := m.cfg.DigestMaxInterval + 2*time.Second
	for waited := time.Duration(0); ; waited += time.Second {
		if v, _ := value(m.w, app.box, boxPos); v == 9 {
			t.Logf("repaired after %v", waited)
			break
		}
		if waited > max {
			t.Fatalf("member not repaired within %v", max)
		}
		n.advance(time.Second)
	}
	if h.w.r.Hash() != m.w.r.Hash() {
		t.Fatal("hashes differ after repair")
	}
}

// countSnapshots counts the HostSnapshot messages (whole or in fragments) host 1 sends member to.
func countSnapshots(n *stepNet, to PeerIndex) *int {
	count := new(int)
	onMessages(n, func(from, dst PeerIndex) bool { return from == 1 && dst == to }, func(t netmsg.Type, in *inbox, _ int) {
		if t == netmsg.TypeHostSnapshot || t == netmsg.TypeFragment && in.frag.Offset == 0 {
			*count++
		}
	})
	return count
}

// A member that hears nothing for a second after its greeting greets again; when the sync
// snapshot is only slow to arrive (a burst of joins), the host answers the repeated greeting with
// nothing: the digest was computed before the snapshot arrived. Before, each repeat cost a second
// full snapshot and counted as the member's answer to the first.
func TestRepeatedGreetingWhileSnapshotInFlight(t *testing.T) {
	n := newStepNet(t)
	n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	snaps := countSnapshots(n, 2)
	n.hold = map[PeerIndex]bool{2: true}
	m := n.join(2, &stepApp{table: stepSchemas()}, 1, 1)
	if *snaps != 1 {
		t.Fatalf("%d snapshots sent for the greeting, want 1", *snaps)
	}
	for range 3 {
		n.clock.add(1100 * time.Millisecond)
		n.do(2, func(*World) { m.member.linkReady() }) // greets again, as sendDigest does
		n.pump()
	}
	hm := n.peers[1].host.mems[2]
	if *snaps != 1 || hm.answered {
		t.Fatalf("after repeated greetings: %d snapshots, answered %v; want 1, false", *snaps, hm.answered)
	}
	n.hold = nil
	n.pump()
	if !m.member.synced || !hm.answered {
		t.Fatalf("synced %v, answered %v once the snapshot arrived", m.member.synced, hm.answered)
	}
	if *snaps != 1 {
		t.Fatalf("%d snapshots in all, want 1", *snaps)
	}
	if n.peers[1].w.r.Hash() != m.w.r.Hash() {
		t.Fatal("hashes differ")
	}
}

// A digest stamped below the clock of the last snapshot the host sent was computed before that
// snapshot arrived, and one that comes while the link holds reliable data the member has not
// acknowledged may have been: neither repairs anything until maxSnapshotWait has passed. Any
// other digest is answered as before.
func TestStaleDigestRepairsNothing(t *testing.T) {
	n, h, _, _ := room12(t)
	snaps := countSnapshots(n, 2)
	n.advance(time.Second) // every bucket quiet
	n.hold = map[PeerIndex]bool{2: true}
	digest := func(clock crdt.Timestamp) []byte {
		return netmsg.AppendDigest(nil, &netmsg.Digest{Term: 1, Clock: uint32(clock), Digests: make([]uint64, DefaultBuckets)})
	}
	clock := h.w.r.Clock()
	n.send(2, 1, link.Reliable, digest(clock))
	if *snaps != 1 {
		t.Fatalf("%d repairs for a digest that differs everywhere, want 1", *snaps)
	}
	n.do(1, func(w *World) { _ = w.Set(RoomEntity, 0, []byte{7, 0, 0, 0}) }) // the host's clock moves on
	n.advance(time.Second)
	n.send(2, 1, link.Reliable, digest(clock-1))
	if *snaps != 1 {
		t.Fatalf("%d repairs after a digest computed before the repair arrived, want still 1", *snaps)
	}
	n.unacked = map[PeerIndex]uint64{2: 1}
	n.send(2, 1, link.Reliable, digest(clock))
	if *snaps != 1 {
		t.Fatalf("%d repairs after a digest that came while the link held unacknowledged data, want still 1", *snaps)
	}
	n.unacked = nil
	n.send(2, 1, link.Reliable, digest(clock))
	if *snaps != 2 {
		t.Fatalf("%d repairs after a digest stamped at the repair's clock, want 2", *snaps)
	}
	n.advance(maxSnapshotWait)
	n.send(2, 1, link.Reliable, digest(0))
	if *snaps != 3 {
		t.Fatalf("%d repairs after maxSnapshotWait, want 3: a member that refused a snapshot is repaired again", *snaps)
	}
}
