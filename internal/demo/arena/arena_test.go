package arena_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

type room struct {
	t     *testing.T
	url   string
	tr    *peer.MemoryTransport
	ctx   context.Context
	peers []*peer.Peer
}

func newRoom(t *testing.T) *room {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv := signaling.New(signaling.Config{Logger: log, MaxMembers: 128})
	hs := httptest.NewServer(srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	r := &room{t: t, url: hs.URL, tr: &peer.MemoryTransport{}, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		for _, p := range r.peers {
			<-p.Done()
		}
		_ = srv.Close()
		hs.Close()
	})
	return r
}

func (r *room) join(user string, kind signaling.Kind, g *arena.Game) *peer.Peer {
	p, err := peer.New(peer.Config{Server: r.url, Room: "arena", User: user, Kind: kind, App: g, Transport: r.tr,
		Logger: zerolog.New(zerolog.NewTestWriter(r.t)).Level(zerolog.WarnLevel)})
	if err != nil {
		r.t.Fatal(err)
	}
	r.peers = append(r.peers, p)
	go func() { _ = p.Run(r.ctx) }()
	return p
}

func hosting(p *peer.Peer) func() error {
	return func() error {
		if !p.Status().IsHost {
			return fmt.Errorf("not host")
		}
		return nil
	}
}

// TestBoxScoresAndRests pushes a box toward the goal: the room scores, the box is put back in the
// middle, and every box comes to rest.
func TestBoxScoresAndRests(t *testing.T) {
	r := newRoom(t)
	host := r.join("host", signaling.KindHost, arena.New(arena.Config{Boxes: 3}))
	poll.Until(t, 5*time.Second, "host", hosting(host))
	ctx := context.Background()
	if err := host.Do(ctx, func(w *peer.World) {
		box := w.EntitiesOf(arena.SchemaBox)[0]
		if err := w.Set(box, arena.BoxPos, arena.AppendVec(nil, arena.Vec{X: arena.GoalX - 1500, Y: 6000})); err != nil {
			t.Fatal(err)
		}
		if err := w.Set(box, arena.BoxVel, arena.AppendVel(nil, arena.Vec{X: 6000})); err != nil {
			t.Fatal(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "goal scored and boxes at rest", func() error {
		var err error
		_ = host.Do(ctx, func(w *peer.World) {
			s, _ := w.Get(peer.RoomEntity, arena.RoomScore)
			if arena.ParseU32(s) != 10 {
				err = fmt.Errorf("score %d", arena.ParseU32(s))
				return
			}
			for _, b := range w.EntitiesOf(arena.SchemaBox) {
				v, _ := w.Get(b, arena.BoxVel)
				if arena.ParseVel(v) != (arena.Vec{}) {
					err = fmt.Errorf("box %v still moving: %+v", b, arena.ParseVel(v))
					return
				}
			}
		})
		return err
	})
}

// TestBotsGrabBoxes: scripted bots take locks on boxes (authority moves to them), and the room
// comes to rest with equal replicas once they stop.
func TestBotsGrabBoxes(t *testing.T) {
	r := newRoom(t)
	host := r.join("host", signaling.KindHost, arena.New(arena.Config{Boxes: 4}))
	poll.Until(t, 5*time.Second, "host", hosting(host))
	var bots []*peer.Peer
	for i := range 3 {
		bots = append(bots, r.join(fmt.Sprintf("bot%d", i), signaling.KindBot,
			arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i), MoveFor: 6 * time.Second}})))
	}
	ctx := context.Background()
	poll.Until(t, 10*time.Second, "a bot holds a box", func() error {
		held := false
		_ = host.Do(ctx, func(w *peer.World) {
			for _, b := range w.EntitiesOf(arena.SchemaBox) {
				if w.Authority(b) != w.Self() {
					held = true
				}
			}
		})
		if !held {
			return fmt.Errorf("no lock granted yet")
		}
		return nil
	})
	poll.Until(t, 30*time.Second, "equal replicas at rest", func() error {
		first := host.Status()
		for _, b := range bots {
			st := b.Status()
			if !st.Synced || st.Hash != first.Hash {
				return fmt.Errorf("bot %d: synced %v hash %016x, host %016x", st.Self, st.Synced, st.Hash, first.Hash)
			}
		}
		return nil
	})
}

// TestPassiveBotsComeToRest: a crowd of bots that stop moving leaves a world at rest — a standing
// avatar pushes no box, so no box is pinned against a wall or bounced between avatars forever,
// and the host's replica hash stops changing.
func TestPassiveBotsComeToRest(t *testing.T) {
	const bots = 64
	r := newRoom(t)
	host := r.join("host", signaling.KindHost, arena.New(arena.Config{}))
	poll.Until(t, 5*time.Second, "host", hosting(host))
	for i := range bots {
		r.join(fmt.Sprintf("bot%d", i), signaling.KindBot,
			arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i), MoveFor: 2 * time.Second}}))
	}
	poll.Until(t, 30*time.Second, "bots synced", func() error {
		for _, p := range r.peers[1:] {
			if st := p.Status(); !st.Synced {
				return fmt.Errorf("bot %d not synced", st.Self)
			}
		}
		return nil
	})
	const still = 3 * time.Second
	var hash uint64
	changed := time.Now()
	poll.Until(t, 30*time.Second, "host's hash unchanged for "+still.String(), func() error {
		st := host.Status()
		if st.Hash != hash {
			hash, changed = st.Hash, time.Now()
		}
		if since := time.Since(changed); since < still {
			return fmt.Errorf("hash %016x unchanged for %v only", hash, since.Round(time.Millisecond))
		}
		return nil
	})
}

// TestCompactValues: positions are 4 bytes (1 mm over [−32768, 32767], clamped), velocities
// 2–20 bytes of zigzag varints, and every value the arena writes passes its property's check.
func TestCompactValues(t *testing.T) {
	s, _ := arena.Schemas().Lookup(arena.SchemaBox)
	for _, tc := range []struct {
		in, want arena.Vec
	}{
		{arena.Vec{}, arena.Vec{}},
		{arena.Vec{X: arena.Width, Y: arena.Height}, arena.Vec{X: arena.Width, Y: arena.Height}},
		{arena.Vec{X: -678, Y: 32767}, arena.Vec{X: -678, Y: 32767}},
		{arena.Vec{X: -40000, Y: 1 << 30}, arena.Vec{X: -32768, Y: 32767}},
	} {
		b := arena.AppendVec(nil, tc.in)
		if len(b) != 4 || s.CheckValue(arena.BoxPos, b) != nil {
			t.Fatalf("position %+v: %x, %v", tc.in, b, s.CheckValue(arena.BoxPos, b))
		}
		if got := arena.ParseVec(b); got != tc.want {
			t.Errorf("position %+v → %+v, want %+v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    arena.Vec
		size int
	}{{arena.Vec{}, 2}, {arena.Vec{X: 2500, Y: -2500}, 4}, {arena.Vec{X: -1 << 31, Y: 1<<31 - 1}, 10}} {
		b := arena.AppendVel(nil, tc.v)
		if len(b) != tc.size || s.CheckValue(arena.BoxVel, b) != nil {
			t.Fatalf("velocity %+v: %x (%d bytes, want %d), %v", tc.v, b, len(b), tc.size, s.CheckValue(arena.BoxVel, b))
		}
		if got := arena.ParseVel(b); got != tc.v {
			t.Errorf("velocity %+v → %+v", tc.v, got)
		}
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, {0, 0, 0, 0, 0}} {
		if arena.ParseVec(bad) != (arena.Vec{}) {
			t.Errorf("ParseVec(%x) not zero", bad)
		}
	}
	if arena.ParseVel([]byte{0x80, 0}) != (arena.Vec{}) || arena.ParseVel([]byte{2, 2, 2}) != (arena.Vec{}) {
		t.Error("ParseVel accepted a malformed value")
	}
}

// TestSchemasMatchVectors ties the arena's table to testdata/schema/arena.json, the vector file
// the JavaScript arena is checked against (crdt/schema's TestCrossLanguageVectors writes it from a
// copy of this table, so that crdt/schema does not import the demo): a change to Schemas that is
// not made to the copy, and so not to the JavaScript, fails here.
func TestSchemasMatchVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "schema", "arena.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%016x", arena.Schemas().Fingerprint()); got != v.Fingerprint {
		t.Fatalf("arena.Schemas fingerprint %s, testdata/schema/arena.json says %s: change crdt/schema's gameTable too and run go test ./crdt/schema -run TestCrossLanguageVectors -update", got, v.Fingerprint)
	}
}
