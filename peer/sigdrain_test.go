package peer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// chanSig is a signaling client whose events the test queues.
type chanSig struct {
	fakeSig
	events chan signaling.Event
}

func (s *chanSig) Events() <-chan signaling.Event { return s.events }

// TestBurstSignalingNotStarved: a burst of joins queues signaling events (membership notices,
// offers, candidates) while the links' events and timers keep the loop busy. The loop takes the
// queued signaling events together (drainSignaling), so the signaling client's queue empties
// while the loop takes a few link events, not one signaling event for every link event the
// select picks at random: with one a step the client's queue of a host in a 1,024 burst passed
// three quarters and it shed offers on arrival, which their senders never hear of.
func TestBurstSignalingNotStarved(t *testing.T) {
	// Each queued signaling event is an error the loop logs; the log's writer, called on the
	// loop, reads how many link events are still queued when the last one is handled.
	const queued = sigBatch + 1 // one the select picks, the rest drained with it
	var p *Peer
	handled, leftAtLast := 0, -1
	w := writerFunc(func(b []byte) (int, error) {
		if strings.Contains(string(b), "signaling error") {
			if handled++; handled == queued {
				leftAtLast = p.events.Len()
			}
		}
		return len(b), nil
	})
	p, err := New(Config{Server: "http://drain.invalid", Room: "d", User: "u", App: &apiApp{}, Logger: zerolog.New(w)})
	if err != nil {
		t.Fatal(err)
	}
	sig := &chanSig{events: make(chan signaling.Event, queued)}
	for range queued {
		sig.events <- signaling.Error{Code: "test", Message: "queued in a burst"}
	}
	p.setSig(sig)
	// A link's datagrams the loop takes one a step (a remote it does not hold: each is let go).
	r := &remote{idx: 99}
	const linkEvents = 2000
	for range linkEvents {
		p.post(r, link.Unreliable, []byte{1})
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.loop(ctx) }()
	poll.Until(t, 10*time.Second, "the signaling events taken", func() error {
		if n := len(sig.events); n > 0 {
			return fmt.Errorf("%d signaling events still queued", n)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if handled != queued {
		t.Fatalf("the loop handled %d signaling events, want %d", handled, queued)
	}
	// With one signaling event a step, the random select took about one link event for each of
	// the 65 (fewer than 32 about once in 10,000 runs); drained, one or two.
	if took := linkEvents - leftAtLast; took >= 32 {
		t.Fatalf("the loop took %d link events while it took %d queued signaling events: signaling starved", took, queued)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
