package netlab_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/harness/netlab"
)

func TestMain(m *testing.M) { os.Exit(netlab.Main(m)) }

// TestTopology checks the lab's promises: homes reach the public side through their NAT, NAT A
// and B are symmetric (a new source port per destination, the same one again for the same
// destination), one home cannot reach another's private addresses or router, home C's UDP is
// dropped while its TCP passes, nothing routes beyond the lab, and tests run on the public side.
func TestTopology(t *testing.T) {
	lab := netlab.Get(t)
	if ip, err := firstAddr(); err != nil || ip != netlab.PublicAddr {
		t.Fatalf("the test runs at %v (%v), want the public side %v", ip, err, netlab.PublicAddr)
	}
	// Nothing but the lab's own subnets is routed anywhere.
	for _, ns := range []netlab.NS{lab.Server, lab.Public, lab.A.Router, lab.B.Router, lab.C.Router} {
		out, err := exec.Command("ip", "-n", string(ns), "-4", "route").CombinedOutput()
		if err != nil {
			t.Fatalf("ip route in %s: %v: %s", ns, err, out)
		}
		if strings.Contains(string(out), "default") {
			t.Errorf("%s has a default route:\n%s", ns, out)
		}
	}

	srv := make([]*net.UDPConn, 3)
	for i := range srv {
		c, err := lab.Server.ListenUDP(netlab.ServerAddr.String() + ":0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		srv[i] = c
	}
	tcp, err := lab.Server.Listen(netlab.ServerAddr.String() + ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tcp.Close() })
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(c.RemoteAddr().String()))
			_ = c.Close()
		}
	}()

	for _, h := range []netlab.Home{lab.A, lab.B} {
		t.Run("symmetric NAT "+string(h.NS), func(t *testing.T) {
			c, err := h.NS.ListenUDP(h.Addr.String() + ":0")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// One socket, three destinations (the first twice): the NAT maps each destination to
			// its own port, and keeps the mapping of a destination it has seen.
			var ports []uint16
			for i, dst := range []*net.UDPConn{srv[0], srv[1], srv[2], srv[0]} {
				from, err := roundTrip(c, dst, fmt.Sprintf("%s-%d", h.NS, i))
				if err != nil {
					t.Fatal(err)
				}
				if from.Addr() != h.WAN {
					t.Fatalf("the server saw %v, want the router's %v", from, h.WAN)
				}
				ports = append(ports, from.Port())
			}
			if ports[0] == ports[1] && ports[1] == ports[2] {
				t.Fatalf("one source port %d for three destinations: not a symmetric NAT", ports[0])
			}
			if ports[3] != ports[0] {
				t.Fatalf("the mapping to one destination changed: port %d then %d", ports[0], ports[3])
			}
			if got, err := tcpPeer(h.NS, tcp.Addr().String()); err != nil || got.Addr() != h.WAN {
				t.Fatalf("TCP to the server: seen as %v (%v), want %v", got, err, h.WAN)
			}
			t.Logf("%s → server: source ports %v, TCP seen from %v", h.NS, ports, h.WAN)
		})
	}

	t.Run("homes are private", func(t *testing.T) {
		inB, err := lab.B.NS.ListenUDP(lab.B.Addr.String() + ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer inB.Close()
		port := inB.LocalAddr().(*net.UDPAddr).Port
		l, err := lab.B.NS.Listen(lab.B.Addr.String() + ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		// A has no route to B's private net: the dial fails at once (ICMP unreachable).
		if c, err := lab.A.NS.DialContext(t.Context(), "tcp4", l.Addr().String()); err == nil {
			_ = c.Close()
			t.Fatalf("home A reached home B's %v", l.Addr())
		}
		c, err := lab.A.NS.ListenUDP(lab.A.Addr.String() + ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Neither B's private address nor its router's public one (no mapping exists) delivers.
		for _, dst := range []netip.AddrPort{netip.AddrPortFrom(lab.B.Addr, uint16(port)), netip.AddrPortFrom(lab.B.WAN, uint16(port))} {
			if _, err := c.WriteToUDPAddrPort([]byte("hello"), dst); err != nil && !isUnreachable(err) {
				t.Fatal(err)
			}
		}
		if n, from, err := readWithin(inB, 500*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("home B received %d bytes from %v (%v)", n, from, err)
		}
	})

	t.Run("home C drops UDP, passes TCP", func(t *testing.T) {
		c, err := lab.C.NS.ListenUDP(lab.C.Addr.String() + ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for range 3 {
			if _, err := c.WriteToUDPAddrPort([]byte("udp"), srv[0].LocalAddr().(*net.UDPAddr).AddrPort()); err != nil && !isUnreachable(err) {
				t.Fatal(err)
			}
		}
		if n, from, err := readWithin(srv[0], 500*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server received %d bytes of UDP from %v (%v)", n, from, err)
		}
		if got, err := tcpPeer(lab.C.NS, tcp.Addr().String()); err != nil || got.Addr() != lab.C.WAN {
			t.Fatalf("TCP from home C: seen as %v (%v), want %v", got, err, lab.C.WAN)
		}
	})
}

// roundTrip sends msg from c to dst and returns the source address dst saw.
func roundTrip(c, dst *net.UDPConn, msg string) (netip.AddrPort, error) {
	if _, err := c.WriteToUDPAddrPort([]byte(msg), dst.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		return netip.AddrPort{}, err
	}
	buf := make([]byte, 64)
	for {
		_ = dst.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := dst.ReadFromUDPAddrPort(buf)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("waiting for %q at %v: %w", msg, dst.LocalAddr(), err)
		}
		if string(buf[:n]) == msg {
			return netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), nil
		}
	}
}

// readWithin reads one datagram, giving up after d (a negative check: nothing may arrive).
func readWithin(c *net.UDPConn, d time.Duration) (int, net.Addr, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 2048)
	return c.ReadFrom(buf)
}

// tcpPeer connects from ns to addr and returns the address the server saw (the server echoes it).
func tcpPeer(ns netlab.NS, addr string) (netip.AddrPort, error) {
	c, err := ns.DialContext(context.Background(), "tcp4", addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.ParseAddrPort(string(buf[:n]))
}

func isUnreachable(err error) bool {
	s := err.Error()
	return strings.Contains(s, "unreachable") || strings.Contains(s, "refused")
}

// firstAddr is this process's first non-loopback IPv4 address.
func firstAddr() (netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr(), nil
		}
	}
	return netip.Addr{}, errors.New("no address")
}

// TestCleanStale checks that a lab left by a process that is gone is deleted, and a live one kept.
func TestCleanStale(t *testing.T) {
	lab := netlab.Get(t)
	dead := 0
	for pid := 4194303; pid > 1; pid-- {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			dead = pid
			break
		}
	}
	stale := fmt.Sprintf("%s%d-x", netlab.NamePrefix, dead)
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", stale, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", stale).Run() })
	staleDir := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d", netlab.NamePrefix, dead))
	if err := os.MkdirAll(filepath.Join(staleDir, "profile"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(staleDir) })
	netlab.CleanStale()
	if _, err := os.Stat("/run/netns/" + stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale namespace %s is still there (%v)", stale, err)
	}
	if _, err := os.Stat(staleDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale directory %s is still there (%v)", staleDir, err)
	}
	if _, err := os.Stat(lab.TempDir()); err != nil {
		t.Errorf("the live lab's %s is gone: %v", lab.TempDir(), err)
	}
	if _, err := os.Stat("/run/netns/" + string(lab.Server)); err != nil {
		t.Errorf("the live lab's %s is gone: %v", lab.Server, err)
	}
}
