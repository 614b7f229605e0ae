package link

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// gathered starts an offerer on api and returns its offer SDP and trickled candidates once
// gathering has produced at least one candidate. No remote exists, so nothing is sent.
func gathered(t *testing.T, api *API, cc ConnConfig) string {
	t.Helper()
	var mu sync.Mutex
	var all strings.Builder
	cc.Signal = func(s Signal) error {
		mu.Lock()
		defer mu.Unlock()
		all.WriteString(s.SDP)
		if s.Candidate != nil {
			all.WriteString("\n" + s.Candidate.Candidate)
		}
		return nil
	}
	c, err := api.NewOfferer(cc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, 5*time.Second, "a host candidate", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(all.String(), " typ host")
	})
	mu.Lock()
	defer mu.Unlock()
	return all.String()
}

// PublicIP replaces the interface address in host candidates (1:1 NAT).
func TestPublicIPInHostCandidates(t *testing.T) {
	api := mustAPI(t, Config{Logger: testLogger(t), PublicIP: "127.0.0.2"})
	defer api.Close()
	got := gathered(t, api, ConnConfig{Logger: testLogger(t)})
	if !strings.Contains(got, " 127.0.0.2 ") || strings.Contains(got, " 127.0.0.1 ") {
		t.Fatalf("candidates do not advertise only the public IP:\n%s", got)
	}
}

// A loopback-only API keeps ICE servers on loopback and drops every other one, so it never
// contacts a STUN/TURN server off the machine.
func TestLoopbackOnlyDropsRemoteICEServers(t *testing.T) {
	api := mustAPI(t, Config{Logger: testLogger(t)})
	defer api.Close()
	in := []webrtc.ICEServer{
		{URLs: []string{"stun:203.0.113.7:3478", "stun:127.0.0.1:3478"}},
		{URLs: []string{"turn:turn.example.com:3478?transport=udp"}, Username: "u", Credential: "p"},
		{URLs: []string{"turn:localhost:3478"}, Username: "u", Credential: "p"},
		{URLs: []string{"bogus"}},
	}
	got := api.allowedServers(in)
	if len(got) != 2 || len(got[0].URLs) != 1 || got[0].URLs[0] != "stun:127.0.0.1:3478" || got[1].URLs[0] != "turn:localhost:3478" {
		t.Fatalf("allowed %+v", got)
	}
	open := mustAPI(t, Config{Logger: testLogger(t), AllowNonLoopback: true, UDPMuxAddr: "127.0.0.1:0"})
	defer open.Close()
	if got := open.allowedServers(in); len(got) != 3 {
		t.Fatalf("a non-loopback API allowed %+v, want the three parsable servers", got)
	}
	// The Conn gathers with what is left; a server it must not contact never appears.
	sdp := gathered(t, api, ConnConfig{Logger: testLogger(t), ICEServers: in[1:2]})
	if strings.Contains(sdp, "typ relay") || strings.Contains(sdp, "typ srflx") {
		t.Fatalf("a loopback-only Conn used a remote ICE server:\n%s", sdp)
	}
}

// TestLocalOnly: Config.LocalOnly needs the shared socket on one of this machine's own
// addresses, and then admits remote candidates and ICE servers only at this machine's addresses.
// (Pairing with a browser over a network address is web/e2e/firefox.mjs's, in a namespace.)
func TestLocalOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "203.0.113.9:0", "not an address"} {
		if _, err := NewAPI(Config{AllowNonLoopback: true, LocalOnly: true, UDPMuxAddr: addr}); !errors.Is(err, ErrConfig) {
			t.Errorf("LocalOnly with UDPMuxAddr %q: %v, want ErrConfig", addr, err)
		}
	}
	a, err := NewAPI(Config{AllowNonLoopback: true, LocalOnly: true, UDPMuxAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for ip, want := range map[string]bool{"127.0.0.1": true, "127.8.9.10": true, "::1": true, "203.0.113.9": false, "8.8.8.8": false} {
		if got := a.isLocal(net.ParseIP(ip)); got != want {
			t.Errorf("isLocal(%s) = %v, want %v", ip, got, want)
		}
	}
	servers := a.allowedServers([]webrtc.ICEServer{{URLs: []string{"turn:127.0.0.1:3478", "turn:203.0.113.9:3478", "stun:turn.example.com:3478"}}})
	if len(servers) != 1 || len(servers[0].URLs) != 1 || servers[0].URLs[0] != "turn:127.0.0.1:3478" {
		t.Errorf("ICE servers kept on this machine only: %+v", servers)
	}
}
