package durable

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// DefaultQueue is the checkpoints a Writer holds when WriterConfig.Queue is zero.
const DefaultQueue = 8

// saver is what a Writer writes to (a *Store; tests inject failures).
type saver interface {
	SaveCheckpoint(ctx context.Context, c Checkpoint) error
}

// WriterConfig configures a Writer. The zero value works.
type WriterConfig struct {
	// Queue bounds the checkpoints waiting to be written. When it is full the oldest waiting one
	// is dropped (a later checkpoint of a room supersedes it). If zero, DefaultQueue.
	Queue int
	// Logger receives write errors. The zero value discards them.
	Logger zerolog.Logger
	// Registerer, if not nil, receives the checkpoint metrics (concord_checkpoint_*).
	Registerer prometheus.Registerer
}

// WriterStats are a Writer's counters.
type WriterStats struct {
	Queued, Written, Failed, Dropped uint64
	// Bytes is the size of the last checkpoint written.
	Bytes int64
}

// Writer writes checkpoints on its own goroutine, off the host loops. Submit never blocks.
type Writer struct {
	store saver
	log   zerolog.Logger
	q     chan Checkpoint
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex // Submit's drop-oldest against Close's drain

	queued, written, failed, dropped atomic.Uint64
	bytes                            atomic.Int64
	writeSeconds, loopSeconds        prometheus.Histogram
}

// NewWriter starts a writer to store.
func NewWriter(store saver, cfg WriterConfig) *Writer {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	w := &Writer{
		store: store, log: cfg.Logger,
		q: make(chan Checkpoint, cfg.Queue), quit: make(chan struct{}), done: make(chan struct{}),
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
		counter("concord_checkpoints_dropped_total", "Checkpoints dropped from a full queue (superseded by later ones).", &w.dropped)
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "concord_checkpoint_bytes", Help: "Size of the last checkpoint written."},
			func() float64 { return float64(w.bytes.Load()) }))
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "concord_checkpoint_queue", Help: "Checkpoints waiting to be written."},
			func() float64 { return float64(len(w.q)) }))
		r.MustRegister(w.writeSeconds, w.loopSeconds)
	}
	go w.run()
	return w
}

// Submit queues c for writing. It never blocks: with the queue full it drops the oldest waiting
// checkpoint. After Close it drops c.
func (w *Writer) Submit(c Checkpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.quit:
		w.dropped.Add(1)
		return
	default:
	}
	w.queued.Add(1)
	for {
		select {
		case w.q <- c:
			return
		default:
		}
		select {
		case <-w.q:
			w.dropped.Add(1)
		default:
		}
	}
}

// ObserveLoop records time a host loop spent encoding a checkpoint.
func (w *Writer) ObserveLoop(d time.Duration) { w.loopSeconds.Observe(d.Seconds()) }

// Stats returns the counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Queued: w.queued.Load(), Written: w.written.Load(), Failed: w.failed.Load(), Dropped: w.dropped.Load(), Bytes: w.bytes.Load()}
}

func (w *Writer) run() {
	defer close(w.done)
	for {
		select {
		case c := <-w.q:
			w.write(c)
		case <-w.quit:
			for {
				select {
				case c := <-w.q:
					w.write(c)
				default:
					return
				}
			}
		}
	}
}

func (w *Writer) write(c Checkpoint) {
	start := time.Now()
	err := w.store.SaveCheckpoint(context.Background(), c)
	w.writeSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		w.failed.Add(1)
		lv := w.log.Error()
		if errors.Is(err, ErrFenced) {
			lv = w.log.Warn()
		}
		lv.Err(err).Str("room", string(c.Room)).Msg("checkpoint not written")
		return
	}
	w.written.Add(1)
	w.bytes.Store(int64(len(c.Data)))
	w.log.Debug().Str("room", string(c.Room)).Uint64("term", uint64(c.Term)).Int("bytes", len(c.Data)).
		Dur("took", time.Since(start)).Msg("checkpoint written")
}

// Close writes what is queued and stops the writer. It is idempotent.
func (w *Writer) Close() {
	w.once.Do(func() {
		w.mu.Lock()
		close(w.quit)
		w.mu.Unlock()
	})
	<-w.done
}
