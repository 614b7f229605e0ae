package follow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/follow"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// notes is a tiny game, not the arena: the host keeps a board of notes (schema 7, one text
// property) and adds one for every RPC a member sends.
type notes struct{}

var notesSchemas = schema.MustTable(schema.Schema{ID: 7, Name: "note", Properties: []schema.Property{
	{Name: "text", Component: 2048},
}})

const rpcAddNote = 1

func (notes) Schemas() *schema.Table { return notesSchemas }
func (notes) HostStart(*peer.World)  {}
func (notes) SpawnAvatar(*peer.World, peer.PeerInfo) (peer.Entity, error) {
	return 0, nil
}
func (notes) Tick(*peer.World, time.Duration) {}
func (notes) RPC(w *peer.World, _ peer.PeerIndex, typ uint32, data []byte) {
	if typ == rpcAddNote && w.IsHost() {
		_, _ = w.Spawn(7, nil, bytes.Clone(data))
	}
}

// texts reads the notes of a stream (a checkpoint) by merging it into a scratch replica.
func texts(t *testing.T, stream []byte) []string {
	t.Helper()
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(stream); err != nil {
		t.Fatal(err)
	}
	var out []string
	r.Range(func(e crdt.Entry) bool {
		if e.Component == 2048 && !e.Deleted && !r.EntityDeleted(e.Entity) {
			out = append(out, string(e.Data))
		}
		return true
	})
	slices.Sort(out)
	return out
}

func worldTexts(w *peer.World) []string {
	var out []string
	for _, e := range w.EntitiesOf(7) {
		v, _ := w.Get(e, 0)
		out = append(out, string(v))
	}
	slices.Sort(out)
	return out
}

// server is one life of a `concord serve`-like process: a store on dir, its writer, signaling
// with the checkpoint route, and a Keeper.
type server struct {
	url    string
	store  *durable.Store
	writer *durable.Writer
	keeper *follow.Keeper
	stop   func()
}

func startServer(t *testing.T, dir string, log zerolog.Logger) *server {
	t.Helper()
	st, err := durable.Open(durable.Config{Dir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{store: st, writer: durable.NewWriter(st, durable.WriterConfig{Logger: log})}
	sig := signaling.New(signaling.Config{Logger: log, Store: st, Checkpoints: durable.Seeds{Store: st}})
	hs := httptest.NewServer(sig.Handler())
	s.url = hs.URL
	api, err := link.NewAPI(link.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.keeper = follow.NewKeeper(follow.KeeperConfig{
		Rooms: sig.Rooms, Poll: 50 * time.Millisecond, Logger: log,
		Follower: func(ctx context.Context, room signaling.RoomID) (follow.Config, error) {
			seed, err := durable.LoadSeed(ctx, st, room)
			if err != nil && !errors.Is(err, durable.ErrNoCheckpoint) {
				return follow.Config{}, err
			}
			return follow.Config{Peer: peer.Config{Server: hs.URL, Transport: peer.PionTransport{API: api}, DigestInterval: 300 * time.Millisecond},
				Schemas: notesSchemas, Writer: s.writer, Seed: seed, Interval: 100 * time.Millisecond, Logger: log}, nil
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	kdone := make(chan struct{})
	go func() { defer close(kdone); _ = s.keeper.Run(ctx) }()
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-kdone // the followers' final checkpoints are queued
		s.writer.Close()
		_ = sig.Close()
		hs.Close()
		_ = api.Close()
		st.Close()
	}
	t.Cleanup(s.stop)
	return s
}

// join runs a peer of the notes game in room "board".
func join(t *testing.T, ctx context.Context, url, user string, kind signaling.Kind, app peer.App) *peer.Peer {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("who", user).Logger()
	api, err := link.NewAPI(link.Config{Logger: log.Level(zerolog.ErrorLevel)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := peer.New(peer.Config{Server: url, Room: "board", User: user, Kind: kind, App: app,
		Transport: peer.PionTransport{API: api}, Logger: log, DigestInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Run(ctx) }()
	t.Cleanup(func() { <-p.Done(); _ = api.Close() })
	return p
}

// TestFollowerKeepsCustomHostRoom: a room of a custom game hosted by a plain Go host (standing in
// for a browser tab or a user's host process; the server runs no host) is kept by the server's
// follower. The host writes notes and adds the ones a member asks for by RPC; once the room's
// checkpoint holds them (acknowledged), the host dies, everyone leaves, the server restarts on
// the same data, and a new host that fetches the checkpoint over HTTP restores them: a new
// member sees every acknowledged note.
func TestFollowerKeepsCustomHostRoom(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	dir := t.TempDir()
	s1 := startServer(t, dir, log)

	hctx, killHost := context.WithCancel(context.Background())
	defer killHost()
	host := join(t, hctx, s1.url, "tab", signaling.KindBrowser, notes{})
	poll.Until(t, 10*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return errors.New("not host")
		}
		return nil
	})
	mctx, leave := context.WithCancel(context.Background())
	defer leave()
	member := join(t, mctx, s1.url, "bot", signaling.KindBot, notes{})
	poll.Until(t, 10*time.Second, "member and follower synced", func() error {
		f, ok := s1.keeper.Follower("board")
		if !ok || !f.Synced() || !member.Status().Synced {
			return errors.New("not yet")
		}
		return nil
	})
	f, _ := s1.keeper.Follower("board")
	var want []string
	for i := range 3 {
		text := fmt.Sprintf("host note %d", i)
		want = append(want, text)
		if err := host.Do(context.Background(), func(w *peer.World) { _, _ = w.Spawn(7, nil, []byte(text)) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		text := fmt.Sprintf("member note %d", i)
		want = append(want, text)
		if err := member.Do(context.Background(), func(w *peer.World) { _ = w.SendRPC(rpcAddNote, []byte(text)) }); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	// The follower's view sees them, and notices.
	poll.Until(t, 10*time.Second, "the follower sees every note", func() error {
		var got []string
		if err := f.Do(context.Background(), func(v follow.View) {
			for _, e := range v.EntitiesOf(7) {
				b, _ := v.Get(e, 0)
				got = append(got, string(b))
			}
		}); err != nil {
			return err
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("follower sees %q", got)
		}
		return nil
	})
	select {
	case <-f.Changes(): // at the follower's next tick at the latest
	case <-time.After(5 * time.Second):
		t.Fatal("no change notice")
	}
	poll.Until(t, 10*time.Second, "notes acknowledged: the room's checkpoint holds them", func() error {
		c, err := s1.store.LoadCheckpoint(context.Background(), "board")
		if err != nil {
			return err
		}
		if got := texts(t, c.Data); !slices.Equal(got, want) {
			return fmt.Errorf("checkpoint holds %q", got)
		}
		return nil
	})

	// The host dies, the member leaves; the keeper stops the follower of the empty room.
	killHost()
	<-host.Done()
	leave()
	<-member.Done()
	poll.Until(t, 10*time.Second, "follower stopped", func() error {
		if len(s1.keeper.Followed()) != 0 {
			return errors.New("still following")
		}
		return nil
	})
	s1.stop()

	// The server restarts on the same data; a new host restores before its game starts.
	s2 := startServer(t, dir, log)
	seed, err := durable.FetchSeed(context.Background(), nil, s2.url, "board", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	host2 := join(t, ctx2, s2.url, "tab2", signaling.KindBrowser, durable.NewApp(notes{}, durable.AppConfig{Room: "board", Seed: seed.Data, SeedClock: seed.Clock}))
	poll.Until(t, 10*time.Second, "new host elected", func() error {
		if !host2.Status().IsHost {
			return errors.New("not host")
		}
		return nil
	})
	if _, err := durable.FetchSeed(context.Background(), nil, s2.url, "board", ""); !errors.Is(err, durable.ErrRoomLive) {
		t.Fatalf("checkpoint of a room with a host: %v, want ErrRoomLive", err)
	}
	member2 := join(t, ctx2, s2.url, "bot2", signaling.KindBot, notes{})
	poll.Until(t, 10*time.Second, "the new member sees every acknowledged note", func() error {
		var got []string
		if err := member2.Do(context.Background(), func(w *peer.World) { got = worldTexts(w) }); err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("member sees %q", got)
		}
		return nil
	})
}

// TestFollowerRefusesUnrestoredRoom: a room with a stored checkpoint whose first host did not
// restore it (an old client, a host that skipped FetchSeed) plays a new world; its follower
// checks the world against the stored checkpoint at its first sync and writes nothing, so the
// stored world is not replaced (the room is reported as not_restored).
func TestFollowerRefusesUnrestoredRoom(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	dir := t.TempDir()
	s := startServer(t, dir, log)
	// The stored world: one note, written by an earlier host at term 1.
	old := crdt.New(crdt.Config{})
	meta := schema.AppendMeta(nil, 7, nil)
	e := crdt.NewEntity(600, 0)
	for _, m := range []crdt.Message{
		{Type: crdt.PutComponent, Entity: e, Component: schema.ComponentMeta, Timestamp: 5, Data: meta},
		{Type: crdt.PutComponent, Entity: e, Component: 2048, Timestamp: 5, Data: []byte("the stored note")},
	} {
		old.Merge(&m)
	}
	if err := s.store.SaveCheckpoint(context.Background(), durable.Checkpoint{Room: "board", Term: 1, Clock: 5, Data: old.AppendState(nil)}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := join(t, ctx, s.url, "tab", signaling.KindBrowser, notes{}) // no seed: a fresh world
	poll.Until(t, 10*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return errors.New("not host")
		}
		return nil
	})
	if err := host.Do(ctx, func(w *peer.World) { _, _ = w.Spawn(7, nil, []byte("a new note")) }); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the follower refuses the room", func() error {
		if why := s.writer.RefusedRooms()["board"]; why != "not_restored" {
			return fmt.Errorf("refused rooms %v", s.writer.RefusedRooms())
		}
		return nil
	})
	cancel()
	<-host.Done()
	poll.Until(t, 10*time.Second, "follower stopped", func() error {
		if len(s.keeper.Followed()) != 0 {
			return errors.New("still following")
		}
		return nil
	})
	s.stop() // the follower's final checkpoint too is refused
	st, err := durable.Open(durable.Config{Dir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.LoadCheckpoint(context.Background(), "board")
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(t, c.Data); !slices.Equal(got, []string{"the stored note"}) {
		t.Fatalf("stored notes %q, want the stored note only", got)
	}
}

// TestFollowerBoundsWorld: a host that grows the world past the follower's bound (a hostile one
// feeding garbage) makes the follower leave (ErrWorldTooLarge) and write nothing of that world.
func TestFollowerBoundsWorld(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	dir := t.TempDir()
	st, err := durable.Open(durable.Config{Dir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	writer := durable.NewWriter(st, durable.WriterConfig{Logger: log})
	defer writer.Close()
	sig := signaling.New(signaling.Config{Logger: log})
	hs := httptest.NewServer(sig.Handler())
	defer hs.Close()
	defer sig.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := join(t, ctx, hs.URL, "tab", signaling.KindBrowser, notes{})
	poll.Until(t, 10*time.Second, "host elected", func() error {
		if !host.Status().IsHost {
			return errors.New("not host")
		}
		return nil
	})
	api, err := link.NewAPI(link.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	f, err := follow.New(follow.Config{Peer: peer.Config{Server: hs.URL, Room: "board", Transport: peer.PionTransport{API: api}},
		Schemas: notesSchemas, Writer: writer, Interval: time.Hour, MaxWorld: 4 << 10, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	poll.Until(t, 10*time.Second, "follower synced", func() error {
		if !f.Synced() {
			return errors.New("not yet")
		}
		return nil
	})
	big := bytes.Repeat([]byte("x"), 1000)
	if err := host.Do(ctx, func(w *peer.World) {
		for range 8 {
			_, _ = w.Spawn(7, nil, big)
		}
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, follow.ErrWorldTooLarge) {
			t.Fatalf("Run: %v, want ErrWorldTooLarge", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not leave")
	}
	writer.Close()
	// A checkpoint of the world before it grew may be there; none of the oversized one.
	c, err := st.LoadCheckpoint(context.Background(), "board")
	if err == nil && len(texts(t, c.Data)) > 0 {
		t.Fatalf("a checkpoint of the oversized world: %d notes", len(texts(t, c.Data)))
	} else if err != nil && !errors.Is(err, durable.ErrNoCheckpoint) {
		t.Fatal(err)
	}
}
