package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/testcert"
)

func TestParseICEServers(t *testing.T) {
	got, err := parseICEServers([]string{"stun:stun.example.com:3478", "turn:u%40x:p:w@turn.example.com:3478?transport=tcp", "turns:turn.example.com:5349"})
	if err != nil {
		t.Fatal(err)
	}
	want := []externalServer{
		{url: "stun:stun.example.com:3478"},
		{url: "turn:turn.example.com:3478?transport=tcp", username: "u@x", credential: "p:w", turn: true},
		{url: "turns:turn.example.com:5349", turn: true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"stun:u:p@stun.example.com", "http://x", "nonsense", "turn:"} {
		if _, err := parseICEServers([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	f := iceServersFunc(nil, got, "s3cret")
	servers := f("arena", "alice/p1")
	if len(servers) != 3 || servers[1].Username != "u@x" || servers[2].Username == "" || !strings.HasSuffix(servers[2].Username, ":alice/p1") {
		t.Fatalf("servers %+v", servers)
	}
	if iceServersFunc(nil, nil, "") != nil {
		t.Fatal("no servers: want a nil func (nothing in joined)")
	}
}

// TestTURNHost: --turn-host names the turns: URLs members get, instead of the certificate's first
// DNS name (here none: the relay's IP).
func TestTURNHost(t *testing.T) {
	certFile, keyFile, _ := testcert.Write(t, net.ParseIP("127.0.0.1")) // no DNS name: turns: names the public IP
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	for _, tc := range []struct{ host, want string }{{"", "turns:127.0.0.1:"}, {"relay.internal", "turns:relay.internal:"}} {
		o := Options{TURN: "127.0.0.1:0", TURNTLS: "127.0.0.1:0", TURNHost: tc.host, TLSCert: certFile, TLSKey: keyFile, TURNPorts: "49152-65535"}
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		ts, err := startTURN(o, tlsCfg, nil, zerolog.Nop(), nil)
		if err != nil {
			t.Fatal(err)
		}
		urls := ts.URLs()
		_ = ts.Close()
		if !strings.HasPrefix(urls[len(urls)-1], tc.want) {
			t.Errorf("--turn-host %q: URLs %v, want the last to start with %s", tc.host, urls, tc.want)
		}
	}
}
