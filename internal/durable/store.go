package durable

import (
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/signaling"
)

// Stream and bucket names (docs/protocol.md "Durable rooms").
const (
	// CheckpointStream holds checkpoints: the last message on CheckpointSubject(room) is the
	// room's checkpoint (one message per subject is kept).
	CheckpointStream = "CONCORD_CHECKPOINTS"
	// RoomBucket is the KV bucket of signaling counters: one key per room, RoomKey, holding
	// signaling.RoomCounters as JSON.
	RoomBucket = "concord_rooms"
	// DirectoryBucket is the room directory of a cluster: one key per room, RoomKey, holding
	// its owner node and lease expiry as JSON (directory.go).
	DirectoryBucket = "concord_directory"
)

// Headers of a checkpoint message.
const (
	headerFormat = "Concord-Format"
	headerTerm   = "Concord-Term"
	headerClock  = "Concord-Clock"
	headerRoom   = "Concord-Room"
	formatV1     = "adr117-stream/1"
)

// MaxCheckpoint bounds a checkpoint: with its headers it fits the embedded server's max payload
// of 8 MiB (nats-server advises against more). About 90,000 arena entities.
const MaxCheckpoint = 8<<20 - 64<<10

// CheckpointSubject is the subject of room's checkpoints.
func CheckpointSubject(room signaling.RoomID) string { return "concord.checkpoint." + RoomKey(room) }

// DefaultTimeout bounds each JetStream operation when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultRoomTTL is Config.RoomTTL when zero.
const DefaultRoomTTL = 30 * 24 * time.Hour

// directoryTTL is how long a directory entry outlives its last write: a live lease is written
// every lease TTL/3, so only released and long-expired entries (tombstones among them) age out.
const directoryTTL = 24 * time.Hour

// DefaultDir is the data directory when Config.Dir is empty (serve's --data default).
const DefaultDir = "concord-data"

// Config configures a Store. The zero value works.
type Config struct {
	// Dir is the data directory: JetStream's file storage lives in Dir/jetstream. If empty,
	// DefaultDir (relative to the working directory).
	Dir string
	// Logger receives the store's logs (the embedded server's warnings and errors among them).
	// The zero value discards them.
	Logger zerolog.Logger
	// Timeout bounds each JetStream operation. If zero, DefaultTimeout.
	Timeout time.Duration

	// NodeName names this node: the embedded nats-server's server name (unique in a cluster). If
	// empty, "concord".
	NodeName string
	// Cluster, if its Name is set, clusters the embedded nats-server with its routes.
	Cluster ClusterConfig
	// NATS, if set, is the URL (or comma-separated URLs) of an external NATS server or cluster
	// with JetStream: no embedded server runs and Dir is not used.
	NATS string
	// NATSAuth authenticates the connection to NATS (credentials and TLS).
	NATSAuth NATSAuth
	// Replicas is the replica count of the streams and buckets. If zero: min(3, nodes) with the
	// embedded server (nodes: this one and its routes), 1 with an external NATS.
	Replicas int
	// StartTimeout bounds how long Open waits for JetStream (a cluster needs a quorum of its
	// nodes up and a meta leader). If zero, 2 minutes in a cluster, Timeout otherwise.
	StartTimeout time.Duration
	// RoomTTL is how long a room's counters outlive their last write: then the key and its
	// room's name leave the store (a room opened once under a random name stays no longer).
	// A room that opens again after that starts from its checkpoint's term (LoadRoom), or, with
	// none, from its members' claims as after a restart without a store. If zero, DefaultRoomTTL.
	RoomTTL time.Duration
	// Registerer, if not nil, receives concord_durable_refused_total{reason}: what was read back
	// from the store and refused (RefusedCheckpointTerm, RefusedRoomTerm, RefusedLeaseExpiry).
	Registerer prometheus.Registerer
	// Linger bounds how long Close keeps a clustered embedded server up for other nodes that are
	// stopping too and still writing (drain.go). If zero, DefaultLinger.
	Linger time.Duration
}

// NATSAuth are the credentials and TLS of the connection to an external NATS (Config.NATS).
// Every field is optional; a user and password may be in the URL instead.
type NATSAuth struct {
	// Creds is a NATS credentials file (a user JWT and its nkey seed).
	Creds string
	// Token is an authentication token.
	Token string
	// CA is the CA file (PEM) that verifies the server's certificate: the connection runs TLS.
	CA string
	// Cert and Key are a client certificate and its key (PEM files), for servers that verify
	// clients.
	Cert, Key string
}

// ClusterConfig clusters the embedded nats-server (nats-server's own cluster block). Without
// Routes the node runs alone: nats-server clusters JetStream only with routes.
//
// A route is a full member of the cluster: it reads every subject (checkpoints, the relayed
// join frames with their tokens) and writes every bucket (docs/security.md §7). So routes
// authenticate, with Secret (nats-server's route authorization: user RouteUser, password Secret,
// on every route URL) and/or TLS with verified peers; Open refuses a cluster with neither unless
// Insecure says so.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Listen is this node's route address, HOST:PORT, the host named (0.0.0.0 must be said):
	// nats-server's default port is 6222.
	Listen string
	// Routes are the other nodes' route URLs, nats-route://HOST:PORT (Secret is added to those
	// without credentials of their own).
	Routes []string
	// Secret is the route password, the same on every node (RouteSecret derives one).
	Secret string
	// TLSCert and TLSKey, if set, are this node's route certificate and key (PEM files), and TLSCA
	// the CA file the other nodes' certificates must chain to: routes then run over TLS and each
	// side verifies the other's certificate.
	TLSCert, TLSKey, TLSCA string
	// Insecure runs routes with neither Secret nor TLS: anyone who reaches Listen joins the
	// cluster. Only for a private network that nothing else reaches.
	Insecure bool
}

// RouteUser is the user name of route authorization (ClusterConfig.Secret is its password).
const RouteUser = "concord-route"

// RouteSecret derives the route password from the join-token secret: HMAC-SHA256 under a fixed
// label, so that a node's route password (which nats-server compares in plain, and which route
// URLs carry) reveals nothing about the key that signs join tokens.
func RouteSecret(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("concord cluster route password v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// ErrInsecureCluster: a cluster configuration whose routes would take anyone (no Secret, no TLS,
// not Insecure).
var ErrInsecureCluster = errors.New("durable: cluster routes without authentication")

// Check refuses a route configuration that would take anyone, or listen where not told.
func (c ClusterConfig) Check() error {
	if c.Name == "" {
		return nil
	}
	if c.Secret == "" && c.TLSCert == "" && !c.Insecure {
		return fmt.Errorf("%w: set a route secret (serve: CONCORD_SECRET or --cluster-secret) or route TLS (--cluster-tls-cert/--cluster-tls-key/--cluster-tls-ca); --cluster-insecure runs routes that take anyone who reaches them", ErrInsecureCluster)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") || c.TLSCert != "" && c.TLSCA == "" {
		return errors.New("durable: route TLS needs a certificate, its key and the CA that verifies the other nodes")
	}
	if len(c.Routes) == 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil || host == "" {
		return fmt.Errorf("durable: cluster address %q: want HOST:PORT with the interface named (0.0.0.0 for every one)", c.Listen)
	}
	return nil
}

// clustered reports whether the embedded server clusters.
func (c Config) clustered() bool { return c.Cluster.Name != "" }

// replicas is the replica count of the streams and buckets (see Config.Replicas).
func (c Config) replicas() int {
	switch {
	case c.Replicas > 0:
		return c.Replicas
	case c.NATS != "":
		return 1
	case c.clustered():
		return min(3, 1+len(c.Cluster.Routes))
	}
	return 1
}

// Store is the durable storage of a node: an embedded nats-server with JetStream, a checkpoint
// stream and a room KV bucket. Its methods are safe for concurrent use.
type Store struct {
	cfg   Config
	log   zerolog.Logger
	lock  *os.File
	ns    *server.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	cps   jetstream.Stream
	rooms jetstream.KeyValue
	dir   jetstream.KeyValue // the room directory (directory.go)

	refused *prometheus.CounterVec // concord_durable_refused_total{reason}

	// Other nodes that said they are stopping (drain.go); nil outside an embedded cluster.
	stopSub      *nats.Subscription
	stopMu       sync.Mutex
	stopping     map[string]bool
	stopBegan    time.Time
	stopsChanged chan struct{}

	closeOnce sync.Once
}

// ErrFenced: a checkpoint of a later term is stored already; the writer is not the room's host.
var ErrFenced = errors.New("durable: a checkpoint of a later term is stored")

// ErrCheckpointTooLarge: a checkpoint over MaxCheckpoint, refused; the room's stored checkpoint
// stays as it was.
var ErrCheckpointTooLarge = errors.New("durable: checkpoint over MaxCheckpoint")

// ErrUnknownFormat: the room's checkpoint is in a format this version does not read.
var ErrUnknownFormat = errors.New("durable: unknown checkpoint format")

// ErrNoCheckpoint: the room has no checkpoint.
var ErrNoCheckpoint = errors.New("durable: no checkpoint")

// ErrNoJetStream: the external NATS server (Config.NATS) runs without JetStream, and no server
// of its cluster answers JetStream requests. Waiting would not help: Open fails at once.
var ErrNoJetStream = errors.New("durable: the NATS server has no JetStream")

// Open locks Dir (one process per data directory), starts the embedded JetStream server on it and
// makes the buckets. It is OpenContext without a way to give up.
func Open(cfg Config) (*Store, error) { return OpenContext(context.Background(), cfg) }

// OpenContext is Open that gives up when ctx ends (a signal while starting): connecting to
// an external NATS, and waiting for JetStream (a cluster's quorum) to make the buckets, return
// ctx's error instead of blocking for up to StartTimeout.
func OpenContext(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "concord"
	}
	if cfg.Linger <= 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.RoomTTL <= 0 {
		cfg.RoomTTL = DefaultRoomTTL
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = cfg.Timeout
		if cfg.clustered() || cfg.NATS != "" {
			cfg.StartTimeout = 2 * time.Minute
		}
	}
	if err := cfg.Cluster.Check(); err != nil {
		return nil, err
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "concord_durable_refused_total",
		Help: "Values read back from the durable store and refused as implausible (docs/protocol.md §6), by reason."}, []string{"reason"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(refused); err != nil {
			return nil, err
		}
	}
	if cfg.NATS != "" {
		s := &Store{cfg: cfg, log: cfg.Logger, refused: refused}
		if err := s.start(ctx); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger, lock: lock, refused: refused}
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) start(ctx context.Context) error {
	if s.cfg.NATS != "" {
		opts, err := s.cfg.natsOptions()
		if err != nil {
			return err
		}
		dial := &startDialer{ctx: ctx}
		defer dial.started()
		nc, err := nats.Connect(s.cfg.NATS, append(opts, nats.SetCustomDialer(dial))...)
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		if err != nil {
			return fmt.Errorf("durable: connect to NATS %s: %w", RedactURLs(s.cfg.NATS), err)
		}
		s.nc = nc
	} else {
		if err := s.startEmbedded(); err != nil {
			return err
		}
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return err
	}
	s.js = js
	// A cluster answers JetStream requests once a quorum of its nodes is up and has a meta leader:
	// until then the calls fail, and are tried again.
	// Each attempt is short: a request made before the meta leader exists, or while the other
	// nodes create the same replicated assets, can hang its whole timeout, and three nodes forming
	// a cluster took 41 s in 10 s attempts (docs/protocol.md §7 "Cluster: startup").
	deadline := time.Now().Add(s.cfg.StartTimeout)
	attempt := min(startAttempt, s.cfg.Timeout)
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		err = s.makeBuckets(ctx, attempt)
		if err == nil || time.Now().After(deadline) {
			break
		}
		if err = s.noJetStream(err); errors.Is(err, ErrNoJetStream) {
			return err
		}
		s.log.Debug().Err(err).Msg("JetStream not ready yet")
		retry.Reset(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			return fmt.Errorf("durable: stopped while waiting for JetStream (%w): %w", err, context.Cause(ctx))
		case <-retry.C:
		}
	}
	if err != nil {
		return err
	}
	l := s.log.Info().Str("node", s.cfg.NodeName).Str("cluster", s.cfg.Cluster.Name)
	if s.cfg.NATS != "" {
		l = l.Str("nats", RedactURLs(s.cfg.NATS)) // Dir is not used
	} else {
		l = l.Str("dir", s.cfg.Dir)
	}
	l.Int("replicas", s.cfg.replicas()).Msg("durable store open (JetStream)")
	return nil
}

// noJetStream turns err, a failed JetStream request, into ErrNoJetStream when nothing will ever
// answer it: no server of the account answered ("no responders") and the server we are
// connected to says, in its INFO, that it runs without JetStream. A cluster whose JetStream
// servers are still starting answers with an error (or the connected server has JetStream),
// and is waited for.
func (s *Store) noJetStream(err error) error {
	if !errors.Is(err, nats.ErrNoResponders) || s.ns != nil {
		return err
	}
	if js, _ := s.nc.ConnectedServerJetStream(); js {
		return err
	}
	return noJetStreamError{url: s.nc.ConnectedUrlRedacted()}
}

// RedactURLs is a comma-separated list of URLs (Config.NATS) fit for a log or an error: whatever
// precedes a host's @ (a user and password, or a token in the user's place) becomes "REDACTED".
func RedactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		scheme, rest, ok := strings.Cut(p, "://")
		if at := strings.LastIndex(rest, "@"); ok && at >= 0 {
			parts[i] = scheme + "://REDACTED" + rest[at:] // a user and password, or a token as the user
		}
	}
	return strings.Join(parts, ",")
}

// noJetStreamError is ErrNoJetStream with the server's URL and the fix.
type noJetStreamError struct{ url string }

func (e noJetStreamError) Error() string {
	return "durable: the NATS server at " + e.url + " has no JetStream: start it with -js (or jetstream {} in its configuration)"
}

func (e noJetStreamError) Unwrap() error { return ErrNoJetStream }

// startDialer dials the external NATS under the startup context, so that a signal while
// connecting interrupts the dial; once Open has returned (started), reconnects dial without it.
type startDialer struct {
	mu  sync.Mutex
	ctx context.Context
}

func (d *startDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	// nats.go's own dialer's timeout (nats.DefaultTimeout).
	return (&net.Dialer{Timeout: nats.DefaultTimeout}).DialContext(ctx, network, address)
}

func (d *startDialer) started() {
	d.mu.Lock()
	d.ctx = context.Background()
	d.mu.Unlock()
}

// startEmbedded starts the embedded nats-server and connects to it in process.
func (s *Store) startEmbedded() error {
	opts := &server.Options{
		ServerName: s.cfg.NodeName,
		DontListen: true, // in process only
		JetStream:  true,
		StoreDir:   filepath.Join(s.cfg.Dir, "jetstream"),
		NoSigs:     true,
		MaxPayload: MaxCheckpoint + 64<<10, // a checkpoint and its headers
	}
	if c := s.cfg.Cluster; c.Name != "" && len(c.Routes) == 0 {
		// nats-server runs no JetStream cluster without routes: a cluster of one is a single node.
		s.log.Warn().Str("cluster", c.Name).Msg("cluster without routes: this node runs alone (JetStream not clustered)")
	} else if c.Name != "" {
		host, port, err := splitHostPort(c.Listen)
		if err != nil {
			return fmt.Errorf("durable: cluster address %q: %w", c.Listen, err)
		}
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port}
		if c.Secret != "" {
			opts.Cluster.Username, opts.Cluster.Password = RouteUser, c.Secret
		}
		if c.TLSCert != "" {
			tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: c.TLSCert, KeyFile: c.TLSKey, CaFile: c.TLSCA, Verify: true})
			if err != nil {
				return fmt.Errorf("durable: route TLS: %w", err)
			}
			// As nats-server's own config does for a cluster block: strict verification both
			// ways (a route is a server and a client), the CA trusted for either side.
			tc.ClientAuth, tc.RootCAs = tls.RequireAndVerifyClientCert, tc.ClientCAs
			opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = tc, 2
		}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Host == "" {
				return fmt.Errorf("durable: route %q: want nats-route://HOST:PORT", RedactURLs(r))
			}
			if u.User == nil && c.Secret != "" {
				u.User = url.UserPassword(RouteUser, c.Secret)
			}
			opts.Routes = append(opts.Routes, u)
		}
		// nats-server starts its routes only once its client port listens (Server.Start waits
		// for the accept loop, which DontListen skips). So the client port listens, on a random
		// loopback port, and takes only this process: a password drawn here and never written
		// anywhere, which the in-process connection below presents. Any other local user is
		// refused (an authorization violation).
		var pw [32]byte
		if _, err := crand.Read(pw[:]); err != nil {
			return err
		}
		opts.DontListen = false
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
		opts.Username, opts.Password = localUser, hex.EncodeToString(pw[:])
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("durable: embedded nats-server: %w", err)
	}
	ns.SetLoggerV2(natsLogger{s.log.With().Str("component", "nats").Logger()}, false, false, false)
	s.ns = ns
	ns.Start()
	if !ns.ReadyForConnections(s.cfg.Timeout) {
		return errors.New("durable: embedded nats-server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("concord"), nats.UserInfo(opts.Username, opts.Password))
	if err != nil {
		return fmt.Errorf("durable: connect to the embedded nats-server: %w", err)
	}
	s.nc = nc
	if opts.Cluster.Name != "" {
		return s.watchStops()
	}
	return nil
}

// splitHostPort parses HOST:PORT (an empty host: every interface).
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if host == "" {
		return "", 0, errors.New("no host: name the interface (0.0.0.0 for every one)")
	}
	return host, port, nil
}

// localUser is the user of the embedded server's loopback client port (startEmbedded).
const localUser = "concord-local"

// natsOptions are the options of the connection to an external NATS (Config.NATS): credentials
// and TLS. A user and password may also be in the URL (nats://USER:PASSWORD@HOST:4222).
func (c Config) natsOptions() ([]nats.Option, error) {
	opts := []nats.Option{nats.Name("concord " + c.NodeName), nats.MaxReconnects(-1)}
	n := c.NATSAuth
	if n.Creds != "" {
		if _, err := os.Stat(n.Creds); err != nil {
			return nil, fmt.Errorf("durable: NATS credentials: %w", err)
		}
		opts = append(opts, nats.UserCredentials(n.Creds))
	}
	if n.Token != "" {
		opts = append(opts, nats.Token(n.Token))
	}
	if n.CA != "" {
		opts = append(opts, nats.RootCAs(n.CA))
	}
	if (n.Cert == "") != (n.Key == "") {
		return nil, errors.New("durable: a NATS client certificate needs its key")
	}
	if n.Cert != "" {
		opts = append(opts, nats.ClientCert(n.Cert, n.Key))
	}
	return opts, nil
}

// startAttempt bounds one attempt of Open's to make the stream and the buckets.
const startAttempt = 2 * time.Second

// makeBuckets makes (or updates) the checkpoint stream and the buckets, each request within timeout.
func (s *Store) makeBuckets(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := s.cfg.replicas()
	var err error
	// A stream, not an object store: a checkpoint is one message, written atomically with a
	// revision check (the object store writes chunks asynchronously and, in nats.go 1.55, can
	// leave a goroutine behind per Put).
	s.cps, err = s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: CheckpointStream, Description: "Concord room checkpoints (ADR-117 message streams)",
		Subjects: []string{"concord.checkpoint.>"}, Storage: jetstream.FileStorage, Replicas: r,
		MaxMsgsPerSubject: 1, MaxMsgSize: MaxCheckpoint + 64<<10, Discard: jetstream.DiscardOld,
	})
	if err != nil {
		return fmt.Errorf("durable: stream %s: %w", CheckpointStream, err)
	}
	s.rooms, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: RoomBucket, Description: "Concord room counters (last peer index, term)", History: 1, Storage: jetstream.FileStorage, Replicas: r,
		TTL: s.cfg.RoomTTL,
	})
	if err != nil {
		return fmt.Errorf("durable: key-value bucket %s: %w", RoomBucket, err)
	}
	s.dir, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: DirectoryBucket, Description: "Concord room directory (owner node, lease expiry)", History: 1, Storage: jetstream.FileStorage, Replicas: r,
		TTL: directoryTTL,
	})
	if err != nil {
		return fmt.Errorf("durable: key-value bucket %s: %w", DirectoryBucket, err)
	}
	return nil
}

// Conn is the store's NATS connection (the relay of a cluster uses it too).
func (s *Store) Conn() *nats.Conn { return s.nc }

// NodeName is this node's name (Config.NodeName).
func (s *Store) NodeName() string { return s.cfg.NodeName }

// Replicas is the replica count of the streams and buckets.
func (s *Store) Replicas() int { return s.cfg.replicas() }

// Close stops the embedded server and releases the directory. It is idempotent.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		s.lingerForStops()
		if s.nc != nil {
			s.nc.Close()
		}
		if s.ns != nil {
			s.ns.Shutdown()
			s.ns.WaitForShutdown()
		}
		if s.lock != nil {
			_ = s.lock.Close()
		}
	})
}

// Checkpoint is one room's checkpoint.
type Checkpoint struct {
	Room signaling.RoomID
	// Term is the host term in which it was taken; Clock the host's Lamport clock then.
	Term  signaling.Term
	Clock crdt.Timestamp
	// Data is the state as an ADR-117 message stream.
	Data []byte
}

// RoomKey is the name of room's object and KV key: the room id with every byte outside
// [A-Za-z0-9_-] written as =XX (hex), which JetStream accepts in keys and subjects.
func RoomKey(room signaling.RoomID) string {
	var b []byte
	for i := 0; i < len(room); i++ {
		c := room[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b = append(b, c)
			continue
		}
		b = append(b, '=', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
	}
	return string(b)
}

// maxAttempts bounds the reads and writes of one save that lose revision checks to other writers.
const maxAttempts = 16

// Source names where a room's checkpoint lives, for error messages.
func (s *Store) Source(room signaling.RoomID) string {
	return fmt.Sprintf("%s: JetStream %s %s", s.cfg.Dir, CheckpointStream, CheckpointSubject(room))
}

// last returns the room's stored checkpoint message, nil when there is none.
func (s *Store) last(ctx context.Context, room signaling.RoomID) (*jetstream.RawStreamMsg, error) {
	m, err := s.cps.GetLastMsgForSubject(ctx, CheckpointSubject(room))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// SaveCheckpoint stores c as its room's checkpoint unless one of a later term is stored
// (ErrFenced). The write is one JetStream message, published only if the room's last one is
// still the one read (a revision check), so two writers cannot interleave and a crash leaves
// either checkpoint whole.
func (s *Store) SaveCheckpoint(ctx context.Context, c Checkpoint) error {
	if len(c.Data) > MaxCheckpoint {
		return fmt.Errorf("%w: room %q: checkpoint of %d bytes, the limit is %d", ErrCheckpointTooLarge, c.Room, len(c.Data), MaxCheckpoint)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for attempt := range maxAttempts {
		if attempt > 0 {
			// Another writer got in between: back off a random while, growing, and read again.
			t := time.NewTimer(time.Duration(rand.Int64N(int64(attempt) * int64(time.Millisecond))))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		var seq uint64
		old, err := s.last(ctx, c.Room)
		if err != nil {
			return err
		}
		if old != nil {
			if t, _ := strconv.ParseUint(old.Header.Get(headerTerm), 10, 64); signaling.Term(t) > c.Term {
				if s.termVouched(c.Room, signaling.Term(t), c.Term) {
					return fmt.Errorf("%w: room %q holds term %d, this one is of term %d", ErrFenced, c.Room, t, c.Term)
				}
				s.refuse(RefusedCheckpointTerm)
				s.log.Warn().Str("room", string(c.Room)).Uint64("stored", t).Uint64("term", uint64(c.Term)).
					Msg("stored checkpoint's term is implausible (no election vouches for it): overwritten")
			}
			seq = old.Sequence
		}
		msg := &nats.Msg{Subject: CheckpointSubject(c.Room), Data: c.Data, Header: nats.Header{}}
		msg.Header.Set(headerFormat, formatV1)
		msg.Header.Set(headerRoom, string(c.Room))
		msg.Header.Set(headerTerm, strconv.FormatUint(uint64(c.Term), 10))
		msg.Header.Set(headerClock, strconv.FormatUint(uint64(c.Clock), 10))
		_, err = s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
		if err == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || (apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence && apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return err
		}
	}
	return fmt.Errorf("durable: room %q: too many concurrent checkpoint writes", c.Room)
}

// LoadCheckpoint returns room's checkpoint as stored (ErrNoCheckpoint when there is none).
// JetStream checks each stored message's checksum; the stream inside is not checked (Validate).
func (s *Store) LoadCheckpoint(ctx context.Context, room signaling.RoomID) (Checkpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.last(ctx, room)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("room %q: %s: %w", room, s.Source(room), err)
	}
	if m == nil {
		return Checkpoint{}, ErrNoCheckpoint
	}
	if f := m.Header.Get(headerFormat); f != formatV1 {
		return Checkpoint{}, fmt.Errorf("%w: room %q: %s: %q", ErrUnknownFormat, room, s.Source(room), f)
	}
	term, _ := strconv.ParseUint(m.Header.Get(headerTerm), 10, 64)
	clock, _ := strconv.ParseUint(m.Header.Get(headerClock), 10, 32)
	return Checkpoint{Room: room, Term: signaling.Term(term), Clock: crdt.Timestamp(clock), Data: m.Data}, nil
}

// Bounds on what is read back from the store (docs/protocol.md §6 "Durable rooms: bounds"). The
// buckets are written by the cluster's nodes alone, but a term or lease that nothing honest
// writes would fence a room for good, so it is refused rather than obeyed.
const (
	// MaxTerm is the highest term read back: one election a second reaches it in 136 years. A
	// stored term above it is treated as absent (counters) or as no fence (a checkpoint).
	MaxTerm = 1 << 32
	// MaxTermSkew is how far above a writer's term a stored checkpoint's term may be without the
	// room's counters vouching for it: a stale host is a few elections behind, not thousands.
	MaxTermSkew = 1 << 10
)

// Refusal reasons of concord_durable_refused_total.
const (
	RefusedCheckpointTerm = "checkpoint_term" // a stored checkpoint's term no election vouches for
	RefusedRoomTerm       = "room_term"       // stored room counters beyond MaxTerm
	RefusedLeaseExpiry    = "lease_expiry"    // a lease expiring implausibly far ahead
)

// refuse counts a refusal of something read back from the store.
func (s *Store) refuse(reason string) {
	if s.refused != nil {
		s.refused.WithLabelValues(reason).Inc()
	}
}

// termVouched reports whether a stored checkpoint term above a writer's term is plausible: within
// MaxTermSkew of it, or at most the room's counters' term (signaling saves a term before any
// member hears of it, so an honest checkpoint's term never passes the counters').
func (s *Store) termVouched(room signaling.RoomID, stored, writer signaling.Term) bool {
	if stored > MaxTerm {
		return false
	}
	if stored <= writer+MaxTermSkew {
		return true
	}
	// The counters' key itself: LoadRoom falls back to the checkpoint's own term.
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	e, err := s.rooms.Get(ctx, RoomKey(room))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false
	}
	var c signaling.RoomCounters
	if err != nil || json.Unmarshal(e.Value(), &c) != nil {
		return true // unread counters: the fence holds
	}
	return stored <= c.Term
}

// LoadRoom implements signaling.Store.
func (s *Store) LoadRoom(room signaling.RoomID) (signaling.RoomCounters, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	var c signaling.RoomCounters
	e, err := s.rooms.Get(ctx, RoomKey(room))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// Expired (RoomTTL) or never saved: the room's checkpoint, if any, holds a term the
		// room reached, which its next host must pass (or its checkpoints would be fenced).
		m, err := s.last(ctx, room)
		if err != nil || m == nil {
			return c, err
		}
		if t, _ := strconv.ParseUint(m.Header.Get(headerTerm), 10, 64); t <= MaxTerm {
			c.Term = signaling.Term(t)
		}
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return c, fmt.Errorf("room %q: %s key %s: %w", room, RoomBucket, RoomKey(room), err)
	}
	if c.Term > MaxTerm {
		s.refuse(RefusedRoomTerm)
		s.log.Warn().Str("room", string(room)).Uint64("term", uint64(c.Term)).Msg("stored room counters hold an implausible term: ignored")
		return signaling.RoomCounters{}, nil
	}
	return c, nil
}

// SaveRoom implements signaling.Store. Counters never go back: a stored value above c wins
// (a revision check, so that two writers cannot lower each other's counters).
func (s *Store) SaveRoom(room signaling.RoomID, c signaling.RoomCounters) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	key := RoomKey(room)
	for range maxAttempts {
		var rev uint64
		if e, err := s.rooms.Get(ctx, key); err == nil {
			var old signaling.RoomCounters
			if json.Unmarshal(e.Value(), &old) == nil && old.Term <= MaxTerm {
				c.LastIndex, c.Term = max(c.LastIndex, old.LastIndex), max(c.Term, old.Term)
			}
			rev = e.Revision()
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		b, _ := json.Marshal(c)
		var err error
		if rev == 0 {
			_, err = s.rooms.Create(ctx, key, b)
		} else {
			_, err = s.rooms.Update(ctx, key, b, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
				return err
			}
		}
	}
	return fmt.Errorf("room %q: %s key %s: too many concurrent updates", room, RoomBucket, key)
}

// natsLogger passes the embedded server's warnings and errors to zerolog.
type natsLogger struct{ log zerolog.Logger }

func (l natsLogger) Noticef(string, ...any) {}
func (l natsLogger) Debugf(string, ...any)  {}
func (l natsLogger) Tracef(string, ...any)  {}
func (l natsLogger) Warnf(format string, v ...any) {
	if strings.HasPrefix(format, "Plaintext passwords detected") {
		return // the client port's password, drawn in memory (startEmbedded), no config file's
	}
	l.log.Warn().Msgf(format, v...)
}
func (l natsLogger) Errorf(format string, v ...any) {
	if strings.HasPrefix(format, "Error trying to connect to route") {
		// Retried for ever, once a second while a node is down: an error only if it lasts.
		l.log.Debug().Msgf(format, v...)
		return
	}
	l.log.Error().Msgf(format, v...)
}
func (l natsLogger) Fatalf(format string, v ...any) {
	l.log.Error().Msgf(format, v...)
}
