package world_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/tiles"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
)

// recorder wraps the tiles game and records every input a region host applies, per player.
type recorder struct {
	*tiles.App
	mu     sync.Mutex
	inputs map[string][][]byte
}

func newRecorder() *recorder { return &recorder{App: &tiles.App{}, inputs: map[string][][]byte{}} }

func (r *recorder) Input(w *peer.World, reg world.Region, e peer.Entity, data []byte) {
	owner, _ := w.Get(e, tiles.PlayerOwner)
	r.mu.Lock()
	r.inputs[string(owner)] = append(r.inputs[string(owner)], append([]byte(nil), data...))
	r.mu.Unlock()
	r.App.Input(w, reg, e, data)
}

func (r *recorder) applied(owner string) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.inputs[owner])
}

type testWorld struct {
	url string
	srv *world.Server
	app inputRecorder
}

// startWorld serves signaling and a tiles world (region hosts on pion over loopback).
func startWorld(t testing.TB, cfg world.ServerConfig) *testWorld {
	t.Helper()
	return startWorldApp(t, cfg, newRecorder())
}

// inputRecorder is an App that records the inputs it applies.
type inputRecorder interface {
	world.App
	applied(owner string) [][]byte
}

func startWorldApp(t testing.TB, cfg world.ServerConfig, app inputRecorder) *testWorld {
	t.Helper()
	def := tiles.Def()
	def.App = app
	rooms := map[signaling.RoomID]signaling.RoomConfig{}
	for _, room := range def.Rooms() {
		rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{"host"}}
	}
	sig := signaling.New(signaling.Config{Rooms: rooms, Logger: zerolog.Nop()})
	cfg.Def = def
	srv, url := mountWorld(t, sig, cfg)
	return &testWorld{url: url, srv: srv, app: app}
}

// mountWorld serves a world.Server of cfg (its URL filled in) and sig's signaling on one
// loopback HTTP server, all three closed when the test ends; it returns the server and the URL.
func mountWorld(tb testing.TB, sig *signaling.Server, cfg world.ServerConfig) (*world.Server, string) {
	tb.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	cfg.URL = hs.URL
	srv, err := world.NewServer(cfg)
	if err != nil {
		hs.Close()
		tb.Fatal(err)
	}
	mux.Handle("/api/worlds/", srv.Handler())
	mux.Handle("/", sig.Handler())
	tb.Cleanup(func() {
		srv.Close()
		_ = sig.Close()
		hs.Close()
	})
	return srv, hs.URL
}

// avatarsIn counts owner's player entities in w (a player holds exactly one in the world).
func avatarsIn(w *peer.World, owner string) int {
	n := 0
	for _, e := range w.EntitiesOf(tiles.SchemaPlayer) {
		if o, _ := w.Get(e, tiles.PlayerOwner); string(o) == owner {
			n++
		}
	}
	return n
}

func (tw *testWorld) join(t testing.TB, ctx context.Context, user string, start [2]int) *world.Client {
	t.Helper()
	c, err := world.Join(ctx, world.Config{Server: tw.url, World: tiles.Name, App: tw.app, User: user, Device: "d", Start: start})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func waitResident(t testing.TB, c *world.Client, x, y int) {
	t.Helper()
	poll.Until(t, 20*time.Second, c.Self()+" resident", func() error {
		r, _, ok := c.Resident()
		if !ok || r.X != x || r.Y != y {
			return fmt.Errorf("resident %v %v", r, ok)
		}
		return nil
	})
}

// avatars returns the avatars of owner in a merged view and their position.
func avatarOf(v []world.Entity, owner string) (n int, e world.Entity) {
	for _, en := range v {
		if en.Schema == tiles.SchemaPlayer && en.Owner == owner {
			n++
			e = en
		}
	}
	return n, e
}

// A player walks from region (0,0) into (1,0) while sending inputs; an observer resident in
// (1,0), which follows both, sees exactly one avatar of it at every observation, never none, its
// generation never going back; the player hears the crossing; every input is applied once, in
// order, across the handover.
func TestWorldCrossing(t *testing.T) {
	tw := startWorld(t, world.ServerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := tw.join(t, ctx, "observer", [2]int{1, 0})
	waitResident(t, obs, 1, 0)
	pl := tw.join(t, ctx, "player", [2]int{0, 0})
	waitResident(t, pl, 0, 0)
	poll.Until(t, 20*time.Second, "the observer to see the player", func() error {
		if n, _ := avatarOf(obs.View(ctx), pl.Self()); n != 1 {
			return fmt.Errorf("%d avatars", n)
		}
		return nil
	})

	// The observer looks every 5 ms from now on.
	type look struct {
		n   int
		gen uint32
		at  time.Time
	}
	var looks []look
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			n, e := avatarOf(obs.View(ctx), pl.Self())
			looks = append(looks, look{n, e.Gen, time.Now()})
		}
	}()

	var sent [][]byte
	for i := range 120 {
		in := tiles.Walk(4000, int16(i%5)-2)
		if err := pl.Input(in); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, in)
		time.Sleep(20 * time.Millisecond) // the player's pace, not synchronisation
	}
	if err := pl.Input(tiles.Walk(0, 0)); err != nil {
		t.Fatal(err)
	}
	sent = append(sent, tiles.Walk(0, 0))
	waitAcked(t, pl, 20*time.Second, "every input acknowledged", nil)
	waitResident(t, pl, 1, 0)
	select {
	case ev := <-pl.Events():
		for ev.Kind != world.EventCrossing {
			ev = <-pl.Events()
		}
		if ev.From.X != 0 || ev.To.X != 1 {
			t.Fatalf("crossing %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no crossing event")
	}
	// Let the observer see the source's copy go.
	poll.Until(t, 5*time.Second, "the source's copy gone", func() error {
		if tw.srv.HandoverPauses() == nil {
			return fmt.Errorf("no handover")
		}
		return nil
	})
	close(stop)
	<-watched

	got := tw.app.applied(pl.Self())
	if len(got) != len(sent) {
		t.Fatalf("%d inputs applied, %d sent", len(got), len(sent))
	}
	for i := range sent {
		if string(got[i]) != string(sent[i]) {
			t.Fatalf("input %d applied as %x, sent %x", i, got[i], sent[i])
		}
	}
	var gen uint32
	for i, l := range looks {
		if l.n != 1 {
			t.Fatalf("observation %d of %d: %d avatars of the player", i, len(looks), l.n)
		}
		if l.gen < gen {
			t.Fatalf("observation %d: generation %d after %d", i, l.gen, gen)
		}
		gen = l.gen
	}
	if gen < 2 {
		t.Fatalf("the observer never saw the handed-over avatar (generation %d)", gen)
	}
	t.Logf("%d observations, handover pauses %v", len(looks), tw.srv.HandoverPauses())
}

// blocks returns the blocks of region r in a view, as "x,y=kind".
func blocks(v []world.Entity, x, y int) []string {
	var out []string
	for _, e := range v {
		if e.Schema == tiles.SchemaBlock && e.Region.X == x && e.Region.Y == y {
			out = append(out, fmt.Sprintf("%d,%d=%d", tiles.ParseI32(e.Values[tiles.BlockX]), tiles.ParseI32(e.Values[tiles.BlockY]), e.Values[tiles.BlockKind][0]))
		}
	}
	slices.Sort(out)
	return out
}

func ownPos(t *testing.T, ctx context.Context, c *world.Client) world.Vec {
	t.Helper()
	var p world.Vec
	poll.Until(t, 10*time.Second, "own avatar", func() error {
		n, e := avatarOf(c.View(ctx), c.Self())
		if n != 1 {
			return fmt.Errorf("%d avatars", n)
		}
		var ok bool
		if p, ok = world.ParseVec(e.Values[tiles.PlayerPos]); !ok {
			return fmt.Errorf("no position")
		}
		return nil
	})
	return p
}

// A player edits its region and leaves; the region unloads once nobody is in it (checkpointed in
// memory); the player returns through another region: it is resident where it left, at its
// position, and the region comes back with the generated blocks and its edit.
func TestWorldUnloadKeepsEdits(t *testing.T) {
	tw := startWorld(t, world.ServerConfig{Grace: 300 * time.Millisecond, LeaveGrace: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := tw.join(t, ctx, "builder", [2]int{2, 2})
	waitResident(t, pl, 2, 2)
	for range 5 {
		if err := pl.Input(tiles.Walk(2000, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pl.Input(tiles.Walk(0, 0)); err != nil {
		t.Fatal(err)
	}
	waitAcked(t, pl, 10*time.Second, "inputs acknowledged", nil)
	p := ownPos(t, ctx, pl)
	tx, ty := p.X/tiles.Tile+1, p.Y/tiles.Tile
	if err := pl.Input(tiles.Place(tx, ty, 5)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d,%d=5", tx, ty)
	var before []string
	poll.Until(t, 10*time.Second, "the block placed", func() error {
		before = blocks(pl.View(ctx), 2, 2)
		if !slices.Contains(before, want) {
			return fmt.Errorf("blocks %v", before)
		}
		return nil
	})
	p = ownPos(t, ctx, pl)
	pl.Close()
	poll.Until(t, 20*time.Second, "every region unloaded", func() error {
		if l := tw.srv.Loaded(); len(l) > 0 {
			return fmt.Errorf("loaded %v", l)
		}
		return nil
	})
	if _, resident, saved := tw.srv.Player(pl.Self()); resident || saved == nil {
		t.Fatalf("player data: resident %v, saved %v", resident, saved)
	}

	back, err := world.Join(ctx, world.Config{Server: tw.url, World: tiles.Name, App: tw.app, User: "builder", Device: "d", Start: [2]int{0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	poll.Until(t, 20*time.Second, "back resident", func() error {
		r, _, ok := back.Resident()
		if !ok || r.X != 2 || r.Y != 2 {
			return fmt.Errorf("client %s; server %s", back.Debug(), tw.srv.DebugPlayer(ctx, back.Self()))
		}
		return nil
	})
	checkReturned(t, ctx, back, p, 2, 2, before)
}

// Only a resident's inputs apply: the player's inputs sent to a region it only watches are
// dropped and counted, and so is an input out of sequence in its own region.
func TestWorldWatcherInputsDropped(t *testing.T) {
	reg := prometheus.NewRegistry()
	tw := startWorld(t, world.ServerConfig{Registerer: reg})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := tw.join(t, ctx, "walker", [2]int{0, 0})
	waitResident(t, pl, 0, 0)
	var watched *peer.Peer
	poll.Until(t, 20*time.Second, "the neighbour followed", func() error {
		if watched = pl.PeerOf(world.RoomName(tiles.Name, 1, 0)); watched == nil {
			return fmt.Errorf("not followed")
		}
		return nil
	})
	send := func(pp *peer.Peer, seq uint32, data []byte) {
		_ = pp.Do(ctx, func(w *peer.World) {
			_ = w.SendAction(world.ActionInput, append(binary.LittleEndian.AppendUint32(nil, seq), data...))
		})
	}
	refused := func(reason string) float64 {
		return counter(reg, "concord_world_refused_total", reason)
	}
	poll.Until(t, 20*time.Second, "a watcher's input refused", func() error {
		send(watched, 1, tiles.Walk(4000, 0))
		if refused("input_not_resident") == 0 {
			return fmt.Errorf("not refused yet")
		}
		return nil
	})
	send(pl.PeerOf(world.RoomName(tiles.Name, 0, 0)), 7, tiles.Walk(-4000, 0))
	poll.Until(t, 10*time.Second, "an input out of sequence refused", func() error {
		if refused("input_out_of_order") == 0 {
			return fmt.Errorf("not refused yet")
		}
		return nil
	})
	if err := pl.Input(tiles.Walk(0, 100)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the resident's input applied", func() error {
		if got := tw.app.applied(pl.Self()); len(got) != 1 || string(got[0]) != string(tiles.Walk(0, 100)) {
			return fmt.Errorf("applied %x", got)
		}
		return nil
	})
}

// counter reads the value of counter name{reason} in reg (0 when absent).
func counter(reg *prometheus.Registry, name, reason string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// The directory lists every region; a load outside the grid or of another world is refused.
func TestWorldDirectory(t *testing.T) {
	tw := startWorld(t, world.ServerConfig{})
	get := func(method, path string) (int, string) { return request(t, method, tw.url+path, "") }
	var d world.Directory
	code, body := get(http.MethodGet, "/api/worlds/tiles")
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
		t.Fatalf("GET: %d %s", code, body)
	}
	if len(d.Regions) != 64 || d.Regions[9].Room != "tiles.1.1" || d.RegionSize != 16000 || d.View != 1 || d.Regions[9].Loaded {
		t.Fatalf("directory %+v", d)
	}
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodPost, "/api/worlds/tiles/load?x=8&y=0", 404},
		{http.MethodPost, "/api/worlds/tiles/load?x=-1&y=0", 404},
		{http.MethodPost, "/api/worlds/tiles/load?x=a&y=0", 404},
		{http.MethodPost, "/api/worlds/other/load?x=0&y=0", 404},
		{http.MethodGet, "/api/worlds/other", 404},
		{http.MethodGet, "/api/worlds/tiles/load?x=0&y=0", 405},
		{http.MethodPost, "/api/worlds/tiles", 405},
	} {
		if code, body := get(c.method, c.path); code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, code, body, c.code)
		}
	}
	if code, body := get(http.MethodPost, "/api/worlds/tiles/load?x=1&y=1"); code != 200 || !strings.Contains(body, `"loaded":true`) {
		t.Fatalf("load: %d %s", code, body)
	}
	if l := tw.srv.Loaded(); len(l) != 1 || l[0] != "tiles.1.1" {
		t.Fatalf("loaded %v", l)
	}
}

// With a store (JetStream on a data directory) a region's edits and a player's data outlive the
// whole server: it stops with the player in the world, starts again on the same directory, and
// the player returns where it was, to the region as it was.
func TestWorldRestartKeepsEdits(t *testing.T) {
	dir := t.TempDir()
	open := func() (*durable.Store, *durable.Writer) {
		st, err := durable.Open(durable.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return st, durable.NewWriter(st, durable.WriterConfig{})
	}
	st, wr := open()
	tw := startWorld(t, world.ServerConfig{Store: st, Writer: wr})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := tw.join(t, ctx, "mason", [2]int{4, 4})
	waitResident(t, pl, 4, 4)
	if err := pl.Input(tiles.Walk(3000, -2000)); err != nil {
		t.Fatal(err)
	}
	if err := pl.Input(tiles.Walk(0, 0)); err != nil {
		t.Fatal(err)
	}
	waitAcked(t, pl, 10*time.Second, "inputs acknowledged", nil)
	p := ownPos(t, ctx, pl)
	tx, ty := p.X/tiles.Tile, p.Y/tiles.Tile-1
	if err := pl.Input(tiles.Place(tx, ty, 3)); err != nil {
		t.Fatal(err)
	}
	var before []string
	poll.Until(t, 10*time.Second, "the block placed", func() error {
		before = blocks(pl.View(ctx), 4, 4)
		if !slices.Contains(before, fmt.Sprintf("%d,%d=3", tx, ty)) {
			return fmt.Errorf("blocks %v", before)
		}
		return nil
	})
	p = ownPos(t, ctx, pl)
	// The whole server stops: region hosts checkpoint, the writer flushes, the store closes.
	pl.Close()
	tw.srv.Close()
	wr.Close()
	st.Close()

	st2, wr2 := open()
	defer st2.Close()
	defer wr2.Close()
	tw2 := startWorld(t, world.ServerConfig{Store: st2, Writer: wr2})
	back, err := world.Join(ctx, world.Config{Server: tw2.url, World: tiles.Name, App: tw2.app, User: "mason", Device: "d", Start: [2]int{0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	waitResident(t, back, int(p.X/16000), int(p.Y/16000))
	checkReturned(t, ctx, back, p, 4, 4, before)
}

// checkReturned checks that a returning player stands where it left (p) and that region (x, y)
// holds the blocks it held before.
func checkReturned(t *testing.T, ctx context.Context, c *world.Client, p world.Vec, x, y int, before []string) {
	t.Helper()
	if q := ownPos(t, ctx, c); q != p {
		t.Fatalf("returned at %v, left at %v", q, p)
	}
	poll.Until(t, 10*time.Second, "the region as it was", func() error {
		if after := blocks(c.View(ctx), x, y); !slices.Equal(after, before) {
			return fmt.Errorf("blocks %v, before %v", after, before)
		}
		return nil
	})
}

// A player whose client is gone leaves the world after LeaveGrace even while its avatar walks on
// across borders: the destination keeps counting the absence from when the client left (without
// it, each border crossing started a new 10 s wait for a client that would never join).
func TestWorldAwayPlayerLeaves(t *testing.T) {
	tw := startWorld(t, world.ServerConfig{LeaveGrace: 1500 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := tw.join(t, ctx, "wanderer", [2]int{0, 0})
	waitResident(t, pl, 0, 0)
	if err := pl.Input(tiles.Walk(4000, 0)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "near the border", func() error {
		if p := ownPos(t, ctx, pl); p.X < 13000 {
			return fmt.Errorf("at %v", p)
		}
		return nil
	})
	pl.Close() // the avatar walks on into (1,0) without its client
	gone := time.Now()
	poll.Until(t, 20*time.Second, "the avatar handed on", func() error {
		if len(tw.srv.HandoverPauses()) == 0 {
			return fmt.Errorf("no handover yet")
		}
		return nil
	})
	poll.Until(t, 20*time.Second, "the player out of the world", func() error {
		if _, resident, _ := tw.srv.Player(pl.Self()); resident {
			return fmt.Errorf("still resident")
		}
		return nil
	})
	if took := time.Since(gone); took > 5*time.Second {
		t.Fatalf("the player left %v after its client, LeaveGrace 1.5 s", took)
	}
}

// On a server with a secret a region loads only for a join token of one of the world's region
// rooms or the admin key (docs/security.md §12): a load starts a region host and keeps it a grace
// period, and a stranger could otherwise load every region of every world.
func TestWorldLoadNeedsToken(t *testing.T) {
	secret := []byte("world load test secret, 32 bytes")
	tw := startWorld(t, world.ServerConfig{Secret: secret, AdminKey: "world-admin"})
	token := func(room signaling.RoomID, ttl time.Duration) string {
		tok, err := signaling.IssueToken(secret, signaling.Claims{Room: room, User: "u", Device: "d", Kind: signaling.KindBrowser, ExpiresAt: time.Now().Add(ttl)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	other, err := signaling.IssueToken([]byte("another server's secret, 32 byte"), signaling.Claims{Room: "tiles.1.1", User: "u", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	load := func(x, y int, bearer string) (int, string) {
		return request(t, http.MethodPost, tw.url+"/api/worlds/tiles/load?x="+strconv.Itoa(x)+"&y="+strconv.Itoa(y), bearer)
	}
	for _, c := range []struct {
		name, bearer string
		code         int
	}{
		{"no credential", "", http.StatusUnauthorized},
		{"not a token", "nonsense", http.StatusForbidden},
		{"another secret's token", other, http.StatusForbidden},
		{"an expired token", token("tiles.1.1", -time.Minute), http.StatusForbidden},
		{"a token of another room", token("lobby", time.Hour), http.StatusForbidden},
		{"a token of another world's region", token("other.1.1", time.Hour), http.StatusForbidden},
	} {
		if code, body := load(1, 1, c.bearer); code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.code)
		}
	}
	if l := tw.srv.Loaded(); len(l) != 0 {
		t.Fatalf("loaded %v without authority", l)
	}
	// A player resident in one region loads its neighbours with its token; the operator with the
	// admin key.
	if code, body := load(1, 1, token("tiles.2.1", time.Hour)); code != http.StatusOK {
		t.Fatalf("a region's token: %d %s", code, body)
	}
	if code, body := load(3, 3, "world-admin"); code != http.StatusOK {
		t.Fatalf("the admin key: %d %s", code, body)
	}
	if l := tw.srv.Loaded(); len(l) != 2 {
		t.Fatalf("loaded %v, want tiles.1.1 and tiles.3.3", l)
	}
}

// request makes an HTTP request (with a bearer credential unless "") and returns its status and body.
func request(t *testing.T, method, url, bearer string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// An arrival that fails every try (here the region's host cannot spawn the avatar; under load
// the store or a destination's load fails the same way) is tried again by the region the member
// joined until it holds: the member is not left in the world with no avatar until it joins again.
func TestWorldStrandedArrivalRetried(t *testing.T) {
	app := &unspawnable{inputRecorder: newRecorder()}
	app.failing.Store(true)
	tw := startWorldApp(t, world.ServerConfig{}, app)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := tw.join(t, ctx, "dan", [2]int{0, 0})
	// Every try failed: ArrivalTries generations were handed out and the record says nowhere
	// (a try sets the region, its failure clears it).
	poll.Until(t, 30*time.Second, "the arrival's tries to fail", func() error {
		if room, gen := tw.srv.PlayerRecord(c.Self()); gen < world.ArrivalTries || room != "" {
			return fmt.Errorf("record %q gen %d", room, gen)
		}
		return nil
	})
	if r, g, ok := c.Resident(); ok {
		t.Fatalf("resident in %s gen %d with no avatar spawned", r.Room(), g)
	}
	app.failing.Store(false)
	waitResident(t, c, 0, 0)
	poll.Until(t, 20*time.Second, "dan's one avatar", func() error {
		n := 0
		if err := tw.srv.Inspect(ctx, 0, 0, func(w *peer.World) { n = avatarsIn(w, c.Self()) }); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%d avatars", n)
		}
		return nil
	})
}

// unspawnable gives new players values the avatar's schema refuses while failing is set.
type unspawnable struct {
	inputRecorder
	failing atomic.Bool
}

func (u *unspawnable) NewPlayer(r world.Region, owner string) [][]byte {
	v := u.inputRecorder.NewPlayer(r, owner)
	if u.failing.Load() {
		v[0] = []byte{1} // the position: not a Vec
	}
	return v
}

// waitAcked waits up to d until the resident host of c has acknowledged every input c sent;
// where, if not nil, says where things stand when it does not.
func waitAcked(t *testing.T, c *world.Client, d time.Duration, what string, where func() string) {
	t.Helper()
	poll.Until(t, d, what, func() error {
		switch n := c.Pending(); {
		case n == 0:
			return nil
		case where != nil:
			return fmt.Errorf("%d pending: %s", n, where())
		default:
			return fmt.Errorf("%d pending", n)
		}
	})
}
