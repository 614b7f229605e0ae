// Package world makes worlds bigger than a room (docs/protocol.md §11): a grid of regions, each an
// ordinary Concord room with a dedicated Go host, and a world client that is a member of the
// regions around its player and crosses their borders without losing its avatar or its inputs.
//
// The server side is a Server: it runs region hosts on demand (a peer.Peer per loaded region),
// answers the directory (GET /api/worlds/{W}), hands avatars from region host to region host,
// unloads regions nobody visits (checkpointed first) and keeps each player's data between visits.
// The client side is Join: one Client per player, a peer.Peer per region room it follows, merged
// into one view.
//
// A region host is authoritative: it alone writes the avatars of the players resident in its
// region, from their inputs (TRNP Actions with a sequence number), and it alone decides that an
// avatar has left its bounds. A handover is a call from the source region's loop to the
// destination region's loop through the Server; no client message carries avatar state into a
// region.
//
// Where a player is resident is ordered by its avatar's generation: one more at every handover and
// arrival, never below the residence record's or the saved data's, so that it grows across a whole
// cluster's restart too; a client takes only a newer word, and only from a host that holds or
// handed the avatar (residentRule), and a Server that closes loads nothing more, so that every
// region host it ran ends unloaded, its residents saved (docs/protocol.md §11 "Cluster restart").
// The client's net where that fails (a record lost, a generation started over): once its resident
// region's host has said nothing of the player for Config.ResidentSilence, it takes the holder's
// word whatever its generation, and at twice that joins its region again to be placed anew
// (docs/protocol.md §11 "Residence silence").
//
// Ownership: each region's state (its peer.World, its residents) belongs to its host's loop; the
// Server's tables (regions, players) are guarded by its mutex, never held across a call into a
// loop. A Client's state belongs to its own goroutine (run); region peers report to it through a
// bounded channel.
package world
