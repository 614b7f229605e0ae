//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
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

// TestServeFailoverList: two independent `concord serve` processes, A and B, share CONCORD_SECRET
// (the key of resume tokens); a `concord host --server A,B` process and bots given the same list
// join through A, the first. A is SIGKILLed: the host process and the bots redial B, the next node,
// and resume there with their indices; the host stays host in its term, the room converges with
// the migration invariant intact, and a member joining B afterwards gets an index nobody held.
func TestServeFailoverList(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped in -short mode")
	}
	const secret, admin = "failover test secret, 32 bytes!!", "failover-admin"
	t.Setenv("CONCORD_SECRET", secret)
	t.Setenv("CONCORD_ADMIN_KEY", admin)
	bin := buildConcord(t)
	var urls []string
	var nodes []*hostProcess
	for range 2 {
		addr := freeLoopbackAddr(t)
		nodes = append(nodes, startProcess(t, bin, "serve", "--dedicated-host=false", "--data", "", "--addr", addr, "--log-level", "warn"))
		urls = append(urls, "http://"+addr)
		waitHealthy(t, urls[len(urls)-1])
	}
	list := urls[0] + "," + urls[1]
	token := func(user string, kind signaling.Kind) string {
		tok, err := signaling.IssueToken([]byte(secret), signaling.Claims{Room: "arena", User: user, Kind: kind, MayHost: true, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	startProcess(t, bin, "host", "--server", list, "--room", "arena", "--log-level", "warn", "--token", token(dedicatedHostUser, signaling.KindHost))

	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	clk := &migrationcheck.Clock{}
	bot := func(user string, app peer.App) *peer.Peer {
		return startTestBot(t, ctx, &wg, list, user, app, log, func(c *peer.Config) {
			c.Token = token(user, signaling.KindBot)
			c.RedialMin, c.RedialMax = 50*time.Millisecond, 500*time.Millisecond
		})
	}
	var bots []*peer.Peer
	for i := range 3 {
		bots = append(bots, bot(fmt.Sprintf("bot%d", i), &migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(700 + i), MoveFor: chaosMoveFor, Now: clk.Now}})}))
	}
	var before signaling.RoomInfo
	poll.Until(t, 30*time.Second, "the host process and every bot synced through A", func() error {
		r, err := adminRoom(urls[0], admin)
		if err != nil {
			return err
		}
		if len(r.Members) != 4 || r.Host == 0 {
			return fmt.Errorf("room %+v", r)
		}
		for _, m := range r.Members {
			if !m.Synced || (m.PeerIndex == r.Host) != (m.Kind == signaling.KindHost) {
				return fmt.Errorf("room %+v", r)
			}
		}
		before = r
		return nil
	})
	held := map[signaling.Identity]signaling.PeerIndex{}
	for _, m := range before.Members {
		held[m.PeerID] = m.PeerIndex
	}
	time.Sleep(500 * time.Millisecond) // the room plays

	if err := nodes[0].kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	views, err := readChaosViews(ctx, bots)
	if err != nil {
		t.Fatal(err)
	}
	rec := migrationcheck.NewView()
	for _, v := range views {
		rec.Absorb(v)
	}
	time.Sleep(300 * time.Millisecond) // the bots play on through the failover
	clk.Jump(2 * chaosMoveFor)
	poll.Until(t, 30*time.Second, "every member resumed on B with its index, in the same term under the same host", func() error {
		r, err := adminRoom(urls[1], admin)
		if err != nil {
			return err
		}
		now := map[signaling.Identity]signaling.PeerIndex{}
		for _, m := range r.Members {
			now[m.PeerID] = m.PeerIndex
		}
		if !maps.Equal(now, held) || r.Term != before.Term || r.Host != before.Host {
			return fmt.Errorf("room on B: term %d host %d members %v; before on A: term %d host %d members %v", r.Term, r.Host, now, before.Term, before.Host, held)
		}
		return nil
	})
	t.Logf("every member resumed on B %v after A was killed", time.Since(killed).Round(time.Millisecond))

	late := bot("late", arena.New(arena.Config{})) // stands still
	poll.Until(t, 30*time.Second, "a member joining B afterwards synced", func() error {
		if st := late.Status(); !st.Synced {
			return fmt.Errorf("late: %+v", st)
		}
		return nil
	})
	if self := late.Status().Self; slices.Contains(slices.Collect(maps.Values(held)), self) {
		t.Fatalf("the member joining B got index %d, held before by %v", self, held)
	}
	bots = append(bots, late)
	var final *chaosView
	poll.Until(t, 30*time.Second, "every bot converged with the host", func() error {
		vs, err := readChaosViews(ctx, bots)
		if err != nil {
			return err
		}
		r, err := adminRoom(urls[1], admin)
		if err != nil {
			return err
		}
		for _, m := range r.Members {
			if m.PeerIndex == r.Host && m.Replica != nil {
				for _, v := range vs {
					if v.Hash != m.Replica.Hash {
						return fmt.Errorf("bot %d hash %016x, host %016x", v.Self, v.Hash, m.Replica.Hash)
					}
				}
				final = vs[0]
				return nil
			}
		}
		return fmt.Errorf("no host report on B: %+v", r)
	})
	for _, v := range migrationcheck.Check(rec, final, func(peer.Entity) bool { return false }) {
		t.Errorf("invariant violated: %s", v)
	}
}

// adminRoom is room arena of url's /api/rooms, read with the admin key.
func adminRoom(url, key string) (signaling.RoomInfo, error) {
	req, err := http.NewRequest(http.MethodGet, url+"/api/rooms", nil)
	if err != nil {
		return signaling.RoomInfo{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return signaling.RoomInfo{}, err
	}
	defer resp.Body.Close()
	var rooms []signaling.RoomInfo
	if err := json.NewDecoder(resp.Body).Decode(&rooms); err != nil {
		return signaling.RoomInfo{}, err
	}
	for _, r := range rooms {
		if r.Room == "arena" {
			return r, nil
		}
	}
	return signaling.RoomInfo{}, fmt.Errorf("no room arena in %+v", rooms)
}
