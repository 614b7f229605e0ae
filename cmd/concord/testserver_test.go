package main

import (
	"context"
	"errors"
	"os"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
)

// testServer is a started server.Server with what the tests read of it.
type testServer struct {
	*server.Server
	url  string
	host *peer.Peer // the dedicated host of Options.Room, if it runs
}

// startServer starts a server.Server as cmdServe does (WebRTC on loopback under
// CONCORD_LOOPBACK_ONLY); ctx bounds its startup.
func startServer(ctx context.Context, o server.Options, log zerolog.Logger) (*testServer, error) {
	o.Logger = log
	o.Network.LoopbackOnly = o.Network.LoopbackOnly || os.Getenv(envLoopbackOnly) != ""
	s, err := server.New(o)
	if err != nil {
		return nil, serveError(err)
	}
	if err := s.StartContext(ctx); err != nil {
		return nil, serveError(err)
	}
	room := o.Room
	if room == "" {
		room = "arena"
	}
	return &testServer{Server: s, url: s.URL(), host: s.Host(room)}, nil
}

// wait is cmdServe's: until ctx ends or a part of the server fails, then Shutdown.
func (s *testServer) wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.Failed():
	}
	s.stop()
	if errors.Is(err, server.ErrShutdown) {
		err = nil // stopped by the test before
	}
	return err
}

// stop shuts the server down.
func (s *testServer) stop() {
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	_ = s.Shutdown(sctx)
}

// refusedOrigin is the reason the server gives a refused origin (docs/security.md).
const refusedOrigin = "origin_not_allowed"
