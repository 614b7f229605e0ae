package netlab_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/netlab"
	"github.com/concordrtc/concord/peer"
)

// joinApp is a passive arena member that notes when it first synced.
type joinApp struct {
	*arena.Game
	once   sync.Once
	synced chan struct{}
}

// OnEvent runs on the peer's loop.
func (a *joinApp) OnEvent(w *peer.World, ev peer.Event) {
	if ev.Kind == peer.EventSynced {
		a.once.Do(func() { close(a.synced) })
	}
}

// joinTimes starts trials members in h one after another and returns, for each, the time from
// its start (before its signaling dial) to synced with the room's host.
func joinTimes(t *testing.T, h netlab.Home, trials int) []time.Duration {
	t.Helper()
	return timeJoins(t, string(h.NS), trials, func(ctx context.Context, wg *sync.WaitGroup, user string, app peer.App) {
		startLabPeer(t, ctx, wg, h, user, app)
	})
}

// timeJoins starts trials passive members with start, one after another, and returns, for each,
// the time from its start (before its signaling dial) to synced with the room's host.
func timeJoins(t *testing.T, what string, trials int, start func(ctx context.Context, wg *sync.WaitGroup, user string, app peer.App)) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := range trials {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		app := &joinApp{Game: arena.New(arena.Config{}), synced: make(chan struct{})}
		began := time.Now()
		start(ctx, &wg, fmt.Sprintf("joiner%d", i), app)
		select {
		case <-app.synced:
			out = append(out, time.Since(began))
		case <-time.After(30 * time.Second):
			t.Errorf("%s: trial %d did not sync in 30 s", what, i)
		}
		cancel()
		wg.Wait()
	}
	return out
}

// rtts runs one member in h and samples the round trip it measures to the host (a reliable
// Ping/Pong through the host's loop) every 100 ms for d once it has synced.
func rtts(t *testing.T, h netlab.Home, d time.Duration) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	app := &joinApp{Game: arena.New(arena.Config{}), synced: make(chan struct{})}
	p := startLabPeer(t, ctx, &wg, h, "rtt", app)
	select {
	case <-app.synced:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no sync in 30 s", h.NS)
	}
	var out []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if r := p.Status().RTT; r > 0 {
			out = append(out, r)
		}
	}
	return out
}

func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	slices.Sort(ds)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("n=%d min %v / p50 %v / p90 %v / max %v", len(ds), r(ds[0]), r(ds[len(ds)/2]), r(ds[len(ds)*9/10]), r(ds[len(ds)-1]))
}

// TestLabMeasureJoin measures (docs/benchmarks-history.md "Through the TURN relay, and behind NATs") the time from a member's
// start to synced, and then a member's round trip to the host: on the public side, behind
// symmetric NAT B and behind the UDP-dropping NAT C with the server's dedicated host (public),
// then behind NAT B and on the public side with a `concord host` behind NAT A. It runs only with
// CONCORD_LAB_MEASURE=1 (set -run TestLabMeasureJoin).
func TestLabMeasureJoin(t *testing.T) {
	if os.Getenv("CONCORD_LAB_MEASURE") != "1" {
		t.Skip("a measurement: set CONCORD_LAB_MEASURE=1 to run it")
	}
	lab := netlab.Get(t)
	bin := concord(t)
	const trials = 15
	public := netlab.Home{NS: lab.Public, Addr: netlab.PublicAddr}

	srv := serve(t, lab)
	pub := joinTimes(t, public, trials)
	natB := joinTimes(t, lab.B, trials)
	tcpC := joinTimes(t, lab.C, trials)
	rttPub, rttNATB, rttC := rtts(t, public, 5*time.Second), rtts(t, lab.B, 5*time.Second), rtts(t, lab.C, 5*time.Second)
	srv.stop()

	serve(t, lab, "--dedicated-host=false")
	start(t, lab.A.NS, "host", bin, "host", "--server", serverURL, "--room", "arena")
	waitHost(t, "host")
	relayed := joinTimes(t, lab.B, trials)
	pubToNAT := joinTimes(t, public, trials)
	rttRelayed, rttPubToNAT := rtts(t, lab.B, 5*time.Second), rtts(t, public, 5*time.Second)

	t.Logf("join → synced, dedicated host on the public side: member on the public side %s", spread(pub))
	t.Logf("join → synced, dedicated host on the public side: member behind symmetric NAT B %s", spread(natB))
	t.Logf("join → synced, dedicated host on the public side: member behind the UDP-dropping NAT C (TURN over TCP) %s", spread(tcpC))
	t.Logf("join → synced, host behind symmetric NAT A: member behind symmetric NAT B (relay) %s", spread(relayed))
	t.Logf("join → synced, host behind symmetric NAT A: member on the public side %s", spread(pubToNAT))
	t.Logf("round trip to the host, dedicated host on the public side: member on the public side %s", spread(rttPub))
	t.Logf("round trip to the host, dedicated host on the public side: member behind symmetric NAT B %s", spread(rttNATB))
	t.Logf("round trip to the host, dedicated host on the public side: member behind the UDP-dropping NAT C (TURN over TCP) %s", spread(rttC))
	t.Logf("round trip to the host, host behind symmetric NAT A: member behind symmetric NAT B (relay) %s", spread(rttRelayed))
	t.Logf("round trip to the host, host behind symmetric NAT A: member on the public side %s", spread(rttPubToNAT))
}
