package signaling

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Clock tells the time. The server uses it to check token times and to
// refill signal rate limits; socket
// deadlines and ping tickers use the runtime's clock, because net.Conn
// deadlines are absolute wall-clock times.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// RoomConfig holds the settings of one room.
type RoomConfig struct {
	// MaxMembers caps the room. If zero, Config.MaxMembers is used.
	MaxMembers int
	// PinnedHosts are preferred as host, in this order, whenever one of them
	// is present, allowed to host and synced. A bare user ("alice") stands for
	// every device of that user.
	PinnedHosts []Identity
}

// Config configures a Server. The zero value works: an open server (no
// tokens) with the defaults below.
type Config struct {
	// Logger receives the server's logs. The zero value discards them.
	Logger zerolog.Logger
	// Clock is used to check token times. If nil, the system clock is used.
	Clock Clock

	// Secret is the HS256 key for join tokens. If empty, the server is open:
	// anyone may join any room under any identity, every member may host, and
	// power levels are DefaultPowerLevel. New logs a warning once when open.
	Secret []byte

	// ResumeGrace is how long a room without a host, into which members have resumed naming a
	// host that has not come back, waits for that host before it elects another (term+1). A
	// host that resumes within it is host again in its own term: no migration. Keep it above
	// the peers' redial interval (peer.DefaultRedialMax). If zero, DefaultResumeGrace (2s).
	ResumeGrace time.Duration
	// AfterFunc starts the hub's timers (the resume grace): it calls f once after d unless the
	// returned stop function is called first. If nil, time.AfterFunc. Tests inject a fake to
	// fire a grace period on demand.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)

	// Rooms holds per-room settings; rooms not listed get the defaults.
	Rooms map[RoomID]RoomConfig
	// MaxMembers caps rooms without their own cap. If zero, 64 is used.
	MaxMembers int
	// DefaultPowerLevel is every member's power level in open mode. Tokens
	// carry their own. If zero, members have power level 0.
	DefaultPowerLevel int

	// PingInterval is how often the server pings every socket. If zero, 1s.
	PingInterval time.Duration
	// PongWait is how long a joined socket may stay silent (no message, pong
	// or ping) before it is dropped as dead. If zero, 3s.
	PongWait time.Duration
	// WriteWait bounds every socket write. If zero, 5s.
	WriteWait time.Duration
	// JoinTimeout is how long a new socket has to send its join. If zero, 5s.
	JoinTimeout time.Duration
	// CloseGrace is how long the server waits for a peer to answer its close
	// frame before closing the socket. If zero, 1s.
	CloseGrace time.Duration
	// ReadLimit caps one inbound message in bytes. If zero, 64 KiB.
	ReadLimit int64
	// SignalRate and SignalBurst limit the signals one member may send: a
	// token bucket refilled at SignalRate per second holding at most
	// SignalBurst. A signal over the limit is answered with rate_limited and
	// not relayed, so that one member cannot flood another off the server
	// (its send queue would overflow). If zero, 50 per second and 200.
	SignalRate  float64
	SignalBurst int

	// SendQueue is the number of outbound messages queued per socket. A
	// member whose queue is full is disconnected (a slow consumer) rather
	// than stall its room. If zero, 256.
	SendQueue int

	// CheckOrigin decides whether a websocket handshake's Origin is allowed.
	// If nil, gorilla/websocket's default applies: the Origin host must equal
	// the request's Host (requests without Origin, like Go clients, pass).
	CheckOrigin func(*http.Request) bool

	// ICEServers, if not nil, gives each joining member the STUN/TURN servers (and its
	// credentials) that it passes to its peer connections; they travel in the joined message.
	// If nil, members get none (loopback only, today's default).
	ICEServers ICEServersFunc

	// Registerer, if not nil, receives the server's Prometheus metrics.
	Registerer prometheus.Registerer
}

// Defaults for zero Config fields.
const (
	DefaultMaxMembers   = 64
	DefaultPingInterval = time.Second
	DefaultPongWait     = 3 * time.Second
	DefaultWriteWait    = 5 * time.Second
	DefaultJoinTimeout  = 5 * time.Second
	DefaultCloseGrace   = time.Second
	DefaultReadLimit    = 64 << 10
	DefaultSendQueue    = 256
	DefaultSignalRate   = 50
	DefaultSignalBurst  = 200
	DefaultResumeGrace  = 2 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.MaxMembers <= 0 {
		c.MaxMembers = DefaultMaxMembers
	}
	if c.PingInterval <= 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.PongWait <= 0 {
		c.PongWait = DefaultPongWait
	}
	if c.WriteWait <= 0 {
		c.WriteWait = DefaultWriteWait
	}
	if c.JoinTimeout <= 0 {
		c.JoinTimeout = DefaultJoinTimeout
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = DefaultCloseGrace
	}
	if c.ReadLimit <= 0 {
		c.ReadLimit = DefaultReadLimit
	}
	if c.SendQueue <= 0 {
		c.SendQueue = DefaultSendQueue
	}
	if c.SignalRate <= 0 {
		c.SignalRate = DefaultSignalRate
	}
	if c.SignalBurst <= 0 {
		c.SignalBurst = DefaultSignalBurst
	}
	if c.ResumeGrace <= 0 {
		c.ResumeGrace = DefaultResumeGrace
	}
	if c.AfterFunc == nil {
		c.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	// Copy the maps and slices the hub reads, so a caller changing its
	// Config later cannot race with the hub.
	rooms := make(map[RoomID]RoomConfig, len(c.Rooms))
	for id, rc := range c.Rooms {
		rc.PinnedHosts = append([]Identity(nil), rc.PinnedHosts...)
		rooms[id] = rc
	}
	c.Rooms = rooms
	c.Secret = append([]byte(nil), c.Secret...)
	return c
}

// roomConfig returns the resolved settings of a room.
func (c *Config) roomConfig(id RoomID) RoomConfig {
	rc := c.Rooms[id]
	if rc.MaxMembers <= 0 {
		rc.MaxMembers = c.MaxMembers
	}
	return rc
}
