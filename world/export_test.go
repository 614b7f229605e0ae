package world

import (
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
