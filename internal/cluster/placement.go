package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/signaling"
)

// Placement of dedicated hosts (docs/protocol.md §7 "Placement"): every node is given the same
// rooms that have a dedicated host; the room's owner, the holder of its lease, runs the host. A
// node takes free or expired leases of those rooms up to its fair share (the rooms over the live
// nodes, rounded up), so that the rooms spread over the nodes and a dead node's rooms move to the
// survivors once its leases expire; it starts the host of every such room it owns (also one
// whose lease a member's join took), and stops it when the lease is lost.

// Defaults for zero PlacementConfig fields.
const (
	// DefaultWarmup is how long after its start a node counts at least PlacementConfig.Nodes
	// nodes as alive for its fair share: the others may still wait for JetStream.
	DefaultWarmup = 15 * time.Second
	// DefaultAcquireTimeout bounds one lease acquisition of a pass.
	DefaultAcquireTimeout = 5 * time.Second
)

// Host is a dedicated host that placement started (PlacementConfig.Start).
type Host interface {
	// Done is closed when the host has ended, on its own or by Stop.
	Done() <-chan struct{}
	// Stop stops the host and waits for it (its last checkpoint is queued by then).
	Stop()
}

// PlacementConfig configures a Placement. Rooms and Start are required; Directory and Alive too,
// unless the Placement is a Node's Config.Placement, which sets them.
type PlacementConfig struct {
	// Rooms are the rooms that have a dedicated host, the same on every node.
	Rooms []signaling.RoomID
	// Start starts room's host on this node, which owns the room now. An error wrapping
	// ErrRoomBroken: the room cannot open here (a bad checkpoint or scene); its lease is
	// released and it is not tried again on this node. Any other error: tried again at the next
	// pass, the lease kept (a checkpoint not readable yet). Start runs on Run's goroutine.
	Start func(ctx context.Context, room signaling.RoomID) (Host, error)
	// Nodes is how many nodes the cluster is configured with (this one and its routes): for
	// Warmup after Run starts, the fair share counts at least this many alive.
	Nodes int
	// Warmup: if zero, DefaultWarmup.
	Warmup time.Duration
	// Interval is the time between two passes. If zero, a third of the lease TTL.
	Interval time.Duration
	// AcquireTimeout bounds one lease acquisition. If zero, DefaultAcquireTimeout.
	AcquireTimeout time.Duration
	// Directory is the room directory whose leases place the rooms.
	Directory *durable.Directory
	// Alive lists the nodes heard from lately (Node.Alive).
	Alive func() []string
	// Clock is the source of time of the passes; it should be the directory's. If nil,
	// RealClock.
	Clock Clock
	// Logger; the zero value discards.
	Logger zerolog.Logger
}

// Placement runs the dedicated hosts of the rooms this node owns. Run's goroutine owns the hosts;
// Poke and Keep may be called from any goroutine.
type Placement struct {
	cfg  PlacementConfig
	log  zerolog.Logger
	poke chan struct{} // capacity 1: look again now

	mu   sync.Mutex                // guards keep
	keep map[signaling.RoomID]bool // rooms whose host runs here or is to start at the next pass

	// Owned by Run's goroutine.
	placed  map[signaling.RoomID]*placed
	started time.Time
}

// placed is one room's state on this node.
type placed struct {
	host   Host // nil when none runs
	broken bool // its checkpoint or scene is bad: it does not start here
}

// NewPlacement returns a placement; Run runs it.
func NewPlacement(cfg PlacementConfig) *Placement {
	if cfg.Warmup <= 0 {
		cfg.Warmup = DefaultWarmup
	}
	if cfg.AcquireTimeout <= 0 {
		cfg.AcquireTimeout = DefaultAcquireTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	p := &Placement{cfg: cfg, log: cfg.Logger, poke: make(chan struct{}, 1), keep: map[signaling.RoomID]bool{},
		placed: map[signaling.RoomID]*placed{}}
	for _, room := range cfg.Rooms {
		p.placed[room] = &placed{}
	}
	return p
}

// attach gives a Node's directory to the placement (before Run).
func (p *Placement) attach(dir *durable.Directory, alive func() []string) {
	if p.cfg.Directory == nil {
		p.cfg.Directory = dir
	}
	if p.cfg.Alive == nil {
		p.cfg.Alive = alive
	}
}

// Poke asks for a pass now: a lease was taken for a join, or lost.
func (p *Placement) Poke() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// Keep reports whether room's lease should be kept for placement: its dedicated host runs here,
// or its start failed for now and is tried again at the next pass (DirectoryConfig.Keep).
func (p *Placement) Keep(room signaling.RoomID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keep[room]
}

func (p *Placement) setKeep(room signaling.RoomID, keep bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if keep {
		p.keep[room] = true
	} else {
		delete(p.keep, room)
	}
}

// Run places the rooms, a pass every Interval and at each Poke, until ctx ends; then it stops the
// hosts it started and returns. The leases stay: the node releases them when it closes (Node.Close),
// after its members are gone.
func (p *Placement) Run(ctx context.Context) {
	if p.cfg.Directory == nil || p.cfg.Start == nil {
		p.log.Error().Msg("placement without a directory or a Start: no dedicated host runs here")
		<-ctx.Done()
		return
	}
	interval := p.cfg.Interval
	if interval <= 0 {
		interval = p.cfg.Directory.TTL() / 3
	}
	p.started = p.cfg.Clock.Now()
	t := p.cfg.Clock.NewTimer(interval)
	defer t.Stop()
	for {
		p.pass(ctx)
		select {
		case <-ctx.Done():
			p.stopAll()
			return
		case <-t.C():
		case <-p.poke:
			t.Stop()
		}
		t.Reset(interval)
	}
}

// pass looks at every room once: stops the hosts whose lease moved, restarts those that ended,
// starts those of the rooms owned here, and acquires free leases up to the fair share.
func (p *Placement) pass(ctx context.Context) {
	dir := p.cfg.Directory
	now := p.cfg.Clock.Now()
	name := dir.Node()
	nodes := map[string]bool{name: true}
	if p.cfg.Alive != nil {
		for _, n := range p.cfg.Alive() {
			nodes[n] = true
		}
	}
	for _, l := range dir.Leases() {
		if l.Live(now) {
			nodes[l.Node] = true // a node not heard lately whose leases live on
		}
	}
	mine := 0
	for _, room := range p.cfg.Rooms {
		if dir.Owns(room) {
			mine++
		}
	}
	alive := len(nodes)
	if now.Sub(p.started) < p.cfg.Warmup {
		alive = max(alive, p.cfg.Nodes)
	}
	share := (len(p.cfg.Rooms) + alive - 1) / alive
	for _, room := range p.cfg.Rooms {
		if ctx.Err() != nil {
			return
		}
		pl := p.placed[room]
		if pl.host != nil {
			select {
			case <-pl.host.Done():
				p.log.Warn().Str("room", string(room)).Msg("dedicated host stopped; starting it again")
				p.stop(room, "")
			default:
			}
		}
		switch {
		case pl.host != nil && !dir.Holds(room):
			p.stop(room, "its room's lease moved to another node")
		case pl.host != nil, pl.broken:
		case dir.Owns(room):
			p.start(ctx, room)
		case mine < share:
			actx, cancel := context.WithTimeout(ctx, p.cfg.AcquireTimeout)
			l, err := dir.Acquire(actx, room)
			cancel()
			if err != nil {
				p.log.Warn().Err(err).Str("room", string(room)).Msg("room lease not acquired")
				continue
			}
			if l.Node == name {
				mine++
				p.start(ctx, room)
			}
		}
	}
}

// start starts room's host; see PlacementConfig.Start for its errors.
func (p *Placement) start(ctx context.Context, room signaling.RoomID) {
	h, err := p.cfg.Start(ctx, room)
	switch {
	case errors.Is(err, ErrRoomBroken):
		// The room does not open with half a world: not here, and its lease goes back.
		p.log.Error().Err(err).Str("room", string(room)).Msg("room not opened: its dedicated host does not start")
		p.placed[room].broken = true
		p.setKeep(room, false)
		rctx, cancel := context.WithTimeout(ctx, p.cfg.AcquireTimeout)
		_ = p.cfg.Directory.Release(rctx, room)
		cancel()
		return
	case err != nil:
		p.log.Warn().Err(err).Str("room", string(room)).Msg("dedicated host not started yet; trying again")
		p.setKeep(room, true)
		return
	}
	p.placed[room].host = h
	p.setKeep(room, true)
	p.log.Info().Str("room", string(room)).Str("node", p.cfg.Directory.Node()).Msg("dedicated host started on the room's owner")
}

// stopAll stops every host placement started (the node is stopping).
func (p *Placement) stopAll() {
	for _, room := range p.cfg.Rooms {
		p.stop(room, "shutting down")
	}
}

// stop stops room's host, if one runs, and waits for it.
func (p *Placement) stop(room signaling.RoomID, why string) {
	pl := p.placed[room]
	if pl.host == nil {
		return
	}
	pl.host.Stop()
	pl.host = nil
	p.setKeep(room, false)
	if why != "" {
		p.log.Info().Str("room", string(room)).Str("why", why).Msg("dedicated host stopped")
	}
}
