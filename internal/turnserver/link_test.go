package turnserver

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/poll"
	"github.com/concordrtc/concord/peer/link"
)

// A pion connection between two Go peers with relay-only ICE is carried by
// the embedded TURN server on loopback: the selected pair is relay on both
// ends, data flows both ways, and the server counts what it relayed.
func TestPionLinkThroughRelay(t *testing.T) {
	s := newTestServer(t, Config{AllowPeers: []netip.Prefix{loopback8}})
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	servers := func(id string) []webrtc.ICEServer {
		u, p := s.Credentials(id)
		return []webrtc.ICEServer{{URLs: s.URLs()[:1], Username: u, Credential: p}}
	}
	apiA, err := link.NewAPI(link.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer apiA.Close()
	apiB, err := link.NewAPI(link.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer apiB.Close()

	var a, b atomic.Pointer[link.Conn]
	got := make(chan string, 4)
	deliver := func(to *atomic.Pointer[link.Conn]) func(link.Signal) error {
		return func(sig link.Signal) error {
			c := to.Load()
			if c == nil {
				return fmt.Errorf("no remote yet")
			}
			if err := c.HandleSignal(sig); err != nil {
				t.Errorf("HandleSignal(%s): %v", sig.Kind, err)
			}
			return nil
		}
	}
	collect := func(name string) link.Handler {
		return func(_ link.Channel, p []byte) {
			select {
			case got <- name + ":" + string(p):
			default:
			}
		}
	}
	cb, err := apiB.NewAnswerer(link.ConnConfig{
		Signal: deliver(&a), Logger: log, ICEServers: servers("bob/p2"), RelayOnly: true, Handler: collect("b"),
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Store(cb)
	defer cb.Close()
	ca, err := apiA.NewOfferer(link.ConnConfig{
		Signal: deliver(&b), Logger: log, ICEServers: servers("alice/p1"), RelayOnly: true, Handler: collect("a"),
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Store(ca)
	defer ca.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, c := range []*link.Conn{ca, cb} {
		if err := c.WaitReady(ctx); err != nil {
			t.Fatalf("link not ready: %v", err)
		}
	}
	for _, c := range []*link.Conn{ca, cb} {
		poll.Until(t, 5*time.Second, "a selected pair", func() error {
			local, remote, ok := c.SelectedPair()
			if !ok {
				return fmt.Errorf("none yet")
			}
			if local != link.CandidateRelay || remote != link.CandidateRelay {
				return fmt.Errorf("selected pair %s/%s, want relay/relay", local, remote)
			}
			return nil
		})
	}
	if err := ca.Send(link.Reliable, []byte("to b")); err != nil {
		t.Fatal(err)
	}
	if err := cb.Send(link.Reliable, []byte("to a")); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case m := <-got:
			seen[m] = true
		case <-ctx.Done():
			t.Fatalf("messages through the relay: got %v", seen)
		}
	}
	if !seen["b:to b"] || !seen["a:to a"] {
		t.Fatalf("got %v", seen)
	}
	if st := s.Stats(); st.Allocations < 2 || st.RelayedBytesOut == 0 || st.RelayedBytesIn == 0 {
		t.Fatalf("server stats %+v, want two allocations and relayed bytes", st)
	}
}
