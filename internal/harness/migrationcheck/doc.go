// Package migrationcheck states Concord's migration invariant as code, for the tests and tools that
// kill hosts: for every key, the converged timestamp is at least the highest timestamp any
// surviving replica held when the old host vanished; no deleted entity version is forgotten; no
// live entity disappears unless the caller says it may (the avatar of a member that left).
//
// A View is read from a World on its peer's loop (inside peer.Peer.Do). The package owns no
// goroutines and no locks.
package migrationcheck
