package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// FanoutOptions configures Fanout. Every field must be set (Validate says how).
type FanoutOptions struct {
	Bots     int // bot peers receiving the host's updates
	Entities int // entities the host moves every tick
	// Interest is how many of them each bot follows (the host's interest management; the host
	// process applies it, so it needs HostCommand); 0: all.
	Interest int
	Duration time.Duration // measured time of each phase
	Warmup   time.Duration // time each phase runs before it is measured
	// CPUProfile, when not empty, is the file that receives a CPU profile of the Concord phase's
	// measured window.
	CPUProfile string
	// Relay makes the bots reach the host only through a TURN relay process (relay).
	Relay bool
	// Deltas makes the host send the bots deltas against the values they acknowledged
	// (peer.Config.Deltas); without it the host sends them all the same datagrams, whole values.
	Deltas bool
	// RelayCommand makes the relay's `concord serve` command from its arguments; nil runs this
	// executable.
	RelayCommand func(args []string) *exec.Cmd
	// HostCommand, when not nil, makes the command of a bench host process (args are
	// bench-host's flags): the Concord phase then runs its host in that process and measures the
	// host's CPU apart from the bots'. Nil runs the host in this process.
	HostCommand func(args []string) *exec.Cmd
	// NoRaw skips the raw pion phase (A/B runs of the Concord phase only).
	NoRaw bool
	// Schema is the movers' schema: SchemaQuantized ("" too) or SchemaPlain.
	Schema string
}

// Validate checks the options against the package's bounds.
func (o FanoutOptions) Validate() error {
	if err := validSchema(o.Schema); err != nil {
		return err
	}
	if o.Bots < 1 || o.Bots > MaxBots || o.Entities < 1 || o.Entities > MaxEntities ||
		o.Duration <= 0 || o.Duration > MaxDuration || o.Warmup < 0 || o.Warmup > MaxDuration ||
		o.Interest < 0 {
		return fmt.Errorf("want 1 ≤ -n ≤ %d, 1 ≤ -m ≤ %d, 0 < -duration ≤ %v, 0 ≤ -warmup ≤ %v, -interest ≥ 0",
			MaxBots, MaxEntities, MaxDuration, MaxDuration)
	}
	return nil
}

// phase is one measured window of the fanout benchmark.
type phase struct {
	wall     time.Duration
	cpu      time.Duration // this process's
	hostCPU  time.Duration // the host process's; 0 when the host ran in this process
	hostIn   float64       // bytes per second
	hostOut  float64
	botIn    float64 // mean per bot, bytes per second
	botOut   float64
	dgrams   float64 // unreliable datagrams received per second per bot
	dgramLen float64 // mean unreliable datagram size received
	updates  float64 // entity updates (sent values) received per second per bot
	dropped  float64 // unreliable datagrams the host's links dropped per second (send buffer full)
	lat      hist
	wire     wireCounts // the host's (the sender's) UDP packets in the window
	note     string
	relay    relayWindow // the relay process's CPU and relayed bytes over the window (Relay)
}

// cpuPercent is the CPU of every process of the phase, as % of one core.
func (r *phase) cpuPercent() float64 {
	if r.wall <= 0 {
		return 0
	}
	return 100 * float64(r.cpu+r.hostCPU) / float64(r.wall)
}

// hostCPUPercent is the host process's CPU as % of one core; 0 when it was not measured apart.
func (r *phase) hostCPUPercent() float64 {
	if r.wall <= 0 {
		return 0
	}
	return 100 * float64(r.hostCPU) / float64(r.wall)
}

// FanoutResult is what Fanout measured; Print reports it.
type FanoutResult struct {
	opts    FanoutOptions
	concord phase
	raw     phase
}

// Fanout measures the Concord phase, then the raw pion baseline, in this process. It reports
// progress on progress.
func Fanout(ctx context.Context, o FanoutOptions, log zerolog.Logger, progress io.Writer) (*FanoutResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Interest > 0 && o.HostCommand == nil {
		return nil, errors.New("bench: -interest needs the host in a process of its own")
	}
	res := &FanoutResult{opts: o}
	fmt.Fprintf(progress, "fanout: concord phase, %d bots, %d entities, %v warm-up + %v measured\n", o.Bots, o.Entities, o.Warmup, o.Duration)
	c, err := concordPhase(ctx, o, log)
	if err != nil {
		return nil, fmt.Errorf("concord phase: %w", err)
	}
	res.concord = *c
	if o.NoRaw {
		return res, nil
	}
	runtime.GC()
	fmt.Fprintf(progress, "fanout: raw pion phase\n")
	r, err := rawPhase(ctx, o, log)
	if err != nil {
		return nil, fmt.Errorf("raw phase: %w", err)
	}
	res.raw = *r
	return res, nil
}

// concordPhase runs a host and o.Bots bots through Concord and measures one window.
func concordPhase(ctx context.Context, o FanoutOptions, log zerolog.Logger) (*phase, error) {
	room, err := startBenchRoom(ctx, o.Relay, o.RelayCommand, log)
	if err != nil {
		return nil, err
	}
	defer room.close()
	room.g.deltas = o.Deltas
	rel, sig, g := room.rel, room.sig, room.g
	var hp *hostProc
	if o.HostCommand != nil {
		wl := &wireLines{rest: io.Discard}
		args := []string{"-server", sig.url, "-entities", fmt.Sprint(o.Entities),
			"-moving", "0", "-exit-on-stdin-eof", "-wire-stats", "-log-level", "warn"}
		if o.Interest > 0 {
			args = append(args, "-interest", fmt.Sprint(o.Interest))
		}
		if o.Deltas {
			args = append(args, "-deltas")
		}
		if o.Schema != "" {
			args = append(args, "-schema", o.Schema)
		}
		if hp, err = startBenchHost(o.HostCommand(args), wl); err != nil {
			return nil, err
		}
		defer hp.stop(10 * time.Second) // gracefully: a -cpuprofile is written when the host stops
		g.hostWire, g.remoteHost = wl, hp
		if err := waitBenchHost(ctx, sig, hp); err != nil {
			return nil, fmt.Errorf("%w\n%s", err, hp.out)
		}
	}
	recording := new(atomic.Bool)
	if err := startFanoutRoom(ctx, g, o, recording); err != nil {
		return nil, err
	}
	// Follow the published counters from the warm-up on: the first change inside the window
	// starts the rate.
	from := time.Now().Add(o.Warmup)
	to := from.Add(o.Duration)
	smp := startSampler(g.peers, from, to)
	defer smp.stop()
	if err := sleep(ctx, time.Until(from)); err != nil {
		return nil, err
	}
	res, err := measureConcord(ctx, o, g, rel, recording, to)
	smp.stop() // its rates belong to the sampler until it has stopped
	if err != nil {
		return nil, err
	}
	if err := g.failed(); err != nil {
		return nil, err
	}
	res.statusRates(smp.rates, g.remoteHost != nil)
	// The histograms belong to the bots' loops: read them once the loops have stopped.
	g.close()
	for _, pr := range g.probes[g.firstBot():] {
		res.lat.merge(&pr.hist)
	}
	res.updates = float64(res.lat.n) / res.wall.Seconds() / float64(o.Bots)
	return res, nil
}

// startFanoutRoom starts the host, waits until it hosts, then starts the bots and waits until
// every one is synced and receiving.
func startFanoutRoom(ctx context.Context, g *peerGroup, o FanoutOptions, recording *atomic.Bool) error {
	if g.remoteHost == nil {
		host, err := g.start(hostUser, signaling.KindHost, &app{entities: o.Entities, plain: o.Schema == SchemaPlain})
		if err != nil {
			return err
		}
		if err := wait(ctx, 10*time.Second, "host elected", g.failed, func() error {
			if !host.Status().IsHost {
				return errors.New("not host yet")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for i := range o.Bots {
		if _, err := g.start(fmt.Sprintf("bot%d", i+1), signaling.KindBot, &app{probe: newProbe(recording, false), plain: o.Schema == SchemaPlain}); err != nil {
			return err
		}
	}
	start := time.Now()
	return wait(ctx, 30*time.Second+time.Duration(o.Bots)*time.Second, "bots synced and receiving", g.failed, func() error {
		for i, pr := range g.probes[g.firstBot():] {
			if pr.syncedTerm.Load() == 0 || pr.lastSent.Load() < start.UnixNano() {
				return fmt.Errorf("bot %d not synced or not receiving yet", i+1)
			}
		}
		return nil
	})
}

// measureConcord records latencies and counts traffic from now until to, under a CPU profile
// when o.CPUProfile is set. Peer 0 of g is the host.
func measureConcord(ctx context.Context, o FanoutOptions, g *peerGroup, rel *relay, recording *atomic.Bool, to time.Time) (*phase, error) {
	stopProfile, err := startProfile(o.CPUProfile)
	if err != nil {
		return nil, err
	}
	bots := g.trans[g.firstBot():]
	in0, n0 := make([]uint64, len(bots)), make([]uint64, len(bots))
	for i, t := range bots {
		in0[i], n0[i] = t.bytesIn[link.Unreliable].Load(), t.msgsIn[link.Unreliable].Load()
	}
	hi0, ho0, bi0, bo0 := groupBytes(g)
	rel0 := rel.mark()
	w0, t0, cpu0, hcpu0 := g.wireCounts(), time.Now(), cpuTime(), g.hostCPU()
	recording.Store(true)
	err = sleep(ctx, time.Until(to))
	recording.Store(false)
	t1, cpu1, hcpu1, w1 := time.Now(), cpuTime(), g.hostCPU(), g.wireCounts()
	rel1 := rel.mark()
	hi1, ho1, bi1, bo1 := groupBytes(g)
	stopProfile()
	if err != nil {
		return nil, err
	}
	res := &phase{wall: t1.Sub(t0), cpu: cpu1 - cpu0, hostCPU: hcpu1 - hcpu0, wire: w1.sub(w0), relay: rel1.sub(rel0)}
	var dgramBytes, dgrams uint64
	for i, t := range bots {
		dgramBytes += t.bytesIn[link.Unreliable].Load() - in0[i]
		dgrams += t.msgsIn[link.Unreliable].Load() - n0[i]
	}
	secs, nb := res.wall.Seconds(), float64(len(bots))
	res.dgrams = float64(dgrams) / secs / nb
	if dgrams > 0 {
		res.dgramLen = float64(dgramBytes) / float64(dgrams)
	}
	// Counted at the links; statusRates replaces these with the peers' own counters when it can.
	res.hostIn, res.hostOut = float64(hi1-hi0)/secs, float64(ho1-ho0)/secs
	if g.remoteHost != nil { // on the wire, DTLS and SCTP included; what it receives is not counted
		res.hostIn, res.hostOut = 0, float64(res.wire.bytes)/secs
		res.dropped = float64(res.wire.dropped) / secs
	}
	res.botIn, res.botOut = float64(bi1-bi0)/secs/nb, float64(bo1-bo0)/secs/nb
	return res, nil
}

// groupBytes sums the link counters of the host (peer 0) and of the bots.
func groupBytes(g *peerGroup) (hostIn, hostOut, botIn, botOut uint64) {
	for i, t := range g.trans {
		in, out := t.inOut()
		if i < g.firstBot() {
			hostIn, hostOut = in, out
		} else {
			botIn, botOut = botIn+in, botOut+out
		}
	}
	return hostIn, hostOut, botIn, botOut
}

// statusRates takes the byte rates and the host's drops from the peers' published counters
// (rates[0] is the host's), unless fewer than two reports fell in the window.
func (r *phase) statusRates(rates []statusRate, remoteHost bool) {
	if remoteHost {
		r.note = "concord: the host ran in its own process; its bytes are counted on the wire (out only)"
		r.botIn, r.botOut = 0, 0
		for i := range rates {
			in, out, _, _ := rates[i].rates()
			r.botIn += in / float64(len(rates))
			r.botOut += out / float64(len(rates))
		}
		return
	}
	hostIn, hostOut, hostLost, ok := rates[0].rates()
	if !ok {
		r.note = "concord: window shorter than two status reports; byte rates counted at the links, host drops unknown"
		return
	}
	r.hostIn, r.hostOut, r.dropped = hostIn, hostOut, hostLost
	r.botIn, r.botOut = 0, 0
	bots := rates[1:]
	for i := range bots {
		in, out, _, _ := bots[i].rates()
		r.botIn += in / float64(len(bots))
		r.botOut += out / float64(len(bots))
	}
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

// sampler polls every peer's Status every 5 ms, from now until to, on a goroutine it owns.
type sampler struct {
	rates []statusRate // owned by the goroutine until stop returns
	quit  chan struct{}
	done  chan struct{}
	once  bool
}

func startSampler(peers []*peer.Peer, from, to time.Time) *sampler {
	s := &sampler{rates: make([]statusRate, len(peers)), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			var now time.Time
			select {
			case <-s.quit:
				return
			case now = <-tk.C:
			}
			for i, p := range peers {
				s.rates[i].observe(now, p.Status(), from, to)
			}
			if now.After(to) {
				return
			}
		}
	}()
	return s
}

// stop ends the sampler and waits for it. Idempotent; called from one goroutine.
func (s *sampler) stop() {
	if !s.once {
		s.once = true
		close(s.quit)
	}
	<-s.done
}
