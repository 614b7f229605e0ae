package netlab

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
	"golang.org/x/sys/unix"
)

// netnsDir is where ip(8) keeps named network namespaces.
const netnsDir = "/run/netns"

// NS is a named network namespace of a lab.
type NS string

func (n NS) path() string { return netnsDir + "/" + string(n) }

func (n NS) ip(ctx context.Context, args ...string) error {
	return run(ctx, nil, "ip", append([]string{"-n", string(n)}, args...)...)
}

// Command returns a command that runs name inside n (`ip netns exec`, which execs name in the
// same process). The process gets SIGKILL when the thread that started it ends (Pdeathsig): in a
// test binary, when the binary dies, so that a crashed test leaves nothing running in a lab.
func (n NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", string(n), name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Do runs fn on an OS thread switched into n, so that the sockets fn creates belong to n (a
// socket stays in the namespace it was created in, whatever thread uses it later). fn must not
// start goroutines that create sockets: they would run elsewhere.
func (n NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab: %w", err)
			return
		}
		defer self.Close()
		target, err := os.Open(n.path())
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab: namespace %s: %w", n, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab: enter namespace %s: %w", n, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked: the runtime ends it with this goroutine rather than
			// reuse a thread in the wrong namespace.
			errc <- fmt.Errorf("netlab: leave namespace %s: %w", n, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ListenUDP opens a UDP socket in n.
func (n NS) ListenUDP(addr string) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := n.Do(func() error {
		a, err := net.ResolveUDPAddr("udp4", addr)
		if err != nil {
			return err
		}
		c, err = net.ListenUDP("udp4", a)
		return err
	})
	return c, err
}

// Listen opens a TCP listener in n.
func (n NS) Listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() (err error) {
		l, err = net.Listen("tcp4", addr)
		return err
	})
	return l, err
}

// DialContext dials from n; it fits http.Transport.DialContext and websocket.Dialer.NetDialContext.
func (n NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Net returns a pion transport.Net whose interfaces are n's and whose sockets are created in n,
// for a pion stack (ICE, TURN client) running in this process but living in the namespace.
func (n NS) Net() (transport.Net, error) {
	var sn *stdnet.Net
	if err := n.Do(func() (err error) {
		sn, err = stdnet.NewNet()
		return err
	}); err != nil {
		return nil, err
	}
	return &nsNet{Net: sn, ns: n}, nil
}

// nsNet is stdnet with every socket created inside a namespace.
type nsNet struct {
	*stdnet.Net
	ns NS
}

func (n *nsNet) ListenPacket(network, address string) (c net.PacketConn, err error) {
	err = n.ns.Do(func() error { c, err = n.Net.ListenPacket(network, address); return err })
	return c, err
}

func (n *nsNet) ListenUDP(network string, laddr *net.UDPAddr) (c transport.UDPConn, err error) {
	err = n.ns.Do(func() error { c, err = n.Net.ListenUDP(network, laddr); return err })
	return c, err
}

func (n *nsNet) ListenTCP(network string, laddr *net.TCPAddr) (l transport.TCPListener, err error) {
	err = n.ns.Do(func() error { l, err = n.Net.ListenTCP(network, laddr); return err })
	return l, err
}

func (n *nsNet) Dial(network, address string) (c net.Conn, err error) {
	err = n.ns.Do(func() error { c, err = n.Net.Dial(network, address); return err })
	return c, err
}

func (n *nsNet) DialUDP(network string, laddr, raddr *net.UDPAddr) (c transport.UDPConn, err error) {
	err = n.ns.Do(func() error { c, err = n.Net.DialUDP(network, laddr, raddr); return err })
	return c, err
}

func (n *nsNet) DialTCP(network string, laddr, raddr *net.TCPAddr) (c transport.TCPConn, err error) {
	err = n.ns.Do(func() error { c, err = n.Net.DialTCP(network, laddr, raddr); return err })
	return c, err
}

func (n *nsNet) CreateDialer(d *net.Dialer) transport.Dialer {
	return nsDialer{d: n.Net.CreateDialer(d), ns: n.ns}
}

func (n *nsNet) CreateListenConfig(lc *net.ListenConfig) transport.ListenConfig {
	return nsListenConfig{lc: n.Net.CreateListenConfig(lc), ns: n.ns}
}

type nsDialer struct {
	d  transport.Dialer
	ns NS
}

func (d nsDialer) Dial(network, address string) (c net.Conn, err error) {
	err = d.ns.Do(func() error { c, err = d.d.Dial(network, address); return err })
	return c, err
}

type nsListenConfig struct {
	lc transport.ListenConfig
	ns NS
}

func (l nsListenConfig) Listen(ctx context.Context, network, address string) (ln net.Listener, err error) {
	err = l.ns.Do(func() error { ln, err = l.lc.Listen(ctx, network, address); return err })
	return ln, err
}

func (l nsListenConfig) ListenPacket(ctx context.Context, network, address string) (c net.PacketConn, err error) {
	err = l.ns.Do(func() error { c, err = l.lc.ListenPacket(ctx, network, address); return err })
	return c, err
}
