package turnserver

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/pion/transport/v5/vnet"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/pionlog"
	"github.com/concordrtc/concord/peer/link"
)

// symmetricNAT maps and filters per remote address and port (RFC 4787 "address and port
// dependent"): two peers behind such NATs cannot reach each other directly, nor through their
// server-reflexive addresses.
var symmetricNAT = &vnet.NATType{MappingBehavior: vnet.EndpointAddrPortDependent, FilteringBehavior: vnet.EndpointAddrPortDependent}

// vnetLAN adds a router with a symmetric NAT (public ip, private subnet) and one host to wan.
func vnetLAN(t *testing.T, wan *vnet.Router, public, local string, logs *pionlog.Factory) *vnet.Net {
	t.Helper()
	lan, err := vnet.NewRouter(&vnet.RouterConfig{StaticIPs: []string{public}, CIDR: local + "/24", NATType: symmetricNAT, LoggerFactory: logs})
	if err != nil {
		t.Fatal(err)
	}
	n, err := vnet.NewNet(&vnet.NetConfig{StaticIPs: []string{local}})
	if err != nil {
		t.Fatal(err)
	}
	if err := lan.AddNet(n); err != nil {
		t.Fatal(err)
	}
	if err := wan.AddRouter(lan); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two Go peers behind two symmetric NATs (a pion virtual network in the lab's address ranges,
// 100.64.0.0/24 outside and 10.x inside: no packet leaves the process) meet only through the embedded TURN server, which they find in the ICE servers they
// are handed, as signaling hands them out: ICE (not restricted to relay) selects a relay pair,
// and messages flow both ways.
func TestSymmetricNATsMeetThroughRelay(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	logs := pionlog.New(log.Level(zerolog.ErrorLevel))
	wan, err := vnet.NewRouter(&vnet.RouterConfig{CIDR: "100.64.0.0/24", LoggerFactory: logs})
	if err != nil {
		t.Fatal(err)
	}
	wanNet, err := vnet.NewNet(&vnet.NetConfig{StaticIPs: []string{"100.64.0.4"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := wan.AddNet(wanNet); err != nil {
		t.Fatal(err)
	}
	netA := vnetLAN(t, wan, "100.64.0.5", "10.1.0.1", logs)
	netB := vnetLAN(t, wan, "100.64.0.6", "10.2.0.1", logs)
	if err := wan.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = wan.Stop() }()

	s := newTestServer(t, Config{Net: wanNet, Addr: "100.64.0.4:3478", AllowPeers: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/24")}})
	servers := func(id string) []webrtc.ICEServer {
		u, p := s.Credentials(memberOf(id))
		return []webrtc.ICEServer{{URLs: []string{fmt.Sprintf("stun:100.64.0.4:%d", s.Addr().Port)}},
			{URLs: s.URLs(), Username: u, Credential: p}}
	}
	api := func(n *vnet.Net, local string) *link.API {
		a, err := link.NewAPI(link.Config{Logger: log, Net: n, AllowNonLoopback: true, UDPMuxAddr: local + ":0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	apiA, apiB := api(netA, "10.1.0.1"), api(netB, "10.2.0.1")

	ca, cb := linkPair(t, apiA, apiB, servers("alice/p1"), servers("bob/p2"), false)
	for _, c := range []*link.Conn{ca, cb} {
		waitPair(t, c, func(local, remote string) error {
			if local != link.CandidateRelay && remote != link.CandidateRelay {
				return fmt.Errorf("selected %s/%s: two symmetric NATs met without the relay", local, remote)
			}
			return nil
		})
	}
	st := s.Stats()
	if st.RelayedBytesOut == 0 || st.RelayedBytesIn == 0 {
		t.Fatalf("server stats %+v: nothing relayed", st)
	}
	// The peers' private host candidates (10.x) are not admitted, so the relay refused them.
	if st.RefusedPeers == 0 {
		t.Fatalf("server stats %+v: the relay never refused a private peer", st)
	}
	t.Logf("TURN: %+v", st)
}
