package peer

import "errors"

var (
	// ErrNotHost: the operation is the host's (spawning, despawning).
	ErrNotHost = errors.New("peer: only the host may do this")
	// ErrNoAuthority: this peer may not write the entity.
	ErrNoAuthority = errors.New("peer: no authority over entity")
	// ErrNoEntity: no live entity has that id.
	ErrNoEntity = errors.New("peer: no such entity")
	// ErrNoProperty: the entity's schema has no such property.
	ErrNoProperty = errors.New("peer: no such property")
	// ErrExists: the entity exists already.
	ErrExists = errors.New("peer: entity exists")
	// ErrWorldFull: every entity number is in use.
	ErrWorldFull = errors.New("peer: no free entity number")
	// ErrClosed: the peer has stopped.
	ErrClosed = errors.New("peer: closed")
	// ErrSchemaMismatch: the host runs a different schema table; this peer cannot join.
	ErrSchemaMismatch = errors.New("peer: schema table differs from the host's")
	// ErrConfig: the configuration cannot work.
	ErrConfig = errors.New("peer: invalid config")
	// ErrTooLarge is returned for an application message, action or append value over its limit.
	ErrTooLarge = errors.New("peer: too large")
	// ErrNoPeer is returned for a message or grant to a peer that is not in the room.
	ErrNoPeer = errors.New("peer: no such peer in the room")
	// ErrBadComponent is returned for an append to a component Concord owns or a schema property.
	ErrBadComponent = errors.New("peer: component cannot hold an append set")
	// ErrWorldLimit is returned for an append over a bound of WorldLimits: one append set more
	// than an entity may carry, or a world grown to its size bound.
	ErrWorldLimit = errors.New("peer: over a world limit")
	// ErrBadMessageType is returned for an application message type outside 128–255.
	ErrBadMessageType = errors.New("peer: application message types are 128–255")
)
