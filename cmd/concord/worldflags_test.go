package main

import (
	"errors"
	"flag"
	"testing"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
)

// TestServeWorldFlags: serve's world flags reach server.Options (server's TestDedicatedHostLimits
// takes them on to the dedicated hosts' peer.Config); a world bound over the checkpoint cap is
// refused for a durable serve, as a usage error.
func TestServeWorldFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var o server.Options
	worldFlags(fs, &o)
	if err := fs.Parse([]string{"--max-append-sets", "4", "--max-member-world-bytes", "65536"}); err != nil {
		t.Fatal(err)
	}
	if w := o.World; w.AppendSets != 4 || w.MemberBytes != 64<<10 || w.RoomBytes != peer.DefaultMaxWorldBytes {
		t.Fatalf("world limits %+v", w)
	}
	o.Data, o.World.RoomBytes = "dir", durable.MaxCheckpoint+1
	var ue usageError
	if _, err := server.New(o); !errors.As(serveError(err), &ue) {
		t.Fatalf("--max-world-bytes over the checkpoint cap with --data: %v, want a usage error", err)
	}
	o.Data = ""
	if _, err := server.New(o); err != nil {
		t.Fatalf("--max-world-bytes without --data: %v", err)
	}
}
