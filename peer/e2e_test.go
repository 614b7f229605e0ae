package peer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

type room struct {
	t      *testing.T
	url    string
	server *signaling.Server
	api    *link.API
	ctx    context.Context
	peers  []*peer.Peer
	errs   chan error
}

func newRoom(t *testing.T, rooms map[signaling.RoomID]signaling.RoomConfig) *room {
	t.Helper()
	return newRoomWith(t, signaling.Config{Rooms: rooms})
}

// newRoomWith is newRoom on a signaling server of configuration cfg (its Logger the test's).
func newRoomWith(t *testing.T, cfg signaling.Config) *room {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	cfg.Logger = log
	srv := signaling.New(cfg)
	hs := httptest.NewServer(srv.Handler())
	api, err := link.NewAPI(link.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &room{t: t, url: hs.URL, server: srv, api: api, ctx: ctx, errs: make(chan error, 64)}
	t.Cleanup(func() {
		cancel()
		for _, p := range r.peers {
			<-p.Done()
		}
		_ = srv.Close()
		hs.Close()
		_ = api.Close()
	})
	return r
}

func (r *room) join(user string, kind signaling.Kind, app peer.App) *peer.Peer {
	r.t.Helper()
	return r.joinWith(r.ctx, user, kind, app, nil)
}

// joinWith starts a peer under ctx, letting tweak adjust its Config.
func (r *room) joinWith(ctx context.Context, user string, kind signaling.Kind, app peer.App, tweak func(*peer.Config)) *peer.Peer {
	r.t.Helper()
	api, err := link.NewAPI(link.Config{Logger: zerolog.New(zerolog.NewTestWriter(r.t)).Level(zerolog.ErrorLevel)})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = api.Close() })
	cfg := peer.Config{
		Server: r.url, Room: "arena", User: user, Kind: kind, App: app,
		Transport:      peer.PionTransport{API: api},
		Logger:         zerolog.New(zerolog.NewTestWriter(r.t)).Level(zerolog.WarnLevel).With().Str("who", user).Logger(),
		ReportInterval: 200 * time.Millisecond, DigestInterval: 300 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	p, err := peer.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.peers = append(r.peers, p)
	go func() { r.errs <- p.Run(ctx) }()
	return p
}

// joinHost starts a dedicated host running app and waits until it hosts.
func (r *room) joinHost(app peer.App) *peer.Peer {
	r.t.Helper()
	host := r.join("host", signaling.KindHost, app)
	poll.Until(r.t, 5*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host yet")
		}
		return nil
	})
	return host
}

func converged(peers []*peer.Peer) error {
	var first peer.Status
	for i, p := range peers {
		st := p.Status()
		if !st.Synced {
			return fmt.Errorf("peer %d not synced", st.Self)
		}
		if i == 0 {
			first = st
			continue
		}
		if st.Hash != first.Hash || st.Entities != first.Entities {
			return fmt.Errorf("peer %d hash %016x/%d entities, peer %d %016x/%d", st.Self, st.Hash, st.Entities, first.Self, first.Hash, first.Entities)
		}
	}
	return nil
}

func TestArenaDedicatedHostAndBots(t *testing.T) {
	r := newRoom(t, map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}})
	host := r.join("host", signaling.KindHost, arena.New(arena.Config{}))
	poll.Until(t, 5*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host yet")
		}
		return nil
	})
	for i := range 4 {
		r.join(fmt.Sprintf("bot%d", i), signaling.KindBot, arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i), MoveFor: 2 * time.Second}}))
	}
	poll.Until(t, 30*time.Second, "all replicas equal at rest", func() error { return converged(r.peers) })
	st := host.Status()
	if st.Entities != 1+8+4 {
		t.Fatalf("host has %d entities, want room + 8 boxes + 4 avatars", st.Entities)
	}
}

func TestWriteWithoutAuthorityRejected(t *testing.T) {
	r := newRoom(t, nil)
	host := r.join("host", signaling.KindHost, arena.New(arena.Config{Boxes: 2}))
	poll.Until(t, 5*time.Second, "host", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host")
		}
		return nil
	})
	bot := r.join("mallory", signaling.KindBot, arena.New(arena.Config{}))
	poll.Until(t, 10*time.Second, "synced", func() error { return converged(r.peers) })

	var box peer.Entity
	var before []byte
	ctx := context.Background()
	if err := bot.Do(ctx, func(w *peer.World) {
		box = w.EntitiesOf(arena.SchemaBox)[0]
		v, _ := w.Get(box, arena.BoxPos)
		before = append([]byte(nil), v...)
		if err := w.Set(box, arena.BoxPos, arena.AppendVec(nil, arena.Vec{X: 1, Y: 1})); err == nil {
			t.Error("World.Set on a host-owned box succeeded on a member")
		}
	}); err != nil {
		t.Fatal(err)
	}
	// Forge the write on the wire: an EntityUpdates for the host's box, stamped far in the future.
	width, _ := netmsg.MaskWidth(2)
	forged := netmsg.AppendEntityUpdates(nil, &netmsg.EntityUpdates{Time: 1 << 30, Updates: []netmsg.Update{{
		NetworkID: uint64(box), Width: width, Mask: 1, Data: arena.AppendVec(nil, arena.Vec{X: 1, Y: 1}),
	}}})
	poll.Until(t, 5*time.Second, "rejection counted", func() error {
		if !bot.SendToHostForTest(link.Unreliable, forged) {
			return fmt.Errorf("no link")
		}
		// Stamped 2³⁰ ahead, the write is refused by the stamp bound before authority rules.
		if st := host.Status(); st.Rejected == 0 && st.Refused == 0 {
			return fmt.Errorf("no rejection yet")
		}
		return nil
	})
	if err := host.Do(ctx, func(w *peer.World) {
		v, _ := w.Get(box, arena.BoxPos)
		if string(v) != string(before) {
			t.Errorf("box moved by a forged write: %x, was %x", v, before)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

func TestLateJoinerLargeSnapshot(t *testing.T) {
	const n = 10000
	r := newRoom(t, nil)
	host := r.join("host", signaling.KindHost, arena.New(arena.Config{Boxes: 1}))
	poll.Until(t, 5*time.Second, "host", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host")
		}
		return nil
	})
	if err := host.Do(context.Background(), func(w *peer.World) {
		for i := range n {
			pos := arena.Vec{X: int32(1000 + i%17000), Y: int32(1000 + (i/17000)*100)}
			if _, err := w.Spawn(arena.SchemaBox, nil, arena.AppendVec(nil, pos), arena.AppendVel(nil, arena.Vec{})); err != nil {
				t.Fatal(err)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	r.join("late", signaling.KindBot, arena.New(arena.Config{}))
	poll.Until(t, 60*time.Second, "late joiner matches the host", func() error { return converged(r.peers) })
	if got := host.Status().Entities; got < n {
		t.Fatalf("host has %d entities, want ≥ %d", got, n)
	}
}

// TestStandbyLinkPromoted: with Config.Standby, members keep an idle link to the next host in
// election order; when the host goes, the members promote it instead of connecting anew, and the
// room converges.
func TestStandbyLinkPromoted(t *testing.T) {
	testStandby(t, func(c *peer.Config) { c.Standby = true }, true)
}

// TestStandbyLinkByDefault: the zero Config keeps standby links in a small room of bots
// (Config.StandbyMaxMembers), and a migration promotes them.
func TestStandbyLinkByDefault(t *testing.T) {
	testStandby(t, func(*peer.Config) {}, true)
}

// TestStandbyLinkOff: no standby link with NoStandby, nor by default in a room larger than
// StandbyMaxMembers; the migration makes new links and the room converges.
func TestStandbyLinkOff(t *testing.T) {
	t.Run("NoStandby", func(t *testing.T) {
		testStandby(t, func(c *peer.Config) { c.NoStandby = true }, false)
	})
	t.Run("StandbyMaxMembers", func(t *testing.T) {
		testStandby(t, func(c *peer.Config) { c.StandbyMaxMembers = 3 }, false) // 5 members, 4 after the kill
	})
}

// killableHost starts a dedicated host with tweak under a context of its own, whose cancel kills it,
// and waits until it hosts.
func (r *room) killableHost(tweak func(*peer.Config)) (*peer.Peer, context.CancelFunc) {
	r.t.Helper()
	ctx, kill := context.WithCancel(r.ctx)
	host := r.joinWith(ctx, "host", signaling.KindHost, arena.New(arena.Config{}), tweak)
	poll.Until(r.t, 5*time.Second, "host", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host")
		}
		return nil
	})
	return host, kill
}

// testStandby runs a host and four bots with tweak, checks that the bots but the next host keep
// a standby link (standby) or none, kills the host and checks the migration: converged, and
// the standby links promoted or none.
func testStandby(t *testing.T, tweak func(*peer.Config), standby bool) {
	r := newRoom(t, nil)
	host, killHost := r.killableHost(tweak)
	var bots []*peer.Peer
	for i := range 4 {
		bots = append(bots, r.joinWith(r.ctx, fmt.Sprintf("bot%d", i), signaling.KindBot,
			arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i), MoveFor: time.Second}}), tweak))
	}
	want := 0
	if standby {
		want = len(bots) - 1
	}
	poll.Until(t, 20*time.Second, "synced, standby links up", func() error {
		if err := converged(append([]*peer.Peer{host}, bots...)); err != nil {
			return err
		}
		// Every bot but the next host holds an open standby link (standby), or none does.
		n := 0
		for _, b := range bots {
			if b.Status().Standby {
				n++
			}
		}
		if n < want {
			return fmt.Errorf("%d bots with a standby link, want %d", n, want)
		}
		return nil
	})
	if !standby {
		// A member makes its standby link 250 ms after its sync: watch for one over a second.
		since := time.Now()
		poll.Until(t, 5*time.Second, "a second without a standby link", func() error {
			for _, b := range bots {
				if b.Status().Standby {
					t.Fatalf("bot %d keeps a standby link", b.Status().Self)
				}
			}
			if time.Since(since) < time.Second {
				return fmt.Errorf("watched for %v", time.Since(since))
			}
			return nil
		})
	}
	killHost()
	<-host.Done()
	poll.Until(t, 20*time.Second, "converged under a bot", func() error {
		for _, b := range bots {
			if st := b.Status(); st.Host == host.Status().Self {
				return fmt.Errorf("bot %d still follows the old host", st.Self)
			}
		}
		return converged(bots)
	})
	var promoted uint64
	for _, b := range bots {
		promoted += b.Status().StandbyPromoted
	}
	if promoted < uint64(want) || !standby && promoted != 0 {
		t.Fatalf("%d standby links promoted, want %d (every member but the new host, or none without standby links)", promoted, want)
	}
	if got := bots[0].Status().Entities; got != 1+8+4 {
		t.Fatalf("%d entities after migration, want room + 8 boxes + 4 avatars", got)
	}
}

// TestOwnerWriteAfterRestamp: a member's forged write to another member's avatar makes the host
// re-stamp the avatar above the forgery. The owner, which has not heard of the re-stamp yet, then
// moves its avatar at a stamp below the host's: its write is newer than the value the host
// re-stamped, so it must win (before, the host kept the re-stamped older value and the owner's
// last move was lost).
func TestOwnerWriteAfterRestamp(t *testing.T) {
	r := newRoom(t, nil)
	host := r.joinHost(arena.New(arena.Config{Boxes: 1}))
	owner := r.join("owner", signaling.KindBot, arena.New(arena.Config{}))
	mallory := r.join("mallory", signaling.KindBot, arena.New(arena.Config{}))
	poll.Until(t, 10*time.Second, "synced", func() error {
		if err := converged(r.peers); err != nil {
			return err
		}
		return owner.Do(context.Background(), func(w *peer.World) {}) // loop alive
	})
	ctx := context.Background()
	var avatar peer.Entity
	var before crdt.Timestamp
	poll.Until(t, 5*time.Second, "owner's avatar", func() error {
		var err error
		if e := owner.Do(ctx, func(w *peer.World) {
			a, ok := w.AvatarOf(owner.Status().Self)
			if !ok {
				err = fmt.Errorf("no avatar yet")
				return
			}
			avatar = a
			_, before, _, _ = w.Replica().Get(crdt.Entity(a), 1100)
		}); e != nil {
			return e
		}
		return err
	})
	avatarPos := func(p *peer.Peer) (v []byte, ts crdt.Timestamp) {
		if err := p.Do(ctx, func(w *peer.World) {
			d, s, _, _ := w.Replica().Get(crdt.Entity(avatar), 1100)
			v, ts = append([]byte(nil), d...), s
		}); err != nil {
			t.Fatal(err)
		}
		return v, ts
	}
	width, _ := netmsg.MaskWidth(3)
	update := func(ts crdt.Timestamp, pos arena.Vec) []byte {
		return netmsg.AppendEntityUpdates(nil, &netmsg.EntityUpdates{Time: uint64(ts), Updates: []netmsg.Update{{
			NetworkID: uint64(avatar), Width: width, Mask: 1, Data: arena.AppendVec(nil, pos),
		}}})
	}
	// Mallory writes the owner's avatar 1000 stamps ahead: rejected, and re-stamped above that.
	forged := before + 1000
	poll.Until(t, 5*time.Second, "host re-stamped the avatar", func() error {
		if !mallory.SendToHostForTest(link.Unreliable, update(forged, arena.Vec{X: 1, Y: 1})) {
			return fmt.Errorf("no link")
		}
		if _, ts := avatarPos(host); ts <= forged {
			return fmt.Errorf("avatar stamped %d, forgery %d", ts, forged)
		}
		return nil
	})
	// The owner moves twice, stamped below the re-stamp but after its last write: its last move is
	// kept, not only its first one. The reliable channel keeps the two moves in order.
	moved := arena.AppendVec(nil, arena.Vec{X: 4321, Y: 1234})
	if !owner.SendToHostForTest(link.Reliable, update(before+1, arena.Vec{X: 1111, Y: 2222})) ||
		!owner.SendToHostForTest(link.Reliable, update(before+2, arena.Vec{X: 4321, Y: 1234})) {
		t.Fatal("no link")
	}
	poll.Until(t, 5*time.Second, "the owner's last move kept", func() error {
		for _, p := range []*peer.Peer{host, owner, mallory} {
			if v, _ := avatarPos(p); string(v) != string(moved) {
				return fmt.Errorf("peer %d: avatar at %x, want %x", p.Status().Self, v, moved)
			}
		}
		return nil
	})
	poll.Until(t, 10*time.Second, "converged", func() error { return converged(r.peers) })
}

// TestRelayedDeletionAdmitted: a member's first batch after its sync snapshot may carry a
// deletion the previous host made of another member's avatar (say, of a member it took as gone).
// A deletion is final in every replica that holds it, so the host admits it whoever owns the
// entity, and gives the member whose avatar it was a new one; the room converges. Outside that
// window the same deletion is refused.
func TestRelayedDeletionAdmitted(t *testing.T) {
	r := newRoom(t, nil)
	host := r.joinHost(arena.New(arena.Config{Boxes: 1}))
	owner := r.join("owner", signaling.KindBot, arena.New(arena.Config{}))
	other := r.join("other", signaling.KindBot, arena.New(arena.Config{}))
	poll.Until(t, 10*time.Second, "synced", func() error { return converged(r.peers) })
	ctx := context.Background()
	avatarOf := func(p *peer.Peer, idx peer.PeerIndex) (e peer.Entity, ok bool) {
		if err := p.Do(ctx, func(w *peer.World) { e, ok = w.AvatarOf(idx) }); err != nil {
			t.Fatal(err)
		}
		return e, ok
	}
	old, ok := avatarOf(host, owner.Status().Self)
	if !ok {
		t.Fatal("the owner has no avatar")
	}
	del := crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.Entity(old)}
	batch := netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: uint64(host.Status().Term), Messages: crdt.AppendMessage(nil, &del)})
	deleted := func() bool {
		var d bool
		if err := host.Do(ctx, func(w *peer.World) { d = w.Replica().EntityDeleted(crdt.Entity(old)) }); err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Outside the window: refused, the avatar lives.
	rejected := host.Status().Rejected
	if !other.SendToHostForTest(link.Reliable, batch) {
		t.Fatal("no link")
	}
	poll.Until(t, 5*time.Second, "the deletion refused", func() error {
		if host.Status().Rejected == rejected {
			return fmt.Errorf("not handled yet")
		}
		return nil
	})
	if deleted() {
		t.Fatal("a deletion outside the first batch was admitted")
	}

	// In the window: admitted, and the owner gets a new avatar everywhere. The window is the
	// member's next batch, and the member may still be sending its own answers to the refusal
	// (its corrections of the re-asserted avatar): one of those can take the window first, so
	// the window is opened and the deletion sent again until the host holds it.
	lastTry := time.Time{}
	poll.Until(t, 10*time.Second, "the deletion admitted", func() error {
		if deleted() {
			return nil
		}
		if time.Since(lastTry) > 250*time.Millisecond {
			lastTry = time.Now()
			if !host.ReopenFirstBatchForTest(other.Status().Self) || !other.SendToHostForTest(link.Reliable, batch) {
				t.Fatal("no window or no link")
			}
		}
		return fmt.Errorf("not deleted on the host")
	})
	poll.Until(t, 10*time.Second, "the deletion admitted and a new avatar everywhere", func() error {
		if !deleted() {
			return fmt.Errorf("not deleted on the host")
		}
		for _, p := range r.peers {
			e, ok := avatarOf(p, owner.Status().Self)
			if !ok || e == old {
				return fmt.Errorf("peer %d: the owner's avatar is %v (%v), the old one was %v", p.Status().Self, e, ok, old)
			}
		}
		return converged(r.peers)
	})
}

// TestAttackStampFreezeOverLinks: over links and a signaling server, a member stamping its own
// avatar's writes 2³²−1 is refused, dropped after it insists (Status.Offenders), the host's clock
// keeps its headroom, and the room converges to one hash afterwards.
func TestAttackStampFreezeOverLinks(t *testing.T) {
	r := newRoom(t, nil)
	host := r.join("host", signaling.KindHost, arena.New(arena.Config{Boxes: 2}))
	poll.Until(t, 5*time.Second, "host", func() error {
		if !host.Status().IsHost {
			return fmt.Errorf("not host")
		}
		return nil
	})
	r.join("honest", signaling.KindBot, arena.New(arena.Config{}))
	mallory := r.join("mallory", signaling.KindBot, arena.New(arena.Config{}))
	poll.Until(t, 10*time.Second, "synced", func() error { return converged(r.peers) })
	var avatar peer.Entity
	if err := mallory.Do(context.Background(), func(w *peer.World) { avatar, _ = w.AvatarOf(w.Self()) }); err != nil {
		t.Fatal(err)
	}
	width, _ := netmsg.MaskWidth(2)
	forged := netmsg.AppendEntityUpdates(nil, &netmsg.EntityUpdates{Time: 1<<32 - 1, Updates: []netmsg.Update{{
		NetworkID: uint64(avatar), Width: width, Mask: 1, Data: arena.AppendVec(nil, arena.Vec{X: 7, Y: 7}),
	}}})
	poll.Until(t, 10*time.Second, "the attacker dropped", func() error {
		mallory.SendToHostForTest(link.Unreliable, forged)
		if host.Status().Offenders == 0 {
			return fmt.Errorf("refused %d, not dropped yet", host.Status().Refused)
		}
		return nil
	})
	if c := host.Status().Clock; c > 1<<20 {
		t.Fatalf("host clock %d after the attack", c)
	}
	poll.Until(t, 15*time.Second, "converged after the attack", func() error { return converged(r.peers) })
}
