package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
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
	"github.com/concordrtc/concord/internal/arena"
	"github.com/concordrtc/concord/internal/cluster"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/turnserver"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// dedicatedHostUser is the identity user of dedicated hosts; serve pins it as the host of its
// room, so a dedicated host that (re)joins takes the room over once it has synced.
const dedicatedHostUser = "host"

type serveOptions struct {
	voice         voiceOptions
	addr          string
	room          string
	dedicatedHost bool
	secret        string
	// interestRadius: the dedicated arena hosts send each member what is within this many
	// millimetres of its avatar (0: everything).
	interestRadius int
	// deltas: the dedicated hosts send members deltas against acknowledged values (peer.Config.Deltas).
	deltas bool
	// relayRate … relayBacklog: the dedicated hosts' bounds on relayed application messages
	// (peer.Config.RelayRate, RelayBurst, RecvRelayRate, RecvRelayBurst, RelayBacklog; 0: default).
	relayRate, relayBurst, recvRelayRate, recvRelayBurst, relayBacklog int
	// data is the durable data directory (internal/durable); "" keeps rooms in memory only.
	data string
	// scenes seed rooms that have no checkpoint from main.crdt files; each gets a dedicated host.
	scenes map[signaling.RoomID]string
	// checkpointInterval: durable.AppConfig.Interval (0: its default).
	checkpointInterval time.Duration

	// Cluster (docs/protocol.md §7; README "Cluster"): on with --cluster-name or --nats.
	nodeName    string        // --node-name (default: the host name)
	clusterName string        // --cluster-name
	clusterAddr string        // --cluster: this node's route listen address
	routes      []string      // --routes
	natsURL     string        // --nats: an external NATS instead of the embedded one
	replicas    int           // --replicas (0: min(3, nodes))
	leaseTTL    time.Duration // --lease-ttl

	// Cluster authentication (docs/security.md §7): the route secret (--cluster-secret, else
	// derived from CONCORD_SECRET), route TLS, --cluster-insecure; --nats credentials and TLS.
	clusterSecret   string
	clusterInsecure bool
	clusterTLS      [3]string // --cluster-tls-cert, --cluster-tls-key, --cluster-tls-ca
	natsAuth        durable.NATSAuth
	roomTTL         time.Duration // --room-ttl: durable.Config.RoomTTL

	// net is the dedicated host's WebRTC (--ice, --udp, --public-ip, --relay-only).
	net peerNet

	turnAddr     string         // --turn
	turnTLSAddr  string         // --turn-tls
	turnHost     string         // --turn-host: the name in turns: URLs (default: the certificate's)
	turnAllow    []netip.Prefix // --turn-allow-private
	turnPorts    string         // --turn-ports
	turnQuota    int            // --turn-user-quota
	turnMaxBPS   int            // --turn-max-bps
	turnLimits   turnLimits     // --turn-max-allocs-per-addr, … (netserve.go)
	iceServers   []string       // --ice-server
	iceSecret    string         // --ice-server-secret
	tlsCert      string         // --tls-cert
	tlsKey       string         // --tls-key
	origins      []string       // --origin
	pprof        bool           // --pprof
	metricsRoute bool           // --metrics
	hstsMaxAge   time.Duration  // --hsts-max-age: Strict-Transport-Security over TLS (0: none)
	static       string         // --static: a game's own page and assets at "/"
	staticCSP    string         // --static-csp: their Content-Security-Policy (default web.StaticContentSecurityPolicy)

	// limits holds the signaling limits set by flags (zero fields: the signaling defaults).
	limits signaling.Config
	// world bounds the dedicated hosts' worlds (worldflags.go; zero fields: the peer defaults).
	world peer.WorldLimits
	// http bounds the HTTP server's connections (zero fields: defaultHTTPTimeouts).
	http httpTimeouts
}

// httpTimeouts are the http.Server's bounds on a connection before and between requests; a
// websocket sets its own deadlines once upgraded.
type httpTimeouts struct {
	readHeader, read, idle time.Duration
}

// defaultHTTPTimeouts: headers within 5 s, a whole request within 10 s (serve takes no request
// bodies), an idle keep-alive connection closed after 30 s.
var defaultHTTPTimeouts = httpTimeouts{readHeader: 5 * time.Second, read: 10 * time.Second, idle: 30 * time.Second}

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MiB).
const maxHeaderBytes = 64 << 10

// newHTTPServer is an http.Server for h with the bounds of ht (zero fields: the defaults).
func newHTTPServer(h http.Handler, ht httpTimeouts) *http.Server {
	if ht.readHeader <= 0 {
		ht.readHeader = defaultHTTPTimeouts.readHeader
	}
	if ht.read <= 0 {
		ht.read = defaultHTTPTimeouts.read
	}
	if ht.idle <= 0 {
		ht.idle = defaultHTTPTimeouts.idle
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: ht.readHeader, ReadTimeout: ht.read, IdleTimeout: ht.idle, MaxHeaderBytes: maxHeaderBytes}
}

// server is a running `concord serve`.
type server struct {
	url      string
	log      zerolog.Logger
	sig      *signaling.Server
	turn     *turnserver.Server // nil without --turn
	turnOpen bool               // --turn without CONCORD_SECRET: an open relay (concord_turn_open)
	http     *http.Server
	inner    *http.Server // the dedicated host's loopback door, when the public one cannot serve it
	served   chan error
	host     *peer.Peer // the dedicated host of --room; nil without one
	hosts    []*dedicated
	hostDone chan error // receives the result of each dedicated host
	running  int        // dedicated hosts whose result hostDone has not given yet
	stopHost context.CancelFunc
	store    *durable.Store  // nil without --data
	writer   *durable.Writer // nil without --data
	node     *cluster.Node   // nil unless clustered
	// bans is the cluster's ban bucket, watched (and its kicks served) until banStop; banDone
	// receives once from each of the two goroutines. nil unless clustered.
	bans    *durable.Bans
	banStop context.CancelFunc
	banDone chan struct{}

	restoreRefused *prometheus.CounterVec // concord_restore_refused_total{reason}

	// Cluster mode: the dedicated hosts run where their room's lease is (placement.go).
	hostServer         string   // the URL the dedicated hosts dial
	secret             string   // CONCORD_SECRET
	routes             []string // --routes: the configured nodes, for the fair share while starting
	checkpointInterval time.Duration
	poke               chan struct{} // capacity 1: placement should look again now
	placeStop          context.CancelFunc
	placeDone          chan struct{}
	hostMu             sync.Mutex                // guards hostsOn
	hostsOn            map[signaling.RoomID]bool // rooms whose dedicated host runs here

	voice *voiceServer // nil with --voice=false
}

// clustered reports whether o makes serve a node of a cluster.
func (o serveOptions) clustered() bool { return o.clusterName != "" || o.natsURL != "" }

// dedicated is a room's dedicated host in this process.
type dedicated struct {
	room signaling.RoomID
	cfg  peer.Config
	api  *link.API    // its WebRTC (one UDP socket)
	app  *durable.App // nil without --data and without a scene
	// peer is set by startHosts, before Serve; in cluster mode by placement, under
	// server.hostMu, whenever the host starts or stops.
	peer *peer.Peer

	// Cluster mode (placement.go), owned by the placement goroutine.
	scene  string
	broken bool               // its checkpoint or scene is bad: it does not start here
	stop   context.CancelFunc // the running host's; nil when none runs
	done   chan struct{}      // closed when the running host has stopped
	// missingSince: when its room, open before, was first found without a checkpoint.
	missingSince time.Time
}

// startServer listens, serves the page, signaling and the API, and starts the dedicated host.
// Order: the listener and the dedicated host's WebRTC socket first, so that the embedded TURN
// server knows the socket's port (a relay may reach it on the server's own address), then TURN,
// signaling (which hands out TURN credentials) and the host.
func startServer(ctx context.Context, o serveOptions, log zerolog.Logger) (*server, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if o.tlsCert != "" || o.tlsKey != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	origins, err := newOriginPolicy(o.origins)
	if err != nil {
		return nil, usageError{err}
	}
	external, err := parseICEServers(o.iceServers)
	if err != nil {
		return nil, usageError{err}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	hosted := hostedRooms(o)
	s := &server{log: log, served: make(chan error, 2), hostDone: make(chan error, len(hosted)), routes: o.routes, checkpointInterval: o.checkpointInterval}
	fail := func(err error) (*server, error) {
		_ = ln.Close()
		s.closeAll()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	s.restoreRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "concord_restore_refused_total",
		Help: "Messages of checkpoints and scenes dropped at restore, beyond the restore bounds (docs/protocol.md §6), by reason."}, []string{"reason"})
	reg.MustRegister(s.restoreRefused)
	if o.clustered() && o.data == "" && o.natsURL == "" {
		return fail(usageError{errors.New("a cluster keeps its rooms in JetStream: --cluster-name needs --data")})
	}
	if o.data != "" || o.natsURL != "" {
		dc := durable.Config{Dir: o.data, Logger: log.With().Str("component", "durable").Logger(), NATS: o.natsURL, Replicas: o.replicas,
			NATSAuth: o.natsAuth, Registerer: reg, RoomTTL: o.roomTTL}
		if o.clustered() {
			dc.NodeName = o.nodeName // JetStream knows a cluster's peers by it; one node keeps "concord"
		}
		if o.clusterName != "" {
			dc.Cluster = o.clusterConfig()
		}
		if s.store, err = durable.OpenContext(ctx, dc); err != nil {
			return fail(err)
		}
		s.writer = durable.NewWriter(s.store, durable.WriterConfig{Logger: log.With().Str("component", "checkpoint").Logger(), Registerer: reg})
	}
	var ownPorts []int
	for i, room := range hosted {
		d := &dedicated{room: room}
		ho := o
		if h, _, err := net.SplitHostPort(o.net.udp); err == nil && i > 0 {
			ho.net.udp = net.JoinHostPort(h, "0") // --udp's port is the first host's
		}
		var seed []byte
		var clock crdt.Timestamp
		if !o.clustered() {
			if seed, clock, err = s.seed(ctx, room, o.scenes[room]); err != nil {
				// The room does not open with half a world; the other rooms go on.
				log.Error().Err(err).Str("room", string(room)).Msg("room not opened: its dedicated host does not start")
				continue
			}
		}
		if d.cfg, err = dedicatedHostConfig(s.log, ho, room, addr); err != nil {
			return fail(err)
		}
		if o.clustered() {
			// The room's owner starts its host, from the checkpoint of that moment (placement.go).
			d.scene = o.scenes[room]
		} else if s.writer != nil || seed != nil {
			d.app = durable.NewApp(d.cfg.App, durable.AppConfig{Room: room, Writer: s.writer, Seed: seed, SeedClock: clock,
				Interval: o.checkpointInterval, Logger: log.With().Str("component", "checkpoint").Logger()})
			d.cfg.App = d.app
		}
		if d.api, err = peer.LinkAPI(d.cfg); err != nil {
			return fail(err)
		}
		s.hosts = append(s.hosts, d)
		d.cfg.Transport = peer.PionTransport{API: d.api}
		if ua, ok := d.api.UDPMuxAddr().(*net.UDPAddr); ok {
			ownPorts = append(ownPorts, ua.Port)
		}
	}
	vs, vport, err := openVoiceSocket(o, log, addr)
	if err != nil {
		return fail(err)
	}
	if s.voice = vs; vs != nil {
		ownPorts = append(ownPorts, vport)
	}
	// TURN credentials live as long as their member: the relay asks signaling, which starts
	// below (until then no one is a member).
	var sigRef atomic.Pointer[signaling.Server]
	if o.turnAddr != "" {
		if s.turn, err = startTURN(o, tlsCfg, ownPorts, log, turnLive(&sigRef)); err != nil {
			return fail(err)
		}
		s.turnOpen = o.secret == ""
	}

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg := o.limits
	cfg.Logger = log.With().Str("component", "signaling").Logger()
	cfg.Rooms = map[signaling.RoomID]signaling.RoomConfig{}
	// --room is pinned to dedicated hosts whether or not this process runs one: a `concord host
	// --room` process of its own takes the room over once synced (README's migration demo).
	cfg.Rooms[signaling.RoomID(o.room)] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{dedicatedHostUser}}
	for _, room := range hosted {
		cfg.Rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{dedicatedHostUser}}
	}
	if s.store != nil {
		cfg.Store = s.store
	}
	switch {
	case o.clustered():
		// Moderators' bans hold on every node: a KV bucket each node watches (below).
		if s.bans, err = s.store.Bans(); err != nil {
			return fail(err)
		}
		cfg.Bans, cfg.KickElsewhere = s.bans, s.bans.Kick
	case o.data != "":
		// A single node's bans survive restarts in a file of its data directory.
		cfg.Bans = signaling.NewBanFile(filepath.Join(o.data, banFileName))
	}
	if o.clustered() {
		s.poke = make(chan struct{}, 1)
		s.hostsOn = map[signaling.RoomID]bool{}
		s.node, err = cluster.New(cluster.Config{Store: s.store, Name: o.nodeName, LeaseTTL: o.leaseTTL,
			Keep: s.hostRunning, Lost: func(signaling.RoomID) { s.pokePlacement() }, Acquired: func(signaling.RoomID) { s.pokePlacement() },
			Registerer: reg, Logger: log.With().Str("component", "cluster").Logger()})
		if err != nil {
			return fail(err)
		}
		cfg.Router, cfg.NodeName = s.node, o.nodeName
	}
	cfg.CheckOrigin = origins.allowed
	cfg.Registerer = reg
	cfg.Followers = []string{voice.FollowerUser}
	if o.secret != "" {
		cfg.Secret = []byte(o.secret)
	}
	cfg.ICEServers = iceServersFunc(s.turn, external, o.iceSecret)
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
	reg.MustRegister(&hostCollector{s: s})
	// s.hosts and their peers are set before Serve (startHosts), never after.
	reg.MustRegister(newRefusalCollector(func() []roomPeer {
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
	}))

	mux := http.NewServeMux()
	sh := s.sig.Handler()
	mux.Handle("/ws", origins.gate(sh))
	mux.Handle("/api/", sh)
	mux.Handle("/healthz", sh)
	// The operator's routes: with a secret, only to the admin key (docs/security.md §9).
	admin := s.sig.AdminOnly
	if o.metricsRoute {
		mux.Handle("/metrics", admin(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	}
	if o.pprof {
		mux.Handle("/debug/pprof/", admin(http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/cmdline", admin(http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", admin(http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", admin(http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", admin(http.HandlerFunc(pprof.Trace)))
	}
	vh, err := s.voice.start(s, o, scheme(tlsCfg != nil)+"://"+addr.String(), addr, voice.Config{Members: s.sig, Secret: cfg.Secret,
		Registerer: reg, Logger: log.With().Str("component", "voice").Logger()})
	if err != nil {
		return fail(err)
	}
	mux.Handle("/voice/", vh)
	if err := pageRoutes(mux, o, origins, log); err != nil {
		return fail(err)
	}
	scheme := "http"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		scheme = "https"
	}
	var root http.Handler = mux
	if tlsCfg != nil {
		root = hsts(root, o.hstsMaxAge)
	}
	s.http = newHTTPServer(root, o.http)
	s.url = scheme + "://" + addr.String()
	// Before Serve, so that the metrics collector never sees s.host change. The hosts' dials
	// wait in the listen backlog until Serve accepts them.
	if err := s.startHosts(ctx, o, addr, tlsCfg != nil, sh); err != nil {
		return fail(err)
	}
	go func() { s.served <- s.http.Serve(ln) }()
	log.Info().Str("url", s.url).Str("room", o.room).Bool("dedicatedHost", o.dedicatedHost).
		Str("turn", o.turnAddr).Bool("tls", tlsCfg != nil).Str(storeField(o)).Str("node", o.nodeName).Str("cluster", o.clusterName).Msg("concord serving")
	return s, nil
}

// dedicatedHostConfig is the dedicated host's peer.Config but for Server and Token. Its WebRTC
// follows the public address: on this machine when serve listens on loopback (peer.ICELocal, or
// loopback-only under envLoopbackOnly), otherwise (or with
// --ice any) one UDP socket (--udp; default an ephemeral port on the --addr interface, on every
// interface when --addr is a wildcard or loopback) with --public-ip in its host candidates.
func dedicatedHostConfig(log zerolog.Logger, o serveOptions, room signaling.RoomID, addr *net.TCPAddr) (peer.Config, error) {
	nw := o.net
	if nw.ice == "" {
		nw.ice = string(peer.ICEAny)
		if addr.IP.IsLoopback() {
			nw.ice = string(onThisMachine())
		}
	}
	if nw.udp == "" && nw.ice == string(peer.ICEAny) {
		nw.udp = "0.0.0.0:0"
		if !addr.IP.IsUnspecified() && !addr.IP.IsLoopback() {
			nw.udp = net.JoinHostPort(addr.IP.String(), "0")
		}
	}
	hl := log.With().Str("component", "host").Logger()
	cfg := peer.Config{Room: string(room), User: dedicatedHostUser, Device: "serve", Kind: signaling.KindHost, App: arena.New(arena.Config{}), Logger: hl, Deltas: o.deltas,
		RelayRate: o.relayRate, RelayBurst: o.relayBurst, RecvRelayRate: o.recvRelayRate, RecvRelayBurst: o.recvRelayBurst, RelayBacklog: o.relayBacklog,
		WorldLimits: o.world}
	if o.interestRadius > 0 {
		cfg.Interest = arena.RadiusInterest{Radius: o.interestRadius}
	}
	return cfg, nw.config(hl, &cfg)
}

// startHosts runs the dedicated hosts (each cfg with its transport) in this process. They dial
// the public listener, or, when that is TLS (whose certificate names the public host) or listens
// on every interface, a loopback listener of their own that serves only signaling.
func (s *server) startHosts(ctx context.Context, o serveOptions, addr *net.TCPAddr, tlsOn bool, sh http.Handler) error {
	if len(s.hosts) == 0 {
		return nil
	}
	server := s.url
	if tlsOn || addr.IP.IsUnspecified() {
		iln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		imux := http.NewServeMux()
		imux.Handle("/ws", sh)
		s.inner = newHTTPServer(imux, o.http)
		go func() { s.served <- s.inner.Serve(iln) }()
		server = "http://" + iln.Addr().String()
	}
	if s.node != nil {
		s.hostServer, s.secret = server, o.secret
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.placeStop, s.placeDone = cancel, make(chan struct{})
		go s.place(pctx)
		return nil
	}
	hctx, cancel := context.WithCancel(ctx)
	s.stopHost = cancel
	for _, d := range s.hosts {
		cfg := d.cfg
		cfg.Server = server
		if o.secret != "" {
			var err error
			cfg.Token, err = signaling.IssueToken([]byte(o.secret), signaling.Claims{
				Room: d.room, User: dedicatedHostUser, Device: "serve", MayHost: true,
				Kind: signaling.KindHost, ExpiresAt: time.Now().Add(365 * 24 * time.Hour),
			})
			if err != nil {
				return err
			}
		}
		p, err := peer.New(cfg)
		if err != nil {
			return err
		}
		d.peer = p
		if d.room == signaling.RoomID(o.room) && o.dedicatedHost {
			s.host = p
		}
		s.running++
		go func() {
			err := p.Run(hctx)
			if d.app != nil {
				d.app.Final() // Run has returned: the world is this goroutine's
			}
			s.hostDone <- err
		}()
	}
	return nil
}

// hostedRooms lists the rooms serve runs a dedicated host for: --room (with --dedicated-host)
// and every --scene room, in a stable order.
func hostedRooms(o serveOptions) []signaling.RoomID {
	var rooms []signaling.RoomID
	for room := range o.scenes {
		if !o.dedicatedHost || room != signaling.RoomID(o.room) {
			rooms = append(rooms, room)
		}
	}
	slices.Sort(rooms)
	if o.dedicatedHost {
		rooms = slices.Insert(rooms, 0, signaling.RoomID(o.room))
	}
	return rooms
}

// seed returns what room's dedicated host starts from: its last checkpoint, else its scene file,
// else nothing; validated whole, so that a bad one keeps the room closed rather than half open.
func (s *server) seed(ctx context.Context, room signaling.RoomID, scene string) ([]byte, crdt.Timestamp, error) {
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
func (s *server) bound(room signaling.RoomID, source string, data []byte, clock crdt.Timestamp) ([]byte, crdt.Timestamp, error) {
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

func (s *server) closeStore() {
	if s.writer != nil {
		s.writer.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// wait blocks until ctx ends, the HTTP server fails or the dedicated host stops, then stops.
func (s *server) wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.served:
	case err = <-s.hostDone:
		s.running--
		if err == nil {
			err = errors.New("dedicated host stopped")
		}
	}
	s.stop()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *server) stop() {
	s.log.Info().Msg("shutting down")
	if s.store != nil {
		s.store.Stopping() // the other nodes keep the quorum our last checkpoints need
	}
	s.closeAll()
}

// closeAll stops what startServer started, in reverse: the host (then its WebRTC socket),
// signaling, the HTTP servers, TURN. Parts never started are skipped.
func (s *server) closeAll() {
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
	if s.stopHost != nil {
		s.stopHost()
		for ; s.running > 0; s.running-- {
			<-s.hostDone
		}
		s.stopHost = nil
	}
	for _, d := range s.hosts {
		if d.api != nil {
			_ = d.api.Close()
		}
	}
	if s.sig != nil {
		_ = s.sig.Close()
	}
	if s.node != nil {
		s.node.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.http != nil {
		_ = s.http.Shutdown(sctx)
	}
	if s.inner != nil {
		_ = s.inner.Shutdown(sctx)
	}
	s.voice.close()
	if s.turn != nil {
		_ = s.turn.Close()
	}
	s.closeStore() // after the hosts' last checkpoints
}

// banFileName is the file of the bans in --data.
const banFileName = "bans.json"

// defaultHSTSMaxAge is --hsts-max-age's default: a year, as HSTS preload lists ask.
const defaultHSTSMaxAge = 365 * 24 * time.Hour

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

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// listFlag is a repeatable string flag that also splits on commas.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// repeatFlag is a repeatable string flag that keeps each value whole (URLs may hold commas).
type repeatFlag []string

func (l *repeatFlag) String() string     { return strings.Join(*l, " ") }
func (l *repeatFlag) Set(v string) error { *l = append(*l, v); return nil }

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7880", "listen address (HTTP: page, /ws signaling, /api/rooms, /metrics, /healthz)")
	fs.BoolVar(&o.dedicatedHost, "dedicated-host", true, "run a dedicated host for --room in this process")
	fs.BoolVar(&o.deltas, "deltas", false, "the dedicated hosts send members that ask their property values as differences from the ones they acknowledged (~20% fewer bytes, more host CPU; docs/protocol.md §2.10)")
	fs.IntVar(&o.relayRate, "relay-rate", peer.DefaultRelayRate, "bytes a second of application messages one member may have a dedicated host relay, each copy counted (a message to everyone in a room of N: N−1 copies); beyond it dropped and counted (relay_budget)")
	fs.IntVar(&o.relayBurst, "relay-burst", peer.DefaultRelayBurst, "bytes of relayed application messages one member may send at once (at least one largest message)")
	fs.IntVar(&o.recvRelayRate, "recv-relay-rate", peer.DefaultRecvRelayRate, "bytes a second of relayed application messages a dedicated host forwards to one member from all senders together; beyond it dropped and counted (relay_inbound)")
	fs.IntVar(&o.recvRelayBurst, "recv-relay-burst", peer.DefaultRecvRelayBurst, "bytes of relayed application messages a dedicated host forwards to one member at once")
	fs.IntVar(&o.relayBacklog, "relay-backlog", peer.DefaultRelayBacklog, "a dedicated host drops relayed messages to a member whose reliable queue holds more than this many bytes (relay_backlog) instead of letting it reach the link's high-water mark, which closes the link")
	fs.IntVar(&o.interestRadius, "interest-radius", 0, "the dedicated hosts send each member only the avatars and boxes within this many millimetres of its avatar (interest management; 0: everything)")
	fs.StringVar(&o.data, "data", "./concord-data", `durable data directory: rooms keep their world across restarts (embedded JetStream); "" keeps rooms in memory only`)
	fs.Func("scene", "ROOM=FILE: seed ROOM from a main.crdt file when it has no checkpoint, and run a dedicated host for ROOM (repeatable; with --udp, hosts after the first take an ephemeral port on its address)", func(v string) error {
		room, file, ok := strings.Cut(v, "=")
		if !ok || room == "" || file == "" {
			return fmt.Errorf("want ROOM=FILE, got %q", v)
		}
		if o.scenes == nil {
			o.scenes = map[signaling.RoomID]string{}
		}
		o.scenes[signaling.RoomID(room)] = file
		return nil
	})
	fs.DurationVar(&o.checkpointInterval, "checkpoint-interval", durable.DefaultInterval, "least time between two checkpoints of a changing room (with --data)")
	fs.StringVar(&o.room, "room", "arena", "the demo room (its pinned host is the dedicated host)")
	host, _ := os.Hostname()
	fs.StringVar(&o.nodeName, "node-name", host, "this node's name in a cluster (unique; /api/rooms gives it as each room's \"node\")")
	fs.StringVar(&o.clusterName, "cluster-name", "", "cluster the embedded NATS server under this name (the same on every node; needs --data)")
	fs.StringVar(&o.clusterAddr, "cluster", "", "this node's cluster (NATS route) listen address, HOST:PORT with the interface named (e.g. 10.0.0.1:6222), with --cluster-name and --routes")
	var routes listFlag
	fs.Var(&routes, "routes", "URL[,URL…]: the other nodes' cluster addresses, nats-route://HOST:6222")
	fs.StringVar(&o.natsURL, "nats", "", "URL[,URL…] of an external NATS cluster with JetStream instead of the embedded server (then --data is unused); nats://USER:PASSWORD@HOST:4222 or tls://… for credentials and TLS")
	clusterAuthFlags(fs, &o)
	fs.IntVar(&o.replicas, "replicas", 0, "replicas of the JetStream streams and buckets (0: min(3, nodes) embedded, 1 with --nats)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", durable.DefaultLeaseTTL, "lifetime of a room's lease in the cluster's room directory: a dead node's rooms move after at most this")
	o.net.addICEFlag(fs)
	o.net.addAddrFlags(fs)
	fs.StringVar(&o.turnAddr, "turn", "", "run the embedded TURN/STUN server on this address, UDP and TCP (e.g. :3478); needs a specific IP or --public-ip")
	fs.StringVar(&o.turnTLSAddr, "turn-tls", "", "also serve TURN over TLS (turns:) on this address, with --tls-cert/--tls-key (e.g. :5349)")
	fs.StringVar(&o.turnHost, "turn-host", "", "host name in the turns: URLs members get, which they resolve and check the certificate against (default: the --tls-cert certificate's first DNS name)")
	fs.StringVar(&o.turnPorts, "turn-ports", "49152-65535", "UDP port range of TURN relay sockets")
	fs.IntVar(&o.turnQuota, "turn-user-quota", turnserver.DefaultMaxAllocations, "TURN allocations one member may hold at once")
	fs.IntVar(&o.turnMaxBPS, "turn-max-bps", turnserver.DefaultMaxBytesPerSecond, "bytes per second the TURN relay carries for one member, both directions together")
	o.turnLimits.addFlags(fs)
	var allow, origins listFlag
	var ice repeatFlag
	fs.Var(&allow, "turn-allow-private", "CIDR[,CIDR…]: private/loopback peer ranges the TURN relay may reach (refused by default)")
	fs.Var(&ice, "ice-server", "an external STUN/TURN server handed to members, repeatable: stun:HOST:PORT or turn[s]:[USER:PASSWORD@]HOST:PORT[?transport=udp|tcp]")
	fs.StringVar(&o.iceSecret, "ice-server-secret", os.Getenv("CONCORD_ICE_SECRET"), "shared secret of external TURN servers without USER:PASSWORD (coturn static-auth-secret): members get time-limited REST API credentials (env CONCORD_ICE_SECRET)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM): serve the page, /ws and the APIs over HTTPS/WSS")
	fs.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fs.Var(&origins, "origin", "ORIGIN[,ORIGIN…]: web origins (https://game.example.com, or a bare host) allowed to open /ws besides the server's own host; * allows any")
	fs.BoolVar(&o.pprof, "pprof", false, "serve /debug/pprof (with CONCORD_SECRET: only to the admin key, Authorization: Bearer $CONCORD_ADMIN_KEY)")
	o.voice.addFlags(fs)
	fs.BoolVar(&o.metricsRoute, "metrics", true, "serve Prometheus metrics at /metrics (with CONCORD_SECRET: only to the admin key, Authorization: Bearer $CONCORD_ADMIN_KEY)")
	fs.DurationVar(&o.hstsMaxAge, "hsts-max-age", defaultHSTSMaxAge, "with --tls-cert: Strict-Transport-Security max-age of every HTTPS response (0: no header)")
	fs.StringVar(&o.static, "static", "", "serve this directory (a game's page and assets) at / instead of the arena demo; the client stays at /concord/js/; implies --dedicated-host=false unless given")
	fs.StringVar(&o.staticCSP, "static-csp", "", "Content-Security-Policy of the --static pages (default: scripts from the page's origin only, see docs/guide.md)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	limitFlags(fs, &o)
	worldFlags(fs, &o)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.static != "" && !flagGiven(fs, "dedicated-host") {
		o.dedicatedHost = false // the game brings its own host (or a browser hosts), not the arena's
	}
	for _, c := range allow {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return usageError{fmt.Errorf("--turn-allow-private %q: %w", c, err)}
		}
		o.turnAllow = append(o.turnAllow, p.Masked())
	}
	o.iceServers, o.origins = ice, origins
	o.routes = routes
	if o.nodeName == "" {
		o.nodeName = "concord"
	}
	if !o.clustered() && (len(o.routes) > 0 || flagGiven(fs, "cluster")) {
		return usageError{errors.New("--cluster and --routes need --cluster-name")}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	o.secret = os.Getenv("CONCORD_SECRET")
	if o.clusterSecret == "" && o.secret != "" {
		o.clusterSecret = durable.RouteSecret([]byte(o.secret))
	}
	if err := o.clusterConfig().Check(); err != nil {
		return usageError{err}
	}
	o.limits.AdminKey = os.Getenv("CONCORD_ADMIN_KEY") // with a secret, reads every room in /api/rooms
	s, err := startServer(ctx, o, log)
	if err != nil {
		return startupError(ctx, err, log)
	}
	return s.wait(ctx)
}

// limitFlags adds serve's limit flags (docs/protocol.md "Signaling: limits"); 0 keeps a default.
func limitFlags(fs *flag.FlagSet, o *serveOptions) {
	l := &o.limits
	fs.IntVar(&l.MaxMembers, "max-members", signaling.DefaultMaxMembers, "members per room")
	fs.IntVar(&l.MaxRooms, "max-rooms", signaling.DefaultMaxRooms, "open rooms")
	fs.IntVar(&l.MaxConns, "max-conns", signaling.DefaultMaxConns, "websockets in total")
	fs.IntVar(&l.MaxConnsPerAddr, "max-conns-per-addr", signaling.DefaultMaxConnsPerAddr, "websockets per remote IP address (raise it behind a proxy)")
	fs.IntVar(&l.MaxBansPerRoom, "max-bans-per-room", signaling.DefaultMaxBansPerRoom, "bans one room holds (moderation)")
	fs.IntVar(&l.MaxDevicesPerToken, "max-devices-per-token", signaling.DefaultMaxDevicesPerToken, "members per user through tokens without a device claim")
	fs.DurationVar(&l.SyncTimeout, "sync-timeout", signaling.DefaultSyncTimeout, "unsynced time after which a member may be evicted from a full room")
	fs.Float64Var(&l.SignalRate, "signal-rate", signaling.DefaultSignalRate, "signals per second from one member to another")
	fs.IntVar(&l.SignalBurst, "signal-burst", signaling.DefaultSignalBurst, "burst of signals from one member to another")
	fs.Float64Var(&l.RecvSignalRate, "recv-signal-rate", signaling.DefaultRecvSignalRate, "signals per second relayed to one member")
	fs.IntVar(&l.RecvSignalBurst, "recv-signal-burst", signaling.DefaultRecvSignalBurst, "burst of signals relayed to one member")
	fs.Float64Var(&l.ErrorRate, "error-rate", signaling.DefaultErrorRate, "refused messages per second a member may send before it is dropped")
	fs.IntVar(&l.ErrorBurst, "error-burst", signaling.DefaultErrorBurst, "burst of refused messages before a member is dropped")
	fs.DurationVar(&l.PingInterval, "ping-interval", signaling.DefaultPingInterval, "how often the server pings each websocket")
	fs.DurationVar(&l.PongWait, "pong-wait", signaling.DefaultPongWait, "silence after which a member is dropped as dead (> ping-interval)")
	fs.IntVar(&l.SendQueue, "send-queue", signaling.DefaultSendQueue, "messages queued per websocket")
	fs.DurationVar(&o.http.readHeader, "http-read-header-timeout", defaultHTTPTimeouts.readHeader, "time to read a request's headers")
	fs.DurationVar(&o.http.read, "http-read-timeout", defaultHTTPTimeouts.read, "time to read a whole request")
	fs.DurationVar(&o.http.idle, "http-idle-timeout", defaultHTTPTimeouts.idle, "idle keep-alive connections are closed after this")
}
