package world

import (
	"context"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// PeerOf returns the client's member of room (nil when it does not follow it).
func (c *Client) PeerOf(room signaling.RoomID) *peer.Peer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.follows[room]; f != nil {
		return f.p
	}
	return nil
}

// Inspect runs fn on the loop of the host of region (x, y), loading it first.
func (s *Server) Inspect(ctx context.Context, x, y int, fn func(w *peer.World)) error {
	r, err := s.Load(ctx, x, y)
	if err != nil {
		return err
	}
	s.mu.Lock()
	p := s.regions[r.Room()].peer
	s.mu.Unlock()
	if p == nil {
		return ErrUnknownRegion
	}
	return p.Do(ctx, fn)
}
