package server

import (
	"errors"
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
	if o.clustered() {
		return optionError(errors.New("--world runs on a single server: a clustered world is not implemented yet"))
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
// hostDoor, as the dedicated hosts do.
func (s *Server) startWorlds(o Options, addr *net.TCPAddr, tlsOn bool, sh http.Handler, mux *http.ServeMux) error {
	if len(o.Worlds) == 0 {
		return nil
	}
	url, err := s.hostDoor(o, addr, tlsOn, sh)
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
	byName := map[string]*world.Server{}
	for _, d := range o.Worlds {
		ws, err := world.NewServer(world.ServerConfig{Def: d, URL: url, HostConfig: hostCfg,
			Store: s.store, Writer: s.writer, Interval: o.CheckpointInterval, Grace: o.WorldGrace,
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

// stopWorlds stops the region hosts (each checkpointed) before signaling closes.
func (s *Server) stopWorlds() {
	for _, ws := range s.worlds {
		ws.Close()
	}
	s.worlds = nil
}
