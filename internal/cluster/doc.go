// Package cluster makes `concord serve` a node of a cluster (docs/protocol.md §7): any node serves any
// room. Each room has an owner node, the holder of its lease in the room directory
// (durable.Directory); a member's websocket may land on any node, and a node that does not own the
// member's room relays the websocket to the owner over NATS subjects, so the owner's signaling
// hub alone keeps the room's membership, peer indices and terms.
//
// Node is a signaling.Router: for each join it finds (or takes) the room's lease; when another
// live node holds it, it opens a relay to that node. On the owner the relayed websocket is a
// signaling.Socket served by signaling.Server.ServeSocket, exactly like a local one.
//
// Subjects (docs/protocol.md "Cluster"):
//
//	concord.node.<node>.open    request: open a relay to <node> (JSON openRequest; reply "ok" or an error)
//	concord.node.<node>.rooms   request: <node>'s rooms, JSON []signaling.RoomInfo
//	concord.relay.<id>.up       frames from the accepting node (edge) to the owner
//	concord.relay.<id>.down     frames from the owner to the edge
//
// A frame is one kind byte and a payload: 'T' a text message, 'P' a ping, 'O' a pong, 'C' a close
// frame (its payload as in RFC 6455: a 2-byte code and a reason), 'H' a heartbeat. Each side sends
// a heartbeat every HeartbeatInterval and takes the other side for dead after HeartbeatTimeout of
// silence: the edge then closes the websocket (1001, server_closing) so that the member redials
// and resumes, the owner's socket fails like a lost websocket.
//
// Node owns its heartbeat loop, one goroutine per relayed websocket it serves as owner, and its
// directory (a KV watcher and the renewal loop); subscription callbacks run on nats.go's own
// goroutines. An edge relay runs on the websocket handler's goroutine plus one reader. Close ends
// them all.
package cluster
