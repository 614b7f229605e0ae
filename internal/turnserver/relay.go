package turnserver

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pion/turn/v5"
)

var errTCPRelay = errors.New("turnserver: TCP relay allocations (RFC 6062) are not offered")

// relayGen wraps pion's port-range generator: every relay socket it makes is
// a relayConn enforcing the peer policy, the identity's byte rate and the
// allocation's maximum age, and counting what it relays.
type relayGen struct {
	s     *Server
	inner *turn.RelayAddressGeneratorPortRange
}

func (g *relayGen) Validate() error { return g.inner.Validate() }

func (g *relayGen) AllocatePacketConn(c turn.AllocateListenerConfig) (net.PacketConn, net.Addr, error) {
	ip, id := splitUserID(c.UserID)
	u, err := g.s.acquire(ip, id)
	if err != nil {
		return nil, nil, err
	}
	pc, addr, err := g.inner.AllocatePacketConn(c)
	if err != nil {
		g.s.release(ip, id, nil)
		return nil, nil, err
	}
	// The deadline ends the allocation: pion deletes an allocation whose
	// relay socket fails to read.
	if err := pc.SetReadDeadline(time.Now().Add(g.s.cfg.MaxAllocationLifetime)); err != nil {
		_ = pc.Close()
		g.s.release(ip, id, nil)
		return nil, nil, fmt.Errorf("turnserver: relay deadline: %w", err)
	}
	g.s.count.allocsTotal.Add(1)
	g.s.log.Debug().Str("identity", id).Stringer("src", ip).Stringer("relay", addr).Msg("allocation")
	rc := &relayConn{PacketConn: pc, s: g.s, u: u, ip: ip, id: id}
	g.s.mu.Lock()
	u.relays[rc] = struct{}{}
	g.s.mu.Unlock()
	if m := memberOf(id); m.Room != "" && g.s.cfg.Live != nil && !g.s.cfg.Live(m) {
		rc.end() // the member left between the request's check and now, and Revoke missed rc
	}
	return rc, addr, nil
}

// AllocateListener and AllocateConn are not reached: guard.go answers a TCP
// relay request with 442 before pion sees it, unless its credentials fail
// (then pion answers 401 first).
func (g *relayGen) AllocateListener(turn.AllocateListenerConfig) (net.Listener, net.Addr, error) {
	g.s.count.refusedAllocs[tcpRelay].Add(1)
	return nil, nil, errTCPRelay
}

func (g *relayGen) AllocateConn(turn.AllocateConnConfig) (net.Conn, error) {
	g.s.count.refusedAllocs[tcpRelay].Add(1)
	return nil, errTCPRelay
}

// relayConn is one allocation's relay socket. pion's allocation reads it on
// one goroutine and writes it from the server's read loops.
type relayConn struct {
	net.PacketConn
	s         *Server
	u         *user
	ip        netip.Addr
	id        string
	closeOnce sync.Once
}

// end makes the relay socket's reads fail at once, so pion deletes the allocation (and closes
// the socket) on its own goroutine, as at the allocation's maximum age.
func (c *relayConn) end() { _ = c.PacketConn.SetReadDeadline(time.Unix(1, 0)) }

// ReadFrom returns the next datagram from an allowed peer within the rate;
// others are dropped and counted.
func (c *relayConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, from, err := c.PacketConn.ReadFrom(b)
		if err != nil {
			return n, from, err
		}
		if !c.s.pol.allowNetAddr(from) {
			c.s.count.refusedPeers.Add(1)
			continue
		}
		if !c.u.lim.AllowN(time.Now(), n) {
			c.s.count.rateDropped.Add(1)
			continue
		}
		c.s.count.bytesIn.Add(uint64(n))
		return n, from, nil
	}
}

// WriteTo relays a client's datagram to a peer, unless the peer address or
// the rate forbids it; a dropped datagram reports success, as a lost one
// would.
func (c *relayConn) WriteTo(b []byte, to net.Addr) (int, error) {
	if !c.s.pol.allowNetAddr(to) {
		c.s.count.refusedPeers.Add(1)
		return len(b), nil
	}
	if !c.u.lim.AllowN(time.Now(), len(b)) {
		c.s.count.rateDropped.Add(1)
		return len(b), nil
	}
	n, err := c.PacketConn.WriteTo(b, to)
	c.s.count.bytesOut.Add(uint64(n))
	return n, err
}

func (c *relayConn) Close() error {
	err := c.PacketConn.Close()
	c.closeOnce.Do(func() { c.s.release(c.ip, c.id, c) })
	return err
}
