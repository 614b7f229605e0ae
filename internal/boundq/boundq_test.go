package boundq

import (
	"testing"
	"time"
)

// TestBound: the queue holds limit items and no more — TryPush refuses past them, PushWait waits
// until the consumer takes one, or gives up when stopped — and items come out in order across
// the ring's growth and wrap.
func TestBound(t *testing.T) {
	const limit = 1000
	q := New[int](limit, 8)
	for i := range limit {
		if !q.TryPush(i) {
			t.Fatalf("item %d refused below the bound", i)
		}
	}
	if q.TryPush(-1) {
		t.Fatalf("item %d accepted past the bound of %d", limit+1, limit)
	}
	pushed := make(chan bool, 1)
	go func() { pushed <- q.PushWait(limit, nil, make(chan struct{})) }()
	select {
	case <-pushed:
		t.Fatal("PushWait returned while the queue was full")
	case <-time.After(50 * time.Millisecond): // nothing to poll for: it must not return
	}
	stop := make(chan struct{})
	gaveUp := make(chan bool, 1)
	go func() { gaveUp <- q.PushWait(-1, stop, nil) }()
	close(stop)
	if <-gaveUp {
		t.Fatal("PushWait queued past the bound after stop")
	}
	for i := 0; i <= limit; i++ {
		<-q.Ready()
		v, ok := q.Pop()
		if !ok || v != i {
			t.Fatalf("pop %d = %d, %v", i, v, ok)
		}
		if i == 0 && !<-pushed {
			t.Fatal("PushWait gave up although the consumer made room")
		}
	}
	select {
	case <-q.Ready():
		t.Fatal("Ready holds a token for an empty queue")
	default:
	}
	if _, ok := q.Pop(); ok {
		t.Fatal("Pop of an empty queue returned an item")
	}
}

// TestStorage: the queue costs what it holds — nothing before the first item, a few slots while
// items trickle in, one ring for bursts of one size in a row, and a burst's storage is let go
// once the queue drains after holding little.
func TestStorage(t *testing.T) {
	q := New[int](4096, 16)
	if q.Slots() != 0 {
		t.Fatalf("a new queue holds %d slots", q.Slots())
	}
	for i := range 1000 {
		q.TryPush(i)
		<-q.Ready()
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("pop %d = %d, %v", i, v, ok)
		}
	}
	if q.Slots() > 16 {
		t.Fatalf("a trickle grew the queue to %d slots", q.Slots())
	}
	next := 0
	for i := range 3000 { // a burst, drained with the ring wrapped part of the way
		q.TryPush(i)
		if i%3 == 0 {
			<-q.Ready()
			if v, _ := q.Pop(); v != next {
				t.Fatalf("pop = %d, want %d", v, next)
			}
			next++
		}
	}
	if q.Slots() < 2000 {
		t.Fatalf("the burst's %d items fit in %d slots", q.Len(), q.Slots())
	}
	for q.Len() > 0 {
		<-q.Ready()
		if v, _ := q.Pop(); v != next {
			t.Fatalf("pop = %d, want %d", v, next)
		}
		next++
	}
	burst := q.Slots()
	for range 10 { // bursts of 40 items, each drained: one ring, not a new one each time
		for i := range 40 {
			q.TryPush(i)
		}
		for q.Len() > 0 {
			<-q.Ready()
			q.Pop()
		}
	}
	if s := q.Slots(); s != 64 {
		t.Fatalf("bursts of 40 in a row: %d slots after them (the 3000 burst left %d), want 64", s, burst)
	}
	q.TryPush(1) // quiet again: the next drain lets the bursts' ring go
	<-q.Ready()
	q.Pop()
	if q.Slots() > 16 {
		t.Fatalf("a drained queue keeps %d slots after a quiet spell (at most 16)", q.Slots())
	}
}
