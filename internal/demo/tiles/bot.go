package tiles

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/concordrtc/concord/world"
)

// BotConfig is the behaviour of a wandering bot.
type BotConfig struct {
	Seed uint64
	// Every is how often the bot decides again (0: 500 ms).
	Every time.Duration
	// EditEvery: one decision in this many places or removes a block (0: 4).
	EditEvery int
}

// BotStats counts what a bot did.
type BotStats struct {
	Walks, Edits, Refused int
}

// RunBot drives c's player until ctx ends: it walks in a random direction, turning now and
// then (so that it wanders across region borders), and places or removes a block next to it
// every few decisions. Inputs the client refuses (too many unacknowledged) are counted.
func RunBot(ctx context.Context, c *world.Client, cfg BotConfig) BotStats {
	if cfg.Every <= 0 {
		cfg.Every = 500 * time.Millisecond
	}
	if cfg.EditEvery <= 0 {
		cfg.EditEvery = 4
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xb07))
	var st BotStats
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return st
		case <-t.C:
		}
		if _, _, ok := c.Resident(); !ok {
			continue
		}
		var in []byte
		if i%cfg.EditEvery == cfg.EditEvery-1 {
			p, ok := ownPos(ctx, c)
			if !ok {
				continue
			}
			tx, ty := p.X/Tile+int32(rng.IntN(3))-1, p.Y/Tile+int32(rng.IntN(3))-1
			if rng.IntN(3) == 0 {
				in = Remove(tx, ty)
			} else {
				in = Place(tx, ty, byte(1+rng.IntN(Kinds)))
			}
			st.Edits++
		} else if rng.IntN(3) == 0 || i == 0 {
			in = Walk(int16(rng.IntN(2*MaxSpeed+1)-MaxSpeed), int16(rng.IntN(2*MaxSpeed+1)-MaxSpeed))
			st.Walks++
		} else {
			continue
		}
		if c.Input(in) != nil {
			st.Refused++
		}
	}
}

// ownPos reads the player's avatar position from the merged view.
func ownPos(ctx context.Context, c *world.Client) (world.Vec, bool) {
	for _, e := range c.View(ctx) {
		if e.Schema == SchemaPlayer && e.Owner == c.Self() {
			return world.ParseVec(e.Values[PlayerPos])
		}
	}
	return world.Vec{}, false
}
