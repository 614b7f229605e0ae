package link

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/transport/v5"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/pionlog"
)

// Defaults of Config fields left zero.
const (
	DefaultUDPMuxAddr              = "127.0.0.1:0"
	DefaultUDPMuxBufferBytes       = 4 << 20
	DefaultUnreliableDropThreshold = 64 << 10
	DefaultReliableHighWater       = 1 << 20
	DefaultICEDisconnectedTimeout  = 5 * time.Second
	DefaultICEFailedTimeout        = 25 * time.Second
	DefaultICEKeepaliveInterval    = 2 * time.Second
	DefaultRelayAcceptanceMinWait  = 500 * time.Millisecond
	DefaultAckCoalescing           = 2 * time.Millisecond
)

// Config configures an API. The zero value is valid: loopback only, one shared
// ICE UDP socket on an ephemeral 127.0.0.1 port, logging disabled.
type Config struct {
	// Logger receives this package's logs and, through internal/pionlog,
	// pion's. Default: disabled.
	Logger zerolog.Logger

	// AllowNonLoopback lifts the loopback-only candidate filters (interface
	// "lo", local and remote IPs loopback). Default false: ICE gathers and
	// accepts only loopback addresses, so tests cannot reach any other
	// network, and ICE servers (ConnConfig.ICEServers) are used only when
	// their host is a loopback address. mDNS stays disabled and UDP4 stays
	// the only network type whatever this says.
	AllowNonLoopback bool

	// LocalOnly, with AllowNonLoopback, keeps every link on this machine while using a
	// non-loopback address: candidates only on the shared socket's address (UDPMuxAddr, which
	// must then be a specific IP), remote candidates only at this machine's own addresses
	// (loopback and its interfaces'), ICE servers only there. That is what a browser on the same
	// machine needs: stock Firefox and Chromium offer no loopback candidate and pair a
	// non-loopback candidate only with another (docs/design.md §6). Default false.
	LocalOnly bool

	// PublicIP, when set, is advertised in host candidates instead of the
	// interface addresses (1:1 NAT of a cloud VM, whose interface holds a
	// private address). Default "": the interface addresses.
	PublicIP string

	// DisableUDPMux gives every connection its own ephemeral UDP socket
	// instead of the shared one. Default false: one shared socket, which
	// removed loopback drops under load (docs/design.md §6) and is what a
	// server wants anyway (one port for all peers).
	//
	// Limit (pion's UDPMuxDefault routes non-STUN packets by remote address
	// only): a muxed API cannot hold two live Conns to the same remote
	// address. Many clients on one muxed host are fine as long as each client
	// has its own address, so in-process tests with several clients give the
	// clients' API DisableUDPMux (ephemeral socket per Conn) or one API each.
	DisableUDPMux bool
	// UDPMuxAddr is the address of the shared socket. Its IP must be a
	// loopback address unless AllowNonLoopback, which also admits the
	// unspecified address (every interface). Port 0 picks an ephemeral port;
	// see API.UDPMuxAddr.
	// Default "127.0.0.1:0".
	UDPMuxAddr string
	// UDPMuxBufferBytes sets the shared socket's kernel read and write
	// buffers. The kernel caps it at net.core.rmem_max/wmem_max. Default 4 MiB.
	UDPMuxBufferBytes int
	// DisableBatchIO makes the shared socket send and read one datagram per syscall. Default
	// false: on Linux, writes queue and leave together in sendmmsg (and UDP GSO where the
	// kernel has it), reads use recvmmsg (and UDP GRO where the kernel has it; udpbatch.go);
	// elsewhere, and on a Net other than the OS's, the socket is used as it is.
	DisableBatchIO bool

	// Net replaces the OS network for ICE (for example a pion vnet in tests,
	// which needs AllowNonLoopback because vnet interfaces are not "lo").
	// Default nil: the OS network.
	Net transport.Net

	// UnreliableDropThreshold: an unreliable Send is dropped (and counted)
	// when the channel already buffers more than this many bytes. pion's
	// unreliable channel would otherwise queue without bound (docs/design.md
	// §6, flow control). Default 64 KiB.
	UnreliableDropThreshold uint64
	// ReliableHighWater: a reliable Send fails with ErrBackpressure when the
	// channel already buffers more than this many bytes. Default 1 MiB.
	ReliableHighWater uint64

	// ICE liveness: a connection without traffic for ICEDisconnectedTimeout
	// is disconnected, which ends the link. Defaults are pion's: 5 s, 25 s
	// and a 2 s keepalive.
	ICEDisconnectedTimeout time.Duration
	ICEFailedTimeout       time.Duration
	ICEKeepaliveInterval   time.Duration

	// RelayAcceptanceMinWait is how long the controlling side waits before it
	// nominates a relay pair, giving direct pairs a chance first. pion's 2 s
	// default would add 2 s to every join through TURN; a direct pair that
	// works answers its checks well within the default. Default 500 ms.
	RelayAcceptanceMinWait time.Duration

	// AckCoalescing lets one SCTP SACK acknowledge a burst of received packets of the
	// unreliable (unordered) channel: the SACK that RFC 9260 sends after every second packet
	// leaves this long after that packet instead, covering what arrived meanwhile (at most 16
	// packets wait; the reliable channel, a gap, a duplicate and the I bit are acknowledged at
	// once, as before). A host sends each member a burst every network interval, and every
	// SACK costs it a trip up its receive path, so Go members that coalesce cost their host
	// less (docs/protocol.md §1.3). Negative: off (a SACK every second packet). Default 2 ms.
	// It needs Concord's carried pion/sctp (FastPaths); with stock pion/sctp it is off.
	AckCoalescing time.Duration
}

// API creates connections that share one configuration and, unless disabled,
// one ICE UDP socket. It is safe for concurrent use. Close it after every Conn
// it created has been closed.
type API struct {
	log     zerolog.Logger
	pion    *webrtc.API
	se      webrtc.SettingEngine // what pion was built with, for MediaAPI
	mux     *ice.UDPMuxDefault   // nil when DisableUDPMux
	batch   *batchConn           // the shared socket's batching, nil when not batched
	muxAddr net.Addr
	dropAt  uint64
	highAt  uint64
	// ackCoalesce is Config.AckCoalescing, 0 when off.
	ackCoalesce time.Duration
	// loopbackOnly: no candidate, and no ICE server, off loopback. local, when not nil: only
	// these addresses (this machine's, Config.LocalOnly) for remote candidates and ICE servers.
	loopbackOnly bool
	local        map[netip.Addr]bool
	closeErr     error
	closeMu      sync.Once
	// cert is the DTLS certificate every connection presents (shared.go).
	cert sharedCert
}

// NewAPI validates cfg, opens the shared UDP socket and builds the pion API
// with the settings of docs/design.md §6.
func NewAPI(cfg Config) (*API, error) {
	cfg = withDefaults(cfg)
	a := &API{
		log:    cfg.Logger.With().Str("component", "link").Logger(),
		dropAt: cfg.UnreliableDropThreshold,
		highAt: cfg.ReliableHighWater,

		ackCoalesce: max(cfg.AckCoalescing, 0),

		loopbackOnly: !cfg.AllowNonLoopback,
	}
	logs := pionlog.New(cfg.Logger)

	var se webrtc.SettingEngine
	se.LoggerFactory = logs
	// Guideline 8: we run our own read loop per channel on a reused buffer
	// instead of pion's OnMessage, which copies every message.
	se.DetachDataChannels()
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	// Loopback candidates only on loopback: elsewhere 127.0.0.1 would name
	// the remote's own machine.
	// A shared socket on loopback offers nothing else, whatever AllowNonLoopback says (`--ice any`
	// with a signaling URL on loopback): without its loopback candidate it would gather none.
	muxOnLoopback := false
	if ap, err := netip.ParseAddrPort(cfg.UDPMuxAddr); err == nil && !cfg.DisableUDPMux {
		muxOnLoopback = ap.Addr().IsLoopback()
	}
	se.SetIncludeLoopbackCandidate(!cfg.AllowNonLoopback || muxOnLoopback)
	if !cfg.AllowNonLoopback {
		se.SetInterfaceFilter(func(name string) bool { return name == "lo" })
		se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
		se.SetRemoteIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	}
	if cfg.AllowNonLoopback && cfg.LocalOnly {
		if err := a.localOnly(&se, cfg); err != nil {
			return nil, err
		}
	}
	if cfg.PublicIP != "" {
		ip := net.ParseIP(cfg.PublicIP)
		if ip == nil || ip.To4() == nil {
			return nil, fmt.Errorf("%w: PublicIP %q is not an IPv4 address", ErrConfig, cfg.PublicIP)
		}
		if !cfg.AllowNonLoopback && !ip.IsLoopback() {
			return nil, fmt.Errorf("%w: PublicIP %q is not loopback and AllowNonLoopback is false", ErrConfig, cfg.PublicIP)
		}
		if err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External: []string{ip.String()}, AsCandidateType: webrtc.ICECandidateTypeHost,
		}); err != nil {
			return nil, fmt.Errorf("%w: PublicIP %q: %w", ErrConfig, cfg.PublicIP, err)
		}
	}
	// No DTLS cookie round trip (RFC 6347 §4.2.1 HelloVerifyRequest): it proves that the client
	// owns its source address, which ICE already proved (a DTLS packet is taken only from a remote
	// candidate the STUN checks, with the credentials signaling carried, validated). A handshake
	// is one round trip shorter; a migration makes 31 of them at once (docs/benchmarks-history.md
	// "Migration without standby links").
	se.SetDTLSInsecureSkipHelloVerify(true)
	se.SetRelayAcceptanceMinWait(cfg.RelayAcceptanceMinWait)
	se.SetICETimeouts(cfg.ICEDisconnectedTimeout, cfg.ICEFailedTimeout, cfg.ICEKeepaliveInterval)
	// Advertised in SDP as a=max-message-size, so a conforming remote (pion,
	// Chromium) refuses to send us anything larger than we can read.
	se.SetSCTPMaxMessageSize(MaxReliableMessage)
	// RFC 9653: DTLS already protects every SCTP packet, so a peer that says it accepts them
	// (Concord's Go peers, Chromium's dcsctp) gets packets without the CRC32c, and this end
	// accepts the same. A peer that does not say so still gets checksums (LiveKit does the same).
	se.EnableSCTPZeroChecksum(true)
	if cfg.Net != nil {
		se.SetNet(cfg.Net)
	} else {
		// One interface list for every connection (shared.go), not a netlink dump each.
		n, err := newSharedNet()
		if err != nil {
			return nil, err
		}
		se.SetNet(n)
	}
	if !cfg.DisableUDPMux {
		if err := a.openMux(cfg, logs); err != nil {
			return nil, err
		}
		se.SetICEUDPMux(a.mux)
	}

	a.se = se
	// Data only: an empty MediaEngine and no interceptors (the defaults are
	// for RTP and would cost goroutines and memory per connection).
	a.pion = webrtc.NewAPI(
		webrtc.WithSettingEngine(se),
		webrtc.WithMediaEngine(&webrtc.MediaEngine{}),
		webrtc.WithInterceptorRegistry(nil),
	)
	a.log.Debug().Bool("loopback_only", !cfg.AllowNonLoopback).Stringer("udp_mux", a.muxAddr).Str("public_ip", cfg.PublicIP).Msg("link API ready")
	return a, nil
}

func withDefaults(cfg Config) Config {
	if cfg.UDPMuxAddr == "" {
		cfg.UDPMuxAddr = DefaultUDPMuxAddr
	}
	if cfg.UDPMuxBufferBytes <= 0 {
		cfg.UDPMuxBufferBytes = DefaultUDPMuxBufferBytes
	}
	if cfg.UnreliableDropThreshold == 0 {
		cfg.UnreliableDropThreshold = DefaultUnreliableDropThreshold
	}
	if cfg.ReliableHighWater == 0 {
		cfg.ReliableHighWater = DefaultReliableHighWater
	}
	if cfg.ICEDisconnectedTimeout <= 0 {
		cfg.ICEDisconnectedTimeout = DefaultICEDisconnectedTimeout
	}
	if cfg.ICEFailedTimeout <= 0 {
		cfg.ICEFailedTimeout = DefaultICEFailedTimeout
	}
	if cfg.ICEKeepaliveInterval <= 0 {
		cfg.ICEKeepaliveInterval = DefaultICEKeepaliveInterval
	}
	if cfg.RelayAcceptanceMinWait <= 0 {
		cfg.RelayAcceptanceMinWait = DefaultRelayAcceptanceMinWait
	}
	if cfg.AckCoalescing == 0 {
		cfg.AckCoalescing = DefaultAckCoalescing
	}
	return cfg
}

// localOnly applies Config.LocalOnly: host candidates on the shared socket's IP only, remote
// candidates and ICE servers at this machine's addresses only.
func (a *API) localOnly(se *webrtc.SettingEngine, cfg Config) error {
	mux, err := netip.ParseAddrPort(cfg.UDPMuxAddr)
	if err != nil || mux.Addr().IsUnspecified() || cfg.DisableUDPMux || cfg.Net != nil {
		return fmt.Errorf("%w: LocalOnly needs the shared socket on a specific IP of this machine, not UDPMuxAddr %q", ErrConfig, cfg.UDPMuxAddr)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("link: this machine's addresses (LocalOnly): %w", err)
	}
	a.local = make(map[netip.Addr]bool, len(addrs))
	for _, ad := range addrs {
		if p, err := netip.ParsePrefix(ad.String()); err == nil {
			a.local[p.Addr().Unmap()] = true
		}
	}
	if !a.local[mux.Addr().Unmap()] {
		return fmt.Errorf("%w: LocalOnly: UDPMuxAddr %q is not an address of this machine", ErrConfig, cfg.UDPMuxAddr)
	}
	own := mux.Addr().Unmap()
	se.SetIPFilter(func(ip net.IP) bool { a, ok := netip.AddrFromSlice(ip); return ok && a.Unmap() == own })
	se.SetRemoteIPFilter(func(ip net.IP) bool { return a.isLocal(ip) })
	return nil
}

// isLocal reports whether ip is loopback or one of this machine's addresses (Config.LocalOnly).
func (a *API) isLocal(ip net.IP) bool {
	ad, ok := netip.AddrFromSlice(ip)
	return ok && (ad.IsLoopback() || a.local[ad.Unmap()])
}

func (a *API) openMux(cfg Config, logs *pionlog.Factory) error {
	addr, err := net.ResolveUDPAddr("udp4", cfg.UDPMuxAddr)
	if err != nil {
		return fmt.Errorf("%w: UDPMuxAddr %q: %w", ErrConfig, cfg.UDPMuxAddr, err)
	}
	if !cfg.AllowNonLoopback && (addr.IP == nil || !addr.IP.IsLoopback()) {
		return fmt.Errorf("%w: UDPMuxAddr %q is not loopback and AllowNonLoopback is false", ErrConfig, cfg.UDPMuxAddr)
	}

	var conn transport.UDPConn
	if cfg.Net != nil {
		conn, err = cfg.Net.ListenUDP("udp4", addr)
	} else {
		conn, err = net.ListenUDP("udp4", addr)
	}
	if err != nil {
		return fmt.Errorf("link: listen on %s for the ICE UDP mux: %w", addr, err)
	}
	for _, set := range []func(int) error{conn.SetReadBuffer, conn.SetWriteBuffer} {
		if err := set(cfg.UDPMuxBufferBytes); err != nil && !errors.Is(err, transport.ErrNotSupported) {
			_ = conn.Close()
			return fmt.Errorf("link: set ICE UDP mux buffer to %d bytes: %w", cfg.UDPMuxBufferBytes, err)
		}
	}
	var pc net.PacketConn = conn
	if !cfg.DisableBatchIO {
		if bc := batchSocket(conn); bc != nil {
			a.batch, pc = bc, bc
		}
	}
	a.mux = ice.NewUDPMuxDefault(ice.UDPMuxParams{
		Logger:  logs.NewLogger("udpmux"),
		UDPConn: pc,
		Net:     cfg.Net,
	})
	a.muxAddr = conn.LocalAddr()
	return nil
}

// Flush sends what the shared socket has queued now. The peer loop calls it after every
// network flush; without it, queued datagrams leave when a batch fills or as soon as pion's
// writers go quiet (udpbatch.go). No-op when the socket is not batched.
func (a *API) Flush() {
	if a.batch != nil {
		a.batch.Flush()
	}
}

// BatchStats returns the shared socket's batching counts, and false when it is not batched.
func (a *API) BatchStats() (BatchStats, bool) {
	if a.batch == nil {
		return BatchStats{}, false
	}
	return a.batch.stats(), true
}

// MediaAPI returns a pion API with this API's network settings (its shared socket, its candidate
// filters, DESIGN §6) but media m and interceptors ir: for a service that carries RTP beside
// Concord's data links (the voice forwarder, docs/protocol.md §10). Its connections are this
// API's for Close's purposes: close them before Close.
func (a *API) MediaAPI(m *webrtc.MediaEngine, ir *interceptor.Registry) *webrtc.API {
	return webrtc.NewAPI(webrtc.WithSettingEngine(a.se), webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(ir))
}

// UDPMuxAddr returns the local address of the shared ICE UDP socket, or nil
// when the mux is disabled.
func (a *API) UDPMuxAddr() net.Addr { return a.muxAddr }

// Close closes the shared UDP socket. Conns created by a must be closed
// first: closing the socket under a live Conn kills it. Idempotent.
func (a *API) Close() error {
	a.closeMu.Do(func() {
		if a.mux != nil {
			a.closeErr = a.mux.Close()
		}
	})
	return a.closeErr
}
