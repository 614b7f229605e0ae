package peer

import (
	"testing"
	"time"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// startTimers starts the periodic work (ticks, reports, digests) of every peer of n, as Run does.
func startTimers(n *stepNet) {
	for _, sp := range n.peers {
		sp.startTimers()
	}
}

// countDigests counts the Digest messages and their bytes that members send to host 1.
func countDigests(n *stepNet) (msgs, bytes *int) {
	msgs, bytes = new(int), new(int)
	n.onSend = func(from, to PeerIndex, _ link.Channel, b []byte) {
		if to != 1 {
			return
		}
		var in inbox
		for len(b) > 0 {
			t, k, err := in.decode(b)
			if err != nil {
				return
			}
			if t == netmsg.TypeDigest {
				*msgs++
				*bytes += k
			}
			b = b[k:]
		}
	}
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
