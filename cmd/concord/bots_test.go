package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// startTestBot runs a bot peer over pion on loopback (its own link.API) against the signaling
// server at url until ctx ends; wg waits for it. Frequent status reports and digests make
// convergence visible in /api/rooms (and repaired) sooner. opts adjust its Config (a token, a
// list of servers) before it starts.
func startTestBot(t *testing.T, ctx context.Context, wg *sync.WaitGroup, url, user string, app peer.App, log zerolog.Logger, opts ...func(*peer.Config)) *peer.Peer {
	t.Helper()
	api, err := link.NewAPI(link.Config{Logger: log.Level(zerolog.ErrorLevel)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := peer.Config{
		Server: url, Room: "arena", User: user, Kind: signaling.KindBot, App: app,
		Transport:      peer.PionTransport{API: api},
		Logger:         log.With().Str("who", user).Logger(),
		ReportInterval: 100 * time.Millisecond, DigestInterval: 250 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := peer.New(cfg)
	if err != nil {
		_ = api.Close()
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer api.Close()
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("%s: %v", user, err)
		}
	}()
	return p
}
