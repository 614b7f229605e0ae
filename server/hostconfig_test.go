package server

import (
	"net"
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
)

// The relay budgets and world limits of Options reach the dedicated hosts' peer.Config.
func TestDedicatedHostLimits(t *testing.T) {
	o := Options{RelayRate: 1000, RelayBurst: 40000, RecvRelayRate: 500, RecvRelayBurst: 30000, RelayBacklog: 4096,
		World: peer.WorldLimits{AppendSets: 4, MemberBytes: 64 << 10}}
	cfg, err := dedicatedHostConfig(zerolog.Nop(), o, "arena", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	want := peer.Config{RelayRate: 1000, RelayBurst: 40000, RecvRelayRate: 500, RecvRelayBurst: 30000, RelayBacklog: 4096}
	if cfg.RelayRate != want.RelayRate || cfg.RelayBurst != want.RelayBurst || cfg.RecvRelayRate != want.RecvRelayRate ||
		cfg.RecvRelayBurst != want.RecvRelayBurst || cfg.RelayBacklog != want.RelayBacklog {
		t.Fatalf("relay budgets %d/%d %d/%d %d, want %d/%d %d/%d %d", cfg.RelayRate, cfg.RelayBurst, cfg.RecvRelayRate, cfg.RecvRelayBurst, cfg.RelayBacklog,
			want.RelayRate, want.RelayBurst, want.RecvRelayRate, want.RecvRelayBurst, want.RelayBacklog)
	}
	if cfg.WorldLimits != o.World {
		t.Fatalf("dedicated host's WorldLimits %+v, options %+v", cfg.WorldLimits, o.World)
	}
}

// The dedicated hosts' WebRTC follows the listen address: on this machine for a loopback server
// (loopback only with Network.LoopbackOnly), any address otherwise, on one UDP socket of the
// listen interface.
func TestDedicatedHostNetwork(t *testing.T) {
	for _, tc := range []struct {
		nw       Network
		ip       net.IP
		ice, udp string
	}{
		{Network{}, net.IPv4(127, 0, 0, 1), string(peer.ICELocal), ""},
		{Network{LoopbackOnly: true}, net.IPv4(127, 0, 0, 1), string(peer.ICELoopback), ""},
		{Network{}, net.IPv4zero, string(peer.ICEAny), "0.0.0.0:0"},
		{Network{}, net.IPv4(10, 0, 0, 1), string(peer.ICEAny), "10.0.0.1:0"},
		{Network{UDP: "10.0.0.1:7881", PublicIP: "203.0.113.7"}, net.IPv4(10, 0, 0, 1), string(peer.ICEAny), "10.0.0.1:7881"},
	} {
		cfg, err := dedicatedHostConfig(zerolog.Nop(), Options{Network: tc.nw}, "arena", &net.TCPAddr{IP: tc.ip})
		if err != nil {
			t.Fatal(err)
		}
		if string(cfg.ICE) != tc.ice || cfg.Link.UDPMuxAddr != tc.udp || cfg.Link.PublicIP != tc.nw.PublicIP {
			t.Errorf("%+v on %v: ICE %q UDP %q public %q, want %q %q %q", tc.nw, tc.ip, cfg.ICE, cfg.Link.UDPMuxAddr, cfg.Link.PublicIP, tc.ice, tc.udp, tc.nw.PublicIP)
		}
	}
}
