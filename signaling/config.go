package signaling

import (
	"context"
	"net/http"
	"time"

	"github.com/concordrtc/concord/signaling/sigclient"
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

	// ServiceKey, on an open server (no Secret), is the HS256 key of the server's own members'
	// join tokens (dedicated hosts, followers, region hosts), and Reserved are their identities
	// (patterns as in PinnedHosts: a bare user stands for all its devices): an open join
	// claiming a reserved identity without a token signed by ServiceKey is refused with
	// token_required, so that a stranger cannot replace one of the server's own members (a join
	// with the same user and device replaces the older connection). Other identities stay open
	// to anyone, pinned ones included: on an open server every member may host. With a Secret,
	// tokens name every identity and neither field is used. Empty: no identity is reserved.
	ServiceKey []byte
	Reserved   []Identity

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

	// PingInterval is how often the server pings every socket. Keepalives go
	// one way: the server pings, clients answer (browsers do so by
	// themselves) and do not ping. If zero, 5s.
	PingInterval time.Duration
	// PongWait is how long a joined socket may stay silent (no message, pong
	// or ping) before it is dropped as dead: a dead member leaves within
	// PongWait of its last frame. At least PingInterval plus a quarter (a
	// smaller value is raised to that). If zero, 12s.
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
	// SignalRate and SignalBurst limit the signals one member may send to one
	// other member: a token bucket per pair, refilled at SignalRate per second
	// holding at most SignalBurst. A signal over the limit is answered with
	// rate_limited and not relayed. Per pair, so a host's budget grows with the
	// members it answers. If zero, 50 per second and 200.
	SignalRate  float64
	SignalBurst int
	// RecvSignalRate and RecvSignalBurst limit the signals relayed to one
	// member from all others together (a token bucket per recipient). A
	// signal over it, or one that would fill the last quarter of the
	// recipient's send queue, is not relayed: the sender gets recipient_busy
	// and the recipient stays. If zero, 1000 per second and 4000.
	RecvSignalRate  float64
	RecvSignalBurst int

	// ErrorRate and ErrorBurst bound how many of a member's messages may be refused (bad
	// messages, rate limits, unknown peers, false reports): a token bucket refilled at ErrorRate
	// per second holding ErrorBurst. A member past it is a repeat offender: it gets
	// too_many_errors and a 1008 close, and leaves with reason error. Signals refused because
	// their recipient is busy do not count. If zero, 10 per second and 100.
	ErrorRate  float64
	ErrorBurst int

	// MaxConns caps the server's websockets (joined or not) and MaxConnsPerAddr
	// those from one remote IP address (behind a reverse proxy every client
	// has the proxy's address: raise it there). A handshake past either cap
	// is answered 503 with Retry-After and the reason, before any upgrade.
	// If zero, 16384 and 1024.
	MaxConns        int
	MaxConnsPerAddr int
	// MaxRooms caps the open rooms; a join that would open one more gets
	// server_busy. If zero, 4096.
	MaxRooms int
	// SyncTimeout is how long a member may stay unsynced in a room that has
	// a host before, when the room is full, a new join evicts it (the
	// longest-waiting first; error evicted, reason evicted): sockets that
	// join and never sync cannot squat a room. If zero, 30s.
	SyncTimeout time.Duration
	// MaxDevicesPerToken caps, with a Secret, the members one user may have
	// in a room through tokens without a device claim (each such join picks
	// its own device): more get too_many_devices. Tokens that name a device
	// admit one member each. If zero, 8.
	MaxDevicesPerToken int

	// SendQueue is the number of outbound messages queued per socket.
	// Signals get three quarters of it (past that the sender gets
	// recipient_busy); membership and host messages that find it full
	// spill into an ordered overflow of 4 × max(MaxMembers, SendQueue)
	// frames, so that a burst of joins or leaves slows a member down
	// instead of dropping it. A member whose overflow is full too is
	// disconnected (a slow consumer) rather than stall its room. If zero, 256.
	SendQueue int

	// MembershipLinger is how long a batching socket's writer waits for more
	// messages when all it holds are membership messages (member-joined,
	// member-synced, member-left), so that a burst of joins, each announced
	// to every member, takes a few websocket messages a member instead of
	// one a join. Any other message ends the wait at once (order is kept).
	// If zero, 200ms (50ms wrote 4× the websocket messages in a 1,024 burst,
	// the writers 18% of serve's CPU); negative: no wait.
	MembershipLinger time.Duration

	// CheckOrigin decides whether a websocket handshake's Origin is allowed.
	// If nil, gorilla/websocket's default applies: the Origin host must equal
	// the request's Host (requests without Origin, like Go clients, pass).
	CheckOrigin func(*http.Request) bool

	// AdminKey, with a Secret, lets GET /api/rooms list every room to a
	// request with "Authorization: Bearer <AdminKey>". Without it a request
	// needs a join token and sees only that token's room. An open server
	// (no Secret) lists every room to anyone. The key also opens the routes
	// wrapped in AdminOnly (serve: /metrics, /debug/pprof) and moderates
	// every room (kick, ban), on an open server too.
	AdminKey string
	// AllowedHosts are the names (without port) a request's Host header may
	// carry; others get 421, so a DNS-rebinding page cannot reach the server
	// through a name of its own. If empty, a request that arrived on a
	// loopback address must name a loopback host (localhost, *.localhost,
	// 127.0.0.0/8, ::1) and other requests are not checked.
	AllowedHosts []string

	// ICEServers, if not nil, gives each joining member the STUN/TURN servers (and its
	// credentials) that it passes to its peer connections; they travel in the joined message.
	// If nil, members get none (loopback only, today's default).
	ICEServers ICEServersFunc
	// ICERefresh, with ICEServers, is how often every member gets fresh ones in an
	// ice-servers message, so that time-limited TURN credentials are renewed while the member
	// stays (and end soon after it left). Zero: never; joined's are the only ones.
	ICERefresh time.Duration
	// MemberLeft, if not nil, is told of every member that leaves its room, for any reason
	// (the member-left reasons, replaced included), after IsMember stops reporting it: the
	// embedded TURN relay ends the allocations of a member that will not come back. It runs
	// on the hub's goroutine and must not block.
	MemberLeft func(room RoomID, id Identity, reason LeaveReason)

	// Bans, if not nil, keeps the rooms' bans across restarts (moderation.go): loaded once by
	// New, saved by a writer goroutine after each change. If nil, bans live in memory.
	Bans BanStore
	// MaxBansPerRoom caps the bans one room holds; a ban past it is refused (server_busy, HTTP
	// 409). If zero, DefaultMaxBansPerRoom (1024).
	MaxBansPerRoom int
	// KickElsewhere, if not nil, is asked to kick on the other nodes of a cluster when a kick
	// finds no member here (the room is served by another node): it returns whom they removed.
	KickElsewhere func(ctx context.Context, room RoomID, target Identity, reason string) ([]Identity, error)

	// Registerer, if not nil, receives the server's Prometheus metrics.
	Registerer prometheus.Registerer

	// Store, if not nil, keeps each room's last peer index and term across restarts (store.go).
	// If nil, they live in memory: unique while the server runs.
	Store Store
	// StoreTimeout is how long joins to a room wait for its counters to load from Store before
	// they get server_busy. If zero, DefaultStoreTimeout (10s).
	StoreTimeout time.Duration
	// Checkpoints, if not nil, serves GET /api/rooms/{room}/checkpoint: a kept room's last
	// checkpoint, for the first host that restores it (checkpoint.go). If nil, that route
	// answers 404.
	Checkpoints CheckpointSource

	// Router, if not nil, makes the server a node of a cluster: each websocket's join is routed
	// to the node that owns its room (cluster.go). If nil, every room is served here.
	Router Router
	// NodeName is this node's name, given as the Node of its rooms in GET /api/rooms.
	NodeName string
}

// Defaults for zero Config fields.
const (
	DefaultMaxMembers         = 64
	DefaultPingInterval       = 5 * time.Second
	DefaultPongWait           = sigclient.DefaultPongWait
	DefaultWriteWait          = sigclient.DefaultWriteWait
	DefaultJoinTimeout        = 5 * time.Second
	DefaultCloseGrace         = sigclient.DefaultCloseGrace
	DefaultReadLimit          = 64 << 10
	DefaultSendQueue          = 256
	DefaultMembershipLinger   = 200 * time.Millisecond
	DefaultSignalRate         = 50
	DefaultSignalBurst        = 200
	DefaultEventWait          = sigclient.DefaultEventWait
	DefaultResumeGrace        = 2 * time.Second
	DefaultRecvSignalRate     = 1000
	DefaultRecvSignalBurst    = 4000
	DefaultMaxConns           = 16384
	DefaultMaxConnsPerAddr    = 1024
	DefaultMaxRooms           = 4096
	DefaultSyncTimeout        = 30 * time.Second
	DefaultMaxDevicesPerToken = 8
	DefaultErrorRate          = 10
	DefaultErrorBurst         = 100
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
	c.PongWait = max(c.PongWait, c.PingInterval+c.PingInterval/4)
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
	if c.MembershipLinger == 0 {
		c.MembershipLinger = DefaultMembershipLinger
	}
	if c.SignalRate <= 0 {
		c.SignalRate = DefaultSignalRate
	}
	if c.SignalBurst <= 0 {
		c.SignalBurst = DefaultSignalBurst
	}
	if c.RecvSignalRate <= 0 {
		c.RecvSignalRate = DefaultRecvSignalRate
	}
	if c.RecvSignalBurst <= 0 {
		c.RecvSignalBurst = DefaultRecvSignalBurst
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnsPerAddr <= 0 {
		c.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if c.MaxRooms <= 0 {
		c.MaxRooms = DefaultMaxRooms
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = DefaultSyncTimeout
	}
	if c.MaxDevicesPerToken <= 0 {
		c.MaxDevicesPerToken = DefaultMaxDevicesPerToken
	}
	if c.ErrorRate <= 0 {
		c.ErrorRate = DefaultErrorRate
	}
	if c.MaxBansPerRoom <= 0 {
		c.MaxBansPerRoom = DefaultMaxBansPerRoom
	}
	if c.ErrorBurst <= 0 {
		c.ErrorBurst = DefaultErrorBurst
	}
	if c.ResumeGrace <= 0 {
		c.ResumeGrace = DefaultResumeGrace
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = DefaultStoreTimeout
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
	c.ServiceKey = append([]byte(nil), c.ServiceKey...)
	c.Reserved = append([]Identity(nil), c.Reserved...)
	c.AllowedHosts = append([]string(nil), c.AllowedHosts...)
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
