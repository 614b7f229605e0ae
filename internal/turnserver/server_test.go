package turnserver

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pion/turn/v5"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
)

// Relay ports for tests: below Linux's ephemeral range (32768..60999), so a
// test's plain UDP socket is never inside it.
const testMinPort, testMaxPort = 20000, 20999

var loopback8 = netip.MustParsePrefix("127.0.0.0/8")

func newTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.MinPort == 0 {
		cfg.MinPort, cfg.MaxPort = testMinPort, testMaxPort
	}
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newClient is a pion TURN client on its own loopback UDP socket.
func newClient(t *testing.T, s *Server, username, password string) *turn.Client {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newClientOn(t, conn, s.Addr().String(), username, password)
}

// newClientOn is a pion TURN client over conn (UDP, or a stream wrapped by turn.NewSTUNConn)
// to server.
func newClientOn(t *testing.T, conn net.PacketConn, server, username, password string) *turn.Client {
	t.Helper()
	c, err := turn.NewClient(&turn.ClientConfig{
		STUNServerAddr: server, TURNServerAddr: server,
		Username: username, Password: password, Realm: DefaultRealm, Conn: conn,
		RTO: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); _ = conn.Close() })
	return c
}

func allocate(t *testing.T, c *turn.Client) net.PacketConn {
	t.Helper()
	relay, err := c.Allocate()
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	return relay
}

// readOne reads one datagram from pc with a deadline.
func readOne(pc net.PacketConn, d time.Duration) (string, net.Addr, error) {
	buf := make([]byte, 2048)
	_ = pc.SetReadDeadline(time.Now().Add(d))
	n, from, err := pc.ReadFrom(buf)
	return string(buf[:n]), from, err
}

func TestSTUNBinding(t *testing.T) {
	s := newTestServer(t, Config{})
	c := newClient(t, s, "", "")
	mapped, err := c.SendBindingRequest()
	if err != nil {
		t.Fatalf("binding: %v", err)
	}
	if ua, ok := mapped.(*net.UDPAddr); !ok || !ua.IP.IsLoopback() {
		t.Fatalf("mapped address %v, want a loopback address", mapped)
	}
}

// Two members of one server relay to each other, relay to relay: the peer is
// the server's own address, inside its relay range.
func TestRelayToRelay(t *testing.T) {
	s := newTestServer(t, Config{})
	ua, pa := s.Credentials(Member{User: "alice", Device: "p1"})
	ub, pb := s.Credentials(Member{User: "bob", Device: "p2"})
	ra := allocate(t, newClient(t, s, ua, pa))
	rb := allocate(t, newClient(t, s, ub, pb))
	if st := s.Stats(); st.Allocations != 2 {
		t.Fatalf("Allocations = %d, want 2", st.Allocations)
	}
	// Each side must permit the other before datagrams pass; b's first
	// datagram to a creates b's permission for a.
	if _, err := rb.WriteTo([]byte("hello a"), ra.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	var got string
	poll.Until(t, 5*time.Second, "a receives through the relay", func() error {
		if _, err := ra.WriteTo([]byte("hello b"), rb.LocalAddr()); err != nil {
			return err
		}
		msg, from, err := readOne(rb, 100*time.Millisecond)
		if err != nil {
			return err
		}
		if from.String() != ra.LocalAddr().String() {
			return fmt.Errorf("from %v, want %v", from, ra.LocalAddr())
		}
		got = msg
		return nil
	})
	if got != "hello b" {
		t.Fatalf("got %q", got)
	}
	st := s.Stats()
	if st.RelayedBytesOut == 0 || st.RelayedBytesIn == 0 {
		t.Fatalf("relayed bytes not counted: %+v", st)
	}
}

func TestCredentialsRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newTestServer(t, Config{Now: func() time.Time { return now }})
	expired := Username("alice/p1", now.Add(-time.Minute))
	for _, tc := range []struct{ name, user, pass string }{
		{"forged", Username("alice/p1", now.Add(time.Hour)), "bm90IHRoZSBwYXNzd29yZA=="},
		{"expired", expired, Password(s.cfg.Key, expired)},
		{"malformed", "alice", Password(s.cfg.Key, "alice")},
		{"other key", Username("alice/p1", now.Add(time.Hour)), Password([]byte("another key"), Username("alice/p1", now.Add(time.Hour)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Stats().RefusedCredentials
			c := newClient(t, s, tc.user, tc.pass)
			if relay, err := c.Allocate(); err == nil {
				_ = relay.Close()
				t.Fatal("allocation with bad credentials succeeded")
			}
			if got := s.Stats().RefusedCredentials; got <= before {
				t.Fatalf("RefusedCredentials = %d, want > %d", got, before)
			}
		})
	}
	if st := s.Stats(); st.Allocations != 0 || st.AllocationsTotal != 0 {
		t.Fatalf("allocations made with bad credentials: %+v", st)
	}
}

// Permission requests for refused addresses fail. Nothing is ever sent to
// them: the server refuses before relaying.
func TestRefusedPeerAddresses(t *testing.T) {
	s := newTestServer(t, Config{AllowPeers: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10")}})
	u, p := s.Credentials(Member{User: "mallory", Device: "p1"})
	c := newClient(t, s, u, p)
	allocate(t, c)
	for _, addr := range []string{
		"127.0.0.2:9", "169.254.1.1:9", "224.0.0.1:9", "10.1.2.3:9", "192.168.1.1:9", "172.16.0.1:9", "0.0.0.0:9", "255.255.255.255:9",
	} {
		before := s.Stats().RefusedPeers
		ua, _ := net.ResolveUDPAddr("udp4", addr)
		if err := c.CreatePermission(ua); err == nil {
			t.Errorf("permission for %s granted", addr)
		}
		if got := s.Stats().RefusedPeers; got <= before {
			t.Errorf("%s: RefusedPeers = %d, want > %d", addr, got, before)
		}
	}
	// An admitted private range passes the permission check.
	ua, _ := net.ResolveUDPAddr("udp4", "100.64.0.20:9")
	if err := c.CreatePermission(ua); err != nil {
		t.Errorf("permission for an admitted range refused: %v", err)
	}
}

// The server's own address outside the relay range (here a plain socket on
// 127.0.0.1) is refused per datagram, while relay ports on it pass.
func TestOwnAddressOutsideRelayRange(t *testing.T) {
	s := newTestServer(t, Config{})
	victim, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	u, p := s.Credentials(Member{User: "mallory", Device: "p1"})
	relay := allocate(t, newClient(t, s, u, p))
	before := s.Stats().RefusedPeers
	for range 5 {
		if _, err := relay.WriteTo([]byte("probe"), victim.LocalAddr()); err != nil {
			t.Fatalf("WriteTo: %v", err)
		}
	}
	poll.Until(t, 5*time.Second, "datagrams to the server's own port refused", func() error {
		if got := s.Stats().RefusedPeers; got < before+5 {
			return fmt.Errorf("RefusedPeers = %d", got)
		}
		return nil
	})
	if msg, _, err := readOne(victim, 50*time.Millisecond); err == nil {
		t.Fatalf("the relay delivered %q to the server's own non-relay port", msg)
	}
}

func TestPolicy(t *testing.T) {
	own := netip.MustParseAddr("203.0.113.10")
	p := &policy{own: map[netip.Addr]bool{own: true}, minPort: 49152, maxPort: 65535, ownPorts: map[int]bool{7882: true},
		allow: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10")}}
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"198.51.99.1:5000", true},
		{"8.8.8.8:3478", true},
		{"[2606:4700::1]:3478", true},
		{"203.0.113.10:50000", true},
		{"203.0.113.10:22", false},
		{"203.0.113.10:49151", false},
		{"203.0.113.10:7882", true}, // Config.OwnPorts: the dedicated host's WebRTC socket
		{"8.8.8.8:7882", true},
		{"127.0.0.1:50000", false},
		{"[::1]:50000", false},
		{"[::ffff:127.0.0.1]:50000", false},
		{"169.254.169.254:80", false},
		{"[fe80::1]:80", false},
		{"224.0.0.251:5353", false},
		{"[ff02::1]:9", false},
		{"10.0.0.1:80", false},
		{"[fd00::1]:80", false},
		{"100.64.0.20:4000", true},
		{"100.127.255.1:4000", true},
		{"0.0.0.0:80", false},
		{"255.255.255.255:80", false},
	} {
		if got := p.allowAddr(netip.MustParseAddrPort(tc.addr)); got != tc.want {
			t.Errorf("allowAddr(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

func TestAllocationCap(t *testing.T) {
	s := newTestServer(t, Config{MaxAllocations: 2})
	u, p := s.Credentials(Member{User: "greedy", Device: "p1"})
	allocate(t, newClient(t, s, u, p))
	allocate(t, newClient(t, s, u, p))
	if relay, err := newClient(t, s, u, p).Allocate(); err == nil {
		_ = relay.Close()
		t.Fatal("a third allocation for one identity succeeded")
	}
	if st := s.Stats(); st.RefusedAllocations == 0 || st.Allocations != 2 {
		t.Fatalf("stats %+v, want 2 allocations and a refusal", st)
	}
	// Another identity is not affected.
	u2, p2 := s.Credentials(Member{User: "modest", Device: "p1"})
	allocate(t, newClient(t, s, u2, p2))
}

func TestAllocationMaxLifetime(t *testing.T) {
	s := newTestServer(t, Config{MaxAllocationLifetime: 300 * time.Millisecond})
	u, p := s.Credentials(Member{User: "alice", Device: "p1"})
	allocate(t, newClient(t, s, u, p))
	if s.Stats().Allocations != 1 {
		t.Fatal("no allocation")
	}
	poll.Until(t, 5*time.Second, "the allocation ends at its maximum age", func() error {
		if n := s.Stats().Allocations; n != 0 {
			return fmt.Errorf("%d allocations", n)
		}
		return nil
	})
}

func TestRateCap(t *testing.T) {
	const rate = 4000
	s := newTestServer(t, Config{MaxBytesPerSecond: rate})
	ua, pa := s.Credentials(Member{User: "flood", Device: "p1"})
	ub, pb := s.Credentials(Member{User: "sink", Device: "p2"})
	ra := allocate(t, newClient(t, s, ua, pa))
	rb := allocate(t, newClient(t, s, ub, pb))
	if _, err := rb.WriteTo([]byte("open"), ra.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", 1000))
	const sent = 40 // 40 kB against a 4 kB/s budget with a 4 kB burst
	for range sent {
		if _, err := ra.WriteTo(payload, rb.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 5*time.Second, "datagrams over the rate dropped", func() error {
		if st := s.Stats(); st.RateDropped < sent/2 {
			return fmt.Errorf("RateDropped = %d", st.RateDropped)
		}
		return nil
	})
	if out := s.Stats().RelayedBytesOut; out > 2*rate+1000 {
		t.Fatalf("relayed %d bytes, over the cap", out)
	}
}

func TestTURNOverTCP(t *testing.T) {
	s := newTestServer(t, Config{})
	tc, err := net.Dial("tcp4", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	u, p := s.Credentials(Member{User: "tcp", Device: "p1"})
	relay := allocate(t, newClientOn(t, turn.NewSTUNConn(tc), s.Addr().String(), u, p))
	if ua, ok := relay.LocalAddr().(*net.UDPAddr); !ok || ua.Port < testMinPort || ua.Port > testMaxPort {
		t.Fatalf("relay address %v outside the relay range", relay.LocalAddr())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Addr: "0.0.0.0:0"},                           // unspecified without a public IP
		{Addr: "127.0.0.1:0", MinPort: 5, MaxPort: 4}, // bad range
		{Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0"}, // TLS address without a certificate
	} {
		if s, err := New(cfg); err == nil {
			_ = s.Close()
			t.Errorf("New(%+v) succeeded", cfg)
		} else if !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v): %v, want ErrConfig", cfg, err)
		}
	}
}

func TestURLs(t *testing.T) {
	s := newTestServer(t, Config{PublicIP: net.ParseIP("127.0.0.1")})
	urls := s.URLs()
	want := fmt.Sprintf("turn:127.0.0.1:%d?transport=udp", s.Addr().Port)
	if len(urls) != 2 || urls[0] != want || !strings.HasSuffix(urls[1], "?transport=tcp") {
		t.Fatalf("URLs = %v", urls)
	}
}

// The machine's loopback addresses are not "own" (which would admit them, port-checked) unless
// the server listens on one: a relay on a public address refuses 127.0.0.1 outright.
func TestOwnAddrsLeaveOutLoopback(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	ifaddrs := interfaceAddrs(nil)
	if ownAddrs(ifaddrs)[lo] {
		t.Fatal("127.0.0.1 counts as the server's own address")
	}
	if !ownAddrs(ifaddrs, net.ParseIP("127.0.0.1"))[lo] {
		t.Fatal("a server listening on 127.0.0.1 does not own it")
	}
	p := &policy{own: ownAddrs(ifaddrs, net.ParseIP("203.0.113.10")), minPort: 49152, maxPort: 65535}
	if p.allowIP(lo) {
		t.Fatal("a relay on a public address admits a permission for 127.0.0.1")
	}
}
