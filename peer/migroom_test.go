package peer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// The migration tests' room: a signaling server, peers over one transport, and the views the
// invariant is checked on.

// migRoom is a signaling server and the peers of one room, with one clock for every bot.
type migRoom struct {
	t     *testing.T
	url   string
	tr    peer.Transport
	log   zerolog.Logger
	clock migrationcheck.Clock
	wg    sync.WaitGroup
	peers []*migPeer
	// configure, if set, adjusts every peer's Config before it starts.
	configure func(*peer.Config)
}

type migPeer struct {
	*peer.Peer
	name   string
	app    *migApp
	cancel context.CancelFunc
}

func newMigRoom(t *testing.T, tr peer.Transport) *migRoom {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv := signaling.New(signaling.Config{
		Logger: log.With().Str("who", "signaling").Logger(),
		Rooms:  map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}},
	})
	hs := httptest.NewServer(srv.Handler())
	r := &migRoom{t: t, url: hs.URL, tr: tr, log: log}
	t.Cleanup(func() {
		for _, p := range r.peers {
			p.cancel()
		}
		r.wg.Wait()
		_ = srv.Close()
		hs.Close()
	})
	return r
}

// start runs a peer; a non-zero seed makes it a scripted bot.
// startRoom starts a dedicated host and n bots and waits until every one is synced.
func startRoom(r *migRoom, n int, seed uint64) (*migPeer, []*migPeer) {
	h := r.start("host", "dedicated", signaling.KindHost, 0)
	r.waitHost(h)
	var bots []*migPeer
	for i := range n {
		bots = append(bots, r.start(fmt.Sprintf("bot%d", i), "", signaling.KindBot, seed+uint64(i)))
	}
	r.waitSynced(append([]*migPeer{h}, bots...), h)
	return h, bots
}

func (r *migRoom) start(user, device string, kind signaling.Kind, seed uint64) *migPeer {
	r.t.Helper()
	game := arena.New(arena.Config{})
	if seed != 0 {
		game = arena.New(arena.Config{Bot: &arena.BotConfig{Seed: seed, MoveFor: migMoveFor, Now: r.clock.Now}})
	}
	app := &migApp{Bot: &migrationcheck.Bot{Game: game}}
	cfg := peer.Config{
		Server: r.url, Room: "arena", User: user, Device: device, Kind: kind, App: app, Transport: r.tr,
		Logger:         r.log.With().Str("who", user).Logger(),
		ReportInterval: 100 * time.Millisecond, DigestInterval: 200 * time.Millisecond,
		ResumeSettle: 500 * time.Millisecond, // a new host sweeps members that are gone after it
	}
	if r.configure != nil {
		r.configure(&cfg)
	}
	p, err := peer.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mp := &migPeer{Peer: p, name: user, app: app, cancel: cancel}
	r.peers = append(r.peers, mp)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			r.t.Errorf("%s: %v", user, err)
		}
	}()
	// Peers join one at a time, so that peer indexes (and the election's join order) follow
	// the order of start calls.
	poll.Until(r.t, 10*time.Second, user+" joined", func() error {
		if mp.Status().Self == 0 {
			return errors.New("not joined yet")
		}
		return nil
	})
	return mp
}

func (r *migRoom) waitHost(h *migPeer) {
	r.t.Helper()
	poll.Until(r.t, 10*time.Second, h.name+" hosts", func() error {
		if !h.Status().IsHost {
			return errors.New("not host yet")
		}
		return nil
	})
}

// waitSynced waits until every peer follows host h and is synced.
func (r *migRoom) waitSynced(peers []*migPeer, h *migPeer) {
	r.t.Helper()
	poll.Until(r.t, 20*time.Second, "every peer synced", func() error {
		hs := h.Status()
		for _, p := range peers {
			if st := p.Status(); !st.Synced || st.Term != hs.Term || st.Host != hs.Self {
				return fmt.Errorf("%s: synced %v term %d host %d; want term %d host %d", p.name, st.Synced, st.Term, st.Host, hs.Term, hs.Self)
			}
		}
		return nil
	})
}

// waitLock waits until some member holds a lock on a box (as host h sees it).
func (r *migRoom) waitLock(h *migPeer) {
	r.t.Helper()
	poll.Until(r.t, 20*time.Second, "a bot holds a box", func() error {
		v, err := r.view(h)
		if err != nil {
			return err
		}
		if v.Locks == 0 {
			return errors.New("no lock")
		}
		return nil
	})
}

// play lets the room run for d: part of the scenario, not a synchronisation.
func (r *migRoom) play(d time.Duration) { time.Sleep(d) }

func (r *migRoom) pause()  { r.clock.Jump(10 * migMoveFor) }
func (r *migRoom) resume() { r.clock.Resume() }

// avatarOf returns member idx's avatar as p sees it.
func (r *migRoom) avatarOf(p *migPeer, idx peer.PeerIndex) peer.Entity {
	r.t.Helper()
	var e peer.Entity
	var ok bool
	if err := p.Do(context.Background(), func(w *peer.World) { e, ok = w.AvatarOf(idx) }); err != nil || !ok {
		r.t.Fatalf("no avatar of %d on %s: %v", idx, p.name, err)
	}
	return e
}

// killAndConverge kills the host victim while the bots move, records the survivors at once, lets
// the bots move on for a second during the migration, stops them, waits for convergence and
// checks the invariant (only the entities in vanish may disappear). It returns the converged view.
func (r *migRoom) killAndConverge(victim *migPeer, survivors []*migPeer, term peer.Term, vanish map[peer.Entity]bool) *migView {
	r.t.Helper()
	victim.cancel()
	rec := r.record(survivors)
	<-victim.Done()
	r.play(time.Second)
	r.pause()
	var gone []peer.Entity
	for e := range vanish {
		gone = append(gone, e)
	}
	final := r.converge(survivors, term, gone...)
	step := fmt.Sprintf("%s killed in term %d", victim.name, term)
	r.check(step, rec, final, vanish)
	r.checkWrites(step, survivors, final)
	return final
}

// record reads the peers' replicas concurrently and returns the per-key maximum.
func (r *migRoom) record(peers []*migPeer) *migView {
	r.t.Helper()
	views := make([]*migView, len(peers))
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i], errs[i] = r.view(p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		r.t.Fatal(err)
	}
	rec := migrationcheck.NewView()
	for _, v := range views {
		rec.Absorb(v)
	}
	return rec
}

// converge waits until the peers follow one host under a term after term, synced, with equal
// replicas, and returns the converged view.
// converge waits until every peer follows one host in a term above term with equal replicas, and
// the entities in gone (avatars of dead members, which a new host sweeps after ResumeSettle) are
// deleted.
func (r *migRoom) converge(peers []*migPeer, term peer.Term, gone ...peer.Entity) *migView {
	r.t.Helper()
	var final *migView
	poll.Until(r.t, 40*time.Second, "survivors converged under a new host", func() error {
		first := peers[0].Status()
		for _, p := range peers {
			st := p.Status()
			if !st.Synced || st.Term <= term || st.Term != first.Term || st.Host != first.Host || st.Hash != first.Hash {
				return fmt.Errorf("%s: synced %v term %d host %d hash %016x; %s: term %d host %d hash %016x (old term %d)",
					p.name, st.Synced, st.Term, st.Host, st.Hash, peers[0].name, first.Term, first.Host, first.Hash, term)
			}
		}
		var views []*migView
		for _, p := range peers {
			v, err := r.view(p)
			if err != nil {
				return err
			}
			views = append(views, v)
		}
		for i, v := range views {
			if v.Hash != views[0].Hash || v.Term != views[0].Term {
				return fmt.Errorf("%s: term %d hash %016x; %s: term %d hash %016x", peers[i].name, v.Term, v.Hash, peers[0].name, views[0].Term, views[0].Hash)
			}
		}
		if !slices.ContainsFunc(peers, func(p *migPeer) bool { return p.Status().Self == views[0].Host }) {
			return fmt.Errorf("host %d is none of the peers", views[0].Host)
		}
		for _, e := range gone {
			if views[0].Live[e] {
				return fmt.Errorf("the avatar %v of a dead member is still live", e)
			}
		}
		final = views[0]
		return nil
	})
	return final
}

// checkWrites fails the test for every bot whose avatar, in final, is not where the bot last put
// it: the owner's latest write must survive the migration (timestamps alone cannot tell a value
// re-stamped from an older one).
func (r *migRoom) checkWrites(step string, peers []*migPeer, final *migView) {
	r.t.Helper()
	for _, p := range peers {
		want := p.app.Wrote()
		if want == nil {
			continue
		}
		if got := final.Avatars[p.Status().Self]; !bytes.Equal(got, want) {
			r.t.Errorf("%s: %s's avatar is at %v, but the last position it wrote is %v", step, p.name, arena.ParseVec(got), arena.ParseVec(want))
		}
	}
}

// check fails the test for every way final loses what rec held.
func (r *migRoom) check(step string, rec, final *migView, vanish map[peer.Entity]bool) {
	r.t.Helper()
	violations := migrationcheck.Check(rec, final, func(e peer.Entity) bool { return vanish[e] })
	for e := range final.Live {
		if !rec.Live[e] {
			violations = append(violations, fmt.Sprintf("entity %v appeared", e))
		}
	}
	for i, v := range violations {
		if i == 20 {
			r.t.Errorf("%s: … and %d more", step, len(violations)-i)
			break
		}
		r.t.Errorf("%s: invariant violated: %s", step, v)
	}
	r.t.Logf("%s: %d recorded keys (%d boxes locked), %d live entities; converged in term %d under host %d: %d violations",
		step, len(rec.Keys), rec.Locks, len(rec.Live), final.Term, final.Host, len(violations))
}

// windowsOpened fails the test if a host among peers refused a survivor its correction window
// (survivor_claim): every survivor of these migrations was recorded synced by signaling, so its
// greeting's term is covered by the record the host reads (docs/protocol.md §5 "Limits").
func (r *migRoom) windowsOpened(step string, peers []*migPeer) {
	r.t.Helper()
	for _, p := range peers {
		if n := p.Status().RefusedBy[peer.RefusedSurvivor]; n != 0 {
			r.t.Errorf("%s: %s refused %d survivor claims: an honest survivor lost its correction window", step, p.name, n)
		}
	}
}

func (r *migRoom) view(p *migPeer) (*migView, error) {
	var v *migView
	if err := p.Do(context.Background(), func(w *peer.World) { v = migrationcheck.Read(w) }); err != nil {
		return nil, fmt.Errorf("read %s: %w", p.name, err)
	}
	return v, nil
}

// migApp is the arena with a log of host changes and syncs, the times at which other members'
// avatars moved, and an optional kill switch for when this peer becomes the host.
type migApp struct {
	*migrationcheck.Bot
	mu      sync.Mutex // guards the following fields
	events  []migEvent
	updates []time.Time
	onHost  func()
}

type migEvent struct {
	kind     peer.EventKind
	term     peer.Term
	peer     peer.PeerIndex
	at       time.Time
	entities int // live entities when it happened
}

// OnEvent runs on the peer's loop.
func (a *migApp) OnEvent(w *peer.World, ev peer.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch ev.Kind {
	case peer.EventHostChanged, peer.EventSynced:
		a.events = append(a.events, migEvent{kind: ev.Kind, term: ev.Term, peer: ev.Peer, at: time.Now(), entities: w.Len()})
		if ev.Kind == peer.EventHostChanged && ev.Peer == w.Self() && a.onHost != nil {
			a.onHost()
		}
	case peer.EventUpdated:
		if rec := w.AuthorityRecord(ev.Entity); rec.Kind == authority.KindAvatar && peer.PeerIndex(rec.Peer) != w.Self() {
			a.updates = append(a.updates, time.Now())
		}
	}
}

func (a *migApp) killOnHost(kill func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onHost = kill
}

func (a *migApp) log() []migEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.events)
}

// longestUpdateGap is the longest time in [from, to] without an update of another's avatar.
func (a *migApp) longestUpdateGap(from, to time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev, gap := from, time.Duration(0)
	for _, at := range a.updates {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	return max(gap, to.Sub(prev))
}

// migView is the invariant's view of a replica (package migrationcheck).
type migView = migrationcheck.View
