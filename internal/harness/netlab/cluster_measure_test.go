package netlab_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/harness/netlab"
	"github.com/concordrtc/concord/peer"
)

// clusterJoinTimes starts trials passive members of room through servers one after another and
// returns, for each, the time from its start (before its signaling dial) to synced.
func clusterJoinTimes(t *testing.T, servers, room string, trials int) []time.Duration {
	t.Helper()
	return timeJoins(t, room+" via "+servers, trials, func(ctx context.Context, wg *sync.WaitGroup, user string, app peer.App) {
		startClusterPeer(t, ctx, wg, servers, room, user, app)
	})
}

// clusterJoinBurst starts n passive members of room through servers at once and returns the time
// until every one is synced (0 if not all did within 60 s).
func clusterJoinBurst(t *testing.T, servers, room string, n int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	began := time.Now()
	var apps []*joinApp
	for i := range n {
		app := &joinApp{Game: arena.New(arena.Config{}), synced: make(chan struct{})}
		apps = append(apps, app)
		startClusterPeer(t, ctx, &wg, servers, room, fmt.Sprintf("burst%d", i), app)
	}
	deadline := time.After(60 * time.Second)
	for _, a := range apps {
		select {
		case <-a.synced:
		case <-deadline:
			t.Errorf("%s via %s: a burst of %d did not all sync in 60 s", room, servers, n)
			return 0
		}
	}
	return time.Since(began)
}

// procStats returns a process's CPU time so far and its resident memory.
func procStats(pid int) (cpu time.Duration, rss int64) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command name, which ends with the last ')': utime and stime are the
		// 12th and 13th of them, in clock ticks (100 per second on Linux).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			cpu = time.Duration(u+s) * 10 * time.Millisecond
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rss = kb << 10
			}
		}
	}
	return cpu, rss
}

// measureRooms is CONCORD_LAB_ROOMS, or def.
// measureWindow is how long the scaling measurement reads the nodes' CPU: 10 s, or
// CONCORD_LAB_WINDOW (a longer window smooths a shared machine's noise).
func measureWindow() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CONCORD_LAB_WINDOW")); err == nil && d > 0 && d <= 10*time.Minute {
		return d
	}
	return 10 * time.Second
}

func measureRooms(def int) int {
	if n, err := strconv.Atoi(os.Getenv("CONCORD_LAB_ROOMS")); err == nil && n > 0 && n <= 1000 {
		return n
	}
	return def
}

// TestLabMeasureCluster measures the cluster (docs/benchmarks-history.md "Cluster"), in the lab:
//
//   - join → synced and a burst's joins per second in a room of one standalone node, then of a
//     three-node cluster through the room's owner node and through another node (the relay);
//   - node-failure recovery: CONCORD_LAB_ROOMS rooms (default 30) with one bot each on three
//     nodes, the busiest node SIGKILLed, time until every room's members are synced again;
//   - rooms and members per node, and each node's CPU and memory over 10 s of play (CONCORD_LAB_WINDOW), at 1, 2 and 3
//     nodes with the same rooms and bots.
//
// It runs only with CONCORD_LAB_MEASURE=1 (set -run TestLabMeasureCluster).
func TestLabMeasureCluster(t *testing.T) {
	if os.Getenv("CONCORD_LAB_MEASURE") != "1" {
		t.Skip("a measurement: set CONCORD_LAB_MEASURE=1 to run it")
	}
	lab := netlab.Get(t)
	bin := concord(t)
	const trials, burst = 15, 20
	perSec := func(d time.Duration) string {
		if d == 0 {
			return "not all synced"
		}
		return fmt.Sprintf("%d joins in %v = %.1f joins/s", burst, d.Round(time.Millisecond), float64(burst)/d.Seconds())
	}

	t.Run("join", func(t *testing.T) {
		// One standalone node: no cluster flags, no data.
		one := newLabCluster(t, lab, bin, 1, []string{"j"})
		n := one.nodes[0]
		addr := netlab.NodeAddr(0).String()
		n.p = startEnv(t, n.ns, clusterEnv, "serve-standalone", bin,
			append([]string{"serve", "--addr", addr + ":7880", "--data", ""}, one.extra...)...)
		n.p.waitHealthy(t, n.url, 60*time.Second)
		(&api{base: n.url, client: http.DefaultClient, roomName: "j", bearer: clusterAdminKey}).waitHost(t, "host")
		alone := clusterJoinTimes(t, n.url, "j", trials)
		aloneBurst := clusterJoinBurst(t, n.url, "j", burst)
		n.p.stop()
		t.Logf("join → synced, standalone node: %s; burst: %s", spread(alone), perSec(aloneBurst))
		clusterReady(t)

		c := newLabCluster(t, lab, bin, netlab.Nodes, []string{"j"})
		owned := c.open(120 * time.Second)
		rs, err := c.roomsOf(0)
		if err != nil {
			t.Fatal(err)
		}
		owner := c.nodes[nodeIndex(rs["j"].Node)]
		other := c.nodes[(owner.i+1)%len(c.nodes)]
		viaOwner := clusterJoinTimes(t, owner.url, "j", trials)
		viaOther := clusterJoinTimes(t, other.url, "j", trials)
		ownerBurst := clusterJoinBurst(t, owner.url, "j", burst)
		otherBurst := clusterJoinBurst(t, other.url, "j", burst)
		t.Logf("rooms per node %v", owned)
		t.Logf("join → synced, cluster, member on the owner node %s: %s; burst: %s", owner.name, spread(viaOwner), perSec(ownerBurst))
		t.Logf("join → synced, cluster, member on non-owner node %s (relayed to %s): %s; burst: %s", other.name, owner.name, spread(viaOther), perSec(otherBurst))
	})

	clusterReady(t)
	rooms := roomNames(measureRooms(clusterRooms))
	t.Run("recovery", func(t *testing.T) {
		c := newLabCluster(t, lab, bin, netlab.Nodes, rooms)
		owned := c.open(time.Duration(len(rooms)) * 4 * time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		clk := &migrationcheck.Clock{}
		bots := c.startBots(ctx, &wg, clk, time.Duration(len(rooms))*4*time.Second)
		f := c.killBusiest(ctx, bots, clk, owned, time.Duration(len(rooms))*6*time.Second)
		t.Logf("%d rooms, one bot each, rooms per node %v: %s (owner of %d rooms) SIGKILLed; every room's members synced again on the survivors %v after the kill; %d invariant violations",
			len(rooms), owned, f.victim.name, owned[f.victim.name], f.recovered.Round(time.Millisecond), f.violations)
	})

	for nodes := 1; nodes <= netlab.Nodes; nodes++ {
		t.Run(fmt.Sprintf("scale-%d", nodes), func(t *testing.T) {
			c := newLabCluster(t, lab, bin, nodes, rooms)
			owned := c.open(time.Duration(len(rooms)) * 4 * time.Second)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			c.startBots(ctx, &wg, &migrationcheck.Clock{}, time.Duration(len(rooms))*4*time.Second)
			members := map[string]int{}
			rs, err := c.roomsOf(0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				members[r.Node] += len(r.Members)
			}
			cpu0 := make([]time.Duration, nodes)
			for i, n := range c.nodes {
				cpu0[i], _ = procStats(n.p.cmd.Process.Pid)
			}
			window := measureWindow()
			time.Sleep(window) // the measurement's window: CPU is read from /proc before and after
			var b strings.Builder
			for i, n := range c.nodes {
				cpu, rss := procStats(n.p.cmd.Process.Pid)
				fmt.Fprintf(&b, " %s: %d rooms, %d members, CPU %.0f%%, RSS %.0f MiB;", n.name, owned[n.name], members[n.name],
					100*(cpu-cpu0[i]).Seconds()/window.Seconds(), float64(rss)/(1<<20))
			}
			t.Logf("%d nodes, %d rooms with a dedicated host and a moving bot each:%s", nodes, len(rooms), b.String())
		})
	}
}
