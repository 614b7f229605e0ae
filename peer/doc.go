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
// Goroutines: Run's loop owns every piece of state (the World, the role, the links' session
// state). Link read goroutines only copy payloads and post them to the loop; pion callbacks only
// post events. Per link one watcher goroutine waits for it to open and close; timers started by
// the loop post functions back to it. Run waits for all of them before it returns. Other
// goroutines reach a running peer only through Do (a function run on the loop) and Status (a
// snapshot published by the loop). App methods must not block.
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
