package link

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/test"
)

// swapNet wraps a vnet.Net so that, once armed, a seeded fraction of the large
// (data-carrying) UDP packets each of its sockets writes is held back and
// written right after the next packet (or after 2 ms if none follows). vnet's
// own Router MaxJitter and DelayFilter delay packets but keep them in FIFO
// order, so they cannot reorder anything; this can, deterministically in
// which packets it picks.
type swapNet struct {
	transport.Net
	armed atomic.Bool
	seed  uint64

	mu    sync.Mutex // guards conns
	conns []*swapConn
}

func (n *swapNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	sc := &swapConn{UDPConn: c, armed: &n.armed, rng: rand.New(rand.NewPCG(n.seed, uint64(len(n.conns))))}
	n.conns = append(n.conns, sc)
	return sc, nil
}

func (n *swapNet) swapped() (total int, holding bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		c.mu.Lock()
		total += c.swaps
		holding = holding || c.held != nil
		c.mu.Unlock()
	}
	return total, holding
}

type swapConn struct {
	transport.UDPConn
	armed *atomic.Bool

	mu       sync.Mutex // guards the following
	rng      *rand.Rand
	held     []byte
	heldAddr net.Addr
	timer    *time.Timer
	swaps    int
}

func (c *swapConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if !c.armed.Load() {
		return c.UDPConn.WriteTo(p, addr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held != nil {
		n, err := c.UDPConn.WriteTo(p, addr) // The newer packet overtakes…
		c.flushLocked()                      // …the held one.
		c.swaps++
		return n, err
	}
	if len(p) >= 500 && c.rng.Float64() < 0.2 {
		c.held, c.heldAddr = append([]byte(nil), p...), addr
		c.timer = time.AfterFunc(2*time.Millisecond, c.flush)
		return len(p), nil
	}
	return c.UDPConn.WriteTo(p, addr)
}

func (c *swapConn) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
}

func (c *swapConn) flushLocked() {
	if c.held == nil {
		return
	}
	c.timer.Stop()
	_, _ = c.UDPConn.WriteTo(c.held, c.heldAddr)
	c.held, c.heldAddr = nil, nil
}

func (c *swapConn) Close() error {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.held = nil
	c.mu.Unlock()
	return c.UDPConn.Close()
}

// TestVNetUnreliableIsUnorderedAndUnretransmitted checks, over a virtual
// network with seeded loss and packet reordering (no real network at all),
// that the reliable channel delivers everything in order while the unreliable
// one really is unordered and never retransmits: some datagrams are missing
// and some overtake earlier ones.
func TestVNetUnreliableIsUnorderedAndUnretransmitted(t *testing.T) {
	// 10% loss both ways: pion recovers some losses only through T3-rtx, whose timeout
	// (≥ 1 s) doubles while its retransmission is lost too, so delivery takes 3–30 s.
	defer test.TimeOut(180 * time.Second).Stop()
	defer test.CheckRoutines(t)()

	const (
		n        = 400
		lossPct  = 10
		lossSeed = 20260501
	)
	var swap *swapNet
	var mu sync.Mutex // guards the following
	var gotReliable, gotUnreliable []uint32
	handlerB := func(ch Channel, p []byte) {
		seq := binary.LittleEndian.Uint32(p)
		mu.Lock()
		defer mu.Unlock()
		if ch == Reliable {
			gotReliable = append(gotReliable, seq)
		} else {
			gotUnreliable = append(gotUnreliable, seq)
		}
	}
	p := newVNetPair(t, lossSeed, handlerB, func(i int, n transport.Net) transport.Net {
		if i != 0 {
			return n
		}
		swap = &swapNet{Net: n, seed: uint64(lossSeed)}
		return swap
	})
	defer p.close()
	p.setLoss(t, lossPct)
	nets := [1]*swapNet{swap}
	nets[0].armed.Store(true)

	for i := range uint32(n) {
		for _, ch := range []Channel{Unreliable, Reliable} {
			if err := p.a.Send(ch, pattern(i, 200)); err != nil {
				t.Fatalf("send %s %d: %v", ch, i, err)
			}
		}
	}
	waitFor(t, 80*time.Second, "all reliable messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(gotReliable) == n
	})
	// Everything the unreliable channel will ever deliver has arrived once
	// its send buffer is empty (each chunk acknowledged or abandoned) and no
	// packet is held back.
	waitFor(t, 80*time.Second, "the unreliable channel to settle", func() bool {
		_, holding := nets[0].swapped()
		return !holding && p.a.Stats().Channels[Unreliable].Buffered == 0
	})
	nets[0].armed.Store(false)

	// Abandoned chunks leave nothing behind (each was skipped with a FORWARD
	// TSN): once the loss stops, every further datagram arrives.
	p.setLoss(t, 0)
	mu.Lock()
	settled := len(gotUnreliable)
	mu.Unlock()
	const after = 100
	for i := range uint32(after) {
		if err := p.a.Send(Unreliable, pattern(n+i, 200)); err != nil {
			t.Fatalf("send after the loss %d: %v", i, err)
		}
	}
	waitFor(t, 10*time.Second, "every datagram sent after the loss", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(gotUnreliable) == settled+after
	})

	mu.Lock()
	defer mu.Unlock()
	gotUnreliable = gotUnreliable[:settled]
	for i, seq := range gotReliable {
		if seq != uint32(i) {
			t.Fatalf("reliable message %d carries seq %d: out of order", i, seq)
		}
	}
	seen := make(map[uint32]bool, n)
	inversions := 0
	for i, seq := range gotUnreliable {
		if seq >= n || seen[seq] {
			t.Fatalf("unreliable seq %d is out of range or duplicated", seq)
		}
		seen[seq] = true
		if i > 0 && seq < gotUnreliable[i-1] {
			inversions++
		}
	}
	swaps, _ := nets[0].swapped()
	s := p.a.Stats().Channels[Unreliable]
	t.Logf("unreliable: %d of %d delivered, %d out of order; %d packet swaps; sender dropped %d",
		len(gotUnreliable), n, inversions, swaps, s.Dropped)
	if s.Dropped != 0 || s.MessagesSent != n+after {
		t.Fatalf("sender stats %+v: datagrams were dropped locally, not by the network", s)
	}
	if len(gotUnreliable) >= n {
		t.Fatalf("all %d unreliable datagrams arrived despite %d%% loss: lost ones were retransmitted", n, lossPct)
	}
	if inversions == 0 {
		t.Fatalf("no unreliable datagram overtook an earlier one despite %d packet swaps: delivery is ordered", swaps)
	}
}
