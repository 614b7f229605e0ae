package voice

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// FollowerUser is the user name of the read-only member the forwarder joins to a room it reads
// positions of. It joins as a host-kind member that declines hosting (peer.Config.NoHost): it is
// never elected, and games give host-kind members no avatar.
const FollowerUser = "concord-voice"

// WorldPositions reads avatar positions out of rooms' worlds (Positions): the world of a host
// peer in this process when there is one, else that of a read-only member it joins to the room
// (peer.Config.NoHost) on first use and leaves on Forget. It is a minimal follower of its own; the
// positions are the CRDT's, never a client's claim.
type WorldPositions struct {
	// Host returns the peer of room's host in this process (concord serve's dedicated host), or
	// nil. Default nil: always follow.
	Host func(room signaling.RoomID) *peer.Peer
	// Follow returns the peer.Config of the member that follows room (Server, Room, User,
	// Device, Token, App with the room's schemas, network), false to not follow it. Required
	// unless Host covers every room.
	Follow func(room signaling.RoomID) (peer.Config, bool)
	// AvatarPos reads the position of an avatar entity of room's world: the game's schema says
	// where its avatars stand (concord serve: the arena's pos property, or a game's own through
	// server.Voice.AvatarPos). Required: Locate fails without it.
	AvatarPos func(room signaling.RoomID, w *peer.World, e peer.Entity) (Pos, bool)
	// Logger, default disabled.
	Logger zerolog.Logger

	mu        sync.Mutex // guards followers and stopping
	followers map[signaling.RoomID]*follower
	stopping  []*follower
}

type follower struct {
	p    *peer.Peer
	stop context.CancelFunc
	done chan struct{}
}

// ErrNoAvatarPos: a WorldPositions without AvatarPos, which cannot know where a game's avatars
// stand.
var ErrNoAvatarPos = errors.New("voice: WorldPositions.AvatarPos is nil")

// Locate implements Positions.
func (wp *WorldPositions) Locate(ctx context.Context, room signaling.RoomID, idx []signaling.PeerIndex, out []Pos) error {
	pos := wp.AvatarPos
	if pos == nil {
		return ErrNoAvatarPos
	}
	var p *peer.Peer
	if wp.Host != nil {
		p = wp.Host(room)
	}
	if p == nil {
		var err error
		if p, err = wp.follow(room); err != nil || p == nil {
			return err
		}
	}
	return p.Do(ctx, func(w *peer.World) {
		for i, x := range idx {
			out[i] = Pos{}
			if e, ok := w.AvatarOf(x); ok {
				out[i], _ = pos(room, w, e)
			}
		}
	})
}

// follow returns room's follower, starting it.
func (wp *WorldPositions) follow(room signaling.RoomID) (*peer.Peer, error) {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if f := wp.followers[room]; f != nil {
		select {
		case <-f.done: // it stopped (its server went away): start over
		default:
			return f.p, nil
		}
	}
	if wp.Follow == nil {
		return nil, nil
	}
	cfg, ok := wp.Follow(room)
	if !ok {
		return nil, nil
	}
	p, err := peer.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("voice: following %q: %w", room, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{p: p, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			wp.Logger.Warn().Err(err).Str("room", string(room)).Msg("voice: the room's follower stopped")
		}
	}()
	if wp.followers == nil {
		wp.followers = map[signaling.RoomID]*follower{}
	}
	wp.followers[room] = f
	return p, nil
}

// Forget implements Positions: the room's follower leaves. It does not wait (the forwarder's loop
// calls it); Close does.
func (wp *WorldPositions) Forget(room signaling.RoomID) {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if f := wp.followers[room]; f != nil {
		delete(wp.followers, room)
		f.stop()
		wp.stopping = append(wp.stopping, f)
	}
}

// Close stops every follower and waits for them. Close the Forwarder first.
func (wp *WorldPositions) Close() {
	wp.mu.Lock()
	all := wp.stopping
	for _, f := range wp.followers {
		all = append(all, f)
	}
	wp.followers, wp.stopping = nil, nil
	wp.mu.Unlock()
	for _, f := range all {
		f.stop()
		<-f.done
	}
}
