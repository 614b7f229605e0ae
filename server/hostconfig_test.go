package server

import (
	"net"
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
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

// TestDedicatedHostEventQueueHoldsBurst: a dedicated host's signaling event queue holds a full
// room joining at once (hostEventsPerMember events each) below the three quarters past which
// its client sheds signals, whatever cap the room has; small rooms keep the peer's default.
// With the default (2,048) a 1,024 burst's host shed 161–713 offers and candidates on arrival.
func TestDedicatedHostEventQueueHoldsBurst(t *testing.T) {
	for _, tc := range []struct {
		limits   signaling.Config
		room     signaling.RoomID
		members  int
		defaults bool
	}{
		{limits: signaling.Config{}, room: "arena", members: signaling.DefaultMaxMembers, defaults: true},
		{limits: signaling.Config{MaxMembers: 1032}, room: "arena", members: 1032},
		{limits: signaling.Config{MaxMembers: 64, Rooms: map[signaling.RoomID]signaling.RoomConfig{"big": {MaxMembers: 4096}}}, room: "big", members: 4096},
	} {
		cfg, err := dedicatedHostConfig(zerolog.Nop(), Options{Limits: tc.limits}, tc.room, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		q := cfg.SignalingConfig.EventQueue
		if tc.defaults && q != peer.DefaultSignalingEventQueue {
			t.Fatalf("room of %d: event queue %d, want the default %d", tc.members, q, peer.DefaultSignalingEventQueue)
		}
		// The burst's membership notices (2 a member) and offers must fit below the shedding line.
		if burst := 4 * tc.members; burst > q*3/4 {
			t.Fatalf("room of %d: event queue %d sheds signals before a burst's %d events are queued", tc.members, q, burst)
		}
	}
}
