package peer

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// Defaults of Config.
const (
	DefaultTickInterval    = 50 * time.Millisecond
	DefaultNetworkInterval = 50 * time.Millisecond
	DefaultReportInterval  = time.Second
	// DefaultReportKeepalive is Config.ReportKeepalive's default.
	DefaultReportKeepalive = 30 * time.Second
	DefaultDigestInterval  = time.Second
	// DefaultInterestInterval is Config.InterestInterval's default.
	DefaultInterestInterval = 250 * time.Millisecond
	DefaultQuietPeriod      = 300 * time.Millisecond
	DefaultBuckets          = 256
	// DefaultStandbyMaxMembers is Config.StandbyMaxMembers's default: in a room of up to 64
	// members the next host keeps up to 63 idle standby links.
	DefaultStandbyMaxMembers = 64
	// DefaultMaxDatagramsPerFlush bounds the unreliable datagrams sent to one remote per network
	// interval (64 × 1200 B at 20 Hz ≈ 1.5 MB/s); what does not fit stays dirty for the next one.
	DefaultMaxDatagramsPerFlush = 64
	// DefaultRedialMin and DefaultRedialMax bound the wait between signaling redials. The max
	// stays below sigclient.DefaultResumeGrace, so that every live peer is back before a
	// server that waits for a host gives up on it.
	DefaultRedialMin = 100 * time.Millisecond
	DefaultRedialMax = time.Second
	// DefaultResumeSettle is how long a new or resumed host gives members to resume before it
	// takes the ones that have not as gone.
	DefaultResumeSettle = 3 * time.Second
	// DefaultSignalingSendQueue is the signaling client's send queue unless SignalingConfig
	// sets one.
	DefaultSignalingSendQueue = 1024
	// DefaultSignalingEventQueue is the signaling client's event queue unless SignalingConfig
	// sets one: a host answering a burst of joiners receives their offers, candidates and
	// membership events faster than its loop handles them for a moment; a signal shed by a full
	// queue costs its sender a connect timeout. 16 bytes a slot.
	DefaultSignalingEventQueue = 2048
)

// Config configures a Peer. The zero value of every field but App, Server and Room works.
type Config struct {
	// Server is the signaling server's URL, e.g. http://127.0.0.1:7880, or a comma-separated
	// list of the URLs of a cluster's nodes (any node serves any room), e.g.
	// http://10.0.0.1:7880,http://10.0.0.2:7880. Run joins through the first node that answers,
	// in list order; after losing the connection the peer redials the next node on each attempt
	// (round robin, with the RedialMin..RedialMax backoff) and resumes its index there.
	Server string
	// Room is the room to join.
	Room string
	// User and Device make the member's identity; User defaults to "anon", Device to "" (none).
	User, Device string
	// Kind is what this member is; default sigclient.KindBot.
	Kind sigclient.Kind
	// Token is the join token when the server requires one.
	Token string
	// App is the game. Required.
	App App
	// Transport makes links. Default nil: the peer makes its own pion transport from ICE and
	// Link for the duration of Run (one UDP socket for all its links).
	Transport Transport
	// ICE says which addresses the peer's own pion transport may use; default ICEAuto
	// (loopback-only when Server is a loopback URL). With an explicit Transport it is unused.
	ICE ICEMode
	// Link is the base configuration of the peer's own pion transport (UDP socket address,
	// public IP, logger); AllowNonLoopback is set from ICE. Outside loopback, an empty
	// UDPMuxAddr means an ephemeral port on the interface toward Server.
	Link link.Config
	// RelayOnly makes the peer's links use relay candidates only (TURN), as the browser's
	// iceTransportPolicy "relay". Default false.
	RelayOnly bool
	// Logger; default zerolog.Nop().
	Logger zerolog.Logger
	// Now is the clock's time; default time.Now. Ignored when Clock is set.
	Now func() time.Time
	// Clock is the loop's time source: its Now and every timer (ticks, reports, digests, the
	// delays of the roles). Default: Now with real timers. Tests inject a manual clock to step
	// the loop without sleeps.
	Clock Clock
	// TickInterval is the simulation tick; default DefaultTickInterval (20 Hz).
	TickInterval time.Duration
	// NetworkInterval is how often EntityUpdates are sent, right after a tick; default
	// DefaultNetworkInterval (20 Hz). Below TickInterval it means after every tick.
	NetworkInterval time.Duration
	// ReportInterval is how often at most the replica is reported to signaling, and the status
	// published (Status); default 1 s. A member reports only when its replica, term, migrations
	// or signaling connection changed since its last report, and otherwise every ReportKeepalive.
	ReportInterval time.Duration
	// ReportKeepalive is how often a member whose state has not changed reports anyway, and pings
	// its host (Status.RTT); default DefaultReportKeepalive (30 s).
	ReportKeepalive time.Duration
	// DigestInterval is how often a member sends its bucket digests to the host (anti-entropy);
	// default 1 s. Adaptive: a digest goes out at this interval while the member's replica
	// changes; while it stays unchanged the pause doubles after each digest up to DigestMaxInterval.
	DigestInterval time.Duration
	// DigestMaxInterval caps the pause between two digests of a member whose replica has not
	// changed since its last digest; default 32 × DigestInterval (32 s). It bounds how long an idle
	// member can stay apart after a host datagram was lost and nothing changed since.
	DigestMaxInterval time.Duration
	// QuietPeriod: the host repairs a differing bucket only when it has not changed for this long;
	// default 300 ms (a bucket still moving will be repaired by the updates in flight).
	QuietPeriod time.Duration
	// Buckets is the number of digest buckets; default 256.
	Buckets int
	// TRNPUpdates sends property updates as TRNP's EntityUpdates (type 5) instead of the
	// RunUpdates extension (type 20: the same updates with varint ids, times and lengths, the
	// updates of consecutive entities with one mask and length in runs, ~35% fewer bytes).
	// Every Concord peer reads EntityUpdates, PackedUpdates (17) and RunUpdates; set it for a peer
	// that speaks TRNP only.
	// Default false.
	TRNPUpdates bool
	// Deltas makes this peer, as host, send each member that asks its property values as
	// differences from the newest ones it acknowledged (DeltaUpdates, docs/protocol.md §2.10):
	// about 20% fewer bytes for positions that move a little each tick, at the cost of encoding
	// per member instead of once for all (host CPU +15–40% at 32 members × 1,000 entities,
	// BENCHMARKS.md). Default false: every member gets the same datagrams, whole values.
	Deltas bool
	// NoDeltas makes this peer, as member, not ask its host for DeltaUpdates. Default false (a
	// member asks, unless TRNPUpdates is set; a host without Deltas ignores the request).
	NoDeltas bool
	// Interest, when set, is the host's interest policy; nil uses the App's if it implements
	// InterestPolicy, else every member follows everything.
	Interest InterestPolicy
	// InterestInterval is how often a host whose App is an InterestPolicy works out again what
	// each member follows; default DefaultInterestInterval (250 ms).
	InterestInterval time.Duration
	// MaxDatagramsPerFlush bounds unreliable datagrams per remote per network interval; default 64.
	MaxDatagramsPerFlush int
	// EndWhenReplaced makes Run return (an error wrapping sigclient.ErrReplaced) when another
	// connection joins with this peer's identity, instead of keeping its links without signaling.
	// For a supervised peer — a server's dedicated host, which its placement starts again while
	// its node owns the room — a replaced peer that stays would be a host nobody can reach that
	// its supervisor still counts as running. By default a replaced peer keeps its links and does
	// not redial (the same device elsewhere: fighting it would take turns at replacing).
	EndWhenReplaced bool

	// Standby makes a synced member keep an idle standby link to the member signaling would elect
	// next, so that a host migration needs no new ICE/DTLS handshake: when that member becomes
	// host, the standby link becomes the link to the host. By default (Standby and NoStandby
	// false) a member keeps one in a room of at most StandbyMaxMembers members, to a Go peer only
	// (a browser answers no standby offer); Standby keeps one in a room of any size, to any
	// member; NoStandby never. A member makes it 250 ms after it synced (not while the room may
	// still be migrating). A peer answers standby offers whatever these settings.
	//
	// Why by default: without one, the 31 survivors of a 32-member room each make a WebRTC
	// connection to the new host at once (ICE, DTLS, SCTP, in this one handshake burst), which
	// is most of a migration's pause; an idle standby link costs about as much as nothing
	// (docs/benchmarks-history.md, "Migration by default: where the time goes"). The bound keeps
	// the next host from answering a link per member in a large room.
	Standby bool
	// NoStandby turns the default standby links off (Standby wins when both are set).
	NoStandby bool
	// StandbyMaxMembers is the largest room (members signaling announced, this one included) in
	// which a member keeps a standby link by default; default DefaultStandbyMaxMembers (64).
	StandbyMaxMembers int
	// RedialMin and RedialMax bound the wait before each attempt to reach the signaling server
	// again after losing it: it starts at RedialMin and doubles up to RedialMax, and each wait
	// is drawn between half of it and all of it (jitter). Defaults DefaultRedialMin (100 ms)
	// and DefaultRedialMax (1 s). The peer redials until it resumes, the server refuses the
	// resume for good, or Run ends.
	RedialMin, RedialMax time.Duration
	// ResumeSettle: a peer that becomes host, or a host whose signaling resumes, waits this long
	// before it takes the members signaling does not list (and that have no open link to it) as
	// gone, despawning their avatars and releasing their locks.
	// Default DefaultResumeSettle (3 s).
	ResumeSettle time.Duration
	// RelayRate and RelayBurst bound, on a host, the bytes of application messages one member
	// may have relayed to other members, each copy counted (a message to Everyone in a room of
	// N costs N−1 copies): a second's worth and at once. Beyond them the message is dropped and
	// counted (RefusedRelayBudget), not a strike. Defaults DefaultRelayRate (256 KiB/s) and
	// DefaultRelayBurst (512 KiB); a burst is at least one largest relayed message.
	RelayRate, RelayBurst int
	// RecvRelayRate and RecvRelayBurst bound, on a host, the relayed bytes it forwards to one
	// member from all senders together. Beyond them the copy is dropped and counted against its
	// sender (RefusedRelayInbound). Defaults DefaultRecvRelayRate (128 KiB/s) and
	// DefaultRecvRelayBurst (256 KiB).
	RecvRelayRate, RecvRelayBurst int
	// RelayBacklog: a host drops (RefusedRelayBacklog) a relayed reliable copy to a member
	// whose reliable queue holds more than this many bytes, so that relayed traffic never
	// pushes the link past link.Config.ReliableHighWater, which closes it. Default
	// DefaultRelayBacklog (256 KiB, a quarter of the default high-water mark).
	RelayBacklog int
	// WorldLimits bound the append sets of an entity, what one member's writes add to the world
	// and the world's size (docs/protocol.md §5, "Limits"); zero fields take their defaults.
	WorldLimits WorldLimits
	// SignalingConfig configures the signaling client. Its SendQueue defaults to
	// DefaultSignalingSendQueue here: the loop never waits on a full queue, it drops the message
	// (a signal, a report), so the queue is sized for a burst of link setups. Its EventQueue
	// defaults to DefaultSignalingEventQueue.
	SignalingConfig sigclient.ClientConfig
	// NoHost joins as a member that is never elected host, whatever its token allows
	// (signaling.JoinOptions.NoHost): a follower that only reads the room (internal/follow).
	NoHost bool
}

func (c Config) withDefaults() (Config, error) {
	if c.App == nil {
		return c, fmt.Errorf("%w: App is required", ErrConfig)
	}
	if _, err := ParseICEMode(string(c.ICE)); err != nil {
		return c, err
	}
	if c.Server == "" || c.Room == "" {
		return c, fmt.Errorf("%w: Server and Room are required", ErrConfig)
	}
	if _, err := sigclient.ParseServers(c.Server); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.User == "" {
		c.User = "anon"
	}
	if c.Kind == "" {
		c.Kind = sigclient.KindBot
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Clock == nil {
		c.Clock = realClock{now: c.Now}
	} else {
		c.Now = c.Clock.Now
	}
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.NetworkInterval <= 0 {
		c.NetworkInterval = DefaultNetworkInterval
	}
	if c.ReportInterval <= 0 {
		c.ReportInterval = DefaultReportInterval
	}
	if c.ReportKeepalive <= 0 {
		c.ReportKeepalive = DefaultReportKeepalive
	}
	c.ReportKeepalive = max(c.ReportKeepalive, c.ReportInterval)
	if c.DigestInterval <= 0 {
		c.DigestInterval = DefaultDigestInterval
	}
	if c.DigestMaxInterval <= 0 {
		c.DigestMaxInterval = 32 * c.DigestInterval
	}
	c.DigestMaxInterval = max(c.DigestMaxInterval, c.DigestInterval)
	if c.QuietPeriod <= 0 {
		c.QuietPeriod = DefaultQuietPeriod
	}
	if c.Buckets <= 0 {
		c.Buckets = DefaultBuckets
	}
	if c.StandbyMaxMembers <= 0 {
		c.StandbyMaxMembers = DefaultStandbyMaxMembers
	}
	if c.InterestInterval <= 0 {
		c.InterestInterval = DefaultInterestInterval
	}
	if c.RedialMin <= 0 {
		c.RedialMin = DefaultRedialMin
	}
	if c.RedialMax <= 0 {
		c.RedialMax = DefaultRedialMax
	}
	c.RedialMax = max(c.RedialMax, c.RedialMin)
	if c.ResumeSettle <= 0 {
		c.ResumeSettle = DefaultResumeSettle
	}
	if c.SignalingConfig.SendQueue <= 0 {
		c.SignalingConfig.SendQueue = DefaultSignalingSendQueue
	}
	if c.SignalingConfig.EventQueue <= 0 {
		c.SignalingConfig.EventQueue = DefaultSignalingEventQueue
	}
	c.WorldLimits = c.WorldLimits.withDefaults()
	if c.MaxDatagramsPerFlush <= 0 {
		c.MaxDatagramsPerFlush = DefaultMaxDatagramsPerFlush
	}
	c.RelayRate = positiveOr(c.RelayRate, DefaultRelayRate)
	c.RelayBurst = max(positiveOr(c.RelayBurst, DefaultRelayBurst), maxRelayFrame)
	c.RecvRelayRate = positiveOr(c.RecvRelayRate, DefaultRecvRelayRate)
	c.RecvRelayBurst = max(positiveOr(c.RecvRelayBurst, DefaultRecvRelayBurst), maxRelayFrame)
	c.RelayBacklog = positiveOr(c.RelayBacklog, DefaultRelayBacklog)
	return c, nil
}

// positiveOr returns v, or def when v is not positive.
func positiveOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
