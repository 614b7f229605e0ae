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

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer/link"
)

// linkPair connects an offerer on apiA and an answerer on apiB, with the ICE servers each is
// handed, signaling in process; it waits until both are ready, checks that a message crosses
// each way, and closes both when the test ends.
func linkPair(t *testing.T, apiA, apiB *link.API, iceA, iceB []webrtc.ICEServer, relayOnly bool) (a, b *link.Conn) {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	var pa, pb atomic.Pointer[link.Conn]
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
	got := make(chan string, 16)
	collect := func(name string) link.Handler {
		return func(_ link.Channel, p []byte) {
			select {
			case got <- name + ":" + string(p):
			default:
			}
		}
	}
	b, err := apiB.NewAnswerer(link.ConnConfig{Signal: deliver(&pa), Logger: log, ICEServers: iceB, RelayOnly: relayOnly, Handler: collect("b")})
	if err != nil {
		t.Fatal(err)
	}
	pb.Store(b)
	t.Cleanup(func() { _ = b.Close() })
	a, err = apiA.NewOfferer(link.ConnConfig{Signal: deliver(&pb), Logger: log, ICEServers: iceA, RelayOnly: relayOnly, Handler: collect("a")})
	if err != nil {
		t.Fatal(err)
	}
	pa.Store(a)
	t.Cleanup(func() { _ = a.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []*link.Conn{a, b} {
		if err := c.WaitReady(ctx); err != nil {
			t.Fatalf("link not ready: %v", err)
		}
	}
	if err := a.Send(link.Reliable, []byte("to b")); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(link.Reliable, []byte("to a")); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case m := <-got:
			seen[m] = true
		case <-ctx.Done():
			t.Fatalf("messages over the link: got %v", seen)
		}
	}
	if !seen["b:to b"] || !seen["a:to a"] {
		t.Fatalf("got %v", seen)
	}
	return a, b
}

// waitPair polls c's selected candidate pair until ok accepts its types.
func waitPair(t *testing.T, c *link.Conn, ok func(local, remote string) error) {
	t.Helper()
	poll.Until(t, 5*time.Second, "the selected pair", func() error {
		local, remote, sel := c.SelectedPair()
		if !sel {
			return fmt.Errorf("none yet")
		}
		return ok(local, remote)
	})
}

// A pion connection between two Go peers with relay-only ICE is carried by the embedded TURN
// server on loopback: the selected pair is relay on both ends, data flows both ways, and the
// server counts what it relayed.
func TestPionLinkThroughRelay(t *testing.T) {
	s := newTestServer(t, Config{AllowPeers: []netip.Prefix{loopback8}})
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	servers := func(id string) []webrtc.ICEServer {
		u, p := s.Credentials(memberOf(id))
		return []webrtc.ICEServer{{URLs: s.URLs()[:1], Username: u, Credential: p}}
	}
	api := func() *link.API {
		a, err := link.NewAPI(link.Config{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	a, b := linkPair(t, api(), api(), servers("alice/p1"), servers("bob/p2"), true)
	for _, c := range []*link.Conn{a, b} {
		waitPair(t, c, func(local, remote string) error {
			if local != link.CandidateRelay || remote != link.CandidateRelay {
				return fmt.Errorf("selected pair %s/%s, want relay/relay", local, remote)
			}
			return nil
		})
	}
	if st := s.Stats(); st.Allocations < 2 || st.RelayedBytesOut == 0 || st.RelayedBytesIn == 0 {
		t.Fatalf("server stats %+v, want two allocations and relayed bytes", st)
	}
}
