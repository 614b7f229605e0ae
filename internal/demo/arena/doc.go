// Package arena is Concord's demo world: avatars move, boxes can be grabbed (an authority lock)
// and pushed, a score lives in room state, and boxes slide to rest with friction so that a room
// without input comes to rest and replicas can be compared. The dedicated host, the bots and
// (in JavaScript) the browser page all run it.
//
// Positions and velocities are fixed-point int32 millimetres (per second), so that Go and
// JavaScript compute and encode identical values. A Game is used by one peer's loop goroutine.
package arena
