package world_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/tiles"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
)

// edits wraps the tiles game and records, per tile, what the last edit a region host applied
// left there (a kind, or 0 for none): the state every tile must have after a restart.
type edits struct {
	*recorder
	mu    sync.Mutex
	tiles map[[2]int32]byte
}

func (e *edits) Input(w *peer.World, r world.Region, en peer.Entity, data []byte) {
	e.recorder.Input(w, r, en, data)
	if len(data) < 9 || (data[0] != tiles.InputPlace && data[0] != tiles.InputRemove) {
		return
	}
	tx, ty := tiles.ParseI32(data[1:5]), tiles.ParseI32(data[5:9])
	if !r.Contains(world.Vec{X: tx * tiles.Tile, Y: ty * tiles.Tile}) {
		return // refused: another region's tile
	}
	kind := byte(0)
	if b, ok := tiles.BlockAt(w, tx, ty); ok {
		v, _ := w.Get(b, tiles.BlockKind)
		kind = v[0]
	}
	e.mu.Lock()
	e.tiles[[2]int32{tx, ty}] = kind
	e.mu.Unlock()
}

// labWorld is the labs' world: the tiles world whose app records edits, a signaling server
// pinning every region's host, and a memory transport per room (it pairs link halves by peer
// indices, which repeat across rooms).
func labWorld() (tr func(signaling.RoomID) peer.Config, app *edits, def world.Def, sig *signaling.Server) {
	var trMu sync.Mutex
	trs := map[signaling.RoomID]*peer.MemoryTransport{}
	tr = func(room signaling.RoomID) peer.Config {
		trMu.Lock()
		defer trMu.Unlock()
		if trs[room] == nil {
			trs[room] = &peer.MemoryTransport{}
		}
		return peer.Config{Transport: trs[room]}
	}
	app = &edits{recorder: newRecorder(), tiles: map[[2]int32]byte{}}
	def = tiles.Def()
	def.App = app
	rooms := map[signaling.RoomID]signaling.RoomConfig{}
	for _, room := range def.Rooms() {
		rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{"host"}}
	}
	sig = signaling.New(signaling.Config{Rooms: rooms, Logger: zerolog.Nop(), MaxConns: 100000, MaxConnsPerAddr: 100000})
	return tr, app, def, sig
}

// labBots is a lab's bot count: the environment variable name, else 128, else under the race
// detector raceBots (its bookkeeping makes 128 pion peers cost gigabytes and minutes).
func labBots(name string, raceBots int) int {
	def := 128
	if raceOn {
		def = raceBots
	}
	return envInt(name, def)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestWorldLab: the 8 × 8 tiles world on one server with its data in JetStream, N bots (linked in
// memory, CONCORD_WORLD_LAB_BOTS, default 128; 32 under -race) wandering across borders and editing for a while
// (CONCORD_WORLD_LAB_SECONDS, default 6); then the whole world server stops (every region
// checkpointed, the store closed) and starts again on the same data, while the bots stay in their
// rooms: every region the bots are in comes back, every bot is resident again with exactly one
// avatar, and every tile an edit touched holds what the last applied edit left (0 edits lost).
func TestWorldLab(t *testing.T) {
	// 128 bots: 16–21 s and 0.6 GB on a 2-vCPU machine; under -race 32 (some 40 s, 128 needs
	// more than 3 GB and minutes).
	bots := labBots("CONCORD_WORLD_LAB_BOTS", 32)
	runFor := time.Duration(envInt("CONCORD_WORLD_LAB_SECONDS", 6)) * time.Second
	// A memory transport per room: it pairs link halves by peer indices, which repeat across rooms.
	tr, app, def, sig := labWorld()
	var worldH atomic.Pointer[http.Handler]
	mux := http.NewServeMux()
	mux.Handle("/api/worlds/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := worldH.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, `{"error":"restarting"}`, http.StatusServiceUnavailable)
	}))
	mux.Handle("/", sig.Handler())
	hs := httptest.NewServer(mux)
	defer hs.Close()
	defer sig.Close()
	dir := t.TempDir()
	start := func() (*world.Server, func()) {
		st, err := durable.Open(durable.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		wr := durable.NewWriter(st, durable.WriterConfig{})
		srv, err := world.NewServer(world.ServerConfig{Def: def, URL: hs.URL, Store: st, Writer: wr, Grace: 2 * time.Second,
			HostConfig: func(room signaling.RoomID) (peer.Config, error) { return tr(room), nil }})
		if err != nil {
			t.Fatal(err)
		}
		h := srv.Handler()
		worldH.Store(&h)
		return srv, func() {
			worldH.Store(nil)
			srv.Close()
			wr.Close()
			st.Close()
		}
	}
	srv, stop := start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	clients := make([]*world.Client, bots)
	for i := range bots {
		c, err := world.Join(ctx, world.Config{Server: hs.URL, World: tiles.Name, App: app, User: fmt.Sprintf("bot%d", i), Device: "lab",
			Start: [2]int{i % tiles.Cols, (i / tiles.Cols) % tiles.Rows}, Peer: tr})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	for _, c := range clients {
		poll.Until(t, 60*time.Second, c.Self()+" resident", func() error {
			if _, _, ok := c.Resident(); !ok {
				return fmt.Errorf("not yet; following %v; loaded %v", c.Regions(), srv.Loaded())
			}
			return nil
		})
	}
	t.Logf("%d bots resident in %v", bots, time.Since(began))
	bctx, bcancel := context.WithTimeout(ctx, runFor)
	var wg sync.WaitGroup
	var stats [3]atomic.Int64
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := tiles.RunBot(bctx, c, tiles.BotConfig{Seed: uint64(i), Every: 100 * time.Millisecond, EditEvery: 2})
			stats[0].Add(int64(st.Walks))
			stats[1].Add(int64(st.Edits))
			stats[2].Add(int64(st.Refused))
		}()
	}
	wg.Wait()
	bcancel()
	for _, c := range clients { // the last walk stops, every input acknowledged
		if err := c.Input(tiles.Walk(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clients {
		waitAcked(t, c, 60*time.Second, c.Self()+"'s inputs acknowledged", func() string {
			return fmt.Sprintf("client %s; server %s", c.Debug(), srv.DebugPlayer(ctx, c.Self()))
		})
	}
	handovers := len(srv.HandoverPauses())
	app.mu.Lock()
	want := make(map[[2]int32]byte, len(app.tiles))
	for k, v := range app.tiles {
		want[k] = v
	}
	app.mu.Unlock()
	t.Logf("walks %d, edits %d (%d tiles), refused locally %d, handovers %d, loaded %d regions",
		stats[0].Load(), stats[1].Load(), len(want), stats[2].Load(), handovers, len(srv.Loaded()))
	if handovers == 0 || len(want) == 0 {
		t.Fatalf("the bots neither crossed (%d) nor edited (%d tiles)", handovers, len(want))
	}

	// The whole world server stops and starts again on its data; the bots stay in their rooms.
	restart := time.Now()
	stop()
	srv, stop = start()
	defer stop()
	for _, c := range clients {
		poll.Until(t, 90*time.Second, c.Self()+" resident again", func() error {
			r, _, ok := c.Resident()
			if !ok {
				return fmt.Errorf("not resident")
			}
			var n int
			if err := srv.Inspect(ctx, r.X, r.Y, func(w *peer.World) {
				n += avatarsIn(w, c.Self())
			}); err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("%d avatars in %s", n, r.Room())
			}
			return nil
		})
	}
	t.Logf("every bot resident again %v after the restart", time.Since(restart))
	lost := 0
	for tile, kind := range want {
		r := def.RegionAt(world.Vec{X: tile[0] * tiles.Tile, Y: tile[1] * tiles.Tile})
		var got byte
		if err := srv.Inspect(ctx, r.X, r.Y, func(w *peer.World) {
			if b, ok := tiles.BlockAt(w, tile[0], tile[1]); ok {
				v, _ := w.Get(b, tiles.BlockKind)
				got = v[0]
			}
		}); err != nil {
			t.Fatal(err)
		}
		if got != kind {
			lost++
			t.Errorf("tile %v in %s: kind %d, the last applied edit left %d", tile, r.Room(), got, kind)
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d edited tiles lost their last edit", lost, len(want))
	}
	t.Logf("lab of %d bots: %v in all", bots, time.Since(began))
}
