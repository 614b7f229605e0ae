package link

import (
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
)

// TestSelectedPair: both ends learn the candidate types of the pair ICE selected (pushed by
// ICE, never polled: polling pion's GetSelectedCandidatePair races with the transport's start,
// which the race detector caught in the chaos test).
func TestSelectedPair(t *testing.T) {
	defer test.TimeOut(30 * time.Second).Stop()
	defer test.CheckRoutines(t)()
	p := newPair(t, pairOpts{logger: testLogger(t)})
	defer p.close()
	if _, _, ok := p.a.SelectedPair(); ok {
		t.Fatal("a pair is reported before ICE ran")
	}
	p.waitReady(t)
	for _, c := range []*Conn{p.a, p.b} {
		waitFor(t, 5*time.Second, "a selected pair", func() bool { _, _, ok := c.SelectedPair(); return ok })
		local, remote, _ := c.SelectedPair()
		if local != CandidateHost || (remote != CandidateHost && remote != CandidatePrflx) {
			t.Errorf("selected pair %s/%s on loopback; want host and host or prflx", local, remote)
		}
	}
}
