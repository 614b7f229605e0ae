//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// clusterRooms reads url's /api/rooms with the admin key, by room.
func clusterRooms(url, key string) (map[signaling.RoomID]signaling.RoomInfo, error) {
	req, err := http.NewRequest(http.MethodGet, url+"/api/rooms", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rooms []signaling.RoomInfo
	if err := json.NewDecoder(resp.Body).Decode(&rooms); err != nil {
		return nil, err
	}
	out := map[signaling.RoomID]signaling.RoomInfo{}
	for _, r := range rooms {
		out[r.Room] = r
	}
	return out, nil
}

// TestClusterNodeFailure: three `concord serve` nodes clustered on loopback (embedded nats-servers
// routed to each other, JetStream R3), each given the same two scene rooms. Each room's dedicated
// host runs on its owner; a bot per room joins through a node that does not own its room (the
// relay), and every node's /api/rooms lists both rooms under their owners. The owner of the first
// room is SIGKILLed: a survivor takes the room over once its lease expires, starts its dedicated
// host from the checkpoint, the bot resumes with its index, the room converges, and the migration
// invariant holds.
func TestClusterNodeFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped in -short mode")
	}
	const secret, admin = "cluster test secret, 32 bytes!!!", "cluster-admin"
	t.Setenv("CONCORD_SECRET", secret)
	t.Setenv("CONCORD_ADMIN_KEY", admin)
	bin := buildConcord(t)
	const n = 3
	urls, routes := clusterAddrs(t, n)
	rooms := []signaling.RoomID{"ra", "rb"}
	nodes := make([]*hostProcess, n)
	for i := range n {
		args := []string{"serve", "--addr", strings.TrimPrefix(urls[i], "http://"), "--data", t.TempDir(), "--node-name", fmt.Sprintf("n%d", i+1),
			"--cluster-name", "test", "--cluster", routes[i], "--routes", otherRoutes(routes, i), "--lease-ttl", "3s",
			"--dedicated-host=false", "--checkpoint-interval", "500ms", "--log-level", "warn"}
		for _, r := range rooms {
			args = append(args, "--scene", string(r)+"=../../crdt/testdata/dcl/example-scene.crdt")
		}
		nodes[i] = startProcess(t, bin, args...)
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
	// Every room open under its dedicated host, as every node lists it.
	owner := map[signaling.RoomID]int{}
	for _, u := range urls {
		poll.Until(t, 90*time.Second, "both rooms under their dedicated hosts, listed by "+u, func() error {
			rs, err := clusterRooms(u, admin)
			if err != nil {
				return err
			}
			for _, room := range rooms {
				r, ok := rs[room]
				if !ok || r.Node == "" || len(r.Members) != 1 || r.Members[0].Kind != signaling.KindHost || !r.Members[0].Synced {
					return fmt.Errorf("%s: %+v", room, r)
				}
				var k int
				_, _ = fmt.Sscanf(r.Node, "n%d", &k)
				owner[room] = k - 1
			}
			return nil
		})
	}

	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	clk := &migrationcheck.Clock{}
	var bots []*peer.Peer
	for k, room := range rooms {
		// The bot's list starts at a node that does not own its room: its join is relayed.
		first := (owner[room] + 1) % n
		var list []string
		for j := range n {
			list = append(list, urls[(first+j)%n])
		}
		user := fmt.Sprintf("bot-%s", room)
		tok, err := signaling.IssueToken([]byte(secret), signaling.Claims{Room: room, User: user, Kind: signaling.KindBot, MayHost: true, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		bots = append(bots, startTestBot(t, ctx, &wg, strings.Join(list, ","), user,
			&migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(900 + k), MoveFor: chaosMoveFor, Now: clk.Now}})},
			log, func(c *peer.Config) {
				c.Room, c.Token = string(room), tok
				c.RedialMin, c.RedialMax = 50*time.Millisecond, 500*time.Millisecond
			}))
	}
	// converged: both rooms on live nodes with their dedicated host and bot, synced in the room's
	// term, with one replica hash unless the bots are still moving.
	converged := func(u string, dead int, moving bool) error {
		rs, err := clusterRooms(u, admin)
		if err != nil {
			return err
		}
		for _, room := range rooms {
			r := rs[room]
			if r.Node == fmt.Sprintf("n%d", dead+1) || len(r.Members) != 2 || r.Host == 0 {
				return fmt.Errorf("%s: %+v", room, r)
			}
			hashes := map[uint64]bool{}
			for _, m := range r.Members {
				if !m.Synced || m.Replica == nil || m.Replica.Term != r.Term || (m.PeerIndex == r.Host) != (m.Kind == signaling.KindHost) {
					return fmt.Errorf("%s on %s: %+v", room, r.Node, r)
				}
				hashes[m.Replica.Hash] = true
			}
			if len(hashes) != 1 && !moving {
				return fmt.Errorf("%s on %s: replicas differ", room, r.Node)
			}
		}
		return nil
	}
	poll.Until(t, 60*time.Second, "both rooms synced with their bots", func() error { return converged(urls[0], -1, true) })
	for i, b := range bots {
		if st := b.Status(); st.Server == urls[owner[rooms[i]]] {
			t.Fatalf("bot of %s signals through %s, its room's owner", rooms[i], st.Server)
		}
	}
	selfBefore := make([]signaling.PeerIndex, len(bots))
	for i, b := range bots {
		selfBefore[i] = b.Status().Self
	}

	victim := owner[rooms[0]]
	time.Sleep(500 * time.Millisecond) // the bots move
	if err := nodes[victim].kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	views, err := readChaosViews(ctx, bots[:1])
	if err != nil {
		t.Fatal(err)
	}
	rec := migrationcheck.NewView()
	rec.Absorb(views[0])
	clk.Jump(2 * chaosMoveFor) // the bots stop moving
	survivor := urls[(victim+1)%n]
	poll.Until(t, 60*time.Second, "both rooms converged on the survivors", func() error { return converged(survivor, victim, false) })
	t.Logf("n%d killed: both rooms converged on the survivors %v later", victim+1, time.Since(killed).Round(time.Millisecond))
	for i, b := range bots {
		if st := b.Status(); st.Self != selfBefore[i] {
			t.Errorf("bot of %s: index %d, held %d before the kill", rooms[i], st.Self, selfBefore[i])
		}
	}
	final, err := readChaosViews(ctx, bots[:1])
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range migrationcheck.Check(rec, final[0], func(peer.Entity) bool { return false }) {
		t.Errorf("room %s: invariant violated: %s", rooms[0], v)
	}
}

// clusterAddrs returns n nodes' HTTP URLs and route addresses on loopback.
func clusterAddrs(t *testing.T, n int) (urls, routes []string) {
	for range n {
		urls = append(urls, "http://"+freeLoopbackAddr(t))
		routes = append(routes, freeLoopbackAddr(t))
	}
	return urls, routes
}

// otherRoutes is node i's --routes: every other node's route address.
func otherRoutes(routes []string, i int) string {
	var rs []string
	for j, r := range routes {
		if j != i {
			rs = append(rs, "nats-route://"+r)
		}
	}
	return strings.Join(rs, ",")
}
