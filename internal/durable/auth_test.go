package durable

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"github.com/concordrtc/concord/internal/testkit/testcert"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// TestClusterRefusesUnauthenticatedConfig: a cluster whose routes would take anyone does not
// start (ErrInsecureCluster) unless Insecure says so; a route address must name its interface.
func TestClusterRefusesUnauthenticatedConfig(t *testing.T) {
	c := ClusterConfig{Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"nats-route://127.0.0.1:6223"}}
	if _, err := Open(Config{Dir: t.TempDir(), Cluster: c}); !errors.Is(err, ErrInsecureCluster) {
		t.Fatalf("Open of an unauthenticated cluster: %v, want ErrInsecureCluster", err)
	}
	c.Insecure = true
	if err := c.Check(); err != nil {
		t.Fatalf("an explicitly insecure cluster: %v", err)
	}
	c.Insecure, c.Secret = false, "s"
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	for _, listen := range []string{"", ":6222"} {
		c.Listen = listen
		if err := c.Check(); err == nil {
			t.Fatalf("route address %q accepted: routes would listen on every interface unasked", listen)
		}
	}
	if err := (ClusterConfig{Name: "c", TLSCert: "cert.pem"}).Check(); err == nil {
		t.Fatal("route TLS without a key and CA accepted")
	}
}

// TestRouteSecretDerived: the route password is a function of the secret under a label, not the
// secret itself.
func TestRouteSecretDerived(t *testing.T) {
	a, b := RouteSecret([]byte("k1")), RouteSecret([]byte("k2"))
	if a == b || strings.Contains(a, "k1") || len(a) != 64 || a != RouteSecret([]byte("k1")) {
		t.Fatalf("RouteSecret: %q, %q", a, b)
	}
}

// stranger starts a nats-server that tries to join the "test" cluster through routes (with the
// credentials routes carry, if any) and returns it with a connection to it.
func stranger(t *testing.T, name string, routes []*url.URL) (*server.Server, *nats.Conn) {
	t.Helper()
	return startStranger(t, name, routes, nil)
}

// startStranger starts the nats-server name routing to routes (over TLS with tc, when not nil) on
// loopback, and connects to it in process; both end with t.
func startStranger(t *testing.T, name string, routes []*url.URL, tc *tls.Config) (*server.Server, *nats.Conn) {
	t.Helper()
	cluster := server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: server.RANDOM_PORT}
	if tc != nil {
		cluster.TLSConfig, cluster.TLSTimeout = tc, 2
	}
	ns, err := server.NewServer(&server.Options{ServerName: name, Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true,
		Cluster: cluster, Routes: routes})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("stranger not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return ns, nc
}

// routedTo reports whether ns has a route to the server named name.
func routedTo(t *testing.T, ns *server.Server, name string) bool {
	t.Helper()
	rz, err := ns.Routez(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rz.Routes {
		if r.RemoteName == name {
			return true
		}
	}
	return false
}

// TestClusterStrangerCannotRoute: a nats-server that reaches the cluster's route ports without
// the route password (none, or a wrong one) forms no route, and a client of it reads nothing the
// cluster publishes, while a server with the password joins and reads (the control: the ports
// were reachable and tried). Without route authorization the strangers join the routes and read
// the checkpoints and join frames (docs/security.md §7).
func TestClusterStrangerCannotRoute(t *testing.T) {
	stores := openCluster(t)
	var plain, wrong, right []*url.URL
	for _, s := range stores {
		port := s.ns.ClusterAddr().Port
		u := func(user *url.Userinfo) *url.URL {
			return &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", port), User: user}
		}
		plain = append(plain, u(nil))
		wrong = append(wrong, u(url.UserPassword(RouteUser, "guessed")))
		right = append(right, u(url.UserPassword(RouteUser, testRouteSecret)))
	}
	nsPlain, ncPlain := stranger(t, "stranger-plain", plain)
	nsWrong, ncWrong := stranger(t, "stranger-wrong", wrong)
	_, ncFriend := stranger(t, "friend", right)

	var mu sync.Mutex
	got := map[string]int{}
	for name, nc := range map[string]*nats.Conn{"stranger-plain": ncPlain, "stranger-wrong": ncWrong, "friend": ncFriend} {
		if _, err := nc.Subscribe(">", func(*nats.Msg) { mu.Lock(); got[name]++; mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// The friend joins every node; the strangers, started at the same time and retrying at the
	// same pace, have been refused by then.
	poll.Until(t, 30*time.Second, "the friend routed to every node", func() error {
		for _, s := range stores {
			if !routedTo(t, s.ns, "friend") {
				return fmt.Errorf("%s has no route to the friend", s.NodeName())
			}
		}
		return nil
	})
	ctx := context.Background()
	poll.Until(t, 30*time.Second, "the friend reads what the cluster publishes", func() error {
		if err := stores[0].nc.Publish("concord.relay.probe", []byte("join frame")); err != nil {
			return err
		}
		if err := stores[0].SaveCheckpoint(ctx, Checkpoint{Room: "arena", Term: 1, Clock: 1, Data: []byte{1}}); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if got["friend"] == 0 {
			return errors.New("nothing yet")
		}
		return nil
	})
	for _, ns := range []*server.Server{nsPlain, nsWrong} {
		if n := ns.NumRoutes(); n != 0 {
			t.Errorf("%s has %d routes, want 0", ns.Name(), n)
		}
		for _, s := range stores {
			if routedTo(t, s.ns, ns.Name()) {
				t.Errorf("%s routed to %s", s.NodeName(), ns.Name())
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got["stranger-plain"] != 0 || got["stranger-wrong"] != 0 {
		t.Errorf("strangers read cluster subjects: %v", got)
	}
}

// TestEmbeddedClientPortTakesOnlyThisProcess: a clustered node's embedded server has a loopback
// client port (nats-server starts routes only once it listens), but a local user connecting to it
// is refused; only the in-process connection, with the password drawn at start, gets in.
func TestEmbeddedClientPortTakesOnlyThisProcess(t *testing.T) {
	ports := freePorts(t, 2)
	// A node of a cluster whose other node is down: its JetStream waits for a quorum, but its
	// server, built by startEmbedded, is up.
	st := &Store{cfg: Config{Dir: t.TempDir(), NodeName: "n1", Timeout: 10 * time.Second, Linger: time.Millisecond,
		Cluster: ClusterConfig{Name: "solo", Listen: fmt.Sprintf("127.0.0.1:%d", ports[0]), Routes: []string{fmt.Sprintf("nats-route://127.0.0.1:%d", ports[1])}, Secret: "x"}}}
	if err := st.startEmbedded(); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u := st.ns.ClientURL()
	if !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Fatalf("client port %s, want loopback", u)
	}
	if nc, err := nats.Connect(u, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatalf("a local client connected to the embedded server's port %s without the process's password", u)
	}
	if !st.nc.IsConnected() {
		t.Fatal("the in-process connection is down")
	}
}

// poisoned is a well-formed stream that would freeze a room: an honest value, one stamped
// 2³²−1, a deletion at version 0xffff of every spawnable number, a deletion of a reserved number.
func poisoned() []byte {
	var b []byte
	m := crdt.Message{Type: crdt.PutComponent, Entity: crdt.NewEntity(600, 0), Component: 2000, Timestamp: 10, Data: []byte("ok")}
	b = crdt.AppendMessage(b, &m)
	m = crdt.Message{Type: crdt.PutComponent, Entity: crdt.NewEntity(601, 0), Component: 2000, Timestamp: math.MaxUint32, Data: []byte("frozen")}
	b = crdt.AppendMessage(b, &m)
	for n := int(peer.FirstSpawnNumber); n < 1<<16; n++ {
		if n == 600 || n == 601 {
			continue
		}
		m = crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(uint16(n), 0xffff)}
		b = crdt.AppendMessage(b, &m)
	}
	m = crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(5, 1)}
	return crdt.AppendMessage(b, &m)
}

// TestBoundPoisonedRestore: a poisoned checkpoint restores within the bounds: the honest value
// stays, the saturated stamp, the 0xffff deletions and the reserved deletion are dropped (and
// counted), the clock keeps its headroom, a later write to the poisoned key wins and numbers are
// free to spawn. Without Bound the restored replica's clock is 2³²−1 and every number dead.
func TestBoundPoisonedRestore(t *testing.T) {
	data := poisoned()
	if _, err := Validate("r", "test", data); err != nil {
		t.Fatal(err) // well-formed: Validate alone lets it through
	}
	out, clock, dropped, err := Bound(data, math.MaxUint32)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{RestoreClock: 1, RestoreStamp: 1, RestoreVersion: 1<<16 - int(peer.FirstSpawnNumber) - 2, RestoreReserved: 1}
	if fmt.Sprint(dropped) != fmt.Sprint(want) {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(out); err != nil {
		t.Fatal(err)
	}
	r.ObserveClock(clock)
	if r.Clock() > MaxRestoreClock {
		t.Fatalf("restored clock %d, beyond %d", r.Clock(), uint64(MaxRestoreClock))
	}
	if data, _, ok, _ := r.Get(crdt.NewEntity(600, 0), 2000); !ok || string(data) != "ok" {
		t.Fatal("the honest value was lost")
	}
	w := r.WriteAt(crdt.NewEntity(601, 0), 2000, r.Clock()+1, []byte("live"), false)
	if data, _, _, _ := r.Get(crdt.NewEntity(601, 0), 2000); string(data) != "live" {
		t.Fatalf("a write after the restore lost (%+v)", w)
	}
	if _, ok := r.DeletedVersion(1000); ok {
		t.Fatal("number 1000 restored dead")
	}
	// A clean stream passes through untouched.
	clean := data[:bytes.Index(data, []byte("ok"))+2]
	if got, _, dropped, _ := Bound(clean, 10); dropped != nil || !bytes.Equal(got, clean) {
		t.Fatalf("a clean stream changed: %v", dropped)
	}
}

// TestImplausibleTermsRefused: a checkpoint stored at term 2⁵³−1 does not fence the room's
// honest host (its write replaces it, counted), nor does one far above the writer's term that
// the room's counters do not vouch for; one they vouch for fences as before. Counters stored at
// such a term are ignored. Without the bound every later checkpoint of the room is fenced.
func TestImplausibleTermsRefused(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := Open(Config{Dir: t.TempDir(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	save := func(room signaling.RoomID, term signaling.Term) error {
		return s.SaveCheckpoint(ctx, Checkpoint{Room: room, Term: term, Clock: 1, Data: []byte{byte(term)}})
	}
	if err := save("r", 1<<53-1); err != nil {
		t.Fatal(err)
	}
	if err := save("r", 3); err != nil {
		t.Fatalf("an honest host fenced by a term of 2⁵³−1: %v", err)
	}
	if c, _ := s.LoadCheckpoint(ctx, "r"); c.Term != 3 {
		t.Fatalf("stored term %d, want 3", c.Term)
	}
	// Close above: a stale host is fenced as before.
	if err := save("r", 2); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale writer: %v", err)
	}
	// Far above, vouched by the counters: fenced; not vouched: replaced.
	far := signaling.Term(3 + MaxTermSkew + 5)
	if err := save("v", far); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRoom("v", signaling.RoomCounters{Term: far}); err != nil {
		t.Fatal(err)
	}
	if err := save("v", 3); !errors.Is(err, ErrFenced) {
		t.Fatalf("a vouched term did not fence: %v", err)
	}
	if err := save("u", far); err != nil {
		t.Fatal(err)
	}
	if err := save("u", 3); err != nil {
		t.Fatalf("an unvouched term fenced: %v", err)
	}
	if err := s.SaveRoom("p", signaling.RoomCounters{LastIndex: 3, Term: 1<<53 - 1}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.LoadRoom("p"); err != nil || c != (signaling.RoomCounters{}) {
		t.Fatalf("poisoned counters loaded: %+v %v", c, err)
	}
	if n := counterValue(t, s.refused.WithLabelValues(RefusedCheckpointTerm)); n != 2 {
		t.Fatalf("concord_durable_refused_total{checkpoint_term} = %v, want 2", n)
	}
	if n := counterValue(t, s.refused.WithLabelValues(RefusedRoomTerm)); n != 1 {
		t.Fatalf("concord_durable_refused_total{room_term} = %v, want 1", n)
	}
}

// TestLeaseFarExpiryTakenOver: a lease stored to expire in an hour (a thief's) is taken as
// expired: the room's node takes it over at once rather than the room staying closed for the hour.
func TestLeaseFarExpiryTakenOver(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx := context.Background()
	clk := newClock()
	d := manualDir(t, s, "a", clk, nil)
	b := []byte(fmt.Sprintf(`{"room":"r","node":"thief","expires":%d}`, clk.now().Add(time.Hour).UnixMilli()))
	if _, err := s.dir.Create(ctx, RoomKey("r"), b); err != nil {
		t.Fatal(err)
	}
	l, err := d.Acquire(ctx, "r")
	if err != nil || l.Node != "a" || !d.Owns("r") {
		t.Fatalf("lease %+v, %v: the thief's hour-long lease held", l, err)
	}
	// An honest lease of another node (a TTL ahead) still holds.
	b = []byte(fmt.Sprintf(`{"room":"h","node":"b","expires":%d}`, clk.now().Add(5*time.Second).UnixMilli()))
	if _, err := s.dir.Create(ctx, RoomKey("h"), b); err != nil {
		t.Fatal(err)
	}
	if l, err := d.Acquire(ctx, "h"); err != nil || l.Node != "b" {
		t.Fatalf("an honest lease taken over: %+v %v", l, err)
	}
	if n := counterValue(t, s.refused.WithLabelValues(RefusedLeaseExpiry)); n < 1 {
		t.Fatalf("concord_durable_refused_total{lease_expiry} = %v", n)
	}
}

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestRoomCountersExpire: a room's counters leave the store RoomTTL after their last write (the
// room's name with them: a room opened once under a random name does not stay for ever); a room
// with a checkpoint then loads its checkpoint's term, so its next host is not fenced. Without the
// TTL every room name ever opened stays in the data directory.
func TestRoomCountersExpire(t *testing.T) {
	s, err := Open(Config{Dir: t.TempDir(), RoomTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, room := range []signaling.RoomID{"random-1", "durable"} {
		if err := s.SaveRoom(room, signaling.RoomCounters{LastIndex: 70, Term: 9}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveCheckpoint(ctx, Checkpoint{Room: "durable", Term: 9, Clock: 5, Data: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the counters expired", func() error {
		info, err := s.rooms.Status(ctx)
		if err != nil {
			return err
		}
		if n := info.Values(); n != 0 {
			return fmt.Errorf("%d values in %s", n, RoomBucket)
		}
		return nil
	})
	if c, err := s.LoadRoom("random-1"); err != nil || c != (signaling.RoomCounters{}) {
		t.Fatalf("random-1: %+v %v", c, err)
	}
	if c, err := s.LoadRoom("durable"); err != nil || c.Term != 9 {
		t.Fatalf("durable: %+v %v, want its checkpoint's term 9", c, err)
	}
}

// writeRouteCert writes a self-signed certificate for 127.0.0.1 usable by both ends of a route
// (its own CA) and its key, and returns the two files.
func writeRouteCert(t *testing.T) (certFile, keyFile string) {
	certFile, keyFile, _ = testcert.Write(t, net.IPv4(127, 0, 0, 1))
	return certFile, keyFile
}

// TestRouteTLSVerifiesPeers: two nodes with route TLS (no password) route to each other; a
// stranger without TLS, and one with a certificate of its own, form no route with them.
func TestRouteTLSVerifiesPeers(t *testing.T) {
	cert, key := writeRouteCert(t)
	ports := freePorts(t, 2)
	var nodes []*Store
	logs := []*syncbuf.Buffer{{}, {}}
	for i := range 2 {
		st := &Store{log: zerolog.New(logs[i]), cfg: Config{Dir: t.TempDir(), NodeName: fmt.Sprintf("n%d", i+1), Timeout: 10 * time.Second, Linger: time.Millisecond,
			Cluster: ClusterConfig{Name: "test", Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Routes: []string{fmt.Sprintf("nats-route://127.0.0.1:%d", ports[1-i])},
				TLSCert: cert, TLSKey: key, TLSCA: cert}}}
		if err := st.cfg.Cluster.Check(); err != nil {
			t.Fatal(err)
		}
		if err := st.startEmbedded(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		nodes = append(nodes, st)
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	plain, _ := stranger(t, "stranger-plain", routes)
	ownCert, ownKey := writeRouteCert(t)
	own, _ := strangerTLS(t, "stranger-own-cert", routes, ownCert, ownKey)
	poll.Until(t, 30*time.Second, "the nodes routed to each other over TLS", func() error {
		if !routedTo(t, nodes[0].ns, "n2") || !routedTo(t, nodes[1].ns, "n1") {
			return errors.New("not yet")
		}
		return nil
	})
	// Each node has refused each stranger's routes (their TLS handshakes failed) at least once.
	poll.Until(t, 30*time.Second, "both strangers refused by both nodes", func() error {
		for i := range nodes {
			l := logs[i].String()
			if !strings.Contains(l, "does not look like a TLS handshake") || !strings.Contains(l, "TLS route handshake error: tls: failed to verify certificate") && !strings.Contains(l, "bad certificate") {
				return fmt.Errorf("node %d has not refused both yet", i+1)
			}
		}
		return nil
	})
	for _, ns := range []*server.Server{plain, own} {
		if n := ns.NumRoutes(); n != 0 {
			t.Errorf("%s has %d routes", ns.Name(), n)
		}
		for _, st := range nodes {
			if routedTo(t, st.ns, ns.Name()) {
				t.Errorf("%s routed to %s", st.cfg.NodeName, ns.Name())
			}
		}
	}
}

// strangerTLS is stranger with route TLS of its own certificate.
func strangerTLS(t *testing.T, name string, routes []*url.URL, cert, key string) (*server.Server, *nats.Conn) {
	t.Helper()
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cert, KeyFile: key, CaFile: cert, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	tc.ClientAuth, tc.RootCAs = tls.RequireAndVerifyClientCert, tc.ClientCAs
	return startStranger(t, name, routes, tc)
}

// TestExternalNATSAuth: a store connects to an external NATS that requires authentication with a
// token (--nats-token) or the URL's user and password, and fails without them, with the URL's
// password kept out of the error.
func TestExternalNATSAuth(t *testing.T) {
	start := func(opts *server.Options) *server.Server {
		opts.Host, opts.Port, opts.NoSigs, opts.NoLog, opts.JetStream, opts.StoreDir = "127.0.0.1", server.RANDOM_PORT, true, true, true, t.TempDir()
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		if !ns.ReadyForConnections(10 * time.Second) {
			t.Fatal("nats-server not ready")
		}
		return ns
	}
	open := func(u string, auth NATSAuth) error {
		s, err := Open(Config{NATS: u, NATSAuth: auth, StartTimeout: 5 * time.Second, Timeout: 5 * time.Second})
		if err == nil {
			s.Close()
		}
		return err
	}
	tok := start(&server.Options{Authorization: "s3cret-token"})
	if err := open(tok.ClientURL(), NATSAuth{}); err == nil {
		t.Fatal("connected without the token")
	}
	if err := open(tok.ClientURL(), NATSAuth{Token: "s3cret-token"}); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	up := start(&server.Options{Username: "concord", Password: "pw-in-url"})
	u, _ := url.Parse(up.ClientURL())
	u.User = url.UserPassword("concord", "wrong-pw")
	err := open(u.String(), NATSAuth{})
	if err == nil || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("a wrong password: %v (connected, or the password in the error)", err)
	}
	u.User = url.UserPassword("concord", "pw-in-url")
	if err := open(u.String(), NATSAuth{}); err != nil {
		t.Fatalf("with the URL's credentials: %v", err)
	}
	if err := open(tok.ClientURL(), NATSAuth{Creds: filepath.Join(t.TempDir(), "missing.creds")}); err == nil {
		t.Fatal("a missing credentials file accepted")
	}
}

// TestRedactURLs: credentials never reach a log line or an error.
func TestRedactURLs(t *testing.T) {
	got := RedactURLs("nats://u:p@a:4222, tls://tok3n@b:4222,nats://c:4222,nats://u:p%40x@d:1")
	if strings.Contains(got, "p@") || strings.Contains(got, "tok3n") || strings.Contains(got, "p%40x") || !strings.Contains(got, "nats://c:4222") {
		t.Fatal(got)
	}
}
