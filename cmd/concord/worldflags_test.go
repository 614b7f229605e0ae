package main

import (
	"errors"
	"flag"
	"net"
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
)

// TestServeWorldFlags: serve's world flags reach the dedicated hosts' peer.Config; a world bound
// over the checkpoint cap is refused for a durable serve.
func TestServeWorldFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var o serveOptions
	worldFlags(fs, &o)
	if err := fs.Parse([]string{"--max-append-sets", "4", "--max-member-world-bytes", "65536"}); err != nil {
		t.Fatal(err)
	}
	if w := o.world; w.AppendSets != 4 || w.MemberBytes != 64<<10 || w.RoomBytes != peer.DefaultMaxWorldBytes {
		t.Fatalf("world limits %+v", w)
	}
	cfg, err := dedicatedHostConfig(zerolog.Nop(), o, "arena", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WorldLimits != o.world {
		t.Fatalf("dedicated host's WorldLimits %+v, flags %+v", cfg.WorldLimits, o.world)
	}
	o.data, o.world.RoomBytes = "dir", durable.MaxCheckpoint+1
	var ue usageError
	if err := checkWorldFlags(o); !errors.As(err, &ue) {
		t.Fatalf("--max-world-bytes over the checkpoint cap with --data: %v, want a usage error", err)
	}
	o.data = ""
	if err := checkWorldFlags(o); err != nil {
		t.Fatalf("--max-world-bytes without --data: %v", err)
	}
}
