package netlab_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/turn/v5"

	"github.com/concordrtc/concord/internal/harness/netlab"
	"github.com/concordrtc/concord/internal/turnserver"
)

// labSecret is the CONCORD_SECRET of the abuse scenario's server: knowing it, the test mints
// TURN REST credentials itself (turnserver.DeriveKey, as serve does), valid or expired.
const labSecret = "netlab-abuse-scenario-secret-0123456789"

// labAdminKey is the CONCORD_ADMIN_KEY of the scenarios' servers with a secret: /metrics answers
// only to it there (an open server ignores it).
const labAdminKey = "netlab-admin-key"

// metrics returns the samples named name in the server's /metrics, by label set ("" for none,
// else the text between the braces).
func metrics(t *testing.T, name string) map[string]float64 {
	t.Helper()
	ops := *plain
	ops.bearer = labAdminKey
	return ops.metrics(t, name)
}

func (a *api) metrics(t *testing.T, name string) map[string]float64 {
	t.Helper()
	resp, err := a.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok {
			continue
		}
		labels := ""
		switch {
		case strings.HasPrefix(rest, "{"):
			labels, rest, ok = strings.Cut(rest[1:], "} ")
		case strings.HasPrefix(rest, " "):
			rest = rest[1:]
		default:
			ok = false // another metric whose name starts with name
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(rest, 64)
		if err != nil {
			t.Fatalf("/metrics %s{%s}: %v", name, labels, err)
		}
		out[labels] = f
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// metric reads a metric from the server's /metrics: its unlabelled sample, or the sum of its
// labelled ones (a refusal counter by reason).
func metric(t *testing.T, name string) float64 {
	t.Helper()
	m := metrics(t, name)
	if len(m) == 0 {
		t.Fatalf("/metrics has no %s", name)
	}
	sum := 0.0
	for _, v := range m {
		sum += v
	}
	return sum
}

// turnClient is a pion TURN client in ns (its socket and its Net live there).
func turnClient(t *testing.T, h netlab.Home, user, pass string) *turn.Client {
	t.Helper()
	conn, err := h.NS.ListenUDP(h.Addr.String() + ":0")
	if err != nil {
		t.Fatal(err)
	}
	nsNet, err := h.NS.Net()
	if err != nil {
		t.Fatal(err)
	}
	c, err := turn.NewClient(&turn.ClientConfig{
		STUNServerAddr: turnAddr, TURNServerAddr: turnAddr,
		Username: user, Password: pass, Conn: conn, Net: nsNet, RTO: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		_ = conn.Close()
	})
	return c
}

// TestLab6Abuse is scenario 6: the embedded TURN server is not an open relay, and its caps hold.
// Forged and
// expired credentials are refused; with valid ones, nothing reaches 127.0.0.1, the server's own
// address outside its relay ports or a private range not admitted (home B's 10.2.0.0/24), while
// the admitted 100.64.0.0/10 and relay to relay between two members work; an identity gets no
// allocation over its quota and no more than its byte rate; /metrics counts every refusal.
func TestLab6Abuse(t *testing.T) {
	lab := netlab.Get(t)
	const quota, maxBps = 3, 20000
	serveEnv(t, lab, []string{"CONCORD_SECRET=" + labSecret, "CONCORD_ADMIN_KEY=" + labAdminKey}, "--dedicated-host=false",
		fmt.Sprintf("--turn-user-quota=%d", quota), fmt.Sprintf("--turn-max-bps=%d", maxBps))
	key := turnserver.DeriveKey([]byte(labSecret))
	creds := func(id string, expiry time.Time) (string, string) {
		u := turnserver.Username(id, expiry)
		return u, turnserver.Password(key, u)
	}
	const refusedCreds, refusedPeers = "concord_turn_refused_credentials_total", "concord_turn_refused_peers_total"
	creds0, peers0 := metric(t, refusedCreds), metric(t, refusedPeers)

	// Forged: a well-formed, current username under a password not made with the key.
	u, _ := creds("mallory", time.Now().Add(time.Hour))
	if _, err := turnClient(t, lab.A, u, "Zm9yZ2VkIHBhc3N3b3JkIQ==").Allocate(); err == nil {
		t.Fatal("an allocation with a forged password succeeded")
	}
	// Expired: the right password for a username whose expiry has passed.
	u, pw := creds("mallory", time.Now().Add(-time.Minute))
	if _, err := turnClient(t, lab.A, u, pw).Allocate(); err == nil {
		t.Fatal("an allocation with expired credentials succeeded")
	}
	if got := metric(t, refusedCreds); got < creds0+2 {
		t.Fatalf("%s went from %v to %v after a forged and an expired credential", refusedCreds, creds0, got)
	}

	u, pw = creds("alice", time.Now().Add(time.Hour))
	alice := turnClient(t, lab.A, u, pw)
	relayA, err := alice.Allocate()
	if err != nil {
		t.Fatalf("allocation with valid credentials: %v", err)
	}
	defer relayA.Close()
	if ip := relayA.LocalAddr().(*net.UDPAddr).IP; !ip.Equal(netlab.ServerAddr.AsSlice()) {
		t.Fatalf("relay address %v, want the server's public IP %v", relayA.LocalAddr(), netlab.ServerAddr)
	}
	// Three sinks the relay must not reach: the server's loopback, the server's own address on a
	// port outside the relay range, and home B's private address (10/8 is not admitted); and
	// one it may reach, on the admitted public side, to show the path works.
	sinks := map[string]*net.UDPConn{}
	for name, at := range map[string]struct {
		ns   netlab.NS
		addr string
	}{
		"loopback": {lab.Server, "127.0.0.1:50001"}, // a loopback service on a port of the relay range
		"server":   {lab.Server, netlab.ServerAddr.String() + ":7881"},
		"private":  {lab.B.NS, lab.B.Addr.String() + ":0"},
		"admitted": {lab.Public, netlab.PublicAddr.String() + ":0"},
	} {
		c, err := at.ns.ListenUDP(at.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sinks[name] = c
	}
	waitFor(t, 10*time.Second, "a datagram through the relay to the admitted public side", func() error {
		if _, err := relayA.WriteTo([]byte("admitted"), sinks["admitted"].LocalAddr()); err != nil {
			return err
		}
		if n, from, err := readWithin(sinks["admitted"], 200*time.Millisecond); err != nil || from.String() != relayA.LocalAddr().String() {
			return fmt.Errorf("read %d bytes from %v: %v", n, from, err)
		}
		return nil
	})
	// A refused peer fails at the permission (403) or, for the server's own IP (which needs a
	// permission for relay to relay), its datagrams are dropped: either way nothing arrives.
	for _, name := range []string{"loopback", "server", "private"} {
		for range 3 {
			_, _ = relayA.WriteTo([]byte("refused"), sinks[name].LocalAddr())
		}
	}
	for _, name := range []string{"loopback", "server", "private"} {
		if n, from, err := readWithin(sinks[name], 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the relay delivered %d bytes from %v to the %s sink %v (%v)", n, from, name, sinks[name].LocalAddr(), err)
		}
	}
	if got := metric(t, refusedPeers); got < peers0+3 {
		t.Errorf("%s went from %v to %v after three refused peers", refusedPeers, peers0, got)
	}
	// Relay to relay between two members of the server works.
	u, pw = creds("bob", time.Now().Add(time.Hour))
	relayB, err := turnClient(t, lab.B, u, pw).Allocate()
	if err != nil {
		t.Fatalf("bob's allocation: %v", err)
	}
	defer relayB.Close()
	// Each side writes once (creating its permission) until a datagram makes it across.
	msg := []byte("relay to relay")
	buf := make([]byte, 64)
	waitFor(t, 10*time.Second, "a datagram from alice's relay to bob's", func() error {
		if _, err := relayB.WriteTo([]byte("hi"), relayA.LocalAddr()); err != nil {
			return fmt.Errorf("bob: %w", err)
		}
		if _, err := relayA.WriteTo(msg, relayB.LocalAddr()); err != nil {
			return fmt.Errorf("alice: %w", err)
		}
		_ = relayB.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, from, err := relayB.ReadFrom(buf)
		if err != nil {
			return err
		}
		if string(buf[:n]) != string(msg) || from.String() != relayA.LocalAddr().String() {
			return fmt.Errorf("bob got %q from %v", buf[:n], from)
		}
		return nil
	})

	// Caps: one identity holds at most quota allocations at once (from as many sockets)...
	const refusedAllocs, rateDropped = "concord_turn_refused_allocations_total", "concord_turn_rate_dropped_total"
	allocs0, drops0 := metric(t, refusedAllocs), metric(t, rateDropped)
	u, pw = creds("greedy", time.Now().Add(time.Hour))
	for i := range quota + 1 {
		relay, err := turnClient(t, lab.A, u, pw).Allocate()
		if i < quota && err != nil {
			t.Fatalf("greedy's allocation %d of %d: %v", i+1, quota, err)
		}
		if i == quota && err == nil {
			t.Fatalf("greedy's allocation %d succeeded over the quota of %d", i+1, quota)
		}
		if err == nil {
			defer relay.Close()
		}
	}
	if got := metric(t, refusedAllocs); got < allocs0+1 {
		t.Errorf("%s went from %v to %v after an allocation over the quota", refusedAllocs, allocs0, got)
	}
	// ... and the relay carries at most maxBps for it: a burst of 10 times that is cut down.
	burst := make([]byte, 1000)
	sent := 0
	for range 10 * maxBps / len(burst) {
		if _, err := relayA.WriteTo(burst, sinks["admitted"].LocalAddr()); err != nil {
			t.Fatal(err)
		}
		sent += len(burst)
	}
	got := 0
	for {
		n, _, err := readWithin(sinks["admitted"], 500*time.Millisecond)
		if err != nil {
			break
		}
		got += n
	}
	// What passes is about one second's worth (the cap's burst): some, and not much more.
	if got == 0 || got > 2*maxBps || metric(t, rateDropped) <= drops0 {
		t.Errorf("a %d-byte burst over a %d B/s cap: %d bytes arrived, %s went from %v to %v", sent, maxBps, got, rateDropped, drops0, metric(t, rateDropped))
	}
	t.Logf("refused: %v credentials, %v peers, %v allocations over the quota, %v datagrams over the rate (%d of %d bytes of a burst arrived) (metrics); relay %v ↔ %v works",
		metric(t, refusedCreds)-creds0, metric(t, refusedPeers)-peers0, metric(t, refusedAllocs)-allocs0, metric(t, rateDropped)-drops0, got, sent, relayA.LocalAddr(), relayB.LocalAddr())
}
