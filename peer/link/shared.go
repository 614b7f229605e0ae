package link

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
	"github.com/pion/webrtc/v4"
)

// What every connection of an API shares instead of making its own. A dedicated host answers its
// members' offers one by one on its loop, and pion made two things afresh for each: the list of
// this machine's network interfaces (a netlink dump and a syscall per interface, in every ICE
// agent) and a DTLS certificate (an ECDSA key and a self-signed X.509). At a burst of 1,024 joins
// both sat on the host's loop, in series (docs/benchmarks-history.md "1,024 at once").

const (
	// netRefresh is how old the shared interface list may be when a connection gathers: a
	// network change is seen by the connections made a second later.
	netRefresh = time.Second
	// certRefresh is how long an API gives its connections one certificate before it makes
	// another. pion's certificates are valid for a month; a day keeps every one far from that.
	certRefresh = 24 * time.Hour
)

// sharedNet is pion's standard network whose interface list is read again at most once per
// netRefresh, not once per connection. It is not a *stdnet.Net to pion's ICE agents, which then
// leave its list alone (an agent refreshes a *stdnet.Net's list in place, a race with the others).
type sharedNet struct {
	*stdnet.Net // listen, dial and resolve: no interface list in them

	mu  sync.Mutex
	cur *stdnet.Net // the latest list
	at  time.Time
	now func() time.Time
}

func newSharedNet() (*sharedNet, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, fmt.Errorf("link: network interfaces: %w", err)
	}
	return &sharedNet{Net: n, cur: n, at: time.Now(), now: time.Now}, nil
}

// current returns the interface list, read again when it is older than netRefresh (the old one
// stays when reading fails).
func (n *sharedNet) current() *stdnet.Net {
	n.mu.Lock()
	defer n.mu.Unlock()
	if now := n.now(); now.Sub(n.at) >= netRefresh {
		if fresh, err := stdnet.NewNet(); err == nil {
			n.cur = fresh
		}
		n.at = now
	}
	return n.cur
}

func (n *sharedNet) Interfaces() ([]*transport.Interface, error) { return n.current().Interfaces() }

func (n *sharedNet) InterfaceByIndex(index int) (*transport.Interface, error) {
	return n.current().InterfaceByIndex(index)
}

func (n *sharedNet) InterfaceByName(name string) (*transport.Interface, error) {
	return n.current().InterfaceByName(name)
}

// sharedCert is the DTLS certificate of an API's connections, made again after certRefresh.
// One certificate per process is what a browser does too; the fingerprint in its SDP tells a
// remote nothing the signaling server has not told it already (who this peer is).
type sharedCert struct {
	mu   sync.Mutex
	cert []webrtc.Certificate
	at   time.Time
	now  func() time.Time
}

// get returns the certificate a new connection uses.
func (c *sharedCert) get() ([]webrtc.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	if c.cert != nil && now().Sub(c.at) < certRefresh {
		return c.cert, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("link: certificate key: %w", err)
	}
	cert, err := webrtc.GenerateCertificate(key)
	if err != nil {
		return nil, fmt.Errorf("link: certificate: %w", err)
	}
	c.cert, c.at = []webrtc.Certificate{*cert}, now()
	return c.cert, nil
}

// Prepare makes now what every connection of a shares (its DTLS certificate), instead of at its
// first connection: for a process that starts many peers at one instant, such as a join burst's
// bot processes.
func (a *API) Prepare() error {
	_, err := a.cert.get()
	return err
}
