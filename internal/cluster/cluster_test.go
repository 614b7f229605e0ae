package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

// testNode is a node of a test cluster: a signaling server behind an httptest server, routed by a
// Node. All nodes of a test share one embedded JetStream (the relay and the directory only need
// NATS; internal/durable tests clustering itself).
type testNode struct {
	name string
	node *Node
	sig  *signaling.Server
	http *httptest.Server
	stop func()
}

func testStore(t *testing.T) *durable.Store {
	t.Helper()
	s, err := durable.Open(durable.Config{Dir: t.TempDir(), Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func startNode(t *testing.T, st *durable.Store, name string, ttl time.Duration) *testNode {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("node", name).Logger()
	n, err := New(Config{Store: st, Name: name, LeaseTTL: ttl, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: 500 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	sig := signaling.New(signaling.Config{Router: n, NodeName: name, Store: st, Logger: log, ResumeGrace: 200 * time.Millisecond,
		PingInterval: 50 * time.Millisecond, PongWait: 300 * time.Millisecond})
	n.Attach(sig)
	hs := httptest.NewServer(sig.Handler())
	tn := &testNode{name: name, node: n, sig: sig, http: hs}
	done := false
	tn.stop = func() {
		if done {
			return
		}
		done = true
		hs.CloseClientConnections()
		_ = sig.Close()
		hs.Close()
		n.Close()
	}
	t.Cleanup(tn.stop)
	return tn
}

func dial(t *testing.T, url, user string, resume *signaling.Resume) *signaling.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := signaling.Dial(ctx, url, signaling.JoinOptions{Room: "r", User: user, Device: "d", Kind: signaling.KindBot, Resume: resume}, signaling.ClientConfig{})
	if err != nil {
		t.Fatalf("%s joins through %s: %v", user, url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// next waits for the client's next event of type T, skipping others.
func next[T signaling.Event](t *testing.T, c *signaling.Client) T {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatalf("events closed waiting for %T", *new(T))
			}
			if e, ok := ev.(T); ok {
				return e
			}
			if cl, ok := ev.(signaling.Closed); ok {
				t.Fatalf("closed waiting for %T: %v", *new(T), cl.Err)
			}
		case <-timeout:
			t.Fatalf("no %T within 10 s", *new(T))
		}
	}
}

func roomsOf(url string) ([]signaling.RoomInfo, error) {
	resp, err := http.Get(url + "/api/rooms")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rs []signaling.RoomInfo
	return rs, json.NewDecoder(resp.Body).Decode(&rs)
}

// TestRelay: members of one room join through two nodes; the one that reaches the room's owner
// second is relayed: both see each other, signal each other, are listed by either node's
// /api/rooms under the owner, and a leave travels back.
func TestRelay(t *testing.T) {
	st := testStore(t)
	a := startNode(t, st, "a", 3*time.Second)
	b := startNode(t, st, "b", 3*time.Second)
	ca := dial(t, a.http.URL, "alice", nil)
	if !a.node.Directory().Owns("r") {
		t.Fatal("a does not own the room its first member joined")
	}
	cb := dial(t, b.http.URL, "bob", nil)
	if b.node.Directory().Owns("r") {
		t.Fatal("b took a's room")
	}
	j := cb.Joined()
	if j.Self != 2 || len(j.Members) != 2 {
		t.Fatalf("bob joined as %d with %d members", j.Self, len(j.Members))
	}
	if m := next[signaling.MemberJoined](t, ca); m.Member.Index != 2 {
		t.Fatalf("alice saw %+v", m)
	}
	if err := cb.SendSignal(context.Background(), 1, signaling.SignalPayload{Kind: signaling.SignalOffer, SDP: "v=0 from bob"}); err != nil {
		t.Fatal(err)
	}
	if s := next[signaling.Signal](t, ca); s.From != 2 || s.Payload.SDP != "v=0 from bob" {
		t.Fatalf("alice got %+v", s)
	}
	if err := ca.SendSignal(context.Background(), 2, signaling.SignalPayload{Kind: signaling.SignalAnswer, SDP: "v=0 from alice"}); err != nil {
		t.Fatal(err)
	}
	if s := next[signaling.Signal](t, cb); s.From != 1 || s.Payload.SDP != "v=0 from alice" {
		t.Fatalf("bob got %+v", s)
	}
	for _, n := range []*testNode{a, b} {
		poll.Until(t, 5*time.Second, n.name+" lists the room under a", func() error {
			rs, err := roomsOf(n.http.URL)
			if err != nil {
				return err
			}
			if len(rs) != 1 || rs[0].Node != "a" || len(rs[0].Members) != 2 {
				return fmt.Errorf("rooms %+v", rs)
			}
			return nil
		})
	}
	// Pings and pongs cross the relay: bob stays well past the owner's pong wait.
	stay := time.NewTimer(time.Second)
	select {
	case ev := <-cb.Events():
		t.Fatalf("bob got %#v while idle", ev)
	case <-stay.C:
	}
	if rs, err := roomsOf(b.http.URL); err != nil || len(rs) != 1 || len(rs[0].Members) != 2 {
		t.Fatalf("after a second idle: %+v %v", rs, err)
	}
	if err := cb.Close(); err != nil {
		t.Fatal(err)
	}
	if l := next[signaling.MemberLeft](t, ca); l.Index != 2 || l.Reason != signaling.ReasonLeft {
		t.Fatalf("alice saw %+v", l)
	}
	poll.Until(t, 5*time.Second, "no relay left", func() error {
		a.node.mu.Lock()
		na := len(a.node.pipes)
		a.node.mu.Unlock()
		b.node.mu.Lock()
		nb := len(b.node.pipes)
		b.node.mu.Unlock()
		if na+nb != 0 {
			return fmt.Errorf("pipes a %d b %d", na, nb)
		}
		return nil
	})
}

// TestOwnerFailover: the owner node dies; its relayed member is told server_closing when the
// owner falls silent, and its resume through the surviving node waits out the dead owner's lease,
// takes the room over and gets back its peer index; a new member gets an index never issued.
func TestOwnerFailover(t *testing.T) {
	st := testStore(t)
	a := startNode(t, st, "a", 1500*time.Millisecond)
	b := startNode(t, st, "b", 1500*time.Millisecond)
	dial(t, a.http.URL, "alice", nil)
	cb := dial(t, b.http.URL, "bob", nil)
	j := cb.Joined()
	// a dies: no close frames, no lease release (its directory stops renewing).
	a.node.dying = true
	a.node.dir.Close()
	a.http.CloseClientConnections()
	a.node.Close()
	cl := next[signaling.Closed](t, cb)
	t.Logf("bob's relay ended: %v", cl.Err)
	start := time.Now()
	if !a.node.Directory().Holds("r") {
		t.Fatal("the dead node released its lease")
	}
	c2 := dial(t, b.http.URL, "bob", &signaling.Resume{Index: j.Self, Term: j.Term, Host: j.Host, Synced: true, Room: "r"})
	took := time.Since(start)
	t.Logf("resumed through b after %v", took)
	if took < 500*time.Millisecond {
		t.Errorf("resumed after %v: before the dead owner's lease could expire", took)
	}
	if c2.Joined().Self != j.Self {
		t.Fatalf("resumed as %d, held %d", c2.Joined().Self, j.Self)
	}
	if !b.node.Directory().Owns("r") {
		t.Fatal("b does not own the room it took over")
	}
	c3 := dial(t, b.http.URL, "carol", nil)
	if c3.Joined().Self <= j.Self {
		t.Fatalf("carol got index %d, not past %d", c3.Joined().Self, j.Self)
	}
}

// TestOpenRequestWildcardRefused: an open request whose relay id is a NATS wildcard is refused
// (bad_request) even for a room the node owns: accepted, the owner would have subscribed to
// concord.relay.*.up and read the frames of every relay in the cluster, joins and tokens included.
func TestOpenRequestWildcardRefused(t *testing.T) {
	st := testStore(t)
	a := startNode(t, st, "a", 2*time.Second)
	dial(t, a.http.URL, "alice", nil) // a owns room r
	if !a.node.Directory().Owns("r") {
		t.Fatal("a does not own r")
	}
	for _, id := range []string{"*", "a.*", ">"} {
		req := []byte(`{"v":1,"id":"` + id + `","room":"r","edge":"x"}`)
		msg, err := st.Conn().Request(openSubject("a"), req, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := DecodeOpenReply(msg.Data)
		if err != nil || reply.Code != OpenBadRequest {
			t.Fatalf("open request with relay id %q: reply %+v, %v; want bad_request", id, reply, err)
		}
	}
	if n := a.node.refused.count(reasonBadMessage); n != 3 {
		t.Fatalf("%d refusals counted, want 3", n)
	}
	a.node.mu.Lock()
	defer a.node.mu.Unlock()
	if len(a.node.pipes) != 0 {
		t.Fatalf("%d relays open on a", len(a.node.pipes))
	}
}
