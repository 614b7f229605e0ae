package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/tiles"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
)

// knownWorlds are the worlds `serve --world` can run.
var knownWorlds = map[string]func() world.Def{tiles.Name: tiles.Def}

// worldsFlags adds --world and --world-grace (docs/protocol.md §11).
func worldsFlags(fs *flag.FlagSet, o *server.Options) {
	fs.Func("world", "serve a world of regions (docs/protocol.md §11): tiles (repeatable for several worlds)", func(v string) error {
		mk := knownWorlds[v]
		if mk == nil {
			return fmt.Errorf("unknown world %q (known: tiles)", v)
		}
		o.Worlds = append(o.Worlds, mk())
		return nil
	})
	fs.DurationVar(&o.WorldGrace, "world-grace", world.DefaultGrace, "a world region nobody is in or watches is checkpointed and unloaded after this")
}

// runWorldBots runs n bots in world name that wander across its regions and edit it, until ctx
// ends; every second it prints where they are.
func runWorldBots(ctx context.Context, name, server, prefix, secret string, n int, nw peerNet, stdout io.Writer, log zerolog.Logger) error {
	mk := knownWorlds[name]
	if mk == nil {
		return usageError{fmt.Errorf("--world %q: unknown world (known: tiles)", name)}
	}
	def := mk()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clients := make([]*world.Client, 0, n)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	seed := uint64(time.Now().UnixNano())
	pid := fmt.Sprintf("p%d", os.Getpid())
	for i := range n {
		user, device := fmt.Sprintf("%s%d", prefix, i), pid
		cfg := world.Config{Server: server, World: name, App: def.App, User: user, Device: device,
			Start: [2]int{i % def.Cols, (i / def.Cols) % def.Rows}, Logger: log}
		cfg.Peer = func(room signaling.RoomID) peer.Config {
			pc := peer.Config{Server: server, Kind: signaling.KindBot, Logger: log}
			_ = nw.config(log, &pc)
			return pc
		}
		if secret != "" {
			cfg.Token = func(room signaling.RoomID) (string, error) {
				return signaling.IssueToken([]byte(secret), signaling.Claims{Room: room, User: user, Device: device,
					Kind: signaling.KindBot, ExpiresAt: time.Now().Add(24 * time.Hour)})
			}
		}
		c, err := world.Join(ctx, cfg)
		if err != nil {
			return err
		}
		clients = append(clients, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tiles.RunBot(ctx, c, tiles.BotConfig{Seed: seed + uint64(i)})
		}()
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			where := map[string]int{}
			for _, c := range clients {
				if r, _, ok := c.Resident(); ok {
					where[string(r.Room())]++
				}
			}
			fmt.Fprintf(stdout, "%d bots in world %s, resident in %d regions: %v\n", len(clients), name, len(where), where)
		}
	}
}
