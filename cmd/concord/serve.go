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
}

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
	cfg := signaling.Config{
		Logger: log.With().Str("component", "signaling").Logger(),
		Rooms: map[signaling.RoomID]signaling.RoomConfig{
			signaling.RoomID(o.room): {PinnedHosts: []signaling.Identity{dedicatedHostUser}},
		},
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
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	o.secret = os.Getenv("CONCORD_SECRET")
	s, err := startServer(ctx, o, log)
	if err != nil {
		return err
	}
	return s.wait(ctx)
}
