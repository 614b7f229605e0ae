package bench

import (
	"net"
	"sync/atomic"
	"syscall"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
	"golang.org/x/net/ipv4"
)

// Sizes of the UDP packets a link sends: DTLS 1.2 with AES-GCM puts 37 bytes (13 of record
// header, 8 of nonce, 16 of tag) around an SCTP packet.
const (
	// wireControlMax: an SCTP packet holding only a SACK without gap blocks (28 bytes) or only
	// a FORWARD TSN / I-FORWARD TSN with at most one stream entry (20–28 bytes). Encrypted, the
	// two cannot be told apart; peer/link's packet tests count FORWARD TSNs exactly.
	wireControlMax = 28 + 37
	// wireSmallMax: below this a packet carries no datagram of the benchmark (the smallest,
	// one update, is 150 bytes of SCTP): SACKs with gaps, tail fragments, heartbeats, pings,
	// and STUN.
	wireSmallMax = 150 + 37
)

// wireCounter is the OS network for one link.API, counting the UDP packets its sockets write by
// size class. The counters are atomics: the sockets' writers and the driver share them.
type wireCounter struct {
	transport.Net
	packets, bytes, control, small atomic.Uint64
}

func newWireCounter() (*wireCounter, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return &wireCounter{Net: n}, nil
}

func (w *wireCounter) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := w.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	if uc, ok := c.(*net.UDPConn); ok {
		return &countedBatchUDP{countedUDP{UDPConn: c, w: w}, uc, ipv4.NewPacketConn(uc)}, nil
	}
	return &countedUDP{UDPConn: c, w: w}, nil
}

// countedBatchUDP is a counted OS socket that peer/link batches (sendmmsg, GSO). A message with
// a control message is a GSO send, one packet per buffer (link gives each segment its own
// buffer); a message without is one packet of its buffers' bytes.
type countedBatchUDP struct {
	countedUDP
	raw *net.UDPConn
	pc  *ipv4.PacketConn
}

func (c *countedBatchUDP) WriteBatch(ms []ipv4.Message, flags int) (int, error) {
	n, err := c.pc.WriteBatch(ms, flags)
	for _, m := range ms[:n] {
		countBatched(c.w, m)
	}
	return n, err
}

// countBatched counts the packets of one sent message (see countedBatchUDP).
func countBatched(w *wireCounter, m ipv4.Message) {
	if len(m.OOB) > 0 {
		for _, b := range m.Buffers {
			w.count(b)
		}
		return
	}
	size := 0
	for _, b := range m.Buffers {
		size += len(b)
	}
	if size > 0 {
		w.countSized(size, m.Buffers[0][0])
	}
}

func (c *countedBatchUDP) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	return c.pc.ReadBatch(ms, flags)
}

func (c *countedBatchUDP) SyscallConn() (syscall.RawConn, error) { return c.raw.SyscallConn() }

// wireCounts is a snapshot of a wireCounter; dropped (the unreliable datagrams the host's links
// dropped) comes only from a bench host process's report.
type wireCounts struct{ packets, bytes, control, small, dropped uint64 }

func (w *wireCounter) counts() wireCounts {
	if w == nil {
		return wireCounts{}
	}
	return wireCounts{w.packets.Load(), w.bytes.Load(), w.control.Load(), w.small.Load(), 0}
}

func (c wireCounts) sub(d wireCounts) wireCounts {
	return wireCounts{c.packets - d.packets, c.bytes - d.bytes, c.control - d.control, c.small - d.small, c.dropped - d.dropped}
}

type countedUDP struct {
	transport.UDPConn
	w *wireCounter
}

func (c *countedUDP) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.w.count(p)
	return c.UDPConn.WriteTo(p, addr)
}

func (c *countedUDP) WriteToUDP(p []byte, addr *net.UDPAddr) (int, error) {
	c.w.count(p)
	return c.UDPConn.WriteToUDP(p, addr)
}

// dtlsAppData is the content type of a DTLS record that carries SCTP; STUN (ICE checks and
// keepalives) and DTLS handshake records start with other bytes.
const dtlsAppData = 23

func (w *wireCounter) count(p []byte) {
	if len(p) == 0 {
		w.countSized(0, 0)
		return
	}
	w.countSized(len(p), p[0])
}

// countSized counts a packet of n bytes whose first byte is first.
func (w *wireCounter) countSized(n int, first byte) {
	w.packets.Add(1)
	w.bytes.Add(uint64(n))
	switch {
	case n > 0 && first == dtlsAppData && n <= wireControlMax:
		w.control.Add(1)
	case n < wireSmallMax:
		w.small.Add(1)
	}
}
