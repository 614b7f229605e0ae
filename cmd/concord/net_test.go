package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/testcert"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// startTestServer runs startServer with o and stops it when the test ends.
func startTestServer(t *testing.T, o server.Options) *testServer {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Room == "" {
		o.Room = "arena"
	}
	o.Metrics = true
	ctx, cancel := context.WithCancel(context.Background())
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := startServer(ctx, o, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s
}

func get(client *http.Client, url string) (int, string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// A websocket from an origin that is not the server's own host nor in --origin is refused
// with a close frame that says why; the server's own host and listed origins join.
func TestServeOriginAllowList(t *testing.T) {
	s := startTestServer(t, server.Options{Origins: []string{"https://game.example.com"}})
	wsURL := "ws" + strings.TrimPrefix(s.url, "http") + "/ws"
	dial := func(origin string) (*websocket.Conn, error) {
		h := http.Header{}
		h.Set("Origin", origin)
		ws, _, err := websocket.DefaultDialer.Dial(wsURL, h)
		return ws, err
	}
	ws, err := dial("https://evil.example.net")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = ws.ReadMessage()
	_ = ws.Close()
	var ce *websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, refusedOrigin) {
		t.Fatalf("refused origin: %v, want close 1008 %s", err, refusedOrigin)
	}
	code, body, err := get(http.DefaultClient, s.url+"/ws")
	if err != nil || code != http.StatusBadRequest && code != http.StatusForbidden {
		t.Fatalf("plain GET /ws: %d %q %v", code, body, err)
	}
	for _, origin := range []string{"https://game.example.com", s.url} {
		h := http.Header{}
		h.Set("Origin", origin)
		c, err := signaling.Dial(context.Background(), s.url, signaling.JoinOptions{Room: "lobby", User: "u"},
			signaling.ClientConfig{Header: h})
		if err != nil {
			t.Fatalf("origin %s refused: %v", origin, err)
		}
		_ = c.Close()
	}
}

func asCloseError(err error, ce **websocket.CloseError) bool {
	c, ok := err.(*websocket.CloseError)
	*ce = c
	return ok
}

// serve over TLS: the page, /api/rooms and /ws answer over HTTPS/WSS, and the dedicated host
// (which dials its own loopback door) hosts the room.
func TestServeTLS(t *testing.T) {
	certFile, keyFile, pool := testcert.Write(t, net.ParseIP("127.0.0.1"))
	s := startTestServer(t, server.Options{TLSCert: certFile, TLSKey: keyFile, DedicatedHost: true})
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("url %s", s.url)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body, err := get(client, s.url+"/"); err != nil || code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("page over https: %d %v", code, err)
	}
	poll.Until(t, 20*time.Second, "the dedicated host hosts arena over the loopback door", func() error {
		_, body, err := get(client, s.url+"/api/rooms")
		if err != nil {
			return err
		}
		if !strings.Contains(body, `"kind":"host","synced":true`) {
			return fmt.Errorf("rooms %s", body)
		}
		return nil
	})
	d := &websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}}
	c, err := signaling.Dial(context.Background(), s.url, signaling.JoinOptions{Room: "arena", User: "tls"}, signaling.ClientConfig{Dialer: d})
	if err != nil {
		t.Fatalf("wss join: %v", err)
	}
	_ = c.Close()
}

// The embedded TURN server carries a room on loopback: the dedicated host and a bot, both
// relay-only, converge through it; /api/rooms shows the bot's link as relay/relay, and
// /metrics shows the allocations, relayed bytes and members by candidate type.
func TestServeThroughEmbeddedTURN(t *testing.T) {
	s := startTestServer(t, server.Options{
		DedicatedHost: true, TURN: "127.0.0.1:0", TURNPorts: "49152-65535",
		TURNAllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Network:          server.Network{RelayOnly: true},
	})
	ctx, cancel := context.WithCancel(context.Background())
	bots := make(chan error, 1)
	go func() {
		bots <- cmdBot(ctx, []string{"--server", s.url, "-n", "2", "--move-for", "1s", "--relay-only", "--log-level", "error"}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-bots; err != nil {
			t.Errorf("bots: %v", err)
		}
	}()
	poll.Until(t, 60*time.Second, "bots synced through the relay, with equal hashes", func() error {
		rooms, err := fetchRooms(s.url)
		if err != nil {
			return err
		}
		if len(rooms) != 1 || len(rooms[0].Members) != 3 {
			return fmt.Errorf("rooms %+v", rooms)
		}
		var hash uint64
		for i, m := range rooms[0].Members {
			if !m.Synced || m.Replica == nil {
				return fmt.Errorf("member %d not synced", m.PeerIndex)
			}
			if i == 0 {
				hash = m.Replica.Hash
			} else if m.Replica.Hash != hash {
				return fmt.Errorf("hashes differ")
			}
			if m.PeerIndex == rooms[0].Host {
				if m.Link != nil {
					return fmt.Errorf("the host has a link entry %+v", m.Link)
				}
				continue
			}
			if m.Link == nil || *m.Link != (signaling.LinkTypes{Local: "relay", Remote: "relay"}) {
				return fmt.Errorf("member %d link %+v, want relay/relay", m.PeerIndex, m.Link)
			}
		}
		return nil
	})
	_, metrics, err := get(http.DefaultClient, s.url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`concord_members_by_candidate{local="relay",remote="relay"} 2`,
		`concord_members{kind="bot"} 2`,
		`concord_host_is_host 1`,
		`concord_host_links{local="relay",remote="relay"} 2`,
		`concord_signaling_joins_total 3`,
		`concord_signaling_join_to_synced_seconds_count 2`, // the bots; the host is synced by its election
		`concord_turn_refused_credentials_total{reason="not_member"} 0`,
		`concord_turn_open 1`,
		`concord_link_close_stuck_total{outcome="abandoned"} 0`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, name := range []string{"concord_turn_allocations ", `concord_turn_relayed_bytes_total{direction="out"} `, `concord_host_link_bytes_total{channel="reliable",direction="out"} `} {
		i := strings.Index(metrics, name)
		if i < 0 || strings.HasPrefix(metrics[i+len(name):], "0\n") {
			t.Errorf("/metrics: %s missing or zero", name)
		}
	}
}

// The ICE mode follows the signaling URL unless forced.
func TestICEModeFollowsSignaling(t *testing.T) {
	for _, tc := range []struct {
		mode   peer.ICEMode
		server string
		want   bool
	}{
		{peer.ICEAuto, "http://127.0.0.1:7880", true},
		{peer.ICEAuto, "http://localhost:7880", true},
		{peer.ICEAuto, "https://[::1]:443", true},
		{peer.ICEAuto, "http://100.64.0.10:7880", false},
		{peer.ICEAuto, "https://game.example.com", false},
		{peer.ICELoopback, "http://100.64.0.10:7880", true},
		{peer.ICEAny, "http://127.0.0.1:7880", false},
	} {
		if got := tc.mode.Loopback(tc.server); got != tc.want {
			t.Errorf("ICEMode(%q).Loopback(%s) = %v, want %v", tc.mode, tc.server, got, tc.want)
		}
	}
}

// /debug/pprof is served only with --pprof; /metrics serves the signaling counters.
func TestServePprofAndMetricsFlags(t *testing.T) {
	on := startTestServer(t, server.Options{Pprof: true})
	if code, body, err := get(http.DefaultClient, on.url+"/debug/pprof/"); err != nil || code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("--pprof: /debug/pprof/ answered %d (%v)", code, err)
	}
	if code, body, err := get(http.DefaultClient, on.url+"/metrics"); err != nil || code != http.StatusOK || !strings.Contains(body, "concord_signaling_rooms 0") {
		t.Fatalf("/metrics answered %d (%v)", code, err)
	}
	off := startTestServer(t, server.Options{})
	if code, _, err := get(http.DefaultClient, off.url+"/debug/pprof/"); err != nil || code != http.StatusNotFound {
		t.Fatalf("without --pprof: /debug/pprof/ answered %d (%v)", code, err)
	}
}

// A relay may reach the dedicated host's own WebRTC socket on the server's address (outside
// the relay range, which it refuses to other ports): a relay-only bot's link to a dedicated
// host that is not relay-only ends on the host's own candidate, one relay hop instead of two.
func TestServeRelayReachesDedicatedHost(t *testing.T) {
	s := startTestServer(t, server.Options{
		DedicatedHost: true, TURN: "127.0.0.1:0", TURNPorts: "20000-20999", // below the ephemeral range
		TURNAllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	ctx, cancel := context.WithCancel(context.Background())
	bots := make(chan error, 1)
	go func() {
		bots <- cmdBot(ctx, []string{"--server", s.url, "-n", "1", "--move-for", "1s", "--relay-only", "--log-level", "error"}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-bots; err != nil {
			t.Errorf("bots: %v", err)
		}
	}()
	poll.Until(t, 30*time.Second, "the bot synced over relay to the host's own candidate", func() error {
		rooms, err := fetchRooms(s.url)
		if err != nil {
			return err
		}
		if len(rooms) != 1 || len(rooms[0].Members) != 2 {
			return fmt.Errorf("rooms %+v", rooms)
		}
		// The bot may join before the dedicated host, which then takes over: find the bot by kind.
		m := rooms[0].Members[0]
		if m.Kind != signaling.KindBot {
			m = rooms[0].Members[1]
		}
		if m.PeerIndex == rooms[0].Host || !m.Synced || m.Link == nil {
			return fmt.Errorf("bot synced %v, link %v", m.Synced, m.Link)
		}
		if m.Link.Local != "relay" || m.Link.Remote == "relay" {
			return fmt.Errorf("bot link %+v, want relay to the host's own candidate", *m.Link)
		}
		return nil
	})
}
