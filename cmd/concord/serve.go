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
	"time"

	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/web"
)

// dedicatedHostUser is the identity user of dedicated hosts; serve pins it as the host of its
// room, so a dedicated host that (re)joins takes the room over once it has synced.
const dedicatedHostUser = "host"

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:7880", "listen address (HTTP: page, /ws signaling, /api/rooms, /healthz)")
	dedicated := fs.Bool("dedicated-host", true, "run a dedicated host for --room in this process")
	room := fs.String("room", "arena", "the demo room (its pinned host is the dedicated host)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	secret := os.Getenv("CONCORD_SECRET")
	cfg := signaling.Config{
		Logger: log.With().Str("component", "signaling").Logger(),
		Rooms: map[signaling.RoomID]signaling.RoomConfig{
			signaling.RoomID(*room): {PinnedHosts: []signaling.Identity{dedicatedHostUser}},
		},
	}
	if secret != "" {
		cfg.Secret = []byte(secret)
	}
	srv := signaling.New(cfg)
	defer srv.Close()

	mux := http.NewServeMux()
	sh := srv.Handler()
	mux.Handle("/ws", sh)
	mux.Handle("/api/", sh)
	mux.Handle("/healthz", sh)
	mux.Handle("/", web.Handler())

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info().Str("url", url).Str("room", *room).Bool("dedicatedHost", *dedicated).Msg("concord serving")

	hostCtx, cancelHost := context.WithCancel(ctx)
	var hostDone chan error // nil (never ready) without a dedicated host
	if *dedicated {
		hostDone = make(chan error, 1)
		token := ""
		if secret != "" {
			token, err = signaling.IssueToken([]byte(secret), signaling.Claims{
				Room: signaling.RoomID(*room), User: dedicatedHostUser, Device: "serve", MayHost: true, Kind: signaling.KindHost,
				ExpiresAt: time.Now().Add(365 * 24 * time.Hour),
			})
			if err != nil {
				cancelHost()
				return err
			}
		}
		go func() {
			hostDone <- runHost(hostCtx, log, url, *room, "serve", token)
		}()
	}

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	case err = <-hostDone:
		if err == nil && *dedicated {
			err = errors.New("dedicated host stopped")
		}
	}
	log.Info().Msg("shutting down")
	cancelHost()
	if hostDone != nil {
		<-hostDone
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Close()
	_ = hs.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
