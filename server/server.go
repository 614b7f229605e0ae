package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/cluster"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/turnserver"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
	"github.com/concordrtc/concord/world"
)

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MiB).
const maxHeaderBytes = 64 << 10

// newHTTPServer is an http.Server for h with the bounds of ht (zero fields: the defaults),
// logging net/http's own complaints through log.
func newHTTPServer(h http.Handler, ht HTTPTimeouts, log zerolog.Logger) *http.Server {
	if ht.ReadHeader <= 0 {
		ht.ReadHeader = DefaultHTTPTimeouts.ReadHeader
	}
	if ht.Read <= 0 {
		ht.Read = DefaultHTTPTimeouts.Read
	}
	if ht.Idle <= 0 {
		ht.Idle = DefaultHTTPTimeouts.Idle
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: ht.ReadHeader, ReadTimeout: ht.Read, IdleTimeout: ht.Idle, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: stdlog.New(httpErrorLog{log}, "", 0)}
}

// httpErrorLog carries net/http's error lines (which it otherwise prints to stderr, outside the
// structured log) into the server's log: a failed TLS handshake, which any port scan or
// plain-HTTP client causes, at debug; anything else at warn.
type httpErrorLog struct{ log zerolog.Logger }

func (w httpErrorLog) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	ev := w.log.Warn()
	if strings.HasPrefix(line, "http: TLS handshake error") {
		ev = w.log.Debug()
	}
	ev.Msg(line)
	return len(p), nil
}

// Server is a Concord server: the page and the client modules, signaling (/ws), /api/rooms,
// /healthz and the operator's routes over HTTP(S), the dedicated hosts of its rooms, and
// optionally the durable store, the cluster and the embedded TURN relay. New makes one, Start
// runs it, Shutdown stops it; a Server is started at most once.
type Server struct {
	o        Options
	log      zerolog.Logger
	reg      *prometheus.Registry
	tlsCfg   *tls.Config // nil without TLSCert
	origins  *originPolicy
	external []externalServer

	startMu  sync.Mutex // guards started and stopped
	started  bool
	stopped  bool
	addr     *net.TCPAddr
	url      string
	handler  http.Handler
	failed   chan error     // capacity 1: the first part that stopped on its own (Failed)
	goes     sync.WaitGroup // the HTTP servers' goroutines
	hostsRun sync.WaitGroup // the dedicated hosts' goroutines outside a cluster
	sig      *signaling.Server
	turn     *turnserver.Server // nil without TURN
	turnOpen bool               // TURN without a Secret: an open relay (concord_turn_open)
	http     *http.Server
	inner    *http.Server // the dedicated host's loopback door, when the public one cannot serve it
	innerAt  string       // the URL the server's own peers dial (innerURL)
	host     *peer.Peer   // the dedicated host of Room; nil without one
	hosts    []*dedicated
	stopHost context.CancelFunc
	store    *durable.Store  // nil without Data
	writer   *durable.Writer // nil without Data
	node     *cluster.Node   // nil unless clustered
	// placement runs the dedicated hosts of the rooms this node owns (placeStop ends it,
	// placeDone is closed when it has). nil unless clustered.
	placement *cluster.Placement
	// bans is the cluster's ban bucket, watched (and its kicks served) until banStop; banDone
	// receives once from each of the two goroutines. nil unless clustered.
	bans    *durable.Bans
	banStop context.CancelFunc
	banDone chan struct{}

	restoreRefused *prometheus.CounterVec // concord_restore_refused_total{reason}
	keep           keeper                 // KeepAll: the followers (keep.go)

	// Cluster mode: the dedicated hosts run where their room's lease is (placement.go).
	hostServer         string // the URL the dedicated hosts dial
	secret             string // Options.Secret
	checkpointInterval time.Duration
	placeStop          context.CancelFunc
	placeDone          chan struct{}
	hostMu             sync.Mutex // guards, in cluster mode, each dedicated.peer

	voice  *voiceServer    // nil without Voice.On
	worlds []*world.Server // Options.Worlds (world.go)
}

// dedicated is a room's dedicated host in this process.
type dedicated struct {
	room signaling.RoomID
	cfg  peer.Config
	api  *link.API    // its WebRTC (one UDP socket)
	app  *durable.App // nil without Data and without a scene
	// peer is set by startHosts, before Serve; in cluster mode by placement, under
	// Server.hostMu, whenever the host starts or stops.
	peer *peer.Peer

	// Cluster mode (placement.go), owned by the placement goroutine.
	scene string
	// missingSince: when its room, open before, was first found without a checkpoint.
	missingSince time.Time
}

// New checks o and returns a server that Start runs. A mistake in o is an *OptionError; a TLS
// certificate that does not load or a Scenes file that cannot be read is a plain error. New
// creates nothing: no socket, no file.
func New(o Options) (*Server, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := checkVoice(o.Voice); err != nil {
		return nil, err
	}
	s := &Server{o: o, log: o.Logger, reg: o.Registry, failed: make(chan error, 1), checkpointInterval: o.CheckpointInterval}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		s.tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	var err error
	if s.origins, err = newOriginPolicy(o.Origins); err != nil {
		return nil, optionError(err)
	}
	if s.external, err = parseICEServers(o.ICEServers); err != nil {
		return nil, optionError(err)
	}
	return s, nil
}

// Start listens on Options.Addr, opens the store, joins the cluster, starts the TURN relay and
// the dedicated hosts, and returns once the server accepts connections. On an error it has
// stopped what it had started. Start is StartContext with a context that never ends.
func (s *Server) Start() error { return s.StartContext(context.Background()) }

// StartContext is Start with a context that bounds the startup: when ctx ends while the server
// waits (for its cluster's JetStream, say), StartContext stops and returns ctx's cause. Once it
// has returned, ctx no longer matters: Shutdown stops the server.
func (s *Server) StartContext(ctx context.Context) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.started {
		return ErrStarted
	}
	s.started = true
	if err := s.start(ctx); err != nil {
		s.closeAll(context.Background())
		return err
	}
	return nil
}

// start is StartContext's work; on an error the caller stops what it started.
// Order: the listener and the dedicated hosts' WebRTC sockets first, so that the embedded TURN
// server knows the sockets' ports (a relay may reach them on the server's own address), then
// TURN, signaling (which hands out TURN credentials) and the hosts.
func (s *Server) start(ctx context.Context) error {
	o, log, reg, tlsCfg, origins := s.o, s.log, s.reg, s.tlsCfg, s.origins
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	addr := ln.Addr().(*net.TCPAddr)
	s.addr = addr
	hosted := hostedRooms(o)
	served := false
	defer func() {
		if !served {
			_ = ln.Close()
		}
	}()
	s.restoreRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "concord_restore_refused_total",
		Help: "Messages of checkpoints and scenes dropped at restore, beyond the restore bounds (docs/protocol.md §6), by reason."}, []string{"reason"})
	if err := reg.Register(s.restoreRefused); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if o.clustered() && o.Data == "" && o.NATS == "" {
		return optionError(errors.New("a cluster keeps its rooms in JetStream: --cluster-name needs --data"))
	}
	if o.Data != "" || o.NATS != "" {
		dc := durable.Config{Dir: o.Data, Logger: log.With().Str("component", "durable").Logger(), NATS: o.NATS, Replicas: o.Replicas,
			NATSAuth: o.natsAuth(), Registerer: reg, RoomTTL: o.RoomTTL}
		if o.clustered() {
			dc.NodeName = o.NodeName // JetStream knows a cluster's peers by it; one node keeps "concord"
		}
		if o.ClusterName != "" {
			dc.Cluster = o.clusterConfig()
		}
		if s.store, err = durable.OpenContext(ctx, dc); err != nil {
			return err
		}
		if o.KeepRooms != KeepNone {
			s.writer = durable.NewWriter(s.store, durable.WriterConfig{Logger: log.With().Str("component", "checkpoint").Logger(), Registerer: reg})
		}
	}
	var ownPorts []int
	for i, room := range hosted {
		d := &dedicated{room: room}
		ho := o
		if h, _, err := net.SplitHostPort(o.Network.UDP); err == nil && i > 0 {
			ho.Network.UDP = net.JoinHostPort(h, "0") // --udp's port is the first host's
		}
		var seed []byte
		var clock crdt.Timestamp
		if !o.clustered() {
			if seed, clock, err = s.seed(ctx, room, o.Scenes[room]); err != nil {
				// The room does not open with half a world; the other rooms go on.
				log.Error().Err(err).Str("room", string(room)).Msg("room not opened: its dedicated host does not start")
				continue
			}
		}
		if d.cfg, err = dedicatedHostConfig(s.log, ho, room, addr); err != nil {
			return err
		}
		if o.clustered() {
			// The room's owner starts its host, from the checkpoint of that moment (placement.go).
			d.scene = o.Scenes[room]
		} else if s.writer != nil || seed != nil {
			d.app = durable.NewApp(d.cfg.App, durable.AppConfig{Room: room, Writer: s.writer, Seed: seed, SeedClock: clock,
				Interval: o.CheckpointInterval, Logger: log.With().Str("component", "checkpoint").Logger()})
			d.cfg.App = d.app
		}
		if d.api, err = peer.LinkAPI(d.cfg); err != nil {
			return err
		}
		s.hosts = append(s.hosts, d)
		d.cfg.Transport = peer.PionTransport{API: d.api}
		if ua, ok := d.api.UDPMuxAddr().(*net.UDPAddr); ok {
			ownPorts = append(ownPorts, ua.Port)
		}
	}
	vs, vport, err := openVoiceSocket(o, log, addr)
	if err != nil {
		return err
	}
	if s.voice = vs; vs != nil {
		ownPorts = append(ownPorts, vport)
	}
	// TURN credentials live as long as their member: the relay asks signaling, which starts
	// below (until then no one is a member).
	var sigRef atomic.Pointer[signaling.Server]
	if o.TURN != "" {
		if s.turn, err = startTURN(o, tlsCfg, ownPorts, log, turnLive(&sigRef)); err != nil {
			return err
		}
		s.turnOpen = o.Secret == ""
	}

	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		// A registry of the embedding program may hold them already.
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	cfg := o.Limits
	cfg.Logger = log.With().Str("component", "signaling").Logger()
	cfg.Rooms = map[signaling.RoomID]signaling.RoomConfig{}
	// --room is pinned to dedicated hosts whether or not this process runs one: a `concord host
	// --room` process of its own takes the room over once synced (README's migration demo).
	cfg.Rooms[signaling.RoomID(o.Room)] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{DedicatedHostUser}}
	for _, room := range hosted {
		cfg.Rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{DedicatedHostUser}}
	}
	pinWorldRooms(o, cfg.Rooms)
	if s.store != nil {
		cfg.Store = s.store
		cfg.Checkpoints = s.checkpoints(o)
	}
	switch {
	case o.clustered():
		// Moderators' bans hold on every node: a KV bucket each node watches (below).
		if s.bans, err = s.store.Bans(); err != nil {
			return err
		}
		cfg.Bans, cfg.KickElsewhere = s.bans, s.bans.Kick
	case o.Data != "":
		// A single node's bans survive restarts in a file of its data directory.
		cfg.Bans = signaling.NewBanFile(filepath.Join(o.Data, banFileName))
	}
	if o.clustered() {
		rooms := make([]signaling.RoomID, 0, len(s.hosts))
		for _, d := range s.hosts {
			rooms = append(rooms, d.room)
		}
		s.placement = cluster.NewPlacement(cluster.PlacementConfig{Rooms: rooms, Start: s.startDedicated, Nodes: 1 + len(o.Routes),
			Logger: log.With().Str("component", "placement").Logger()})
		s.node, err = cluster.New(cluster.Config{Store: s.store, Name: o.NodeName, LeaseTTL: o.LeaseTTL, Placement: s.placement,
			Registerer: reg, Logger: log.With().Str("component", "cluster").Logger()})
		if err != nil {
			return err
		}
		cfg.Router, cfg.NodeName = s.node, o.NodeName
	}
	cfg.CheckOrigin = origins.allowed
	cfg.Registerer = reg
	if o.Secret != "" {
		cfg.Secret = []byte(o.Secret)
	} else {
		cfg.ServiceKey, cfg.Reserved = []byte(o.serviceKey), reservedIdentities
	}
	cfg.ICEServers = iceServersFunc(s.turn, s.external, o.ICEServerSecret)
	if s.turn != nil {
		cfg.ICERefresh = s.turn.CredentialTTL() / 2 // a member always holds credentials good for half the TTL
		cfg.MemberLeft = turnMemberLeft(s.turn)
	}
	s.sig = signaling.New(cfg)
	sigRef.Store(s.sig)
	if s.node != nil {
		s.node.Attach(s.sig)
	}
	if s.bans != nil {
		// Bans made through the other nodes hold here; their kicks reach this node's members.
		bctx, cancel := context.WithCancel(context.Background())
		s.banStop, s.banDone = cancel, make(chan struct{}, 2)
		go func() {
			defer func() { s.banDone <- struct{}{} }()
			err := s.bans.Watch(bctx, func(b signaling.Ban, lifted bool) { _ = s.sig.BanChanged(bctx, b, lifted) })
			if err != nil {
				log.Error().Err(err).Msg("the cluster's bans are not watched: bans made through other nodes do not hold here until a restart")
			}
		}()
		go func() {
			defer func() { s.banDone <- struct{}{} }()
			if err := s.bans.ServeKicks(bctx, s.sig.Kick); err != nil {
				log.Error().Err(err).Msg("kicks sent to other nodes do not reach this node's members")
			}
		}()
	}
	if err := reg.Register(&hostCollector{s: s}); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	// s.hosts and their peers are set before Serve (startHosts), never after.
	if err := reg.Register(newRefusalCollector(func() []roomPeer {
		// In cluster mode placement starts and stops hosts under hostMu.
		s.hostMu.Lock()
		defer s.hostMu.Unlock()
		peers := make([]roomPeer, 0, len(s.hosts))
		for _, d := range s.hosts {
			if d.peer != nil {
				peers = append(peers, roomPeer{room: string(d.room), p: d.peer})
			}
		}
		return peers
	})); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}

	mux := http.NewServeMux()
	sh := s.sig.Handler()
	mux.Handle("/ws", origins.gate(sh))
	mux.Handle("/api/", sh)
	mux.Handle("/healthz", sh)
	// The operator's routes: with a secret, only to the admin key (docs/security.md §9).
	admin := s.sig.AdminOnly
	if o.Metrics {
		mux.Handle("/metrics", admin(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	}
	if o.Pprof {
		mux.Handle("/debug/pprof/", admin(http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/cmdline", admin(http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", admin(http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", admin(http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", admin(http.HandlerFunc(pprof.Trace)))
	}
	vh, err := s.voice.start(s, o, addr, voice.Config{Members: s.sig, Secret: cfg.Secret,
		Registerer: reg, Logger: log.With().Str("component", "voice").Logger()})
	if err != nil {
		return err
	}
	if s.node != nil && s.voice != nil { // one forwarder per room, on its owner (voicecluster.go)
		if s.voice.relay, err = newVoiceRelay(s.node, s.store.Conn(), vh, o.Voice.MaxRelayed, reg, log.With().Str("component", "voice").Logger()); err != nil {
			return err
		}
		vh = s.voice.relay
	}
	mux.Handle("/voice/", voiceCORS(origins, vh))
	if err := pageRoutes(mux, o, origins, log); err != nil {
		return err
	}
	scheme := "http"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		scheme = "https"
	}
	var root http.Handler = mux
	if tlsCfg != nil {
		root = hsts(root, o.HSTSMaxAge)
	}
	s.handler = root
	s.http = newHTTPServer(root, o.HTTP, log.With().Str("component", "http").Logger())
	s.url = scheme + "://" + addr.String()
	// Before Serve, so that the metrics collector never sees s.host change. The hosts' dials
	// wait in the listen backlog until Serve accepts them.
	if err := s.startHosts(ctx, o, addr, tlsCfg != nil, sh); err != nil {
		return err
	}
	if err := s.startKeeper(ctx, o, addr, tlsCfg != nil, sh, hosted); err != nil {
		return err
	}
	if err := s.startWorlds(o, addr, tlsCfg != nil, sh, mux); err != nil {
		return err
	}
	if s.voice != nil {
		// The forwarder's followers read positions through the inner door, so that every room
		// gets them under TLS too, dedicated hosts or not (docs/protocol.md §10).
		if s.voice.followAt, err = s.innerURL(o, addr, tlsCfg != nil, sh); err != nil {
			return err
		}
	}
	served = true
	s.serve(s.http, ln)
	log.Info().Str("url", s.url).Str("room", o.Room).Bool("dedicatedHost", o.DedicatedHost).
		Str("turn", o.TURN).Bool("tls", tlsCfg != nil).Str(storeField(o)).Str("node", o.NodeName).Str("cluster", o.ClusterName).Msg("concord serving")
	return nil
}

// serve runs hs on ln until Shutdown; an error before it is the server's failure (Failed).
func (s *Server) serve(hs *http.Server, ln net.Listener) {
	s.goes.Add(1)
	go func() {
		defer s.goes.Done()
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.fail(fmt.Errorf("http: %w", err))
		}
	}()
}

// fail reports err through Failed, unless an earlier failure or Shutdown has already been.
func (s *Server) fail(err error) {
	select {
	case s.failed <- err:
	default:
	}
}

// dedicatedHostConfig is the dedicated host's peer.Config but for Server and Token. Its WebRTC
// follows the public address: on this machine when the server listens on loopback
// (peer.ICELocal, or loopback-only under Network.LoopbackOnly), otherwise (or with ICE "any")
// one UDP socket (Network.UDP; default an ephemeral port on the Addr interface, on every
// interface when Addr is a wildcard or loopback) with Network.PublicIP in its host candidates.
func dedicatedHostConfig(log zerolog.Logger, o Options, room signaling.RoomID, addr *net.TCPAddr) (peer.Config, error) {
	nw := o.Network
	if nw.ICE == "" {
		nw.ICE = string(peer.ICEAny)
		if addr.IP.IsLoopback() {
			nw.ICE = string(nw.onThisMachine())
		}
	}
	if nw.UDP == "" && nw.ICE == string(peer.ICEAny) {
		nw.UDP = "0.0.0.0:0"
		if !addr.IP.IsUnspecified() && !addr.IP.IsLoopback() {
			nw.UDP = net.JoinHostPort(addr.IP.String(), "0")
		}
	}
	hl := log.With().Str("component", "host").Logger()
	cfg := peer.Config{Room: string(room), User: DedicatedHostUser, Device: "serve", Kind: signaling.KindHost, App: newApp(o, room), Logger: hl, Deltas: o.Deltas,
		RelayRate: o.RelayRate, RelayBurst: o.RelayBurst, RecvRelayRate: o.RecvRelayRate, RecvRelayBurst: o.RecvRelayBurst, RelayBacklog: o.RelayBacklog,
		WorldLimits: o.World}
	cfg.SignalingConfig.EventQueue = hostEventQueue(o.Limits, room)
	if _, own := o.Apps[string(room)]; !own && o.InterestRadius > 0 {
		cfg.Interest = arena.RadiusInterest{Radius: o.InterestRadius}
	}
	return cfg, nw.config(hl, &cfg)
}

// hostEventsPerMember is how many signaling events one joiner brings its host: member-joined,
// member-synced, its offer and its candidates (one or two on a machine's own addresses, more
// with a TURN relay or several interfaces).
const hostEventsPerMember = 6

// hostEventQueue is the dedicated host's signaling event queue: room enough for every member
// of a full room joining at once (hostEventsPerMember each), and never less than the peer's
// default. A burst of 1,024 joiners brings its host ~5,000 events faster than its loop takes
// them for a while; past three quarters of the queue the client sheds signals on arrival, and
// the joiners whose offers it shed never hear of it (they wait out their connect timeout). The
// server queues as many membership messages for every member (signaling.Config.SendQueue's
// overflow, 4 × max(MaxMembers, SendQueue)); 16 bytes a slot, made up front.
func hostEventQueue(l signaling.Config, room signaling.RoomID) int {
	members := l.Rooms[room].MaxMembers
	if members <= 0 {
		members = l.MaxMembers
	}
	if members <= 0 {
		members = signaling.DefaultMaxMembers
	}
	return max(peer.DefaultSignalingEventQueue, hostEventsPerMember*members)
}

// newApp is a new App for room's dedicated host: the embedding program's (Options.Apps), else
// the arena demo's.
func newApp(o Options, room signaling.RoomID) peer.App {
	if f := o.Apps[string(room)]; f != nil {
		return f()
	}
	return arena.New(arena.Config{})
}

// hostToken is the join token of a host of this process for room (signed with the Secret, or
// on an open server with the service key).
func hostToken(o Options, room signaling.RoomID) (string, error) {
	return signaling.IssueToken(o.tokenKey(), signaling.Claims{
		Room: room, User: DedicatedHostUser, Device: "serve", MayHost: true,
		Kind: signaling.KindHost, ExpiresAt: o.Now().Add(365 * 24 * time.Hour),
	})
}

// startHosts runs the dedicated hosts (each cfg with its transport) in this process. They dial
// the public listener, or, when that is TLS (whose certificate names the public host) or listens
// on every interface, a loopback listener of their own that serves only signaling.
func (s *Server) startHosts(ctx context.Context, o Options, addr *net.TCPAddr, tlsOn bool, sh http.Handler) error {
	if len(s.hosts) == 0 {
		return nil
	}
	server, err := s.innerURL(o, addr, tlsOn, sh)
	if err != nil {
		return err
	}
	s.hostServer = server
	if s.node != nil {
		s.secret = o.Secret
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.placeStop, s.placeDone = cancel, make(chan struct{})
		go func() {
			defer close(s.placeDone)
			s.placement.Run(pctx) // stops the hosts it started when pctx ends
		}()
		return nil
	}
	// The hosts run until Shutdown, whatever becomes of the startup's ctx.
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopHost = cancel
	for _, d := range s.hosts {
		cfg := d.cfg
		cfg.Server = server
		if cfg.Token, err = hostToken(o, d.room); err != nil {
			return err
		}
		p, err := peer.New(cfg)
		if err != nil {
			return err
		}
		d.peer = p
		if d.room == signaling.RoomID(o.Room) && o.DedicatedHost {
			s.host = p
		}
		s.hostsRun.Add(1)
		go func() {
			defer s.hostsRun.Done()
			err := p.Run(hctx)
			if d.app != nil {
				d.app.Final() // Run has returned: the world is this goroutine's
			}
			if hctx.Err() == nil {
				if err == nil {
					err = errors.New("dedicated host stopped")
				}
				s.fail(fmt.Errorf("room %q: %w", d.room, err))
			}
		}()
	}
	return nil
}

// innerURL is the URL the server's own peers (dedicated hosts, followers) dial: the public
// listener, or, when that is TLS (whose certificate names the public host) or listens on every
// interface, a loopback listener of their own that serves only signaling (made once).
func (s *Server) innerURL(o Options, addr *net.TCPAddr, tlsOn bool, sh http.Handler) (string, error) {
	if s.innerAt != "" {
		return s.innerAt, nil
	}
	s.innerAt = s.url
	if tlsOn || addr.IP.IsUnspecified() {
		iln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		imux := http.NewServeMux()
		imux.Handle("/ws", sh)
		s.inner = newHTTPServer(imux, o.HTTP, s.log.With().Str("component", "http").Logger())
		s.serve(s.inner, iln)
		s.innerAt = "http://" + iln.Addr().String()
	}
	return s.innerAt, nil
}

// hostedRooms lists the rooms the server runs a dedicated host for: Room (with DedicatedHost),
// every Scenes room and every Apps room, in a stable order.
func hostedRooms(o Options) []signaling.RoomID {
	var rooms []signaling.RoomID
	for room := range o.Scenes {
		if !o.DedicatedHost || room != signaling.RoomID(o.Room) {
			rooms = append(rooms, room)
		}
	}
	for room := range o.Apps {
		if _, scene := o.Scenes[signaling.RoomID(room)]; !scene && (!o.DedicatedHost || room != o.Room) {
			rooms = append(rooms, signaling.RoomID(room))
		}
	}
	slices.Sort(rooms)
	if o.DedicatedHost {
		rooms = slices.Insert(rooms, 0, signaling.RoomID(o.Room))
	}
	return rooms
}

// seed returns what room's dedicated host starts from: its last checkpoint, else its scene file,
// else nothing; validated whole, so that a bad one keeps the room closed rather than half open.
func (s *Server) seed(ctx context.Context, room signaling.RoomID, scene string) ([]byte, crdt.Timestamp, error) {
	if s.store != nil {
		c, err := s.store.LoadCheckpoint(ctx, room)
		switch {
		case err == nil:
			start := time.Now()
			n, err := durable.Validate(room, s.store.Source(room), c.Data)
			if err != nil {
				return nil, 0, err
			}
			s.log.Info().Str("room", string(room)).Uint64("term", uint64(c.Term)).Uint32("clock", uint32(c.Clock)).
				Int("entities", n).Int("bytes", len(c.Data)).Dur("validated", time.Since(start)).Msg("room checkpoint found")
			return s.bound(room, s.store.Source(room), c.Data, c.Clock)
		case !errors.Is(err, durable.ErrNoCheckpoint):
			return nil, 0, err
		}
	}
	if scene == "" {
		return nil, 0, nil
	}
	data, err := os.ReadFile(scene)
	if err != nil {
		return nil, 0, fmt.Errorf("room %q: scene: %w", room, err)
	}
	n, err := durable.Validate(room, scene, data)
	if err != nil {
		return nil, 0, err
	}
	s.log.Info().Str("room", string(room)).Str("scene", scene).Int("entities", n).Msg("room seeded from its scene")
	return s.bound(room, scene, data, 0)
}

// bound applies the restore bounds (durable.Bound) to a validated seed: what is beyond them is
// dropped, logged and counted, and the room opens from the rest.
func (s *Server) bound(room signaling.RoomID, source string, data []byte, clock crdt.Timestamp) ([]byte, crdt.Timestamp, error) {
	out, clock, dropped, err := durable.Bound(data, clock)
	if err != nil {
		return nil, 0, &durable.CorruptError{Room: room, Source: source, Err: err}
	}
	for reason, n := range dropped {
		s.restoreRefused.WithLabelValues(reason).Add(float64(n))
		s.log.Warn().Str("room", string(room)).Str("source", source).Str("reason", reason).Int("messages", n).
			Msg("restore: messages beyond the restore bounds dropped (docs/protocol.md §6)")
	}
	return out, clock, nil
}

func (s *Server) closeStore() {
	if s.writer != nil {
		s.writer.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// Failed delivers the error of a part of the server that stopped on its own while serving: the
// HTTP listener, or a dedicated host outside a cluster (a cluster's placement restarts its
// hosts). The rest keeps running until Shutdown; `concord serve` stops then. At most one error
// is delivered.
func (s *Server) Failed() <-chan error { return s.failed }

// Shutdown stops the server: the dedicated hosts first (each writes its last checkpoint), then
// signaling (members are told the server is going), the HTTP servers (which finish their
// requests until ctx ends, then close their connections), TURN, the cluster and the store. It
// returns once every goroutine the server started has ended: ctx's error when the HTTP
// servers had to be closed before their requests were done, else nil. A server that was never
// started, or was shut down before, returns nil at once; one still starting is shut down once
// StartContext has returned (cancel its ctx to cut the startup short).
func (s *Server) Shutdown(ctx context.Context) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if !s.started || s.stopped {
		return nil
	}
	s.stopped = true
	s.log.Info().Msg("shutting down")
	if s.store != nil {
		s.store.Stopping() // the other nodes keep the quorum our last checkpoints need
	}
	return s.closeAll(ctx)
}

// closeAll stops what start started, in reverse: the hosts (then their WebRTC sockets),
// signaling, the HTTP servers, TURN, the store. Parts never started are skipped.
func (s *Server) closeAll(ctx context.Context) error {
	s.fail(ErrShutdown) // from here a part that stops is not a failure
	if s.banStop != nil {
		s.banStop()
		<-s.banDone // the watch
		<-s.banDone // the kicks
		s.banStop = nil
	}
	if s.placeStop != nil {
		s.placeStop() // stops the hosts it runs; each writes its last checkpoint
		<-s.placeDone
		s.placeStop = nil
	}
	s.keep.stop() // each follower hands its last checkpoint to the writer
	if s.stopHost != nil {
		s.stopHost()
		s.hostsRun.Wait()
		s.stopHost = nil
	}
	for _, d := range s.hosts {
		if d.api != nil {
			_ = d.api.Close()
		}
	}
	s.stopWorlds()
	if s.sig != nil {
		_ = s.sig.Close()
	}
	if s.node != nil {
		s.node.Close()
	}
	var err error
	for _, hs := range []*http.Server{s.http, s.inner} {
		if hs == nil {
			continue
		}
		if e := hs.Shutdown(ctx); e != nil {
			_ = hs.Close()
			err = e
		}
	}
	s.goes.Wait() // the serving goroutines, whose Serve the Shutdown (or Close) ended
	s.voice.close()
	if s.turn != nil {
		_ = s.turn.Close()
	}
	s.closeStore() // after the hosts' last checkpoints
	return err
}

// ErrShutdown is what Failed delivers when Shutdown came before any failure.
var ErrShutdown = errors.New("server: shut down")

// Handler is the server's HTTP handler (the page, /ws, /api/, /healthz, /metrics and pprof as
// Options say), for a program that serves it on a listener or under a mux of its own as well as
// on Addr; nil before Start. The dedicated hosts dial the server's own listener.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry is the Prometheus registry the server registers its metrics into (Options.Registry,
// or its own).
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Addr is the address the server listens on (Options.Addr with its port chosen); nil before
// Start.
func (s *Server) Addr() net.Addr {
	if s.addr == nil {
		return nil
	}
	return s.addr
}

// URL is the server's base URL, http://HOST:PORT or https://…, that peers dial (peer.Config's
// Server); "" before Start.
func (s *Server) URL() string { return s.url }

// Host is the dedicated host of room running in this process, nil when none runs here (no such
// room, or in a cluster another node's). Its Status and Do are the embedding program's window
// on the room's world.
func (s *Server) Host(room string) *peer.Peer {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	for _, d := range s.hosts {
		if d.room == signaling.RoomID(room) {
			return d.peer
		}
	}
	return nil
}

// storeField is the log field that says where the server keeps its rooms: "nats" and the
// external NATS URLs (their passwords redacted) with NATS, else "data" and the data directory
// ("": in memory).
func storeField(o Options) (string, string) {
	if o.NATS == "" {
		return "data", o.Data
	}
	return "nats", durable.RedactURLs(o.NATS)
}

// banFileName is the file of the bans in Data.
const banFileName = "bans.json"

// hsts adds Strict-Transport-Security to h's responses over TLS: a browser that has seen one
// goes to this host over HTTPS only, so a network attacker cannot strip TLS from a later visit
// (a link or a typed http:// URL) and read the page's ?token=. Never over plain HTTP (RFC 6797
// §7.2: a browser ignores it there). maxAge 0 sends none.
func hsts(h http.Handler, maxAge time.Duration) http.Handler {
	if maxAge <= 0 {
		return h
	}
	v := "max-age=" + strconv.FormatInt(int64(maxAge/time.Second), 10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", v)
		}
		h.ServeHTTP(w, r)
	})
}
