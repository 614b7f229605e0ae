package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/follow"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
	"github.com/concordrtc/concord/world"
)

// DefaultAddr is where a server listens when Options.Addr is "": loopback only, the port
// `concord serve` uses. A server meant for other machines names its interface (or ":7880").
const DefaultAddr = "127.0.0.1:7880"

// DedicatedHostUser is the identity user of dedicated hosts: a server pins it as the host of each
// room it runs a dedicated host for, so that a dedicated host that (re)joins takes the room over
// once it has synced (also one run as a process of its own, `concord host`).
const DedicatedHostUser = "host"

// Options configure a Server. The zero value works: a server on DefaultAddr, rooms in memory, no
// dedicated host, no TURN, no TLS, no /metrics route (Registry still gathers), logging nowhere.
// Each field names the `concord serve` flag (and config file key) that sets it; a zero field
// keeps the default the field's comment gives, which may differ from the flag's default (the
// flag's is for a deployment: --data ./concord-data, --metrics, --hsts-max-age 1 year).
type Options struct {
	// Addr is the HTTP listen address (--addr): the page, /ws signaling, /api/rooms, /metrics,
	// /healthz. "": DefaultAddr. "127.0.0.1:0" takes a free port (Addr() tells which).
	Addr string

	// Logger receives the server's log (zero value: discarded).
	Logger zerolog.Logger
	// Now is the clock of the dedicated hosts' token lifetimes (nil: time.Now).
	Now func() time.Time
	// Registry is the Prometheus registry the server registers its metrics into, and /metrics
	// serves (nil: a registry of its own; Server.Registry returns it). It may hold the program's
	// own collectors (the Go and process collectors too), but one server's metrics only: do not
	// pass one registry to two servers.
	Registry *prometheus.Registry

	// Secret is the HS256 key of join and resume tokens (CONCORD_SECRET). "": an open server,
	// where anyone may join any room as anyone and host it — except as one of the server's own
	// members (serviceKey).
	Secret string
	// serviceKey signs the join tokens of the server's own members when Secret is empty
	// (withDefaults; signaling.Config.ServiceKey).
	serviceKey string

	// Demo: the arena demo game's room, hosted by a dedicated host of this process.

	// Room is the demo room (--room; "": "arena"): its pinned host is the dedicated host, whether
	// this process runs it (DedicatedHost) or a `concord host` process of its own does.
	Room string
	// DedicatedHost runs the arena's dedicated host for Room in this process (--dedicated-host).
	DedicatedHost bool
	// Apps maps rooms to games of the embedding program: the server runs a dedicated host for each
	// room, whose App is made by the function (called again each time the host starts: a
	// clustered room's host moves between nodes). With Data (or NATS) the room is durable, with a
	// Scene it is seeded from one. Options' demo flags (InterestRadius) do not apply to them.
	Apps map[string]func() peer.App
	// Scenes seed rooms that have no checkpoint from main.crdt files (--scene ROOM=FILE); each gets
	// a dedicated host (the arena's, unless Apps names the room).
	Scenes map[signaling.RoomID]string
	// InterestRadius: the arena hosts send each member what is within this many millimetres of
	// its avatar (--interest-radius; 0: everything).
	InterestRadius int
	// Deltas: the dedicated hosts send members deltas against acknowledged values (--deltas,
	// peer.Config.Deltas).
	Deltas bool
	// RelayRate … RelayBacklog: the dedicated hosts' bounds on relayed application messages
	// (--relay-rate, --relay-burst, --recv-relay-rate, --recv-relay-burst, --relay-backlog;
	// peer.Config's fields of the same names; 0: the peer defaults).
	RelayRate, RelayBurst, RecvRelayRate, RecvRelayBurst, RelayBacklog int
	// World bounds the dedicated hosts' worlds (--max-append-sets, --max-member-world-bytes,
	// --max-world-bytes; zero fields: the peer defaults).
	World peer.WorldLimits

	// Worlds are worlds of regions the server runs (--world; docs/protocol.md §11): region hosts
	// on demand, their directory at /api/worlds/{W}. In a cluster a region is placed on the holder of
	// its room's lease (server/world.go worldOwner).
	Worlds []world.Def
	// WorldGrace: a region nobody is in or watches is checkpointed and unloaded after this
	// (--world-grace; 0: world.DefaultGrace).
	WorldGrace time.Duration

	// Network is the dedicated hosts' WebRTC (--ice, --udp, --public-ip, --relay-only).
	Network Network

	// TLS and TURN.

	TLSCert string // --tls-cert: serve HTTPS/WSS with this certificate (PEM file)
	TLSKey  string // --tls-key: its private key (PEM file)
	// HSTSMaxAge is the Strict-Transport-Security max-age of HTTPS responses (--hsts-max-age;
	// 0: no header).
	HSTSMaxAge time.Duration
	// TURN runs the embedded TURN/STUN server on this address, UDP and TCP (--turn; "": none).
	TURN             string
	TURNTLS          string         // --turn-tls: also TURN over TLS (turns:) here, with TLSCert
	TURNHost         string         // --turn-host: the name in turns: URLs (default: the certificate's)
	TURNAllowPrivate []netip.Prefix // --turn-allow-private: private peer ranges the relay may reach
	TURNPorts        string         // --turn-ports: MIN-MAX relay ports ("": the relay's default)
	TURNUserQuota    int            // --turn-user-quota (0: turnserver's default)
	TURNMaxBPS       int            // --turn-max-bps (0: turnserver's default)
	TURNLimits       TURNLimits     // --turn-max-allocs-per-addr, …
	// ICEServers are external STUN/TURN servers handed to members (--ice-server): stun:HOST:PORT
	// or turn[s]:[USER:PASSWORD@]HOST:PORT[?transport=udp|tcp].
	ICEServers []string
	// ICEServerSecret is the shared secret of external TURN servers without USER:PASSWORD
	// (--ice-server-secret, coturn's static-auth-secret).
	ICEServerSecret string

	// Limits holds the signaling limits (--max-members, --max-conns, …, and AdminKey, the
	// CONCORD_ADMIN_KEY): zero fields keep the signaling defaults. Its Logger, Rooms, Store,
	// Bans, Router, CheckOrigin, Registerer, Secret and ICE fields are the server's own.
	Limits signaling.Config
	// HTTP bounds the HTTP server's connections (--http-*-timeout; zero fields: the defaults).
	HTTP HTTPTimeouts

	// Storage.

	// Data is the durable data directory (--data): rooms keep their world across restarts in an
	// embedded JetStream. "": rooms in memory only.
	Data string
	// CheckpointInterval is the least time between two checkpoints of a changing room
	// (--checkpoint-interval; 0: durable's default).
	CheckpointInterval time.Duration
	// KeepRooms says which rooms keep their world with Data (--keep-rooms, docs/protocol.md §6
	// "Kept rooms"): KeepAll (every room: a server-side follower checkpoints the rooms with no
	// dedicated host here, hosted by a browser tab or a host process of their own, and their first
	// host restores over GET /api/rooms/{room}/checkpoint), KeepDedicated (only the rooms of
	// this server's dedicated hosts) or KeepNone (no checkpoints). "": KeepDedicated.
	KeepRooms string
	// KeepSchemas is the schema table of the game the followers of KeepAll decode (a room whose
	// host runs another table refuses its follower; it is not kept). nil: the arena demo's.
	KeepSchemas *schema.Table
	// RoomTTL: a room's counters leave the durable store this long after their last change
	// (--room-ttl; 0: durable's default).
	RoomTTL time.Duration

	// Cluster (docs/protocol.md §7): on with ClusterName or NATS.

	NodeName    string   // --node-name: this node's name (unique; "": "concord")
	ClusterName string   // --cluster-name: cluster the embedded NATS server under this name
	ClusterAddr string   // --cluster: this node's route listen address
	Routes      []string // --routes: the other nodes' route URLs
	// NATS is an external NATS (URL[,URL…]) instead of the embedded server (--nats).
	NATS     string
	Replicas int           // --replicas (0: min(3, nodes))
	LeaseTTL time.Duration // --lease-ttl (0: durable's default)
	// ClusterSecret is the route password (--cluster-secret; "": derived from Secret).
	ClusterSecret   string
	ClusterInsecure bool   // --cluster-insecure: routes without secret or TLS
	ClusterTLSCert  string // --cluster-tls-cert
	ClusterTLSKey   string // --cluster-tls-key
	ClusterTLSCA    string // --cluster-tls-ca
	NATSCreds       string // --nats-creds
	NATSToken       string // --nats-token
	NATSCA          string // --nats-ca
	NATSCert        string // --nats-cert
	NATSKey         string // --nats-key

	// Operator routes and pages.

	// Origins are the web origins allowed to open /ws and load the client besides the server's
	// own host (--origin; "*": any).
	Origins []string
	// Metrics serves the Registry at /metrics (--metrics); with a Secret only to Limits.AdminKey.
	Metrics bool
	// Pprof serves /debug/pprof (--pprof); with a Secret only to Limits.AdminKey.
	Pprof bool
	// Static serves this directory (a game's page and assets) at / instead of the arena demo
	// (--static); the client stays at /concord/js/.
	Static string
	// StaticCSP is the Static pages' Content-Security-Policy (--static-csp; "":
	// web.StaticContentSecurityPolicy).
	StaticCSP string
	// Voice is the proximity voice forwarder (--voice, docs/protocol.md §10; zero: off).
	Voice Voice
}

// Network is how the dedicated hosts reach the network.
type Network struct {
	// ICE: "loopback", "local" (this machine, off loopback) or "any" (peer.ParseICEMode). "":
	// local when the server listens on loopback (loopback with LoopbackOnly), else any.
	ICE string
	// UDP is the address of the one socket each dedicated host's WebRTC links share ("": an
	// ephemeral port on the listen interface; hosts after the first take an ephemeral port on
	// its address).
	UDP string
	// PublicIP is the IPv4 address advertised in host candidates (1:1 NAT), and the TURN relay
	// address.
	PublicIP string
	// RelayOnly uses relay (TURN) candidates only.
	RelayOnly bool
	// LoopbackOnly keeps a loopback server's WebRTC on loopback (peer.ICELoopback) instead of
	// this machine's own address: what test rigs on a shared machine need (cmd/concord sets it
	// from CONCORD_LOOPBACK_ONLY).
	LoopbackOnly bool
}

// TURNLimits are the embedded TURN relay's bounds on one client address and one token, and its
// credentials' lifetime (docs/protocol.md §4 "Signaling: ICE servers and TURN"); 0: turnserver's
// defaults.
type TURNLimits struct {
	AllocsPerAddr  int           // --turn-max-allocs-per-addr
	AllocsPerToken int           // --turn-max-allocs-per-token
	ConnsPerAddr   int           // --turn-max-conns-per-addr
	TCPIdleTimeout time.Duration // --turn-tcp-idle-timeout
	CredentialTTL  time.Duration // --turn-credential-ttl
}

// HTTPTimeouts are the http.Server's bounds on a connection before and between requests; a
// websocket sets its own deadlines once upgraded. Zero fields: DefaultHTTPTimeouts'.
type HTTPTimeouts struct {
	ReadHeader time.Duration // --http-read-header-timeout
	Read       time.Duration // --http-read-timeout
	Idle       time.Duration // --http-idle-timeout
}

// DefaultHTTPTimeouts: headers within 5 s, a whole request within 10 s (the server takes no
// request bodies), an idle keep-alive connection closed after 30 s.
var DefaultHTTPTimeouts = HTTPTimeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Idle: 30 * time.Second}

// DefaultHSTSMaxAge is --hsts-max-age's default: a year, as HSTS preload lists ask.
const DefaultHSTSMaxAge = 365 * 24 * time.Hour

// OptionError is a mistake in Options, found by New or Start before the server serves: one
// option's value, or options that do not go together. Its message names the options by their
// flags (--tls-cert), which are also their config file keys.
type OptionError struct{ Err error }

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// optionError wraps err as an *OptionError.
func optionError(err error) error { return &OptionError{Err: err} }

// ErrStarted is Start's error on a server that has already been started.
var ErrStarted = errors.New("server: already started")

// clustered reports whether o makes the server a node of a cluster.
func (o Options) clustered() bool { return o.ClusterName != "" || o.NATS != "" }

// ClusterConfig is the embedded NATS server's cluster block of o.
func (o Options) clusterConfig() durable.ClusterConfig {
	return durable.ClusterConfig{Name: o.ClusterName, Listen: o.ClusterAddr, Routes: o.Routes, Secret: o.ClusterSecret,
		TLSCert: o.ClusterTLSCert, TLSKey: o.ClusterTLSKey, TLSCA: o.ClusterTLSCA, Insecure: o.ClusterInsecure}
}

// natsAuth is the connection's credentials and TLS for NATS.
func (o Options) natsAuth() durable.NATSAuth {
	return durable.NATSAuth{Creds: o.NATSCreds, Token: o.NATSToken, CA: o.NATSCA, Cert: o.NATSCert, Key: o.NATSKey}
}

// withDefaults fills the fields whose zero value stands for a default.
func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Room == "" {
		o.Room = "arena"
	}
	if o.NodeName == "" {
		o.NodeName = "concord"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClusterSecret == "" && o.Secret != "" {
		o.ClusterSecret = durable.RouteSecret([]byte(o.Secret))
	}
	if o.Secret == "" && o.serviceKey == "" {
		o.serviceKey = serviceKey(o.ClusterSecret)
	}
	return o
}

// serviceKey is the key of the server's own members' tokens on an open server: derived from
// the cluster's route password, so that every node of a cluster accepts the others' members,
// else 32 random bytes of this process.
func serviceKey(clusterSecret string) string {
	if clusterSecret != "" {
		m := hmac.New(sha256.New, []byte(clusterSecret))
		m.Write([]byte("concord service members v1"))
		return string(m.Sum(nil))
	}
	return rand.Text() + rand.Text()
}

// tokenKey is the key of the tokens this server issues to its own members.
func (o Options) tokenKey() []byte {
	if o.Secret != "" {
		return []byte(o.Secret)
	}
	return []byte(o.serviceKey)
}

// reservedIdentities are the identities of the server's own members, refused to open joins
// without a token of the service key (signaling.Config.Reserved): the dedicated and region
// hosts (a `concord host` process of the operator's joins as another device of the pinned
// user), the kept rooms' followers, the voice forwarder's followers.
var reservedIdentities = []signaling.Identity{
	signaling.NewIdentity(DedicatedHostUser, "serve"), signaling.Identity(follow.DefaultUser), signaling.Identity(voice.FollowerUser)}
