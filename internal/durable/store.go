package durable

import (
	"context"
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
	// Replicas is the replica count of the streams and buckets. If zero: min(3, nodes) with the
	// embedded server (nodes: this one and its routes), 1 with an external NATS.
	Replicas int
	// StartTimeout bounds how long Open waits for JetStream (a cluster needs a quorum of its
	// nodes up and a meta leader). If zero, 2 minutes in a cluster, Timeout otherwise.
	StartTimeout time.Duration
	// Linger bounds how long Close keeps a clustered embedded server up for other nodes that are
	// stopping too and still writing (drain.go). If zero, DefaultLinger.
	Linger time.Duration
}

// ClusterConfig clusters the embedded nats-server (nats-server's own cluster block). Without
// Routes the node runs alone: nats-server clusters JetStream only with routes.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Listen is this node's route address, HOST:PORT (nats-server's default port is 6222).
	Listen string
	// Routes are the other nodes' route URLs, nats-route://HOST:PORT.
	Routes []string
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
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = cfg.Timeout
		if cfg.clustered() || cfg.NATS != "" {
			cfg.StartTimeout = 2 * time.Minute
		}
	}
	if cfg.NATS != "" {
		s := &Store{cfg: cfg, log: cfg.Logger}
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
	s := &Store{cfg: cfg, log: cfg.Logger, lock: lock}
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) start(ctx context.Context) error {
	if s.cfg.NATS != "" {
		dial := &startDialer{ctx: ctx}
		defer dial.started()
		nc, err := nats.Connect(s.cfg.NATS, nats.Name("concord "+s.cfg.NodeName), nats.MaxReconnects(-1), nats.SetCustomDialer(dial))
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
	deadline := time.Now().Add(s.cfg.StartTimeout)
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		err = s.makeBuckets(ctx)
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

// RedactURLs is a comma-separated list of URLs (Config.NATS) fit for a log: their passwords are
// replaced with "xxxxx".
func RedactURLs(urls string) string {
	list := strings.Split(urls, ",")
	for i, u := range list {
		if p, err := url.Parse(strings.TrimSpace(u)); err == nil {
			list[i] = p.Redacted()
		}
	}
	return strings.Join(list, ",")
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
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Host == "" {
				return fmt.Errorf("durable: route %q: want nats-route://HOST:PORT", r)
			}
			opts.Routes = append(opts.Routes, u)
		}
		// Routes start only once the client port listens: it listens on loopback, for this
		// process and its operator.
		opts.DontListen = false
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
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
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("concord"))
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
		host = "0.0.0.0"
	}
	return host, port, nil
}

// makeBuckets makes (or updates) the checkpoint stream and the buckets.
func (s *Store) makeBuckets(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
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
	})
	if err != nil {
		return fmt.Errorf("durable: key-value bucket %s: %w", RoomBucket, err)
	}
	s.dir, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: DirectoryBucket, Description: "Concord room directory (owner node, lease expiry)", History: 1, Storage: jetstream.FileStorage, Replicas: r,
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
		return fmt.Errorf("durable: room %q: checkpoint of %d bytes, the limit is %d", c.Room, len(c.Data), MaxCheckpoint)
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
				return fmt.Errorf("%w: room %q holds term %d, this one is of term %d", ErrFenced, c.Room, t, c.Term)
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

// LoadRoom implements signaling.Store.
func (s *Store) LoadRoom(room signaling.RoomID) (signaling.RoomCounters, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	var c signaling.RoomCounters
	e, err := s.rooms.Get(ctx, RoomKey(room))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return c, fmt.Errorf("room %q: %s key %s: %w", room, RoomBucket, RoomKey(room), err)
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
			if json.Unmarshal(e.Value(), &old) == nil {
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
