//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/freeport"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// TestResumeServeAndHostKilled is a signaling outage in which the host dies, with real
// processes: `concord serve --dedicated-host=false` and `concord host --room arena` run as
// processes, bots run in-process over loopback WebRTC. The test SIGKILLs serve, then the host
// while serve is down, and starts serve again on the same port: the bots resume their indices,
// the new server waits its resume grace for the host, then elects a bot in a higher term, and
// the room converges with every entity (boxes, score, avatars) under the same id.
func TestResumeServeAndHostKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped in -short mode")
	}
	bin := buildConcord(t)
	addr := freeLoopbackAddr(t)
	url := "http://" + addr
	serve := startProcess(t, bin, "serve", "--dedicated-host=false", "--data", "", "--addr", addr, "--log-level", "warn")
	waitHealthy(t, url)
	host := startHostProcess(t, bin, url)

	var hostIdx peer.PeerIndex
	var term0 peer.Term
	poll.Until(t, 30*time.Second, "the host process elected", func() error {
		rooms, err := fetchRooms(url)
		if err != nil {
			return err
		}
		for _, r := range rooms {
			for _, m := range r.Members {
				if r.Room == "arena" && m.PeerIndex == r.Host && m.Kind == signaling.KindHost {
					hostIdx, term0 = r.Host, r.Term
					return nil
				}
			}
		}
		return fmt.Errorf("rooms %+v", rooms)
	})

	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	clk := &migrationcheck.Clock{}
	var bots []*peer.Peer
	const nBots = 4
	for i := range nBots {
		user := fmt.Sprintf("bot%d", i)
		app := &migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(900 + i), MoveFor: chaosMoveFor, Now: clk.Now}})}
		bots = append(bots, startTestBot(t, ctx, &wg, url, user, app, log))
	}
	poll.Until(t, 30*time.Second, "every bot synced from the host process", func() error {
		for _, p := range bots {
			if st := p.Status(); !st.Synced || st.Term != term0 || st.Host != hostIdx {
				return fmt.Errorf("bot %d: synced %v, term %d host %d", st.Self, st.Synced, st.Term, st.Host)
			}
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // the room plays: part of the scenario

	// Outage: serve dies, then the host dies while serve is down.
	if err := serve.kill(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "every bot lost signaling", func() error {
		for _, p := range bots {
			if p.Status().Signaling {
				return fmt.Errorf("bot %d still has signaling", p.Status().Self)
			}
		}
		return nil
	})
	if err := host.kill(); err != nil {
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
	self := map[*peer.Peer]peer.PeerIndex{}
	avatars := map[peer.PeerIndex]peer.Entity{}
	for _, p := range bots {
		st := p.Status()
		self[p] = st.Self
		_ = p.Do(ctx, func(w *peer.World) { avatars[st.Self], _ = w.AvatarOf(st.Self) })
	}
	time.Sleep(300 * time.Millisecond) // the bots play on without signaling and without a host
	clk.Jump(10 * chaosMoveFor)        // then rest, so that the room can converge

	restarted := time.Now()
	startProcess(t, bin, "serve", "--dedicated-host=false", "--data", "", "--addr", addr, "--log-level", "warn")
	var final signaling.RoomInfo
	poll.Until(t, 30*time.Second, "a bot hosts in a higher term and the bots agree", func() error {
		rooms, err := fetchRooms(url)
		if err != nil {
			return err
		}
		if len(rooms) != 1 || rooms[0].Room != "arena" {
			return fmt.Errorf("rooms %+v", rooms)
		}
		r := rooms[0]
		if r.Term <= term0 || len(r.Members) != nBots {
			return fmt.Errorf("term %d host %d, %d members", r.Term, r.Host, len(r.Members))
		}
		hash := ""
		for _, m := range r.Members {
			if !m.Synced || m.Replica == nil || m.Replica.Term != r.Term {
				return fmt.Errorf("member %d: synced %v replica %+v (term %d)", m.PeerIndex, m.Synced, m.Replica, r.Term)
			}
			h := fmt.Sprintf("%016x", m.Replica.Hash)
			if hash == "" {
				hash = h
			} else if h != hash {
				return fmt.Errorf("member %d hash %s, another %s", m.PeerIndex, h, hash)
			}
		}
		// Reports lag the replicas by up to a report interval: the room has converged only when
		// the bots' own replicas agree too, with the host the room names.
		views, err := readChaosViews(ctx, bots)
		if err != nil {
			return err
		}
		for i, v := range views {
			if v.Hash != views[0].Hash || v.Term != r.Term || v.Host != r.Host {
				return fmt.Errorf("bot %d: term %d host %d hash %016x; bot 0: hash %016x", i, v.Term, v.Host, v.Hash, views[0].Hash)
			}
		}
		final = r
		return nil
	})
	t.Logf("host killed → serve restarted %v; restart → bot %d hosts term %d (was %d) and the room agrees in %v",
		restarted.Sub(killed).Round(time.Millisecond), final.Host, final.Term, term0, time.Since(restarted).Round(time.Millisecond))

	var idx []peer.PeerIndex
	for _, m := range final.Members {
		if m.Kind != signaling.KindBot {
			t.Errorf("member %d is a %s", m.PeerIndex, m.Kind)
		}
		idx = append(idx, m.PeerIndex)
	}
	want := slices.Sorted(maps.Values(self))
	if !slices.Equal(idx, want) {
		t.Errorf("members %v after the outage, want the bots' old indices %v", idx, want)
	}
	views, err = readChaosViews(ctx, bots)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range views {
		if v.Hash != views[0].Hash || v.Term != final.Term || v.Host != final.Host {
			t.Fatalf("bot %d: term %d host %d hash %016x; bot 0: hash %016x; room: term %d host %d", i, v.Term, v.Host, v.Hash, views[0].Hash, final.Term, final.Host)
		}
	}
	got := views[0]
	if lost := migrationcheck.Check(rec, got, func(peer.Entity) bool { return false }); len(lost) > 0 {
		t.Errorf("%d violations of the migration invariant, first: %s", len(lost), lost[0])
	}
	if !maps.Equal(rec.Live, got.Live) {
		t.Errorf("live entities %v after the outage, want %v", slices.Sorted(maps.Keys(got.Live)), slices.Sorted(maps.Keys(rec.Live)))
	}
	for _, p := range bots {
		var e peer.Entity
		_ = p.Do(ctx, func(w *peer.World) { e, _ = w.AvatarOf(self[p]) })
		if e == 0 || e != avatars[self[p]] {
			t.Errorf("bot %d: avatar %v after the outage, %v before", self[p], e, avatars[self[p]])
		}
		if st := p.Status(); st.Resumes != 1 || st.Self != self[p] {
			t.Errorf("bot %d: self %d, %d resumes", self[p], st.Self, st.Resumes)
		}
	}
	t.Logf("%d live entities (%d boxes + score + %d avatars) kept their ids; %d recorded keys checked",
		len(got.Live), chaosBoxes, nBots, len(rec.Keys))
}

// freeLoopbackAddr returns a loopback address with a port that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string { return freeport.Addr(t) }

func waitHealthy(t *testing.T, url string) {
	t.Helper()
	poll.Until(t, 20*time.Second, "serve answers /healthz", func() error {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}

// startProcess runs bin with args, killed with the test (or the test binary: a test that dies of
// a timeout panic takes its processes with it).
func startProcess(t *testing.T, bin string, args ...string) *hostProcess {
	t.Helper()
	h := &hostProcess{waited: make(chan struct{})}
	h.cmd = exec.Command(bin, args...)
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.out
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = h.cmd.Wait()
		close(h.waited)
	}()
	t.Cleanup(func() {
		_ = h.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", strings.Join(args, " "), h.output())
		}
	})
	return h
}
