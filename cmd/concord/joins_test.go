//go:build linux

package main

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestJoinBurst starts 64 bots in two bot processes at once against `concord serve` (docs/benchmarks-history.md "Crowds", the small version
// of `concord bench joins -n 512`): all are synced within the bound and the dedicated host keeps
// its room (no term change).
func TestJoinBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve and 64 WebRTC bots; skipped in -short mode")
	}
	const bots = 64
	bound := 30 * time.Second
	if raceEnabled() {
		bound = 60 * time.Second
	}
	res, err := runJoinBurst(context.Background(), joinBurst{
		exe: buildConcord(t), bots: bots, procs: 2, timeout: bound, stderr: zerolog.NewTestWriter(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.synced != bots {
		t.Errorf("%d of %d bots synced within %v", res.synced, bots, bound)
	}
	if res.procs != 2 || res.failed != 0 {
		t.Errorf("%d bot processes, %d bots failed: want 2 and 0", res.procs, res.failed)
	}
	if res.term != 1 {
		t.Errorf("room term %d after the burst: the dedicated host lost its room", res.term)
	}
}
