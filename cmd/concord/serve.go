package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/arena"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/web"
)

// dedicatedHostUser is the identity user of dedicated hosts; serve pins it as the host of its
// room, so a dedicated host that (re)joins takes the room over once it has synced.
const dedicatedHostUser = "host"

type serveOptions struct {
	addr          string
	room          string
	dedicatedHost bool
	secret        string
	// data is the durable data directory (internal/durable); "" keeps rooms in memory only.
	data string
	// scenes seed rooms that have no checkpoint from main.crdt files; each gets a dedicated host.
	scenes map[signaling.RoomID]string
	// checkpointInterval: durable.AppConfig.Interval (0: its default).
	checkpointInterval time.Duration
	// limits holds the signaling limits set by flags (zero fields: the signaling defaults).
	limits signaling.Config
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

// server is a running `concord serve`.
type server struct {
	url    string
	log    zerolog.Logger
	sig    *signaling.Server
	http   *http.Server
	served chan error
	// hostDone receives the result of each dedicated host; hosts counts those running.
	hostDone chan error
	hosts    int
	stopHost context.CancelFunc
	store    *durable.Store  // nil without --data
	writer   *durable.Writer // nil without --data
}

// startServer listens, serves the page, signaling and the API, and starts the dedicated host.
func startServer(ctx context.Context, o serveOptions, log zerolog.Logger) (*server, error) {
	cfg := o.limits
	cfg.Logger = log.With().Str("component", "signaling").Logger()
	hosted := hostedRooms(o)
	cfg.Rooms = map[signaling.RoomID]signaling.RoomConfig{}
	for _, room := range hosted {
		cfg.Rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{dedicatedHostUser}}
	}
	if o.secret != "" {
		cfg.Secret = []byte(o.secret)
	}
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	s := &server{log: log, served: make(chan error, 1), hostDone: make(chan error, len(hosted))}
	if o.data != "" {
		store, err := durable.Open(durable.Config{Dir: o.data, Logger: log.With().Str("component", "durable").Logger()})
		if err != nil {
			return nil, err
		}
		s.store = store
		s.writer = durable.NewWriter(store, durable.WriterConfig{Logger: log.With().Str("component", "checkpoint").Logger(), Registerer: reg})
		cfg.Store = store
	}
	s.sig = signaling.New(cfg)
	mux := http.NewServeMux()
	sh := s.sig.Handler()
	mux.Handle("/ws", sh)
	mux.Handle("/api/", sh)
	mux.Handle("/healthz", sh)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", web.Handler())
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		_ = s.sig.Close()
		s.closeStore()
		return nil, err
	}
	ht := o.http
	if ht.readHeader <= 0 {
		ht.readHeader = defaultHTTPTimeouts.readHeader
	}
	if ht.read <= 0 {
		ht.read = defaultHTTPTimeouts.read
	}
	if ht.idle <= 0 {
		ht.idle = defaultHTTPTimeouts.idle
	}
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: ht.readHeader, ReadTimeout: ht.read, IdleTimeout: ht.idle, MaxHeaderBytes: maxHeaderBytes}
	go func() { s.served <- s.http.Serve(ln) }()
	s.url = "http://" + ln.Addr().String()
	log.Info().Str("url", s.url).Str("room", o.room).Bool("dedicatedHost", o.dedicatedHost).Str("data", o.data).Msg("concord serving")

	hctx, cancel := context.WithCancel(ctx)
	s.stopHost = cancel
	for _, room := range hosted {
		token := ""
		if o.secret != "" {
			token, err = signaling.IssueToken([]byte(o.secret), signaling.Claims{
				Room: room, User: dedicatedHostUser, Device: "serve", MayHost: true,
				Kind: signaling.KindHost, ExpiresAt: time.Now().Add(365 * 24 * time.Hour),
			})
			if err != nil {
				s.stop()
				return nil, err
			}
		}
		seed, clock, err := s.seed(ctx, room, o.scenes[room])
		if err != nil {
			// The room does not open with half a world; the other rooms go on.
			log.Error().Err(err).Str("room", string(room)).Msg("room not opened: its dedicated host does not start")
			continue
		}
		var app peer.App = arena.New(arena.Config{})
		var cp *durable.App
		if s.writer != nil || seed != nil {
			cp = durable.NewApp(app, durable.AppConfig{Room: room, Writer: s.writer, Seed: seed, SeedClock: clock, Interval: o.checkpointInterval, Logger: log.With().Str("component", "checkpoint").Logger()})
			app = cp
		}
		s.hosts++
		go func() {
			err := runHostApp(hctx, log, s.url, string(room), "serve", token, app)
			if cp != nil && s.writer != nil {
				cp.Final() // Run has returned: the world is this goroutine's
			}
			s.hostDone <- err
		}()
	}
	return s, nil
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
			return c.Data, c.Clock, nil
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
	return data, 0, nil
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
		s.hosts--
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
	if s.stopHost != nil {
		s.stopHost()
		for ; s.hosts > 0; s.hosts-- {
			<-s.hostDone
		}
		s.stopHost = nil
	}
	_ = s.sig.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(sctx)
	s.closeStore() // after the hosts' last checkpoints
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7880", "listen address (HTTP: page, /ws signaling, /api/rooms, /healthz)")
	fs.BoolVar(&o.dedicatedHost, "dedicated-host", true, "run a dedicated host for --room in this process")
	fs.StringVar(&o.room, "room", "arena", "the demo room (its pinned host is the dedicated host)")
	fs.StringVar(&o.data, "data", "./concord-data", `durable data directory: rooms keep their world across restarts (embedded JetStream); "" keeps rooms in memory only`)
	fs.Func("scene", "ROOM=FILE: seed ROOM from a main.crdt file when it has no checkpoint, with a dedicated host (repeatable)", func(v string) error {
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
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	limitFlags(fs, &o)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	o.secret = os.Getenv("CONCORD_SECRET")
	o.limits.AdminKey = os.Getenv("CONCORD_ADMIN_KEY") // with a secret, reads every room in /api/rooms
	s, err := startServer(ctx, o, log)
	if err != nil {
		return err
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
