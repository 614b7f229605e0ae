package main

// concord bench: measurements of Concord over real pion connections on loopback.
//
//   - fanout: a host moves M entities at 20 Hz and N passive bots receive them, all in one
//     process; then the same datagrams go through raw link.Conn pairs (no session logic) as the
//     baseline, so that the CPU and latency ratios are measured in one run on one machine.
//   - migration: P bots in this process follow a host that runs as a separate process
//     (the hidden bench-host command); the host is killed with SIGKILL, and the pause until
//     every replica has converged and updates flow again is measured over many trials.
//
// Results and the commands that produced them are in BENCHMARKS.md.

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/bits"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

const (
	benchRoom = "bench"
	// benchHostUser is the identity of the bench host process; the migration room pins it, so a
	// new bench host takes the room over once it has synced.
	benchHostUser = "benchhost"

	benchSchemaMover schema.ID = 1
	benchPropPos               = 0 // x, y int32: changes every tick
	benchPropSent              = 1 // int64 unix nanos: when the host wrote the tick
	benchTick                  = 50 * time.Millisecond

	// Bounds of the flags, so that a typo cannot take the machine down.
	maxBenchBots     = 64
	maxBenchEntities = 20000
	maxBenchDuration = 10 * time.Minute
	maxBenchTrials   = 500
)

var benchSchemas = schema.MustTable(schema.Schema{ID: benchSchemaMover, Name: "mover", Properties: []schema.Property{
	{Name: "pos", Component: 1024, Size: 8},
	{Name: "sent", Component: 1025, Size: 8},
}})

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("want a benchmark: fanout or migration")}
	}
	switch args[0] {
	case "fanout":
		return cmdBenchFanout(ctx, args[1:], stdout, stderr)
	case "migration":
		return cmdBenchMigration(ctx, args[1:], stdout, stderr)
	default:
		return usageError{fmt.Errorf("unknown benchmark %q: want fanout or migration", args[0])}
	}
}

// ---------------------------------------------------------------------------------------------
// The bench app.

// benchProbe is what a bot's app records for the driver. The atomics may be read from any goroutine;
// hist and seen belong to the peer's loop (read them through Peer.Do or after Run returned).
type benchProbe struct {
	recording *atomic.Bool // shared: record latencies while set

	hist benchHist
	// seen is the newest sent time seen per entity (migration only; nil in fanout).
	seen map[peer.Entity]int64

	hostTerm      atomic.Uint64
	host          atomic.Uint64
	hostChangedAt atomic.Int64 // unix nanos
	syncedTerm    atomic.Uint64
	syncedAt      atomic.Int64
	lastSent      atomic.Int64 // newest sent time seen on any entity
	freshAfter    atomic.Int64 // set by the driver: values sent after this are fresh
	freshAt       atomic.Int64 // when the first fresh value arrived (0: not yet)
}

func newBenchProbe(recording *atomic.Bool, track bool) *benchProbe {
	pr := &benchProbe{recording: recording}
	if track {
		pr.seen = make(map[peer.Entity]int64)
	}
	return pr
}

// expectFresh resets the fresh-value watch: the next value sent after t counts.
func (pr *benchProbe) expectFresh(t time.Time) {
	pr.freshAt.Store(0)
	pr.freshAfter.Store(t.UnixNano())
}

// benchApp is the peer.App of every bench peer. As host it spawns `entities` movers in an empty
// world and, every tick, moves the first moving ones: a new position and the current wall-clock
// time, so that receivers can measure latency. As member it only records (probe).
type benchApp struct {
	entities int          // host: entities in a new world
	moving   int          // host: entities moved per tick; 0 moves all
	hold     *atomic.Bool // host: while set, do not move (nil: never hold)
	probe    *benchProbe  // nil: record nothing

	movers []peer.Entity
	pos    [8]byte
	sent   [8]byte
	// The clock is read once per arriving tick (the values of one datagram carry one sent time),
	// or every 64 values, so that measuring costs little next to what is measured.
	lastSent, now int64
	sinceNow      int
}

func (a *benchApp) Schemas() *schema.Table { return benchSchemas }

// HostStart spawns the world when it is empty. A world that survived a migration is kept as is:
// respawning missing entities would hide a loss.
func (a *benchApp) HostStart(w *peer.World) {
	have := w.EntitiesOf(benchSchemaMover)
	if len(have) == 0 {
		for i := range a.entities {
			binary.LittleEndian.PutUint32(a.pos[:], uint32(i))
			binary.LittleEndian.PutUint32(a.pos[4:], 0)
			binary.LittleEndian.PutUint64(a.sent[:], 0)
			if _, err := w.Spawn(benchSchemaMover, nil, a.pos[:], a.sent[:]); err != nil {
				break
			}
		}
		have = w.EntitiesOf(benchSchemaMover)
	}
	if a.moving > 0 && a.moving < len(have) {
		have = have[:a.moving]
	}
	a.movers = have
}

// SpawnAvatar gives bench members no avatar: they are passive receivers.
func (a *benchApp) SpawnAvatar(*peer.World, peer.PeerInfo) (peer.Entity, error) { return 0, nil }

func (a *benchApp) RPC(*peer.World, peer.PeerIndex, uint32, []byte) {}

// Tick moves the movers on the host: every one gets a new position and the tick's time.
func (a *benchApp) Tick(w *peer.World, _ time.Duration) {
	if !w.IsHost() || (a.hold != nil && a.hold.Load()) {
		return
	}
	now := time.Now().UnixNano()
	binary.LittleEndian.PutUint64(a.sent[:], uint64(now))
	binary.LittleEndian.PutUint32(a.pos[:], uint32(now/int64(time.Millisecond)))
	for i, e := range a.movers {
		binary.LittleEndian.PutUint32(a.pos[4:], uint32(i))
		if w.Set(e, benchPropPos, a.pos[:]) != nil {
			continue // despawned or not ours: nothing to move
		}
		_ = w.Set(e, benchPropSent, a.sent[:])
	}
}

// OnEvent records latency (now − sent) of every sent value that arrives, and the host changes and
// syncs the migration driver waits for.
func (a *benchApp) OnEvent(w *peer.World, ev peer.Event) {
	pr := a.probe
	if pr == nil {
		return
	}
	switch ev.Kind {
	case peer.EventUpdated:
		if ev.Props&(1<<benchPropSent) == 0 {
			return
		}
		v, ok := w.Get(ev.Entity, benchPropSent)
		if !ok || len(v) != 8 {
			return
		}
		sent := int64(binary.LittleEndian.Uint64(v))
		if sent == 0 {
			return // spawned, never moved
		}
		if sent != a.lastSent || a.sinceNow >= 64 {
			a.lastSent, a.now, a.sinceNow = sent, time.Now().UnixNano(), 0
		}
		a.sinceNow++
		now := a.now
		if pr.recording != nil && pr.recording.Load() {
			pr.hist.add(now - sent)
		}
		if sent > pr.lastSent.Load() {
			pr.lastSent.Store(sent)
		}
		if fa := pr.freshAfter.Load(); fa != 0 && sent > fa && pr.freshAt.Load() == 0 {
			pr.freshAt.Store(now)
		}
		if pr.seen != nil && sent > pr.seen[ev.Entity] {
			pr.seen[ev.Entity] = sent
		}
	case peer.EventHostChanged:
		pr.host.Store(uint64(ev.Peer))
		pr.hostTerm.Store(uint64(ev.Term))
		pr.hostChangedAt.Store(time.Now().UnixNano())
	case peer.EventSynced:
		pr.syncedAt.Store(time.Now().UnixNano())
		pr.syncedTerm.Store(uint64(ev.Term))
	default:
	}
}

// ---------------------------------------------------------------------------------------------
// Measurement helpers.

// benchHist counts durations in log-linear buckets: 1 µs wide below 64 µs, then 32 buckets per
// power of two (about 3% wide), which is precise enough for percentiles.
type benchHist struct {
	counts [2048]uint64
	n      uint64
}

func benchHistIndex(ns int64) int {
	u := uint64(max(ns, 0)) / 1000
	if u < 64 {
		return int(u)
	}
	shift := bits.Len64(u) - 6
	return 64 + (shift-1)*32 + int(u>>shift) - 32
}

// benchHistValue is the midpoint of bucket i.
func benchHistValue(i int) time.Duration {
	if i < 64 {
		return time.Duration(i)*time.Microsecond + 500*time.Nanosecond
	}
	shift := (i-64)/32 + 1
	s := uint64((i-64)%32) + 32
	lo, hi := s<<shift, (s+1)<<shift
	return time.Duration((lo+hi)/2) * time.Microsecond
}

func (h *benchHist) add(ns int64) { h.addN(ns, 1) }

func (h *benchHist) addN(ns int64, n uint64) {
	h.counts[min(benchHistIndex(ns), len(h.counts)-1)] += n
	h.n += n
}

func (h *benchHist) merge(o *benchHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// above returns the fraction of the values at or above d (to the bucket's precision).
func (h *benchHist) above(d time.Duration) float64 {
	if h.n == 0 {
		return 0
	}
	var n uint64
	for i := benchHistIndex(int64(d)); i < len(h.counts); i++ {
		n += h.counts[i]
	}
	return float64(n) / float64(h.n)
}

// quantile returns the q-quantile (0 < q ≤ 1), or 0 for an empty benchHist.
func (h *benchHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	target := uint64(q*float64(h.n) + 0.5)
	target = max(target, 1)
	var cum uint64
	for i, c := range h.counts {
		if cum += c; cum >= target {
			return benchHistValue(i)
		}
	}
	return benchHistValue(len(h.counts) - 1)
}

// benchCPUTime returns the user+system CPU time this process has used.
func benchCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingTransport counts the payload bytes and messages a peer's links send and receive, per
// channel, so that the driver can read exact traffic at any instant (peer.Status is refreshed only
// every report interval).
type countingTransport struct {
	inner    peer.Transport
	bytesIn  [link.NumChannels]atomic.Uint64
	bytesOut [link.NumChannels]atomic.Uint64
	msgsIn   [link.NumChannels]atomic.Uint64
	msgsOut  [link.NumChannels]atomic.Uint64
}

func (t *countingTransport) Connect(cfg peer.LinkConfig) (peer.Link, error) {
	h := cfg.Handler
	cfg.Handler = func(ch link.Channel, b []byte) {
		if ch < link.NumChannels {
			t.bytesIn[ch].Add(uint64(len(b)))
			t.msgsIn[ch].Add(1)
		}
		h(ch, b)
	}
	l, err := t.inner.Connect(cfg)
	if err != nil {
		return nil, err
	}
	return countingLink{Link: l, t: t}, nil
}

type countingLink struct {
	peer.Link
	t *countingTransport
}

func (l countingLink) Send(ch link.Channel, b []byte) error {
	err := l.Link.Send(ch, b)
	if err == nil && ch < link.NumChannels {
		l.t.bytesOut[ch].Add(uint64(len(b)))
		l.t.msgsOut[ch].Add(1)
	}
	return err
}

// total is every byte in and out, both channels.
func (t *countingTransport) total() uint64 {
	var n uint64
	for ch := range link.NumChannels {
		n += t.bytesIn[ch].Load() + t.bytesOut[ch].Load()
	}
	return n
}

// pionLogger is the logger of the benchmark's pion stacks: quiet unless debugging, because closing
// hundreds of links logs harmless write errors.
func pionLogger(log zerolog.Logger) zerolog.Logger {
	if log.GetLevel() <= zerolog.DebugLevel {
		return log
	}
	return log.Level(zerolog.Disabled)
}

// benchSignaling is an in-process signaling server on 127.0.0.1.
type benchSignaling struct {
	url  string
	srv  *signaling.Server
	http *http.Server
	done chan struct{}
}

func startBenchSignaling(log zerolog.Logger, pinned []signaling.Identity, relay *benchRelay) (*benchSignaling, error) {
	var ice signaling.ICEServersFunc
	if relay != nil {
		ice = relay.iceServers
	}
	srv := signaling.New(signaling.Config{
		Logger:     log.With().Str("component", "signaling").Logger(),
		ICEServers: ice,
		Rooms:      map[signaling.RoomID]signaling.RoomConfig{benchRoom: {PinnedHosts: pinned, MaxMembers: 2 * maxBenchBots}},
		// A host that answers every member at once signals in a burst; keep the limits out of the way.
		SignalRate: 2000, SignalBurst: 4000, SendQueue: 4096,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	s := &benchSignaling{url: "http://" + ln.Addr().String(), srv: srv, done: make(chan struct{}),
		http: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

func (s *benchSignaling) stop() {
	_ = s.srv.Close()
	_ = s.http.Close()
	<-s.done
}

// benchPeers runs in-process peers, each with its own link.API (one shared UDP mux cannot hold
// two live connections to the same remote address) and counting transport.
type benchPeers struct {
	url    string
	log    zerolog.Logger
	pion   zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error

	// reportInterval and digestInterval override the peers' defaults when not zero.
	reportInterval, digestInterval time.Duration
	standby                        bool // peer.Config.Standby
	// relayOnly makes the members' links relay-only (peer.Config.RelayOnly); a peer started as
	// a dedicated host keeps its host candidates, so a link takes one trip through the relay.
	relayOnly bool

	peers  []*peer.Peer
	probes []*benchProbe
	trans  []*countingTransport
	apis   []*link.API
}

func newBenchPeers(ctx context.Context, url string, log zerolog.Logger) *benchPeers {
	ctx, cancel := context.WithCancel(ctx)
	return &benchPeers{url: url, log: log, pion: pionLogger(log), ctx: ctx, cancel: cancel,
		errs: make(chan error, 4*maxBenchBots)}
}

func (b *benchPeers) start(user string, kind signaling.Kind, app *benchApp) (*peer.Peer, error) {
	api, err := link.NewAPI(link.Config{Logger: b.pion})
	if err != nil {
		return nil, err
	}
	ct := &countingTransport{inner: peer.PionTransport{API: api}}
	p, err := peer.New(peer.Config{
		Server: b.url, Room: benchRoom, User: user, Kind: kind, App: app, Transport: ct,
		Logger:         b.log.With().Str("who", user).Logger(),
		ReportInterval: b.reportInterval, DigestInterval: b.digestInterval, Standby: b.standby,
		RelayOnly: b.relayOnly && kind != signaling.KindHost,
	})
	if err != nil {
		_ = api.Close()
		return nil, err
	}
	b.peers, b.probes, b.trans, b.apis = append(b.peers, p), append(b.probes, app.probe), append(b.trans, ct), append(b.apis, api)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := p.Run(b.ctx); err != nil && b.ctx.Err() == nil {
			b.errs <- fmt.Errorf("peer %s: %w", user, err)
		}
	}()
	return p, nil
}

// failed returns the first error a peer stopped with, if any.
func (b *benchPeers) failed() error {
	select {
	case err := <-b.errs:
		return err
	default:
		return nil
	}
}

// close stops every peer, waits for them and closes their APIs.
func (b *benchPeers) close() {
	b.cancel()
	b.wg.Wait()
	for _, api := range b.apis {
		_ = api.Close()
	}
}

// benchWait polls cond every few milliseconds until it returns nil, ctx ends, a peer fails or
// timeout passes.
func benchWait(ctx context.Context, timeout time.Duration, what string, failed func() error, cond func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = cond(); last == nil {
			return nil
		}
		if failed != nil {
			if err := failed(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached in %v: %w", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func benchSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func startBenchProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// ---------------------------------------------------------------------------------------------
// concord bench fanout.

type fanoutOptions struct {
	bots       int
	entities   int
	duration   time.Duration
	warmup     time.Duration
	cpuProfile string
	relay      bool // bots reach the host only through a TURN relay process (benchRelay)
	// relayCommand makes the relay's `concord serve` command; nil runs this executable.
	relayCommand func(args []string) *exec.Cmd
}

// phaseResult is one measured window of the fanout benchmark.
type phaseResult struct {
	wall     time.Duration
	cpu      time.Duration
	hostIn   float64 // bytes per second
	hostOut  float64
	botIn    float64 // mean per bot, bytes per second
	botOut   float64
	dgrams   float64 // unreliable datagrams received per second per bot
	dgramLen float64 // mean unreliable datagram size received
	updates  float64 // entity updates (sent values) received per second per bot
	dropped  float64 // unreliable datagrams the host's links dropped per second (send buffer full)
	lat      benchHist
	note     string
	relay    relayWindow // the relay process's CPU and relayed bytes over the window (-relay)
}

func (r *phaseResult) cpuPercent() float64 {
	if r.wall <= 0 {
		return 0
	}
	return 100 * float64(r.cpu) / float64(r.wall)
}

type fanoutResult struct {
	opts    fanoutOptions
	concord phaseResult
	raw     phaseResult
}

func cmdBenchFanout(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench fanout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o fanoutOptions
	fs.IntVar(&o.bots, "n", 8, "number of bot peers receiving the host's updates")
	fs.IntVar(&o.entities, "m", 100, "number of entities the host moves every tick")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each phase")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "time each phase runs before it is measured")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the Concord phase's measured window to this file")
	fs.BoolVar(&o.relay, "relay", false, "bots reach the host only through a TURN relay (a `concord serve --turn` child process on loopback, whose CPU is reported)")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if o.bots < 1 || o.bots > maxBenchBots || o.entities < 1 || o.entities > maxBenchEntities ||
		o.duration <= 0 || o.duration > maxBenchDuration || o.warmup < 0 || o.warmup > maxBenchDuration {
		return usageError{fmt.Errorf("want 1 ≤ -n ≤ %d, 1 ≤ -m ≤ %d, 0 < -duration ≤ %v, 0 ≤ -warmup ≤ %v",
			maxBenchBots, maxBenchEntities, maxBenchDuration, maxBenchDuration)}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	res, err := runFanout(ctx, o, log, stderr)
	if err != nil {
		return err
	}
	printFanout(stdout, res)
	return nil
}

// runFanout measures the Concord phase, then the raw pion baseline, in this process.
func runFanout(ctx context.Context, o fanoutOptions, log zerolog.Logger, progress io.Writer) (*fanoutResult, error) {
	res := &fanoutResult{opts: o}
	fmt.Fprintf(progress, "fanout: concord phase, %d bots, %d entities, %v warm-up + %v measured\n", o.bots, o.entities, o.warmup, o.duration)
	c, err := runConcordFanout(ctx, o, log)
	if err != nil {
		return nil, fmt.Errorf("concord phase: %w", err)
	}
	res.concord = *c
	runtime.GC()
	fmt.Fprintf(progress, "fanout: raw pion phase\n")
	r, err := runRawFanout(ctx, o, log)
	if err != nil {
		return nil, fmt.Errorf("raw phase: %w", err)
	}
	res.raw = *r
	return res, nil
}

// statusMark is a peer.Status byte count and when the driver first saw it.
type statusMark struct {
	at            time.Time
	in, out, lost uint64
}

// statusRate follows a peer's published byte counters. A Status is republished every report
// interval; the rate between the first and the last change seen inside the window is exact up to
// the polling period.
type statusRate struct {
	prev, first, last statusMark
	have              int
}

func (s *statusRate) observe(now time.Time, st peer.Status, from, to time.Time) {
	if st.BytesIn == s.prev.in && st.BytesOut == s.prev.out {
		return
	}
	m := statusMark{at: now, in: st.BytesIn, out: st.BytesOut, lost: st.LinkLost}
	s.prev = m
	if now.Before(from) || now.After(to) {
		return
	}
	if s.have == 0 {
		s.first = m
	}
	s.last = m
	s.have++
}

func (s *statusRate) rates() (in, out, lost float64, ok bool) {
	d := s.last.at.Sub(s.first.at).Seconds()
	if s.have < 2 || d <= 0 {
		return 0, 0, 0, false
	}
	return float64(s.last.in-s.first.in) / d, float64(s.last.out-s.first.out) / d, float64(s.last.lost-s.first.lost) / d, true
}

func runConcordFanout(ctx context.Context, o fanoutOptions, log zerolog.Logger) (*phaseResult, error) {
	relay, err := startBenchRelay(ctx, o.relay, o.relayCommand)
	if err != nil {
		return nil, err
	}
	defer relay.stop()
	sig, err := startBenchSignaling(log, []signaling.Identity{benchHostUser}, relay)
	if err != nil {
		return nil, err
	}
	defer sig.stop()
	bp := newBenchPeers(ctx, sig.url, log)
	bp.relayOnly = o.relay
	defer bp.close()

	recording := new(atomic.Bool)
	host, err := bp.start(benchHostUser, signaling.KindHost, &benchApp{entities: o.entities})
	if err != nil {
		return nil, err
	}
	if err := benchWait(ctx, 10*time.Second, "host elected", bp.failed, func() error {
		if !host.Status().IsHost {
			return errors.New("not host yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	bots := make([]*peer.Peer, 0, o.bots)
	for i := range o.bots {
		p, err := bp.start(fmt.Sprintf("bot%d", i+1), signaling.KindBot, &benchApp{probe: newBenchProbe(recording, false)})
		if err != nil {
			return nil, err
		}
		bots = append(bots, p)
	}
	start := time.Now()
	if err := benchWait(ctx, 30*time.Second+time.Duration(o.bots)*time.Second, "bots synced and receiving", bp.failed, func() error {
		for i, pr := range bp.probes[1:] {
			if pr.syncedTerm.Load() == 0 || pr.lastSent.Load() < start.UnixNano() {
				return fmt.Errorf("bot %d not synced or not receiving yet", i+1)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}

	// Follow the published counters from the warm-up on: the first change inside the window
	// starts the rate.
	all := append([]*peer.Peer{host}, bots...)
	rates := make([]statusRate, len(all))
	from := time.Now().Add(o.warmup)
	to := from.Add(o.duration)
	samplerStop, samplerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(samplerDone)
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			var now time.Time
			select {
			case <-samplerStop:
				return
			case now = <-tk.C:
			}
			for i, p := range all {
				rates[i].observe(now, p.Status(), from, to)
			}
			if now.After(to) {
				return
			}
		}
	}()
	var stopOnce sync.Once
	stopSampler := func() {
		stopOnce.Do(func() {
			close(samplerStop)
			<-samplerDone
		})
	}
	defer stopSampler()
	if err := benchSleep(ctx, time.Until(from)); err != nil {
		return nil, err
	}
	stopProfile, err := startBenchProfile(o.cpuProfile)
	if err != nil {
		return nil, err
	}
	var in0, n0 []uint64
	for _, t := range bp.trans[1:] {
		in0 = append(in0, t.bytesIn[link.Unreliable].Load())
		n0 = append(n0, t.msgsIn[link.Unreliable].Load())
	}
	byteCounts := func() (hostIn, hostOut, botIn, botOut uint64) {
		for i, t := range bp.trans {
			var in, out uint64
			for ch := range link.NumChannels {
				in += t.bytesIn[ch].Load()
				out += t.bytesOut[ch].Load()
			}
			if i == 0 {
				hostIn, hostOut = in, out
			} else {
				botIn, botOut = botIn+in, botOut+out
			}
		}
		return
	}
	hi0, ho0, bi0, bo0 := byteCounts()
	rel0 := relay.mark()
	t0, cpu0 := time.Now(), benchCPUTime()
	recording.Store(true)
	err = benchSleep(ctx, time.Until(to))
	recording.Store(false)
	t1, cpu1 := time.Now(), benchCPUTime()
	rel1 := relay.mark()
	hi1, ho1, bi1, bo1 := byteCounts()
	stopProfile()
	stopSampler() // rates belong to the sampler until it has stopped
	if err != nil {
		return nil, err
	}
	if err := bp.failed(); err != nil {
		return nil, err
	}
	res := &phaseResult{wall: t1.Sub(t0), cpu: cpu1 - cpu0, relay: relayWindow{cpu: rel1.cpu - rel0.cpu, bytes: rel1.bytes - rel0.bytes}}
	var dgramBytes, dgrams uint64
	for i, t := range bp.trans[1:] {
		dgramBytes += t.bytesIn[link.Unreliable].Load() - in0[i]
		dgrams += t.msgsIn[link.Unreliable].Load() - n0[i]
	}
	secs := res.wall.Seconds()
	res.dgrams = float64(dgrams) / secs / float64(len(bots))
	if dgrams > 0 {
		res.dgramLen = float64(dgramBytes) / float64(dgrams)
	}
	hostIn, hostOut, hostLost, ok := rates[0].rates()
	res.hostIn, res.hostOut, res.dropped = hostIn, hostOut, hostLost
	for i := range bots {
		in, out, _, _ := rates[i+1].rates()
		res.botIn += in / float64(len(bots))
		res.botOut += out / float64(len(bots))
	}
	if !ok {
		// Fewer than two status reports fell in the window: count at the links instead.
		res.note = "concord: window shorter than two status reports; byte rates counted at the links, host drops unknown"
		nb := float64(len(bots))
		res.hostIn, res.hostOut = float64(hi1-hi0)/secs, float64(ho1-ho0)/secs
		res.botIn, res.botOut = float64(bi1-bi0)/secs/nb, float64(bo1-bo0)/secs/nb
	}
	// The histograms belong to the bots' loops: read them once the loops have stopped.
	bp.close()
	for _, pr := range bp.probes[1:] {
		res.lat.merge(&pr.hist)
	}
	res.updates = float64(res.lat.n) / secs / float64(len(bots))
	return res, nil
}

// rawTemplates builds the datagrams a Concord host sends every tick for m entities of the bench
// schema: EntityUpdates packed to at most 1200 bytes, one stamp, entity ids from the first spawn
// number on. The time field (bytes 1–8) is rewritten with the send time every tick.
func rawTemplates(m int) [][]byte {
	s, _ := benchSchemas.Lookup(benchSchemaMover)
	width, _ := netmsg.MaskWidth(len(s.Properties))
	data := make([]byte, 16)
	var out [][]byte
	var w netmsg.EntityUpdatesWriter
	w.Reset(make([]byte, 0, netmsg.MaxDatagram), 0, netmsg.MaxDatagram)
	for i := range m {
		u := netmsg.Update{NetworkID: uint64(peer.FirstSpawnNumber) + uint64(i), Width: width, Mask: 0b11, Data: data}
		if !w.Add(&u) {
			out = append(out, w.Bytes())
			w.Reset(make([]byte, 0, netmsg.MaxDatagram), 0, netmsg.MaxDatagram)
			w.Add(&u)
		}
	}
	if w.Count() > 0 {
		out = append(out, w.Bytes())
	}
	return out
}

// rawReceiver is one end of a raw baseline pair: it reads the send time and the update count of
// every datagram, on its read goroutine (no copy, no loop, no merge).
type rawReceiver struct {
	recording *atomic.Bool
	hist      benchHist // written by the unreliable read goroutine; read after Close
}

func (r *rawReceiver) handle(ch link.Channel, b []byte) {
	if ch != link.Unreliable || len(b) < 13 || b[0] != byte(netmsg.TypeEntityUpdates) || !r.recording.Load() {
		return
	}
	sent := int64(binary.LittleEndian.Uint64(b[1:]))
	count := binary.LittleEndian.Uint32(b[9:])
	r.hist.addN(time.Now().UnixNano()-sent, uint64(count))
}

func runRawFanout(ctx context.Context, o fanoutOptions, log zerolog.Logger) (*phaseResult, error) {
	pion := pionLogger(log)
	sendAPI, err := link.NewAPI(link.Config{Logger: pion})
	if err != nil {
		return nil, err
	}
	defer sendAPI.Close()
	recording := new(atomic.Bool)
	type pair struct {
		api    *link.API
		tx, rx *link.Conn
		recv   *rawReceiver
	}
	var pairs []*pair
	relayStop := make(chan struct{})
	var relays sync.WaitGroup
	defer func() {
		for _, p := range pairs {
			if p.rx != nil {
				_ = p.rx.Close()
			}
			if p.tx != nil {
				_ = p.tx.Close()
			}
		}
		close(relayStop)
		relays.Wait()
		for _, p := range pairs {
			_ = p.api.Close()
		}
	}()
	queue := func(ch chan link.Signal) func(link.Signal) error {
		return func(s link.Signal) error {
			select {
			case ch <- s:
				return nil
			default:
				return errors.New("relay queue full")
			}
		}
	}
	for range o.bots {
		api, err := link.NewAPI(link.Config{Logger: pion})
		if err != nil {
			return nil, err
		}
		p := &pair{api: api, recv: &rawReceiver{recording: recording}}
		pairs = append(pairs, p)
		toTx, toRx := make(chan link.Signal, 64), make(chan link.Signal, 64)
		// As in Concord, the receiver (member) offers and the sender (host) answers.
		if p.tx, err = sendAPI.NewAnswerer(link.ConnConfig{Signal: queue(toRx), Logger: pion}); err != nil {
			return nil, err
		}
		if p.rx, err = api.NewOfferer(link.ConnConfig{Signal: queue(toTx), Handler: p.recv.handle, Logger: pion}); err != nil {
			return nil, err
		}
		relays.Add(1)
		go func() {
			defer relays.Done()
			for {
				select {
				case <-relayStop:
					return
				case s := <-toTx:
					_ = p.tx.HandleSignal(s)
				case s := <-toRx:
					_ = p.rx.HandleSignal(s)
				}
			}
		}()
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, p := range pairs {
		for _, c := range []*link.Conn{p.tx, p.rx} {
			if err := c.WaitReady(rctx); err != nil {
				return nil, fmt.Errorf("raw pair not ready: %w", err)
			}
		}
	}

	// The sender: every tick, stamp the datagrams and send them to every receiver in turn, as
	// the Concord host's flush does.
	tmpl := rawTemplates(o.entities)
	sendStop, sendDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sendDone)
		tk := time.NewTicker(benchTick)
		defer tk.Stop()
		for {
			select {
			case <-sendStop:
				return
			case <-tk.C:
			}
			now := uint64(time.Now().UnixNano())
			for _, d := range tmpl {
				binary.LittleEndian.PutUint64(d[1:], now)
			}
			for _, p := range pairs {
				for _, d := range tmpl {
					_ = p.tx.Send(link.Unreliable, d)
				}
			}
		}
	}()
	stats := func() (hostIn, hostOut, botIn, botOut, dgrams, dgramBytes, dropped uint64) {
		for _, p := range pairs {
			ts, rs := p.tx.Stats(), p.rx.Stats()
			dropped += ts.Channels[link.Unreliable].Dropped
			for ch := range link.NumChannels {
				hostIn += ts.Channels[ch].BytesReceived
				hostOut += ts.Channels[ch].BytesSent
				botIn += rs.Channels[ch].BytesReceived
				botOut += rs.Channels[ch].BytesSent
			}
			dgrams += rs.Channels[link.Unreliable].MessagesReceived
			dgramBytes += rs.Channels[link.Unreliable].BytesReceived
		}
		return
	}
	err = benchSleep(ctx, o.warmup)
	if err == nil {
		hi0, ho0, bi0, bo0, d0, db0, x0 := stats()
		t0, cpu0 := time.Now(), benchCPUTime()
		recording.Store(true)
		err = benchSleep(ctx, o.duration)
		recording.Store(false)
		t1, cpu1 := time.Now(), benchCPUTime()
		hi1, ho1, bi1, bo1, d1, db1, x1 := stats()
		close(sendStop)
		<-sendDone
		if err != nil {
			return nil, err
		}
		res := &phaseResult{wall: t1.Sub(t0), cpu: cpu1 - cpu0}
		secs, n := res.wall.Seconds(), float64(len(pairs))
		res.hostIn, res.hostOut = float64(hi1-hi0)/secs, float64(ho1-ho0)/secs
		res.botIn, res.botOut = float64(bi1-bi0)/secs/n, float64(bo1-bo0)/secs/n
		res.dgrams = float64(d1-d0) / secs / n
		res.dropped = float64(x1-x0) / secs
		if d1 > d0 {
			res.dgramLen = float64(db1-db0) / float64(d1-d0)
		}
		// The histograms belong to the read goroutines: close the links first.
		for _, p := range pairs {
			_ = p.rx.Close()
			res.lat.merge(&p.recv.hist)
		}
		res.updates = float64(res.lat.n) / secs / n
		return res, nil
	}
	close(sendStop)
	<-sendDone
	return nil, err
}

func printFanout(w io.Writer, r *fanoutResult) {
	o := r.opts
	fmt.Fprintf(w, "concord bench fanout: 1 host + %d bots, %d entities moved every %v tick, %v measured per phase after %v warm-up, GOMAXPROCS %d, %d CPUs\n",
		o.bots, o.entities, benchTick, o.duration, o.warmup, runtime.GOMAXPROCS(0), runtime.NumCPU())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tCPU %1core\thost in B/s\thost out B/s\tbot in B/s\tbot out B/s\tdgrams/s/bot\tB/dgram\thost drops/s\tupdates/s/bot\tdelivered\tlatency p50\tp99\t≥40ms\t")
	want := float64(o.entities) * float64(time.Second/benchTick)
	row := func(name string, p *phaseResult) {
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.0f\t%.1f\t%.0f\t%.1f%%\t%v\t%v\t%.1f%%\t\n", name, p.cpuPercent(),
			p.hostIn, p.hostOut, p.botIn, p.botOut, p.dgrams, p.dgramLen, p.dropped, p.updates, 100*p.updates/want,
			p.lat.quantile(0.5).Round(time.Microsecond), p.lat.quantile(0.99).Round(time.Microsecond), 100*p.lat.above(40*time.Millisecond))
	}
	if o.relay {
		row("concord relay", &r.concord)
	} else {
		row("concord", &r.concord)
	}
	row("raw pion", &r.raw)
	_ = tw.Flush()
	if o.relay {
		secs := r.concord.wall.Seconds()
		fmt.Fprintf(w, "relay process (TURN on loopback, every bot relay-only): CPU %.1f%% of one core (%.2f × this process's), relayed %.0f B/s\n",
			100*r.concord.relay.cpu.Seconds()/secs, r.concord.relay.cpu.Seconds()/max(r.concord.cpu.Seconds(), 1e-9), float64(r.concord.relay.bytes)/secs)
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	fmt.Fprintf(w, "ratios concord/raw: CPU %s, latency p50 %s, p99 %s\n",
		ratio(r.concord.cpuPercent(), r.raw.cpuPercent()),
		ratio(float64(r.concord.lat.quantile(0.5)), float64(r.raw.lat.quantile(0.5))),
		ratio(float64(r.concord.lat.quantile(0.99)), float64(r.raw.lat.quantile(0.99))))
	for _, p := range []*phaseResult{&r.concord, &r.raw} {
		if p.note != "" {
			fmt.Fprintf(w, "note: %s\n", p.note)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// concord bench-host: the host process the migration benchmark kills.

func cmdBenchHost(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:7880", "signaling server URL")
	entities := fs.Int("entities", 10000, "entities to spawn in an empty world")
	moving := fs.Int("moving", 100, "entities moved every tick")
	exitOnEOF := fs.Bool("exit-on-stdin-eof", false, "stop when standard input ends (the benchmark that started this process is gone)")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *entities < 0 || *entities > maxBenchEntities || *moving < 0 {
		return usageError{fmt.Errorf("want 0 ≤ -entities ≤ %d and -moving ≥ 0", maxBenchEntities)}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *exitOnEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	api, err := link.NewAPI(link.Config{Logger: pionLogger(log)})
	if err != nil {
		return err
	}
	defer api.Close()
	p, err := peer.New(peer.Config{
		Server: *server, Room: benchRoom, User: benchHostUser, Device: fmt.Sprintf("p%d", os.Getpid()),
		Kind: signaling.KindHost, App: &benchApp{entities: *entities, moving: *moving},
		Transport: peer.PionTransport{API: api}, Logger: log,
	})
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// ---------------------------------------------------------------------------------------------
// concord bench migration.

type migrationOptions struct {
	peers      int
	entities   int
	moving     int
	trials     int
	settle     time.Duration
	cpuProfile string
	// reportInterval and digestInterval override the in-process peers' defaults (experiments
	// on where the time goes: each report hashes the whole replica, each digest walks it).
	reportInterval, digestInterval time.Duration
	// hostCommand makes the command of one bench host process (args are bench-host's flags).
	hostCommand func(args []string) *exec.Cmd
	hostLog     string // bench-host's -log-level
	standby     bool   // members keep standby links to the next host
	relay       bool   // members reach the host only through a TURN relay process (benchRelay)
	// relayCommand makes the relay's `concord serve` command; nil runs this executable.
	relayCommand func(args []string) *exec.Cmd
}

type migrationTrial struct {
	detect    time.Duration // kill → the first survivor hears of a new host
	hosting   time.Duration // kill → the new host has started hosting
	first     time.Duration // kill → the first member synced under the new term
	synced    time.Duration // kill → every survivor synced under the new term
	converged time.Duration // kill → every survivor holds the same state (detected)
	flowing   time.Duration // new host resumes → every member has received a fresh update
	bytes     uint64        // sum over survivors of bytes in+out, kill → converged
	// staleKeys and staleBuckets sum, over survivors, the moving entities (and their digest
	// buckets) where the survivor held an older value than the newest any survivor held.
	staleKeys, staleBuckets int
	lostEnts                int  // survivors missing entities after convergence
	lostVals                int  // moving entities whose converged value is older than one a survivor had seen
	fullHash                bool // the full replica hashes were equal at the check
}

// pause is the user-visible gap: until the state converged, plus until updates reached everyone
// after the new host resumed (the driver's verification in between is not counted).
func (t *migrationTrial) pause() time.Duration { return t.converged + t.flowing }

type migrationResult struct {
	opts         migrationOptions
	trials       []migrationTrial
	failures     []string
	fullSnapshot int // bytes of one HostSnapshot covering the whole world
	// relay and relayWall: the relay process's CPU and bytes over the trials after the first
	// (-relay), and the wall time they took; cpu is this process's CPU over the same time.
	relay     relayWindow
	relayWall time.Duration
	cpu       time.Duration
}

func cmdBenchMigration(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench migration", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o migrationOptions
	fs.IntVar(&o.peers, "peers", 32, "surviving peers in this process (the killed host is one more, in its own process)")
	fs.IntVar(&o.entities, "entities", 10000, "entities in the world")
	fs.IntVar(&o.moving, "moving", 100, "entities the host moves every tick (the divergence a kill can leave)")
	fs.IntVar(&o.trials, "trials", 20, "host kills")
	fs.DurationVar(&o.settle, "settle", 500*time.Millisecond, "steady state before each kill")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process over all trials to this file")
	fs.DurationVar(&o.reportInterval, "report-interval", 0, "the bots' status report interval (0: peer's default, 1s)")
	fs.DurationVar(&o.digestInterval, "digest-interval", 0, "the bots' anti-entropy digest interval (0: peer's default, 1s)")
	fs.BoolVar(&o.standby, "standby", false, "members keep a standby link to the next host (peer.Config.Standby)")
	fs.BoolVar(&o.relay, "relay", false, "members reach the host only through a TURN relay (a `concord serve --turn` child process on loopback, whose CPU is reported)")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if o.peers < 2 || o.peers > maxBenchBots || o.entities < 1 || o.entities > maxBenchEntities ||
		o.moving < 1 || o.trials < 1 || o.trials > maxBenchTrials || o.settle < 0 || o.settle > time.Minute {
		return usageError{fmt.Errorf("want 2 ≤ -peers ≤ %d, 1 ≤ -entities ≤ %d, -moving ≥ 1, 1 ≤ -trials ≤ %d, 0 ≤ -settle ≤ 1m",
			maxBenchBots, maxBenchEntities, maxBenchTrials)}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o.hostLog = "warn"
	o.hostCommand = func(args []string) *exec.Cmd {
		return exec.Command(exe, append([]string{"bench-host"}, args...)...)
	}
	res, err := runMigration(ctx, o, log, stderr)
	if res != nil {
		printMigration(stdout, res)
	}
	return err
}

// benchHostProc is one running bench host.
type benchHostProc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      *benchTail
	waited   chan error
	killOnce sync.Once
}

func startBenchHostProc(o migrationOptions, url string) (*benchHostProc, error) {
	cmd := o.hostCommand([]string{"-server", url, "-entities", fmt.Sprint(o.entities), "-moving", fmt.Sprint(o.moving),
		"-exit-on-stdin-eof", "-log-level", o.hostLog})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out := &benchTail{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	hp := &benchHostProc{cmd: cmd, stdin: stdin, out: out, waited: make(chan error, 1)}
	go func() { hp.waited <- cmd.Wait() }()
	return hp, nil
}

// kill sends SIGKILL to the process (only to it: it was started by this benchmark) and reaps it.
// Idempotent.
func (hp *benchHostProc) kill() {
	hp.killOnce.Do(func() {
		_ = hp.cmd.Process.Signal(syscall.SIGKILL)
		<-hp.waited
		_ = hp.stdin.Close()
	})
}

// benchTail keeps the last max bytes written to it.
type benchTail struct {
	mu  sync.Mutex // guards b
	b   []byte
	max int
}

func (t *benchTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *benchTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func runMigration(ctx context.Context, o migrationOptions, log zerolog.Logger, progress io.Writer) (*migrationResult, error) {
	res := &migrationResult{opts: o}
	relay, err := startBenchRelay(ctx, o.relay, o.relayCommand)
	if err != nil {
		return nil, err
	}
	defer relay.stop()
	sig, err := startBenchSignaling(log, []signaling.Identity{benchHostUser}, relay)
	if err != nil {
		return nil, err
	}
	defer sig.stop()
	bp := newBenchPeers(ctx, sig.url, log)
	bp.reportInterval, bp.digestInterval, bp.standby, bp.relayOnly = o.reportInterval, o.digestInterval, o.standby, o.relay
	defer bp.close()
	hold := new(atomic.Bool)

	// The first host process spawns the world before any bot joins.
	hp, err := startBenchHostProc(o, sig.url)
	if err != nil {
		return nil, err
	}
	defer func() {
		if hp != nil {
			hp.kill()
		}
	}()
	if err := benchWait(ctx, 30*time.Second, "bench host elected", func() error { return benchHostExited(hp) }, func() error {
		rooms, err := sig.srv.Rooms(ctx)
		if err != nil {
			return err
		}
		for _, r := range rooms {
			for _, m := range r.Members {
				if r.Room == benchRoom && m.PeerIndex == r.Host && m.PeerID.User() == benchHostUser {
					return nil
				}
			}
		}
		return errors.New("no bench host yet")
	}); err != nil {
		return nil, fmt.Errorf("%w\nbench host output:\n%s", err, hp.out)
	}
	self := make(map[uint64]bool)
	for i := range o.peers {
		app := &benchApp{entities: o.entities, moving: o.moving, hold: hold, probe: newBenchProbe(nil, true)}
		if _, err := bp.start(fmt.Sprintf("peer%d", i+1), signaling.KindBot, app); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(progress, "migration: %d peers joining a world of %d entities\n", o.peers, o.entities)

	stopProfile := func() {}
	defer func() { stopProfile() }()
	var rel0 relayWindow
	var wall0 time.Time
	var cpu0 time.Duration
	defer func() {
		if !wall0.IsZero() {
			rel1 := relay.mark()
			res.relay = relayWindow{cpu: rel1.cpu - rel0.cpu, bytes: rel1.bytes - rel0.bytes}
			res.relayWall, res.cpu = time.Since(wall0), benchCPUTime()-cpu0
		}
	}()
	for trial := range o.trials {
		if trial > 0 {
			if hp, err = startBenchHostProc(o, sig.url); err != nil {
				return res, err
			}
		}
		tr, err := runMigrationTrial(ctx, o, bp, hp, hold, self)
		hp = nil // killed by the trial
		if err != nil {
			res.failures = append(res.failures, fmt.Sprintf("trial %d: %v", trial+1, err))
			fmt.Fprintf(progress, "migration: trial %d failed: %v\n", trial+1, err)
			if len(res.failures) >= 3 || ctx.Err() != nil {
				return res, fmt.Errorf("%d trials failed; stopping: %w", len(res.failures), err)
			}
			continue
		}
		res.trials = append(res.trials, *tr)
		fmt.Fprintf(progress, "migration: trial %d: pause %v (converged %v + flowing %v), %d bytes\n",
			trial+1, tr.pause().Round(time.Millisecond), tr.converged.Round(time.Millisecond), tr.flowing.Round(time.Millisecond), tr.bytes)
		if trial == 0 {
			// Profile the migrations, not the initial join of the world.
			if stopProfile, err = startBenchProfile(o.cpuProfile); err != nil {
				return res, err
			}
			rel0, wall0, cpu0 = relay.mark(), time.Now(), benchCPUTime()
		}
	}
	// The size of a snapshot of the whole world: what a migration without digests would send to
	// every member.
	_ = bp.peers[0].Do(ctx, func(w *peer.World) {
		var snap netmsg.HostSnapshot
		hostsnapshot.Build(&snap, w.Replica(), w.Schemas(), hostsnapshot.Options{Term: uint64(w.Term()), Cover: hostsnapshot.All(peer.DefaultBuckets)})
		res.fullSnapshot = len(netmsg.AppendHostSnapshot(nil, &snap))
	})
	return res, nil
}

func benchHostExited(hp *benchHostProc) error {
	select {
	case err := <-hp.waited:
		hp.waited <- err
		return fmt.Errorf("bench host exited: %v", err)
	default:
		return nil
	}
}

// runMigrationTrial waits until the bench host process hosts everyone and updates flow, kills
// it, and measures the migration to the in-process peer that signaling elects next.
func runMigrationTrial(ctx context.Context, o migrationOptions, bp *benchPeers, hp *benchHostProc, hold *atomic.Bool, self map[uint64]bool) (tr *migrationTrial, err error) {
	out := hp.out
	defer func() {
		if hp != nil {
			hp.kill()
		}
		if err != nil {
			err = fmt.Errorf("%w\nbench host output (tail):\n%s", err, out)
		}
	}()
	failed := func() error {
		if err := bp.failed(); err != nil {
			return err
		}
		return benchHostExited(hp)
	}
	// 1. Every peer follows the process host, synced, and receives its updates.
	var term uint64
	if err := benchWait(ctx, 60*time.Second+time.Duration(o.peers)*time.Second, "every peer follows the bench host", failed, func() error {
		term = bp.probes[0].hostTerm.Load()
		for i, pr := range bp.probes {
			self[uint64(bp.peers[i].Status().Self)] = true
			h := pr.host.Load()
			if h == 0 || self[h] || pr.hostTerm.Load() != term || pr.syncedTerm.Load() != term {
				return fmt.Errorf("peer %d: host %d term %d synced %d (want the bench host, term %d)", i+1, h, pr.hostTerm.Load(), pr.syncedTerm.Load(), term)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	now := time.Now()
	for _, pr := range bp.probes {
		pr.expectFresh(now)
	}
	if err := benchWait(ctx, 30*time.Second, "updates from the bench host reach every peer", failed, func() error {
		for i, pr := range bp.probes {
			if pr.freshAt.Load() == 0 {
				return fmt.Errorf("peer %d has no fresh update", i+1)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := benchSleep(ctx, o.settle); err != nil {
		return nil, err
	}

	// 2. Kill. The new host holds its simulation until the driver has seen the state converge.
	hold.Store(true)
	var bytes0 uint64
	for _, t := range bp.trans {
		bytes0 += t.total()
	}
	kill := time.Now()
	for _, pr := range bp.probes {
		pr.expectFresh(kill)
	}
	_ = hp.cmd.Process.Signal(syscall.SIGKILL)
	tr = &migrationTrial{}
	// The divergence the kill left: copy what every survivor has seen of the moving entities
	// (nothing new can arrive: the host is dead), then count the keys and buckets where a
	// survivor is older than the newest any survivor holds.
	views := make([]map[peer.Entity]int64, len(bp.peers))
	if err := benchDoAll(ctx, bp.peers, func(i int, _ *peer.World) { views[i] = maps.Clone(bp.probes[i].seen) }); err != nil {
		return nil, err
	}
	newest := make(map[peer.Entity]int64)
	for _, v := range views {
		for e, s := range v {
			newest[e] = max(newest[e], s)
		}
	}
	for _, v := range views {
		buckets := make(map[int]bool)
		for e, s := range newest {
			if v[e] < s {
				tr.staleKeys++
				buckets[int(e.Number())%peer.DefaultBuckets] = true
			}
		}
		tr.staleBuckets += len(buckets)
	}
	hp.kill()
	hp = nil
	failed = bp.failed

	// 3. Every survivor synced under the new term.
	var newTerm uint64
	if err := benchWait(ctx, 30*time.Second, "survivors synced under a new host", failed, func() error {
		newTerm = bp.probes[0].hostTerm.Load()
		if newTerm <= term {
			return errors.New("no new term yet")
		}
		for i, pr := range bp.probes {
			if !self[pr.host.Load()] || pr.hostTerm.Load() != newTerm || pr.syncedTerm.Load() != newTerm {
				return fmt.Errorf("peer %d: host %d term %d synced %d", i+1, pr.host.Load(), pr.hostTerm.Load(), pr.syncedTerm.Load())
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var firstHeard, firstSynced, lastSynced, hosting int64
	for i, pr := range bp.probes {
		if h := pr.hostChangedAt.Load(); firstHeard == 0 || h < firstHeard {
			firstHeard = h
		}
		at := pr.syncedAt.Load()
		if uint64(bp.peers[i].Status().Self) == pr.host.Load() {
			hosting = at
			continue
		}
		if firstSynced == 0 || at < firstSynced {
			firstSynced = at
		}
		lastSynced = max(lastSynced, at)
	}
	tr.detect = time.Duration(firstHeard - kill.UnixNano())
	tr.hosting = time.Duration(hosting - kill.UnixNano())
	tr.first = time.Duration(firstSynced - kill.UnixNano())
	tr.synced = time.Duration(max(lastSynced, hosting) - kill.UnixNano())

	// 4. Converged: the moving entities (the only ones written since the world was made, so the
	// only ones that can differ) hold equal values and stamps everywhere; checked cheaply while
	// the clock runs, then verified with the full replica hash.
	var movers []peer.Entity
	_ = bp.peers[0].Do(ctx, func(w *peer.World) {
		movers = w.EntitiesOf(benchSchemaMover)
		movers = movers[:min(len(movers), o.moving)]
	})
	digests := make([]uint64, len(bp.peers))
	lens := make([]int, len(bp.peers))
	if err := benchWait(ctx, 30*time.Second, "survivors converged", failed, func() error {
		if err := benchDoAll(ctx, bp.peers, func(i int, w *peer.World) {
			digests[i], lens[i] = moverDigest(w, movers), w.Len()
		}); err != nil {
			return err
		}
		for i := range digests {
			if digests[i] != digests[0] || lens[i] != lens[0] {
				return fmt.Errorf("peer %d differs from peer 1", i+1)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	conv := time.Now()
	tr.converged = conv.Sub(kill)
	var bytes1 uint64
	for _, t := range bp.trans {
		bytes1 += t.total()
	}
	tr.bytes = bytes1 - bytes0

	// Verification (not timed): full hashes, entity counts, and no value lost — every moving
	// entity's converged sent time is at least the newest one any survivor had seen.
	hashes := make([]uint64, len(bp.peers))
	newestSeen := make(map[peer.Entity]int64, len(movers))
	var mu sync.Mutex
	converged := make([]int64, len(movers))
	if err := benchDoAll(ctx, bp.peers, func(i int, w *peer.World) {
		hashes[i], lens[i] = w.Replica().Hash(), w.Len()
		pr := bp.probes[i]
		mu.Lock()
		defer mu.Unlock()
		for e, s := range pr.seen {
			newestSeen[e] = max(newestSeen[e], s)
		}
		if i == 0 {
			for j, e := range movers {
				if v, ok := w.Get(e, benchPropSent); ok && len(v) == 8 {
					converged[j] = int64(binary.LittleEndian.Uint64(v))
				}
			}
		}
	}); err != nil {
		return nil, err
	}
	tr.fullHash = true
	for i := range hashes {
		if hashes[i] != hashes[0] {
			tr.fullHash = false
		}
		if lens[i] < o.entities {
			tr.lostEnts++
		}
	}
	for j, e := range movers {
		if converged[j] < newestSeen[e] {
			tr.lostVals++
		}
	}

	// 5. Resume: the new host moves again; every member must receive a fresh value.
	release := time.Now()
	hold.Store(false)
	if err := benchWait(ctx, 30*time.Second, "updates flow from the new host", failed, func() error {
		for i, pr := range bp.probes {
			if uint64(bp.peers[i].Status().Self) == pr.host.Load() {
				continue // the new host writes them
			}
			if pr.freshAt.Load() == 0 {
				return fmt.Errorf("peer %d has no fresh update", i+1)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var lastFresh int64
	for i, pr := range bp.probes {
		if uint64(bp.peers[i].Status().Self) != pr.host.Load() {
			lastFresh = max(lastFresh, pr.freshAt.Load())
		}
	}
	tr.flowing = time.Duration(lastFresh - release.UnixNano())
	return tr, nil
}

// moverDigest hashes the stamps and values of the moving entities' properties.
func moverDigest(w *peer.World, movers []peer.Entity) uint64 {
	h := fnv.New64a()
	var b [12]byte
	s, _ := benchSchemas.Lookup(benchSchemaMover)
	for _, e := range movers {
		for _, prop := range s.Properties {
			data, ts, ok, deleted := w.Replica().Get(e, prop.Component)
			binary.LittleEndian.PutUint32(b[:], uint32(e))
			binary.LittleEndian.PutUint32(b[4:], uint32(ts))
			b[8], b[9] = boolByte(ok), boolByte(deleted)
			_, _ = h.Write(b[:10])
			_, _ = h.Write(data)
		}
	}
	return h.Sum64()
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// benchDoAll runs fn on every peer's loop at once and waits for all of them.
func benchDoAll(ctx context.Context, peers []*peer.Peer, fn func(i int, w *peer.World)) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Do(ctx, func(w *peer.World) { fn(i, w) })
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func printMigration(w io.Writer, r *migrationResult) {
	o := r.opts
	fmt.Fprintf(w, "concord bench migration: %d surviving peers in this process + 1 bench host process killed with SIGKILL per trial, %d entities (%d moved every %v tick), %d trials, GOMAXPROCS %d, %d CPUs\n",
		o.peers, o.entities, o.moving, benchTick, o.trials, runtime.GOMAXPROCS(0), runtime.NumCPU())
	if o.reportInterval != 0 || o.digestInterval != 0 {
		fmt.Fprintf(w, "experiment: bots report every %v and send digests every %v (0: default 1s)\n", o.reportInterval, o.digestInterval)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trial\tdetect\thosting\tfirst synced\tall synced\tconverged\tflowing\tpause\tbytes\tstale keys\tstale buckets\tlost ents\tlost vals\tfull hash\t")
	var pauses, conv []time.Duration
	var byteCounts []uint64
	lostEnts, lostVals, hashBad := 0, 0, 0
	for i, t := range r.trials {
		ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%t\t\n", i+1, ms(t.detect), ms(t.hosting), ms(t.first), ms(t.synced), ms(t.converged), ms(t.flowing), ms(t.pause()),
			t.bytes, t.staleKeys, t.staleBuckets, t.lostEnts, t.lostVals, t.fullHash)
		pauses = append(pauses, t.pause())
		conv = append(conv, t.converged)
		byteCounts = append(byteCounts, t.bytes)
		lostEnts += t.lostEnts
		lostVals += t.lostVals
		if !t.fullHash {
			hashBad++
		}
	}
	_ = tw.Flush()
	for _, f := range r.failures {
		fmt.Fprintf(w, "failed: %s\n", strings.SplitN(f, "\n", 2)[0])
	}
	if len(pauses) == 0 {
		fmt.Fprintln(w, "no trial completed")
		return
	}
	p50, p99 := benchQuantile(pauses, 0.5), benchQuantile(pauses, 0.99)
	verdict := "met"
	if p99 > 250*time.Millisecond {
		verdict = "NOT met"
	}
	fmt.Fprintf(w, "pause (kill → converged, plus new host resumed → fresh update at every member): p50 %v, p99 %v over %d trials; goal p99 ≤ 250ms %s\n",
		p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), len(pauses), verdict)
	fmt.Fprintf(w, "kill → converged: p50 %v, p99 %v\n", benchQuantile(conv, 0.5).Round(100*time.Microsecond), benchQuantile(conv, 0.99).Round(100*time.Microsecond))
	slices.Sort(byteCounts)
	fmt.Fprintf(w, "bytes moved (sum over survivors of in+out, kill → converged): p50 %d, max %d", byteCounts[len(byteCounts)/2], byteCounts[len(byteCounts)-1])
	if r.fullSnapshot > 0 {
		naive := uint64(r.fullSnapshot) * uint64(o.peers-1) * 2
		fmt.Fprintf(w, "; one full snapshot is %d bytes, a full-snapshot migration would move ≥ %d (p50 is %.2f%% of it)",
			r.fullSnapshot, naive, 100*float64(byteCounts[len(byteCounts)/2])/float64(naive))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "lost: %d survivor replicas short of entities, %d newest values lost, %d trials with unequal full hashes\n", lostEnts, lostVals, hashBad)
	if o.standby {
		fmt.Fprintln(w, "standby links: on (members kept an idle link to the next host and promoted it)")
	} else {
		fmt.Fprintln(w, "standby links: off (members connected to the new host after the kill; -standby to compare)")
	}
	if o.relay && r.relayWall > 0 {
		secs := r.relayWall.Seconds()
		fmt.Fprintf(w, "relay process (TURN on loopback, members relay-only), trials 2–%d: CPU %.1f%% of one core (this process %.1f%%), relayed %.0f B/s\n",
			len(r.trials), 100*r.relay.cpu.Seconds()/secs, 100*r.cpu.Seconds()/secs, float64(r.relay.bytes)/secs)
	}
}

// benchQuantile is the nearest-rank q-quantile of ds (which it sorts).
func benchQuantile(ds []time.Duration, q float64) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}
