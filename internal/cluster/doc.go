// Package cluster owns everything about the nodes of a Concord cluster talking to one another
// (docs/protocol.md §7): which node serves which room, how a member's websocket that reached
// another node gets to the room's node, and which node runs which room's dedicated host.
//
// Any node serves any room. Each room has an owner node, the holder of its lease in the room
// directory (durable.Directory, a KV bucket every node shares). A member's websocket may land on
// any node; a node that does not own the member's room relays it to the owner, so the owner's
// signaling hub alone keeps the room's membership, peer indices and terms.
//
//	member ──websocket──▶ edge node ────── NATS ──────▶ owner node (holds the room's lease)
//	                      signaling.relay   concord.relay.ID.up    Node.serveOpen
//	                      Pipe (edge end) ◀─concord.relay.ID.down─ Pipe (owner end)
//	                                                                signaling.Server.ServeRelayed
//
// The NATS subjects between nodes (docs/protocol.md §7 has their payloads):
//
//   - concord.node.NAME.open: request to the owner NAME to serve a relayed member (node.go).
//   - concord.relay.ID.up, concord.relay.ID.down: a relay's frames, edge to owner and back (pipe.go).
//   - concord.node.NAME.rooms: request to NAME for its rooms (node.go).
//   - concord.nodes.alive: every node's presence, every second (node.go).
//   - concord.store.stop: a stopping node's notice (package durable, not this one).
//   - concord.node.NAME.voice: request to the owner NAME, a voice POST or DELETE an edge relays
//     (the server's voicecluster.go, not this package; docs/protocol.md §10 "In a cluster").
//
// What it owns, by file:
//
//   - wire.go, errors.go: the messages between nodes and their codecs. Relay frames (the data
//     plane) are binary, AppendFrame/ConsumeFrame: one Kind byte and a payload. Control messages
//     (open request and reply, rooms reply, presence) are JSON with a version field; a node
//     refuses another version. Decoders bound what they read and return typed errors; a refused
//     message is dropped and counted (concord_cluster_refused_total{reason}).
//   - node.go: Node, the signaling.Router of a node's signaling server. Route finds (or takes)
//     a room's lease and, when another live node holds it, opens a relay there; the owner
//     answers open requests and serves the relayed member; Rooms lists the whole cluster's rooms.
//     Presence heartbeats say which nodes are alive.
//   - pipe.go: one end of a relay, a signaling.Pipe over two NATS subjects, kept alive by
//     heartbeats (a side silent past HeartbeatTimeout is taken for dead).
//   - placement.go, clock.go: Placement, which runs the dedicated hosts of the rooms this node
//     owns and takes free leases up to its fair share, on an injected Clock.
//
// What it does not own: the directory's lease protocol and the stop notices of a stopping node
// (package durable, which keeps everything stored in JetStream), and the websocket (package
// signaling: only frames cross into this package).
//
// Who calls it: the server wiring (`concord serve`) makes a Placement (NewPlacement) with the
// function that starts a room's host, a Node (New) with that Placement, sets the Node as its
// signaling server's Config.Router, Attaches the server, runs Placement.Run until it stops, then
// closes the signaling server and the Node (which hands its leases over).
//
// Goroutines: Node owns its heartbeat loop, one goroutine per relayed member it serves as
// owner, and its directory (a KV watcher and the renewal loop); NATS subscription callbacks run
// on nats.go's goroutines and only decode and queue. Node.Close ends them all. Placement.Run's
// goroutine owns the hosts it starts; Placement.Poke and Placement.Keep may be called from any.
package cluster
