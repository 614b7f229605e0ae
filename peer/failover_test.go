package peer_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// TestResumeFailsOverToNextNode: the peers of a room know two signaling nodes, A and B (two
// independent servers with one secret, as the nodes of a cluster share CONCORD_SECRET), and join
// through A, the first of their list. A crashes for good: every peer redials the next node of its
// list, B, which knows nothing of the room, and resumes its index there with its resume token; the
// host stays host in its term, the room converges with the migration invariant intact, and a member
// joining B afterwards gets an index nobody held.
func TestResumeFailsOverToNextNode(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	secret := []byte("cluster secret, thirty-two bytes")
	cfg := signaling.Config{
		Logger: log.With().Str("who", "signaling").Logger(),
		Secret: secret,
		Rooms:  map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}},
	}
	a, b := newOutageServer(t, cfg), newOutageServer(t, cfg)
	r := &migRoom{t: t, url: a.url() + ", " + b.url(), tr: &peer.MemoryTransport{Pipe: link.PipeConfig{Seed: 81}}, log: log}
	r.configure = func(c *peer.Config) {
		kind := signaling.KindBot
		if c.User == "host" {
			kind = signaling.KindHost
		}
		tok, err := signaling.IssueToken(secret, signaling.Claims{Room: "arena", User: c.User, Kind: kind, MayHost: true, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		c.Token = tok
		c.RedialMin, c.RedialMax = 50*time.Millisecond, 500*time.Millisecond
	}
	t.Cleanup(func() {
		for _, p := range r.peers {
			p.cancel()
		}
		r.wg.Wait()
	})

	h, bots := startRoom(r, 4, 800)
	all := append([]*migPeer{h}, bots...)
	for _, p := range all {
		if st := p.Status(); st.Server != a.url() {
			t.Fatalf("%s joined through %q, want the first node %s", p.name, st.Server, a.url())
		}
	}
	if rs := b.rooms(); len(rs) != 0 {
		t.Fatalf("node B has rooms %+v before the failover", rs)
	}
	r.play(400 * time.Millisecond)
	before := h.Status()
	idx := indices(all)

	a.crash() // for good: A never comes back
	start := time.Now()
	rec := r.record(all)
	poll.Until(t, 30*time.Second, "every peer resumed on node B", func() error {
		for _, p := range all {
			st := p.Status()
			if !st.Signaling || st.Server != b.url() || st.ResumeRefused != "" {
				return fmt.Errorf("%s: signaling %v via %q, refused %q", p.name, st.Signaling, st.Server, st.ResumeRefused)
			}
		}
		return nil
	})
	t.Logf("every peer resumed on node B %v after node A crashed", time.Since(start).Round(time.Millisecond))
	rec.Absorb(r.record(all))
	if got := indices(all); !slices.Equal(got, idx) {
		t.Fatalf("peer indices after the failover %v, want %v", got, idx)
	}
	poll.Until(t, 10*time.Second, "node B knows the room as it was", func() error {
		return checkRoom(b, idx, before.Term, before.Self)
	})

	late := r.start("late", "", signaling.KindBot, 0)
	if self := late.Status().Self; slices.Contains(idx, self) {
		t.Fatalf("a member joining node B got index %d, already held in %v", self, idx)
	}
	all = append(all, late)
	r.waitSynced(all, h)
	rec.Absorb(r.record(all)) // the late member's avatar
	r.pause()
	final := convergeSame(r, all, before.Term, before.Self)
	r.check("failover to the next node", rec, final, nil)
	r.checkWrites("failover to the next node", bots, final)
}

// TestConfigServerList: Config.Server takes a comma-separated list of node URLs and refuses a bad
// one, naming it.
func TestConfigServerList(t *testing.T) {
	app := arena.New(arena.Config{})
	for _, tc := range []struct {
		server string
		ok     bool
	}{
		{"http://127.0.0.1:1", true},
		{"http://127.0.0.1:1, http://127.0.0.1:2,ws://127.0.0.1:3/ws", true},
		{"http://127.0.0.1:1,", false},
		{"http://127.0.0.1:1,ftp://x", false},
	} {
		_, err := peer.New(peer.Config{Server: tc.server, Room: "arena", App: app})
		if (err == nil) != tc.ok {
			t.Errorf("Server %q: err %v, want ok=%v", tc.server, err, tc.ok)
		}
	}
	if !peer.ICEAuto.Loopback("http://127.0.0.1:1,http://[::1]:2") || peer.ICEAuto.Loopback("http://127.0.0.1:1,http://10.0.0.2:2") {
		t.Error("ICEAuto: a list is loopback-only exactly when every node is on loopback")
	}
}
