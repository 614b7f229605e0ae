package turnserver

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v5"
	"github.com/pion/turn/v5"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/concordrtc/concord/internal/pionlog"
)

// Defaults of Config fields left zero.
const (
	DefaultRealm                 = "concord"
	DefaultMinPort               = 49152
	DefaultMaxPort               = 65535
	DefaultCredentialTTL         = 12 * time.Hour
	DefaultMaxAllocations        = 16
	DefaultAllocationLifetime    = 10 * time.Minute
	DefaultMaxAllocationLifetime = 24 * time.Hour
	DefaultMaxBytesPerSecond     = 4 << 20
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
	// CredentialTTL is how long Credentials are valid. Default 12 h.
	CredentialTTL time.Duration

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
	// credentials.
	RefusedCredentials uint64
	// RefusedPeers counts permission requests and datagrams for peer
	// addresses the relay refuses.
	RefusedPeers uint64
	// RefusedAllocations counts allocations refused for the per-identity cap
	// or for asking for a TCP relay.
	RefusedAllocations uint64
	// RateDropped counts datagrams dropped over the per-identity byte rate.
	RateDropped uint64
}

type counters struct {
	allocs                                       atomic.Int64
	allocsTotal, bytesOut, bytesIn, refusedCreds atomic.Uint64
	refusedPeers, refusedAllocs, rateDropped     atomic.Uint64
}

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

	mu    sync.Mutex // guards the following
	users map[string]*user

	closeOnce sync.Once
	closeErr  error
}

// user is the shared state of one identity's allocations.
type user struct {
	allocs int
	lim    *rate.Limiter
}

// New listens and starts the server.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With().Str("component", "turn").Logger(), users: make(map[string]*user)}
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
		listeners = append(listeners, turn.ListenerConfig{Listener: tcp, RelayAddressGenerator: gen, PermissionHandler: perm})
	}
	if cfg.TLSAddr != "" {
		tl, err := tls.Listen("tcp4", cfg.TLSAddr, cfg.TLS)
		if err != nil {
			return fail(fmt.Errorf("turnserver: listen TLS %s: %w", cfg.TLSAddr, err))
		}
		closeAll = append(closeAll, tl.Close)
		s.tlsLn = tl.Addr()
		listeners = append(listeners, turn.ListenerConfig{Listener: tl, RelayAddressGenerator: gen, PermissionHandler: perm})
	}
	s.turn, err = turn.NewServer(turn.ServerConfig{
		PacketConnConfigs:  []turn.PacketConnConfig{{PacketConn: udp, RelayAddressGenerator: gen, PermissionHandler: perm}},
		ListenerConfigs:    listeners,
		LoggerFactory:      pionlog.New(cfg.Logger.Level(max(zerolog.WarnLevel, cfg.Logger.GetLevel()))),
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
		},
	})
	if err != nil {
		return fail(fmt.Errorf("turnserver: %w", err))
	}
	s.log.Info().Stringer("addr", s.addr).Stringer("public", s.public).Str("tls", cfg.TLSAddr).
		Int("min_port", cfg.MinPort).Int("max_port", cfg.MaxPort).Msg("TURN/STUN server listening (UDP and TCP)")
	return s, nil
}

// auth is pion's AuthHandler: it returns the long-term key of a REST API
// username, or refuses a malformed or expired one. pion then checks the
// request's MESSAGE-INTEGRITY with the key (a forged password fails there).
func (s *Server) auth(ra *turn.RequestAttributes) (string, []byte, bool) {
	id, err := parseUsername(ra.Username, s.cfg.Now())
	if err != nil {
		s.count.refusedCreds.Add(1)
		s.log.Debug().Err(err).Stringer("src", ra.SrcAddr).Msg("refused TURN credentials")
		return "", nil, false
	}
	return id, turn.GenerateAuthKey(ra.Username, ra.Realm, Password(s.cfg.Key, ra.Username)), true
}

// quota is pion's QuotaHandler: 486 once an identity holds MaxAllocations.
func (s *Server) quota(userID, _ string, _ net.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.users[userID]; u != nil && u.allocs >= s.cfg.MaxAllocations {
		s.count.refusedAllocs.Add(1)
		return false
	}
	return true
}

// acquire reserves an allocation for id (the quota check can race with a
// concurrent allocation, so the count is enforced here too).
func (s *Server) acquire(id string) (*user, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[id]
	if u == nil {
		u = &user{lim: rate.NewLimiter(rate.Limit(s.cfg.MaxBytesPerSecond), s.cfg.MaxBytesPerSecond)}
		s.users[id] = u
	}
	if u.allocs >= s.cfg.MaxAllocations {
		s.count.refusedAllocs.Add(1)
		return nil, fmt.Errorf("turnserver: %s holds %d allocations already", id, u.allocs)
	}
	u.allocs++
	s.count.allocs.Add(1)
	s.count.allocsTotal.Add(1)
	return u, nil
}

func (s *Server) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.users[id]; u != nil {
		if u.allocs--; u.allocs <= 0 {
			delete(s.users, id)
		}
	}
	s.count.allocs.Add(-1)
}

// Credentials returns TURN REST API credentials for identity, valid for
// Config.CredentialTTL.
func (s *Server) Credentials(identity string) (username, password string) {
	username = Username(identity, s.cfg.Now().Add(s.cfg.CredentialTTL))
	return username, Password(s.cfg.Key, username)
}

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
	return Stats{
		Allocations: s.count.allocs.Load(), AllocationsTotal: s.count.allocsTotal.Load(),
		RelayedBytesOut: s.count.bytesOut.Load(), RelayedBytesIn: s.count.bytesIn.Load(),
		RefusedCredentials: s.count.refusedCreds.Load(), RefusedPeers: s.count.refusedPeers.Load(),
		RefusedAllocations: s.count.refusedAllocs.Load(), RateDropped: s.count.rateDropped.Load(),
	}
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
