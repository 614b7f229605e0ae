package main

import (
	"flag"
	"fmt"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
)

// worldFlags adds the dedicated hosts' world bounds (docs/protocol.md §5, "Session: limits";
// docs/security.md §5, "Append sets and world size"); 0 keeps a default.
func worldFlags(fs *flag.FlagSet, o *server.Options) {
	w := &o.World
	fs.IntVar(&w.AppendSets, "max-append-sets", peer.DefaultMaxAppendSets, "append sets (components) one entity may carry in the dedicated hosts' rooms")
	fs.IntVar(&w.MemberBytes, "max-member-world-bytes", peer.DefaultMaxMemberWorldBytes, "bytes one member's appends and CRDT corrections may add to a dedicated host's world")
	worldsFlags(fs, o)
	fs.IntVar(&w.RoomBytes, "max-world-bytes", peer.DefaultMaxWorldBytes, fmt.Sprintf("world size (checkpoint bytes) past which a dedicated host admits no growing write of a member nor append; with --data at most %d (the checkpoint cap)", durable.MaxCheckpoint))
}
