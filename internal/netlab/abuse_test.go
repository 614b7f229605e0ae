package netlab_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/turn/v5"

	"github.com/concordrtc/concord/internal/netlab"
	"github.com/concordrtc/concord/internal/turnserver"
)

// labSecret is the CONCORD_SECRET of the abuse scenario's server: knowing it, the test mints
// TURN REST credentials itself (turnserver.DeriveKey, as serve does), valid or expired.
const labSecret = "netlab-abuse-scenario-secret-0123456789"

// metric reads one unlabelled sample from the server's /metrics.
func metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(serverURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics %s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
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

// TestLab6Abuse is scenario 6: the embedded TURN server is not an open relay. Forged and
// expired credentials are refused; with valid ones, permissions to 127.0.0.1, to the server's
// own address (outside its relay ports) and to a private range not admitted (home B's 10.2/16)
// are refused, while one to the admitted 100.64.0.0/10 and relay-to-relay between two members
// work; /metrics counts every refusal.
func TestLab6Abuse(t *testing.T) {
	lab := netlab.Get(t)
	concord(t)
	needFlags(t, "serve", "turn", "public-ip", "turn-allow-private")
	serveEnv(t, lab, []string{"CONCORD_SECRET=" + labSecret}, "--dedicated-host=false")
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
	for _, bad := range []string{"127.0.0.1:9", serverHTTP, net.JoinHostPort(lab.B.Addr.String(), "9")} {
		peer, _ := net.ResolveUDPAddr("udp4", bad)
		if err := alice.CreatePermission(peer); err == nil {
			t.Errorf("the relay admitted peer %s", bad)
		}
	}
	if got := metric(t, refusedPeers); got < peers0+3 {
		t.Errorf("%s went from %v to %v after three refused peers", refusedPeers, peers0, got)
	}
	// Admitted: the public side, and another member's relay address (relay to relay).
	if err := alice.CreatePermission(&net.UDPAddr{IP: netlab.PublicAddr.AsSlice(), Port: 9}); err != nil {
		t.Errorf("permission to the admitted %v: %v", netlab.PublicAddr, err)
	}
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
	t.Logf("refused: %v credentials, %v peers (metrics); relay %v ↔ %v works", metric(t, refusedCreds)-creds0, metric(t, refusedPeers)-peers0, relayA.LocalAddr(), relayB.LocalAddr())
}
