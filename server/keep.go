package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/follow"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// Options.KeepRooms values (--keep-rooms; docs/protocol.md §6 "Kept rooms").
const (
	KeepAll       = "all"       // every room: a follower keeps those without a dedicated host here
	KeepDedicated = "dedicated" // only the rooms of this server's dedicated hosts
	KeepNone      = "none"      // no checkpoints
)

// checkKeepRooms checks KeepRooms.
func (o Options) checkKeepRooms() error {
	switch o.KeepRooms {
	case KeepAll, KeepDedicated, "":
	case KeepNone:
		if o.clustered() {
			return optionError(errors.New("--keep-rooms none: a cluster keeps its rooms in JetStream (its dedicated hosts move between nodes through their checkpoints)"))
		}
	default:
		return optionError(fmt.Errorf("--keep-rooms %q: want all, dedicated or none", o.KeepRooms))
	}
	return nil
}

// following reports whether serve runs followers: --keep-rooms all with a store, on a single
// node (a cluster's rooms move between nodes; its followers are not placed yet).
func (o Options) following() bool {
	return o.KeepRooms == KeepAll && o.Data != "" && !o.clustered()
}

// keeper runs the followers of --keep-rooms all; the zero value runs none.
type keeper struct {
	cancel context.CancelFunc
	done   chan struct{}
	api    *link.API
}

// stop stops the followers (each hands its last checkpoint to the writer) and their WebRTC.
func (k *keeper) stop() {
	if k.cancel == nil {
		return
	}
	k.cancel()
	<-k.done
	_ = k.api.Close()
	k.cancel = nil
}

// checkpoints is signaling's checkpoint source: kept rooms' first hosts restore from it.
func (s *Server) checkpoints(o Options) signaling.CheckpointSource {
	if !o.following() {
		return nil
	}
	return durable.Seeds{Store: s.store, Dropped: func(room signaling.RoomID, reason string, n int) {
		s.restoreRefused.WithLabelValues(reason).Add(float64(n))
		s.log.Warn().Str("room", string(room)).Str("reason", reason).Int("messages", n).
			Msg("restore: messages beyond the restore bounds dropped (docs/protocol.md §6)")
	}}
}

// startKeeper starts a follower for every room that has members and no dedicated host here
// (KeepAll). The followers run KeepSchemas, by default the arena's (the bundled page's game): a
// room whose host runs another table refuses its follower, which tries again a minute later.
func (s *Server) startKeeper(ctx context.Context, o Options, addr *net.TCPAddr, tlsOn bool, sh http.Handler, hosted []signaling.RoomID) error {
	if !o.following() {
		return nil
	}
	url, err := s.innerURL(o, addr, tlsOn, sh)
	if err != nil {
		return err
	}
	base, err := dedicatedHostConfig(s.log, o, "", addr)
	if err != nil {
		return err
	}
	if s.keep.api, err = peer.LinkAPI(base); err != nil {
		return err
	}
	base.Server, base.Transport = url, peer.PionTransport{API: s.keep.api}
	schemas := o.KeepSchemas
	if schemas == nil {
		schemas = arena.New(arena.Config{}).Schemas()
	}
	skip := map[signaling.RoomID]bool{signaling.RoomID(o.Room): o.DedicatedHost}
	for _, room := range hosted {
		skip[room] = true
	}
	log := s.log.With().Str("component", "follow").Logger()
	k := follow.NewKeeper(follow.KeeperConfig{
		Rooms: s.sig.Rooms, Skip: func(room signaling.RoomID) bool { return skip[room] },
		Logger: log, Registerer: s.reg,
		Follower: func(ctx context.Context, room signaling.RoomID) (follow.Config, error) {
			seed, err := durable.LoadSeed(ctx, s.store, room)
			if err != nil && !errors.Is(err, durable.ErrNoCheckpoint) {
				return follow.Config{}, err
			}
			pc := base
			if pc.Token, err = signaling.IssueToken(o.tokenKey(), signaling.Claims{
				Room: room, User: follow.DefaultUser, Device: "serve", Kind: signaling.KindHost,
				ExpiresAt: o.Now().Add(365 * 24 * time.Hour),
			}); err != nil {
				return follow.Config{}, err
			}
			return follow.Config{Peer: pc, Schemas: schemas, Writer: s.writer, Seed: seed,
				Interval: o.CheckpointInterval, Logger: log.With().Str("room", string(room)).Logger()}, nil
		},
	})
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.keep.cancel, s.keep.done = cancel, make(chan struct{})
	go func() {
		defer close(s.keep.done)
		_ = k.Run(kctx)
	}()
	return nil
}

// RestoreConfig says where a host that the server does not run fetches its room's checkpoint
// (Restore).
type RestoreConfig struct {
	// Server is the server's http(s) URL and Room the room. Required.
	Server, Room string
	// Token is the host's join token ("" on an open server).
	Token string
	// Client makes the request (nil: http.DefaultClient).
	Client *http.Client
	// Logger hears of the restore ("room restored"); the zero value discards.
	Logger zerolog.Logger
}

// Restore is how a host that the server does not run — a game's own Go program, `concord host`
// — opts in to kept rooms (docs/protocol.md §6 "Kept rooms"): it asks the server for the room's
// checkpoint and returns app wrapped so that the checkpoint is merged into the world before
// app's first HostStart (reported as true). A room without a checkpoint, or with a host already,
// gives app itself. The server's follower writes the checkpoints: the host needs no access to the
// store. On an error app is returned too: the host may start without the checkpoint, and the
// server then keeps the room's stored world rather than checkpoint a new one.
//
//	app, _, err := server.Restore(ctx, server.RestoreConfig{Server: url, Room: "lobby", Token: token}, game)
//	p, err := peer.New(peer.Config{Server: url, Room: "lobby", Token: token, App: app})
func Restore(ctx context.Context, cfg RestoreConfig, app peer.App) (peer.App, bool, error) {
	seed, err := durable.FetchSeed(ctx, cfg.Client, cfg.Server, signaling.RoomID(cfg.Room), cfg.Token)
	switch {
	case errors.Is(err, durable.ErrNoCheckpoint), errors.Is(err, durable.ErrRoomLive):
		return app, false, nil
	case err != nil:
		return app, false, err
	}
	return durable.NewApp(app, durable.AppConfig{Room: signaling.RoomID(cfg.Room), Seed: seed.Data, SeedClock: seed.Clock, Logger: cfg.Logger}), true, nil
}
