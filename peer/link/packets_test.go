package link

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/test"

	"github.com/concordrtc/concord/netmsg"
)

// dtlsOverhead is what DTLS 1.2 with AES-GCM adds to an SCTP packet: a 13-byte
// record header, an 8-byte explicit nonce and a 16-byte tag. (Two pion peers
// negotiate I-DATA, so a full datagram is a 12 + 20 + 1156 = 1188-byte SCTP
// packet, a 1225-byte UDP payload.)
const dtlsOverhead = 13 + 8 + 16

// smallPacket separates control packets (SACK, FORWARD-TSN, HEARTBEAT: tens
// of bytes of SCTP) from packets that carry a datagram of 200 bytes or more.
const smallPacket = 150 + dtlsOverhead

// countedPair is a vnet pair whose offerer's packets are counted once armed.
func countedPair(t *testing.T) (*vnetPair, *countNet, *atomic.Int64) {
	return countedPairWith(t, 0, nil)
}

// countedPairWith is a vnet pair whose side's packets (0: offerer, 1: answerer) are counted
// once armed, both sides' Config changed by tune (if not nil).
func countedPairWith(t *testing.T, side int, tune func(*Config)) (*vnetPair, *countNet, *atomic.Int64) {
	var got atomic.Int64
	var cn *countNet
	p := newVNetPairWith(t, 1, func(ch Channel, _ []byte) {
		if ch == Unreliable {
			got.Add(1)
		}
	}, func(i int, n transport.Net) transport.Net {
		if i != side {
			return n
		}
		cn = &countNet{Net: n}
		return cn
	}, tune)
	return p, cn, &got
}

// sendPaced sends count unreliable datagrams of size bytes in bursts of
// burst, each burst once the previous one has arrived, so that SACKs flow
// while data is in flight (the pattern of a host's flush).
func sendPaced(t *testing.T, p *vnetPair, got *atomic.Int64, count, size, burst int) {
	t.Helper()
	start := got.Load()
	for i := 0; i < count; i += burst {
		for j := i; j < min(i+burst, count); j++ {
			if err := p.a.Send(Unreliable, pattern(uint32(j), size)); err != nil {
				t.Fatalf("send %d: %v", j, err)
			}
		}
		want := start + int64(min(i+burst, count))
		waitFor(t, 10*time.Second, "the burst to arrive", func() bool { return got.Load() >= want })
	}
}

// TestFullDatagramIsOnePacket checks that a datagram of netmsg.MaxDatagram
// bytes leaves pion's SCTP association as exactly one packet, no larger than
// the 1191-byte SCTP packet the limit is derived from, and that a datagram a
// few bytes over the largest DATA chunk payload leaves as two: the limit is
// what makes it one.
func TestFullDatagramIsOnePacket(t *testing.T) {
	defer test.TimeOut(60 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	p, cn, got := countedPair(t)
	defer p.close()

	const count = 200
	for _, tc := range []struct {
		size, perDatagram int
	}{
		{netmsg.MaxDatagram, 1},
		// Over what one packet carries in a DATA chunk (1191 − 12 − 16 =
		// 1163, split on 4-byte boundaries: 1160) and in an I-DATA chunk
		// (1156; two pion peers negotiate I-DATA).
		{1161, 2},
	} {
		cn.mu.Lock()
		cn.sizes = nil
		cn.mu.Unlock()
		cn.armed.Store(true)
		sendPaced(t, p, got, count, tc.size, 8)
		cn.armed.Store(false)
		pkts := cn.packets()
		big := 0
		for _, n := range pkts {
			if n > netmsg.SCTPPacketSize+dtlsOverhead {
				t.Fatalf("a %d-byte UDP packet: more than an SCTP packet of %d bytes", n, netmsg.SCTPPacketSize)
			}
			if n >= smallPacket {
				big++
			}
		}
		small := len(pkts) - big
		t.Logf("%d datagrams of %d bytes: %d data packets, %d small ones", count, tc.size, big, small)
		if big != count {
			t.Fatalf("%d datagrams of %d bytes left as %d data packets, want %d", count, tc.size, big, count)
		}
		// Without their tails, a datagram split in two has no trace but the
		// small packets; each datagram must have left one.
		if tc.perDatagram == 2 && small < count {
			t.Fatalf("%d datagrams of %d bytes left only %d small packets, want ≥ %d tail fragments",
				count, tc.size, small, count)
		}
	}
}

// TestNoForwardTSNPerSACK checks the third_party/pion-sctp patch on a link
// that loses nothing: while unreliable (maxRetransmits 0) datagrams are in
// flight and SACKs come back, the sender sends (almost) no packets but DATA.
// Unpatched pion abandons every such chunk at its first transmission and
// answers SACKs with FORWARD TSNs of their own (pion/sctp#505): 10-15% of
// the packets here.
func TestNoForwardTSNPerSACK(t *testing.T) {
	needCarriedSCTP(t, "CONCORD-PATCH.md items 1–3: no FORWARD TSN per SACK")
	defer test.TimeOut(60 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	p, cn, got := countedPair(t)
	defer p.close()

	const count = 500
	cn.armed.Store(true)
	sendPaced(t, p, got, count, netmsg.MaxDatagram, 7)
	cn.armed.Store(false)
	small := 0
	for _, n := range cn.packets() {
		if n < smallPacket {
			small++
		}
	}
	t.Logf("%d datagrams: %d packets, %d of them small (FORWARD TSN, HEARTBEAT)", count, len(cn.packets()), small)
	if 100*small >= 2*count {
		t.Fatalf("%d small packets for %d datagrams without loss: ≥ 2%%, FORWARD TSNs per SACK", small, count)
	}
}

// TestOneSACKPerBurst checks ack coalescing (Config.AckCoalescing, the
// third_party/pion-sctp patch's item 9): a receiver acknowledges each burst of
// full datagrams with about one SACK instead of one per second packet. The
// window is widened to 20 ms so that a slow run (the race detector) still
// receives a whole burst within it; the run without coalescing is the
// comparison, logged.
func TestOneSACKPerBurst(t *testing.T) {
	needCarriedSCTP(t, "CONCORD-PATCH.md item 9: ack coalescing")
	defer test.TimeOut(90 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	const bursts, burst = 40, 8
	run := func(window time.Duration) int {
		p, cn, got := countedPairWith(t, 1, func(c *Config) { c.AckCoalescing = window })
		defer p.close()
		cn.armed.Store(true)
		sendPaced(t, p, got, bursts*burst, netmsg.MaxDatagram, burst)
		// The last burst's SACK leaves up to a window after it arrived.
		waitFor(t, 10*time.Second, "the last SACK", func() bool { return p.a.Stats().Channels[Unreliable].Buffered == 0 })
		cn.armed.Store(false)
		return len(cn.packets())
	}
	coalesced := run(20 * time.Millisecond)
	every2nd := run(-1)
	t.Logf("%d bursts of %d full datagrams: the receiver sent %d packets with ack coalescing, %d without",
		bursts, burst, coalesced, every2nd)
	if coalesced > bursts+bursts/4 {
		t.Fatalf("the receiver sent %d packets for %d bursts with ack coalescing, want about one SACK per burst", coalesced, bursts)
	}
}
