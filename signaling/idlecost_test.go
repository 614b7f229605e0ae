package signaling

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestIdleMemberCost: an idle member costs the server one goroutine (its reader) and no queue
// (docs/benchmarks-history.md "Signaling: memory per member and join rate"): the writer runs only
// while there is something to write, and a drained queue keeps at most idleQueueCap slots.
func TestIdleMemberCost(t *testing.T) {
	e := newEnv(t, Config{MembershipLinger: time.Millisecond, PingInterval: time.Minute, PongWait: 2 * time.Minute})
	const n = 16
	for i := range n {
		ws := e.raw(nil)
		// Every later join is announced to this member, which reads no more: the announcements
		// wait in its socket's buffers, not on the server.
		rawSend(t, ws, fmt.Sprintf(`{"v":1,"type":"join","room":"r","user":"u%d","batch":true}`, i))
		if m := rawRead(t, ws); m["type"] != "joined" {
			t.Fatalf("member %d got %v", i, m)
		}
	}
	checkFor(t, waitTimeout, func() error {
		readers, writers := 0, 0
		for _, g := range ourGoroutines(serverMarkers) {
			switch {
			case strings.Contains(g, "signaling.(*conn).writeLoop"):
				writers++
			case strings.Contains(g, "signaling.(*conn).readLoop"):
				readers++
			}
		}
		if readers != n || writers != 0 {
			return fmt.Errorf("%d readers and %d writers for %d idle members, want %d and 0", readers, writers, n, n)
		}
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		for c := range e.srv.conns {
			c.qMu.Lock()
			q, pending := cap(c.queue), len(c.queue)-c.head
			c.qMu.Unlock()
			if pending != 0 || q > idleQueueCap {
				return fmt.Errorf("an idle member holds a queue of %d slots, %d frames", q, pending)
			}
		}
		return nil
	})
}

// TestDrainedQueueDropped: a burst's queue array goes once the writer has drained it, and the
// written front is reused before the array grows, so a queue that never drains stays bounded.
func TestDrainedQueueDropped(t *testing.T) {
	s := &Server{cfg: Config{SendQueue: 64}}
	c := newConn(s, nil, zerolog.Nop()).asWriter()
	for i := range 4 * idleQueueCap {
		if !c.enqueue([]byte{byte(i)}) {
			t.Fatalf("frame %d refused", i)
		}
	}
	for i := range 4 * idleQueueCap {
		if f, ok := c.pop(); !ok || f[0] != byte(i) {
			t.Fatalf("pop %d: %v %v", i, f, ok)
		}
	}
	if c.queue != nil {
		t.Fatalf("the drained queue keeps %d slots", cap(c.queue))
	}
	// A writer that keeps one frame behind: the array stays at its first size.
	for i := range 1000 {
		c.enqueue([]byte{byte(i)})
		if i > 0 {
			c.pop()
		}
		if cap(c.queue) > idleQueueCap {
			t.Fatalf("after %d frames, one pending, the queue has %d slots", i+1, cap(c.queue))
		}
	}
}
