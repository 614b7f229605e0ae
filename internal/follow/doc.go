// Package follow runs server-side followers: a Follower is a member that follows one room
// read-only and exposes its replica to the server (a View of the world and change
// notifications), and, given a durable.Writer, checkpoints it — so that a room hosted by a
// browser tab or by a host process the server does not run is kept like a dedicated host's
// (docs/protocol.md §6 "Kept rooms"). A Keeper starts a Follower for every room that has
// members and stops it when only followers are left.
//
// A Follower is a peer (package peer) that joins with NoHost (signaling never elects it,
// whatever its token allows) and kind "host" (hosts spawn no avatar for it), and runs an App
// that writes nothing. It decodes the host's snapshots with the game's schema table
// (Config.Schemas): a host that runs another table refuses it (CloseSchemaMismatch) and Run
// returns peer.ErrSchemaMismatch.
//
// API:
//
//	f, err := follow.New(follow.Config{Peer: peer.Config{Server: url, Room: "lobby", Transport: t},
//		Schemas: game.Schemas(), Writer: writer, Seed: seed})
//	go f.Run(ctx)                 // until ctx ends; then the final checkpoint
//	<-f.Changes()                 // the world changed (coalesced: one value for many ticks)
//	f.Do(ctx, func(v follow.View) { pos, _ := v.Get(avatar, 0) })
//
// What a follower writes is what it saw: a hostile host can feed it garbage, bounded by a
// member's snapshot limits (docs/protocol.md §5), by Config.MaxWorld (default
// durable.MaxCheckpoint: past it the follower leaves), by the writer's size refusal and, when the
// checkpoint is read back, by the restore bounds (docs/security.md §8). At its first sync it checks
// that the room's world holds the stored checkpoint (durable.Descends) and writes nothing if not,
// so a room whose first host did not restore it keeps its stored world.
//
// Goroutines: a Follower's state is its peer's loop's; View is valid only inside Do (or
// Config.OnEvent), which run on that loop. Changes, Synced and Done may be called from any
// goroutine. A Keeper runs one goroutine (Run) that owns its followers' table, plus one per
// follower.
package follow
