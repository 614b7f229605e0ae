package hostsnapshot

import "errors"

var (
	// ErrHostState reports a malformed hostState blob. The sender is broken: drop the peer.
	ErrHostState = errors.New("hostsnapshot: malformed host state")
	// ErrSchemaMismatch reports a host running a different schema table. Leave the room with a clear error.
	ErrSchemaMismatch = errors.New("hostsnapshot: schema table differs from the host's")
	// ErrSpawn reports a spawn that does not match its schema. The sender is broken: drop the peer.
	ErrSpawn = errors.New("hostsnapshot: malformed spawn")
)
