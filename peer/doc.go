// Package peer is one participant of a Concord room: a signaling client, WebRTC links to other
// members, and the host or member role over a [World], the room's replicated state (ADR-117).
// A game written in Go implements [App]; [New] and [Peer.Run] join a room and play it. The
// browser client (web/static/js, @concordrtc/client) is the same peer in JavaScript, and both
// interoperate in one room. docs/guide.md walks through a first game; examples/ holds runnable
// ones (examples/orbs is a Go dedicated host, examples/orbs-bot a headless Go player).
//
// # Concepts
//
//   - Room: the unit of play, named by a string; everyone in it replicates one World. A member
//     joins through the signaling server (concord serve) and gets a [PeerIndex].
//   - Host: the one member that runs the game's rules and is the authority of last resort: the
//     room's pinned dedicated host if it has one, else its first member. When the host leaves,
//     the earliest synced member takes over (migration) and the World survives.
//   - Term: a host's tenure ([Term]); it grows with every new host, and messages of an old term
//     are refused.
//   - Entity: a thing in the World ([Entity]), spawned by the host with a schema; the room
//     entity (number 0) is the room's own state.
//   - Component and property: an entity's data, one value per property of its schema, each a
//     replicated component (a last-writer-wins register keyed by a Lamport timestamp).
//   - Authority: who may write an entity: the host (by default), the member whose avatar it is
//     ([App.SpawnAvatar]), or a member holding a temporary lock ([World.RequestLock]). Writes
//     without authority fail locally and the host rejects them on the wire.
//   - Schema: the table of entity kinds and their properties ([App.Schemas], package
//     crdt/schema). Every peer of a room runs the same table; a different one is refused
//     ([ErrSchemaMismatch]).
//
// # Writing a game
//
// Implement [App], and [EventHandler] to hear about spawns, updates, members and migrations:
//
//	type Game struct{}
//
//	func (g *Game) Schemas() *schema.Table  { return table }
//	func (g *Game) HostStart(w *peer.World) { /* spawn the world if it is empty */ }
//	func (g *Game) SpawnAvatar(w *peer.World, m peer.PeerInfo) (peer.Entity, error) {
//		return w.Spawn(schemaPlayer, nil, startPos(m).Encode(), []byte(m.ID))
//	}
//	func (g *Game) Tick(w *peer.World, dt time.Duration) { /* rules on the host, input anywhere */ }
//	func (g *Game) RPC(w *peer.World, from peer.PeerIndex, typ uint32, data []byte) {}
//
//	p, err := peer.New(peer.Config{Server: "http://127.0.0.1:7880", Room: "orbs", User: "host",
//		Kind: signaling.KindHost, App: &Game{}})
//	err = p.Run(ctx) // until ctx ends or the session fails
//
// Every App method runs on the peer's loop goroutine and must not block. Outside them, [Peer.Do]
// runs a function on the loop (input from a UI, a bot's script), [Peer.Status] is a snapshot of
// the peer's state, and [Peer.Done] is closed when Run has returned.
//
// # The World
//
// Reading: [World.Entities], [World.EntitiesOf], [World.Get], [World.SchemaOf],
// [World.Creation], [World.Exists], [World.Authority], [World.AvatarOf], [World.CanWrite];
// who is who: [World.Self], [World.Host], [World.Term], [World.IsHost].
//
// Writing: [World.Set] and [World.Unset] (any peer with authority), [World.Spawn],
// [World.SpawnRoom] and [World.Despawn] (the host). Writes made in one step share one timestamp
// and are sent after it. [World.Append] adds to a grow-only set (a chat log, an input stream),
// read with [World.Values]; a member appends to what it writes, or where the host's
// [AppendPolicy] lets it.
//
// Authority: [World.RequestLock] and [World.Relinquish] (a member asks the host for an entity),
// [World.Grant] and [World.Revoke] (the host hands one out and takes it back); [EventAuthority]
// says when it changed.
//
// Messages: [World.SendMessage] sends an application message (types 128–255, reliable or not) to
// the host, one member or [Everyone], relayed by the host with the sender's index and filtered by
// its [RelayPolicy]; the receiver's [MessageHandler] gets it. [World.SendAction] sends a TRNP
// Action to the host's [ActionHandler] (the host's go to every member). [World.SendRPC] (member
// to host) and [World.BroadcastRPC] (host to members) are delivered to [App.RPC]; types from
// [FirstSystemRPC] up are Concord's. The limits: [MaxMessage], [MaxUnreliableMessage],
// [MaxAction], [MaxAppendValue], and the world's bounds [WorldLimits] (append sets per entity,
// bytes one member's writes add, the world's size; Config.WorldLimits); a host forwards relayed
// messages within byte budgets charged per copy (Config.RelayRate, RecvRelayRate, RelayBacklog)
// and drops what does not fit, counted but never held against a member's link.
//
// Errors are values to test with errors.Is: [ErrNotHost], [ErrNoAuthority], [ErrNoEntity],
// [ErrNoProperty], [ErrExists], [ErrWorldFull], [ErrTooLarge], [ErrNoPeer], [ErrBadComponent],
// [ErrBadMessageType], [ErrWorldLimit]; [ErrClosed] and [ErrSchemaMismatch] end a session; [ErrConfig] refuses a
// Config.
//
// # Networking
//
// A peer without a [Config.Transport] makes its own pion transport for the duration of Run: ICE
// follows the signaling address ([Config.ICE]: loopback-only for a loopback URL, otherwise the
// interface toward the server plus the STUN/TURN servers signaling hands out), with one UDP
// socket for all its links; [Config.Link] sets its address and its logger (pion's own logs go
// there; give it a logger at warn, as examples/orbs/host does, or they are dropped). [LinkAPI]
// and [PionTransport] build that transport explicitly; [MemoryTransport] joins the members of
// one process in memory, for tests.
//
// # Internals
//
// Owners: one goroutine, the loop started by Run, owns every piece of state, split by owner
// across files. Peer keeps what signaling says of the room (room.go, resume.go) and the links
// (links.go, standby.go, receive.go); the host role keeps its per-member state — sync progress,
// dirty sets, digests, re-stamps, the authority table (host*.go); the member role keeps its own —
// the link to its host, its fence, its dirty set (member*.go). The roles reach the rest of the
// peer only through a small interface (env, roles.go), and the World reaches its role only
// through changeSink.
//
// Time: every delay and period of the loop (ticks, reports, digests, connect timeouts, the
// sweep after ResumeSettle) is an entry in the loop's timer queue (clock.go), read from
// Config.Clock. Nothing else reads the wall clock, so a test can step the roles with a manual
// clock, fake links and a fake signaling client, without sleeps (harness_test.go, rules_test.go).
//
// Goroutines: link read goroutines only copy payloads and post them to the loop; pion callbacks
// only post events. Per link one watcher goroutine waits for it to open and close, and closing a
// link (which waits for its goroutines) runs on a goroutine of its own, never on the loop. Every
// one of them is started by goTracked, and Run waits for all of them before it returns. The loop
// never waits on the network: signaling sends are non-blocking (a full queue drops the message
// and logs it). Other goroutines reach a running peer only through Do (a function run on the
// loop) and Status (a snapshot published by the loop). App methods must not block.
//
// Logs: every line carries room and self (this peer's index); a line about another member names
// it with peer, as signaling's lines do; host and term name the host of a term. No other key
// holds a peer index.
//
// Signaling outage: links do not need the signaling server once open, so when it goes away the
// room plays on. One redial goroutine, owned by the peer and waited for by Run, dials again with
// backoff and jitter (Config.RedialMin, RedialMax) and claims the old peer index, term and host;
// it only posts the new client to the loop, which reconciles (resume.go). Status.Signaling,
// Resumes and ResumeRefused show the state.
//
// Transport: a member reports the candidate types of its link to the host with its replica
// report (Status.HostLink).
package peer
