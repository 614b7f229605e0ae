// Package hostsnapshot builds a TRNP HostSnapshot from a replica and applies one into a replica.
//
// A snapshot carries the replicated world in two parts. The spawns carry every entity that has a schema:
// its schema id, creation data and the values of its live properties (update data = the schema's mask
// followed by the values, as in an Update). hostState carries everything the spawns do not: the CRDT
// timestamp of every value the spawns hold, the deleted-entity set, tombstones, append values, components
// outside any schema (authority records, room state without a schema), the host's Lamport clock and term,
// and the schema-table fingerprint. No property value travels twice.
//
// A snapshot may cover only some buckets of the world (bucket = entity number % bucket count): a host that
// knows which buckets of a member differ (by digest) sends only those, so that a migration moves bytes in
// proportion to how much replicas differ. A full snapshot covers every bucket.
//
// Apply never replaces a replica: it merges the snapshot and returns the corrections the receiver must send
// back, that is every entry of the covered buckets where the receiver's replica wins (the ADR-117
// corrective-message rule).
//
// A host that sends whole-world snapshots one join after another keeps a Cache: each page of 256 entity
// numbers stays encoded until a number in it changes, so a snapshot re-encodes only what moved since the
// last one. The bytes are the same with or without it.
//
// The package is pure: no goroutines, no locks. Callers own the replica and call from its goroutine.
package hostsnapshot
