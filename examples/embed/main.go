// Command embed is a game server in one program: it embeds Concord's server (package server)
// with the orbs game (examples/orbs) as the dedicated host of its room, and serves the game's
// page. No `concord serve`, no separate host process.
//
//	go run ./examples/embed --web examples/orbs/web     # then open http://127.0.0.1:7880/?user=ann
//	go run ./examples/orbs-bot --room orbs               # a bot for company
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/examples/orbs"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
)

func main() {
	addr := flag.String("addr", server.DefaultAddr, "listen address")
	room := flag.String("room", "orbs", "the game's room")
	web := flag.String("web", "", "the game's page and assets, served at / (examples/orbs/web); empty: the arena demo page")
	data := flag.String("data", "", "durable data directory: the room keeps its world across restarts (empty: in memory)")
	flag.Parse()

	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}).With().Timestamp().Logger().Level(zerolog.InfoLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, server.Options{
		Addr:   *addr,
		Logger: log,
		Static: *web,
		Data:   *data,
		// The room's dedicated host runs the orbs game, in this process.
		Apps: map[string]func() peer.App{*room: func() peer.App { return &orbs.Game{} }},
		// Only loopback WebRTC when asked (a shared test machine), as `concord serve` does.
		Network: server.Network{LoopbackOnly: os.Getenv("CONCORD_LOOPBACK_ONLY") != ""},
		Secret:  os.Getenv("CONCORD_SECRET"),
	}); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends or a part of the server fails, then shuts it down.
func run(ctx context.Context, log zerolog.Logger, o server.Options) error {
	s, err := server.New(o)
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	log.Info().Str("url", s.URL()).Msg("embed: serving the orbs game")
	select {
	case <-ctx.Done():
		err = nil
	case err = <-s.Failed():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(err, s.Shutdown(sctx))
}
