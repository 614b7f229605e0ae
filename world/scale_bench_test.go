package world_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
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

// The world's scale benchmarks (docs/benchmarks-history.md, "Worlds: regions per node, members
// per region, following, load and unload"). Region hosts run their real tick (peer's 20 Hz) with
// the tiles game; members are world Clients sending walk inputs. Links are in memory (a
// peer.MemoryTransport per room, as TestWorldLab's) unless CONCORD_WORLD_BENCH_PION is set: then
// every host and member is a pion peer on loopback, as the other world tests' are (some ten
// times the CPU per link, so the steps end sooner on a shared 2-core machine).

// tickMeter is the tiles game recording every region tick's dt (the time since the same
// region's previous tick). A region host's loop that cannot keep up runs its ticks late, and the
// peer's timer skips the beats it missed: a dt of two intervals is a tick missed.
type tickMeter struct {
	*tiles.App
	mu  sync.Mutex
	on  bool
	dts []time.Duration

	quit chan struct{}
	done chan []time.Duration
}

func (m *tickMeter) Tick(w *peer.World, r world.Region, dt time.Duration) {
	m.mu.Lock()
	if m.on && len(m.dts) < 1<<20 {
		m.dts = append(m.dts, dt)
	}
	m.mu.Unlock()
	m.App.Tick(w, r, dt)
}

func (m *tickMeter) applied(string) [][]byte { return nil }

// start starts recording, and a control: a goroutine of this process that does nothing but
// tick at the same interval, whose lateness is what the machine (shared with other work) and
// Go's scheduler add to any tick.
func (m *tickMeter) start() {
	m.mu.Lock()
	m.on, m.dts = true, m.dts[:0]
	m.mu.Unlock()
	m.quit, m.done = make(chan struct{}), make(chan []time.Duration, 1)
	go func() {
		var dts []time.Duration
		t := time.NewTicker(peer.DefaultTickInterval)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-m.quit:
				m.done <- dts
				return
			case <-t.C:
				now := time.Now() // when this goroutine runs, not when the timer fired (as a peer's tick reads its clock)
				dts = append(dts, now.Sub(last))
				last = now
			}
		}
	}()
}

// stop returns the region ticks' spacing and the control's.
func (m *tickMeter) stop() (hosts, control []time.Duration) {
	close(m.quit)
	control = <-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = false
	return slices.Clone(m.dts), control
}

// scaleWorld is a tiles world of cols × rows regions on one Server, with signaling sized for
// hundreds of members per room.
type scaleWorld struct {
	url   string
	srv   *world.Server
	def   world.Def
	meter *tickMeter
	peer  func(signaling.RoomID) peer.Config // the members' (and hosts') transport; nil: pion
}

func benchPion() bool { return os.Getenv("CONCORD_WORLD_BENCH_PION") != "" }

func startScaleWorld(b *testing.B, cols, rows int) *scaleWorld {
	b.Helper()
	sw := &scaleWorld{meter: &tickMeter{App: &tiles.App{}}}
	sw.def = tiles.Def()
	sw.def.Cols, sw.def.Rows, sw.def.App = cols, rows, sw.meter
	if !benchPion() {
		var mu sync.Mutex
		trs := map[signaling.RoomID]*peer.MemoryTransport{}
		sw.peer = func(room signaling.RoomID) peer.Config {
			mu.Lock()
			defer mu.Unlock()
			if trs[room] == nil {
				trs[room] = &peer.MemoryTransport{}
			}
			return peer.Config{Transport: trs[room]}
		}
	}
	rooms := map[signaling.RoomID]signaling.RoomConfig{}
	for _, room := range sw.def.Rooms() {
		rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{"host"}, MaxMembers: 1024}
	}
	sig := signaling.New(signaling.Config{Rooms: rooms, Logger: zerolog.Nop(), MaxConns: 100000, MaxConnsPerAddr: 100000})
	cfg := world.ServerConfig{Def: sw.def, Grace: time.Hour}
	if sw.peer != nil {
		cfg.HostConfig = func(room signaling.RoomID) (peer.Config, error) { return sw.peer(room), nil }
	}
	sw.srv, sw.url = mountWorld(b, sig, cfg)
	return sw
}

// joinAll joins one member per entry of starts (its first region), 16 at a time, and waits
// (up to 2 minutes in all) until every one is resident there and follows every region within
// view.
func (sw *scaleWorld) joinAll(b *testing.B, ctx context.Context, starts [][2]int) []*world.Client {
	b.Helper()
	clients := make([]*world.Client, len(starts))
	errs := make([]error, len(starts))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, st := range starts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// Labelled: a window profile tells the members' CPU (this goroutine's and every one
			// the Client starts) from the node's (region hosts, signaling).
			pprof.Do(ctx, pprof.Labels("side", "member"), func(ctx context.Context) {
				clients[i], errs[i] = world.Join(ctx, world.Config{Server: sw.url, World: sw.def.Name, App: sw.meter,
					User: fmt.Sprintf("m%d", i), Device: "d", Start: st, Peer: sw.peer})
			})
		}()
	}
	wg.Wait()
	for i, c := range clients {
		if c != nil {
			b.Cleanup(c.Close)
		} else {
			b.Fatalf("member %d: %v", i, errs[i])
		}
	}
	deadline := time.Now().Add(120 * time.Second) // for all of them: the wait is bounded whatever M
	for i, c := range clients {
		want := 0
		for y := range sw.def.Rows {
			for x := range sw.def.Cols {
				if sw.def.InView(starts[i][0], starts[i][1], x, y) {
					want++
				}
			}
		}
		poll.Until(b, max(time.Until(deadline), time.Millisecond), c.Self()+" resident and following its view", func() error {
			r, _, ok := c.Resident()
			if !ok || r.X != starts[i][0] || r.Y != starts[i][1] {
				return fmt.Errorf("resident %v %v (%s)", r.Room(), ok, c.Debug())
			}
			if n := len(c.Regions()); n != want {
				return fmt.Errorf("following %d regions of %d", n, want)
			}
			return nil
		})
	}
	return clients
}

// move has every member walk to and fro along x, 2 m/s, turning every second (it stays in its
// region: the benchmarks measure hosts, not handovers), an input every 100 ms, until stop.
func move(clients []*world.Client, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for step := 0; ; step++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			for i, c := range clients {
				vx := int16(2000)
				if (step+i)/10%2 == 1 {
					vx = -2000
				}
				_ = c.Input(tiles.Walk(vx, 0)) // ErrPending (a host behind) drops the input: as a player's would
			}
		}
	}()
	return done
}

// window waits d (the measured time: members keep moving meanwhile).
func window(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}

// cpuTime is the CPU time this process has used (user and system): the region hosts', the
// signaling server's and, in process with them, the members'.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// windowProfile profiles the CPU of the measured window into the file
// CONCORD_WORLD_BENCH_PROFILE names (unset: no profile): the members' samples carry the label
// side=member (go tool pprof -tagfocus side=member, or -tagignore for the node's: region hosts
// and signaling).
func windowProfile(b *testing.B) (stop func()) {
	name := os.Getenv("CONCORD_WORLD_BENCH_PROFILE")
	if name == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%s", name, strings.ReplaceAll(b.Name(), "/", "_")))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// tickLag reports the spacing of the region ticks of a window and whether the hosts fell
// behind: lateBudget or more of their ticks came half an interval late or more. The control's p99
// says how late the machine (shared, and busy with the members in this process) made a goroutine
// that does nothing else: a host's lag beyond it is its loop's own.
func tickLag(b *testing.B, dts, control []time.Duration) (behind bool) {
	if len(dts) == 0 || len(control) == 0 {
		b.Fatal("no tick measured")
	}
	slices.Sort(dts)
	slices.Sort(control)
	p99, cp99 := dts[len(dts)*99/100], control[len(control)*99/100]
	late := 0
	for _, dt := range dts {
		if dt >= peer.DefaultTickInterval*3/2 {
			late++
		}
	}
	b.ReportMetric(float64(dts[len(dts)/2].Microseconds())/1000, "tick-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "tick-p99-ms")
	b.ReportMetric(float64(dts[len(dts)-1].Microseconds())/1000, "tick-max-ms")
	b.ReportMetric(100*float64(late)/float64(len(dts)), "late-%")
	b.ReportMetric(float64(cp99.Microseconds())/1000, "control-p99-ms")
	return float64(late) >= lateBudget*float64(len(dts))
}

// lateBudget is the share of late ticks (half an interval or more) at which the hosts have
// fallen behind: one tick in ten. A p99 criterion would end the sweeps at the first step on a
// machine as shared as this one (load 15–30 on 2 cores), where any goroutine waits 60–110 ms
// once in a hundred ticks.
const lateBudget = 0.10

// scaleStep runs one step of a sweep: members at starts in a cols × rows world, moving, for a
// measured window of 5 s (100 ticks of each region) after a warm-up of 1 s.
func scaleStep(b *testing.B, cols, rows int, starts [][2]int) (behind bool) {
	sw := startScaleWorld(b, cols, rows)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	clients := sw.joinAll(b, ctx, starts)
	setup := time.Since(began)
	stop := make(chan struct{})
	done := move(clients, stop)
	defer func() {
		close(stop)
		<-done
	}()
	window(time.Second)
	b.ResetTimer()
	for range b.N {
		stopProfile := windowProfile(b)
		cpu0, wall0 := cpuTime(), time.Now()
		sw.meter.start()
		window(5 * time.Second)
		hosts, control := sw.meter.stop()
		behind = tickLag(b, hosts, control)
		b.ReportMetric((cpuTime()-cpu0).Seconds()/time.Since(wall0).Seconds(), "cpu-cores")
		stopProfile()
	}
	b.StopTimer()
	b.ReportMetric(setup.Seconds(), "setup-s")
	b.ReportMetric(float64(len(sw.srv.Loaded())), "regions")
	b.ReportMetric(float64(len(clients)), "members")
	return behind
}

// sweepStep counts the runs of one step of a sweep (-count runs each step that many times) that
// fell behind: the sweep ends after a step where most did.
type sweepStep struct{ runs, behind int }

func (s *sweepStep) add(behind bool) {
	s.runs++
	if behind {
		s.behind++
	}
}

func (s *sweepStep) fell() bool { return s.runs > 0 && 2*s.behind > s.runs }

// BenchmarkWorldRegions: regions per node. One Server carries R loaded regions (a world of
// exactly R regions), each with membersPerRegion members moving; R steps up until the region
// hosts' ticks fall behind (tickLag) in most of its runs, and the steps after it are skipped.
// Members follow their neighbours (view 1), so an inner region's host serves 9 × that many.
func BenchmarkWorldRegions(b *testing.B) {
	const membersPerRegion = 2
	var fell string
	for _, g := range [][2]int{{2, 2}, {4, 4}, {8, 4}, {8, 8}, {16, 8}} {
		var st sweepStep
		b.Run(fmt.Sprintf("regions=%d", g[0]*g[1]), func(b *testing.B) {
			if fell != "" {
				b.Skipf("the hosts fell behind at %s", fell)
			}
			var starts [][2]int
			for y := range g[1] {
				for x := range g[0] {
					for range membersPerRegion {
						starts = append(starts, [2]int{x, y})
					}
				}
			}
			st.add(scaleStep(b, g[0], g[1], starts))
		})
		if st.fell() {
			fell = fmt.Sprintf("%d regions", g[0]*g[1])
		}
	}
}

// BenchmarkWorldMembers: members per region. One region (a world of 1 × 1: no neighbours, so
// every member is a resident) with M members moving; M steps up until its host's ticks fall
// behind.
func BenchmarkWorldMembers(b *testing.B) {
	var fell string
	for _, m := range []int{8, 32, 64, 96, 128, 192, 256} {
		var st sweepStep
		b.Run(fmt.Sprintf("members=%d", m), func(b *testing.B) {
			if fell != "" {
				b.Skipf("the host fell behind at %s", fell)
			}
			st.add(scaleStep(b, 1, 1, make([][2]int, m)))
		})
		if st.fell() {
			fell = fmt.Sprintf("%d members", m)
		}
	}
}

// BenchmarkWorldFollow: the cost of following neighbours. A 3 × 3 world, 4 members moving in
// each region, every one following its view (view 1: the whole world from the centre, 4
// regions from a corner). For each member, the bytes its resident region's room sent it are
// what it receives with view distance 0 (a view-0 client follows that room only, and a host
// sends a member the same whatever else it follows); the bytes of every room it follows are
// what it receives with the default view. Same run, same movement; reported per member per
// second, over all members and over the centre region's (which follows 8 neighbours).
func BenchmarkWorldFollow(b *testing.B) {
	const side, perRegion = 3, 4
	var starts [][2]int
	for y := range side {
		for x := range side {
			for range perRegion {
				starts = append(starts, [2]int{x, y})
			}
		}
	}
	sw := startScaleWorld(b, side, side)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clients := sw.joinAll(b, ctx, starts)
	stop := make(chan struct{})
	done := move(clients, stop)
	defer func() {
		close(stop)
		<-done
	}()
	window(time.Second)
	// in returns, per member, the bytes received from its resident room and from every room.
	in := func() (res, all []uint64) {
		for _, c := range clients {
			r, _, _ := c.Resident()
			var rb, ab uint64
			for _, f := range c.Regions() {
				p := c.PeerOf(f.Room())
				if p == nil {
					continue
				}
				n := p.Status().BytesIn
				ab += n
				if f == r {
					rb = n
				}
			}
			res, all = append(res, rb), append(all, ab)
		}
		return res, all
	}
	b.ResetTimer()
	for range b.N {
		res0, all0 := in()
		began := time.Now()
		window(3 * time.Second)
		res1, all1 := in()
		secs := time.Since(began).Seconds()
		var res, all, cres, call float64
		centre := 0
		for i := range clients {
			r, a := float64(res1[i]-res0[i]), float64(all1[i]-all0[i])
			res, all = res+r, all+a
			if starts[i] == [2]int{side / 2, side / 2} {
				cres, call, centre = cres+r, call+a, centre+1
			}
		}
		n := float64(len(clients))
		b.ReportMetric(res/n/secs, "view0-B/member/s")
		b.ReportMetric(all/n/secs, "view1-B/member/s")
		b.ReportMetric(all/res, "ratio")
		b.ReportMetric(cres/float64(centre)/secs, "centre-view0-B/s")
		b.ReportMetric(call/float64(centre)/secs, "centre-view1-B/s")
		b.ReportMetric(call/cres, "centre-ratio")
	}
}

// BenchmarkWorldLoad: load and unload times of every region of the 8 × 8 tiles world, one at a
// time, on a Server whose checkpoints are in JetStream (internal/durable): a load from the
// generator (never visited), N edits in each region (N blocks spawned), an unload (the state
// read and checkpointed through the Writer, the host stopped), then a new Server on the same
// store loading each region from its checkpoint. Region hosts are pion peers on loopback (they
// have no member: no link is made).
func BenchmarkWorldLoad(b *testing.B) {
	for _, edits := range []int{16, 256} {
		b.Run(fmt.Sprintf("edits=%d", edits), func(b *testing.B) {
			for range b.N {
				benchLoad(b, edits)
			}
		})
	}
}

func benchLoad(b *testing.B, edits int) {
	b.StopTimer()
	def := tiles.Def()
	rooms := map[signaling.RoomID]signaling.RoomConfig{}
	for _, room := range def.Rooms() {
		rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{"host"}}
	}
	sig := signaling.New(signaling.Config{Rooms: rooms, Logger: zerolog.Nop()})
	defer sig.Close()
	hs := httptest.NewServer(sig.Handler())
	defer hs.Close()
	st, err := durable.Open(durable.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	server := func(wr *durable.Writer) *world.Server {
		srv, err := world.NewServer(world.ServerConfig{Def: def, URL: hs.URL, Store: st, Writer: wr, Grace: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return srv
	}
	timed := func(what string, fn func(x, y int) error) []time.Duration {
		var ds []time.Duration
		for y := range def.Rows {
			for x := range def.Cols {
				t0 := time.Now()
				if err := fn(x, y); err != nil {
					b.Fatalf("%s (%d, %d): %v", what, x, y, err)
				}
				ds = append(ds, time.Since(t0))
			}
		}
		return ds
	}
	load := func(srv *world.Server) func(x, y int) error {
		return func(x, y int) error { _, err := srv.Load(ctx, x, y); return err }
	}

	wr := durable.NewWriter(st, durable.WriterConfig{})
	srv := server(wr)
	b.StartTimer()
	generated := timed("generate", load(srv))
	b.StopTimer()
	for y := range def.Rows {
		for x := range def.Cols {
			r, _ := def.Region(x, y)
			if err := srv.Inspect(ctx, x, y, func(w *peer.World) {
				for i := range edits {
					tx, ty := r.Min.X/tiles.Tile+int32(i%tiles.TilesPer), r.Min.Y/tiles.Tile+int32(i/tiles.TilesPer%tiles.TilesPer)
					_, _ = w.Spawn(tiles.SchemaBlock, nil, binary.LittleEndian.AppendUint32(nil, uint32(tx)), binary.LittleEndian.AppendUint32(nil, uint32(ty)), []byte{byte(1 + i%tiles.Kinds)})
				}
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StartTimer()
	unloaded := timed("unload", func(x, y int) error {
		if !srv.Unload(x, y) {
			return fmt.Errorf("not loaded")
		}
		return nil
	})
	b.StopTimer()
	srv.Close()
	wr.Close() // every checkpoint written

	wr = durable.NewWriter(st, durable.WriterConfig{})
	defer wr.Close()
	srv = server(wr)
	defer srv.Close()
	b.StartTimer()
	restored := timed("restore", load(srv))
	b.StopTimer()
	var blocks int
	if err := srv.Inspect(ctx, 0, 0, func(w *peer.World) { blocks = len(w.EntitiesOf(tiles.SchemaBlock)) }); err != nil {
		b.Fatal(err)
	}
	if blocks < edits {
		b.Fatalf("region (0, 0) restored with %d blocks, %d edited", blocks, edits)
	}
	report(b, "generate", generated)
	report(b, "unload", unloaded)
	report(b, "checkpoint", restored)
}
