//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/tiles"
	"github.com/concordrtc/concord/internal/harness/worldcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
)

// TestServeWorldCluster: three `concord serve --world tiles` processes clustered on loopback
// (embedded nats-servers routed to each other), each region placed on the holder of its room's
// lease (docs/protocol.md §11 "Cluster"). Go world clients as bots wander and edit across
// borders, each given the three nodes in its own order (its signaling and directory requests go
// to the first that answers). The node holding the most regions is SIGKILLed: its leases expire,
// its regions reopen on the others from their checkpoints and the members' replicas, and the bots'
// clients come back. Observers (the first bots) sample their merged views throughout: at most
// one avatar per player at every observation. After the kill every bot is resident with one
// avatar, and every block the bots saw in their regions once their edits were acknowledged is
// still there: no acknowledged edit lost. A player joining afterwards with the dead node first in
// its list becomes resident. CONCORD_WORLD_SERVE_BOTS sets the bot count (12; 6 under
// the race detector).
func TestServeWorldCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped in -short mode")
	}
	// Under the race detector (the test command runs this package so) each bot's pion peers cost
	// several times more: 6 bots keep the lab near a minute there.
	bots := 12
	// A lease renewed late past its TTL moves its region to another node; under the race
	// detector on a busy 2-vCPU machine (load 40) renewals came late enough, again and again, that
	// a region bounced between nodes and a bot's inputs stayed unacknowledged: a TTL of 6 s there.
	leaseTTL := "3s"
	if raceEnabled() {
		bots, leaseTTL = 6, "6s"
	}
	if v, err := strconv.Atoi(os.Getenv("CONCORD_WORLD_SERVE_BOTS")); err == nil && v > 0 {
		bots = v
	}
	began := time.Now()
	const secret = "world cluster test secret, 32 b!"
	const admin = "world-cluster-admin"
	t.Setenv("CONCORD_SECRET", secret)
	t.Setenv("CONCORD_ADMIN_KEY", admin)
	bin := buildConcord(t)
	const n = 3
	urls, routes := clusterAddrs(t, n)
	nodes := make([]*hostProcess, n)
	for i := range n {
		// A long checkpoint interval: what the bots did just before the kill is in no
		// checkpoint, only in the members' replicas.
		nodes[i] = startProcess(t, bin, "serve", "--addr", strings.TrimPrefix(urls[i], "http://"), "--data", t.TempDir(),
			"--node-name", fmt.Sprintf("n%d", i+1), "--cluster-name", "worldtest", "--cluster", routes[i], "--routes", otherRoutes(routes, i),
			"--lease-ttl", leaseTTL, "--dedicated-host=false", "--checkpoint-interval", "30s", "--world", tiles.Name, "--world-grace", "60s",
			"--log-level", "warn")
	}
	for _, u := range urls {
		poll.Until(t, 90*time.Second, u+" healthy", func() error {
			resp, err := http.Get(u + "/healthz")
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			return nil
		})
	}
	t.Logf("three nodes up in %v", time.Since(began).Round(time.Millisecond))

	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	// A link API (its UDP socket) per region peer of a bot, as each bot of startTestBot has its
	// own; closed at the end.
	var apiMu sync.Mutex
	var apis []*link.API
	defer func() {
		apiMu.Lock()
		defer apiMu.Unlock()
		for _, a := range apis {
			_ = a.Close()
		}
	}()
	newAPI := func() peer.Transport {
		a, err := link.NewAPI(link.Config{Logger: log})
		if err != nil {
			t.Error(err)
			return nil
		}
		apiMu.Lock()
		apis = append(apis, a)
		apiMu.Unlock()
		return peer.PionTransport{API: a}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	def := tiles.Def()
	clients := make([]*world.Client, bots)
	// join joins user starting in region start, given the nodes in order.
	join := func(user string, start [2]int, list []string) (*world.Client, error) {
		server, device := strings.Join(list, ","), "lab"
		return world.Join(ctx, world.Config{Server: server, World: tiles.Name, App: def.App, User: user, Device: device,
			Start: start, Logger: log,
			Peer: func(signaling.RoomID) peer.Config {
				return peer.Config{Server: server, Kind: signaling.KindBot, Transport: newAPI(), Logger: log,
					RedialMin: 50 * time.Millisecond, RedialMax: 500 * time.Millisecond}
			},
			Token: func(room signaling.RoomID) (string, error) {
				return signaling.IssueToken([]byte(secret), signaling.Claims{Room: room, User: user, Device: device,
					Kind: signaling.KindBot, ExpiresAt: time.Now().Add(time.Hour)})
			}})
	}
	for i := range bots {
		var list []string
		for j := range n {
			list = append(list, urls[(i+j)%n])
		}
		c, err := join(fmt.Sprintf("bot%d", i), [2]int{(i * 3) % tiles.Cols, (i / tiles.Cols) % tiles.Rows}, list)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	resident := func(phase string) {
		for _, c := range clients {
			poll.Until(t, 60*time.Second, phase+": "+c.Self()+" resident with its avatar in view", func() error {
				r, _, ok := c.Resident()
				if !ok {
					return fmt.Errorf("not resident; following %v", c.Regions())
				}
				vctx, vcancel := context.WithTimeout(ctx, 2*time.Second)
				defer vcancel()
				mine := 0
				for _, e := range c.View(vctx) {
					if e.Schema == tiles.SchemaPlayer && e.Owner == c.Self() && e.Region == r {
						mine++
					}
				}
				if mine != 1 {
					return fmt.Errorf("%d avatars in %s", mine, r.Room())
				}
				return nil
			})
		}
	}
	resident("joined")
	t.Logf("%d bots resident in %v", bots, time.Since(began).Round(time.Millisecond))

	// Observers look at their merged views throughout, the kill included.
	watch := worldcheck.Start(ctx, clients[:min(4, bots)], tiles.SchemaPlayer, 20*time.Millisecond)
	defer func() {
		looks, violations := watch.Stop()
		for _, v := range violations[:min(len(violations), 20)] {
			t.Error(v)
		}
		t.Logf("%d observations, %d with two avatars of a player", looks, len(violations))
	}()

	// wander: the bots walk and edit, then stop, and every input is acknowledged.
	wander := func(phase string, d time.Duration) {
		bctx, bcancel := context.WithTimeout(ctx, d)
		defer bcancel()
		var wg sync.WaitGroup
		var walks, edits atomic.Int64
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := tiles.RunBot(bctx, c, tiles.BotConfig{Seed: uint64(i) + uint64(len(phase))<<20, Every: 150 * time.Millisecond, EditEvery: 2})
				walks.Add(int64(s.Walks))
				edits.Add(int64(s.Edits))
			}()
		}
		wg.Wait()
		for _, c := range clients {
			poll.Until(t, 30*time.Second, c.Self()+" stops", func() error { return c.Input(tiles.Walk(0, 0)) })
		}
		for _, c := range clients {
			poll.Until(t, 60*time.Second, phase+": "+c.Self()+"'s inputs acknowledged", func() error {
				if k := c.Pending(); k > 0 {
					r, gen, ok := c.Resident()
					return fmt.Errorf("%d pending; resident %v %s gen %d; following %v; nodes' world counters:\n%s", k, ok, r.Room(), gen, c.Regions(), worldMetrics(urls, admin))
				}
				return nil
			})
		}
		t.Logf("%s: walks %d, edits %d", phase, walks.Load(), edits.Load())
	}
	// regionBlocks reads the blocks c sees in region r: tile → kind.
	regionBlocks := func(c *world.Client, r world.Region) map[[2]int32]byte {
		vctx, vcancel := context.WithTimeout(ctx, 2*time.Second)
		v := c.View(vctx)
		vcancel()
		m := map[[2]int32]byte{}
		for _, e := range v {
			if e.Schema != tiles.SchemaBlock || e.Region != r {
				continue
			}
			x, y, k := e.Values[tiles.BlockX], e.Values[tiles.BlockY], e.Values[tiles.BlockKind]
			if len(x) == 4 && len(y) == 4 && len(k) == 1 {
				m[[2]int32{tiles.ParseI32(x), tiles.ParseI32(y)}] = k[0]
			}
		}
		return m
	}
	// blocks reads, per region a bot is resident in, the blocks it sees there.
	blocks := func() map[world.Region]map[[2]int32]byte {
		out := map[world.Region]map[[2]int32]byte{}
		for _, c := range clients {
			if r, _, ok := c.Resident(); ok {
				out[r] = regionBlocks(c, r)
			}
		}
		return out
	}

	wander("three nodes", 10*time.Second)
	resident("three nodes")
	// The victim: the node hosting the most regions the bots are in.
	before := blocks()
	load := map[int]int{}
	for r := range before {
		if node, err := regionNode(ctx, urls, r); err == nil {
			load[node]++
		}
	}
	victim, most := -1, 0
	for node, k := range load {
		if k > most {
			victim, most = node, k
		}
	}
	if victim < 0 {
		t.Fatalf("no region of the bots found in the directory: %v", load)
	}
	edited := 0
	for _, m := range before {
		edited += len(m)
	}
	t.Logf("regions by node %v; killing n%d (%d regions with bots); %d blocks in the bots' regions", load, victim+1, most, edited)
	// The bots on the victim's regions: each arrives again on a survivor with a newer generation.
	gens := map[int]uint32{}
	for i, c := range clients {
		if r, gen, ok := c.Resident(); ok {
			if node, err := regionNode(ctx, urls, r); err == nil && node == victim {
				gens[i] = gen
			}
		}
	}
	if err := nodes[victim].kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var live []string
	for i, u := range urls {
		if i != victim {
			live = append(live, u)
		}
	}
	for i, gen := range gens {
		c := clients[i]
		poll.Until(t, 60*time.Second, c.Self()+" arrives again on a survivor", func() error {
			r, g, ok := c.Resident()
			if !ok || g <= gen {
				return fmt.Errorf("resident %v %s gen %d (held %d before the kill)", ok, r.Room(), g, gen)
			}
			if _, err := regionNode(ctx, live, r); err != nil {
				return err
			}
			return nil
		})
	}
	resident("n" + strconv.Itoa(victim+1) + " killed")
	t.Logf("every bot resident again %v after the kill (%d of them had to arrive again)", time.Since(killed).Round(time.Millisecond), len(gens))
	lost := 0
	for r, m := range before {
		var after map[[2]int32]byte
		poll.Until(t, 30*time.Second, "blocks of "+string(r.Room()), func() error {
			// Any bot that follows r (a bot arrives again from its saved data, which may be in
			// a neighbouring region).
			seen := -1
			for _, c := range clients {
				if !slices.Contains(c.Regions(), r) {
					continue
				}
				if after = regionBlocks(c, r); len(after) >= len(m) {
					return nil
				}
				seen = max(seen, len(after))
			}
			return fmt.Errorf("%d of %d blocks seen (-1: no bot follows it)", seen, len(m))
		})
		for tile, kind := range m {
			if after[tile] != kind {
				lost++
				t.Errorf("%s: tile %v: kind %d, held %d before the kill", r.Room(), tile, after[tile], kind)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d blocks lost", lost, edited)
	}
	// A player joining afterwards with the dead node first in its list: its directory requests
	// pass over it.
	late, err := join("late", [2]int{1, 1}, append([]string{urls[victim]}, live...))
	if err != nil {
		t.Fatalf("a client listing the dead node first: %v", err)
	}
	defer late.Close()
	poll.Until(t, 60*time.Second, "the late player resident", func() error {
		if _, _, ok := late.Resident(); !ok {
			return fmt.Errorf("following %v", late.Regions())
		}
		return nil
	})
	wander("two nodes", 5*time.Second)
	resident("two nodes")
	t.Logf("lab of %d bots across three serve processes, one SIGKILLed: %v in all", bots, time.Since(began).Round(time.Millisecond))
}

// regionNode finds the node that has r loaded, in the nodes' directories ("nK" → K-1).
func regionNode(ctx context.Context, urls []string, r world.Region) (int, error) {
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/api/worlds/"+tiles.Name, nil)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		var dir world.Directory
		err = json.NewDecoder(resp.Body).Decode(&dir)
		_ = resp.Body.Close()
		if err != nil {
			return 0, err
		}
		for _, e := range dir.Regions {
			if e.X == r.X && e.Y == r.Y && e.Loaded && e.Node != "" {
				var k int
				if _, err := fmt.Sscanf(e.Node, "n%d", &k); err != nil {
					return 0, err
				}
				return k - 1, nil
			}
		}
	}
	return 0, fmt.Errorf("%s loaded nowhere", r.Room())
}

// worldMetrics is the nodes' concord_world_ counters, for a failure's message.
func worldMetrics(urls []string, admin string) string {
	var b strings.Builder
	for _, u := range urls {
		req, err := http.NewRequest(http.MethodGet, u+"/metrics", nil)
		if err != nil {
			continue
		}
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", u, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "concord_world_refused") || strings.HasPrefix(line, "concord_world_handovers") || strings.HasPrefix(line, "concord_world_regions") {
				fmt.Fprintf(&b, "%s %s\n", u, line)
			}
		}
	}
	return b.String()
}
