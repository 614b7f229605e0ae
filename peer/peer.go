package peer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/boundq"
	"github.com/concordrtc/concord/signaling/sigclient"
)

var (
	errMalformed   = errors.New("peer: malformed message")
	errNoSignaling = errors.New("peer: signaling is down")
)

// Peer is one member of a room: a signaling client, links to other members, and the host or
// member role over a World. One goroutine, the loop started by Run, owns all of its state;
// link callbacks only post events to it.
//
// The state is split by owner: Peer keeps what signaling says of the room (room.go) and the
// links (links.go); the host role keeps its per-member state (host*.go), the member role its own
// (member*.go). The roles reach the rest of the peer through env (roles.go), never through *Peer.
type Peer struct {
	cfg   Config
	clock Clock
	log   zerolog.Logger
	app   App
	w     *World
	// stepAt is the loop step's time once stepNow read it; zero between steps (afterEvent).
	stepAt time.Time

	// Signaling (room.go, resume.go).
	sig       sigClient // nil while signaling is down
	servers   []string  // Config.Server's node URLs, in order
	server    int       // index in servers of the node sig was dialed on (the loop's)
	sigEvents <-chan sigclient.Event
	// sigNow is sig for link goroutines, which signal through whichever client is current.
	sigNow      atomic.Pointer[sigHolder]
	iceNow      atomic.Pointer[[]sigclient.ICEServer]
	resumeToken string                // the server's proof of this peer's index, for a resume
	iceServers  []sigclient.ICEServer // from the latest joined: every new link uses them (iceNow: for other goroutines)
	held        bool                  // the replica has held the room's state (synced or hosted)
	resumeErr   error                 // why signaling refused to resume this peer, if it did
	members     map[PeerIndex]sigclient.Member
	pinned      []sigclient.Identity

	// Links (links.go, standby.go).
	remotes map[PeerIndex]*remote // host: one per member; member: the host (and a standby)
	// answerSem holds a place for each answer being made off the loop (answer.go).
	answerSem chan struct{}
	// queuedTo is the remotes with reliable messages queued for the next network flush.
	queuedTo  []*remote
	standby   *remote   // member with Config.Standby: idle link to the next host
	standbyAt time.Time // standby links are made from then on (memberSynced: standbyDelay)
	session   uint64

	host   *hostRole   // non-nil while this peer is the host
	member *memberRole // non-nil while it is not

	timers timers
	events *boundq.Queue[loopEvent]
	calls  chan func()
	done   chan struct{} // closed when Run has returned
	quit   chan struct{} // closed when Run starts shutting down: helper goroutines give up
	wg     sync.WaitGroup
	fatal  error // set by a role to end Run (a schema mismatch)
	start  time.Time

	// publishDue asks afterEvent to publish the status once the app has heard the step's events
	// (memberSynced).
	publishDue bool

	// The periodic entries of an awake peer (nil while asleep or before startTimers), and the
	// tick's and the flush's latest times.
	tickTimer, reportTimer, digestTimer *timerEntry
	lastTick, lastFlush                 time.Time
	idler                               Idler      // the App, if it is one
	sleep                               sleepState // sleep.go

	// backlogged is false only when no link holds a backlog (drainBacklogs), reasmDue zero only
	// when no link has a fragmented payload unfinished (expireReassembly): the tick's walks over
	// every link are skipped while they would find nothing.
	backlogged bool
	reasmDue   time.Time

	// migratingSince is when this synced member learned of a new host (zero when not migrating);
	// lastPause is how long its latest migration took, until the new host's snapshot merged.
	migratingSince time.Time
	lastPause      time.Duration

	status  atomic.Pointer[Status]
	hash    uint64 // the replica hash last published, computed at Replica.Changes() == hashAt
	hashAt  uint64
	hashOK  bool
	count   counters
	pool    sync.Pool
	in      [2]inbox // decode scratch: a payload, and the reassembled payload inside it
	scratch []byte   // encode scratch for the link layer's own replies
}

// New checks cfg and returns a Peer; Run joins the room.
func New(cfg Config) (*Peer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Peer{
		cfg:     cfg,
		clock:   cfg.Clock,
		log:     cfg.Logger.With().Str("room", cfg.Room).Logger(),
		app:     cfg.App,
		w:       newWorld(cfg.App.Schemas(), crdt.Config{}),
		members: make(map[PeerIndex]sigclient.Member),
		remotes: make(map[PeerIndex]*remote),
		events:  newEventQueue(),
		calls:   make(chan func()),
		done:    make(chan struct{}),
		quit:    make(chan struct{}),
	}
	p.sleep.wantStatus = make(chan struct{}, 1)
	p.idler, _ = cfg.App.(Idler)
	p.w.limits = cfg.WorldLimits
	p.servers, _ = sigclient.ParseServers(cfg.Server) // checked by withDefaults
	p.start = p.clock.Now()
	p.pool.New = func() any { b := make([]byte, 0, 2048); return &b }
	p.status.Store(&Status{})
	return p, nil
}

// Run joins the room and runs the peer until ctx ends or a fatal error (ErrSchemaMismatch). It
// closes every link and the signaling connection, and waits for every goroutine it started,
// before it returns.
func (p *Peer) Run(ctx context.Context) error {
	defer close(p.done)
	// Helper goroutines (the signaling redial) end with Run, whatever ends it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.cfg.Transport == nil {
		api, err := LinkAPI(p.cfg)
		if err != nil {
			return err
		}
		defer api.Close() // after shutdown has closed every link
		p.cfg.Transport = PionTransport{API: api}
	}
	sig, err := p.dialFirst(ctx)
	if err != nil {
		return err
	}
	defer p.shutdown()
	defer cancel() // before shutdown waits for the redial goroutine
	p.joined(sig)
	p.startTimers()
	p.afterEvent()
	return p.loop(ctx)
}

// startTimers schedules the loop's periodic work.
func (p *Peer) startTimers() {
	now := p.clock.Now()
	p.lastTick = now
	p.startPeriodic(now)
}

// startPeriodic schedules the periodic work of an awake peer (sleep.go): the tick, the status
// report and the member's digest, each from now on.
func (p *Peer) startPeriodic(now time.Time) {
	p.tickTimer = p.timers.add(now.Add(p.cfg.TickInterval), p.cfg.TickInterval, func(now time.Time) {
		dt := now.Sub(p.lastTick)
		p.lastTick = now
		p.tick(now, dt)
	})
	p.reportTimer = p.timers.add(now.Add(p.cfg.ReportInterval), p.cfg.ReportInterval, func(time.Time) { p.report() })
	p.digestTimer = p.timers.add(now.Add(p.cfg.DigestInterval), p.cfg.DigestInterval, func(time.Time) {
		if p.member != nil {
			p.member.sendDigest()
		}
	})
}

// tick runs the simulation step and, right after it, the network flush: updates leave right after
// the tick that made them (a separate timer could fire first and hold a tick's writes back one
// interval), at most every NetworkInterval.
func (p *Peer) tick(now time.Time, dt time.Duration) {
	p.drainBacklogs(now)
	p.app.Tick(p.w, dt)
	if p.host != nil {
		p.host.tick(now)
	}
	if now.Sub(p.lastFlush) >= p.cfg.NetworkInterval-p.cfg.TickInterval/2 {
		p.flush(now)
	}
}

// flush sends what waits for the network flush: queued reliable messages, then the updates.
func (p *Peer) flush(now time.Time) {
	p.lastFlush = now
	p.flushQueued() // before the updates, which may be of entities the queue spawns
	p.flushUpdates()
	if f, ok := p.cfg.Transport.(flusher); ok {
		f.Flush()
	}
	p.expireReassembly(now)
}

func (p *Peer) flushUpdates() {
	switch {
	case p.host != nil:
		p.host.flushUpdates()
	case p.member != nil:
		p.member.flushUpdates()
	}
}

func (p *Peer) loop(ctx context.Context) error {
	timer := p.clock.NewTimer(time.Hour)
	defer timer.Stop()
	var armed time.Time
	for {
		if p.fatal != nil {
			return p.fatal
		}
		if at, ok := p.timers.next(); ok && !at.Equal(armed) {
			armed = at
			timer.Reset(max(at.Sub(p.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-p.sigEvents:
			if !ok {
				p.sigEvents = nil // signaling is gone; links and the world go on
				continue
			}
			p.handleSignaling(ctx, ev)
			p.drainSignaling(ctx)
		case <-p.events.Ready():
			if ev, ok := p.events.Pop(); ok {
				p.handleLinkEvent(ev)
			}
		case <-timer.C():
			armed = time.Time{}
			p.runTimers(p.clock.Now())
			continue // runTimers closes each step itself
		case fn := <-p.calls:
			fn()
		case <-p.sleep.wantStatus:
			p.publish() // a Status reader found it stale while this peer sleeps
		}
		p.afterEvent()
	}
}

// sigBatch is how many more signaling events a loop step takes when they are already queued.
const sigBatch = 64

// drainSignaling takes up to sigBatch signaling events already queued, in the step of the one
// just taken. The loop's select picks one ready case at random, so in a burst of joins, with
// every new link's events and the timers ready too, a host took one signaling event in two or
// three steps, each step paying afterEvent, while 1,024 joiners' membership notices, offers and
// candidates arrived: the client's queue passed three quarters and it shed offers on arrival,
// which their senders never hear of (Status.SignalsDropped; they waited out their connect
// timeouts). The events stay in order and each is handled as before; what a step does after
// them (commands, the app's events, the batch) is done once for the lot. Bounded, so the links
// and timers still get their turn: signaling's own budgets (docs/protocol.md §4) bound how
// many signals can be queued.
func (p *Peer) drainSignaling(ctx context.Context) {
	for range sigBatch {
		if p.fatal != nil {
			return // the loop ends with it; the rest stay queued, as before
		}
		select {
		case ev, ok := <-p.sigEvents:
			if !ok {
				p.sigEvents = nil
				return
			}
			p.handleSignaling(ctx, ev)
		default:
			return
		}
	}
}

// runTimers runs every timer due at now, each as a loop step of its own.
func (p *Peer) runTimers(now time.Time) {
	for e := p.timers.pop(now); e != nil; e = p.timers.pop(now) {
		e.fn(now)
		p.afterEvent()
	}
}

// after runs fn on the loop once d has passed, unless the peer stops first.
func (p *Peer) after(d time.Duration, fn func()) {
	p.timers.add(p.clock.Now().Add(d), 0, func(time.Time) { fn() })
}

// maxKeptEvents is the most room for events afterEvent keeps from one step to the next.
const maxKeptEvents = 4096

// afterEvent runs after every event: the host sends the commands the event produced, the app
// hears what happened, and the write batch closes.
func (p *Peer) afterEvent() {
	p.stepAt = time.Time{} // stepNow reads the clock again in the next step
	if p.host != nil {
		p.host.flushCommands()
	}
	if p.member != nil {
		p.member.flushPending()
	}
	if h, ok := p.app.(EventHandler); ok {
		for i := 0; i < len(p.w.events); i++ { // handlers may add events
			h.OnEvent(p.w, p.w.events[i])
		}
	}
	p.w.events = p.w.events[:0]
	if cap(p.w.events) > maxKeptEvents {
		p.w.events = nil // a late join's 40,000 events: not kept for the member's life
	}
	if p.publishDue {
		p.publishDue = false
		p.publish()
	}
	p.w.closeBatch()
	p.schedule()
}

// Do runs fn on the loop goroutine with the world and waits for it. It is how tools and tests
// read or change a running peer.
func (p *Peer) Do(ctx context.Context, fn func(w *World)) error {
	done := make(chan struct{})
	select {
	case p.calls <- func() { fn(p.w); close(done) }:
	case <-p.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-p.quit:
		return ErrClosed
	}
}

// Done is closed when Run has returned.
func (p *Peer) Done() <-chan struct{} { return p.done }

func (p *Peer) monotonic() int64 { return int64(p.clock.Now().Sub(p.start)) }

// shutdown closes every link and the signaling client and waits for every goroutine the peer
// started.
func (p *Peer) shutdown() {
	close(p.quit)
	for _, r := range p.remotes {
		p.discard(r)
	}
	if p.sig != nil {
		p.closeLater(p.sig)
		p.sig = nil
	}
	// Link watchers exit once their links are done; drain events so none blocks.
	waited := make(chan struct{})
	go func() { p.wg.Wait(); close(waited) }()
	for {
		select {
		case <-waited:
			for ev, ok := p.events.Pop(); ok; ev, ok = p.events.Pop() {
				p.dropEvent(ev) // posted before its goroutine ended: a made answer to close
			}
			return
		case <-p.events.Ready():
			if ev, ok := p.events.Pop(); ok {
				p.dropEvent(ev)
			}
		}
	}
}

// dropEvent lets go of an event shutdown does not handle: its payload, or the link an answering
// worker made (answer.go), which nobody else closes.
func (p *Peer) dropEvent(ev loopEvent) {
	p.release(ev.data)
	if ev.kind == evLinked && ev.r.answering != nil && ev.r.answering.made != nil {
		_ = ev.r.answering.made.Close()
	}
}

// goTracked runs fn on a goroutine that shutdown waits for.
func (p *Peer) goTracked(fn func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
}
