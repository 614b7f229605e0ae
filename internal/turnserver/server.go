package turnserver

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/transport/v5"
	"github.com/pion/turn/v5"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/concordrtc/concord/internal/pionlog"
)

// Defaults of Config fields left zero.
const (
	DefaultRealm                  = "concord"
	DefaultMinPort                = 49152
	DefaultMaxPort                = 65535
	DefaultCredentialTTL          = 10 * time.Minute
	DefaultMaxAllocations         = 16
	DefaultMaxAllocationsPerAddr  = 64
	DefaultMaxAllocationsPerToken = 32
	DefaultMaxConnsPerAddr        = 32
	DefaultTCPIdleTimeout         = 10 * time.Second
	DefaultAllocationLifetime     = 10 * time.Minute
	DefaultMaxAllocationLifetime  = 24 * time.Hour
	DefaultMaxBytesPerSecond      = 4 << 20
)

// Config configures a Server. Addr is required; every other zero field gets
// the default its comment states.
type Config struct {
	// Logger receives the server's logs and pion's. Default: disabled.
	Logger zerolog.Logger
	// Now is the clock credentials are checked against. Default time.Now.
	Now func() time.Time
	// Net replaces the OS network (a pion vnet in tests). vnet has no TCP,
	// so with Net the server listens on UDP only. Default nil: the OS.
	Net transport.Net

	// Addr is where TURN listens on UDP and on TCP (the same port), e.g.
	// "203.0.113.7:3478" or ":3478". Port 0 picks one free for both.
	Addr string
	// TLSAddr, with TLS, adds a TURN-over-TLS listener (turns:). Default "":
	// none.
	TLSAddr string
	TLS     *tls.Config
	// TLSName is the host name in turns: URLs, which clients check the
	// certificate against. Default: the public IP.
	TLSName string
	// PublicIP is the address put in relayed and server URLs (1:1 NAT of a
	// cloud VM). Default: Addr's IP, which must then be specific.
	PublicIP net.IP
	// Realm is the TURN realm. Default "concord".
	Realm string

	// Key is the HMAC key of credentials (see DeriveKey). Default: 32 random
	// bytes, so credentials are valid only for this process.
	Key []byte
	// CredentialTTL is how long Credentials may start allocations. Default
	// 10 min: signaling hands members fresh ones before then. An allocation
	// made in time is refreshed with its credentials while its member is
	// live, as coturn authenticates a session once.
	CredentialTTL time.Duration
	// Live, if not nil, says whether a credential's member is still in its
	// room: every authenticated request of a member that is not is refused
	// (401), so credentials end with the membership. It is called on pion's
	// goroutines and must be fast. Credentials without a room are not asked
	// about: Server.Credentials gives members theirs with their room, so only
	// the holder of the key (the deployment's secret) mints roomless ones, for
	// a signaling of its own (the bench's relay, tools). Default nil: every
	// member is live.
	Live func(Member) bool

	// MinPort and MaxPort bound the relay ports. Default 49152..65535.
	MinPort, MaxPort int
	// OwnPorts are ports of the server's own addresses that relays may
	// reach besides the relay range: a WebRTC socket on the same machine
	// (serve's dedicated host), reachable directly and through the relay.
	// Default none.
	OwnPorts []int
	// AllowPeers admits peer addresses in these prefixes, which are refused
	// otherwise (private, shared and loopback ranges; see the package doc).
	// Default none.
	AllowPeers []netip.Prefix
	// MaxAllocations caps the live allocations of one identity. Default 16.
	MaxAllocations int
	// MaxAllocationsPerToken caps the live allocations of one user in one
	// room, every device together: what one join token yields. Default 32.
	MaxAllocationsPerToken int
	// MaxAllocationsPerAddr caps the live allocations made from one client
	// IP address, whatever the identities: on an open server names are
	// free, addresses are not. Default 64.
	MaxAllocationsPerAddr int
	// MaxConnsPerAddr caps the TCP and TLS connections from one client IP
	// address; one more is closed at once. Default 32.
	MaxConnsPerAddr int
	// TCPIdleTimeout closes a TCP or TLS connection without an allocation
	// that sends no complete STUN or ChannelData message for this long
	// (the TLS handshake included); while it holds an allocation, the
	// allocation's lifetime governs. Default 10 s.
	TCPIdleTimeout time.Duration
	// AllocationLifetime is the lifetime of an allocation a client does not
	// ask for one (pion caps requests at one hour). Default 10 min.
	AllocationLifetime time.Duration
	// MaxAllocationLifetime caps the age of an allocation, however often it
	// is refreshed. Default 24 h.
	MaxAllocationLifetime time.Duration
	// MaxBytesPerSecond caps what the allocations of one identity relay,
	// both directions together (bursts up to one second's worth). Default
	// 4 MiB/s.
	MaxBytesPerSecond int
}

func (c Config) withDefaults() (Config, error) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Realm == "" {
		c.Realm = DefaultRealm
	}
	if len(c.Key) == 0 {
		c.Key = make([]byte, 32)
		if _, err := rand.Read(c.Key); err != nil {
			return c, fmt.Errorf("turnserver: random key: %w", err)
		}
	}
	if c.CredentialTTL <= 0 {
		c.CredentialTTL = DefaultCredentialTTL
	}
	if c.MinPort == 0 && c.MaxPort == 0 {
		c.MinPort, c.MaxPort = DefaultMinPort, DefaultMaxPort
	}
	if c.MinPort < 1 || c.MaxPort > 65535 || c.MinPort > c.MaxPort {
		return c, fmt.Errorf("%w: relay ports %d..%d", ErrConfig, c.MinPort, c.MaxPort)
	}
	if c.MaxAllocations <= 0 {
		c.MaxAllocations = DefaultMaxAllocations
	}
	if c.MaxAllocationsPerToken <= 0 {
		c.MaxAllocationsPerToken = DefaultMaxAllocationsPerToken
	}
	if c.MaxAllocationsPerAddr <= 0 {
		c.MaxAllocationsPerAddr = DefaultMaxAllocationsPerAddr
	}
	if c.MaxConnsPerAddr <= 0 {
		c.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if c.TCPIdleTimeout <= 0 {
		c.TCPIdleTimeout = DefaultTCPIdleTimeout
	}
	if c.AllocationLifetime <= 0 {
		c.AllocationLifetime = DefaultAllocationLifetime
	}
	if c.MaxAllocationLifetime <= 0 {
		c.MaxAllocationLifetime = DefaultMaxAllocationLifetime
	}
	if c.MaxBytesPerSecond <= 0 {
		c.MaxBytesPerSecond = DefaultMaxBytesPerSecond
	}
	if (c.TLSAddr == "") != (c.TLS == nil) {
		return c, fmt.Errorf("%w: TLSAddr and TLS go together", ErrConfig)
	}
	return c, nil
}

// ErrConfig: a Config field is invalid.
var ErrConfig = errors.New("turnserver: invalid config")

// Stats are the server's counters.
type Stats struct {
	// Allocations is the number of live allocations; AllocationsTotal counts
	// every allocation made.
	Allocations      int64
	AllocationsTotal uint64
	// RelayedBytesOut counts bytes relayed to peers, RelayedBytesIn bytes
	// received from peers and passed to clients.
	RelayedBytesOut, RelayedBytesIn uint64
	// RefusedCredentials counts requests with malformed, expired or forged
	// credentials, or of a member no longer live; RefusedExpired and
	// RefusedNotMember count the last two apart.
	RefusedCredentials, RefusedExpired, RefusedNotMember uint64
	// RefusedPeers counts permission requests and datagrams for peer
	// addresses the relay refuses.
	RefusedPeers uint64
	// RefusedAllocations counts refused allocations, of which: over
	// MaxAllocations (PerIdentity), MaxAllocationsPerToken (PerToken),
	// MaxAllocationsPerAddr (PerAddr), and asking for a TCP relay (TCPRelay: 442).
	RefusedAllocations                                                   uint64
	RefusedPerIdentity, RefusedPerToken, RefusedPerAddr, RefusedTCPRelay uint64
	// Revoked counts allocations ended by Revoke (their member left).
	Revoked uint64
	// RateDropped counts datagrams dropped over the per-identity byte rate.
	RateDropped uint64
	// Conns is the number of open TCP and TLS connections; RefusedConns
	// counts those closed at once over MaxConnsPerAddr, IdleClosed those
	// closed by TCPIdleTimeout.
	Conns                    int64
	RefusedConns, IdleClosed uint64
	// DroppedUnsigned counts requests dropped unanswered for lacking
	// MESSAGE-INTEGRITY where no TURN client omits it (guard.go).
	DroppedUnsigned uint64
}

type counters struct {
	allocs, conns                                atomic.Int64
	allocsTotal, bytesOut, bytesIn, refusedCreds atomic.Uint64
	refusedExpired, refusedNotMember             atomic.Uint64
	refusedPeers, rateDropped, revoked           atomic.Uint64
	refusedAllocs                                [numReasons]atomic.Uint64
	refusedConns, idleClosed, droppedUnsigned    atomic.Uint64
}

// reason is why an allocation was refused.
type reason int

const (
	perIdentity reason = iota
	perToken
	perAddr
	tcpRelay
	numReasons
)

// Server is a running TURN/STUN server. See the package doc.
type Server struct {
	cfg    Config
	log    zerolog.Logger
	pol    *policy
	turn   *turn.Server
	addr   *net.UDPAddr // the UDP/TCP listen address
	tlsLn  net.Addr
	public net.IP
	count  counters

	mu      sync.Mutex         // guards the following
	users   map[string]*user   // by identity
	tokens  map[string]int     // live allocations by Member.token
	addrs   map[netip.Addr]int // live allocations by client address
	conns   map[netip.Addr]int // open TCP/TLS connections by client address
	streams map[string]*streamConn

	closeOnce sync.Once
	closeErr  error
}

// user is the shared state of one identity's allocations.
type user struct {
	allocs int
	lim    *rate.Limiter
	relays map[*relayConn]struct{} // for Revoke
}

// New listens and starts the server.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With().Str("component", "turn").Logger(), users: make(map[string]*user),
		tokens: make(map[string]int), addrs: make(map[netip.Addr]int), conns: make(map[netip.Addr]int), streams: make(map[string]*streamConn)}
	udp, tcp, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	s.addr = udp.LocalAddr().(*net.UDPAddr)
	closeAll := []func() error{udp.Close}
	if tcp != nil {
		closeAll = append(closeAll, tcp.Close)
	}
	fail := func(err error) (*Server, error) {
		for _, c := range closeAll {
			_ = c()
		}
		return nil, err
	}

	s.public = cfg.PublicIP
	if s.public == nil {
		if s.addr.IP.IsUnspecified() {
			return fail(fmt.Errorf("%w: listening on %s needs a PublicIP to advertise", ErrConfig, cfg.Addr))
		}
		s.public = s.addr.IP
	}
	if s.public.To4() == nil {
		return fail(fmt.Errorf("%w: PublicIP %s is not IPv4", ErrConfig, s.public))
	}
	s.pol = &policy{allow: cfg.AllowPeers, own: ownAddrs(interfaceAddrs(cfg.Net), s.addr.IP, s.public), minPort: cfg.MinPort, maxPort: cfg.MaxPort,
		ownPorts: make(map[int]bool, len(cfg.OwnPorts))}
	for _, p := range cfg.OwnPorts {
		s.pol.ownPorts[p] = true
	}

	bind := s.addr.IP.String()
	gen := &relayGen{s: s, inner: &turn.RelayAddressGeneratorPortRange{
		RelayAddress: s.public, Address: bind, MinPort: uint16(cfg.MinPort), MaxPort: uint16(cfg.MaxPort), Net: cfg.Net,
	}}
	perm := func(_ net.Addr, peer net.IP) bool {
		ip, _ := netip.AddrFromSlice(peer)
		if s.pol.allowIP(ip) {
			return true
		}
		s.count.refusedPeers.Add(1)
		s.log.Debug().Stringer("peer", peer).Msg("refused a permission for a peer address")
		return false
	}
	var listeners []turn.ListenerConfig
	if tcp != nil {
		listeners = append(listeners, turn.ListenerConfig{Listener: &streamListener{Listener: tcp, s: s}, RelayAddressGenerator: gen, PermissionHandler: perm})
	}
	if cfg.TLSAddr != "" {
		tl, err := tls.Listen("tcp4", cfg.TLSAddr, cfg.TLS)
		if err != nil {
			return fail(fmt.Errorf("turnserver: listen TLS %s: %w", cfg.TLSAddr, err))
		}
		closeAll = append(closeAll, tl.Close)
		s.tlsLn = tl.Addr()
		listeners = append(listeners, turn.ListenerConfig{Listener: &streamListener{Listener: tl, s: s}, RelayAddressGenerator: gen, PermissionHandler: perm})
	}
	s.turn, err = turn.NewServer(turn.ServerConfig{
		PacketConnConfigs:  []turn.PacketConnConfig{{PacketConn: &packetGuard{PacketConn: udp, s: s}, RelayAddressGenerator: gen, PermissionHandler: perm}},
		ListenerConfigs:    listeners,
		LoggerFactory:      pionlog.New(pionlog.Level(s.log)), // component=turn, pion=<scope>
		Realm:              cfg.Realm,
		AuthHandler:        s.auth,
		QuotaHandler:       s.quota,
		AllocationLifetime: cfg.AllocationLifetime,
		EventHandler: turn.EventHandler{
			OnAuth: func(_, _ net.Addr, _, username, _, method string, ok bool) {
				if !ok {
					// The username parsed and is current, but the message
					// integrity does not match: a forged password.
					s.count.refusedCreds.Add(1)
					s.log.Debug().Str("username", truncate(username)).Str("method", method).Msg("refused forged TURN credentials")
				}
			},
			// A TCP or TLS connection's idle timeout yields to its allocation's lifetime.
			OnAllocationCreated: func(src, dst net.Addr, _, _, _ string, _ net.Addr, _ int) { s.streamAllocated(src, dst, true) },
			OnAllocationDeleted: func(src, dst net.Addr, _, _, _ string) { s.streamAllocated(src, dst, false) },
		},
	})
	if err != nil {
		return fail(fmt.Errorf("turnserver: %w", err))
	}
	if ports := cfg.MaxPort - cfg.MinPort + 1; ports < 4*cfg.MaxAllocationsPerAddr {
		// The per-address cap keeps one client from taking every relay port only if the range
		// holds many times the cap.
		s.log.Warn().Int("ports", ports).Int("allocs_per_addr", cfg.MaxAllocationsPerAddr).
			Msg("TURN relay port range is under 4 times the per-address allocation cap: a few client addresses can take every relay port")
	}
	s.log.Info().Stringer("addr", s.addr).Stringer("public", s.public).Str("tls", cfg.TLSAddr).
		Int("min_port", cfg.MinPort).Int("max_port", cfg.MaxPort).Msg("TURN/STUN server listening (UDP and TCP)")
	return s, nil
}

// auth is pion's AuthHandler: it returns the long-term key of a REST API
// username, or refuses it (401). pion then checks the request's
// MESSAGE-INTEGRITY with the key (a forged password fails there).
func (s *Server) auth(ra *turn.RequestAttributes) (string, []byte, bool) {
	return s.authenticate(ra.Username, ra.Realm, ra.SrcAddr, ra.Method, true)
}

// authenticate checks username for a request of method from src: well-formed, current if it
// starts an allocation (Allocate), and its member live (Config.Live). It returns pion's user ID,
// "address|identity" (the allocation caps need the client's address where pion hands over only
// the user ID), and the long-term key. count says whether to count a refusal (the pre-check of
// guard.go leaves that to pion's own call).
func (s *Server) authenticate(username, realm string, src net.Addr, method stun.Method, count bool) (string, []byte, bool) {
	refuse := func(c *atomic.Uint64, err error) (string, []byte, bool) {
		if count {
			s.count.refusedCreds.Add(1)
			if c != nil {
				c.Add(1)
			}
			s.log.Debug().Err(err).Stringer("src", src).Stringer("method", method).Msg("refused TURN credentials")
		}
		return "", nil, false
	}
	exp, id, err := parseUsername(username)
	if err != nil {
		return refuse(nil, err)
	}
	if method == stun.MethodAllocate {
		if err := checkExpiry(username, exp, s.cfg.Now()); err != nil {
			return refuse(&s.count.refusedExpired, err)
		}
	}
	if m := memberOf(id); m.Room != "" && s.cfg.Live != nil && !s.cfg.Live(m) {
		return refuse(&s.count.refusedNotMember, fmt.Errorf("turnserver: %q is not a member of its room", truncate(id)))
	}
	return addrOf(src).String() + "|" + id, turn.GenerateAuthKey(username, realm, Password(s.cfg.Key, username)), true
}

// splitUserID undoes authenticate's user ID.
func splitUserID(userID string) (netip.Addr, string) {
	a, id, _ := strings.Cut(userID, "|")
	ip, _ := netip.ParseAddr(a)
	return ip, id
}

// addrOf is the IP address of a client's transport address.
func addrOf(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap()
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap.Addr().Unmap()
}

// quota is pion's QuotaHandler: 486 once an identity, a token or a client
// address holds its cap.
func (s *Server) quota(userID, _ string, _ net.Addr) bool {
	ip, id := splitUserID(userID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, over := s.over(ip, id); over {
		s.refuseAlloc(r, ip, id)
		return false
	}
	return true
}

// over reports whether one more allocation of id from ip would pass a cap, and which. s.mu held.
func (s *Server) over(ip netip.Addr, id string) (reason, bool) {
	switch {
	case s.addrs[ip] >= s.cfg.MaxAllocationsPerAddr:
		return perAddr, true
	case s.tokens[memberOf(id).token()] >= s.cfg.MaxAllocationsPerToken:
		return perToken, true
	case s.users[id] != nil && s.users[id].allocs >= s.cfg.MaxAllocations:
		return perIdentity, true
	}
	return 0, false
}

func (s *Server) refuseAlloc(r reason, ip netip.Addr, id string) {
	s.count.refusedAllocs[r].Add(1)
	s.log.Debug().Stringer("src", ip).Str("identity", truncate(id)).Int("reason", int(r)).Msg("refused a TURN allocation over a cap")
}

// acquire reserves an allocation for id from ip (the quota check can race with a concurrent
// allocation, so the caps are enforced here too).
func (s *Server) acquire(ip netip.Addr, id string) (*user, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, over := s.over(ip, id); over {
		s.refuseAlloc(r, ip, id)
		return nil, fmt.Errorf("turnserver: %s from %s is at an allocation cap", truncate(id), ip)
	}
	u := s.users[id]
	if u == nil {
		u = &user{lim: rate.NewLimiter(rate.Limit(s.cfg.MaxBytesPerSecond), s.cfg.MaxBytesPerSecond), relays: make(map[*relayConn]struct{})}
		s.users[id] = u
	}
	u.allocs++
	s.tokens[memberOf(id).token()]++
	s.addrs[ip]++
	s.count.allocs.Add(1)
	return u, nil
}

func (s *Server) release(ip netip.Addr, id string, rc *relayConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.users[id]; u != nil {
		delete(u.relays, rc)
		if u.allocs--; u.allocs <= 0 {
			delete(s.users, id)
		}
	}
	tok := memberOf(id).token()
	if s.tokens[tok]--; s.tokens[tok] <= 0 {
		delete(s.tokens, tok)
	}
	if s.addrs[ip]--; s.addrs[ip] <= 0 {
		delete(s.addrs, ip)
	}
	s.count.allocs.Add(-1)
}

// Revoke ends every allocation of m at once (its member left, or was kicked): pion deletes
// an allocation whose relay socket fails to read. With Config.Live reporting m gone, m's
// credentials are refused from then on too. It does not block; any goroutine may call it.
func (s *Server) Revoke(m Member) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[m.Identity()]
	if u == nil {
		return 0
	}
	for rc := range u.relays {
		rc.end()
	}
	s.count.revoked.Add(uint64(len(u.relays)))
	if len(u.relays) > 0 {
		s.log.Info().Str("identity", truncate(m.Identity())).Int("allocations", len(u.relays)).Msg("TURN allocations of a departed member ended")
	}
	return len(u.relays)
}

// Credentials returns TURN REST API credentials for m, which may start
// allocations for Config.CredentialTTL.
func (s *Server) Credentials(m Member) (username, password string) {
	username = Username(m.Identity(), s.cfg.Now().Add(s.cfg.CredentialTTL))
	return username, Password(s.cfg.Key, username)
}

// CredentialTTL is how long Credentials may start allocations: hand members fresh ones before.
func (s *Server) CredentialTTL() time.Duration { return s.cfg.CredentialTTL }

// URLs returns the server's turn: URLs (UDP and TCP, and turns: with TLS),
// with the public IP.
func (s *Server) URLs() []string {
	hp := net.JoinHostPort(s.public.String(), strconv.Itoa(s.addr.Port))
	urls := []string{"turn:" + hp + "?transport=udp"}
	if s.cfg.Net == nil {
		urls = append(urls, "turn:"+hp+"?transport=tcp")
	}
	if s.tlsLn != nil {
		_, port, _ := net.SplitHostPort(s.tlsLn.String())
		name := s.cfg.TLSName
		if name == "" {
			name = s.public.String()
		}
		urls = append(urls, "turns:"+net.JoinHostPort(name, port)+"?transport=tcp")
	}
	return urls
}

// Addr returns the UDP/TCP listen address.
func (s *Server) Addr() *net.UDPAddr { return s.addr }

// Stats returns the counters; any goroutine may call it.
func (s *Server) Stats() Stats {
	st := Stats{
		Allocations: s.count.allocs.Load(), AllocationsTotal: s.count.allocsTotal.Load(),
		RelayedBytesOut: s.count.bytesOut.Load(), RelayedBytesIn: s.count.bytesIn.Load(),
		RefusedCredentials: s.count.refusedCreds.Load(), RefusedExpired: s.count.refusedExpired.Load(),
		RefusedNotMember: s.count.refusedNotMember.Load(), RefusedPeers: s.count.refusedPeers.Load(),
		RefusedPerIdentity: s.count.refusedAllocs[perIdentity].Load(), RefusedPerToken: s.count.refusedAllocs[perToken].Load(),
		RefusedPerAddr: s.count.refusedAllocs[perAddr].Load(), RefusedTCPRelay: s.count.refusedAllocs[tcpRelay].Load(),
		Revoked: s.count.revoked.Load(), RateDropped: s.count.rateDropped.Load(),
		Conns: s.count.conns.Load(), RefusedConns: s.count.refusedConns.Load(), IdleClosed: s.count.idleClosed.Load(),
		DroppedUnsigned: s.count.droppedUnsigned.Load(),
	}
	for i := range s.count.refusedAllocs {
		st.RefusedAllocations += s.count.refusedAllocs[i].Load()
	}
	return st
}

// Close stops the server and every allocation. Idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.turn.Close() })
	return s.closeErr
}

// listen opens the UDP socket and, on a real network, the TCP listener on the same port. With
// port 0 the kernel picks the UDP port, and that port may be taken for TCP: then it tries
// another, a bounded number of times.
func listen(cfg Config) (net.PacketConn, net.Listener, error) {
	if cfg.Net != nil {
		udp, err := cfg.Net.ListenPacket("udp4", cfg.Addr)
		if err != nil {
			return nil, nil, fmt.Errorf("turnserver: listen UDP %s: %w", cfg.Addr, err)
		}
		return udp, nil, nil
	}
	_, port, _ := net.SplitHostPort(cfg.Addr)
	tries := 1
	if port == "0" || port == "" {
		tries = 16
	}
	var err error
	for range tries {
		var udp net.PacketConn
		if udp, err = net.ListenPacket("udp4", cfg.Addr); err != nil {
			return nil, nil, fmt.Errorf("turnserver: listen UDP %s: %w", cfg.Addr, err)
		}
		var tcp net.Listener
		if tcp, err = net.Listen("tcp4", udp.LocalAddr().String()); err == nil {
			return udp, tcp, nil
		}
		err = fmt.Errorf("turnserver: listen TCP %s: %w", udp.LocalAddr(), err)
		_ = udp.Close()
	}
	return nil, nil, err
}
