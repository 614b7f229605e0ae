// Package authority decides who may write which entity of a Concord room.
//
// The rules come from the Third Room Network Protocol (TRNP, "Authority"):
// the host is authoritative for every entity except each peer's avatar, which
// that peer writes itself (client authority). A non-host peer may take a
// temporary lock on a host entity while it interacts with it, and gives it
// back afterwards. Exactly one peer is the author of an entity at any time;
// the host rejects every write from anyone else.
//
// # What it owns
//
//   - [Table]: the authority of every entity (host-owned by default, an
//     avatar, or locked by a peer), the lock timers, and the admission of
//     writes ([Table.AdmitWrite]) and migration corrections
//     ([Table.AdmitCorrection]).
//   - [Fence]: on a peer, the (term, host) pair that tells a message from the
//     current host apart from a stale or premature one.
//   - [Record], [AppendRecord], [ConsumeRecord]: the canonical bytes of one
//     entity's authority, stored as a CRDT component so that authority
//     survives host migration.
//
// A rejection is a [*RejectError]: drop that one operation and keep the peer.
// (A malformed message is a protocol error that closes the peer; that is the
// codec's business, not this package's.)
//
// # Flows
//
// On the host, for every message heard from peer p, call [Table.Touch], then
// [Table.AdmitWrite] for each entity the message writes. A lock request goes to
// [Table.RequestLock] and a release to [Table.Relinquish]; call [Table.Expire]
// on every tick. Each [Transfer] these return is broadcast as a TRNP
// AuthorityTransfer, and the entity's new [Record] is put as its authority
// component (CRDT component id 2). When a member leaves, [Table.Leave] returns
// its avatars (to despawn) and its released locks (to broadcast).
//
// On a peer, every host message passes [Fence.Accept] first.
//
// On host migration, the new host builds a fresh Table with itself as host,
// calls [Table.Restore] for every authority component in its replica, then
// [Table.Leave] for the old host. While merging the corrections the peers
// send back, it admits each one with [Table.AdmitCorrection].
//
// # Goroutines
//
// The package owns no goroutines and no locks, and reads no clock: time comes
// in as now parameters from the caller's injected clock. A Table or a Fence
// belongs to one goroutine (the peer loop that owns the replica); other
// goroutines must not call it.
package authority
