package link

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// closeWithin closes c on a goroutine and fails t if Close has not returned within d.
func closeWithin(t *testing.T, c *Conn, d time.Duration) {
	t.Helper()
	closed := make(chan struct{})
	go func() {
		_ = c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(d):
		t.Fatalf("Close did not return in %v", d)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Close returned with Done open")
	}
}

// TestCloseStuckInPionIsForced: a pion close stuck until its DTLS transport closes (as an SCTP
// Abort waits for a read loop blocked on it) is freed by closing the transports after
// closeBound; Close returns, counted as forced, not abandoned. Without the bound Close waited
// for ever (the region host's unload behind it, world.Server.Close: 6 minutes).
func TestCloseStuckInPionIsForced(t *testing.T) {
	// pion's close, once freed, still takes a few hundred ms (its Abort waits 200 ms for the
	// ABORT it can no longer send): the second wait must cover it.
	defer setCloseBoundForTest(2 * time.Second)()
	p := newPair(t, pairOpts{})
	defer p.close()
	p.waitReady(t)
	dtls := p.a.dtlsForTest()
	p.a.wrapClosePCForTest(func(closePC func() error) error {
		deadline := time.Now().Add(30 * time.Second)
		for dtls.State() != webrtc.DTLSTransportStateClosed && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return closePC()
	})
	before := CloseStuck()
	start := time.Now()
	closeWithin(t, p.a, 10*time.Second)
	t.Logf("closed in %v", time.Since(start))
	after := CloseStuck()
	if after.Forced != before.Forced+1 || after.Abandoned != before.Abandoned {
		t.Fatalf("stuck closes %+v → %+v, want one forced, none abandoned", before, after)
	}
}

// TestCloseStuckInPionIsAbandoned: a pion close that never returns, even with its transports
// closed, is abandoned after twice closeBound: Close returns and Done is closed, counted.
func TestCloseStuckInPionIsAbandoned(t *testing.T) {
	defer setCloseBoundForTest(200 * time.Millisecond)()
	p := newPair(t, pairOpts{})
	defer p.close()
	p.waitReady(t)
	release := make(chan struct{})
	defer close(release) // then pion's close runs, so the test leaves nothing behind
	p.a.wrapClosePCForTest(func(closePC func() error) error {
		<-release
		return closePC()
	})
	before := CloseStuck()
	closeWithin(t, p.a, 10*time.Second)
	after := CloseStuck()
	if after.Forced != before.Forced+1 || after.Abandoned != before.Abandoned+1 {
		t.Fatalf("stuck closes %+v → %+v, want one forced and abandoned", before, after)
	}
}
