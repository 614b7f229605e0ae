package link

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/pion/transport/v5"
)

// helloNet records whether its sockets wrote a DTLS HelloVerifyRequest: a handshake record
// (content type 22) whose message (after the 13-byte record header) is of type 3.
type helloNet struct {
	transport.Net
	sawHelloVerify *atomic.Bool
}

func (n helloNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return helloConn{UDPConn: c, saw: n.sawHelloVerify}, nil
}

type helloConn struct {
	transport.UDPConn
	saw *atomic.Bool
}

func (c helloConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if len(p) > 13 && p[0] == 22 && p[13] == 3 {
		c.saw.Store(true)
	}
	return c.UDPConn.WriteTo(p, addr)
}

// TestHandshakeSkipsHelloVerify: a link's DTLS handshake takes no cookie round trip (no
// HelloVerifyRequest; ICE already proved the client's address). Before, every handshake took one
// more round trip: 31 of them at once after a migration without standby links.
func TestHandshakeSkipsHelloVerify(t *testing.T) {
	var saw atomic.Bool
	p := newVNetPair(t, 1, nil, func(_ int, n transport.Net) transport.Net {
		return helloNet{Net: n, sawHelloVerify: &saw}
	})
	defer p.close()
	if saw.Load() {
		t.Fatal("the DTLS handshake sent a HelloVerifyRequest (a cookie round trip)")
	}
	if err := p.a.Send(Reliable, []byte("after the handshake")); err != nil {
		t.Fatal(err)
	}
}
