package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"

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
	url      string
	log      zerolog.Logger
	sig      *signaling.Server
	http     *http.Server
	served   chan error
	hostDone chan error // nil without a dedicated host
	stopHost context.CancelFunc
}

// startServer listens, serves the page, signaling and the API, and starts the dedicated host.
func startServer(ctx context.Context, o serveOptions, log zerolog.Logger) (*server, error) {
	cfg := o.limits
	cfg.Logger = log.With().Str("component", "signaling").Logger()
	cfg.Rooms = map[signaling.RoomID]signaling.RoomConfig{
		signaling.RoomID(o.room): {PinnedHosts: []signaling.Identity{dedicatedHostUser}},
	}
	if o.secret != "" {
		cfg.Secret = []byte(o.secret)
	}
	s := &server{log: log, sig: signaling.New(cfg), served: make(chan error, 1)}
	mux := http.NewServeMux()
	sh := s.sig.Handler()
	mux.Handle("/ws", sh)
	mux.Handle("/api/", sh)
	mux.Handle("/healthz", sh)
	mux.Handle("/", web.Handler())
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		_ = s.sig.Close()
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
	log.Info().Str("url", s.url).Str("room", o.room).Bool("dedicatedHost", o.dedicatedHost).Msg("concord serving")

	if o.dedicatedHost {
		token := ""
		if o.secret != "" {
			token, err = signaling.IssueToken([]byte(o.secret), signaling.Claims{
				Room: signaling.RoomID(o.room), User: dedicatedHostUser, Device: "serve", MayHost: true,
				Kind: signaling.KindHost, ExpiresAt: time.Now().Add(365 * 24 * time.Hour),
			})
			if err != nil {
				s.stop()
				return nil, err
			}
		}
		hctx, cancel := context.WithCancel(ctx)
		s.stopHost = cancel
		s.hostDone = make(chan error, 1)
		go func() { s.hostDone <- runHost(hctx, log, s.url, o.room, "serve", token) }()
	}
	return s, nil
}

// wait blocks until ctx ends, the HTTP server fails or the dedicated host stops, then stops.
func (s *server) wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.served:
	case err = <-s.hostDone:
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
		<-s.hostDone
		s.stopHost = nil
	}
	_ = s.sig.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(sctx)
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7880", "listen address (HTTP: page, /ws signaling, /api/rooms, /healthz)")
	fs.BoolVar(&o.dedicatedHost, "dedicated-host", true, "run a dedicated host for --room in this process")
	fs.StringVar(&o.room, "room", "arena", "the demo room (its pinned host is the dedicated host)")
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
