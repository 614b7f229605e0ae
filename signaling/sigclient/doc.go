// Package sigclient is the Go client of Concord's signaling server (package signaling), and
// the wire protocol both sides share: the JSON messages (docs/protocol.md §4), the room's
// identifiers (RoomID, Identity, PeerIndex, Term, Kind), the error codes and their sentinels,
// and Elect, the election rule a peer recomputes when signaling is unreachable.
//
// It is separate from the server so that a program that only joins rooms (package peer, a bot,
// a dedicated host) links neither the server's metrics (Prometheus) nor its token checks (JWT).
// Package signaling re-exports every name here (signaling.Client is sigclient.Client), so
// either import works; peer imports this one, and its TestNoServerDependencies keeps it so.
//
// # Goroutines
//
// A Client runs a reader and a writer goroutine. Its methods may be called from any goroutine;
// they never block beyond their context, and Events never blocks the reader (an undrained queue
// disconnects instead). Everything else here is pure: no goroutines, no shared state.
package sigclient
