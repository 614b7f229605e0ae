package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/signaling"
)

// The room directory of a cluster (docs/protocol.md "Cluster: the room directory"): in the KV
// bucket DirectoryBucket, key RoomKey(room), value a Lease as JSON. A node owns a room while it
// holds an unexpired lease on it:
//
//   - acquire: Create (no key, or a deleted one), or Update on the observed revision of a lease
//     that has expired (or that names this node: a restart of it);
//   - renew: Update on the revision this node wrote last, every TTL/3; a failed revision check
//     means another node took the room over, and this one stops serving it (Lost);
//   - release: Delete on the revision this node wrote last, when the room closes here.
//
// Every write is a revision check, so two nodes never both win one revision: the fencing token of
// a lease is its revision. Expiry is wall-clock time: the nodes' clocks must agree to well within
// a TTL.
//
// A lease that expired while the bucket did not answer this node (a stream leader election after
// a node of the cluster died, 5–6 s in the lab) was not renewed because nobody could write, not
// because its holder died. If its holder is alive (DirectoryConfig.Alive: its heartbeats still
// arrive over the cluster's routes), Acquire leaves it to its holder for a TTL after the bucket
// came back here, time for the holder's next renewal; a dead holder's leases are taken at once,
// as before. Without this, killing one node of three moved every room of the other two as well.

// DefaultLeaseTTL is a lease's lifetime when DirectoryConfig.TTL is zero: a dead owner's rooms
// move after at most this long.
const DefaultLeaseTTL = 6 * time.Second

// ErrLeaseLost: the lease was taken over (its revision moved) or has expired.
var ErrLeaseLost = errors.New("durable: room lease lost")

// ErrNotHeld: this node holds no lease on the room.
var ErrNotHeld = errors.New("durable: room lease not held")

// Lease is a room's entry in the directory.
type Lease struct {
	Room signaling.RoomID `json:"room"`
	Node string           `json:"node"`
	// Expires is the lease's expiry, Unix milliseconds.
	Expires int64 `json:"expires"`
	// Revision is the KV revision of the entry (its fencing token); not stored in the value.
	Revision uint64 `json:"-"`
}

// ExpiresAt is the lease's expiry.
func (l Lease) ExpiresAt() time.Time { return time.UnixMilli(l.Expires) }

// Live reports whether the lease has not expired at now.
func (l Lease) Live(now time.Time) bool { return now.Before(l.ExpiresAt()) }

// maxLeaseValue bounds a directory value read from the bucket.
const maxLeaseValue = 4 << 10

func parseLease(e jetstream.KeyValueEntry) (Lease, error) {
	var l Lease
	if len(e.Value()) > maxLeaseValue {
		return l, fmt.Errorf("durable: %s key %s: value of %d bytes", DirectoryBucket, e.Key(), len(e.Value()))
	}
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return l, fmt.Errorf("durable: %s key %s: %w", DirectoryBucket, e.Key(), err)
	}
	l.Revision = e.Revision()
	return l, nil
}

// DirectoryConfig configures a Directory. Node is required.
type DirectoryConfig struct {
	// Node is this node's name, written in its leases.
	Node string
	// TTL is a lease's lifetime. If zero, DefaultLeaseTTL.
	TTL time.Duration
	// Renew is how often the held leases are renewed. If zero, TTL/3; if negative, never on
	// the directory's own (tests call RenewAll).
	Renew time.Duration
	// Keep is asked at each renewal whether this node still serves room; false releases the
	// lease. Nil keeps every lease.
	Keep func(room signaling.RoomID) bool
	// Lost is told (on the directory's goroutine) of each lease that a renewal found taken over
	// or expired: the room must stop being served here.
	Lost func(room signaling.RoomID)
	// Now is the clock; if nil, time.Now.
	Now func() time.Time
	// Timeout bounds each KV operation of the renewal loop. If zero, DefaultTimeout.
	Timeout time.Duration
	// Logger; the zero value discards.
	Logger zerolog.Logger
	// Refused, if not nil, is told of each lease refused as implausible (RefusedLeaseExpiry).
	Refused func(reason string)
	// Freed, if not nil, is told (on the watcher's goroutine; it must not block) of each room
	// whose lease another node released: the room can be taken now, not after a TTL.
	Freed func(room signaling.RoomID)
	// Alive, if not nil, reports whether a node is alive (heard from lately): its lease that
	// expired while the bucket did not answer this node is left to it for a TTL after the
	// bucket came back (see above). Nil: every expired lease may be taken.
	Alive func(node string) bool
}

// held is a lease this node holds: the revision it wrote and the expiry it wrote.
type held struct {
	room    signaling.RoomID
	rev     uint64
	expires time.Time
}

// Directory is a node's view of the room directory: the leases it holds (renewed on its
// goroutine) and a cache of every lease, kept by a KV watcher. Its methods are safe for
// concurrent use; Close stops its goroutines.
type Directory struct {
	kv  jetstream.KeyValue
	cfg DirectoryConfig
	log zerolog.Logger

	mu    sync.Mutex // guards held, cache and outage
	held  map[string]held
	cache map[string]Lease
	// outage is this node's view of the bucket: down since the first failed operation, back
	// since the first one that succeeded after it.
	outage struct {
		down        bool
		since, back time.Time
	}

	watcher jetstream.KeyWatcher
	quit    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Directory opens the store's room directory.
func (s *Store) Directory(cfg DirectoryConfig) (*Directory, error) {
	if cfg.Refused == nil {
		cfg.Refused = s.refuse
	}
	return NewDirectory(s.dir, cfg)
}

// maxLeaseAhead is how far past a TTL from now a lease may expire: the nodes' clocks agree to
// within a TTL (see above), so a lease expiring later than now + 2 TTL was never written by a
// node renewing it; it is taken as expired (a lease stored to expire in an hour would otherwise
// close its room for that hour).
const maxLeaseAhead = 2

// vouch returns l, expired if its expiry is implausibly far ahead of now.
func (d *Directory) vouch(l Lease, now time.Time) Lease {
	if l.Expires <= now.Add(maxLeaseAhead*d.cfg.TTL).UnixMilli() {
		return l
	}
	if d.cfg.Refused != nil {
		d.cfg.Refused(RefusedLeaseExpiry)
	}
	d.log.Warn().Str("room", string(l.Room)).Str("node", l.Node).Time("expires", l.ExpiresAt()).
		Msg("room lease expires implausibly far ahead: taken as expired")
	l.Expires = 0
	return l
}

// NewDirectory opens the room directory in kv and starts its watcher and (unless cfg.Renew < 0)
// its renewal loop.
func NewDirectory(kv jetstream.KeyValue, cfg DirectoryConfig) (*Directory, error) {
	if cfg.Node == "" {
		return nil, errors.New("durable: directory: no node name")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultLeaseTTL
	}
	if cfg.Renew == 0 {
		cfg.Renew = cfg.TTL / 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	d := &Directory{kv: kv, cfg: cfg, log: cfg.Logger, held: map[string]held{}, cache: map[string]Lease{}, quit: make(chan struct{})}
	// The watcher lives until Stop (a context would end it when cancelled).
	w, err := kv.WatchAll(context.Background())
	if err != nil {
		return nil, fmt.Errorf("durable: watch %s: %w", DirectoryBucket, err)
	}
	d.watcher = w
	d.wg.Add(1)
	go d.watch()
	if cfg.Renew > 0 {
		d.wg.Add(1)
		go d.renewLoop()
	}
	return d, nil
}

// Close stops the renewal and the watcher; the leases are left to expire. Idempotent.
func (d *Directory) Close() {
	d.once.Do(func() {
		close(d.quit)
		_ = d.watcher.Stop()
		d.wg.Wait()
	})
}

// Node is this node's name.
func (d *Directory) Node() string { return d.cfg.Node }

// TTL is a lease's lifetime.
func (d *Directory) TTL() time.Duration { return d.cfg.TTL }

func (d *Directory) watch() {
	defer d.wg.Done()
	for {
		select {
		case <-d.quit:
			return
		case e, ok := <-d.watcher.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue // the initial values are in
			}
			d.mu.Lock()
			var freed Lease
			if e.Operation() != jetstream.KeyValuePut {
				freed = d.cache[e.Key()]
				delete(d.cache, e.Key())
			} else if l, err := parseLease(e); err == nil {
				l = d.vouch(l, d.cfg.Now())
				if old, ok := d.cache[e.Key()]; !ok || old.Revision < l.Revision {
					d.cache[e.Key()] = l
				}
			}
			d.mu.Unlock()
			if freed.Node != "" && freed.Node != d.cfg.Node && d.cfg.Freed != nil {
				d.cfg.Freed(freed.Room)
			}
		}
	}
}

func (d *Directory) renewLoop() {
	defer d.wg.Done()
	t := time.NewTicker(d.cfg.Renew)
	defer t.Stop()
	for {
		select {
		case <-d.quit:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
			d.RenewAll(ctx)
			cancel()
		}
	}
}

// Lookup reads room's lease from the bucket (not the cache); ok is false when it has none.
func (d *Directory) Lookup(ctx context.Context, room signaling.RoomID) (l Lease, ok bool, err error) {
	e, err := d.kv.Get(ctx, RoomKey(room))
	d.noted(answered(err))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, err
	}
	l, err = parseLease(e)
	return d.vouch(l, d.cfg.Now()), err == nil, err
}

// noted records in this node's view of an outage whether the bucket answered an operation (with
// a result or a refusal it decided: a revision conflict, a missing key).
func (d *Directory) noted(answered bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := &d.outage
	switch {
	case !answered && !o.down:
		o.down, o.since = true, d.cfg.Now()
	case answered && o.down:
		o.down, o.back = false, d.cfg.Now()
	}
}

// answered reports whether err is nil or came from a bucket that answered.
func answered(err error) bool {
	return err == nil || errors.Is(err, jetstream.ErrKeyNotFound) || revisionConflict(err)
}

// waitsForHolder reports whether another node's expired lease l is left to its holder at now: the
// holder is alive, the lease was live when the bucket stopped answering this node, and the bucket
// has been back for less than a TTL (see the package's directory comment).
func (d *Directory) waitsForHolder(l Lease, now time.Time) bool {
	if d.cfg.Alive == nil || l.Live(now) {
		return false
	}
	d.mu.Lock()
	o := d.outage
	d.mu.Unlock()
	if o.back.IsZero() || !l.ExpiresAt().After(o.since) || !now.Before(o.back.Add(d.cfg.TTL)) {
		return false
	}
	return d.cfg.Alive(l.Node)
}

// Acquire takes room's lease for this node if it is free, expired or already this node's, and
// returns the lease as it stands: this node's (Owns is true) or the live lease of another node
// (or one left to its live holder after an outage of the bucket, expired: see above).
func (d *Directory) Acquire(ctx context.Context, room signaling.RoomID) (Lease, error) {
	key := RoomKey(room)
	for range maxAttempts {
		var rev uint64
		e, err := d.kv.Get(ctx, key)
		d.noted(answered(err))
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return Lease{}, err
		default:
			l, err := parseLease(e)
			if err != nil {
				return Lease{}, err
			}
			now := d.cfg.Now()
			l = d.vouch(l, now)
			if l.Node != d.cfg.Node && (l.Live(now) || d.waitsForHolder(l, now)) {
				return l, nil
			}
			if h, ok := d.heldLease(key); ok && h.rev == l.Revision && l.Node == d.cfg.Node && l.Live(now) {
				return l, nil // held already
			}
			rev = l.Revision
		}
		l := Lease{Room: room, Node: d.cfg.Node, Expires: d.cfg.Now().Add(d.cfg.TTL).UnixMilli()}
		b, _ := json.Marshal(l)
		if rev == 0 {
			l.Revision, err = d.kv.Create(ctx, key, b)
		} else {
			l.Revision, err = d.kv.Update(ctx, key, b, rev)
		}
		d.noted(answered(err))
		if err == nil {
			d.mu.Lock()
			d.held[key] = held{room: room, rev: l.Revision, expires: l.ExpiresAt()}
			d.cache[key] = l
			d.mu.Unlock()
			d.log.Info().Str("room", string(room)).Uint64("revision", l.Revision).Msg("room lease acquired")
			return l, nil
		}
		if !revisionConflict(err) {
			return Lease{}, err
		}
		// Another node wrote between the read and the write: read again.
	}
	return Lease{}, fmt.Errorf("durable: room %q: %s: too many concurrent lease writes", room, DirectoryBucket)
}

func revisionConflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

func (d *Directory) heldLease(key string) (held, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.held[key]
	return h, ok
}

// Holds reports whether this node holds a lease on room, expired or not: one that no renewal has
// found taken over yet (see Renew).
func (d *Directory) Holds(room signaling.RoomID) bool {
	_, ok := d.heldLease(RoomKey(room))
	return ok
}

// Owns reports whether this node holds an unexpired lease on room.
func (d *Directory) Owns(room signaling.RoomID) bool {
	h, ok := d.heldLease(RoomKey(room))
	return ok && d.cfg.Now().Before(h.expires)
}

// Renew extends this node's lease on room by a TTL: an Update on the revision it wrote last.
// ErrLeaseLost when another node took the room over (the lease is forgotten), ErrNotHeld when
// this node holds none.
func (d *Directory) Renew(ctx context.Context, room signaling.RoomID) error {
	key := RoomKey(room)
	h, ok := d.heldLease(key)
	if !ok {
		return ErrNotHeld
	}
	l := Lease{Room: room, Node: d.cfg.Node, Expires: d.cfg.Now().Add(d.cfg.TTL).UnixMilli()}
	b, _ := json.Marshal(l)
	rev, err := d.kv.Update(ctx, key, b, h.rev)
	d.noted(answered(err))
	if err != nil {
		if revisionConflict(err) {
			d.forget(key, h.rev)
			return fmt.Errorf("%w: room %q (revision %d moved on)", ErrLeaseLost, room, h.rev)
		}
		// The bucket did not answer (a stream leader election after a node died, say): the
		// lease is kept and tried again. Past its expiry Owns is false, but no other node can
		// have taken it without a write that moved the revision, which the next try sees.
		return err
	}
	l.Revision = rev
	d.mu.Lock()
	if cur, ok := d.held[key]; ok && cur.rev == h.rev {
		d.held[key] = held{room: room, rev: rev, expires: l.ExpiresAt()}
	}
	if old, ok := d.cache[key]; !ok || old.Revision < rev {
		d.cache[key] = l
	}
	d.mu.Unlock()
	return nil
}

// forget drops the held lease of key if it still is at rev.
func (d *Directory) forget(key string, rev uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, ok := d.held[key]; ok && h.rev == rev {
		delete(d.held, key)
	}
}

// Release gives up this node's lease on room (a Delete on its revision; a lease another node
// took over already is left alone).
func (d *Directory) Release(ctx context.Context, room signaling.RoomID) error {
	key := RoomKey(room)
	h, ok := d.heldLease(key)
	if !ok {
		return ErrNotHeld
	}
	d.forget(key, h.rev)
	err := d.kv.Delete(ctx, key, jetstream.LastRevision(h.rev))
	if err != nil && !revisionConflict(err) {
		return err
	}
	d.log.Info().Str("room", string(room)).Msg("room lease released")
	return nil
}

// renewAtOnce bounds the renewals of one RenewAll in flight at once.
const renewAtOnce = 16

// RenewAll renews every held lease (releasing those Keep no longer wants) and tells Lost of
// those lost.
func (d *Directory) RenewAll(ctx context.Context) {
	d.mu.Lock()
	rooms := make([]signaling.RoomID, 0, len(d.held))
	for _, h := range d.held {
		rooms = append(rooms, h.room)
	}
	d.mu.Unlock()
	// Renewed side by side: while the bucket does not answer, each try waits for its timeout, and
	// one after the other a node's last rooms were renewed seconds after the bucket came back.
	errs := make([]error, len(rooms))
	renew := make([]bool, len(rooms))
	slots := make(chan struct{}, renewAtOnce)
	var wg sync.WaitGroup
	for i, room := range rooms {
		if d.cfg.Keep != nil && !d.cfg.Keep(room) {
			if err := d.Release(ctx, room); err != nil && !errors.Is(err, ErrNotHeld) {
				d.log.Warn().Err(err).Str("room", string(room)).Msg("room lease not released")
			}
			continue
		}
		renew[i] = true
		slots <- struct{}{}
		wg.Add(1)
		go func() { // owned by RenewAll, which waits for it below
			defer wg.Done()
			errs[i] = d.Renew(ctx, room)
			<-slots
		}()
	}
	wg.Wait()
	for i, room := range rooms {
		if !renew[i] {
			continue
		}
		err := errs[i]
		switch {
		case err == nil, errors.Is(err, ErrNotHeld):
		case errors.Is(err, ErrLeaseLost):
			d.log.Warn().Err(err).Str("room", string(room)).Msg("room lease lost")
			if d.cfg.Lost != nil {
				d.cfg.Lost(room)
			}
		default:
			d.log.Warn().Err(err).Str("room", string(room)).Msg("room lease not renewed")
		}
	}
}

// Held lists the rooms whose leases this node holds, sorted.
func (d *Directory) Held() []signaling.RoomID {
	d.mu.Lock()
	out := make([]signaling.RoomID, 0, len(d.held))
	for _, h := range d.held {
		out = append(out, h.room)
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Cached returns room's lease as the watcher last saw it (no round trip; possibly stale).
func (d *Directory) Cached(room signaling.RoomID) (Lease, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.cache[RoomKey(room)]
	return l, ok
}

// Leases lists every lease the watcher has seen (expired ones included), sorted by room.
func (d *Directory) Leases() []Lease {
	d.mu.Lock()
	out := make([]Lease, 0, len(d.cache))
	for _, l := range d.cache {
		out = append(out, l)
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Room < out[j].Room })
	return out
}

// Now is the directory's clock.
func (d *Directory) Now() time.Time { return d.cfg.Now() }
