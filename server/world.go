package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/world"
)

// Worlds of regions (Options.Worlds; docs/protocol.md §11): each a world.Server whose region
// hosts run in this process, dialling signaling like the dedicated hosts, and whose directory
// answers at /api/worlds/{W}.

// checkWorlds validates Options.Worlds.
func (o Options) checkWorlds() error {
	if len(o.Worlds) == 0 {
		return nil
	}
	if o.WorldGrace < 0 {
		return optionError(fmt.Errorf("--world-grace %v: want ≥ 0", o.WorldGrace))
	}
	seen := map[string]bool{}
	for i := range o.Worlds {
		d := o.Worlds[i]
		if err := d.Check(); err != nil {
			return optionError(err)
		}
		if seen[d.Name] {
			return optionError(fmt.Errorf("--world %q: given twice", d.Name))
		}
		seen[d.Name] = true
	}
	return nil
}

// pinWorldRooms pins every region room's host to the region hosts' identity.
func pinWorldRooms(o Options, rooms map[signaling.RoomID]signaling.RoomConfig) {
	for _, d := range o.Worlds {
		for _, room := range d.Rooms() {
			rooms[room] = signaling.RoomConfig{PinnedHosts: []signaling.Identity{DedicatedHostUser}}
		}
	}
}

// startWorlds runs the worlds' Servers and routes /api/worlds/ to them. Their region hosts dial
// innerURL, as the dedicated hosts do.
func (s *Server) startWorlds(o Options, addr *net.TCPAddr, tlsOn bool, sh http.Handler, mux *http.ServeMux) error {
	if len(o.Worlds) == 0 {
		return nil
	}
	url, err := s.innerURL(o, addr, tlsOn, sh)
	if err != nil {
		return err
	}
	hostCfg := func(room signaling.RoomID) (cfg peer.Config, err error) {
		if cfg, err = dedicatedHostConfig(s.log, o, room, addr); err != nil {
			return cfg, err
		}
		cfg.Interest = nil // the arena's radius reads arena avatars
		cfg.Token, err = hostToken(o, room)
		return cfg, err
	}
	var cl *world.Cluster
	var node string
	if s.node != nil {
		cl, node = &world.Cluster{Conn: s.store.Conn(), Owner: s.worldOwner}, s.node.Name()
	}
	byName := map[string]*world.Server{}
	for _, d := range o.Worlds {
		ws, err := world.NewServer(world.ServerConfig{Def: d, URL: url, HostConfig: hostCfg,
			Store: s.store, Writer: s.writer, Interval: o.CheckpointInterval, Grace: o.WorldGrace,
			Node: node, Cluster: cl, Secret: []byte(o.Secret), AdminKey: o.Limits.AdminKey,
			Registerer: s.reg, Logger: s.log.With().Str("component", "world").Str("world", d.Name).Logger()})
		if err != nil {
			return err
		}
		s.worlds = append(s.worlds, ws)
		byName[d.Name] = ws
	}
	mux.Handle("/api/worlds/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/worlds/"), "/")
		if ws := byName[name]; ws != nil {
			ws.Handler().ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"no such world"}` + "\n"))
	}))
	return nil
}

// worldOwner is a clustered world's placement (docs/protocol.md §11 "Cluster"): a region's room
// is placed like a room with a dedicated host, on the holder of its lease in the room directory.
// A region no live node holds is taken here (the lease is free, or its holder died and it
// expired): the asking node loads it, from its checkpoint. The lease is kept while the region's
// host is a member of its room here (Node.Touch covers the time until it joins) and released a
// TTL after the region unloads (cluster.Node's Keep: the room is neither open nor joined here).
func (s *Server) worldOwner(ctx context.Context, r world.Region) (string, error) {
	dir, room := s.node.Directory(), r.Room()
	if dir.Owns(room) {
		return dir.Node(), nil
	}
	if l, ok := dir.Cached(room); ok && l.Node != dir.Node() && l.Live(dir.Now()) {
		return l.Node, nil // the watcher's view: no read of the bucket for each handover
	}
	l, err := dir.Acquire(ctx, room)
	if err != nil {
		return "", err
	}
	if l.Node == dir.Node() {
		s.node.Touch(room)
	}
	return l.Node, nil
}

// stopWorlds stops the region hosts (each checkpointed) before signaling closes.
func (s *Server) stopWorlds() {
	for _, ws := range s.worlds {
		ws.Close()
	}
	s.worlds = nil
}
