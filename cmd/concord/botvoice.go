package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// botVoice is one bot's voice session (concord bot --voice FILE.ogg / --voice-listen), dialled
// once the bot is in the room (docs/protocol.md §10).
type botVoice struct {
	mu sync.Mutex // guards c
	c  *voice.Client
}

// runBotVoice waits for p to be synced, then opens its voice session, publishing file (looped)
// unless file is "", and keeps it until ctx ends.
func runBotVoice(ctx context.Context, bv *botVoice, p *peer.Peer, cfg peer.Config, nw peerNet, file string, log zerolog.Logger) {
	for !p.Status().Synced {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := nw.config(log, &cfg); err != nil {
		log.Error().Err(err).Msg("voice: network settings")
		return
	}
	la, err := peer.LinkAPI(cfg)
	if err != nil {
		log.Error().Err(err).Msg("voice: WebRTC")
		return
	}
	defer la.Close()
	api, err := voice.NewMediaAPI(la)
	if err != nil {
		log.Error().Err(err).Msg("voice: WebRTC")
		return
	}
	dc := botDialConfig(p, cfg, api, log)
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			log.Error().Err(err).Msg("voice: --voice")
			return
		}
		defer f.Close()
		dc.Publish, dc.Loop = f, true
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	c, err := voice.Dial(dctx, dc)
	cancel()
	if err != nil {
		log.Error().Err(err).Msg("voice: no session")
		return
	}
	bv.mu.Lock()
	bv.c = c
	bv.mu.Unlock()
	<-ctx.Done()
	_ = c.Close()
}

// botDialConfig is the voice session of bot p: the member's server, room, identity and token,
// and the STUN/TURN servers signaling handed it, so that a bot behind a NAT gets a relay for
// voice as its game links do.
func botDialConfig(p *peer.Peer, cfg peer.Config, api *webrtc.API, log zerolog.Logger) voice.DialConfig {
	return voice.DialConfig{Server: strings.TrimSpace(strings.Split(cfg.Server, ",")[0]), Room: cfg.Room,
		Member: string(signaling.NewIdentity(cfg.User, cfg.Device)), Token: cfg.Token, API: api,
		ICEServers: p.ICEServers(), Logger: log}
}

// summarizeVoice is the one-line voice status of a group of bots.
func summarizeVoice(bvs []*botVoice) string {
	open, sent, heard := 0, 0, 0
	speakers := map[string]bool{}
	for _, bv := range bvs {
		bv.mu.Lock()
		c := bv.c
		bv.mu.Unlock()
		if c == nil {
			continue
		}
		open++
		sent += c.Sent()
		for who, st := range c.Speakers() {
			heard += st.Packets
			speakers[who] = true
		}
	}
	return fmt.Sprintf("voice: %d/%d sessions, %d packets sent, %d heard from %d speakers", open, len(bvs), sent, heard, len(speakers))
}
