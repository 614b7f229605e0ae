package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
	"github.com/concordrtc/concord/world/tiles"
)

// worldsOptions: `serve --world NAME` serves a world of regions (docs/protocol.md §11).
type worldsOptions struct {
	name  string        // --world: "" none
	grace time.Duration // --world-grace
}

// knownWorlds are the worlds serve can run.
var knownWorlds = map[string]func() world.Def{tiles.Name: tiles.Def}

func worldsFlags(fs *flag.FlagSet, o *worldsOptions) {
	fs.StringVar(&o.name, "world", "", "serve a world of regions (docs/protocol.md §11): tiles")
	fs.DurationVar(&o.grace, "world-grace", world.DefaultGrace, "a world region nobody is in or watches is checkpointed and unloaded after this")
}

func (o worldsOptions) check(clustered bool) error {
	if o.name == "" {
		return nil
	}
	if knownWorlds[o.name] == nil {
		return usageError{fmt.Errorf("--world %q: unknown world (known: tiles)", o.name)}
	}
	if clustered {
		return usageError{errors.New("--world runs on a single server: a clustered world is not implemented yet")}
	}
	if o.grace < 0 {
		return usageError{fmt.Errorf("--world-grace %v: want ≥ 0", o.grace)}
	}
	return nil
}

// pinWorldRooms pins the region rooms' host to the region hosts' identity.
func pinWorldRooms(o serveOptions, rooms map[signaling.RoomID]signaling.RoomConfig) {
	if o.worlds.name == "" {
		return
	}
	def := knownWorlds[o.worlds.name]()
	for _, room := range def.Rooms() {
		rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{dedicatedHostUser}}
	}
}

// startWorld runs the world's Server (its region hosts dial signaling like the dedicated hosts:
// the public listener, or a loopback door of their own when that is TLS or on every interface)
// and routes /api/worlds/ to it.
func (s *server) startWorld(o serveOptions, addr *net.TCPAddr, tlsOn bool, sh http.Handler, mux *http.ServeMux, reg prometheus.Registerer) error {
	if o.worlds.name == "" {
		return nil
	}
	url := s.url
	if tlsOn || addr.IP.IsUnspecified() {
		iln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		imux := http.NewServeMux()
		imux.Handle("/ws", sh)
		inner := newHTTPServer(imux, o.http)
		s.worldInner = inner
		go func() { s.served <- inner.Serve(iln) }()
		url = "http://" + iln.Addr().String()
	}
	hostCfg := func(room signaling.RoomID) (cfg peer.Config, err error) {
		if cfg, err = dedicatedHostConfig(s.log, o, room, addr); err != nil {
			return cfg, err
		}
		cfg.Interest = nil // the arena's radius reads arena avatars
		if o.secret != "" {
			cfg.Token, err = signaling.IssueToken([]byte(o.secret), signaling.Claims{
				Room: room, User: dedicatedHostUser, Device: "serve", MayHost: true,
				Kind: signaling.KindHost, ExpiresAt: time.Now().Add(365 * 24 * time.Hour),
			})
		}
		return cfg, err
	}
	var err error
	s.world, err = world.NewServer(world.ServerConfig{Def: knownWorlds[o.worlds.name](), URL: url, HostConfig: hostCfg,
		Store: s.store, Writer: s.writer, Interval: o.checkpointInterval, Grace: o.worlds.grace, Registerer: reg,
		Logger: s.log.With().Str("component", "world").Logger()})
	if err != nil {
		return err
	}
	mux.Handle("/api/worlds/", s.world.Handler())
	return nil
}

// stopWorld stops the region hosts (each checkpointed) before signaling closes.
func (s *server) stopWorld(ctx context.Context) {
	if s.world != nil {
		s.world.Close()
		s.world = nil
	}
	if s.worldInner != nil {
		_ = s.worldInner.Shutdown(ctx)
		s.worldInner = nil
	}
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
