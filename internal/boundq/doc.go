// Package boundq is a bounded first-in-first-out queue between goroutines whose storage grows
// with what it holds and is let go once the queue drains after holding little: a channel's
// buffer is made whole up front, so a queue sized for a burst (thousands of slots) costs every
// idle owner its full size. Producers push from any goroutine (TryPush refuses past the bound;
// PushWait waits for room); one consumer selects on Ready and then Pops, as it would receive from
// a channel.
package boundq
