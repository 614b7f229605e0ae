package main

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// TestBotVoiceICEServers: a bot's voice session dials with the STUN/TURN servers signaling
// handed the member, so that behind a NAT voice gets a relay as the game links do.
func TestBotVoiceICEServers(t *testing.T) {
	const turn = "turn:127.0.0.1:3478"
	s := startTestServer(t, server.Options{ICEServers: []string{"turn:u:p@127.0.0.1:3478"}, Voice: server.Voice{On: true}})
	cfg := peer.Config{Server: s.url, Room: "arena", User: "bot", Device: "d1", Kind: signaling.KindBot,
		App: arena.New(arena.Config{}), Logger: zerolog.Nop()}
	p, err := peer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	poll.Until(t, 10*time.Second, "the bot joined with ICE servers", func() error {
		if len(p.ICEServers()) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	ice := p.ICEServers()
	if len(ice[0].URLs) == 0 || ice[0].URLs[0] != turn || ice[0].Username != "u" || ice[0].Credential != "p" {
		t.Fatalf("the member's ICE servers: %+v", ice)
	}
	dc := botDialConfig(p, cfg, nil, zerolog.Nop())
	if !reflect.DeepEqual(dc.ICEServers, ice) {
		t.Fatalf("voice dials with %+v, the member has %+v", dc.ICEServers, ice)
	}
	if dc.Member != "bot/d1" || dc.Room != "arena" || dc.Server != s.url {
		t.Fatalf("dial config: %+v", dc)
	}
}
