package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// newPeer makes the peer cfg describes, with its own pion transport as nw says: by default this
// machine's own address when cfg.Server is a loopback URL (loopback only under envLoopbackOnly),
// any address otherwise.
func newPeer(cfg peer.Config, nw peerNet) (*peer.Peer, error) {
	if err := nw.config(cfg.Logger, &cfg); err != nil {
		return nil, err
	}
	return peer.New(cfg)
}

// runHost runs a dedicated host for room until ctx ends. A room the server keeps (serve
// --keep-rooms all) that no one hosts comes back from its checkpoint, merged before the game's
// HostStart (docs/protocol.md §6 "Kept rooms").
func runHost(ctx context.Context, log zerolog.Logger, nw peerNet, server, room, device, token string) error {
	hl := log.With().Str("component", "host").Logger()
	app, fetched, err := restore(ctx, hl, nw, server, room, token, arena.New(arena.Config{}))
	if err != nil {
		hl.Warn().Err(err).Msg("the room's checkpoint was not fetched: if this host is the room's first, the room starts afresh and the server does not checkpoint it")
	} else if fetched {
		hl.Info().Msg("the room's checkpoint fetched: it is restored if this host is the room's first")
	}
	p, err := newPeer(peer.Config{Server: server, Room: room, User: dedicatedHostUser, Device: device, Kind: signaling.KindHost,
		Token: token, App: app, Logger: hl}, nw)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// restore asks the first server of the list for room's checkpoint (server.Restore), trusting --ca
// besides the system's roots.
func restore(ctx context.Context, log zerolog.Logger, nw peerNet, servers, room, token string, app peer.App) (peer.App, bool, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	if nw.ca != "" {
		d, err := signalingDialer(nw.ca)
		if err != nil {
			return app, false, err
		}
		client.Transport = &http.Transport{TLSClientConfig: d.TLSClientConfig}
	}
	first, _, _ := strings.Cut(servers, ",")
	return server.Restore(ctx, server.RestoreConfig{Server: strings.TrimSpace(first), Room: room, Token: token, Client: client, Logger: log}, app)
}

func cmdHost(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:7880", "signaling server URL, or a comma-separated list of cluster node URLs tried in turn (failover: a lost connection redials the next and resumes)")
	room := fs.String("room", "arena", "room to host")
	token := fs.String("token", os.Getenv("CONCORD_TOKEN"), "join token, when the server requires one (env CONCORD_TOKEN)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	var nw peerNet
	nw.addICEFlag(fs)
	nw.addAddrFlags(fs)
	nw.addCAFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	return runHost(ctx, log, nw, *server, *room, fmt.Sprintf("p%d", os.Getpid()), *token)
}

func cmdBot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:7880", "signaling server URL, or a comma-separated list of cluster node URLs tried in turn (failover: a lost connection redials the next and resumes)")
	room := fs.String("room", "arena", "room to join")
	n := fs.Int("n", 8, "number of bots")
	moveFor := fs.Duration("move-for", 0, "stop writing after this long but stay connected (0: move forever)")
	name := fs.String("name", "bot", "user name prefix")
	standby := fs.Bool("standby", false, "keep an idle standby link to the next host in a room of any size, so that a migration needs no new WebRTC handshake (peer.Config.Standby; by default only in rooms of ≤ 64 members)")
	noStandby := fs.Bool("no-standby", false, "keep no standby link (peer.Config.NoStandby)")
	token := fs.String("token", os.Getenv("CONCORD_TOKEN"), "join token of one user for all the bots, when the server requires one (env CONCORD_TOKEN; without a device claim it admits up to serve's --max-devices-per-token bots)")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	voiceFile := fs.String("voice", "", "Ogg Opus `FILE` (one packet per page) every bot publishes, looped, in a voice session of its own (docs/protocol.md §10)")
	voiceListen := fs.Bool("voice-listen", false, "open a listen-only voice session per bot (no --voice file)")
	worldName := fs.String("world", "", "wander a world of regions instead of a room (tiles; docs/protocol.md §11): the bots cross region borders and place and remove blocks")
	var nw peerNet
	nw.addICEFlag(fs)
	nw.addCAFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *voiceFile != "" {
		f, err := os.Open(*voiceFile)
		if err != nil {
			return usageError{fmt.Errorf("--voice: %w", err)}
		}
		err = voice.CheckOgg(f)
		_ = f.Close()
		if err != nil {
			return usageError{fmt.Errorf("--voice %s: %w", *voiceFile, err)}
		}
	}
	if *n < 1 || *n > 1024 {
		return usageError{fmt.Errorf("-n %d: want 1..1024", *n)}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	if *worldName != "" {
		return runWorldBots(ctx, *worldName, *server, *name, os.Getenv("CONCORD_SECRET"), *n, nw, stdout, log)
	}
	ids, err := botIdentities(*n, *name, *room, fmt.Sprintf("p%d", os.Getpid()), *token, os.Getenv("CONCORD_SECRET"), time.Now())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	peers := make([]*peer.Peer, 0, *n)
	errs := make(chan error, *n)
	seed := uint64(time.Now().UnixNano())
	var voices []*botVoice
	var voiceWG sync.WaitGroup
	defer func() { cancel(); voiceWG.Wait() }()
	for i, id := range ids {
		app := arena.New(arena.Config{Bot: &arena.BotConfig{Seed: seed + uint64(i), MoveFor: *moveFor}})
		pc := peer.Config{Server: *server, Room: *room, User: id.user, Device: id.device, Kind: signaling.KindBot,
			Token: id.token, App: app, Logger: log.With().Str("bot", id.label).Logger(), Standby: *standby, NoStandby: *noStandby}
		p, err := newPeer(pc, nw)
		if err != nil {
			cancel()
			return err
		}
		peers = append(peers, p)
		go func() { errs <- p.Run(ctx) }()
		if *voiceFile != "" || *voiceListen {
			bv := &botVoice{}
			voices = append(voices, bv)
			voiceWG.Add(1)
			go func() { defer voiceWG.Done(); runBotVoice(ctx, bv, p, pc, nw, *voiceFile, pc.Logger) }()
		}
	}
	summary := time.NewTicker(time.Second)
	defer summary.Stop()
	running := *n
	var firstErr error
	for running > 0 {
		select {
		case err := <-errs:
			running--
			if err != nil && firstErr == nil && ctx.Err() == nil {
				firstErr = err
				cancel()
			}
		case <-summary.C:
			fmt.Fprintln(stdout, summarize(peers))
			if voices != nil {
				fmt.Fprintln(stdout, summarizeVoice(voices))
			}
		case <-ctx.Done():
			for running > 0 {
				<-errs
				running--
			}
		}
	}
	if errors.Is(firstErr, context.Canceled) {
		firstErr = nil
	}
	return firstErr
}

// summarize is the one-line status of a group of bots.
func summarize(peers []*peer.Peer) string {
	synced, hosts := 0, map[string]bool{}
	hashes := map[uint64]int{}
	var in, out uint64
	var rtts []time.Duration
	entities := 0
	for _, p := range peers {
		st := p.Status()
		if st.Synced {
			synced++
		}
		hosts[fmt.Sprintf("%d/t%d", st.Host, st.Term)] = true
		hashes[st.Hash]++
		in += st.BytesIn
		out += st.BytesOut
		if st.RTT > 0 {
			rtts = append(rtts, st.RTT)
		}
		entities = max(entities, st.Entities)
	}
	slices.Sort(rtts)
	rtt := "-"
	if len(rtts) > 0 {
		rtt = rtts[len(rtts)/2].Round(10 * time.Microsecond).String()
	}
	hs := make([]string, 0, len(hosts))
	for h := range hosts {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	agree := "hashes differ"
	if len(hashes) == 1 {
		for h := range hashes {
			agree = fmt.Sprintf("hashes equal %016x", h)
		}
	}
	return fmt.Sprintf("%s bots: %d/%d synced, host %s, %d entities, %s (%d distinct), rtt p50 %s, in %d kB, out %d kB",
		time.Now().Format(time.TimeOnly), synced, len(peers), strings.Join(hs, ","), entities, agree, len(hashes), rtt, in>>10, out>>10)
}
