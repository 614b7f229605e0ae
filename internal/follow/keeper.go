package follow

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// Keeper defaults.
const (
	// DefaultPoll is KeeperConfig.Poll when zero: a room's follower joins within about this
	// long of its first member (its first host restores from the store over HTTP, not from the
	// follower, so the follower is late only for the checkpoints).
	DefaultPoll = time.Second
	// DefaultMaxRooms is KeeperConfig.MaxRooms when zero: each follower holds a replica and a
	// WebRTC link.
	DefaultMaxRooms = 1024
	// DefaultRetry is KeeperConfig.Retry when zero: how long a room whose follower failed (its
	// host runs another schema table) waits before the next try.
	DefaultRetry = time.Minute
)

// KeeperConfig configures a Keeper. Rooms and Follower are required.
type KeeperConfig struct {
	// Rooms lists the rooms and their members (signaling.Server.Rooms).
	Rooms func(ctx context.Context) ([]signaling.RoomInfo, error)
	// Follower makes the Config of room's follower: its token, its transport, the stored seed
	// (durable.LoadSeed), the writer. An error skips the room until Retry has passed.
	Follower func(ctx context.Context, room signaling.RoomID) (Config, error)
	// Skip, if not nil, names rooms not to follow (those with a dedicated host in this process,
	// which checkpoints them itself).
	Skip func(room signaling.RoomID) bool
	// User is the identity user of the followers, by which the Keeper tells them from the
	// room's other members. If empty, DefaultUser.
	User string
	// Poll is how often the Keeper reads the room list. If zero, DefaultPoll.
	Poll time.Duration
	// MaxRooms bounds the rooms followed at once; rooms beyond it are not kept (counted as
	// refused, reason "max_rooms"). If zero, DefaultMaxRooms.
	MaxRooms int
	// Retry is how long a room whose follower failed waits. If zero, DefaultRetry.
	Retry time.Duration
	// Logger; the zero value discards.
	Logger zerolog.Logger
	// Registerer, if not nil, receives concord_follow_rooms and
	// concord_follow_refused_total{reason}.
	Registerer prometheus.Registerer
}

// Keeper follows every room that has members (see the package doc).
type Keeper struct {
	cfg     KeeperConfig
	rooms   prometheus.Gauge
	refused *prometheus.CounterVec

	mu sync.Mutex // guards the following fields
	// followed: the followers running, by room.
	followed map[signaling.RoomID]*running
	// failed: when each room's follower last failed.
	failed map[signaling.RoomID]time.Time
	wg     sync.WaitGroup
}

type running struct {
	f      *Follower
	cancel context.CancelFunc
	done   chan struct{}
}

// NewKeeper makes a keeper; Run runs it.
func NewKeeper(cfg KeeperConfig) *Keeper {
	if cfg.User == "" {
		cfg.User = DefaultUser
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.MaxRooms <= 0 {
		cfg.MaxRooms = DefaultMaxRooms
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	k := &Keeper{cfg: cfg, followed: map[signaling.RoomID]*running{}, failed: map[signaling.RoomID]time.Time{},
		rooms:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "concord_follow_rooms", Help: "Rooms a server-side follower keeps (docs/protocol.md §6 \"Kept rooms\")."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "concord_follow_refused_total", Help: "Rooms not kept, by reason: max_rooms (over KeeperConfig.MaxRooms), schema (its host runs another schema table), world_size (its world grew past the follower's bound), failed (the seed did not load, the follower stopped)."}, []string{"reason"}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(k.rooms, k.refused)
	}
	return k
}

// Run polls the room list until ctx ends, then stops every follower (each writes its final
// checkpoint) and returns.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTicker(k.cfg.Poll)
	defer t.Stop()
	defer k.stopAll()
	for {
		k.poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Followed returns the rooms followed now.
func (k *Keeper) Followed() []signaling.RoomID {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]signaling.RoomID, 0, len(k.followed))
	for room := range k.followed {
		out = append(out, room)
	}
	return out
}

// Follower returns room's follower, if one runs.
func (k *Keeper) Follower(room signaling.RoomID) (*Follower, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.followed[room]
	if !ok {
		return nil, false
	}
	return r.f, true
}

func (k *Keeper) poll(ctx context.Context) {
	rooms, err := k.cfg.Rooms(ctx)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, signaling.ErrServerClosed) {
			k.cfg.Logger.Warn().Err(err).Msg("room list not read")
		}
		return
	}
	want := map[signaling.RoomID]bool{}
	for _, ri := range rooms {
		if k.cfg.Skip != nil && k.cfg.Skip(ri.Room) {
			continue
		}
		for _, m := range ri.Members {
			if m.PeerID.User() != k.cfg.User {
				want[ri.Room] = true
				break
			}
		}
	}
	var stop []*running
	k.mu.Lock()
	for room, r := range k.followed {
		select {
		case <-r.done:
			delete(k.followed, room)
			continue
		default:
		}
		if !want[room] {
			// Only followers are left: the room's world is all in the checkpoint.
			delete(k.followed, room)
			stop = append(stop, r)
		}
	}
	now := time.Now()
	var start []signaling.RoomID
	for room := range want {
		if _, ok := k.followed[room]; ok {
			continue
		}
		if at, ok := k.failed[room]; ok && now.Sub(at) < k.cfg.Retry {
			continue
		}
		if len(k.followed)+len(start) >= k.cfg.MaxRooms {
			k.refused.WithLabelValues("max_rooms").Inc()
			continue
		}
		start = append(start, room)
	}
	k.mu.Unlock()
	for _, r := range stop {
		r.cancel()
	}
	for _, room := range start {
		k.start(ctx, room)
	}
	k.mu.Lock()
	k.rooms.Set(float64(len(k.followed)))
	k.mu.Unlock()
}

// start makes room's follower and runs it on a goroutine of its own.
func (k *Keeper) start(ctx context.Context, room signaling.RoomID) {
	log := k.cfg.Logger.With().Str("room", string(room)).Logger()
	fail := func(err error) {
		log.Warn().Err(err).Dur("retry", k.cfg.Retry).Msg("room not kept")
		reason := "failed"
		switch {
		case errors.Is(err, ErrWorldTooLarge):
			reason = "world_size"
		case errors.Is(err, peer.ErrSchemaMismatch):
			reason = "schema"
		}
		k.refused.WithLabelValues(reason).Inc()
		k.mu.Lock()
		k.failed[room] = time.Now()
		k.mu.Unlock()
	}
	cfg, err := k.cfg.Follower(ctx, room)
	if err != nil {
		fail(err)
		return
	}
	cfg.Peer.Room, cfg.Peer.User = string(room), k.cfg.User
	f, err := New(cfg)
	if err != nil {
		fail(err)
		return
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &running{f: f, cancel: cancel, done: make(chan struct{})}
	k.mu.Lock()
	k.followed[room] = r
	delete(k.failed, room)
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		defer close(r.done)
		defer cancel()
		err := f.Run(fctx)
		if err != nil && fctx.Err() == nil {
			fail(err)
			return
		}
		log.Debug().Msg("follower stopped")
	}()
	log.Info().Msg("following the room")
}

// stopAll stops every follower and waits for them (their final checkpoints are handed to the
// writer before this returns).
func (k *Keeper) stopAll() {
	k.mu.Lock()
	for room, r := range k.followed {
		r.cancel()
		delete(k.followed, room)
	}
	k.mu.Unlock()
	k.wg.Wait()
	k.rooms.Set(0)
}
