package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/signaling"
)

// Bucket names (docs/protocol.md "Durable rooms").
const (
	// CheckpointBucket is the object store of checkpoints: one object per room, named RoomKey.
	CheckpointBucket = "concord_checkpoints"
	// RoomBucket is the KV bucket of signaling counters: one key per room, RoomKey, holding
	// signaling.RoomCounters as JSON.
	RoomBucket = "concord_rooms"
)

// Checkpoint metadata keys of a checkpoint object.
const (
	metaFormat = "concord-format"
	metaTerm   = "concord-term"
	metaClock  = "concord-clock"
	formatV1   = "adr117-stream/1"
)

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
}

// Store is the durable storage of a node: an embedded nats-server with JetStream, a checkpoint
// object store and a room KV bucket. Its methods are safe for concurrent use.
type Store struct {
	cfg   Config
	log   zerolog.Logger
	lock  *os.File
	ns    *server.Server
	nc    *nats.Conn
	objs  jetstream.ObjectStore
	rooms jetstream.KeyValue

	closeOnce sync.Once
}

// ErrFenced: a checkpoint of a later term is stored already; the writer is not the room's host.
var ErrFenced = errors.New("durable: a checkpoint of a later term is stored")

// ErrNoCheckpoint: the room has no checkpoint.
var ErrNoCheckpoint = errors.New("durable: no checkpoint")

// Open locks Dir (one process per data directory), starts the embedded JetStream server on it and
// makes the buckets.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger, lock: lock}
	if err := s.start(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) start() error {
	opts := &server.Options{
		ServerName: "concord",
		DontListen: true, // in process only; a cluster (issue 11 §2) will listen
		JetStream:  true,
		StoreDir:   filepath.Join(s.cfg.Dir, "jetstream"),
		NoSigs:     true,
		MaxPayload: 1 << 20,
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
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	s.objs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: CheckpointBucket, Description: "Concord room checkpoints (ADR-117 message streams)", Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("durable: object store %s: %w", CheckpointBucket, err)
	}
	s.rooms, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: RoomBucket, Description: "Concord room counters (last peer index, term)", History: 1, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("durable: key-value bucket %s: %w", RoomBucket, err)
	}
	s.log.Info().Str("dir", s.cfg.Dir).Msg("durable store open (embedded JetStream)")
	return nil
}

// Close stops the embedded server and releases the directory. It is idempotent.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
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

// Source names where a room's checkpoint lives, for error messages.
func (s *Store) Source(room signaling.RoomID) string {
	return fmt.Sprintf("%s: JetStream object %s/%s", s.cfg.Dir, CheckpointBucket, RoomKey(room))
}

// SaveCheckpoint stores c as its room's checkpoint unless one of a later term is stored
// (ErrFenced). JetStream writes the new object's chunks before its metadata, so a crash midway
// leaves the previous checkpoint whole.
func (s *Store) SaveCheckpoint(ctx context.Context, c Checkpoint) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	name := RoomKey(c.Room)
	if info, err := s.objs.GetInfo(ctx, name); err == nil {
		if t, _ := strconv.ParseUint(info.Metadata[metaTerm], 10, 64); signaling.Term(t) > c.Term {
			return fmt.Errorf("%w: room %q holds term %d, this one is of term %d", ErrFenced, c.Room, t, c.Term)
		}
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return err
	}
	_, err := s.objs.Put(ctx, jetstream.ObjectMeta{
		Name:        name,
		Description: "room " + strconv.Quote(string(c.Room)),
		Metadata: map[string]string{
			metaFormat: formatV1,
			metaTerm:   strconv.FormatUint(uint64(c.Term), 10),
			metaClock:  strconv.FormatUint(uint64(c.Clock), 10),
		},
	}, bytes.NewReader(c.Data))
	return err
}

// LoadCheckpoint returns room's checkpoint as stored (ErrNoCheckpoint when there is none). The
// object's digest is checked; the stream is not (Validate).
func (s *Store) LoadCheckpoint(ctx context.Context, room signaling.RoomID) (Checkpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	name := RoomKey(room)
	info, err := s.objs.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Checkpoint{}, ErrNoCheckpoint
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("room %q: %s: %w", room, s.Source(room), err)
	}
	if f := info.Metadata[metaFormat]; f != formatV1 {
		return Checkpoint{}, fmt.Errorf("room %q: %s: unknown checkpoint format %q", room, s.Source(room), f)
	}
	data, err := s.objs.GetBytes(ctx, name)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("room %q: %s: %w", room, s.Source(room), err)
	}
	term, _ := strconv.ParseUint(info.Metadata[metaTerm], 10, 64)
	clock, _ := strconv.ParseUint(info.Metadata[metaClock], 10, 32)
	return Checkpoint{Room: room, Term: signaling.Term(term), Clock: crdt.Timestamp(clock), Data: data}, nil
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
	for range 8 {
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
	l.log.Error().Msgf(format, v...)
}
func (l natsLogger) Fatalf(format string, v ...any) {
	l.log.Error().Msgf(format, v...)
}
