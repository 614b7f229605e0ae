package voice

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// world is a signaling server with the forwarder beside it (as concord serve mounts them), a
// room "arena" hosted by a Go host peer of its own, and arena members.
type world struct {
	t     *testing.T
	url   string
	sig   *signaling.Server
	f     *Forwarder
	pos   *WorldPositions
	ctx   context.Context
	peers map[string]*peer.Peer
}

func newWorld(t *testing.T, radius float64) *world {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	sig := signaling.New(signaling.Config{Logger: log})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	w := &world{t: t, url: hs.URL, sig: sig, peers: map[string]*peer.Peer{}}
	w.pos = &WorldPositions{Logger: log, AvatarPos: arenaPos, Follow: func(room signaling.RoomID) (peer.Config, bool) {
		return peer.Config{Server: hs.URL, Room: string(room), User: FollowerUser, Device: "forwarder", Kind: signaling.KindHost, NoHost: true,
			App: arena.New(arena.Config{}), Logger: log}, true
	}}
	f, err := New(Config{Members: sig, Positions: w.pos, Radius: radius, Interval: 50 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	w.f = f
	mux.Handle("/voice/", f.Handler())
	mux.Handle("/", sig.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	w.ctx = ctx
	t.Cleanup(func() {
		_ = f.Close()
		w.pos.Close()
		cancel()
		for _, p := range w.peers {
			<-p.Done()
		}
		_ = sig.Close()
		hs.Close()
	})
	return w
}

// join starts an arena member (or host) with its own socket; its link API is returned so that a
// test can cut it off abruptly.
func (w *world) join(user string, kind signaling.Kind) (*peer.Peer, *link.API, context.CancelFunc) {
	w.t.Helper()
	api, err := link.NewAPI(link.Config{Logger: zerolog.Nop()})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = api.Close() })
	p, err := peer.New(peer.Config{Server: w.url, Room: "arena", User: user, Device: "d", Kind: kind, App: arena.New(arena.Config{}),
		Transport: peer.PionTransport{API: api}, Logger: zerolog.New(zerolog.NewTestWriter(w.t)).Level(zerolog.ErrorLevel)})
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.peers[user] = p
	go func() { _ = p.Run(ctx) }()
	return p, api, cancel
}

// place moves member p's avatar to (x, y) mm, as the member itself does: a write to the world.
func place(t *testing.T, p *peer.Peer, x, y int32) {
	t.Helper()
	poll.Until(t, 10*time.Second, "avatar placed", func() error {
		var err error
		if derr := p.Do(context.Background(), func(w *peer.World) { err = arena.MoveSelf(w, arena.Vec{X: x, Y: y}) }); derr != nil {
			return derr
		}
		return err
	})
}

func (w *world) dial(user string) *Client {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, DialConfig{Server: w.url, Room: "arena", Member: user + "/d", Publish: silenceOgg(w.t, 50), Loop: true, Stamp: true, Slots: 4})
	if err != nil {
		w.t.Fatalf("dial %s: %v", user, err)
	}
	w.t.Cleanup(func() { _ = c.Close() })
	return c
}

func synced(t *testing.T, ps ...*peer.Peer) {
	t.Helper()
	poll.Until(t, 15*time.Second, "members synced", func() error {
		for i, p := range ps {
			if !p.Status().Synced {
				return fmt.Errorf("peer %d not synced", i)
			}
		}
		return nil
	})
}

// seen waits until the forwarder's source of positions (the follower's world) holds these.
func (w *world) seen(t *testing.T, want map[string]Pos) {
	t.Helper()
	poll.Until(t, 15*time.Second, "the follower sees the avatars placed", func() error {
		for user, p := range want {
			idx, ok := w.sig.MemberIndex("arena", signaling.Identity(user+"/d"))
			if !ok {
				return fmt.Errorf("%s is no member", user)
			}
			out := make([]Pos, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := w.pos.Locate(ctx, "arena", []signaling.PeerIndex{idx}, out)
			cancel()
			if err != nil {
				return err
			}
			if out[0] != p {
				return fmt.Errorf("%s at %+v, want %+v", user, out[0], p)
			}
		}
		return nil
	})
}

func hosting(t *testing.T, host *peer.Peer) {
	t.Helper()
	poll.Until(t, 10*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return errors.New("not yet")
		}
		return nil
	})
}

// inSlots says whether the forwarder's last slots message to c maps one of its slots to who.
func inSlots(c *Client, who string) bool {
	for _, m := range c.Slots() {
		if m == who+"/d" {
			return true
		}
	}
	return false
}

func heard(c *Client, who string) int { return c.Speakers()[who+"/d"].Packets }

// TestProximityFromWorld: listeners hear the speakers within the radius of their avatar and no
// one else, positions as the room's world has them; moving an avatar across the radius starts
// and stops forwarding.
func TestProximityFromWorld(t *testing.T) {
	w := newWorld(t, 3000)
	host, _, _ := w.join("host", signaling.KindHost)
	hosting(t, host)
	a, _, _ := w.join("a", signaling.KindBot)
	b, _, _ := w.join("b", signaling.KindBot)
	c, _, _ := w.join("c", signaling.KindBot)
	synced(t, a, b, c)
	place(t, a, 1000, 1000)
	place(t, b, 2000, 1000)  // 1 m from a
	place(t, c, 15000, 1000) // far from both
	va, vb, vc := w.dial("a"), w.dial("b"), w.dial("c")

	w.seen(t, map[string]Pos{"a": {1000, 1000, true}, "b": {2000, 1000, true}, "c": {15000, 1000, true}})
	// The forwarder looks at the positions on its own interval: wait until its slots say c is
	// out of range (before the placement every avatar stood at its spawn point), then count.
	poll.Until(t, 15*time.Second, "the forwarder takes c out of a's, b's and c's slots", func() error {
		if inSlots(va, "c") || inSlots(vb, "c") || inSlots(vc, "a") || inSlots(vc, "b") {
			return fmt.Errorf("slots: a %v, b %v, c %v", va.Slots(), vb.Slots(), vc.Slots())
		}
		return nil
	})
	cOut := func() int { return heard(va, "c") + heard(vb, "c") + heard(vc, "a") + heard(vc, "b") }
	base, bBase := cOut(), heard(va, "b")
	poll.Until(t, 15*time.Second, "a and b hear each other", func() error {
		if heard(va, "b") < bBase+50 || heard(vb, "a") < 50 {
			return fmt.Errorf("a heard %d of b, b %d of a", heard(va, "b"), heard(vb, "a"))
		}
		return nil
	})
	// Packets in flight when the world caught up may arrive after; none more.
	if n := cOut() - base; n > 4 {
		t.Fatalf("out of range: a heard %d of c, b %d of c, c heard %d of a and %d of b", heard(va, "c"), heard(vb, "c"), heard(vc, "a"), heard(vc, "b"))
	}

	place(t, c, 2500, 2000) // within 3 m of both
	w.seen(t, map[string]Pos{"c": {2500, 2000, true}})
	poll.Until(t, 15*time.Second, "c hears and is heard", func() error {
		if heard(vc, "a") < 20 || heard(vc, "b") < 20 || heard(va, "c") < 20 || heard(vb, "c") < 20 {
			return fmt.Errorf("c heard %d of a, %d of b; a %d of c; b %d of c", heard(vc, "a"), heard(vc, "b"), heard(va, "c"), heard(vb, "c"))
		}
		return nil
	})

	place(t, c, 15000, 1000)
	poll.Until(t, 15*time.Second, "c leaves a's slots", func() error {
		for _, who := range va.Slots() {
			if who == "c/d" {
				return errors.New("c still in a slot of a")
			}
		}
		return nil
	})
	before, bBefore := heard(va, "c"), heard(va, "b")
	poll.Until(t, 15*time.Second, "a hears b on", func() error {
		if heard(va, "b") < bBefore+50 {
			return errors.New("not yet")
		}
		return nil
	})
	if after := heard(va, "c"); after > before+3 {
		t.Fatalf("a heard %d more packets of c after c left its range (b: 50 more)", after-before)
	}
}

// TestVoiceSurvivesHostLoss: the game host vanishing (its socket closed under it) does not touch
// voice: a listener's arrivals from a speaker show no gap over 500 ms while the room elects a new
// host.
func TestVoiceSurvivesHostLoss(t *testing.T) {
	w := newWorld(t, 3000)
	host, hostAPI, stopHost := w.join("host", signaling.KindHost)
	hosting(t, host)
	a, _, _ := w.join("a", signaling.KindBot)
	b, _, _ := w.join("b", signaling.KindBot)
	synced(t, a, b)
	place(t, a, 1000, 1000)
	place(t, b, 2000, 1000)
	va := w.dial("a")
	w.dial("b")
	poll.Until(t, 15*time.Second, "a hears b", func() error {
		if heard(va, "b") < 50 {
			return errors.New("not yet")
		}
		return nil
	})
	term := a.Status().Term
	killed := time.Now()
	_ = hostAPI.Close() // abrupt: the host's links die under it
	stopHost()
	poll.Until(t, 20*time.Second, "a new host and 3 s of voice after the kill", func() error {
		st, sb := a.Status(), b.Status()
		if st.Term == term || !(st.IsHost || sb.IsHost) {
			return errors.New("no new host yet")
		}
		if sp := va.Speakers()["b/d"]; sp.Last.Sub(killed) < 3*time.Second {
			return errors.New("not 3 s of voice yet")
		}
		return nil
	})
	arr := va.Speakers()["b/d"].Arrivals
	var worst time.Duration
	for i := 1; i < len(arr); i++ {
		if arr[i].After(killed.Add(-time.Second)) {
			worst = max(worst, arr[i].Sub(arr[i-1]))
		}
	}
	if worst > 500*time.Millisecond {
		t.Fatalf("a gap of %v in a's arrivals from b across the host's loss", worst)
	}
	t.Logf("largest gap across the host's loss: %v", worst)
}

// arenaPos reads the arena's avatar position: its pos property, millimetres.
func arenaPos(_ signaling.RoomID, w *peer.World, e peer.Entity) (Pos, bool) {
	b, ok := w.Get(e, arena.AvatarPos)
	if !ok {
		return Pos{}, false
	}
	v := arena.ParseVec(b)
	return Pos{X: float64(v.X), Y: float64(v.Y), Known: true}, true
}

// TestWorldPositionsNeedAvatarPos: WorldPositions knows no game's schema; without AvatarPos it
// says so instead of reading some other game's property.
func TestWorldPositionsNeedAvatarPos(t *testing.T) {
	wp := &WorldPositions{}
	err := wp.Locate(context.Background(), "arena", []signaling.PeerIndex{1}, make([]Pos, 1))
	if !errors.Is(err, ErrNoAvatarPos) {
		t.Fatalf("Locate without AvatarPos: %v, want ErrNoAvatarPos", err)
	}
}
