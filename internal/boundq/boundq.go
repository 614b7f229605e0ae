package boundq

import "sync"

// Queue is a bounded FIFO of T. The zero value is not usable: make one with New.
type Queue[T any] struct {
	limit, idle int
	ready       chan struct{} // capacity 1: holds a token while the queue is not empty

	mu    sync.Mutex
	buf   []T           // guarded by mu: a ring of len(buf) slots
	head  int           // guarded by mu: the oldest item's slot
	n     int           // guarded by mu: items queued
	peak  int           // guarded by mu: the most items queued since the queue last drained
	space chan struct{} // guarded by mu: closed when an item is taken while PushWait waits; nil when none waits
}

// New returns an empty queue of at most limit items (at least 1) that keeps at most idle slots
// of storage once drained.
func New[T any](limit, idle int) *Queue[T] {
	return &Queue[T]{limit: max(limit, 1), idle: idle, ready: make(chan struct{}, 1)}
}

// Limit is the queue's bound.
func (q *Queue[T]) Limit() int { return q.limit }

// Len is the number of items queued.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Slots is the storage the queue holds, in items.
func (q *Queue[T]) Slots() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}

// Ready holds a token while the queue is not empty: the consumer receives from it, then Pops.
// Pop puts the token back while items remain.
func (q *Queue[T]) Ready() <-chan struct{} { return q.ready }

// TryPush queues v unless the queue is full.
func (q *Queue[T]) TryPush(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= q.limit {
		return false
	}
	q.pushLocked(v)
	return true
}

// PushWait queues v, waiting while the queue is full; false when stop or stop2 closed first (a
// nil channel never does).
func (q *Queue[T]) PushWait(v T, stop, stop2 <-chan struct{}) bool {
	for {
		q.mu.Lock()
		if q.n < q.limit {
			q.pushLocked(v)
			q.mu.Unlock()
			return true
		}
		if q.space == nil {
			q.space = make(chan struct{})
		}
		space := q.space
		q.mu.Unlock()
		select {
		case <-space:
		case <-stop:
			return false
		case <-stop2:
			return false
		}
	}
}

// pushLocked appends v, growing the ring when it is full; q.mu is held and q.n < q.limit.
func (q *Queue[T]) pushLocked(v T) {
	if q.n == len(q.buf) {
		grown := make([]T, min(max(2*len(q.buf), 4), q.limit))
		k := copy(grown, q.buf[q.head:])
		copy(grown[k:], q.buf[:q.head])
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
	q.peak = max(q.peak, q.n)
	if q.n == 1 {
		q.signal()
	}
}

// Pop takes the oldest item; false when the queue is empty.
func (q *Queue[T]) Pop() (T, bool) {
	var zero T
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	if q.n > 0 {
		q.signal()
	} else {
		// A burst's storage goes once the queue drains after holding at most a quarter of it:
		// not after the burst itself, so that bursts of one size in a row (a member's datagrams
		// every tick) reuse one ring instead of growing a new one each time.
		if len(q.buf) > q.idle && q.peak <= len(q.buf)/4 {
			q.buf, q.head = nil, 0
		}
		q.peak = 0
	}
	if q.space != nil {
		close(q.space)
		q.space = nil
	}
	return v, true
}

// signal puts Ready's token, if it is not there already; q.mu is held.
func (q *Queue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
