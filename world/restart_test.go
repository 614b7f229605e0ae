package world_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/tiles"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
)

// oneNode is a cluster of one world node on a store of its own, with the lab's signaling and
// memory links; the node can stop and start again on the same data while clients stay.
type oneNode struct {
	t    *testing.T
	dir  string
	tr   func(signaling.RoomID) peer.Config
	app  *edits
	def  world.Def
	url  string
	h    atomic.Pointer[http.Handler]
	st   *durable.Store
	wr   *durable.Writer
	srv  *world.Server
	wrap func(world.App) world.App
}

func newOneNode(t *testing.T) *oneNode {
	n := &oneNode{t: t, dir: t.TempDir()}
	var sig *signaling.Server
	n.tr, n.app, n.def, sig = labWorld()
	mux := http.NewServeMux()
	mux.Handle("/api/worlds/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := n.h.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, `{"error":"restarting"}`, http.StatusServiceUnavailable)
	}))
	mux.Handle("/", sig.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		n.stop()
		_ = sig.Close()
		hs.Close()
	})
	n.url = hs.URL
	return n
}

// joinResident joins user to the node's world in region (2, 2), closed when the test ends, and
// returns its client once it is resident there, with its generation.
func (n *oneNode) joinResident(ctx context.Context, user string) (*world.Client, uint32) {
	n.t.Helper()
	c, err := world.Join(ctx, world.Config{Server: n.url, World: tiles.Name, App: n.app, User: user, Device: "d", Start: [2]int{2, 2}, Peer: n.tr})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(c.Close)
	waitResident(n.t, c, 2, 2)
	_, gen, _ := c.Resident()
	return c, gen
}

// start starts the node; serve says whether its directory answers at once.
func (n *oneNode) start(serve bool) {
	n.t.Helper()
	st, err := durable.Open(durable.Config{Dir: n.dir})
	if err != nil {
		n.t.Fatal(err)
	}
	n.st, n.wr = st, durable.NewWriter(st, durable.WriterConfig{})
	def := n.def
	if n.wrap != nil {
		def.App = n.wrap(def.App)
	}
	n.srv, err = world.NewServer(world.ServerConfig{Def: def, URL: n.url, Store: st, Writer: n.wr, Grace: 2 * time.Second, Node: "n0",
		Cluster:    &world.Cluster{Conn: st.Conn(), Owner: func(context.Context, world.Region) (string, error) { return "n0", nil }},
		HostConfig: func(room signaling.RoomID) (peer.Config, error) { return n.tr(room), nil }})
	if err != nil {
		n.t.Fatal(err)
	}
	if serve {
		n.serve()
	}
}

func (n *oneNode) serve() {
	h := n.srv.Handler()
	n.h.Store(&h)
}

func (n *oneNode) stop() {
	if n.srv == nil {
		return
	}
	n.h.Store(nil)
	n.srv.Close()
	n.wr.Close()
	n.st.Close()
	n.srv = nil
}

// A whole cluster restarts with a residence record from before the restart that names a region
// out of the player's view, with a generation above the one its client knows (a node stopped
// while a handover it had claimed was under way, docs/protocol.md §11 "Cluster restart"): the
// region hosts the client is in redirect it there with the record's generation, the client
// follows (it dropped a generation-0 redirect once resident, and stayed for ever in a region no
// host held it in), the record's region recognises the record as stale (its node does not hold
// the player) and replaces it, revision-checked, with the player arriving from its saved data
// with the next generation: one avatar, where the player left, its inputs applied.
func TestWorldRestartStaleResidence(t *testing.T) {
	n := newOneNode(t)
	n.start(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, gen := n.joinResident(ctx, "ann")

	n.stop()
	n.start(false)
	far, _ := n.def.Region(6, 6)
	stale := gen + 3
	if err := n.srv.Claim(ctx, c.Self(), far, stale); err != nil {
		t.Fatal(err)
	}
	n.serve() // the client's rooms get their hosts back
	poll.Until(t, 30*time.Second, "ann resident again with one avatar", func() error {
		r, g, _ := c.Resident()
		if g <= stale {
			return fmt.Errorf("resident %s gen %d; record %q", r.Room(), g, n.srv.Residence(ctx, c.Self()))
		}
		if r.X != 2 || r.Y != 2 {
			return fmt.Errorf("resident %s gen %d, left in tiles.2.2", r.Room(), g)
		}
		avatars := 0
		for _, reg := range []world.Region{r, far} {
			if err := n.srv.Inspect(ctx, reg.X, reg.Y, func(w *peer.World) {
				avatars += avatarsIn(w, c.Self())
			}); err != nil {
				return err
			}
		}
		if avatars != 1 {
			return fmt.Errorf("%d avatars", avatars)
		}
		if got, want := n.srv.Residence(ctx, c.Self()), fmt.Sprintf("n0 tiles.2.2 %d", g); got != want {
			return fmt.Errorf("record %q, want %q", got, want)
		}
		return nil
	})
	if err := c.Input(tiles.Walk(100, 0)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the input acknowledged", func() error {
		if p := c.Pending(); p > 0 {
			return fmt.Errorf("%d pending: %s", p, c.Debug())
		}
		return nil
	})
}

// gateApp blocks the host loop of region (0, 0) in Tick while gate holds a channel, and says so
// on held.
type gateApp struct {
	world.App
	gate atomic.Pointer[chan struct{}]
	held chan struct{}
}

func (a *gateApp) Tick(w *peer.World, r world.Region, dt time.Duration) {
	if ch := a.gate.Load(); ch != nil && r.X == 0 && r.Y == 0 {
		select {
		case a.held <- struct{}{}:
		default:
		}
		<-*ch
	}
	a.App.Tick(w, r, dt)
}

// Close admits no load once it has begun: a region loaded while Close unloads the others was
// stopped at its end without an unload — no final checkpoint, its residents neither saved nor
// their residence records removed, records that outlived the cluster's restart naming hosts that
// were gone.
func TestWorldCloseRefusesLoads(t *testing.T) {
	n := newOneNode(t)
	gate := &gateApp{held: make(chan struct{}, 1)}
	n.wrap = func(a world.App) world.App { gate.App = a; return gate }
	n.start(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A player in (0, 0): its host ticks, and the gate can hold Close in its unload.
	c, err := world.Join(ctx, world.Config{Server: n.url, World: tiles.Name, App: n.app, User: "cal", Device: "d", Peer: n.tr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitResident(t, c, 0, 0)
	block := make(chan struct{})
	gate.gate.Store(&block)
	<-gate.held
	srv := n.srv
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		n.stop()
	}()
	poll.Until(t, 10*time.Second, "Close unloading (0, 0)", func() error {
		if !srv.Unloading(0, 0) {
			return errors.New("not yet")
		}
		return nil
	})
	_, err = srv.Load(ctx, 5, 5)
	close(block)
	<-closed
	if !errors.Is(err, world.ErrClosing) {
		t.Fatalf("a load while the server closes: %v", err)
	}
	if l := srv.Loaded(); len(l) != 0 {
		t.Fatalf("loaded after Close: %v", l)
	}
}

// In a cluster a node's memory of a player's saved data is older than the store's once another
// node has had the player since: an arrival takes the higher generation's (without it the player
// came back where it had been long before, with a generation its client already knew, and the
// client dropped every word of it).
func TestWorldArrivalNewestSave(t *testing.T) {
	n := newOneNode(t)
	n.start(true)
	ctx := context.Background()
	old := tiles.Def().App.NewPlayer(world.Region{}, "bob/d")
	newer := tiles.Def().App.NewPlayer(world.Region{}, "bob/d")
	newer[0] = world.AppendVec(nil, world.Vec{X: 5*16000 + 100, Y: 3*16000 + 100})
	n.srv.Remember("bob/d", old, 2)
	if err := n.srv.SavePlayer(ctx, "bob/d", newer, 4); err != nil {
		t.Fatal(err)
	}
	dest, gen := n.srv.Arrive(ctx, "bob/d", 0, 0)
	if dest.X != 5 || dest.Y != 3 || gen != 5 {
		t.Fatalf("arrives in %s with gen %d, want tiles.5.3 gen 5", dest.Room(), gen)
	}
}

// A region host that ends on its own (its loop gone before the janitor unloads it, so that no
// resident of it is saved) leaves the node's memory naming the region as the player's: the
// region reopens from its checkpoint, which holds no avatar, and the member arrives in it again.
// The host sees the memory naming its own region while it does not hold the player and makes it
// arrive anew with the next generation (without it the arrival took the player for resident there
// already, and the member stayed with no avatar for good).
func TestWorldEndedHostResidentAgain(t *testing.T) {
	n := newOneNode(t)
	n.start(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, gen := n.joinResident(ctx, "eve")
	n.srv.EndHost(2, 2)
	poll.Until(t, 30*time.Second, "eve resident again with one avatar", func() error {
		r, g, _ := c.Resident()
		if g <= gen || r.X != 2 || r.Y != 2 {
			return fmt.Errorf("resident %s gen %d (was gen %d); record %q; node %s; loaded %v", r.Room(), g, gen, n.srv.Residence(ctx, c.Self()), n.srv.DebugPlayer(ctx, c.Self()), n.srv.Loaded())
		}
		avatars := 0
		if err := n.srv.Inspect(ctx, 2, 2, func(w *peer.World) { avatars += avatarsIn(w, c.Self()) }); err != nil {
			return err
		}
		if avatars != 1 {
			return fmt.Errorf("%d avatars", avatars)
		}
		return nil
	})
	if err := c.Input(tiles.Walk(100, 0)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the input acknowledged", func() error {
		if p := c.Pending(); p > 0 {
			return fmt.Errorf("%d pending: %s", p, c.Debug())
		}
		return nil
	})
}
