package link

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestTraceSetupSteps: ConnConfig.Trace hears ICE, DTLS and each channel's open, once each, on
// both ends of a link (what bench latejoin breaks a join down by). pion reports them on goroutines
// of its own, so their order is not checked.
func TestTraceSetupSteps(t *testing.T) {
	var mu sync.Mutex
	var steps [2][]string
	trace := func(side int) func(string) {
		return func(ev string) { mu.Lock(); steps[side] = append(steps[side], ev); mu.Unlock() }
	}
	p := newPair(t, pairOpts{traceA: trace(0), traceB: trace(1)})
	defer p.close()
	p.waitReady(t)
	want := []string{TraceICE, TraceDTLS, TraceChannelOpen, TraceChannelOpen}
	waitFor(t, 10*time.Second, "both ends traced every step", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(steps[0]) >= len(want) && len(steps[1]) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	for side, got := range steps {
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("end %d traced %q, want %q", side, got, want)
		}
	}
}
