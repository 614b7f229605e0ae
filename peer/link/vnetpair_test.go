package link

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/vnet"

	"github.com/concordrtc/concord/internal/pionlog"
)

// vnetPair is a Conn pair on a pion vnet (10.0.0.1 offers, 10.0.0.2 answers):
// no real network at all. Each side's loss filter starts at 0% so that the
// handshake is clean.
type vnetPair struct {
	*pair
	router *vnet.Router
	loss   [2]*vnet.LossFilter
}

// close closes the pair, then stops the router.
func (vp *vnetPair) close() {
	vp.pair.close()
	_ = vp.router.Stop()
}

// newVNetPair builds the pair; wrap, when set, wraps side i's network (to
// reorder or count its packets) before ICE sees it.
func newVNetPair(t *testing.T, seed int64, handlerB Handler, wrap func(i int, n transport.Net) transport.Net) *vnetPair {
	t.Helper()
	return newVNetPairWith(t, seed, handlerB, wrap, nil)
}

// newVNetPairWith is newVNetPair with both sides' Config changed by tune (if not nil).
func newVNetPairWith(t *testing.T, seed int64, handlerB Handler, wrap func(i int, n transport.Net) transport.Net, tune func(*Config)) *vnetPair {
	t.Helper()
	logs := pionlog.New(testLogger(t))
	router, err := vnet.NewRouter(&vnet.RouterConfig{CIDR: "10.0.0.0/24", LoggerFactory: logs})
	if err != nil {
		t.Fatal(err)
	}
	vp := &vnetPair{router: router}
	var nets [2]transport.Net
	for i, ip := range []string{"10.0.0.1", "10.0.0.2"} {
		vn, err := vnet.NewNet(&vnet.NetConfig{StaticIPs: []string{ip}})
		if err != nil {
			t.Fatal(err)
		}
		if vp.loss[i], err = vnet.NewLossFilter(vn, 0, vnet.WithLossSeed(seed+int64(i))); err != nil {
			t.Fatal(err)
		}
		if err := router.AddNet(vp.loss[i]); err != nil {
			t.Fatal(err)
		}
		nets[i] = vn
		if wrap != nil {
			nets[i] = wrap(i, vn)
		}
	}
	if err := router.Start(); err != nil {
		t.Fatal(err)
	}
	cfg := func(i int) Config {
		c := Config{
			Logger: testLogger(t),
			// vnet interfaces are not "lo"; vnet never touches a real network.
			AllowNonLoopback: true,
			Net:              nets[i],
			DisableUDPMux:    true,
			// Make sure every missing datagram is a network loss, not a drop.
			UnreliableDropThreshold: 64 << 20,
		}
		if tune != nil {
			tune(&c)
		}
		return c
	}
	vp.pair = newPair(t, pairOpts{cfgA: cfg(0), cfgB: cfg(1), handlerB: handlerB})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []*Conn{vp.a, vp.b} {
		if err := c.WaitReady(ctx); err != nil {
			vp.close()
			t.Fatalf("%s not ready: %v", c.role, err)
		}
	}
	return vp
}

func (vp *vnetPair) setLoss(t *testing.T, pct int) {
	t.Helper()
	for i := range vp.loss {
		if err := vp.loss[i].SetLossRate(pct, true); err != nil {
			t.Fatal(err)
		}
	}
}

// countNet counts, once armed, the UDP packets its sockets write, by size.
type countNet struct {
	transport.Net
	armed atomic.Bool

	mu    sync.Mutex // guards sizes
	sizes []int
}

func (n *countNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return &countConn{UDPConn: c, n: n}, nil
}

// packets returns the sizes of the packets written since armed.
func (n *countNet) packets() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]int(nil), n.sizes...)
}

type countConn struct {
	transport.UDPConn
	n *countNet
}

func (c *countConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.n.armed.Load() {
		c.n.mu.Lock()
		c.n.sizes = append(c.n.sizes, len(p))
		c.n.mu.Unlock()
	}
	return c.UDPConn.WriteTo(p, addr)
}
