package durable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/signaling"
)

// DefaultQueue is the rooms whose checkpoints a Writer holds when WriterConfig.Queue is zero.
const DefaultQueue = 128

// saver is what a Writer writes to (a *Store; tests inject failures).
type saver interface {
	SaveCheckpoint(ctx context.Context, c Checkpoint) error
}

// WriterConfig configures a Writer. The zero value works.
type WriterConfig struct {
	// Queue bounds the rooms whose checkpoints wait to be written: a room has at most one
	// waiting checkpoint (a later one replaces it). When Queue rooms wait, the oldest waiting
	// checkpoint is dropped. If zero, DefaultQueue.
	Queue int
	// Logger receives write errors. The zero value discards them.
	Logger zerolog.Logger
	// Registerer, if not nil, receives the checkpoint metrics (concord_checkpoint_*).
	Registerer prometheus.Registerer
}

// WriterStats are a Writer's counters.
type WriterStats struct {
	Queued, Written, Failed, Dropped uint64
	// Refused counts checkpoints refused for good (over MaxCheckpoint): never written, never
	// tried again; the room keeps its previous checkpoint.
	Refused uint64
	// Bytes is the size of the last checkpoint written.
	Bytes int64
}

// Writer writes checkpoints on its own goroutine, off the host loops. Submit never blocks.
type Writer struct {
	store saver
	log   zerolog.Logger
	limit int
	wake  chan struct{} // capacity 1: something waits
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex // guards the following fields
	pending map[signaling.RoomID]Checkpoint
	order   []signaling.RoomID // rooms with a pending checkpoint, oldest first
	closed  bool
	// refusedRooms holds why each room's last checkpoint was refused, until one is written.
	refusedRooms map[signaling.RoomID]string

	queued, written, failed, dropped, refused atomic.Uint64
	bytes                                     atomic.Int64
	writeSeconds, loopSeconds                 prometheus.Histogram
}

// NewWriter starts a writer to store.
func NewWriter(store saver, cfg WriterConfig) *Writer {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	w := &Writer{
		store: store, log: cfg.Logger,
		limit: cfg.Queue, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		pending: map[signaling.RoomID]Checkpoint{}, refusedRooms: map[signaling.RoomID]string{},
		writeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "concord_checkpoint_write_seconds", Help: "Time to write one checkpoint to JetStream (off the host loop).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		loopSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "concord_checkpoint_loop_seconds", Help: "Time a host loop spent on checkpoint encoding in one tick.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 2, 14),
		}),
	}
	if r := cfg.Registerer; r != nil {
		counter := func(name, help string, v *atomic.Uint64) {
			r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) }))
		}
		counter("concord_checkpoints_queued_total", "Checkpoints handed to the writer.", &w.queued)
		counter("concord_checkpoints_written_total", "Checkpoints written to JetStream.", &w.written)
		counter("concord_checkpoints_failed_total", "Checkpoint writes that failed.", &w.failed)
		counter("concord_checkpoints_dropped_total", "Checkpoints not written: replaced by a later one of their room while waiting, or dropped from a full queue.", &w.dropped)
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "concord_durable_checkpoint_refused_total", Help: "Checkpoints refused for good, by reason (size: over MaxCheckpoint); the room keeps its previous checkpoint.",
			ConstLabels: prometheus.Labels{"reason": refusedSize},
		}, func() float64 { return float64(w.refused.Load()) }))
		r.MustRegister(refusedRoomsCollector{w})
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "concord_checkpoint_bytes", Help: "Size of the last checkpoint written."},
			func() float64 { return float64(w.bytes.Load()) }))
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "concord_checkpoint_queue", Help: "Checkpoints waiting to be written."},
			func() float64 { w.mu.Lock(); defer w.mu.Unlock(); return float64(len(w.order)) }))
		r.MustRegister(w.writeSeconds, w.loopSeconds)
	}
	go w.run()
	return w
}

// Submit queues c for writing. It never blocks: a waiting checkpoint of c's room is replaced; with
// Queue rooms waiting, the oldest waiting checkpoint is dropped. After Close it drops c. A
// checkpoint over MaxCheckpoint is refused at once (Refused): logged as an error, counted
// (concord_durable_checkpoint_refused_total), and the room reported (RefusedRooms) until one of
// its checkpoints is written; the stored checkpoint stays.
func (w *Writer) Submit(c Checkpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.dropped.Add(1)
		return
	}
	if len(c.Data) > MaxCheckpoint {
		w.refuseLocked(c, fmt.Errorf("%w: checkpoint of %d bytes, the limit is %d", ErrCheckpointTooLarge, len(c.Data), MaxCheckpoint))
		return
	}
	w.queued.Add(1)
	if _, ok := w.pending[c.Room]; ok {
		w.dropped.Add(1)
		w.pending[c.Room] = c
		return
	}
	if len(w.order) >= w.limit {
		delete(w.pending, w.order[0])
		w.order = w.order[1:]
		w.dropped.Add(1)
	}
	w.pending[c.Room] = c
	w.order = append(w.order, c.Room)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest waiting checkpoint.
func (w *Writer) next() (Checkpoint, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.order) == 0 {
		return Checkpoint{}, false
	}
	room := w.order[0]
	w.order = w.order[1:]
	c := w.pending[room]
	delete(w.pending, room)
	return c, true
}

// refusedSize is the reason label of a checkpoint over MaxCheckpoint.
const refusedSize = "size"

// refuseLocked records that c was refused for good for err (w.mu held).
func (w *Writer) refuseLocked(c Checkpoint, err error) {
	w.refused.Add(1)
	w.refusedRooms[c.Room] = refusedSize
	w.log.Error().Err(err).Str("room", string(c.Room)).Uint64("term", uint64(c.Term)).Int("bytes", len(c.Data)).
		Msg("checkpoint refused: the room keeps its previous checkpoint; durability resumes once its world fits")
}

// refusedNotRestored is the reason of a kept room whose host did not restore its checkpoint.
const refusedNotRestored = "not_restored"

// notRestored reports room as refused: its world does not descend from its stored checkpoint
// (App in Follow mode), so it is not checkpointed until its follower starts again.
func (w *Writer) notRestored(room signaling.RoomID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refusedRooms[room] = refusedNotRestored
}

// RefusedRooms returns the rooms whose last checkpoint was refused, and why ("size",
// "not_restored"); a room
// leaves it when one of its checkpoints is written.
func (w *Writer) RefusedRooms() map[signaling.RoomID]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.refusedRooms)
}

// refusedRoomsCollector serves concord_durable_room_checkpoint_refused{room,reason}: 1 for each
// room whose last checkpoint was refused.
type refusedRoomsCollector struct{ w *Writer }

var descRoomRefused = prometheus.NewDesc("concord_durable_room_checkpoint_refused",
	"1 while a room's last checkpoint was refused (it keeps its previous checkpoint).", []string{"room", "reason"}, nil)

func (c refusedRoomsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descRoomRefused }

func (c refusedRoomsCollector) Collect(ch chan<- prometheus.Metric) {
	for room, why := range c.w.RefusedRooms() {
		ch <- prometheus.MustNewConstMetric(descRoomRefused, prometheus.GaugeValue, 1, string(room), why)
	}
}

// ObserveLoop records time a host loop spent encoding a checkpoint.
func (w *Writer) ObserveLoop(d time.Duration) { w.loopSeconds.Observe(d.Seconds()) }

// Stats returns the counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Queued: w.queued.Load(), Written: w.written.Load(), Failed: w.failed.Load(), Dropped: w.dropped.Load(), Refused: w.refused.Load(), Bytes: w.bytes.Load()}
}

// Retry bounds: a write that failed for a reason other than fencing (JetStream unavailable while a
// cluster elects a stream leader after a node died, say) is tried again, first after retryMin,
// doubling to retryMax, until it succeeds or a later checkpoint of its room replaces it; the host
// writes no new one while its world does not change, so a lost write would lose the room's last
// moves. At Close the waiting and failing writes get closeBudget in all.
const (
	retryMin = 250 * time.Millisecond
	retryMax = 2 * time.Second
	// attemptTimeout bounds one write: a healthy JetStream answers in milliseconds, and a stream
	// without a leader (elections take seconds after a node died) is better tried again later
	// than waited for, so that the retries find the new leader as soon as there is one.
	attemptTimeout = 2 * time.Second
	// closeBudget bounds Close: the waiting checkpoints and the failed ones get this long in
	// all, so that a stopping node shuts its embedded server down cleanly within its grace.
	closeBudget = 1500 * time.Millisecond
)

func (w *Writer) run() {
	defer close(w.done)
	// retry holds the last failed checkpoint of each room (at most one per room this node hosts).
	retry := map[signaling.RoomID]Checkpoint{}
	backoff := retryMin
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	ctx := context.Background()
	drain := func() {
		for {
			c, ok := w.next()
			if !ok {
				return
			}
			delete(retry, c.Room)
			if len(retry) > 0 {
				// The store is failing: this one waits for the retry timer too, rather than
				// each waiting checkpoint spending an attempt's timeout in turn.
				retry[c.Room] = c
				continue
			}
			if !w.write(ctx, c) {
				backoff = retryMin
				t.Reset(backoff)
				retry[c.Room] = c
			}
		}
	}
	for {
		select {
		case <-w.wake:
			drain()
		case <-t.C:
			w.retry(ctx, retry)
			if len(retry) == 0 {
				backoff = retryMin
			} else {
				backoff = min(2*backoff, retryMax)
				t.Reset(backoff)
			}
		case <-w.quit:
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.Background(), closeBudget)
			defer cancel()
			drain()
			for len(retry) > 0 && ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(retryMin):
				}
				w.retry(ctx, retry)
			}
			for room := range retry {
				w.log.Error().Str("room", string(room)).Msg("checkpoint given up at shutdown")
			}
			return
		}
	}
}

// retry writes the failed checkpoints again; those written (or fenced) leave the map. It stops
// at the first that fails again: the store still fails, the rest wait for the next round.
func (w *Writer) retry(ctx context.Context, retry map[signaling.RoomID]Checkpoint) {
	for room, c := range retry {
		if !w.write(ctx, c) {
			return
		}
		delete(retry, room)
	}
}

// write writes c and reports whether it is done with: written, or refused for good (fenced).
func (w *Writer) write(ctx context.Context, c Checkpoint) bool {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	err := w.store.SaveCheckpoint(ctx, c)
	cancel()
	w.writeSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		if errors.Is(err, ErrCheckpointTooLarge) {
			// Refused for good: trying again would hold every other room's retries behind it.
			w.mu.Lock()
			w.refuseLocked(c, err)
			w.mu.Unlock()
			return true
		}
		w.failed.Add(1)
		if errors.Is(err, ErrFenced) {
			w.log.Warn().Err(err).Str("room", string(c.Room)).Msg("checkpoint not written")
			return true
		}
		w.log.Error().Err(err).Str("room", string(c.Room)).Msg("checkpoint not written; it will be tried again")
		return false
	}
	w.written.Add(1)
	w.bytes.Store(int64(len(c.Data)))
	w.mu.Lock()
	if _, ok := w.refusedRooms[c.Room]; ok {
		delete(w.refusedRooms, c.Room)
		w.log.Info().Str("room", string(c.Room)).Int("bytes", len(c.Data)).Msg("checkpoint written again after refusals")
	}
	w.mu.Unlock()
	w.log.Debug().Str("room", string(c.Room)).Uint64("term", uint64(c.Term)).Int("bytes", len(c.Data)).
		Dur("took", time.Since(start)).Msg("checkpoint written")
	return true
}

// Close writes what is queued and stops the writer. It is idempotent.
func (w *Writer) Close() {
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		close(w.quit)
	})
	<-w.done
}
