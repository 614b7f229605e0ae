package voice

import (
	"context"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/signaling"
)

// Defaults (docs/protocol.md §10 "Voice: authorization and limits").
const (
	DefaultRadius        = 6000  // mm
	DefaultMaxSlots      = 8     // slots per member
	DefaultMaxSessions   = 64    // sessions per room
	DefaultMaxBitrate    = 64000 // bit/s per publisher
	DefaultInterval      = 100 * time.Millisecond
	DefaultLevelInterval = 200 * time.Millisecond
	maxOffer             = 64 << 10
	gatherTimeout        = 10 * time.Second
)

// Members is signaling's member table as the forwarder needs it (*signaling.Server implements it).
// Any goroutine may call it; it must not wait on a loop.
type Members interface {
	MemberIndex(room signaling.RoomID, id signaling.Identity) (signaling.PeerIndex, bool)
}

// Positions reads members' avatar positions out of a room's world. Locate fills out[i] with the
// position of member idx[i] (Known false when it has none). It may block (it may wait for a
// peer's loop) until ctx ends; the forwarder calls it from its poller goroutine, never its loop.
// Forget tells it the room has no voice session left (a follower may leave).
type Positions interface {
	Locate(ctx context.Context, room signaling.RoomID, idx []signaling.PeerIndex, out []Pos) error
	Forget(room signaling.RoomID)
}

// Config configures a Forwarder. The zero value works: an open forwarder on loopback with no
// positions (so Radius 0 is what makes anyone hear anyone) — Members is required.
type Config struct {
	// Members is signaling's member table: a session's member must be in its room. Required.
	Members Members
	// Positions gives avatar positions for proximity. Default nil: no positions, so with a Radius
	// nobody is in anybody's range.
	Positions Positions
	// API is the pion API sessions are made with; build it with NewMediaAPI over the server's
	// network settings. Default nil: one of the forwarder's own on loopback (127.0.0.1, one
	// shared socket), closed with the forwarder.
	API *webrtc.API
	// Flush, when set, is called after each packet's fan-out (link.API.Flush of a batched
	// socket). Default nil.
	Flush func()
	// Secret is signaling's token key: with one, a session needs a valid join token for its
	// room and member. Default nil: open, like an open signaling server.
	Secret []byte
	// Radius in the world's units (mm); 0: everyone hears everyone. Default 0 (serve: 6000).
	Radius float64
	// MaxSlots bounds a member's slots. Default 8.
	MaxSlots int
	// MaxSessions bounds the sessions of one room. Default 64.
	MaxSessions int
	// MaxBitrate bounds each publisher, in bit/s of RTP packets (a bucket of one second);
	// beyond it packets are dropped. Default 64000; negative: unbounded.
	MaxBitrate int
	// Interval is how often positions are read and speakers chosen. Default 100 ms.
	Interval time.Duration
	// LevelInterval is how often levels are sent. Default 200 ms.
	LevelInterval time.Duration
	// Registerer receives the concord_voice_* metrics. Default nil: none registered.
	Registerer prometheus.Registerer
	// Logger, default disabled.
	Logger zerolog.Logger
	// Now is the clock, default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MaxSlots <= 0 {
		c.MaxSlots = DefaultMaxSlots
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	switch {
	case c.MaxBitrate == 0:
		c.MaxBitrate = DefaultMaxBitrate
	case c.MaxBitrate < 0:
		c.MaxBitrate = 0
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.LevelInterval <= 0 {
		c.LevelInterval = DefaultLevelInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
