package turnserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/turn/v5"

	"github.com/concordrtc/concord/internal/testkit/poll"
)

// newClientFrom is a pion TURN client on a UDP socket of its own at ip (any of 127.0.0.0/8
// reaches the server on 127.0.0.1), so that tests have clients on several addresses.
func newClientFrom(t *testing.T, s *Server, ip, username, password string) *turn.Client {
	t.Helper()
	conn, err := net.ListenPacket("udp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	return newClientOn(t, conn, s.Addr().String(), username, password)
}

// allocateOverCap makes limit+extra allocations, the i-th on client(i): the first limit succeed,
// the others are refused.
func allocateOverCap(t *testing.T, limit, extra int, client func(i int) *turn.Client) {
	t.Helper()
	for i := range limit + extra {
		relay, err := client(i).Allocate()
		switch {
		case err == nil && i >= limit:
			_ = relay.Close()
			t.Fatalf("allocation %d succeeded over a cap of %d", i, limit)
		case err == nil:
			t.Cleanup(func() { _ = relay.Close() })
		case i < limit:
			t.Fatalf("allocation %d: %v", i, err)
		}
	}
}

// One address holds at most MaxAllocationsPerAddr allocations, whatever names it takes (an open
// server admits any), while a member on another address still allocates.
func TestAllocationCapPerAddr(t *testing.T) {
	const limit = 4
	s := newTestServer(t, Config{MaxAllocationsPerAddr: limit})
	allocateOverCap(t, limit, 3, func(i int) *turn.Client {
		u, p := s.Credentials(Member{User: fmt.Sprintf("sybil%d", i), Device: "d", Room: "r"})
		return newClientFrom(t, s, "127.0.0.2", u, p)
	})
	u, p := s.Credentials(Member{User: "honest", Device: "d", Room: "r"})
	allocate(t, newClientFrom(t, s, "127.0.0.3", u, p))
	if st := s.Stats(); st.Allocations != limit+1 || st.RefusedPerAddr != 3 || st.RefusedAllocations != 3 {
		t.Fatalf("stats %+v, want %d allocations and 3 refused per address", st, limit+1)
	}
}

// One token (a user in a room) makes at most MaxAllocationsPerToken allocations, however many
// devices it joins with; another user, and the same user in another room, are not affected.
func TestAllocationCapPerToken(t *testing.T) {
	const limit = 3
	s := newTestServer(t, Config{MaxAllocationsPerToken: limit})
	allocateOverCap(t, limit, 2, func(i int) *turn.Client {
		u, p := s.Credentials(Member{User: "greedy", Device: fmt.Sprintf("dev%d", i), Room: "r"})
		return newClientFrom(t, s, fmt.Sprintf("127.0.1.%d", i+1), u, p)
	})
	for _, m := range []Member{{User: "modest", Device: "d", Room: "r"}, {User: "greedy", Device: "dev0", Room: "other"}} {
		u, p := s.Credentials(m)
		allocate(t, newClient(t, s, u, p))
	}
	if st := s.Stats(); st.RefusedPerToken != 2 || st.Allocations != limit+2 {
		t.Fatalf("stats %+v, want 2 refused per token", st)
	}
}

// liveSet is a Config.Live a test edits.
type liveSet struct {
	mu sync.Mutex
	m  map[Member]bool
}

func (l *liveSet) live(m Member) bool { l.mu.Lock(); defer l.mu.Unlock(); return l.m[m] }
func (l *liveSet) set(m Member, v bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[m] = v
}

// Credentials end with their member: once it left (Config.Live says so), they are refused, and
// Revoke ends the allocations it holds at once.
func TestCredentialsEndWithMembership(t *testing.T) {
	live := &liveSet{m: map[Member]bool{}}
	s := newTestServer(t, Config{Live: live.live})
	alice, bob := Member{User: "alice", Device: "p1", Room: "r"}, Member{User: "bob", Device: "p2", Room: "r"}
	live.set(alice, true)
	live.set(bob, true)
	ua, pa := s.Credentials(alice)
	ub, pb := s.Credentials(bob)
	allocate(t, newClient(t, s, ua, pa))
	allocate(t, newClient(t, s, ub, pb))

	live.set(alice, false) // alice leaves (or is kicked)
	if n := s.Revoke(alice); n != 1 {
		t.Fatalf("Revoke ended %d allocations, want 1", n)
	}
	poll.Until(t, 5*time.Second, "alice's allocation ended", func() error {
		if n := s.Stats().Allocations; n != 1 {
			return fmt.Errorf("%d allocations", n)
		}
		return nil
	})
	if relay, err := newClient(t, s, ua, pa).Allocate(); err == nil {
		_ = relay.Close()
		t.Fatal("a departed member's credentials made an allocation")
	}
	if st := s.Stats(); st.RefusedNotMember == 0 || st.Revoked != 1 {
		t.Fatalf("stats %+v, want a refusal for membership and one revoked allocation", st)
	}
	// bob, still a member, allocates again.
	allocate(t, newClient(t, s, ub, pb))
	// Credentials without a room (minted with the key by its holder, for a signaling of its
	// own) are not a membership.
	ut, pt := s.Credentials(Member{User: "tool", Device: "x"})
	allocate(t, newClient(t, s, ut, pt))
}

// Credentials start allocations only within CredentialTTL: past it, without fresh ones from
// signaling, an Allocate is refused; an allocation made in time goes on being refreshed.
func TestCredentialsExpireWithoutRefresh(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newTestServer(t, Config{Now: clock, CredentialTTL: time.Minute})
	u, p := s.Credentials(Member{User: "alice", Device: "p1", Room: "r"})
	c := newClient(t, s, u, p)
	allocate(t, c)

	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if relay, err := newClient(t, s, u, p).Allocate(); err == nil {
		_ = relay.Close()
		t.Fatal("expired credentials made an allocation")
	}
	if st := s.Stats(); st.RefusedExpired == 0 {
		t.Fatalf("stats %+v, want an expired refusal", st)
	}
	// The allocation made in time still authenticates its requests (a permission here).
	peer, _ := net.ResolveUDPAddr("udp4", "198.51.99.1:9")
	if err := c.CreatePermission(peer); err != nil {
		t.Fatalf("permission on an allocation made in time: %v", err)
	}
	// Fresh credentials allocate.
	u2, p2 := s.Credentials(Member{User: "alice", Device: "p1", Room: "r"})
	allocate(t, newClient(t, s, u2, p2))
}

// A TCP connection without an allocation is closed after TCPIdleTimeout; one that holds an
// allocation is not.
func TestTCPIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := newTestServer(t, Config{TCPIdleTimeout: idle})
	held, err := net.Dial("tcp4", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	u, p := s.Credentials(Member{User: "tcp", Device: "p1"})
	c := newClientOn(t, turn.NewSTUNConn(held), s.Addr().String(), u, p)
	allocate(t, c)

	idler, err := net.Dial("tcp4", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idler.Close()
	_ = idler.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idler.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read %v, want EOF (closed by the server)", err)
	}
	poll.Until(t, 5*time.Second, "the idle connection counted", func() error {
		if st := s.Stats(); st.IdleClosed != 1 || st.Conns != 1 {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
	// The allocated connection, idle longer than the idler was, still works.
	peer, _ := net.ResolveUDPAddr("udp4", "198.51.99.1:9")
	if err := c.CreatePermission(peer); err != nil {
		t.Fatalf("the allocated connection: %v", err)
	}
}

// One address holds at most MaxConnsPerAddr TCP connections: the next is closed at once, and
// another address still connects.
func TestTCPConnCapPerAddr(t *testing.T) {
	const limit = 3
	s := newTestServer(t, Config{MaxConnsPerAddr: limit})
	dial := func(ip string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp4", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for range limit {
		dial("127.0.0.2")
	}
	poll.Until(t, 5*time.Second, "the connections accepted", func() error {
		if n := s.Stats().Conns; n != limit {
			return fmt.Errorf("%d connections", n)
		}
		return nil
	})
	extra := dial("127.0.0.2")
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("connection over the cap: read %v, want EOF", err)
	}
	// Another address connects and allocates.
	other := dial("127.0.0.3")
	u, p := s.Credentials(Member{User: "honest", Device: "p1"})
	allocate(t, newClientOn(t, turn.NewSTUNConn(other), s.Addr().String(), u, p))
	if st := s.Stats(); st.RefusedConns != 1 || st.Conns != limit+1 {
		t.Fatalf("stats %+v, want 1 refused connection", st)
	}
}

// peerAddr is an XOR-PEER-ADDRESS attribute.
type peerAddr netip.AddrPort

func (a peerAddr) AddTo(m *stun.Message) error {
	ap := netip.AddrPort(a)
	return (&stun.XORMappedAddress{IP: ap.Addr().AsSlice(), Port: int(ap.Port())}).AddToAs(m, stun.AttrXORPeerAddress)
}

func requestedTransport(proto byte) stun.RawAttribute {
	return stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{proto, 0, 0, 0}}
}

// rawRequest gets the server's 401 challenge over conn, sends the request signed with user and
// pass (the long-term mechanism), and returns the answer to the authenticated request, its
// integrity checked.
func rawRequest(t *testing.T, conn net.Conn, user, pass string, method stun.Method, attrs ...stun.Setter) *stun.Message {
	t.Helper()
	send := func(method stun.Method, attrs []stun.Setter, extra ...stun.Setter) *stun.Message {
		setters := append([]stun.Setter{stun.TransactionID, stun.NewType(method, stun.ClassRequest)}, attrs...)
		m := stun.MustBuild(append(setters, extra...)...)
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write(m.Raw); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1500)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		r := &stun.Message{Raw: buf[:n]}
		if err := r.Decode(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	var nonce stun.Nonce
	var realm stun.Realm
	// The challenge, as a client gets it: to an unsigned Allocate (other unsigned requests are
	// dropped).
	challenge := send(stun.MethodAllocate, []stun.Setter{requestedTransport(17)})
	if err := nonce.GetFrom(challenge); err != nil {
		t.Fatalf("no challenge: %v", challenge)
	}
	if err := realm.GetFrom(challenge); err != nil {
		t.Fatal(err)
	}
	integrity := stun.NewLongTermIntegrity(user, realm.String(), pass)
	r := send(method, attrs, stun.NewUsername(user), realm, nonce, integrity)
	if err := integrity.Check(r); err != nil {
		t.Fatalf("%s answer %v not signed with the credentials: %v", method, r, err)
	}
	return r
}

func errorCode(m *stun.Message) stun.ErrorCode {
	var ec stun.ErrorCodeAttribute
	if err := ec.GetFrom(m); err != nil {
		return 0
	}
	return ec.Code
}

// A ChannelBind to a refused peer is answered 403 Forbidden (RFC 8656 §12), as a CreatePermission
// is, not 401; an allowed peer binds.
func TestChannelBindForbiddenPeer(t *testing.T) {
	s := newTestServer(t, Config{AllowPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.5/32")}})
	u, p := s.Credentials(Member{User: "mallory", Device: "p1"})
	conn, err := net.Dial("udp4", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if r := rawRequest(t, conn, u, p, stun.MethodAllocate, requestedTransport(17)); r.Type.Class != stun.ClassSuccessResponse {
		t.Fatalf("allocate: %v (%d)", r, errorCode(r))
	}
	channel := stun.RawAttribute{Type: stun.AttrChannelNumber, Value: []byte{0x40, 0x00, 0, 0}}
	before := s.Stats().RefusedPeers
	r := rawRequest(t, conn, u, p, stun.MethodChannelBind, channel, peerAddr(netip.MustParseAddrPort("10.1.2.3:9")))
	if r.Type.Class != stun.ClassErrorResponse || errorCode(r) != stun.CodeForbidden {
		t.Fatalf("ChannelBind to a refused peer: %v, code %d, want 403", r, errorCode(r))
	}
	if s.Stats().RefusedPeers <= before {
		t.Fatal("the refused ChannelBind was not counted")
	}
	r = rawRequest(t, conn, u, p, stun.MethodChannelBind, channel, peerAddr(netip.MustParseAddrPort("127.0.0.5:9")))
	if r.Type.Class != stun.ClassSuccessResponse {
		t.Fatalf("ChannelBind to an allowed peer: %v, code %d", r, errorCode(r))
	}
}

// An Allocate for a TCP relay (RFC 6062) is answered 442 Unsupported Transport Protocol (RFC
// 8656 §7.2), not 508, over UDP and over TCP.
func TestTCPRelayUnsupported(t *testing.T) {
	s := newTestServer(t, Config{})
	u, p := s.Credentials(Member{User: "tcp", Device: "p1"})
	for _, network := range []string{"udp4", "tcp4"} {
		conn, err := net.Dial(network, s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		r := rawRequest(t, conn, u, p, stun.MethodAllocate, requestedTransport(6))
		_ = conn.Close()
		if r.Type.Class != stun.ClassErrorResponse || errorCode(r) != stun.CodeUnsupportedTransProto {
			t.Fatalf("%s: TCP relay allocate: %v, code %d, want 442", network, r, errorCode(r))
		}
	}
	if st := s.Stats(); st.RefusedTCPRelay != 2 || st.Allocations != 0 {
		t.Fatalf("stats %+v, want 2 TCP relay refusals", st)
	}
}

// An unauthenticated answer is at most 2.43 times its request (docs/security.md §10): a Binding
// request gets its 40-byte answer (2×), an Allocate naming its transport the 68-byte challenge
// (28 bytes, 2.43×), and shorter requests pion would challenge as well (a bare 20-byte Refresh:
// 3.4×) are dropped unanswered.
func TestUnauthenticatedAnswerSize(t *testing.T) {
	s := newTestServer(t, Config{})
	conn, err := net.Dial("udp4", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exchange := func(m *stun.Message) int {
		if _, err := conn.Write(m.Raw); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1500)
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			return 0
		}
		return n
	}
	for _, m := range []*stun.Message{
		stun.MustBuild(stun.TransactionID, stun.BindingRequest),
		stun.MustBuild(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), requestedTransport(17)),
	} {
		if n := exchange(m); n == 0 || float64(n) > 2.43*float64(len(m.Raw)) {
			t.Errorf("%v of %d bytes: answer of %d bytes", m.Type, len(m.Raw), n)
		}
	}
	for _, method := range []stun.Method{stun.MethodAllocate, stun.MethodRefresh, stun.MethodCreatePermission, stun.MethodChannelBind} {
		m := stun.MustBuild(stun.TransactionID, stun.NewType(method, stun.ClassRequest))
		if n := exchange(m); n != 0 {
			t.Errorf("unsigned %v of %d bytes answered with %d bytes", m.Type, len(m.Raw), n)
		}
	}
	if st := s.Stats(); st.DroppedUnsigned != 4 {
		t.Fatalf("stats %+v, want 4 dropped", st)
	}
}
