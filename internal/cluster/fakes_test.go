package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// memKV is an in-memory KV bucket with the revision checks of JetStream's: the room directory
// runs on it in the placement tests, without a nats-server. Only the methods the directory uses
// are implemented (the embedded interface is nil: any other panics). Delete ignores its
// LastRevision option (jetstream's option type is opaque): the tests release only leases they
// hold.
type memKV struct {
	jetstream.KeyValue

	mu       sync.Mutex // guards the following fields
	rev      uint64
	entries  map[string]*memEntry
	watchers []*memWatcher
	writes   int // successful writes (Create, Update, Delete)
}

func newMemKV() *memKV { return &memKV{entries: map[string]*memEntry{}} }

type memEntry struct {
	key   string
	value []byte
	rev   uint64
	op    jetstream.KeyValueOp
}

func (e *memEntry) Bucket() string                  { return "concord_directory" }
func (e *memEntry) Key() string                     { return e.key }
func (e *memEntry) Value() []byte                   { return e.value }
func (e *memEntry) Revision() uint64                { return e.rev }
func (e *memEntry) Created() time.Time              { return time.Time{} }
func (e *memEntry) Delta() uint64                   { return 0 }
func (e *memEntry) Operation() jetstream.KeyValueOp { return e.op }

func (kv *memKV) Get(_ context.Context, key string) (jetstream.KeyValueEntry, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	e, ok := kv.entries[key]
	if !ok || e.op != jetstream.KeyValuePut {
		return nil, jetstream.ErrKeyNotFound
	}
	return e, nil
}

// put writes key at the next revision and tells the watchers; kv.mu is held.
func (kv *memKV) put(key string, value []byte, op jetstream.KeyValueOp) uint64 {
	kv.rev++
	kv.writes++
	e := &memEntry{key: key, value: append([]byte(nil), value...), rev: kv.rev, op: op}
	kv.entries[key] = e
	for _, w := range kv.watchers {
		w.send(e)
	}
	return kv.rev
}

func (kv *memKV) Create(_ context.Context, key string, value []byte, _ ...jetstream.KVCreateOpt) (uint64, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if e, ok := kv.entries[key]; ok && e.op == jetstream.KeyValuePut {
		return 0, jetstream.ErrKeyExists
	}
	return kv.put(key, value, jetstream.KeyValuePut), nil
}

func (kv *memKV) Update(_ context.Context, key string, value []byte, last uint64) (uint64, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if e, ok := kv.entries[key]; !ok || e.rev != last {
		return 0, jetstream.ErrKeyRevisionMismatch
	}
	return kv.put(key, value, jetstream.KeyValuePut), nil
}

func (kv *memKV) Delete(_ context.Context, key string, _ ...jetstream.KVDeleteOpt) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.put(key, nil, jetstream.KeyValueDelete)
	return nil
}

// WatchAll sends every live entry, then nil, then every write, as JetStream's watcher does.
func (kv *memKV) WatchAll(context.Context, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	w := &memWatcher{kv: kv, c: make(chan jetstream.KeyValueEntry, 4096)}
	for _, e := range kv.entries {
		if e.op == jetstream.KeyValuePut {
			w.send(e)
		}
	}
	w.send(nil)
	kv.watchers = append(kv.watchers, w)
	return w, nil
}

// revisions is the revision of every live key.
func (kv *memKV) revisions() map[string]uint64 {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	out := map[string]uint64{}
	for k, e := range kv.entries {
		if e.op == jetstream.KeyValuePut {
			out[k] = e.rev
		}
	}
	return out
}

func (kv *memKV) writeCount() int {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.writes
}

type memWatcher struct {
	kv      *memKV
	c       chan jetstream.KeyValueEntry
	stopped bool // guarded by kv.mu
}

// send queues e; kv.mu is held. The buffer is far larger than any test's writes.
func (w *memWatcher) send(e jetstream.KeyValueEntry) {
	if !w.stopped {
		w.c <- e
	}
}

func (w *memWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.c }

func (w *memWatcher) Stop() error {
	w.kv.mu.Lock()
	defer w.kv.mu.Unlock()
	if !w.stopped {
		w.stopped = true
		close(w.c)
	}
	return nil
}

// manualClock is a Clock that moves only when the test says so; its timers fire when Advance
// passes their time.
type manualClock struct {
	mu     sync.Mutex // guards the following fields
	now    time.Time
	timers []*manualTimer
}

func newManualClock() *manualClock { return &manualClock{now: time.Unix(1_700_000_000, 0)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{clock: c, c: make(chan time.Time, 1), at: c.now.Add(d), active: true}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock by d and fires the timers due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			select {
			case t.c <- c.now:
			default:
			}
		}
	}
}

type manualTimer struct {
	clock  *manualClock
	c      chan time.Time
	at     time.Time // guarded by clock.mu
	active bool      // guarded by clock.mu
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.active
	t.at, t.active = t.clock.now.Add(d), true
	select { // Go 1.23 semantics: no stale value after Reset
	case <-t.c:
	default:
	}
	return was
}

func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.active
	t.active = false
	select {
	case <-t.c:
	default:
	}
	return was
}
