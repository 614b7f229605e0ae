package authority

import "github.com/concordrtc/concord/crdt"

// PeerIndex identifies a member of a room. Signaling assigns indices per room,
// monotonically, and never reuses one.
type PeerIndex uint64

// EntityID identifies an entity: the ADR-117 entity (version<<16 | number), which
// TRNP carries as the lower 32 bits of its networkId. It is crdt.Entity, so
// that every package of a peer names entities alike.
type EntityID = crdt.Entity

// Term numbers the successive hosts of a room. Signaling bumps it on every
// host change. Term 0 means that no host is known yet.
type Term uint64

// ReservedNumbers is the count of entity numbers (the low 16 bits of an
// EntityID) that Concord keeps for itself; number 0 is the room's own state.
// Reserved entities are written only by the host: they can be neither locked
// nor made an avatar, whatever their version.
const ReservedNumbers = 512

// reserved reports whether e is one of Concord's own entities.
func reserved(e EntityID) bool { return e&0xFFFF < ReservedNumbers }
