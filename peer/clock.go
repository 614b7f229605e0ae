package peer

import (
	"container/heap"
	"time"
)

// Clock is the loop's source of time: what time it is, and timers. Config.Clock injects one; tests
// use a manual clock to drive the roles step by step, without sleeps.
type Clock interface {
	Now() time.Time
	// NewTimer returns a stopped-or-running timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's one-shot timer, as time.Timer (Go 1.23 semantics: Reset and Stop need no
// draining).
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// realClock is the zero Config's clock: now (time.Now unless Config.Now says otherwise) and
// time.Timer.
type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time { return c.now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
func (t realTimer) Stop() bool                 { return t.t.Stop() }

// timers is the loop's timer queue: every delayed or periodic task of a peer is an entry here,
// run on the loop when its time comes. No goroutine waits for a timer; the loop waits on one
// Clock timer set to the earliest entry.
type timers struct {
	q   timerHeap
	seq uint64
}

type timerEntry struct {
	at     time.Time
	seq    uint64 // entries due at the same time run in the order they were added
	every  time.Duration
	fn     func(now time.Time)
	cancel bool
	index  int // in the heap; -1 once out of it
}

type timerHeap []*timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	e := x.(*timerEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}

// add runs fn at at, and every interval after it when every > 0.
func (t *timers) add(at time.Time, every time.Duration, fn func(now time.Time)) *timerEntry {
	t.seq++
	e := &timerEntry{at: at, seq: t.seq, every: every, fn: fn}
	heap.Push(&t.q, e)
	return e
}

// remove takes e out of the queue (a no-op when it already ran or was removed). Unlike cancel,
// which leaves the entry in the queue until its time, the loop's timer then never wakes for it:
// a sleeping member re-arms its one wake-up often (sleep.go).
func (t *timers) remove(e *timerEntry) {
	if e != nil && e.index >= 0 && e.index < len(t.q) && t.q[e.index] == e {
		heap.Remove(&t.q, e.index)
	}
}

// next returns the time of the earliest entry.
func (t *timers) next() (time.Time, bool) {
	if len(t.q) == 0 {
		return time.Time{}, false
	}
	return t.q[0].at, true
}

// pop removes and returns the earliest entry due at now, rescheduling a periodic one (a periodic
// entry that fell behind skips the beats it missed, as time.Ticker does).
func (t *timers) pop(now time.Time) *timerEntry {
	for len(t.q) > 0 && !t.q[0].at.After(now) {
		e := t.q[0]
		if e.cancel {
			heap.Pop(&t.q)
			continue
		}
		if e.every <= 0 {
			heap.Pop(&t.q)
			return e
		}
		run := *e
		for !e.at.After(now) {
			e.at = e.at.Add(e.every)
		}
		t.seq++
		e.seq = t.seq
		heap.Fix(&t.q, 0)
		return &run
	}
	return nil
}
