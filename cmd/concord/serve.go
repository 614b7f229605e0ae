package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/turnserver"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// dedicatedHostUser is the identity user of dedicated hosts (server.DedicatedHostUser).
const dedicatedHostUser = server.DedicatedHostUser

// shutdownTimeout bounds how long serve waits, once asked to stop, for HTTP requests in flight.
const shutdownTimeout = 5 * time.Second

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// listFlag is a repeatable string flag that also splits on commas.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Get() any       { return []string(*l) }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// repeatFlag is a repeatable string flag that keeps each value whole (URLs may hold commas).
type repeatFlag []string

func (l *repeatFlag) String() string     { return strings.Join(*l, " ") }
func (l *repeatFlag) Get() any           { return []string(*l) }
func (l *repeatFlag) Set(v string) error { *l = append(*l, v); return nil }

// sceneFlag is --scene ROOM=FILE, repeatable, into server.Options.Scenes.
type sceneFlag struct{ m *map[signaling.RoomID]string }

func (f sceneFlag) Set(v string) error {
	room, file, ok := strings.Cut(v, "=")
	if !ok || room == "" || file == "" {
		return fmt.Errorf("want ROOM=FILE, got %q", v)
	}
	if *f.m == nil {
		*f.m = map[signaling.RoomID]string{}
	}
	(*f.m)[signaling.RoomID(room)] = file
	return nil
}

// Get is the scenes as ROOM=FILE values, sorted.
func (f sceneFlag) Get() any {
	if f.m == nil {
		return []string(nil)
	}
	out := make([]string, 0, len(*f.m))
	for room, file := range *f.m {
		out = append(out, string(room)+"="+file)
	}
	slices.Sort(out)
	return out
}

func (f sceneFlag) String() string {
	if f.m == nil {
		return ""
	}
	return strings.Join(f.Get().([]string), ",")
}

// serveFlags adds serve's flags to fs, bound to o (with the defaults of a deployment); finish
// completes o from the flags that do not map onto one field, after parsing. logLevel is
// --log-level.
func serveFlags(fs *flag.FlagSet, o *server.Options) (finish func() error, logLevel *string) {
	fs.StringVar(&o.Addr, "addr", server.DefaultAddr, "listen address (HTTP: page, /ws signaling, /api/rooms, /metrics, /healthz)")
	fs.BoolVar(&o.DedicatedHost, "dedicated-host", true, "run a dedicated host for --room in this process")
	fs.BoolVar(&o.Deltas, "deltas", false, "the dedicated hosts send members that ask their property values as differences from the ones they acknowledged (~20% fewer bytes, more host CPU; docs/protocol.md §2.10)")
	fs.IntVar(&o.RelayRate, "relay-rate", peer.DefaultRelayRate, "bytes a second of application messages one member may have a dedicated host relay, each copy counted (a message to everyone in a room of N: N−1 copies); beyond it dropped and counted (relay_budget)")
	fs.IntVar(&o.RelayBurst, "relay-burst", peer.DefaultRelayBurst, "bytes of relayed application messages one member may send at once (at least one largest message)")
	fs.IntVar(&o.RecvRelayRate, "recv-relay-rate", peer.DefaultRecvRelayRate, "bytes a second of relayed application messages a dedicated host forwards to one member from all senders together; beyond it dropped and counted (relay_inbound)")
	fs.IntVar(&o.RecvRelayBurst, "recv-relay-burst", peer.DefaultRecvRelayBurst, "bytes of relayed application messages a dedicated host forwards to one member at once")
	fs.IntVar(&o.RelayBacklog, "relay-backlog", peer.DefaultRelayBacklog, "a dedicated host drops relayed messages to a member whose reliable queue holds more than this many bytes (relay_backlog) instead of letting it reach the link's high-water mark, which closes the link")
	fs.IntVar(&o.InterestRadius, "interest-radius", 0, "the dedicated hosts send each member only the avatars and boxes within this many millimetres of its avatar (interest management; 0: everything)")
	fs.StringVar(&o.Data, "data", "./concord-data", `durable data directory: rooms keep their world across restarts (embedded JetStream); "" keeps rooms in memory only`)
	fs.Var(sceneFlag{&o.Scenes}, "scene", "ROOM=FILE: seed ROOM from a main.crdt file when it has no checkpoint, and run a dedicated host for ROOM (repeatable; with --udp, hosts after the first take an ephemeral port on its address)")
	fs.StringVar(&o.KeepRooms, "keep-rooms", server.KeepAll, "with --data, which rooms keep their world across restarts: all (a server-side follower checkpoints rooms hosted by a browser or a host process of their own, the arena's game; their first host restores over HTTP), dedicated (only rooms with a dedicated host here), none (no checkpoints)")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", durable.DefaultInterval, "least time between two checkpoints of a changing room (with --data)")
	fs.StringVar(&o.Room, "room", "arena", "the demo room (its pinned host is the dedicated host)")
	host, _ := os.Hostname()
	fs.StringVar(&o.NodeName, "node-name", host, "this node's name in a cluster (unique; /api/rooms gives it as each room's \"node\")")
	fs.StringVar(&o.ClusterName, "cluster-name", "", "cluster the embedded NATS server under this name (the same on every node; needs --data)")
	fs.StringVar(&o.ClusterAddr, "cluster", "", "this node's cluster (NATS route) listen address, HOST:PORT with the interface named (e.g. 10.0.0.1:6222), with --cluster-name and --routes")
	var routes listFlag
	fs.Var(&routes, "routes", "URL[,URL…]: the other nodes' cluster addresses, nats-route://HOST:6222")
	fs.StringVar(&o.NATS, "nats", "", "URL[,URL…] of an external NATS cluster with JetStream instead of the embedded server (then --data is unused); nats://USER:PASSWORD@HOST:4222 or tls://… for credentials and TLS")
	clusterAuthFlags(fs, o)
	fs.IntVar(&o.Replicas, "replicas", 0, "replicas of the JetStream streams and buckets (0: min(3, nodes) embedded, 1 with --nats)")
	fs.DurationVar(&o.LeaseTTL, "lease-ttl", durable.DefaultLeaseTTL, "lifetime of a room's lease in the cluster's room directory: a dead node's rooms move after at most this")
	var nw peerNet
	nw.addICEFlag(fs)
	nw.addAddrFlags(fs)
	fs.StringVar(&o.TURN, "turn", "", "run the embedded TURN/STUN server on this address, UDP and TCP (e.g. :3478); needs a specific IP or --public-ip")
	fs.StringVar(&o.TURNTLS, "turn-tls", "", "also serve TURN over TLS (turns:) on this address, with --tls-cert/--tls-key (e.g. :5349)")
	fs.StringVar(&o.TURNHost, "turn-host", "", "host name in the turns: URLs members get, which they resolve and check the certificate against (default: the --tls-cert certificate's first DNS name)")
	fs.StringVar(&o.TURNPorts, "turn-ports", "49152-65535", "UDP port range of TURN relay sockets")
	fs.IntVar(&o.TURNUserQuota, "turn-user-quota", turnserver.DefaultMaxAllocations, "TURN allocations one member may hold at once")
	fs.IntVar(&o.TURNMaxBPS, "turn-max-bps", turnserver.DefaultMaxBytesPerSecond, "bytes per second the TURN relay carries for one member, both directions together")
	turnLimitFlags(fs, &o.TURNLimits)
	var allow, origins listFlag
	var ice repeatFlag
	fs.Var(&allow, "turn-allow-private", "CIDR[,CIDR…]: private/loopback peer ranges the TURN relay may reach (refused by default)")
	fs.Var(&ice, "ice-server", "an external STUN/TURN server handed to members, repeatable: stun:HOST:PORT or turn[s]:[USER:PASSWORD@]HOST:PORT[?transport=udp|tcp]")
	fs.StringVar(&o.ICEServerSecret, "ice-server-secret", os.Getenv("CONCORD_ICE_SECRET"), "shared secret of external TURN servers without USER:PASSWORD (coturn static-auth-secret): members get time-limited REST API credentials (env CONCORD_ICE_SECRET)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate file (PEM): serve the page, /ws and the APIs over HTTPS/WSS")
	fs.StringVar(&o.TLSKey, "tls-key", "", "TLS private key file (PEM)")
	fs.Var(&origins, "origin", "ORIGIN[,ORIGIN…]: web origins (https://game.example.com, or a bare host) allowed to open /ws besides the server's own host; * allows any")
	fs.BoolVar(&o.Pprof, "pprof", false, "serve /debug/pprof (with CONCORD_SECRET: only to the admin key, Authorization: Bearer $CONCORD_ADMIN_KEY)")
	voiceFlags(fs, &o.Voice)
	fs.BoolVar(&o.Metrics, "metrics", true, "serve Prometheus metrics at /metrics (with CONCORD_SECRET: only to the admin key, Authorization: Bearer $CONCORD_ADMIN_KEY)")
	fs.DurationVar(&o.HSTSMaxAge, "hsts-max-age", server.DefaultHSTSMaxAge, "with --tls-cert: Strict-Transport-Security max-age of every HTTPS response (0: no header)")
	fs.StringVar(&o.Static, "static", "", "serve this directory (a game's page and assets) at / instead of the arena demo; the client stays at /concord/js/; implies --dedicated-host=false unless given")
	fs.StringVar(&o.StaticCSP, "static-csp", "", "Content-Security-Policy of the --static pages (default: scripts from the page's origin only, see docs/guide.md)")
	logLevel = fs.String("log-level", "info", "log level: debug, info, warn, error")
	limitFlags(fs, o)
	worldFlags(fs, o)
	return func() error {
		if o.Static != "" && !flagGiven(fs, "dedicated-host") {
			// The game brings its own host (or a browser hosts), not the arena's; set as a flag,
			// so that --print-config says so.
			if err := fs.Set("dedicated-host", "false"); err != nil {
				return err
			}
		}
		o.TURNAllowPrivate = nil
		for _, c := range allow {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return usageError{fmt.Errorf("--turn-allow-private %q: %w", c, err)}
			}
			o.TURNAllowPrivate = append(o.TURNAllowPrivate, p.Masked())
		}
		o.ICEServers, o.Origins, o.Routes = ice, origins, routes
		o.Network = server.Network{ICE: nw.ice, UDP: nw.udp, PublicIP: nw.publicIP, RelayOnly: nw.relayOnly,
			LoopbackOnly: os.Getenv(envLoopbackOnly) != ""}
		return nil
	}, logLevel
}

// turnLimitFlags adds the embedded TURN relay's bounds on one client address and one token, and
// its credentials' lifetime (docs/protocol.md §4 "Signaling: ICE servers and TURN").
func turnLimitFlags(fs *flag.FlagSet, l *server.TURNLimits) {
	fs.IntVar(&l.AllocsPerAddr, "turn-max-allocs-per-addr", turnserver.DefaultMaxAllocationsPerAddr, "TURN allocations one client IP address may hold at once, whatever its names")
	fs.IntVar(&l.AllocsPerToken, "turn-max-allocs-per-token", turnserver.DefaultMaxAllocationsPerToken, "TURN allocations one user may hold in one room, every device together (what one join token yields)")
	fs.IntVar(&l.ConnsPerAddr, "turn-max-conns-per-addr", turnserver.DefaultMaxConnsPerAddr, "TURN TCP/TLS connections from one client IP address")
	fs.DurationVar(&l.TCPIdleTimeout, "turn-tcp-idle-timeout", turnserver.DefaultTCPIdleTimeout, "a TURN TCP/TLS connection without an allocation is closed after this long without a complete message")
	fs.DurationVar(&l.CredentialTTL, "turn-credential-ttl", turnserver.DefaultCredentialTTL, "how long TURN credentials may start allocations; members get fresh ones every half of it while they stay")
}

// serveCLI is serve's command line: the options and what is no option.
type serveCLI struct {
	o           server.Options
	logLevel    *string
	config      string // --config FILE
	printConfig bool   // --print-config
	finish      func() error
}

// newServeFlags is serve's flag set, bound to a serveCLI.
func newServeFlags(stderr io.Writer) (*flag.FlagSet, *serveCLI) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &serveCLI{}
	c.finish, c.logLevel = serveFlags(fs, &c.o)
	fs.StringVar(&c.config, "config", "", "read flags from this TOML `FILE`, keys named as the flags (docs/serve.toml); flags on the command line override it")
	fs.BoolVar(&c.printConfig, "print-config", false, "print the settings (flags, --config, defaults) as a config file and exit (secrets left out)")
	return fs, c
}

// parseServe parses serve's command line (and its --config file) into c.o.
func parseServe(args []string, stderr io.Writer) (*flag.FlagSet, *serveCLI, error) {
	fs, c := newServeFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, err
	}
	if c.config != "" {
		if err := loadServeConfig(fs, c.config); err != nil {
			return nil, nil, err
		}
	}
	if err := c.finish(); err != nil {
		return nil, nil, err
	}
	return fs, c, nil
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, c, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	if c.printConfig {
		return printServeConfig(stdout, fs)
	}
	o := c.o
	log, err := newLogger(stderr, *c.logLevel)
	if err != nil {
		return err
	}
	serveEnv(&o)
	o.Logger = log
	s, err := server.New(o)
	if err != nil {
		return serveError(err)
	}
	if err := s.StartContext(ctx); err != nil {
		return startupError(ctx, serveError(err), log)
	}
	select {
	case <-ctx.Done():
	case err = <-s.Failed():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	_ = s.Shutdown(sctx) // a request still running after shutdownTimeout is cut: serve stops anyway
	return err
}

// serveEnv sets the options serve takes from the environment: CONCORD_SECRET and
// CONCORD_ADMIN_KEY (with a secret, reads every room in /api/rooms).
func serveEnv(o *server.Options) {
	o.Secret = os.Getenv("CONCORD_SECRET")
	o.Limits.AdminKey = os.Getenv("CONCORD_ADMIN_KEY")
}

// serveError is err of server.New or Start for run: a mistake in the options is a usageError.
func serveError(err error) error {
	if oe := (*server.OptionError)(nil); errors.As(err, &oe) {
		return usageError{err}
	}
	return err
}

// limitFlags adds serve's limit flags (docs/protocol.md "Signaling: limits"); 0 keeps a default.
func limitFlags(fs *flag.FlagSet, o *server.Options) {
	l := &o.Limits
	fs.IntVar(&l.MaxMembers, "max-members", signaling.DefaultMaxMembers, "members per room")
	fs.IntVar(&l.MaxRooms, "max-rooms", signaling.DefaultMaxRooms, "open rooms")
	fs.IntVar(&l.MaxConns, "max-conns", signaling.DefaultMaxConns, "websockets in total")
	fs.IntVar(&l.MaxConnsPerAddr, "max-conns-per-addr", signaling.DefaultMaxConnsPerAddr, "websockets per remote IP address (raise it behind a proxy)")
	fs.IntVar(&l.MaxBansPerRoom, "max-bans-per-room", signaling.DefaultMaxBansPerRoom, "bans one room holds (moderation)")
	fs.IntVar(&l.MaxDevicesPerToken, "max-devices-per-token", signaling.DefaultMaxDevicesPerToken, "members per user through tokens without a device claim")
	fs.DurationVar(&l.SyncTimeout, "sync-timeout", signaling.DefaultSyncTimeout, "unsynced time after which a member may be evicted from a full room")
	fs.Float64Var(&l.SignalRate, "signal-rate", signaling.DefaultSignalRate, "signals per second from one member to another")
	fs.IntVar(&l.SignalBurst, "signal-burst", signaling.DefaultSignalBurst, "burst of signals from one member to another")
	fs.Float64Var(&l.RecvSignalRate, "recv-signal-rate", signaling.DefaultRecvSignalRate, "signals per second relayed to one member")
	fs.IntVar(&l.RecvSignalBurst, "recv-signal-burst", signaling.DefaultRecvSignalBurst, "burst of signals relayed to one member")
	fs.Float64Var(&l.ErrorRate, "error-rate", signaling.DefaultErrorRate, "refused messages per second a member may send before it is dropped")
	fs.IntVar(&l.ErrorBurst, "error-burst", signaling.DefaultErrorBurst, "burst of refused messages before a member is dropped")
	fs.DurationVar(&l.PingInterval, "ping-interval", signaling.DefaultPingInterval, "how often the server pings each websocket")
	fs.DurationVar(&l.PongWait, "pong-wait", signaling.DefaultPongWait, "silence after which a member is dropped as dead (> ping-interval)")
	fs.IntVar(&l.SendQueue, "send-queue", signaling.DefaultSendQueue, "messages queued per websocket")
	fs.DurationVar(&o.HTTP.ReadHeader, "http-read-header-timeout", server.DefaultHTTPTimeouts.ReadHeader, "time to read a request's headers")
	fs.DurationVar(&o.HTTP.Read, "http-read-timeout", server.DefaultHTTPTimeouts.Read, "time to read a whole request")
	fs.DurationVar(&o.HTTP.Idle, "http-idle-timeout", server.DefaultHTTPTimeouts.Idle, "idle keep-alive connections are closed after this")
}
