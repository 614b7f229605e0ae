//go:build linux

// The chaos test kills a dedicated host process with SIGKILL in the middle of a busy room and
// checks Concord's migration invariant (docs/design.md §7): for every key, the converged timestamp is at
// least the highest timestamp any surviving replica held when the host vanished, no entity
// disappears that had no reason to, and every bot's avatar ends where the bot last put it (a
// value re-stamped from an older one passes the timestamp check but is still a loss). Run the
// long version with -chaos.trials=100. It is Linux-only because it relies on SIGKILL and on
// Pdeathsig, which keeps a host process from outliving a test binary that dies.

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

var (
	chaosTrials = flag.Int("chaos.trials", 20, "number of host-kill trials TestChaosKillHost runs")
	chaosSeed   = flag.Uint64("chaos.seed", 1, "seed of the first chaos trial; trial i uses seed+i")
)

const (
	// chaosHostUser is the user of the dedicated host: the room's pinned host.
	chaosHostUser = "host"
	chaosBots     = 6
	chaosBoxes    = 8 // arena's default
	// chaosMoveFor is longer than any trial: bots stop when the test pauses their clock.
	chaosMoveFor = 1000 * time.Hour
)

// TestChaosKillHost runs -chaos.trials trials. Each starts a signaling server in-process (room
// "arena" pinned to user "host", as `concord serve --dedicated-host=false` does), a dedicated
// host as a separate `concord host` process and six bots in-process, all moving avatars and
// grabbing boxes. Once every bot is synced it waits a seeded 0.3–1.5 s, SIGKILLs the host,
// records every survivor's replica at once, lets the bots stop 1–2 s later (in odd trials: 0–100
// ms before the kill, so that their last moves are in flight when the host dies), waits until all
// survivors follow a new term with equal hashes, and checks the invariant against the records.
func TestChaosKillHost(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos trials start processes; skipped in -short mode")
	}
	bin := buildConcord(t)
	var results []chaosResult
	failed := 0
	for i := range *chaosTrials {
		seed := *chaosSeed + uint64(i)
		var res chaosResult
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { res = runChaosTrial(t, bin, seed) })
		if res.keys > 0 { // the trial ran to its checks
			results = append(results, res)
		}
		if !ok {
			if failed++; failed >= 3 {
				t.Fatalf("%d trials failed; stopping", failed)
			}
		}
	}
	if len(results) == 0 {
		return
	}
	var keys, violations, locked int
	var reelect, conv []time.Duration
	for _, r := range results {
		keys += r.keys
		if r.locked > 0 {
			locked++
		}
		violations += r.violations
		reelect = append(reelect, r.reelected)
		conv = append(conv, r.converged)
	}
	t.Logf("%d trials checked (%d failed), %d with a box held at the kill: %d recorded keys checked, %d violations; kill→every survivor synced under the new host %s; kill→converged %s",
		len(results), failed, locked, keys, violations, spread(reelect), spread(conv))
}

type chaosResult struct {
	keys       int
	locked     int // boxes held by a bot at the kill
	violations int
	reelected  time.Duration // kill → every survivor synced under a new term
	converged  time.Duration // kill → every survivor has the same hash under the new term
}

// spread formats min / median / max.
func spread(ds []time.Duration) string {
	slices.Sort(ds)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("min %v / median %v / max %v", r(ds[0]), r(ds[len(ds)/2]), r(ds[len(ds)-1]))
}

// buildConcord builds the concord binary once for all trials, with the race detector when this
// test binary has it (the race-built dependencies are then already in the build cache).
func buildConcord(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build concord: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "concord")
	args := []string{"build", "-o", bin}
	if raceEnabled() {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, ".")...)
	if cmd.Dir, err = os.Getwd(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("built %s in %v (race %v)", bin, time.Since(start).Round(time.Millisecond), raceEnabled())
	return bin
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// chaosApp is the arena with a record of when each host term was announced and synced.
type chaosApp struct {
	*migrationcheck.Bot
	mu     sync.Mutex // guards the following fields
	hostAt map[peer.Term]time.Time
	syncAt map[peer.Term]time.Time
}

// OnEvent runs on the peer's loop.
func (a *chaosApp) OnEvent(w *peer.World, ev peer.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hostAt == nil {
		a.hostAt, a.syncAt = make(map[peer.Term]time.Time), make(map[peer.Term]time.Time)
	}
	switch ev.Kind {
	case peer.EventHostChanged:
		a.hostAt[ev.Term] = time.Now()
	case peer.EventSynced:
		a.syncAt[ev.Term] = time.Now()
	}
}

func (a *chaosApp) at(term peer.Term) (hostChanged, synced time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hostAt[term], a.syncAt[term]
}

func runChaosTrial(t *testing.T, bin string, seed uint64) chaosResult {
	began := time.Now()
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())

	srv := signaling.New(signaling.Config{
		Logger: log.With().Str("who", "signaling").Logger(),
		Rooms:  map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{chaosHostUser}}},
	})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		_ = srv.Close()
		hs.Close()
	})

	host := startHostProcess(t, bin, hs.URL)

	// The dedicated host process is elected.
	var hostIdx peer.PeerIndex
	var term0 peer.Term
	poll.Until(t, 30*time.Second, "dedicated host elected", func() error {
		rooms, err := srv.Rooms(ctx)
		if err != nil {
			return err
		}
		for _, r := range rooms {
			for _, m := range r.Members {
				if r.Room == "arena" && m.PeerIndex == r.Host && strings.HasPrefix(string(m.PeerID), chaosHostUser+"/") {
					hostIdx, term0 = r.Host, r.Term
					return nil
				}
			}
		}
		return fmt.Errorf("rooms %+v", rooms)
	})

	// Six bots in-process, each with its own loopback-only WebRTC API.
	clk := &migrationcheck.Clock{}
	var bots []*peer.Peer
	var apps []*chaosApp
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for i := range chaosBots {
		user := fmt.Sprintf("bot%d", i)
		app := &chaosApp{Bot: &migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: seed<<8 | uint64(i), MoveFor: chaosMoveFor, Now: clk.Now}})}}
		apps = append(apps, app)
		bots = append(bots, startTestBot(t, ctx, &wg, hs.URL, user, app, log))
	}
	poll.Until(t, 60*time.Second, "every bot synced from the dedicated host", func() error {
		for _, p := range bots {
			if st := p.Status(); !st.Synced || st.Term != term0 || st.Host != hostIdx {
				return fmt.Errorf("bot %d: synced %v, term %d host %d (want term %d host %d)", st.Self, st.Synced, st.Term, st.Host, term0, hostIdx)
			}
		}
		return nil
	})

	setup := time.Since(began)

	// The room plays for a while, then the host dies mid-stream. In even trials the bots move
	// on through the migration and stop 1–2 s after the kill; in odd ones they stop 0–100 ms
	// before it, so that their last moves are still on their way when the host dies.
	played := time.Duration(300+rng.IntN(1200)) * time.Millisecond
	stopEarly := seed%2 == 1
	if stopEarly {
		lead := time.Duration(rng.IntN(100)) * time.Millisecond
		time.Sleep(played - lead)
		clk.Jump(10 * chaosMoveFor)
		time.Sleep(lead)
	} else {
		time.Sleep(played)
	}
	if err := host.kill(); err != nil {
		t.Fatalf("kill host: %v", err)
	}
	killed := time.Now()
	stopAt := killed.Add(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
	if stopEarly {
		stopAt = killed
	}

	views, err := readChaosViews(ctx, bots)
	if err != nil {
		t.Fatal(err)
	}
	recordedIn := time.Since(killed)
	rec := migrationcheck.NewView()
	for _, v := range views {
		rec.Absorb(v)
	}
	if want := 1 + chaosBoxes + chaosBots; len(rec.Live) != want {
		t.Fatalf("survivors held %d live entities at the kill, want room + %d boxes + %d avatars = %d", len(rec.Live), chaosBoxes, chaosBots, want)
	}

	time.Sleep(time.Until(stopAt))
	clk.Jump(10 * chaosMoveFor)

	// Every survivor follows one new host (a bot) under a newer term, and all replicas agree.
	var final *chaosView
	defer func() {
		if t.Failed() {
			dumpDivergence(t, bots)
		}
	}()
	poll.Until(t, 60*time.Second, "survivors converged under a new host", func() error {
		first := bots[0].Status()
		for _, p := range bots {
			st := p.Status()
			if !st.Synced || st.Term <= term0 || st.Term != first.Term || st.Host != first.Host {
				return fmt.Errorf("bot %d: synced %v, term %d host %d; bot %d: term %d host %d (old term %d)",
					st.Self, st.Synced, st.Term, st.Host, first.Self, first.Term, first.Host, term0)
			}
		}
		for _, p := range bots {
			if st := p.Status(); st.Hash != first.Hash {
				return fmt.Errorf("bot %d hash %016x, bot %d hash %016x", st.Self, st.Hash, first.Self, first.Hash)
			}
		}
		// Statuses are published every ReportInterval: confirm on the replicas themselves.
		var err error
		final, err = agreedView(ctx, bots)
		return err
	})
	converged := time.Since(killed)
	// When every survivor heard of the new term, and when each had synced under it.
	var elected, reelected time.Duration
	for _, a := range apps {
		hc, sy := a.at(final.Term)
		if hc.IsZero() || sy.IsZero() {
			t.Fatalf("a bot saw no host change or sync for term %d", final.Term)
		}
		elected, reelected = max(elected, hc.Sub(killed)), max(reelected, sy.Sub(killed))
	}
	if !slices.ContainsFunc(bots, func(p *peer.Peer) bool { return p.Status().Self == final.Host }) {
		t.Errorf("new host %d is not a surviving bot", final.Host)
	}

	// No entity may vanish: the dedicated host had no avatar, every bot survived.
	violations := migrationcheck.Check(rec, final, func(peer.Entity) bool { return false })
	for e := range final.Live {
		if !rec.Live[e] {
			violations = append(violations, fmt.Sprintf("entity %v appeared", e))
		}
	}
	violations = append(violations, avatarViolations(bots, apps, final)...)
	reportViolations(t, violations)
	mode := "bots stop 1–2 s after the kill"
	if stopEarly {
		mode = "bots stopped just before the kill"
	}
	t.Logf("%s; setup %v, played %v; recorded %d keys (%d boxes locked) in %v; new host %d term %d→%d; after the kill: every bot saw the new term in %v, synced in %v, converged in %v",
		mode, setup.Round(time.Millisecond), played.Round(time.Millisecond), len(rec.Keys), rec.Locks, recordedIn.Round(time.Microsecond), final.Host, term0, final.Term,
		elected.Round(time.Millisecond), reelected.Round(time.Millisecond), converged.Round(time.Millisecond))
	if out := host.output(); bytes.Contains(out, []byte("DATA RACE")) {
		t.Errorf("the host process reported a data race:\n%s", out)
	}
	return chaosResult{keys: len(rec.Keys), locked: rec.Locks, violations: len(violations), reelected: reelected, converged: converged}
}

// avatarViolations: every bot's avatar must be where the bot last put it (timestamps alone
// cannot tell a value re-stamped from an older one).
func avatarViolations(bots []*peer.Peer, apps []*chaosApp, final *chaosView) []string {
	var out []string
	for i, p := range bots {
		want := apps[i].Wrote()
		if got := final.Avatars[p.Status().Self]; want != nil && !bytes.Equal(got, want) {
			out = append(out, fmt.Sprintf("bot %d's avatar is at %v, but the last position it wrote is %v",
				p.Status().Self, arena.ParseVec(got), arena.ParseVec(want)))
		}
	}
	return out
}

// reportViolations fails t with the first 20 violations.
func reportViolations(t *testing.T, violations []string) {
	t.Helper()
	for i, v := range violations {
		if i == 20 {
			t.Errorf("… and %d more violations", len(violations)-i)
			break
		}
		t.Errorf("invariant violated: %s", v)
	}
}

// hostProcess is a `concord host` child process.
type hostProcess struct {
	cmd    *exec.Cmd
	waited chan struct{}
	out    syncbuf.Buffer
}

func startHostProcess(t *testing.T, bin, url string) *hostProcess {
	t.Helper()
	return startProcess(t, bin, "host", "--server", url, "--room", "arena", "--log-level", "warn")
}

// kill sends SIGKILL and waits until the process is gone.
func (h *hostProcess) kill() error {
	select {
	case <-h.waited:
		return nil
	default:
	}
	err := h.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	<-h.waited
	return err
}

func (h *hostProcess) output() []byte { return h.out.Bytes() }

func readChaosView(ctx context.Context, p *peer.Peer) (*chaosView, error) {
	var v *chaosView
	err := p.Do(ctx, func(w *peer.World) { v = migrationcheck.Read(w) })
	return v, err
}

// readChaosViews reads the peers' replicas concurrently, so that the views are as close to one
// moment as the peers' loops allow.
func readChaosViews(ctx context.Context, peers []*peer.Peer) ([]*chaosView, error) {
	views := make([]*chaosView, len(peers))
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i], errs[i] = readChaosView(ctx, p)
		}()
	}
	wg.Wait()
	return views, errors.Join(errs...)
}

// agreedView reads the peers' replicas and returns the first one's view if all have the same
// term and hash.
func agreedView(ctx context.Context, peers []*peer.Peer) (*chaosView, error) {
	views, err := readChaosViews(ctx, peers)
	if err != nil {
		return nil, err
	}
	for _, v := range views[1:] {
		if v.Hash != views[0].Hash || v.Term != views[0].Term {
			return nil, fmt.Errorf("bot %d: term %d hash %016x, bot %d: term %d hash %016x", v.Self, v.Term, v.Hash, views[0].Self, views[0].Term, views[0].Hash)
		}
	}
	return views[0], nil
}

// dumpDivergence logs, for every bot whose replica differs from the first bot's, the entries that
// differ, so that a failed convergence can be diagnosed from the CI log.
func dumpDivergence(t *testing.T, bots []*peer.Peer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	states := make([]map[string]string, len(bots))
	for i, b := range bots {
		st := map[string]string{}
		_ = b.Do(ctx, func(w *peer.World) {
			w.Replica().Range(func(en crdt.Entry) bool {
				st[fmt.Sprintf("%v/%d", en.Entity, en.Component)] = fmt.Sprintf("ts=%d del=%v %x", en.Timestamp, en.Deleted, en.Data)
				return true
			})
			w.Replica().RangeDeleted(func(n, v uint16) bool {
				st[fmt.Sprintf("deleted %d", n)] = fmt.Sprintf("v%d", v)
				return true
			})
			s := b.Status()
			st["~status"] = fmt.Sprintf("self %d host %d term %d synced %v", s.Self, s.Host, s.Term, s.Synced)
		})
		states[i] = st
	}
	for i := 1; i < len(bots); i++ {
		for k, v := range states[i] {
			if states[0][k] != v {
				t.Logf("bot[%d] %s: %s; bot[0]: %s", i, k, v, states[0][k])
			}
		}
		for k, v := range states[0] {
			if _, ok := states[i][k]; !ok {
				t.Logf("bot[%d] lacks %s (bot[0]: %s)", i, k, v)
			}
		}
	}
}

// chaosView is the invariant's view of a replica (package migrationcheck).
type chaosView = migrationcheck.View
