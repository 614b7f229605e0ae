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
