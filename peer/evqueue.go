package peer

import "sync"

// maxLoopEvents bounds the loop's event queue: past it an unreliable datagram is dropped
// (Status.Dropped) and a reliable message or a link's state change waits, holding back its
// link's reader, until the loop takes one.
const maxLoopEvents = 4096

// idleLoopEvents is the largest queue storage kept once the queue drains; a bigger one, left by a
// burst, is dropped, so that an idle peer holds at most this many slots (40 bytes each).
const idleLoopEvents = 16

// eventQueue is the loop's event queue: first in, first out, at most max events. Its storage
// grows with what it holds and is let go once drained: a channel of maxLoopEvents slots, made up
// front, cost every idle member 160 KiB for a queue that holds a handful of events at a time. The
// links' goroutines push; only the loop pops, when ready holds a token.
type eventQueue struct {
	max   int
	ready chan struct{} // capacity 1: holds a token while the queue is not empty

	mu    sync.Mutex
	buf   []loopEvent   // guarded by mu: a ring of len(buf) slots
	head  int           // guarded by mu: the oldest event's slot
	n     int           // guarded by mu: events queued
	space chan struct{} // guarded by mu: closed when the loop takes an event while pushWait waits; nil when none waits
}

func newEventQueue(limit int) *eventQueue {
	return &eventQueue{max: limit, ready: make(chan struct{}, 1)}
}

// tryPush queues ev unless the queue is full.
func (q *eventQueue) tryPush(ev loopEvent) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= q.max {
		return false
	}
	q.pushLocked(ev)
	return true
}

// pushWait queues ev, waiting while the queue is full; false when quit closed first.
func (q *eventQueue) pushWait(ev loopEvent, quit <-chan struct{}) bool {
	for {
		q.mu.Lock()
		if q.n < q.max {
			q.pushLocked(ev)
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
		case <-quit:
			return false
		}
	}
}

// pushLocked appends ev, growing the ring when it is full; q.mu is held and q.n < q.max.
func (q *eventQueue) pushLocked(ev loopEvent) {
	if q.n == len(q.buf) {
		grown := make([]loopEvent, min(max(2*len(q.buf), 4), q.max))
		k := copy(grown, q.buf[q.head:])
		copy(grown[k:], q.buf[:q.head])
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = ev
	q.n++
	if q.n == 1 {
		q.signal()
	}
}

// pop takes the oldest event. The loop calls it after taking ready's token; the token is put back
// while events remain.
func (q *eventQueue) pop() (loopEvent, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return loopEvent{}, false
	}
	ev := q.buf[q.head]
	q.buf[q.head] = loopEvent{}
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	if q.n > 0 {
		q.signal()
	} else if len(q.buf) > idleLoopEvents {
		q.buf, q.head = nil, 0
	}
	if q.space != nil {
		close(q.space)
		q.space = nil
	}
	return ev, true
}

// signal puts ready's token, if it is not there already.
func (q *eventQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
