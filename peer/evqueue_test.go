package peer

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
)

// TestLoopQueueBound: a peer's loop queue holds maxLoopEvents events from its links and no more —
// an unreliable datagram past them is dropped and counted (Status.Dropped), a reliable message
// waits for room, or is released when the peer quits — and the storage a burst grew is let go
// once the loop drains the queue after holding little (docs/protocol.md §5 "Session: limits").
func TestLoopQueueBound(t *testing.T) {
	p, err := New(Config{Server: "http://queue.invalid", Room: "q", User: "u", App: &apiApp{}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	r := &remote{}
	for range maxLoopEvents {
		p.post(r, link.Unreliable, []byte{1})
	}
	if d := p.count.droppedIn.Load(); d != 0 {
		t.Fatalf("%d datagrams dropped below the bound of %d", d, maxLoopEvents)
	}
	p.post(r, link.Unreliable, []byte{2})
	if d := p.count.droppedIn.Load(); d != 1 {
		t.Fatalf("dropped %d past the bound, want 1", d)
	}
	if n := p.events.Len(); n != maxLoopEvents {
		t.Fatalf("queue holds %d events, want %d", n, maxLoopEvents)
	}

	posted := make(chan struct{})
	go func() { p.post(r, link.Reliable, []byte{3}); close(posted) }()
	<-p.events.Ready()
	if _, ok := p.events.Pop(); !ok {
		t.Fatal("a full queue popped nothing")
	}
	<-posted // the reliable message waited for the slot the loop freed
	if n := p.events.Len(); n != maxLoopEvents {
		t.Fatalf("queue holds %d events after the reliable push, want %d", n, maxLoopEvents)
	}

	close(p.quit)
	p.post(r, link.Reliable, []byte{4}) // returns: the peer is quitting
	for p.events.Len() > 0 {
		<-p.events.Ready()
		ev, _ := p.events.Pop()
		p.release(ev.data)
	}
	p.post(r, link.Unreliable, []byte{5}) // quiet again: the next drain lets the burst's ring go
	<-p.events.Ready()
	ev, _ := p.events.Pop()
	p.release(ev.data)
	if s := p.events.Slots(); s > idleLoopEvents {
		t.Fatalf("a drained queue keeps %d slots after a quiet spell, want at most %d", s, idleLoopEvents)
	}
}
