// Command orbs-bot is a headless player of the orbs example: it joins a room, walks its avatar to
// the nearest orb, over and over, and prints its score when it stops.
//
//	go run ./examples/orbs-bot --server http://127.0.0.1:7880 --room orbs --for 30s
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
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// NewBot is the orbs App of a bot: the game, steered to the nearest orb.
func NewBot() *orbs.Game {
	return &orbs.Game{Steer: func(w *peer.World, self peer.Entity) orbs.Pos {
		v, _ := w.Get(self, orbs.PlayerPos)
		at := orbs.DecodePos(v)
		if o, ok := orbs.Nearest(w, at); ok {
			return o
		}
		return at
	}}
}

func main() {
	server := flag.String("server", "http://127.0.0.1:7880", "signaling server (concord serve)")
	room := flag.String("room", "orbs", "room to join")
	user := flag.String("user", "bot", "user name")
	token := flag.String("token", os.Getenv("CONCORD_TOKEN"), "join token, when the server has a secret")
	playFor := flag.Duration("for", 0, "leave after this long (0: play until interrupted)")
	stopAfter := flag.Uint("stop-after", 0, "stand still once the bot has taken this many orbs (0: never), so that the room comes to rest")
	flag.Parse()

	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}).With().Timestamp().Logger().Level(zerolog.InfoLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *playFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *playFor)
		defer cancel()
	}
	app := NewBot()
	if *stopAfter > 0 {
		steer := app.Steer
		still := false
		app.Steer = func(w *peer.World, self peer.Entity) orbs.Pos {
			if orbs.Points(w, w.Self()) >= uint32(*stopAfter) {
				if !still {
					still = true
					log.Info().Uint32("orbs", orbs.Points(w, w.Self())).Msg("standing still")
				}
				v, _ := w.Get(self, orbs.PlayerPos)
				return orbs.DecodePos(v) // where it is
			}
			return steer(w, self)
		}
	}
	p, err := peer.New(peer.Config{
		Server: *server, Room: *room, User: *user, Device: fmt.Sprintf("p%d", os.Getpid()),
		Kind: signaling.KindBot, Token: *token, App: app, Logger: log,
		Link: link.Config{Logger: log.Level(zerolog.WarnLevel).With().Str("component", "pion").Logger()},
	})
	if err != nil {
		log.Fatal().Err(err).Msg("orbs bot")
	}
	var points uint32
	reader := make(chan struct{})
	go func() {
		defer close(reader)
		// Read the score once a second (a Do runs on the peer's loop) until the bot stops.
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.Done():
				return
			case <-t.C:
				_ = p.Do(ctx, func(w *peer.World) { points = orbs.Points(w, w.Self()) })
			}
		}
	}()
	err = p.Run(ctx)
	<-reader
	fmt.Printf("%s took %d orbs\n", *user, points)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		log.Fatal().Err(err).Msg("orbs bot")
	}
}
