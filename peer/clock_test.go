package peer

import (
	"slices"
	"testing"
	"time"
)

// The loop's timer queue runs entries in time order (insertion order at equal times), and a
// periodic entry that fell behind skips the beats it missed, as time.Ticker does.
func TestTimers(t *testing.T) {
	var q timers
	t0 := time.Unix(0, 0)
	var got []string
	q.add(t0.Add(30*time.Millisecond), 0, func(time.Time) { got = append(got, "once@30") })
	q.add(t0.Add(10*time.Millisecond), 10*time.Millisecond, func(now time.Time) { got = append(got, "tick") })
	q.add(t0.Add(30*time.Millisecond), 0, func(time.Time) { got = append(got, "once@30b") })
	run := func(now time.Time) {
		for e := q.pop(now); e != nil; e = q.pop(now) {
			e.fn(now)
		}
	}
	run(t0.Add(5 * time.Millisecond))
	if len(got) != 0 {
		t.Fatalf("ran early: %v", got)
	}
	run(t0.Add(30 * time.Millisecond))
	// The tick was due at 10 and runs once (the beats at 20 and 30 are skipped: next at 40); the
	// two one-shots at 30 keep their order.
	if want := []string{"tick", "once@30", "once@30b"}; !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	got = got[:0]
	run(t0.Add(95 * time.Millisecond)) // fell behind by several beats: one tick, not six
	if !slices.Equal(got, []string{"tick"}) {
		t.Fatalf("after falling behind ran %v, want one tick", got)
	}
	if at, ok := q.next(); !ok || !at.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("next = %v %v, want the beat at 100ms", at, ok)
	}
}
