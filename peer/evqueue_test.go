package peer

import (
	"errors"
	"testing"
	"time"

	"github.com/concordrtc/concord/peer/link"
)

var errQueueTest = errors.New("queue test")

// TestEventQueueBound: the loop's queue holds maxLoopEvents events and no more — an unreliable
// datagram past them is refused (the caller drops and counts it), a reliable one waits until the
// loop takes an event, or gives up when the peer quits — and its events come out in order across
// the ring's growth and wrap.
func TestEventQueueBound(t *testing.T) {
	q := newEventQueue(maxLoopEvents)
	for i := range maxLoopEvents {
		if !q.tryPush(loopEvent{ch: link.Channel(i % 2), kind: uint8(i)}) {
			t.Fatalf("event %d refused below the bound", i)
		}
	}
	if q.tryPush(loopEvent{}) {
		t.Fatalf("event %d accepted past the bound of %d", maxLoopEvents+1, maxLoopEvents)
	}

	// A reliable push waits for room.
	pushed := make(chan bool, 1)
	go func() { pushed <- q.pushWait(loopEvent{kind: 200, closed: errQueueTest}, make(chan struct{})) }()
	select {
	case <-pushed:
		t.Fatal("pushWait returned while the queue was full")
	case <-time.After(50 * time.Millisecond): // a wait that must not end: nothing to poll for
	}
	// And gives up when the peer quits.
	quit := make(chan struct{})
	gaveUp := make(chan bool, 1)
	go func() { gaveUp <- q.pushWait(loopEvent{}, quit) }()
	close(quit)
	if ok := <-gaveUp; ok {
		t.Fatal("pushWait queued past the bound after quit")
	}

	<-q.ready
	ev, ok := q.pop()
	if !ok || ev.kind != 0 {
		t.Fatalf("first pop = %+v, %v; want event 0", ev, ok)
	}
	if ok := <-pushed; !ok {
		t.Fatal("pushWait gave up although the loop made room")
	}
	for i := 1; i < maxLoopEvents; i++ {
		<-q.ready
		ev, ok := q.pop()
		if !ok || ev.kind != uint8(i) {
			t.Fatalf("pop %d = kind %d, %v; want %d", i, ev.kind, ok, uint8(i))
		}
	}
	<-q.ready
	if ev, ok := q.pop(); !ok || ev.kind != 200 || ev.closed != errQueueTest {
		t.Fatalf("last pop = %+v, %v; want the waiting push", ev, ok)
	}
	select {
	case <-q.ready:
		t.Fatal("ready holds a token for an empty queue")
	default:
	}
	if _, ok := q.pop(); ok {
		t.Fatal("pop of an empty queue returned an event")
	}
}

// TestEventQueueStorage: the queue costs what it holds — nothing before the first event, a few
// slots while events trickle in, and a burst's storage is let go once the loop drains it.
func TestEventQueueStorage(t *testing.T) {
	q := newEventQueue(maxLoopEvents)
	if cap(q.buf) != 0 {
		t.Fatalf("a new queue holds %d slots", cap(q.buf))
	}
	for i := range 1000 { // a trickle: one event at a time
		q.tryPush(loopEvent{kind: uint8(i)})
		<-q.ready
		if ev, ok := q.pop(); !ok || ev.kind != uint8(i) {
			t.Fatalf("pop %d = %+v, %v", i, ev, ok)
		}
	}
	if len(q.buf) > idleLoopEvents {
		t.Fatalf("a trickle grew the queue to %d slots", len(q.buf))
	}
	for i := range 3000 { // a burst, drained with the ring wrapped part of the way
		q.tryPush(loopEvent{kind: uint8(i)})
		if i%3 == 0 {
			<-q.ready
			q.pop()
		}
	}
	if len(q.buf) < 2000 {
		t.Fatalf("the burst's %d events fit in %d slots", q.n, len(q.buf))
	}
	for q.n > 0 {
		<-q.ready
		q.pop()
	}
	if len(q.buf) > idleLoopEvents {
		t.Fatalf("a drained queue keeps %d slots (at most %d)", len(q.buf), idleLoopEvents)
	}
}
