package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
