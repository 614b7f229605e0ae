// Package peer is one participant of a Concord room: a signaling client, WebRTC links to other
// members, and the host or member role over a World, the replicated ADR-117 state.
//
// A game implements App (schemas, host start, avatar spawning, a tick, RPCs) and optionally
// EventHandler; New(Config) and Run(ctx) join a room and play it:
//
//	p, _ := peer.New(peer.Config{Server: url, Room: "arena", App: game, Transport: peer.PionTransport{API: api}})
//	err := p.Run(ctx)
//
// Inside App callbacks the game reads and writes the World: Spawn/Despawn (host), Set/Get
// properties, RequestLock/Relinquish (members), SendRPC/BroadcastRPC. Writes without authority
// fail locally; the host rejects them on the wire too (docs/protocol.md, "Session").
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
// Transport: PionTransport makes real WebRTC connections (see peer/link); MemoryTransport joins
// members of one process through in-memory pipes with seeded loss, for deterministic tests. A
// peer without a Transport makes its own pion transport for the duration of Run (ice.go): ICE
// follows the signaling address (Config.ICE: loopback-only for a loopback URL, otherwise the
// interface toward the server plus the STUN/TURN servers signaling hands out in joined), with
// one UDP socket for all its links. A member reports the candidate types of its link to the
// host with its replica report (Status.HostLink).
package peer
