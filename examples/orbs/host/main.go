// Command host is the dedicated host of the orbs example: it joins a room as its host and runs
// the game's rules (package orbs) for the browsers and bots that join.
//
//	concord serve --static examples/orbs/web --room orbs &
//	go run ./examples/orbs/host --server http://127.0.0.1:7880 --room orbs
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

func main() {
	server := flag.String("server", "http://127.0.0.1:7880", "signaling server (concord serve)")
	room := flag.String("room", "orbs", "room to host")
	token := flag.String("token", os.Getenv("CONCORD_TOKEN"), "join token, when the server has a secret (concord token --room orbs --user host --host)")
	flag.Parse()

	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}).With().Timestamp().Logger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	p, err := peer.New(peer.Config{
		Server: *server, Room: *room, User: "host", Device: fmt.Sprintf("p%d", os.Getpid()),
		Kind: signaling.KindHost, Token: *token, App: &orbs.Game{},
		Logger: log.Level(zerolog.InfoLevel),
		// pion's own logs (ICE, DTLS, SCTP): warnings and errors only.
		Link: link.Config{Logger: log.Level(zerolog.WarnLevel).With().Str("component", "pion").Logger()},
	})
	if err != nil {
		log.Fatal().Err(err).Msg("orbs host")
	}
	if err := p.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal().Err(err).Msg("orbs host")
	}
}
