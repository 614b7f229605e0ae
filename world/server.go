package world

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// Defaults of a Server.
const (
	DefaultGrace       = 30 * time.Second // --world-grace: an unvisited region's time before it unloads
	DefaultLeaveGrace  = 5 * time.Second  // a player's absence from its region before it has left
	DefaultLoadTimeout = 10 * time.Second // a load's wait for its host
	hostUser           = "host"
)

// ErrUnknownRegion reports a region outside the world.
var ErrUnknownRegion = errors.New("world: no such region")

// errClosing refuses a load once Close has begun: a region loaded then would be stopped without
// its unload (no final checkpoint, its residents neither saved nor their residence records
// removed) and its records would outlive the node (docs/protocol.md §11 "Cluster restart").
var errClosing = errors.New("world: server closing")

// ServerConfig configures a Server. Def and URL are required.
type ServerConfig struct {
	Def Def
	// URL is the signaling server the region hosts dial.
	URL string
	// HostConfig returns the base peer.Config of a region's host (transport, token, limits);
	// Server, Room, App, User, Device and Kind are set by the Server. Nil: the zero Config.
	HostConfig func(room signaling.RoomID) (peer.Config, error)
	// Store and Writer keep checkpoints (internal/durable); nil keeps regions in memory only.
	Store  *durable.Store
	Writer *durable.Writer
	// Interval is the least time between two checkpoints of a changing region (0: durable's).
	Interval time.Duration
	// Grace is how long a region with no member stays loaded (0: DefaultGrace).
	Grace time.Duration
	// LeaveGrace is how long a resident may be away from its region's room before its data is
	// saved and its avatar removed (0: DefaultLeaveGrace); a member that resumes within it stays.
	LeaveGrace time.Duration
	// Node is this node's name in a cluster ("" alone): the directory's "node".
	Node string
	// Cluster, when set, runs this Server as one node of a world across a cluster (cluster.go).
	Cluster *Cluster
	// Secret is the server's join-token key (CONCORD_SECRET). With one, POST
	// /api/worlds/{W}/load answers only to a join token of one of this world's region rooms or
	// to AdminKey (docs/security.md §12); nil: an open server, where anyone may load a region
	// (as anyone may join its room).
	Secret   []byte
	AdminKey string
	// Registerer receives the world's metrics (nil: none).
	Registerer prometheus.Registerer
	Logger     zerolog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Server runs a world's region hosts in this process.
type Server struct {
	cfg        ServerConfig
	def        Def
	log        zerolog.Logger
	now        func() time.Time
	leaveGrace time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closing bool // Close has begun: no more loads
	regions map[signaling.RoomID]*regionRun
	players map[string]*playerRec
	pauses  []time.Duration // handover pauses, for HandoverPauses (bounded)

	kv *playerKV   // nil without a Store
	cl *clusterRun // nil alone

	mHandovers *prometheus.CounterVec
	mLoaded    prometheus.GaugeFunc
	mRefused   *prometheus.CounterVec
	mPause     prometheus.Histogram
	mStranded  prometheus.Counter
	mAbsent    prometheus.Counter
}

// playerRec is what the Server keeps of a player between regions and between visits.
type playerRec struct {
	region Region // where it is resident; zero World while it is not in the world
	saved  [][]byte
	gen    uint32
	// moving counts this node's arrivals of the player handing it to region (arrive to the end
	// of transfer): region's host may not hold it yet. arriving counts the arrival goroutines
	// under way (so that the sweep starts no second one).
	moving, arriving int
}

// Region states.
const (
	unloaded = iota
	loading
	loaded
	unloading
)

// regionRun is one region's host, guarded by Server.mu.
type regionRun struct {
	r       Region
	state   int
	changed chan struct{} // closed and replaced at every state change
	peer    *peer.Peer
	app     *regionApp
	dur     *durable.App
	cancel  context.CancelFunc
	done    chan struct{}
	members int
	idle    time.Time // when its last member left (zero while it has one)
	visited bool      // loaded before in this process: mem holds its last state
	mem     []byte
	clock   crdt.Timestamp
}

// NewServer starts a world's Server; its janitor unloads idle regions until Close.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Def.Check(); err != nil {
		return nil, err
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.LeaveGrace <= 0 {
		cfg.LeaveGrace = DefaultLeaveGrace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, def: cfg.Def, log: cfg.Logger, now: cfg.Now, leaveGrace: cfg.LeaveGrace,
		regions: map[signaling.RoomID]*regionRun{}, players: map[string]*playerRec{}}
	for y := range s.def.Rows {
		for x := range s.def.Cols {
			r, _ := s.def.Region(x, y)
			s.regions[r.Room()] = &regionRun{r: r, changed: make(chan struct{})}
		}
	}
	s.metrics(cfg.Registerer)
	if cfg.Store != nil {
		kv, err := openPlayerKV(context.Background(), cfg.Store, s.def.Name)
		if err != nil {
			return nil, err
		}
		s.kv = kv
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Cluster != nil {
		if err := s.startCluster(s.ctx); err != nil {
			s.cancel()
			return nil, err
		}
	}
	s.wg.Add(1)
	go s.janitor()
	return s, nil
}

func (s *Server) metrics(reg prometheus.Registerer) {
	s.mHandovers = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "concord_world_handovers_total",
		Help: "Avatar handovers between region hosts (docs/protocol.md §11), by result."}, []string{"result"})
	s.mRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "concord_world_refused_total",
		Help: "World inputs and requests refused (docs/security.md \"Worlds\"), by reason."}, []string{"reason"})
	s.mPause = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "concord_world_handover_seconds",
		Help: "Time from a source region seeing an avatar out of bounds to the destination holding it.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
	s.mStranded = prometheus.NewCounter(prometheus.CounterOpts{Name: "concord_world_arrivals_retried_total",
		Help: "Arrivals that failed every try and were scheduled to be tried again (docs/protocol.md §11)."})
	s.mAbsent = prometheus.NewCounter(prometheus.CounterOpts{Name: "concord_world_absent_residents_total",
		Help: "Members this node took for resident in a region whose host did not hold their avatar, made to arrive again (docs/protocol.md §11)."})
	s.mLoaded = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "concord_world_regions_loaded", Help: "Regions whose host runs in this process."},
		func() float64 { return float64(len(s.Loaded())) })
	if reg != nil {
		reg.MustRegister(s.mHandovers, s.mRefused, s.mPause, s.mStranded, s.mAbsent, s.mLoaded)
	}
}

// Def returns the world's definition.
func (s *Server) Def() Def { return s.def }

// Rooms lists the region rooms: serve pins their host to the region hosts' identity.
func (s *Server) Rooms() []signaling.RoomID { return s.def.Rooms() }

// HostIdentity is the identity of the region hosts ("host/serve").
const HostIdentity signaling.Identity = hostUser + "/serve"

// Loaded lists the rooms of the loaded regions.
func (s *Server) Loaded() []signaling.RoomID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []signaling.RoomID
	for room, rg := range s.regions {
		if rg.state == loaded {
			out = append(out, room)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Server) count(what, reason string) { s.mRefused.WithLabelValues(what + "_" + reason).Inc() }

// setState changes rg's state and wakes its waiters; s.mu held.
func (rg *regionRun) setState(st int) {
	rg.state = st
	close(rg.changed)
	rg.changed = make(chan struct{})
}

// Load loads region (x, y) if it is not loaded and waits until its host is host of its room.
func (s *Server) Load(ctx context.Context, x, y int) (Region, error) {
	r, ok := s.def.Region(x, y)
	if !ok {
		return Region{}, fmt.Errorf("%w: (%d, %d)", ErrUnknownRegion, x, y)
	}
	node, remote, err := s.remote(ctx, r)
	if err != nil {
		return r, err
	}
	if remote {
		return r, s.loadRemote(ctx, node, r)
	}
	return r, s.load(ctx, r)
}

func (s *Server) load(ctx context.Context, r Region) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultLoadTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		rg := s.regions[r.Room()]
		switch rg.state {
		case loaded:
			if !rg.ended() {
				s.mu.Unlock()
				return nil
			}
			// Its host ended on its own and the janitor has not noticed yet: a client asking
			// again for its region (its room lost its host) was told it is loaded, and stopped
			// asking, with no host in its room for good.
			rg.setState(unloading)
			s.mu.Unlock()
			s.unload(rg)
			continue
		case unloaded:
			if s.closing || s.ctx.Err() != nil {
				s.mu.Unlock()
				return errClosing
			}
			rg.setState(loading)
			s.mu.Unlock()
			err := s.start(ctx, rg)
			s.mu.Lock()
			if err != nil {
				rg.setState(unloaded)
				s.mu.Unlock()
				return err
			}
			rg.setState(loaded)
			s.mu.Unlock()
			return nil
		}
		ch := rg.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("world: region %s not loaded: %w", r.Room(), ctx.Err())
		}
	}
}

// start runs rg's host from its last state (this process's copy, else its checkpoint, else the
// generator) and waits until it is host. rg is loading: only this goroutine touches its host.
func (s *Server) start(ctx context.Context, rg *regionRun) error {
	room := rg.r.Room()
	seed, clock := rg.mem, rg.clock
	if !rg.visited && s.cfg.Store != nil {
		c, err := s.cfg.Store.LoadCheckpoint(ctx, room)
		switch {
		case err == nil:
			if _, err := durable.Validate(room, s.cfg.Store.Source(room), c.Data); err != nil {
				return err
			}
			var dropped map[string]int
			if seed, clock, dropped, err = durable.Bound(c.Data, c.Clock); err != nil {
				return err
			}
			for reason, n := range dropped {
				s.log.Warn().Str("room", string(room)).Str("reason", reason).Int("messages", n).Msg("world: restore bounds dropped messages (docs/protocol.md §6)")
			}
		case !errors.Is(err, durable.ErrNoCheckpoint):
			return err
		}
	}
	var cfg peer.Config
	if s.cfg.HostConfig != nil {
		var err error
		if cfg, err = s.cfg.HostConfig(room); err != nil {
			return err
		}
	}
	ready := make(chan struct{})
	app := &regionApp{s: s, rr: rg, r: rg.r, app: s.def.App, av: s.def.App.Avatar(), fresh: seed == nil,
		members: map[peer.PeerIndex]string{}, index: map[string]peer.PeerIndex{}, byOwner: map[string]*inhabitant{},
		retire: map[peer.Entity]int{}, tell: map[peer.PeerIndex]*telling{}, stranded: map[string]strandedArrival{},
		superseded: map[string]supersededAt{}, ready: func() { close(ready) }}
	cfg.Server, cfg.Room, cfg.User, cfg.Device, cfg.Kind = s.cfg.URL, string(room), hostUser, "serve", signaling.KindHost
	cfg.App = app
	var dur *durable.App
	if s.cfg.Writer != nil || seed != nil {
		dur = durable.NewApp(app, durable.AppConfig{Room: room, Writer: s.cfg.Writer, Seed: seed, SeedClock: clock,
			Interval: s.cfg.Interval, Logger: s.log})
		cfg.App = dur
	}
	p, err := peer.New(cfg)
	if err != nil {
		return err
	}
	hctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	s.mu.Lock()
	rg.peer, rg.app, rg.dur, rg.cancel, rg.done, rg.members, rg.idle = p, app, dur, cancel, done, 0, s.now()
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		if err := p.Run(hctx); err != nil && hctx.Err() == nil {
			s.log.Warn().Err(err).Str("room", string(room)).Msg("world: region host ended")
		}
	}()
	select {
	case <-ready:
		s.log.Info().Str("room", string(room)).Bool("generated", seed == nil).Msg("world: region loaded")
		return nil
	case <-done:
		return fmt.Errorf("world: region %s: host ended before it hosted", room)
	case <-ctx.Done():
		cancel()
		<-done
		return fmt.Errorf("world: region %s: not host in time: %w", room, ctx.Err())
	}
}

// unload checkpoints rg whole and stops its host. rg is unloading.
func (s *Server) unload(rg *regionRun) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var data []byte
	var clock crdt.Timestamp
	app := rg.app
	s.log.Debug().Str("room", string(rg.r.Room())).Msg("world: unloading")
	if err := rg.peer.Do(ctx, func(w *peer.World) {
		// Residents still here (a server stopping) keep their data as if they had left.
		for owner, in := range app.byOwner {
			s.log.Debug().Str("owner", owner).Str("room", string(rg.r.Room())).Uint32("gen", in.gen).Bool("handing", in.handing).Msg("world: resident unloaded")
			if !in.handing {
				s.left(owner, app.values(w, in.e), in.gen)
			}
		}
		data, clock = w.Checkpoint()
	}); err != nil {
		s.log.Warn().Err(err).Str("room", string(rg.r.Room())).Msg("world: region state not read before unloading")
	}
	rg.cancel()
	<-rg.done
	if rg.dur != nil {
		// Through the Writer, which keeps a room's checkpoints in order; this process loads
		// the region again from mem, which is at least as new.
		rg.dur.Final()
	}
	s.mu.Lock()
	if data != nil {
		rg.mem, rg.clock, rg.visited = data, clock, true
	}
	rg.peer, rg.app, rg.dur, rg.cancel, rg.done = nil, nil, nil, nil, nil
	rg.setState(unloaded)
	s.mu.Unlock()
	s.log.Info().Str("room", string(rg.r.Room())).Int("bytes", len(data)).Msg("world: region unloaded")
}

// janitor unloads the regions that had no member for the grace period, and notices hosts that
// ended on their own.
func (s *Server) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		now := s.now()
		var idle, reopen []*regionRun
		s.mu.Lock()
		for _, rg := range s.regions {
			if rg.state != loaded {
				continue
			}
			switch {
			case rg.ended():
				rg.setState(unloading)
				idle = append(idle, rg)
				if rg.members > 0 || s.hasResidents(rg) {
					reopen = append(reopen, rg)
				}
			case rg.members == 0 && now.Sub(rg.idle) >= s.cfg.Grace && !s.hasResidents(rg):
				rg.setState(unloading)
				idle = append(idle, rg)
			}
		}
		s.mu.Unlock()
		for _, rg := range idle {
			s.unload(rg)
		}
		// A host that ended on its own with members in its room or players resident there is
		// started again at once: its members' asks for the region may all have come while it was
		// still taken for loaded, and none may come again.
		for _, rg := range reopen {
			s.wg.Add(1)
			go func(r Region) {
				defer s.wg.Done()
				ctx, cancel := context.WithTimeout(s.ctx, DefaultLoadTimeout)
				defer cancel()
				if err := s.load(ctx, r); err != nil && s.ctx.Err() == nil {
					s.log.Warn().Err(err).Str("room", string(r.Room())).Msg("world: a region whose host ended not reopened")
				}
			}(rg.r)
		}
	}
}

// ended reports whether rg's host has ended (loaded only).
func (rg *regionRun) ended() bool {
	select {
	case <-rg.done:
		return true
	default:
		return false
	}
}

// hasResidents reports whether a player is resident in rg (or on its way there); s.mu held.
func (s *Server) hasResidents(rg *regionRun) bool {
	for _, p := range s.players {
		if p.region == rg.r {
			return true
		}
	}
	return false
}

// memberIn counts a member arriving (+1) or leaving (−1) rg's room.
func (s *Server) memberIn(rg *regionRun, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rg.members = max(0, rg.members+d)
	if rg.members == 0 {
		rg.idle = s.now()
	}
}

// arrivalTries bounds the attempts to place an arriving player.
const arrivalTries = 5

// arrival handles member idx, player owner, arriving in rg's room without being resident there:
// it reads the player's saved data (this process's, else the store's), decides where the player
// is resident when it is not in the world yet (and hands its avatar there), and tells the
// member. It runs on a goroutine of its own: the store may be slow.
func (s *Server) arrival(rg *regionRun, r Region, owner string, idx peer.PeerIndex) {
	s.mu.Lock()
	p := s.players[owner]
	if p == nil {
		p = &playerRec{}
		s.players[owner] = p
	}
	p.arriving++
	s.mu.Unlock()
	s.arrivalCounted(rg, r, owner, idx, p)
}

// arrivalCounted is arrival once p.arriving counts it; it ends the count.
func (s *Server) arrivalCounted(rg *regionRun, r Region, owner string, idx peer.PeerIndex, p *playerRec) {
	defer func() {
		s.mu.Lock()
		p.arriving--
		s.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(s.ctx, DefaultLoadTimeout)
	defer cancel()
	s.forgetAbsent(ctx, rg, r, owner)
	s.loadPlayer(ctx, owner)
	// A try the store did not answer (a node under load), or whose region did not load in time,
	// is tried again, a second apart, a few times; then the region's host tries it again later
	// (strand): the peer asks for the member's arrival only once. Each try reads the record
	// again: another arrival (a room of the player's on any node) may have placed the player
	// meanwhile, and a try that took its own last failure for the player's state made it
	// resident a second time.
	var dest Region
	var h *handoff
	for try := 0; ; try++ {
		if try == arrivalTries {
			s.log.Debug().Str("owner", owner).Str("room", string(r.Room())).Msg("world: arrival stranded")
			s.strand(rg, owner, idx)
			return
		}
		if try > 0 {
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		if s.cl != nil {
			tctx, tcancel := context.WithTimeout(s.ctx, DefaultLoadTimeout)
			d, gen, elsewhere, err := s.arrivalCluster(tctx, r, owner)
			tcancel()
			if err != nil {
				continue
			}
			if elsewhere {
				hctx, hcancel := context.WithTimeout(s.ctx, DefaultLoadTimeout)
				s.hint(hctx, rg, owner, idx, d, gen)
				hcancel()
				return
			}
		}
		dest, h = s.arrive(r, owner)
		if h == nil || s.transfer(Region{}, dest, *h, nil) {
			break
		}
	}
	s.log.Debug().Str("owner", owner).Str("room", string(r.Room())).Str("dest", string(dest.Room())).Bool("handed", h != nil).Msg("world: arrival placed")
	if dest == r {
		return // accept told it
	}
	s.mu.Lock()
	gen := uint32(0)
	if p := s.players[owner]; p != nil && p.region == dest {
		gen = p.gen
	}
	s.mu.Unlock()
	hctx, hcancel := context.WithTimeout(s.ctx, DefaultLoadTimeout)
	defer hcancel()
	s.hint(hctx, rg, owner, idx, dest, gen)
}

// forgetAbsent forgets that owner is resident in r when r's host does not hold it and no
// arrival of this node is handing it there: the host that held it ended without its residents'
// unload (a host that ends on its own is unloaded with its loop gone) and r reopened from its
// checkpoint, which holds no avatar. Without it this node's memory said r, the arrival took the
// player for resident there ("accept told it"), and the member stayed with no avatar for good.
// The player then arrives anew, with a generation above every one this node handed out and the
// record's (docs/protocol.md §11 "Residence").
func (s *Server) forgetAbsent(ctx context.Context, rg *regionRun, r Region, owner string) {
	s.mu.Lock()
	p := s.players[owner]
	stale := p != nil && p.region == r && p.moving == 0
	hp, a := rg.peer, rg.app
	s.mu.Unlock()
	if !stale || hp == nil {
		return
	}
	held := true
	if hp.Do(ctx, func(*peer.World) { held = a.byOwner[owner] != nil }) != nil {
		return // not known: as it was
	}
	s.mu.Lock()
	if !held && p.region == r && p.moving == 0 {
		s.log.Debug().Str("owner", owner).Str("room", string(r.Room())).Uint32("gen", p.gen).Msg("world: resident by memory, not held: arrives anew")
		p.region = Region{}
	}
	s.mu.Unlock()
}

// arrivalRetry is how long a member whose arrival failed every try waits for the next.
const arrivalRetry = 2 * time.Second

// strand has rg's host try owner's arrival again after arrivalRetry, while idx is still its
// member there and the player is not resident there (regionApp.sweep): an arrival that failed
// every try (the store or the destination's load failing under load, or a whole cluster
// restarting) must not leave a member of the world with no avatar until it joins again.
func (s *Server) strand(rg *regionRun, owner string, idx peer.PeerIndex) {
	s.mu.Lock()
	p, a := rg.peer, rg.app
	s.mu.Unlock()
	if p == nil || s.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, DefaultLoadTimeout)
	defer cancel()
	_ = p.Do(ctx, func(*peer.World) {
		if a.members[idx] == owner && a.byOwner[owner] == nil {
			a.stranded[owner] = strandedArrival{idx: idx, at: s.now().Add(arrivalRetry)}
			s.mStranded.Inc()
		}
	})
}

// hint tells member idx of rg, player owner, that it is resident in dest with generation gen
// (0: not known, a hint a client takes only before it is resident anywhere). The generation is
// the one dest holds the avatar with (the residence record's in a cluster): a client resident
// with an older one follows it there, one with the same or a newer one knows better (§11).
func (s *Server) hint(ctx context.Context, rg *regionRun, owner string, idx peer.PeerIndex, dest Region, gen uint32) {
	s.mu.Lock()
	p, a := rg.peer, rg.app
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.Do(ctx, func(*peer.World) {
		if a.members[idx] == owner && a.byOwner[owner] == nil {
			s.log.Debug().Str("owner", owner).Str("from", string(a.r.Room())).Str("room", string(dest.Room())).Uint32("gen", gen).Msg("world: hint")
			a.tell[idx] = &telling{m: resident{X: uint16(dest.X), Y: uint16(dest.Y), Gen: gen}, left: tellTimes}
		}
	})
}

// loadPlayer reads owner's saved data from the store when this process holds none, and in a
// cluster whenever the player is not resident on this node: another node may have had it since
// this one saved it, and the store's copy is then the newer (the higher generation wins; equal,
// this node's, which it wrote last).
func (s *Server) loadPlayer(ctx context.Context, owner string) {
	s.mu.Lock()
	p := s.players[owner]
	// In a cluster the store is read even when this node's memory names a region: that memory
	// is stale once the player went on through other nodes (it left one of them, which saved a
	// newer generation), and the arrival that trusted it gave the player an older generation
	// than its client knew.
	known := p != nil && s.cl == nil && (p.region.World != "" || p.saved != nil)
	s.mu.Unlock()
	if known || s.kv == nil {
		return
	}
	values, gen, err := s.kv.load(ctx, owner)
	if err != nil {
		s.log.Warn().Err(err).Str("owner", owner).Msg("world: player data not read; the player starts anew")
		return
	}
	if values == nil || s.checkValues(values) != nil {
		return
	}
	s.mu.Lock()
	if p = s.players[owner]; p == nil {
		p = &playerRec{}
		s.players[owner] = p
	}
	if (p.region.World == "" || s.cl != nil) && (p.saved == nil || gen > p.gen) {
		p.saved, p.gen = values, max(p.gen, gen) // a generation handed out is never handed out again
	}
	s.mu.Unlock()
}

// checkValues checks saved avatar values against the avatar schema.
func (s *Server) checkValues(values [][]byte) error {
	sc, ok := s.def.App.Schemas().Lookup(s.def.App.Avatar().ID)
	if !ok || len(values) > len(sc.Properties) {
		return errShort
	}
	for i, v := range values {
		if v != nil {
			if err := sc.CheckValue(i, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrive decides where player owner is resident. When it is not in the world yet, it gets a
// handoff (its saved data, else the app's new player, arriving in r) for the region that holds
// its position; otherwise h is nil and dest is where it is.
func (s *Server) arrive(r Region, owner string) (dest Region, h *handoff) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.players[owner]
	if p == nil {
		p = &playerRec{}
		s.players[owner] = p
	}
	if p.region.World != "" {
		return p.region, nil
	}
	values := p.saved
	if values == nil {
		values = s.def.App.NewPlayer(r, owner)
	}
	av := s.def.App.Avatar()
	pos := r.Min
	if av.Pos < len(values) {
		if v, ok := ParseVec(values[av.Pos]); ok {
			pos = v
		}
	}
	dest = s.def.RegionAt(pos)
	p.region = dest
	p.moving++ // until transfer ends
	p.gen++    // the generation dest is to hold it with: never handed out twice, even if this fails
	return dest, &handoff{owner: owner, values: values, gen: p.gen}
}

// left saves the data of a player gone from its region (in the store too).
func (s *Server) left(owner string, values [][]byte, gen uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.players[owner]
	if p == nil {
		return
	}
	was := p.region
	p.region, p.saved, p.gen = Region{}, values, gen
	if s.kv != nil && s.ctx.Err() == nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// Saved first: a node that finds the record gone reads the saved data, and must
			// read these values and this generation, not an older save's.
			if err := s.kv.save(ctx, owner, values, gen); err != nil {
				// The record stays: a node finding none would read older saved data and give
				// the player a generation its client already knew (and dropped every word of).
				// The record's region makes it arrive anew above the record's (§11 "Cluster
				// restart").
				s.log.Warn().Err(err).Str("owner", owner).Msg("world: player data not saved in the store")
				return
			}
			if s.cl != nil {
				s.unclaim(ctx, owner, was, gen)
			}
		}()
	}
}

// SaveEvery is how often a region saves its residents' data in the store.
const SaveEvery = 5 * time.Second

type savedPlayer struct {
	owner  string
	values [][]byte
	gen    uint32
}

// savePlayers writes batch to the store on a goroutine of its own (a region's residents, every
// SaveEvery: one write each, in sequence).
func (s *Server) savePlayers(batch []savedPlayer) {
	if s.kv == nil || s.ctx.Err() != nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, p := range batch {
			ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
			err := s.kv.save(ctx, p.owner, p.values, p.gen)
			cancel()
			if err != nil {
				s.log.Warn().Err(err).Str("owner", p.owner).Msg("world: player data not saved in the store")
				return
			}
		}
	}()
}

// Player returns what is kept of a player: its resident region (ok false when it is not in the
// world) and its saved avatar values.
func (s *Server) Player(owner string) (r Region, resident bool, saved [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.players[owner]
	if p == nil {
		return Region{}, false, nil
	}
	return p.region, p.region.World != "", p.saved
}

// transfer hands h's avatar to region dest: loads it, has its host accept the avatar, then tells
// the source (src, when from a region) how it went, and reports it. It runs on a goroutine of
// its own.
func (s *Server) transfer(from, dest Region, h handoff, src *regionRun) bool {
	ok, fenced := s.deliver(from, dest, h)

	s.log.Debug().Str("owner", h.owner).Str("from", string(from.Room())).Str("room", string(dest.Room())).Uint32("gen", h.gen).
		Bool("ok", ok).Bool("fenced", fenced).Msg("world: transfer")
	s.mu.Lock()
	if p := s.players[h.owner]; p != nil && src == nil && p.moving > 0 {
		p.moving-- // an arrival's: arrive counted it
	}
	if p := s.players[h.owner]; p != nil && ok {
		p.region, p.gen = dest, max(p.gen, h.gen)
	} else if p != nil && src == nil && p.region == dest && p.gen == h.gen {
		// A first arrival that failed: the next arrival tries again. Only while the memory is
		// still this arrival's: another arrival or a handover that placed the player since
		// stands (without it the next try made the player resident a second time).
		p.region = Region{}
	}
	var sp *peer.Peer
	var sa *regionApp
	if src != nil && src.state == loaded {
		sp, sa = src.peer, src.app
	}
	s.mu.Unlock()
	result := "ok"
	if !ok {
		result = "failed"
	}
	if src != nil {
		s.mHandovers.WithLabelValues(result).Inc()
	}
	if sp == nil {
		return ok
	}
	// Until the source's loop takes it (a Do that timed out was not queued): a source that never
	// heard the outcome kept its copy, handing, beside the destination's for good.
	for s.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		err := sp.Do(ctx, func(w *peer.World) { sa.handedAway(w, h.owner, dest, fenced, h.gen, ok) })
		cancel()
		if err == nil || errors.Is(err, peer.ErrClosed) {
			break
		}
	}
	return ok
}

// deliver hands h to dest; fenced: it did not, and the residence record names the source with
// h's generation (settle).
func (s *Server) deliver(from, dest Region, h handoff) (ok, fenced bool) {
	node, remote, err := s.remote(s.ctx, dest)
	if err != nil {
		s.log.Warn().Err(err).Str("room", string(dest.Room())).Msg("world: handover destination not placed")
		return false, false
	}
	if remote {
		return s.deliverRemote(node, from, dest, h)
	}
	return s.deliverLocal(dest, h), false
}

// deliverLocal has the host of dest, a region of this process, accept h (in a cluster, once
// the player's residence record says dest).
func (s *Server) deliverLocal(dest Region, h handoff) bool {
	ctx, cancel := context.WithTimeout(s.ctx, DefaultLoadTimeout)
	defer cancel()
	if s.cl != nil {
		// Loaded before the claim: a claim is put back when the destination does not take the
		// avatar, and a load is what fails under load (for up to DefaultLoadTimeout, while
		// other hosts read the claim).
		if err := s.load(ctx, dest); err != nil {
			s.log.Warn().Err(err).Str("room", string(dest.Room())).Msg("world: handover destination not loaded")
			return false
		}
		undo, err := s.claim(ctx, h.owner, dest, h.gen)
		if err != nil {
			s.log.Debug().Err(err).Str("room", string(dest.Room())).Str("owner", h.owner).Msg("world: residence not claimed")
			return false
		}
		if !s.accept(ctx, dest, h) {
			undo() // the record names where the avatar is, never where it failed to go
			return false
		}
		return true
	}
	return s.accept(ctx, dest, h)
}

// accept loads dest and has its host accept h.
func (s *Server) accept(ctx context.Context, dest Region, h handoff) bool {
	for range 3 { // an unload may race the load: try again
		if err := s.load(ctx, dest); err != nil {
			s.log.Warn().Err(err).Str("room", string(dest.Room())).Msg("world: handover destination not loaded")
			return false
		}
		s.mu.Lock()
		rg := s.regions[dest.Room()]
		p, a := rg.peer, rg.app
		s.mu.Unlock()
		if p == nil {
			continue
		}
		ok := false
		if err := p.Do(ctx, func(w *peer.World) { ok = a.accept(w, h) }); err == nil {
			return ok
		}
	}
	return false
}

// handedOver records a handover's pause.
func (s *Server) handedOver(d time.Duration) {
	s.mPause.Observe(d.Seconds())
	s.mu.Lock()
	if len(s.pauses) < 1<<16 {
		s.pauses = append(s.pauses, d)
	}
	s.mu.Unlock()
}

// HandoverPauses returns the pauses of the handovers so far (the first 65,536): from the source
// seeing the avatar out of bounds to the destination holding it.
func (s *Server) HandoverPauses() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pauses)
}

// Close stops every region host, each checkpointed as at an unload.
func (s *Server) Close() {
	s.stopCluster()
	// No load starts from here on (errClosing); a load under way is waited for and unloaded
	// like the others, so that every region host this node ran ends checkpointed, its residents
	// saved and their records removed.
	for {
		s.mu.Lock()
		s.closing = true
		var up []*regionRun
		var starting []chan struct{}
		for _, rg := range s.regions {
			switch rg.state {
			case loaded:
				rg.setState(unloading)
				up = append(up, rg)
			case loading:
				starting = append(starting, rg.changed)
			}
		}
		s.mu.Unlock()
		if len(up) == 0 && len(starting) == 0 {
			break
		}
		for _, rg := range up {
			s.unload(rg)
		}
		for _, ch := range starting {
			<-ch // a load ends within DefaultLoadTimeout
		}
	}
	s.cancel()
	s.wg.Wait()
}
