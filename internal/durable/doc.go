// Package durable keeps rooms across restarts of `concord serve`: an embedded nats-server with
// JetStream on file storage holds each room's checkpoint (an ADR-117 message stream, the bytes of
// a main.crdt file) as the last message of its subject in a stream, and each room's signaling counters
// in a KV bucket.
//
// Store is the storage: Open starts the embedded server (no listening port: the connection is in
// process) and makes the buckets. Writer takes checkpoints from host loops through a bounded
// queue and writes them on its own goroutine. App wraps a dedicated host's peer.App: it merges
// the room's last checkpoint (or its scene) before the game's HostStart, and encodes checkpoints
// a slice of entity numbers per tick, so that the host loop spends well under a millisecond on
// any one tick (see BenchmarkCheckpointSlice).
//
// A room hosted elsewhere (a browser tab, a host process of its own) is kept by a follower
// (internal/follow) that runs App in Follow mode: it checkpoints its replica once synced, after
// checking that the room's world holds the stored checkpoint (Descends). Such a room's first
// host restores it over HTTP: Seeds serves LoadSeed's bounded checkpoint to signaling's
// GET /api/rooms/{room}/checkpoint, and FetchSeed is the Go host's side of it.
//
// Keys are per room (RoomKey), so a cluster of nodes can share the buckets; a checkpoint carries
// its term, and Store refuses to overwrite a checkpoint of a later term.
package durable
