// Package voice is Concord's proximity voice: a selective forwarder (SFU) that runs in the server
// process beside signaling, and a Go client for it (docs/protocol.md §10).
//
// It owns:
//   - sessions: one pion PeerConnection per member, opened by a WHIP-like POST /voice/{room}
//     (Forwarder.Handler) and checked against the member's join token and signaling's member
//     table (Members);
//   - slots: each listener's K receive sections, each one RTP stream whose SSRC, sequence numbers
//     and timestamps the forwarder rewrites so that it stays continuous across speaker changes;
//   - proximity selection: the speakers within Config.Radius of a listener's avatar, the nearest K,
//     from positions read out of the room's world (Positions), never from what a client claims;
//   - mute, speaking levels on the `voice` data channel, the bounds (sessions per room, slots per
//     member, bitrate per publisher) and the concord_voice_* metrics.
//
// Goroutines: one loop (Forwarder.run) owns rooms, sessions and the slot assignment; pion callbacks
// and HTTP handlers post to it. The per-packet path does not go through the loop: each publisher's
// read goroutine reads its track and writes every packet to the slots that currently carry it,
// from a fan-out list the loop publishes atomically (publisher.fanout); a slot's rewrite state is
// guarded by its own mutex, which only a speaker change contends. A poller goroutine reads
// positions (which may wait on a peer's loop) and posts them to the loop, so the loop never waits.
//
// The client side is Dial: a Go member that publishes an Ogg Opus stream and counts what it hears
// per speaker (concord bot --voice, the tests and concord bench voice).
package voice
