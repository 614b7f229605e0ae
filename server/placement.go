package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/concordrtc/concord/internal/cluster"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// Placement of dedicated hosts in a cluster (docs/protocol.md §7 "Placement") is
// cluster.Placement's: which node runs which room's host, and when. This file is what it calls to
// start a host here: from the room's checkpoint of that moment (or its scene).

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

// startDedicated is cluster.PlacementConfig.Start: it starts room's host from the room's
// checkpoint (or scene) as it is now.
func (s *Server) startDedicated(ctx context.Context, room signaling.RoomID) (cluster.Host, error) {
	d := s.dedicatedOf(room)
	if d == nil {
		return nil, fmt.Errorf("%w: room %q has no dedicated host on this node", cluster.ErrRoomBroken, room)
	}
	if s.missingCheckpoint(ctx, d) {
		return nil, errors.New("the room was open before, and its checkpoint is not found yet")
	}
	seed, clock, err := s.seed(ctx, d.room, d.scene)
	var corrupt *durable.CorruptError
	var pathErr *fs.PathError
	if err != nil && !errors.As(err, &corrupt) && !errors.Is(err, durable.ErrUnknownFormat) && !errors.As(err, &pathErr) {
		// The checkpoint could not be read (JetStream unavailable while the cluster elects a
		// leader after a node died): the lease is kept and the next pass tries again.
		return nil, fmt.Errorf("room checkpoint not read yet: %w", err)
	}
	if err != nil {
		// The room does not open with half a world: not here, and its lease goes back.
		return nil, fmt.Errorf("%w: %w", cluster.ErrRoomBroken, err)
	}
	cfg := d.cfg
	// A placed host that another connection replaced (its room's lease moved while the cluster's
	// store elected a leader, and a host of another node joined with the same identity) ends, so
	// that the placement sees it stop and starts it again while this node owns the room, or lets
	// it go: kept running without signaling, it was a host nobody could reach that the placement
	// counted as running, and the room stayed without its dedicated host. (A single node's host
	// keeps the default: its end stops the server, and only the operator holds its identity.)
	cfg.EndWhenReplaced = true
	cfg.App = newApp(s.o, d.room)
	cfg.Server = s.hostServer
	if s.secret != "" {
		cfg.Token, err = signaling.IssueToken([]byte(s.secret), signaling.Claims{
			Room: d.room, User: DedicatedHostUser, Device: "serve", MayHost: true,
			Kind: signaling.KindHost, ExpiresAt: time.Now().Add(365 * 24 * time.Hour),
		})
		if err != nil {
			return nil, fmt.Errorf("dedicated host token: %w", err)
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
		return nil, err
	}
	hctx, cancel := context.WithCancel(ctx)
	h := &runningHost{s: s, d: d, stop: cancel, done: make(chan struct{})}
	s.hostMu.Lock()
	d.peer = p
	s.hostMu.Unlock()
	app := d.app
	go func() { // owned by placement: runningHost.Stop waits for it
		defer close(h.done)
		if err := p.Run(hctx); err != nil && hctx.Err() == nil {
			s.log.Warn().Err(err).Str("room", string(d.room)).Msg("dedicated host ended")
		}
		if app != nil {
			app.Final() // Run has returned: the world is this goroutine's
		}
	}()
	return h, nil
}

// dedicatedOf is room's dedicated host (nil if it has none).
func (s *Server) dedicatedOf(room signaling.RoomID) *dedicated {
	for _, d := range s.hosts {
		if d.room == room {
			return d
		}
	}
	return nil
}

// runningHost is a dedicated host placement started: a cluster.Host.
type runningHost struct {
	s    *Server
	d    *dedicated
	stop context.CancelFunc
	done chan struct{} // closed when its Run has returned
}

func (h *runningHost) Done() <-chan struct{} { return h.done }

// Stop stops the host and waits for it (its last checkpoint is queued).
func (h *runningHost) Stop() {
	h.stop()
	<-h.done
	h.s.hostMu.Lock()
	h.d.peer = nil
	h.s.hostMu.Unlock()
}
