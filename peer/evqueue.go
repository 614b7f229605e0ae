package peer

import "github.com/concordrtc/concord/internal/boundq"

// maxLoopEvents bounds the loop's event queue: past it an unreliable datagram is dropped
// (Status.Dropped) and a reliable message or a link's state change waits, holding back its
// link's reader, until the loop takes one.
const maxLoopEvents = 4096

// idleLoopEvents is the largest queue storage kept once the queue drains; a bigger one, left by a
// burst, is dropped, so that an idle peer holds at most this many slots (40 bytes each).
const idleLoopEvents = 16

// newEventQueue makes the loop's event queue. Its storage grows with what it holds and is let go
// once the queue drains after holding little (boundq): a channel of maxLoopEvents slots, made up
// front, cost every idle member 160 KiB for a queue that holds a handful of events at a time. The
// links' goroutines push; only the loop pops.
func newEventQueue() *boundq.Queue[loopEvent] {
	return boundq.New[loopEvent](maxLoopEvents, idleLoopEvents)
}
