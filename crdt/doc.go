// Package crdt is Concord's ADR-117 replica: the CRDT that is the replicated state of a room
// (docs/design.md §3), byte-compatible with @dcl/ecs 7.x on the wire and convergent in every case.
//
// It owns the replica state (an LWW element set per (entity, component), the deleted-entity
// G-set, the append value sets and a Lamport clock), the wire codec (AppendMessage,
// ConsumeMessage, Reader) and the exports built on them (AppendState, Hash, BucketDigests,
// StateJSON). The package is pure: it starts no goroutines and holds no locks. A Replica is
// owned by one goroutine at a time (in Concord, the peer loop); the codec functions are
// stateless and safe anywhere.
//
// # Merge rules
//
//   - LWW per (entity, component): the higher timestamp wins. At equal timestamps the values are
//     compared: a deleted component is less than any bytes (even empty), then the longer value
//     is greater, then unsigned bytes left to right; the greater wins and equal is NoChange.
//     This is the @dcl/ecs tie-break. A losing message is Outdated and AppendCorrection writes
//     the corrective PUT or DELETE_COMPONENT.
//   - Deleted entities: the highest deleted version is kept per entity number. A message of any
//     type for version v of number n implicitly deletes every version below v and removes their
//     entries; a message for a version at or below the deleted version is Ignored. @dcl/ecs
//     records the implicit deletion but keeps the older version's data, so its replicas can
//     diverge with the delivery order; Concord removes it, so every order converges.
//   - Append values: a grow-only set per (entity, component), de-duplicated by value (a value
//     keeps its highest timestamp), truncated to the greatest Config.AppendRetention values
//     (default 128) by (timestamp, then value as above). The top N of a grow-only set is a join.
//   - Lamport clock (EngineApi): every merged timestamp is observed (clock = max(clock, ts));
//     a local write ticks first (clock+1) and is applied through the same rules.
//
// The _NETWORK message types are merged as their local counterparts on Message.Entity; the
// network id is not part of the state (mapping network ids is the session layer's business).
//
// # Canonical export
//
// AppendState writes DELETE_ENTITY per deleted number (ascending number, highest version),
// then every LWW entry as PUT_COMPONENT or DELETE_COMPONENT (ascending entity as a full 32-bit id,
// then component), then every append value as APPEND_VALUE (ascending entity, component, then
// timestamp and value). Hash is a set hash of exactly those messages (the sum of a 64-bit hash of
// each), kept incrementally per entity number so that it costs the entities changed since the last
// call; BucketDigests splits the same sum by entity number % buckets. docs/protocol.md §3 is the
// full description.
package crdt
