package peer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// TestMemoryTransportLossyConverges runs a room over in-memory links that lose and reorder 20% of
// the unreliable datagrams (seeded): the replicas still converge once the bots rest, because the
// digest exchange repairs what the lost datagrams carried, and the deltas against acknowledged
// values never build on a lost one.
func TestMemoryTransportLossyConverges(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv := signaling.New(signaling.Config{Logger: log})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	tr := &peer.MemoryTransport{Pipe: link.PipeConfig{Loss: 0.2, Reorder: 0.2, Seed: 7}}
	ctx, cancel := context.WithCancel(context.Background())
	var peers []*peer.Peer
	defer func() {
		cancel()
		for _, p := range peers {
			<-p.Done()
		}
	}()
	start := func(user string, kind signaling.Kind, app peer.App) *peer.Peer {
		p, err := peer.New(peer.Config{
			Server: hs.URL, Room: "lossy", User: user, Kind: kind, App: app, Transport: tr,
			Logger: log.With().Str("who", user).Logger(), DigestInterval: 200 * time.Millisecond,
			Deltas: true, // the host sends the bots deltas
		})
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, p)
		go func() { _ = p.Run(ctx) }()
		return p
	}
	host := start("host", signaling.KindHost, arena.New(arena.Config{}))
	poll.Until(t, 5*time.Second, "host", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host")
		}
		return nil
	})
	for i := range 4 {
		start(fmt.Sprintf("bot%d", i), signaling.KindBot, arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i), MoveFor: 1500 * time.Millisecond}}))
	}
	poll.Until(t, 30*time.Second, "lossy room converges at rest", func() error { return converged(peers) })
	var lost uint64
	for _, p := range peers {
		lost += p.Status().LinkLost
	}
	if lost == 0 {
		t.Fatal("no datagram was lost: the test did not exercise loss")
	}
	// The bots asked for deltas: the host sent values as differences from acknowledged ones, and
	// no member lacked the value a difference was from. A member keeps 8 values where the host
	// names 4, so a datagram may arrive behind up to 4 later ones; the pipe puts one behind one
	// (with 4 kept, the baseline went missing in 2 runs of 3).
	var deltas, missed uint64
	for _, p := range peers {
		deltas += p.Status().Deltas
		missed += p.Status().DeltaMissed
	}
	if deltas == 0 || missed != 0 {
		t.Errorf("%d values went as differences, %d missed their baseline; want some and none", deltas, missed)
	}
	t.Logf("converged with %d datagrams lost on the way; %d values as differences", lost, deltas)
}
