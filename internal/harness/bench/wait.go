package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
)

// wait polls cond every few milliseconds until it returns nil, ctx ends, a peer fails or
// timeout passes.
func wait(ctx context.Context, timeout time.Duration, what string, failed func() error, cond func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = cond(); last == nil {
			return nil
		}
		if failed != nil {
			if err := failed(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached in %v: %w", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// doAll runs fn on every peer's loop at once and waits for all of them.
func doAll(ctx context.Context, peers []*peer.Peer, fn func(i int, w *peer.World)) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Do(ctx, func(w *peer.World) { fn(i, w) })
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startProfile writes a CPU profile of this process to path until stop is called; with an empty
// path it does nothing.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// writeMemProfile writes a heap profile to path, if not empty; an error is logged only (the
// run it profiles is over).
func writeMemProfile(path string, log zerolog.Logger) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		log.Error().Err(err).Str("file", path).Msg("heap profile not written")
	}
}

// cpuTime returns the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
