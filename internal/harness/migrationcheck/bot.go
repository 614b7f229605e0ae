package migrationcheck

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/peer"
)

// Clock is the clock a test gives its arena bots: jumping it past their MoveFor makes every bot
// stop writing (handing back a box it holds); Resume lets them move again. Safe for concurrent use.
type Clock struct{ offset atomic.Int64 }

// Now is the wall clock plus the current jump; pass it as arena.BotConfig.Now.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Jump moves the clock d ahead of the wall clock.
func (c *Clock) Jump(d time.Duration) { c.offset.Store(int64(d)) }

// Resume brings the clock back to the wall clock.
func (c *Clock) Resume() { c.offset.Store(0) }

// Bot is the arena game that also remembers the avatar position its peer wrote last, so that a
// test can check that a migration kept every member's last write (a check on values, which the
// timestamp invariant alone does not make).
type Bot struct {
	*arena.Game

	mu      sync.Mutex // guards lastPos
	lastPos []byte
}

// Tick runs the game and notes the avatar position it wrote, if it moved. It runs on the peer's
// loop.
func (b *Bot) Tick(w *peer.World, dt time.Duration) {
	me, ok := w.AvatarOf(w.Self())
	var before []byte
	if ok {
		v, _ := w.Get(me, arena.AvatarPos)
		before = bytes.Clone(v)
	}
	b.Game.Tick(w, dt)
	if !ok {
		return
	}
	if after, _ := w.Get(me, arena.AvatarPos); !bytes.Equal(before, after) {
		b.mu.Lock()
		b.lastPos = bytes.Clone(after)
		b.mu.Unlock()
	}
}

// Wrote returns the avatar position the bot wrote last (nil if none). Safe from any goroutine.
func (b *Bot) Wrote() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastPos
}
