// Package worldcheck is the world labs' invariant as code: an observer of a world of regions
// (docs/protocol.md §11) never holds two avatars of one player in its merged view. Watch samples
// observers' views while a lab runs; the world package's labs and cmd/concord's process lab use
// it. Only tests import it.
package worldcheck

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/world"
)

// Watch samples observers' merged views until Stop.
type Watch struct {
	looks      atomic.Int64
	mu         sync.Mutex // guards violations
	violations []string
	stop, done chan struct{}
}

// Start looks at each observer's view in turn, every interval (0: as fast as the views answer),
// counting the avatars of schema player per owner.
func Start(ctx context.Context, observers []*world.Client, player schema.ID, every time.Duration) *Watch {
	w := &Watch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var tick <-chan time.Time
		if every > 0 {
			t := time.NewTicker(every) // a sampling rate, not a wait for anything
			defer t.Stop()
			tick = t.C
		}
		for {
			for _, obs := range observers {
				if tick != nil {
					select {
					case <-w.stop:
						return
					case <-tick:
					}
				} else {
					select {
					case <-w.stop:
						return
					default:
					}
				}
				w.look(ctx, obs, player)
			}
		}
	}()
	return w
}

// look takes one observation of obs's view.
func (w *Watch) look(ctx context.Context, obs *world.Client, player schema.ID) {
	vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	v := obs.View(vctx)
	cancel()
	seen := map[string]int{}
	for _, e := range v {
		if e.Schema == player {
			seen[e.Owner]++
		}
	}
	for owner, n := range seen {
		if n > 1 {
			w.mu.Lock()
			w.violations = append(w.violations, fmt.Sprintf("%s saw %d avatars of %s", obs.Self(), n, owner))
			w.mu.Unlock()
		}
	}
	w.looks.Add(1)
}

// Stop ends the sampling, waits for it, and returns the number of observations and every
// violation seen.
func (w *Watch) Stop() (looks int64, violations []string) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.looks.Load(), append([]string(nil), w.violations...)
}
