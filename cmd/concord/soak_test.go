//go:build linux

// The soak runs `concord serve --dedicated-host=false` and a `concord host` process, four core
// bots that move and grab boxes, and a churn of passive bots: every second one joins and, once
// four are in, the oldest (not hosting) leaves. Every 20 s the host process is SIGKILLed and
// restarted; after each kill the core bots must converge under a new term with the migration
// invariant intact (as TestChaosKillHost checks it). The serve process's RSS and goroutines are
// sampled every second and must stay flat after warm-up. In CI it runs 75 s (three kills);
// -soak=1h (or CONCORD_SOAK=1h) runs it longer.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

var soakFor = flag.Duration("soak", 0, "how long TestSoak runs (0: CONCORD_SOAK, else 75s)")

const (
	soakCore      = 4
	soakChurn     = 4 // churn bots in the room at once
	soakKillEvery = 20 * time.Second
)

// soakSample is one sample of the serve process.
type soakSample struct {
	rss        int64 // bytes
	goroutines int
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak starts processes; skipped in -short mode")
	}
	d := 75 * time.Second
	if *soakFor > 0 {
		d = *soakFor
	} else if env := os.Getenv("CONCORD_SOAK"); env != "" {
		var err error
		if d, err = time.ParseDuration(env); err != nil {
			t.Fatalf("CONCORD_SOAK=%q: %v", env, err)
		}
	}
	bin := buildConcord(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	url := "http://" + addr
	serve := startProcess(t, bin, "serve", "--addr", addr, "--data", "", "--dedicated-host=false", "--pprof", "--log-level", "warn")
	poll.Until(t, 30*time.Second, "serve up", func() error {
		_, err := soakGet(url + "/healthz")
		return err
	})
	host := startHostProcess(t, bin, url)
	waitDedicatedHost(t, url)

	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &migrationcheck.Clock{}
	core := make([]*soakBot, soakCore)
	apps := make([]*chaosApp, soakCore)
	for i := range core {
		apps[i] = &chaosApp{Bot: &migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i + 1), MoveFor: chaosMoveFor, Now: clk.Now}})}}
		core[i] = startSoakBot(t, ctx, url, fmt.Sprintf("core%d", i), apps[i], log)
	}
	defer func() {
		for _, b := range core {
			b.stop()
		}
	}()
	corePeers := make([]*peer.Peer, soakCore)
	for i, b := range core {
		corePeers[i] = b.p
	}
	poll.Until(t, 60*time.Second, "core bots synced", func() error {
		for _, p := range corePeers {
			if st := p.Status(); !st.Synced {
				return fmt.Errorf("bot %d not synced", st.Self)
			}
		}
		return nil
	})

	var churn []*soakBot
	defer func() {
		for _, b := range churn {
			b.stop()
		}
	}()
	var samples []soakSample
	joins, leaves, kills := 0, 0, 0
	var recovering time.Duration // time spent killing, converging and restarting the host
	start := time.Now()
	nextKill := start.Add(soakKillEvery)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; time.Since(start) < d; n++ {
		<-tick.C
		// Churn: one passive bot joins, and the oldest that is not hosting leaves.
		churn = append(churn, startSoakBot(t, ctx, url, fmt.Sprintf("churn%d", n),
			arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(1000 + n), MoveFor: time.Millisecond}}), log))
		joins++
		if len(churn) > soakChurn {
			for i, b := range churn {
				if !b.p.Status().IsHost {
					b.stop()
					churn = append(churn[:i], churn[i+1:]...)
					leaves++
					break
				}
			}
		}
		s, err := sampleProcess(serve.cmd.Process.Pid, url)
		if err != nil {
			t.Fatalf("sample serve: %v", err)
		}
		samples = append(samples, s)
		if time.Now().After(nextKill) {
			killStart := time.Now()
			soakKill(t, ctx, host, corePeers, apps, clk)
			kills++
			host = startHostProcess(t, bin, url)
			waitDedicatedHost(t, url)
			recovering += time.Since(killStart)
			nextKill = time.Now().Add(soakKillEvery)
		}
	}
	// The next kill is scheduled soakKillEvery after the previous host is back, so the time spent
	// recovering does not count towards the interval.
	if want := int((d-recovering)/soakKillEvery) - 1; kills < want {
		t.Errorf("%d host kills in %v (%v of it recovering), want at least %d: one every %v", kills, d, recovering.Round(time.Second), want, soakKillEvery)
	}
	checkFlat(t, samples)
	if out := serve.output(); bytes.Contains(out, []byte("DATA RACE")) {
		t.Errorf("serve reported a data race:\n%s", out)
	}
	t.Logf("soak %v: %d joins, %d leaves, %d host kills (%v recovering)", d.Round(time.Second), joins, leaves, kills, recovering.Round(time.Second))
}

// checkFlat asserts that after warm-up (the first fifth of the samples) the serve process's RSS
// and goroutines do not grow: the last third's maximum stays within 1.3 × the first third's
// maximum plus slack (16 MiB, 64 goroutines: a burst of joins at the end of a short run).
func checkFlat(t *testing.T, samples []soakSample) {
	t.Helper()
	s := samples[len(samples)/5:]
	if len(s) < 6 {
		t.Fatalf("%d samples after warm-up: too few to judge", len(s))
	}
	third := len(s) / 3
	maxOf := func(part []soakSample) (rss int64, g int) {
		for _, x := range part {
			rss, g = max(rss, x.rss), max(g, x.goroutines)
		}
		return rss, g
	}
	r1, g1 := maxOf(s[:third])
	r3, g3 := maxOf(s[len(s)-third:])
	t.Logf("serve after warm-up: RSS max %.1f MiB (first third) → %.1f MiB (last third); goroutines max %d → %d",
		float64(r1)/(1<<20), float64(r3)/(1<<20), g1, g3)
	if float64(r3) > 1.3*float64(r1)+16<<20 {
		t.Errorf("serve RSS grew: %d → %d bytes", r1, r3)
	}
	if float64(g3) > 1.3*float64(g1)+64 {
		t.Errorf("serve goroutines grew: %d → %d", g1, g3)
	}
}

// soakKill kills the host process and checks that the core bots converge under a new term with
// the migration invariant intact. Avatars of churn bots may vanish (they leave); entities may
// appear (they join).
func soakKill(t *testing.T, ctx context.Context, host *hostProcess, core []*peer.Peer, apps []*chaosApp, clk *migrationcheck.Clock) {
	t.Helper()
	term0 := core[0].Status().Term
	if err := host.kill(); err != nil {
		t.Fatalf("kill host: %v", err)
	}
	killed := time.Now()
	views, err := readChaosViews(ctx, core)
	if err != nil {
		t.Fatal(err)
	}
	rec := migrationcheck.NewView()
	for _, v := range views {
		rec.Absorb(v)
	}
	coreAvatars, avatars := map[peer.Entity]bool{}, map[peer.Entity]bool{}
	for _, p := range core {
		_ = p.Do(ctx, func(w *peer.World) {
			if e, ok := w.AvatarOf(w.Self()); ok {
				coreAvatars[e] = true
			}
			for _, e := range w.EntitiesOf(arena.SchemaAvatar) {
				avatars[e] = true
			}
		})
	}
	clk.Jump(10 * chaosMoveFor) // the core bots stop writing
	defer clk.Resume()
	var final *chaosView
	poll.Until(t, 60*time.Second, "core bots converged under a new host", func() error {
		first := core[0].Status()
		for _, p := range core {
			if st := p.Status(); !st.Synced || st.Term <= term0 || st.Term != first.Term || st.Host != first.Host {
				return fmt.Errorf("bot %d: synced %v, term %d host %d; first term %d host %d (old term %d)", st.Self, st.Synced, st.Term, st.Host, first.Term, first.Host, term0)
			}
		}
		var err error
		final, err = agreedView(ctx, core)
		return err
	})
	violations := migrationcheck.Check(rec, final, func(e peer.Entity) bool { return avatars[e] && !coreAvatars[e] })
	violations = append(violations, avatarViolations(core, apps, final)...)
	reportViolations(t, violations)
	t.Logf("kill at term %d: core converged at term %d in %v, %d keys checked", term0, final.Term, time.Since(killed).Round(time.Millisecond), len(rec.Keys))
}

// soakBot is an in-process bot with its own lifetime.
type soakBot struct {
	p      *peer.Peer
	cancel context.CancelFunc
	done   chan struct{}
}

func startSoakBot(t *testing.T, ctx context.Context, url, user string, app peer.App, log zerolog.Logger) *soakBot {
	t.Helper()
	api, err := link.NewAPI(link.Config{Logger: log.Level(zerolog.Disabled)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := peer.New(peer.Config{
		Server: url, Room: "arena", User: user, Kind: signaling.KindBot, App: app,
		Transport: peer.PionTransport{API: api}, Logger: log.With().Str("who", user).Logger(),
		ReportInterval: 250 * time.Millisecond,
	})
	if err != nil {
		_ = api.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &soakBot{p: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		defer api.Close()
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("%s: %v", user, err)
		}
	}()
	return b
}

func (b *soakBot) stop() {
	b.cancel()
	<-b.done
}

// waitDedicatedHost waits until the room's host is the dedicated host (kind host).
func waitDedicatedHost(t *testing.T, url string) {
	t.Helper()
	poll.Until(t, 30*time.Second, "the dedicated host hosts arena", func() error {
		body, err := soakGet(url + "/api/rooms")
		if err != nil {
			return err
		}
		var rooms []signaling.RoomInfo
		if err := json.Unmarshal(body, &rooms); err != nil {
			return err
		}
		for _, r := range rooms {
			for _, m := range r.Members {
				if r.Room == "arena" && m.PeerIndex == r.Host && m.Kind == signaling.KindHost {
					return nil
				}
			}
		}
		return fmt.Errorf("rooms %s", body)
	})
}

// sampleProcess reads pid's RSS from /proc and its goroutines from serve's pprof endpoint.
func sampleProcess(pid int, url string) (soakSample, error) {
	var s soakSample
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return s, err
			}
			s.rss = kb << 10
		}
	}
	body, err := soakGet(url + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return s, err
	}
	line, _, _ := bytes.Cut(body, []byte("\n"))
	_, total, ok := strings.Cut(string(line), "total ")
	if !ok {
		return s, fmt.Errorf("goroutine profile: %q", line)
	}
	s.goroutines, err = strconv.Atoi(strings.TrimSpace(total))
	return s, err
}

func soakGet(url string) ([]byte, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, err
}
