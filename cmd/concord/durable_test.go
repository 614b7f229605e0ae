package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/harness/migrationcheck"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// metric reads one unlabelled sample from serve's /metrics.
func metric(url, name string) (float64, error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /metrics", name)
}

// waitCheckpoints waits until serve has written n checkpoints more than it had at the call.
func waitCheckpoints(t *testing.T, url string, n float64) {
	t.Helper()
	base, err := metric(url, "concord_checkpoints_written_total")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "checkpoints written", func() error {
		v, err := metric(url, "concord_checkpoints_written_total")
		if err == nil && v < base+n {
			err = fmt.Errorf("%v written, want %v", v, base+n)
		}
		return err
	})
}

// sceneState is the state @dcl/ecs computes for example-scene.crdt.
func sceneState(t *testing.T) crdt.StateJSON {
	t.Helper()
	b, err := os.ReadFile("../../crdt/testdata/dcl/example-scene.state.json")
	if err != nil {
		t.Fatal(err)
	}
	var st crdt.StateJSON
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// holdsState reports the first entry of want that got lacks (got may hold more: the arena's own
// entities next to the scene's).
func holdsState(got, want crdt.StateJSON) error { return migrationcheck.HoldsState(got, want) }

func stateOf(t *testing.T, stream []byte) crdt.StateJSON {
	t.Helper()
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(stream); err != nil {
		t.Fatal(err)
	}
	return r.StateJSON()
}

// TestServeSceneAndExport: `serve --scene arena=example-scene.crdt --data DIR` opens the arena with
// the scene's entities (a bot's replica holds the state @dcl/ecs computes for the file); after
// serve stops, `crdt export` gives the room back, and `crdt state` of it holds that state too.
// The checkpoint interval is an hour: what the bot writes after the first checkpoint reaches the
// data only through the checkpoint serve writes at shutdown.
func TestServeSceneAndExport(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", DedicatedHost: true, Data: dir,
		Scenes: map[signaling.RoomID]string{"arena": "../../crdt/testdata/dcl/example-scene.crdt"}, CheckpointInterval: time.Hour, Metrics: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()

	want := sceneState(t)
	bctx, stopBot := context.WithCancel(ctx)
	var wg sync.WaitGroup
	bot := startTestBot(t, bctx, &wg, s.url, "viewer", arena.New(arena.Config{}), log)
	poll.Until(t, 30*time.Second, "the bot holds the scene", func() error {
		var err error
		if e := bot.Do(bctx, func(w *peer.World) { err = holdsState(w.Replica().StateJSON(), want) }); e != nil {
			return e
		}
		return err
	})
	waitCheckpoints(t, s.url, 1) // the one a new host writes at once
	var avatar peer.Entity
	pos := arena.AppendVec(nil, arena.Vec{X: 12345, Y: -678})
	var setErr error
	var moved uint64 // the bot's replica hash after the move
	if err := bot.Do(bctx, func(w *peer.World) {
		var ok bool
		if avatar, ok = w.AvatarOf(w.Self()); ok {
			setErr = w.Set(avatar, arena.AvatarPos, pos)
			moved = w.Replica().Hash()
		} else {
			setErr = fmt.Errorf("the bot has no avatar")
		}
	}); err != nil || setErr != nil {
		t.Fatal(err, setErr)
	}
	poll.Until(t, 30*time.Second, "the host holds the bot's move", func() error {
		rooms, err := fetchRooms(s.url)
		if err != nil {
			return err
		}
		for _, r := range rooms {
			for _, m := range r.Members {
				if m.PeerIndex == r.Host && m.Replica != nil && m.Replica.Hash == moved {
					return nil
				}
			}
		}
		return fmt.Errorf("rooms %+v, bot hash %016x", rooms, moved)
	})
	cancel() // serve stops with the bot in the room: the host writes its last checkpoint
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	stopBot()
	wg.Wait()

	var out bytes.Buffer
	if code := run([]string{"crdt", "export", "--data", dir, "--room", "arena"}, nil, &out, &out); code != 0 {
		t.Fatalf("crdt export: %d %s", code, out.String())
	}
	exported := filepath.Join(t.TempDir(), "room.crdt")
	if err := os.WriteFile(exported, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCmd(t, nil, "crdt", "state", exported)
	if code != 0 {
		t.Fatalf("crdt state: %s", stderr)
	}
	var got crdt.StateJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if err := holdsState(got, want); err != nil {
		t.Fatalf("the exported room lacks the scene: %v", err)
	}
	// The export is canonical: exporting what it holds gives the same bytes.
	if again := stateOf(t, out.Bytes()); len(again.LWW) != len(got.LWW) {
		t.Fatalf("export and its state disagree")
	}
	r := crdt.New(crdt.Config{})
	_, _ = r.MergeStream(out.Bytes())
	if !bytes.Equal(r.AppendState(nil), out.Bytes()) {
		t.Fatal("crdt export is not in canonical AppendState order")
	}
	if got, _, _, _ := r.Get(avatar, 1100); !bytes.Equal(got, pos) {
		t.Fatalf("avatar %v position in the export %x, want %x (the shutdown checkpoint)", avatar, got, pos)
	}
}

// TestServeBadScene: a truncated scene, and a truncated checkpoint, keep their rooms closed with an
// error naming the room, the file or JetStream subject and the byte offset; the other rooms open.
// The checkpoint wins over the scene of its room, bad as it is: no room opens with half a world.
func TestServeBadScene(t *testing.T) {
	good := "../../crdt/testdata/dcl/example-scene.crdt"
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "cut.crdt")
	if err := os.WriteFile(bad, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	// The offsets themselves are checked in internal/durable TestCorruptCheckpoint.
	_, verr := durable.Validate("broken", bad, b[:len(b)-3])
	if verr == nil || !strings.Contains(verr.Error(), `room "broken": `+bad+": byte offset ") {
		t.Fatalf("Validate of a truncated scene: %v", verr)
	}
	dir := t.TempDir()
	st, err := durable.Open(durable.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveCheckpoint(context.Background(), durable.Checkpoint{Room: "stale", Term: 3, Data: b[:len(b)-3]}); err != nil {
		t.Fatal(err)
	}
	_, cerr := durable.Validate("stale", st.Source("stale"), b[:len(b)-3])
	if cerr == nil || !strings.Contains(cerr.Error(), `room "stale": `+dir+": JetStream CONCORD_CHECKPOINTS concord.checkpoint.stale: byte offset ") {
		t.Fatalf("Validate of a truncated checkpoint: %v", cerr)
	}
	st.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncbuf.Buffer
	log := zerolog.New(&logs).Level(zerolog.WarnLevel)
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", DedicatedHost: true, Data: dir,
		Scenes: map[signaling.RoomID]string{"broken": bad, "good": good, "stale": good}}, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()
	poll.Until(t, 30*time.Second, "arena and good hosted by their dedicated hosts", func() error {
		rooms, err := fetchRooms(s.url)
		if err != nil {
			return err
		}
		hosted := map[signaling.RoomID]bool{}
		for _, r := range rooms {
			for _, m := range r.Members {
				hosted[r.Room] = hosted[r.Room] || (m.PeerIndex == r.Host && m.Kind == signaling.KindHost)
			}
		}
		if !hosted["arena"] || !hosted["good"] || len(rooms) != 2 {
			return fmt.Errorf("rooms %+v", rooms)
		}
		return nil
	})
	msg := logs.Bytes()
	for _, err := range []error{verr, cerr} {
		want, _ := json.Marshal(err.Error()) // as the JSON log quotes it
		if !bytes.Contains(msg, want[1:len(want)-1]) {
			t.Fatalf("logs lack %q:\n%s", want, msg)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// worldView is what the kill test compares: the live entities and which are avatars.
type worldView struct {
	self    peer.PeerIndex
	term    peer.Term
	live    map[peer.Entity]bool
	avatars map[peer.Entity]peer.PeerIndex
	deleted func(peer.Entity) bool
}

func readWorld(ctx context.Context, p *peer.Peer) (*worldView, error) {
	v := &worldView{live: map[peer.Entity]bool{}, avatars: map[peer.Entity]peer.PeerIndex{}}
	err := p.Do(ctx, func(w *peer.World) {
		v.self, v.term = w.Self(), w.Term()
		for _, e := range w.Entities() {
			v.live[e] = true
			if rec := w.AuthorityRecord(e); rec.Kind == authority.KindAvatar {
				v.avatars[e] = peer.PeerIndex(rec.Peer)
			}
		}
		del := map[uint16]uint16{}
		w.Replica().RangeDeleted(func(n, ver uint16) bool { del[n] = ver; return true })
		v.deleted = func(e peer.Entity) bool { d, ok := del[e.Number()]; return ok && d >= e.Version() }
	})
	return v, err
}

// killScene is a running `serve --data` with six bots in its arena, synced, and a checkpoint
// written after they all were.
type killScene struct {
	bin, dir, addr, url string
	serve               *hostProcess
	bots                []*peer.Peer
	wg                  sync.WaitGroup
	log                 zerolog.Logger
}

// startKillScene builds concord, runs serve on a fresh data directory, starts six bots (app makes
// each bot's game) on ctx, and waits until they are synced and two checkpoints were written.
func startKillScene(t *testing.T, ctx context.Context, app func(i int) peer.App) *killScene {
	t.Helper()
	k := &killScene{bin: buildConcord(t), dir: t.TempDir(), addr: freeLoopbackAddr(t),
		log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
	k.url = "http://" + k.addr
	k.serve = startProcess(t, k.bin, "serve", "--addr", k.addr, "--data", k.dir, "--checkpoint-interval", "300ms", "--log-level", "info")
	waitHealthy(t, k.url)
	for i := range 6 {
		k.bots = append(k.bots, startTestBot(t, ctx, &k.wg, k.url, fmt.Sprintf("bot%d", i), app(i), k.log))
	}
	poll.Until(t, 60*time.Second, "every bot synced", func() error {
		for _, p := range k.bots {
			if st := p.Status(); !st.Synced {
				return fmt.Errorf("bot %d not synced", st.Self)
			}
		}
		return nil
	})
	waitCheckpoints(t, k.url, 2) // one begun after every avatar existed
	return k
}

// TestServeKill9Restore: serve with its dedicated host is killed with SIGKILL while 6 bots move;
// the bots leave; serve restarts on the same --data. The last checkpoint holds every entity the
// bots saw (crdt export), the restarted room has every one of them but the avatars of the members
// that left (which the host deletes), and no peer index or term is issued twice.
func TestServeKill9Restore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds concord and runs it twice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := startKillScene(t, ctx, func(i int) peer.App {
		return arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i + 1)}})
	})
	bin, dir, bots, log, wg := k.bin, k.dir, k.bots, k.log, &k.wg
	if err := k.serve.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-k.serve.waited
	var seen []*worldView
	maxIndex, maxTerm := peer.PeerIndex(0), peer.Term(0)
	for _, p := range bots {
		v, err := readWorld(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, v)
		maxIndex, maxTerm = max(maxIndex, v.self), max(maxTerm, v.term)
	}
	cancel() // the bots leave
	wg.Wait()

	// The checkpoint on disk holds every entity any bot saw, avatars included.
	out, err := exec.Command(bin, "crdt", "export", "--data", dir, "--room", "arena").Output()
	if err != nil {
		t.Fatalf("crdt export: %v", err)
	}
	cp := crdt.New(crdt.Config{})
	if _, err := cp.MergeStream(out); err != nil {
		t.Fatal(err)
	}
	entities := 0
	for _, v := range seen {
		for e := range v.live {
			if ver, ok := cp.LiveVersion(e.Number()); !ok || ver != e.Version() {
				t.Errorf("entity %v (avatar of %d) seen by bot %d is not in the checkpoint", e, v.avatars[e], v.self)
			}
			if _, _, ok, del := cp.Get(e, schema.ComponentMeta); !ok || del {
				t.Errorf("entity %v seen by bot %d has no meta in the checkpoint", e, v.self)
			}
		}
		entities = max(entities, len(v.live))
	}
	t.Logf("checkpoint: %d bytes, %d live entities; the bots saw %d", len(out), cp.LiveEntities(), entities)

	// serve restarts on the same data; a new member finds the room as the bots left it.
	addr := freeLoopbackAddr(t)
	url := "http://" + addr
	serve := startProcess(t, bin, "serve", "--addr", addr, "--data", dir, "--log-level", "info")
	waitHealthy(t, url)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	viewer := startTestBot(t, ctx, wg, url, "viewer", arena.New(arena.Config{}), log)
	var got *worldView
	poll.Until(t, 60*time.Second, "the restored room has every entity the bots saw", func() error {
		if st := viewer.Status(); !st.Synced {
			return fmt.Errorf("viewer not synced")
		}
		var err error
		if got, err = readWorld(ctx, viewer); err != nil {
			return err
		}
		for _, v := range seen {
			for e := range v.live {
				_, avatar := v.avatars[e]
				switch {
				case got.live[e]:
				case avatar && got.deleted(e): // its member left: the host deleted it
				default:
					return fmt.Errorf("entity %v (avatar %v) seen by bot %d is missing", e, avatar, v.self)
				}
			}
		}
		return nil
	})
	if got.self <= maxIndex || got.term <= maxTerm {
		t.Fatalf("after the restart: index %d term %d; before it the room issued index %d term %d", got.self, got.term, maxIndex, maxTerm)
	}
	restored := regexp.MustCompile(`"entities":(\d+),"clock":(\d+),"took":([0-9.]+),.*"room restored"`).FindSubmatch(serve.output())
	if restored == nil {
		t.Fatalf("no \"room restored\" in serve's log:\n%s", serve.output())
	}
	t.Logf("restored %s entities (clock %s) in %s ms; viewer is peer %d in term %d", restored[1], restored[2], restored[3], got.self, got.term)
	cancel()
	wg.Wait()
}

// TestServeKill9BotsStay: serve with its dedicated host is killed with SIGKILL while 6 bots move;
// the bots play on without a server and stay; serve restarts on the same address and data. The
// new dedicated host starts from the checkpoint, the bots resume, and the room converges on a
// state that holds everything any bot held when serve died (the migration invariant) and every
// entity of the checkpoint.
func TestServeKill9BotsStay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds concord and runs it twice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	clk := &migrationcheck.Clock{}
	k := startKillScene(t, ctx, func(i int) peer.App {
		return &migrationcheck.Bot{Game: arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i + 10), MoveFor: time.Hour, Now: clk.Now}})}
	})
	defer k.wg.Wait()
	defer cancel()
	bin, dir, addr, url, bots := k.bin, k.dir, k.addr, k.url, k.bots
	if err := k.serve.kill(); err != nil {
		t.Fatal(err)
	}
	rec := migrationcheck.NewView()
	for _, p := range bots {
		var v *migrationcheck.View
		if err := p.Do(ctx, func(w *peer.World) { v = migrationcheck.Read(w) }); err != nil {
			t.Fatal(err)
		}
		rec.Absorb(v)
	}
	clk.Jump(2 * time.Hour) // the bots stop moving, so that the room can settle

	serve := startProcess(t, bin, "serve", "--addr", addr, "--data", dir, "--log-level", "info")
	waitHealthy(t, url)
	poll.Until(t, 60*time.Second, "the room converged under the restarted dedicated host", func() error {
		rooms, err := fetchRooms(url)
		if err != nil {
			return err
		}
		if len(rooms) != 1 || len(rooms[0].Members) != 7 {
			return fmt.Errorf("rooms %+v", rooms)
		}
		r := rooms[0]
		hashes := map[uint64]bool{}
		for _, m := range r.Members {
			if m.PeerIndex == r.Host && m.Kind != signaling.KindHost {
				return fmt.Errorf("host %d is a %s", r.Host, m.Kind)
			}
			if !m.Synced || m.Replica == nil || m.Replica.Term != r.Term {
				return fmt.Errorf("member %d not synced in term %d", m.PeerIndex, r.Term)
			}
			hashes[m.Replica.Hash] = true
		}
		if len(hashes) != 1 {
			return fmt.Errorf("%d distinct hashes", len(hashes))
		}
		return nil
	})
	var conv *migrationcheck.View
	if err := bots[0].Do(ctx, func(w *peer.World) { conv = migrationcheck.Read(w) }); err != nil {
		t.Fatal(err)
	}
	if bad := migrationcheck.Check(rec, conv, func(peer.Entity) bool { return false }); len(bad) > 0 {
		t.Fatalf("the restored room lost what the bots held:\n%s", strings.Join(bad, "\n"))
	}
	if !bytes.Contains(serve.output(), []byte(`"room restored"`)) {
		t.Fatalf("the dedicated host did not start from the checkpoint:\n%s", serve.output())
	}
	t.Logf("%d keys and %d entities the bots held kept; term %d", len(rec.Keys), len(rec.Live), conv.Term)
}

// TestServePoisonedCheckpointRestores: a well-formed checkpoint that would freeze its room (clock
// and one stamp at 2³²−1, every spawnable number deleted at version 0xffff) restores within the
// bounds (docs/protocol.md §6): the room opens under its dedicated host, with its clock's
// headroom and its numbers free, and concord_restore_refused_total counts what was dropped.
// Without the bounds the host starts at clock 2³²−1, where every later write loses.
func TestServePoisonedCheckpointRestores(t *testing.T) {
	scene, err := os.ReadFile("../../crdt/testdata/dcl/example-scene.crdt")
	if err != nil {
		t.Fatal(err)
	}
	data := append([]byte(nil), scene...)
	m := crdt.Message{Type: crdt.PutComponent, Entity: crdt.NewEntity(700, 0), Component: 2000, Timestamp: math.MaxUint32, Data: []byte("x")}
	data = crdt.AppendMessage(data, &m)
	for n := 1000; n < 1<<16; n++ {
		m = crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(uint16(n), 0xffff)}
		data = crdt.AppendMessage(data, &m)
	}
	dir := t.TempDir()
	st, err := durable.Open(durable.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveCheckpoint(context.Background(), durable.Checkpoint{Room: "arena", Term: 3, Clock: math.MaxUint32, Data: data}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", DedicatedHost: true, Data: dir, CheckpointInterval: time.Hour, Metrics: true},
		zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()
	var clock crdt.Timestamp
	var dead bool
	poll.Until(t, 30*time.Second, "arena restored under its dedicated host", func() error {
		return s.host.Do(ctx, func(w *peer.World) {
			clock = w.Replica().Clock()
			v, ok := w.Replica().DeletedVersion(1000)
			dead = ok && v == 0xffff
		})
	})
	if clock > durable.MaxRestoreClock+1<<16 || dead { // the host has written since
		t.Fatalf("restored clock %d (bound %d), number 1000 dead: %v", clock, uint64(durable.MaxRestoreClock), dead)
	}
	for reason, want := range map[string]float64{durable.RestoreClock: 1, durable.RestoreStamp: 1, durable.RestoreVersion: 1<<16 - 1000} {
		got, err := metric(s.url, `concord_restore_refused_total{reason="`+reason+`"}`)
		if err != nil || got != want {
			t.Fatalf("concord_restore_refused_total{%s} = %v (%v), want %v", reason, got, err, want)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
