package server

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// Placement of dedicated hosts in a cluster (docs/protocol.md "Cluster"): every node knows every
// room that has a dedicated host (--room with --dedicated-host, --scene); the room's owner, the
// holder of its lease, runs the host. A node takes free or expired leases of those rooms up to
// its fair share (the rooms over the live nodes, rounded up), so that the rooms spread over the
// nodes and a dead node's rooms move to the survivors once its leases expire; it starts the host
// of every such room it owns (also one whose lease a member's join took), from the room's
// checkpoint of that moment, and stops it when the lease is lost.

// placeWarmup is how long after its start a node counts every configured node (itself and its
// routes) as alive for its fair share: the others may still wait for JetStream.
const placeWarmup = 15 * time.Second

// place runs until ctx ends, then stops the hosts it started.
func (s *Server) place(ctx context.Context) {
	defer close(s.placeDone)
	dir := s.node.Directory()
	t := time.NewTicker(dir.TTL() / 3)
	defer t.Stop()
	started := time.Now()
	for {
		s.placeOnce(ctx, time.Since(started) < placeWarmup)
		select {
		case <-ctx.Done():
			for _, d := range s.hosts {
				s.stopDedicated(d, "shutting down")
			}
			return
		case <-t.C:
		case <-s.poke:
		}
	}
}

// pokePlacement asks the placement loop to look again now.
func (s *Server) pokePlacement() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// hostRunning reports whether room's dedicated host runs here (its lease is kept).
func (s *Server) hostRunning(room signaling.RoomID) bool {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	return s.hostsOn[room]
}

func (s *Server) placeOnce(ctx context.Context, warm bool) {
	dir := s.node.Directory()
	now := dir.Now()
	name := s.node.Name()
	nodes := map[string]bool{}
	for _, n := range s.node.Alive() {
		nodes[n] = true
	}
	mine := 0
	for _, l := range dir.Leases() {
		if l.Live(now) && l.Node != name {
			nodes[l.Node] = true // a node not heard lately whose leases live on
		}
	}
	for _, d := range s.hosts {
		if dir.Owns(d.room) {
			mine++
		}
	}
	alive := len(nodes)
	if warm {
		alive = max(alive, 1+len(s.routes))
	}
	share := (len(s.hosts) + alive - 1) / alive
	for _, d := range s.hosts {
		if ctx.Err() != nil {
			return
		}
		if d.stop != nil {
			select {
			case <-d.done:
				s.log.Warn().Str("room", string(d.room)).Msg("dedicated host stopped; starting it again")
				s.stopDedicated(d, "")
			default:
			}
		}
		owns := dir.Owns(d.room)
		switch {
		case d.stop != nil && !dir.Holds(d.room):
			s.stopDedicated(d, "its room's lease moved to another node")
		case d.stop != nil:
		case !d.broken && owns:
			s.startDedicated(ctx, d)
		case !d.broken && mine < share:
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			l, err := dir.Acquire(actx, d.room)
			cancel()
			if err != nil {
				s.log.Warn().Err(err).Str("room", string(d.room)).Msg("room lease not acquired")
				continue
			}
			if l.Node == name {
				mine++
				s.startDedicated(ctx, d)
			}
		}
	}
}

// checkpointWait is how long a room that was open before (it has counters) waits for its
// checkpoint to be found before it opens from its scene: right after a restart of the cluster a
// stream replica may answer before it has caught up.
const checkpointWait = 20 * time.Second

// missingCheckpoint reports whether d's room has no checkpoint although it was open before, while
// checkpointWait has not passed since that was first seen.
func (s *Server) missingCheckpoint(ctx context.Context, d *dedicated) bool {
	if s.store == nil {
		return false
	}
	if _, err := s.store.LoadCheckpoint(ctx, d.room); !errors.Is(err, durable.ErrNoCheckpoint) {
		return false
	}
	c, err := s.store.LoadRoom(d.room)
	if err != nil || c == (signaling.RoomCounters{}) {
		return false
	}
	now := time.Now()
	if d.missingSince.IsZero() {
		d.missingSince = now
	}
	if now.Sub(d.missingSince) < checkpointWait {
		s.log.Warn().Str("room", string(d.room)).Uint64("term", uint64(c.Term)).Msg("room was open before but no checkpoint is found yet; reading again")
		return true
	}
	s.log.Warn().Str("room", string(d.room)).Dur("waited", checkpointWait).Msg("room was open before but has no checkpoint: opening it from its scene")
	return false
}

// startDedicated starts d's host from the room's checkpoint (or scene) as it is now.
func (s *Server) startDedicated(ctx context.Context, d *dedicated) {
	if s.missingCheckpoint(ctx, d) {
		return
	}
	seed, clock, err := s.seed(ctx, d.room, d.scene)
	var corrupt *durable.CorruptError
	var pathErr *fs.PathError
	if err != nil && !errors.As(err, &corrupt) && !errors.Is(err, durable.ErrUnknownFormat) && !errors.As(err, &pathErr) {
		// The checkpoint could not be read (JetStream unavailable while the cluster elects a
		// leader after a node died): the lease is kept and the next pass tries again.
		s.log.Warn().Err(err).Str("room", string(d.room)).Msg("room checkpoint not read yet; trying again")
		return
	}
	if err != nil {
		// The room does not open with half a world: not here, and its lease goes back.
		s.log.Error().Err(err).Str("room", string(d.room)).Msg("room not opened: its dedicated host does not start")
		d.broken = true
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = s.node.Directory().Release(rctx, d.room)
		cancel()
		return
	}
	cfg := d.cfg
	cfg.App = newApp(s.o, d.room)
	cfg.Server = s.hostServer
	if s.secret != "" {
		cfg.Token, err = signaling.IssueToken([]byte(s.secret), signaling.Claims{
			Room: d.room, User: DedicatedHostUser, Device: "serve", MayHost: true,
			Kind: signaling.KindHost, ExpiresAt: time.Now().Add(365 * 24 * time.Hour),
		})
		if err != nil {
			s.log.Error().Err(err).Msg("dedicated host token")
			return
		}
	}
	d.app = nil
	if s.writer != nil || seed != nil {
		d.app = durable.NewApp(cfg.App, durable.AppConfig{Room: d.room, Writer: s.writer, Seed: seed, SeedClock: clock,
			Interval: s.checkpointInterval, Logger: s.log.With().Str("component", "checkpoint").Logger()})
		cfg.App = d.app
	}
	p, err := peer.New(cfg)
	if err != nil {
		s.log.Error().Err(err).Str("room", string(d.room)).Msg("dedicated host not started")
		return
	}
	hctx, cancel := context.WithCancel(ctx)
	d.stop, d.done = cancel, make(chan struct{})
	s.hostMu.Lock()
	s.hostsOn[d.room] = true
	d.peer = p
	s.hostMu.Unlock()
	app, done := d.app, d.done
	go func() { // owned by placement: stopDedicated waits for it
		defer close(done)
		if err := p.Run(hctx); err != nil && hctx.Err() == nil {
			s.log.Warn().Err(err).Str("room", string(d.room)).Msg("dedicated host ended")
		}
		if app != nil {
			app.Final() // Run has returned: the world is this goroutine's
		}
	}()
	s.log.Info().Str("room", string(d.room)).Str("node", s.node.Name()).Msg("dedicated host started on the room's owner")
}

// stopDedicated stops d's host, if it runs, and waits for it (its last checkpoint is queued).
func (s *Server) stopDedicated(d *dedicated, why string) {
	if d.stop == nil {
		return
	}
	d.stop()
	<-d.done
	d.stop, d.done = nil, nil
	s.hostMu.Lock()
	delete(s.hostsOn, d.room)
	d.peer = nil
	s.hostMu.Unlock()
	if why != "" {
		s.log.Info().Str("room", string(d.room)).Str("why", why).Msg("dedicated host stopped")
	}
}
