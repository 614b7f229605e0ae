package turnserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/stun/v4"
)

// This file holds what stands between the listeners and pion: the per-address connection cap
// and idle timeout of TCP and TLS; the answers pion gets wrong (RFC 8656): 442 to a TCP relay
// request, where pion's relay generator can only fail with 508, and 403 to a ChannelBind for a
// refused peer, where pion answers 401, which tells a client to retry with other credentials;
// and the unauthenticated requests no client sends, which pion would answer with a 68-byte
// challenge however short they are.

// Message types the pre-check looks at (RFC 8656 §17).
const (
	typeBindingRequest     = 0x0001
	typeAllocateRequest    = 0x0003
	typeChannelBindRequest = 0x0009
	classBits              = 0x0110     // C1 and C0 of a STUN message type: 0 for a request
	magicCookie            = 0x2112A442 // bytes 4–7 of every STUN message (RFC 5389 §6)
	protoTCP               = 6          // REQUESTED-TRANSPORT of a TCP relay (RFC 6062)
)

// precheck answers, in pion's place, a request pion would answer with the wrong code, or drops
// one pion should not answer. It returns handled false to hand the message to pion, or true with
// the answer to send (nil: drop it).
//
// Only a request whose credentials this server accepts gets an answer here (signed with its
// key, as pion's would be); anything else goes to pion, which challenges or refuses it as usual.
// The NONCE is not checked: pion's are its own, and a replayed request gets the same refusal
// again. A request other than Binding without MESSAGE-INTEGRITY is dropped, unless it is an
// Allocate naming its transport (a client's first request, which the challenge answers): every
// other request comes after that challenge, so a client that sends one unsigned is no TURN
// client, and the challenge would be 3.4 times the size of a 20-byte request (docs/security.md §10).
func (s *Server) precheck(b []byte, src net.Addr) (answer []byte, handled bool) {
	if len(b) < 20 || b[0]>>6 != 0 || binary.BigEndian.Uint32(b[4:8]) != magicCookie {
		return nil, false // ChannelData (the relayed traffic) and anything not STUN go to pion at once
	}
	t := binary.BigEndian.Uint16(b[:2])
	if t&classBits != 0 || t == typeBindingRequest {
		return nil, false // indications, answers and Binding go to pion as they are
	}
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if err := m.Decode(); err != nil {
		return nil, false
	}
	if !m.Contains(stun.AttrMessageIntegrity) {
		if t == typeAllocateRequest && m.Contains(stun.AttrRequestedTransport) {
			return nil, false
		}
		s.count.droppedUnsigned.Add(1)
		return nil, true
	}
	var code stun.ErrorCode
	switch t {
	case typeAllocateRequest:
		v, err := m.Get(stun.AttrRequestedTransport)
		if err != nil || len(v) < 1 || v[0] != protoTCP {
			return nil, false
		}
		code = stun.CodeUnsupportedTransProto
	case typeChannelBindRequest:
		var peer stun.XORMappedAddress
		if err := peer.GetFromAs(m, stun.AttrXORPeerAddress); err != nil {
			return nil, false
		}
		ip, _ := netip.AddrFromSlice(peer.IP)
		if s.pol.allowIP(ip) {
			return nil, false
		}
		code = stun.CodeForbidden
	default:
		return nil, false
	}
	var user stun.Username
	var realm stun.Realm
	if user.GetFrom(m) != nil || realm.GetFrom(m) != nil || !m.Contains(stun.AttrNonce) {
		return nil, false
	}
	_, key, ok := s.authenticate(user.String(), realm.String(), src, m.Type.Method, false)
	if !ok || stun.MessageIntegrity(key).Check(m) != nil {
		return nil, false
	}
	reply, err := stun.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.NewType(m.Type.Method, stun.ClassErrorResponse),
		code, stun.MessageIntegrity(key))
	if err != nil {
		return nil, false
	}
	if code == stun.CodeForbidden {
		s.count.refusedPeers.Add(1)
	} else {
		s.count.refusedAllocs[tcpRelay].Add(1)
	}
	s.log.Debug().Stringer("src", src).Int("code", int(code)).Stringer("method", m.Type.Method).Msg("refused a TURN request")
	return reply.Raw, true
}

// packetGuard is the UDP socket as pion reads it: the pre-check answers some requests itself.
type packetGuard struct {
	net.PacketConn
	s *Server
}

func (g *packetGuard) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, from, err := g.PacketConn.ReadFrom(p)
		if err != nil {
			return n, from, err
		}
		if reply, handled := g.s.precheck(p[:n], from); handled {
			if reply != nil {
				_, _ = g.PacketConn.WriteTo(reply, from)
			}
			continue
		}
		return n, from, nil
	}
}

// streamListener is a TCP or TLS listener as pion accepts from it: a connection past
// MaxConnsPerAddr is closed at once, and the others are streamConns.
type streamListener struct {
	net.Listener
	s *Server
}

// Accept never returns a refused connection's error: pion stops accepting on any error.
func (l *streamListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if sc := l.s.openStream(c); sc != nil {
			return sc, nil
		}
	}
}

// openStream admits c under the per-address cap, or closes it and returns nil.
func (s *Server) openStream(c net.Conn) *streamConn {
	ip := addrOf(c.RemoteAddr())
	s.mu.Lock()
	if s.conns[ip] >= s.cfg.MaxConnsPerAddr {
		s.mu.Unlock()
		s.count.refusedConns.Add(1)
		s.log.Debug().Stringer("src", ip).Int("cap", s.cfg.MaxConnsPerAddr).Msg("refused a TURN TCP connection over the per-address cap")
		_ = c.Close()
		return nil
	}
	s.conns[ip]++
	sc := &streamConn{Conn: c, s: s, ip: ip, key: c.RemoteAddr().String(), buf: make([]byte, 0, 1600)}
	s.streams[sc.key] = sc
	s.mu.Unlock()
	s.count.conns.Add(1)
	sc.touch()
	return sc
}

// streamAllocated tells the TCP or TLS connection src (if it is one) that it holds an
// allocation, or no longer does.
func (s *Server) streamAllocated(src, dst net.Addr, allocated bool) {
	if _, stream := dst.(*net.TCPAddr); !stream {
		return
	}
	s.mu.Lock()
	sc := s.streams[src.String()]
	s.mu.Unlock()
	if sc == nil {
		return
	}
	sc.allocated.Store(allocated)
	sc.touch()
}

// errNotTURN: a stream's bytes are neither a STUN message nor ChannelData.
var errNotTURN = errors.New("turnserver: not a STUN or ChannelData frame")

// streamConn is one TCP or TLS connection as pion reads it: it hands pion one whole frame at a
// time, so that the pre-check sees whole requests and the idle timer counts whole messages.
// While the connection holds no allocation, its read deadline is TCPIdleTimeout past its last
// complete frame (or its accept); while it holds one, it has none, and the allocation's
// lifetime governs (pion closes the connection's allocation, and then the timer runs again).
type streamConn struct {
	net.Conn
	s         *Server
	ip        netip.Addr
	key       string
	allocated atomic.Bool
	hdr       [4]byte
	buf       []byte // the current frame
	pending   []byte // its part pion has not read yet
	closeOnce sync.Once
}

// touch restarts the idle timer, or stops it while the connection holds an allocation.
func (c *streamConn) touch() {
	var d time.Time
	if !c.allocated.Load() {
		d = time.Now().Add(c.s.cfg.TCPIdleTimeout)
	}
	_ = c.Conn.SetReadDeadline(d)
}

func (c *streamConn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		frame, err := c.readFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.s.count.idleClosed.Add(1)
				c.s.log.Debug().Stringer("src", c.RemoteAddr()).Dur("idle", c.s.cfg.TCPIdleTimeout).Msg("closed an idle TURN TCP connection")
			}
			return 0, err
		}
		if !c.allocated.Load() {
			c.touch() // an allocated connection has no deadline (streamAllocated)
		}
		if reply, handled := c.s.precheck(frame, c.RemoteAddr()); handled {
			if reply == nil {
				continue
			}
			if _, err := c.Conn.Write(reply); err != nil {
				return 0, err
			}
			continue
		}
		c.pending = frame
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// readFrame reads one STUN message (20-byte header and its length) or ChannelData (4-byte header
// and its length, padded to 4 on a stream: RFC 8656 §12.5). pion checks the frame's contents.
func (c *streamConn) readFrame() ([]byte, error) {
	if _, err := io.ReadFull(c.Conn, c.hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(c.hdr[2:4]))
	switch c.hdr[0] >> 6 {
	case 0:
		n += 20
	case 1:
		n = 4 + (n+3)&^3
	default:
		return nil, fmt.Errorf("%w: first byte %#x", errNotTURN, c.hdr[0])
	}
	if cap(c.buf) < n {
		c.buf = make([]byte, 0, n)
	}
	c.buf = append(c.buf[:0], c.hdr[:]...)
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.Conn, c.buf[4:]); err != nil {
		return nil, err
	}
	return c.buf, nil
}

func (c *streamConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.s.mu.Lock()
		if c.s.conns[c.ip]--; c.s.conns[c.ip] <= 0 {
			delete(c.s.conns, c.ip)
		}
		if c.s.streams[c.key] == c {
			delete(c.s.streams, c.key)
		}
		c.s.mu.Unlock()
		c.s.count.conns.Add(-1)
	})
	return err
}
