package bench

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestLateJoinSteps runs a small late join against a bench host process and checks that every
// join was traced step by step (link made … apply) and that the steps add up to joined → synced.
func TestLateJoinSteps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	s, err := LateJoin(ctx, LateJoinOptions{Entities: 300, Moving: 10, Joins: 3, HostCommand: helperHostCommand}, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.Joins != 3 || s.P50 <= 0 || s.SnapshotBytes == 0 {
		t.Fatalf("summary %+v", s)
	}
	for _, step := range append(phaseNames[:], "apply") {
		if !strings.Contains(s.Phases, step+" +") {
			t.Errorf("steps %q lack %q", s.Phases, step)
		}
	}
}

// TestJoinPhases: the steps of a trace run from joined to synced, a step before joined counting
// as 0; a missing step leaves no breakdown.
func TestJoinPhases(t *testing.T) {
	var tr joinTrace
	const ms = int64(time.Millisecond)
	for i := range numPhases {
		tr.at[i].Store(int64(10+i) * ms)
	}
	tr.at[phaseLink].Store(5 * ms) // before joined (10 ms)
	p, ok := tr.phases(10*ms, 30*ms)
	if !ok {
		t.Fatal("a full trace gave no breakdown")
	}
	var sum time.Duration
	for _, d := range p {
		sum += d
	}
	if p[phaseLink] != 0 || p[phaseOffer] != time.Millisecond || p[numPhases] != 13*time.Millisecond || sum != 20*time.Millisecond {
		t.Fatalf("phases %v (sum %v), want link 0, offer 1 ms, apply 13 ms, sum 20 ms", p, sum)
	}
	tr.at[phaseDTLS].Store(0)
	if _, ok := tr.phases(10*ms, 30*ms); ok {
		t.Fatal("a trace without DTLS gave a breakdown")
	}
}
