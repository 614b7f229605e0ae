package main

// concord bench-join-bots: one of the bot processes of `concord bench joins`, and the lines it
// and its parent exchange. A burst of 1,024 pion peers in one process on two cores starves that
// process (its bots' joins reach serve after join_timeout), so the bots are spread over several
// processes that prepare first and start their joins together when the parent says "go".
//
// The protocol, one line each (child → parent on the child's stdout, JSON; parent → child on its stdin, text):
//
//	child:  {"type":"ready","bots":256}          every bot prepared (peer, link API); no socket opened yet
//	parent: go 1764363600123456789               the burst's instant (Unix ns): every child starts every bot now
//	child:  {"type":"synced","bot":17,"ns":812345678}  bot 17 synced, ns after the parent's instant
//	child:  {"type":"failed","bot":18,"err":"…"}      bot 18 stopped before it was synced
//	child:  {"type":"done"}                       every bot synced or failed, or -timeout passed
//	parent: stop (or the end of stdin)            the child stops its bots and exits

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// burstLine is one line a bot process writes.
type burstLine struct {
	Type string `json:"type"`           // burstReady, burstSynced, burstFailed or burstDone
	Bots int    `json:"bots,omitempty"` // ready: how many bots the process runs
	Bot  int    `json:"bot,omitempty"`  // synced, failed: the bot's number in the burst (1…n)
	NS   int64  `json:"ns,omitempty"`   // synced: nanoseconds after the parent's go instant
	Err  string `json:"err,omitempty"`  // failed: why
}

const (
	burstReady  = "ready"
	burstSynced = "synced"
	burstFailed = "failed"
	burstDone   = "done"
)

// parseBurstLine reads one line of a bot process.
func parseBurstLine(b []byte) (burstLine, error) {
	var l burstLine
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("bot process: line %q: %w", truncate(string(b), 80), err)
	}
	switch l.Type {
	case burstReady, burstDone:
	case burstSynced, burstFailed:
		if l.Bot < 1 {
			return l, fmt.Errorf("bot process: line %q: no bot", truncate(string(b), 80))
		}
	default:
		return l, fmt.Errorf("bot process: line %q: unknown type", truncate(string(b), 80))
	}
	return l, nil
}

// goLine is the parent's start line for the instant at.
func goLine(at time.Time) string { return fmt.Sprintf("go %d\n", at.UnixNano()) }

// parseGoLine reads the parent's start line.
func parseGoLine(s string) (time.Time, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(s), "go ")
	if !ok {
		return time.Time{}, fmt.Errorf("bot process: want \"go UNIXNANO\", got %q", truncate(s, 80))
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("bot process: go line %q: %w", truncate(s, 80), err)
	}
	return time.Unix(0, ns), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// burstBot is one bot of a bot process: prepared before the go, run at it.
type burstBot interface {
	Run(ctx context.Context) error
	Synced() bool
	Close() // frees what was prepared, after Run has returned (or when it never ran)
}

// runBurstBots is a bot process's side of the protocol: bots[i] is bot first+i. It writes ready,
// waits for the go line, starts every bot, reports each as it syncs or fails, writes done when
// all have or timeout passes, and stops them all at "stop" or the end of in (or when ctx ends).
func runBurstBots(ctx context.Context, bots []burstBot, first int, timeout time.Duration, in io.Reader, out io.Writer) error {
	defer func() {
		for _, b := range bots {
			b.Close()
		}
	}()
	enc := json.NewEncoder(out)
	var mu sync.Mutex // enc: the bots' failures are written from their goroutines
	write := func(l burstLine) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(l)
	}
	if err := write(burstLine{Type: burstReady, Bots: len(bots)}); err != nil {
		return err
	}
	lines := bufio.NewScanner(in)
	if !lines.Scan() {
		return fmt.Errorf("bot process: stdin ended before the go line: %v", lines.Err())
	}
	at, err := parseGoLine(lines.Text())
	if err != nil {
		return err
	}
	// stop: the parent's stop line or the end of stdin.
	stop := make(chan struct{})
	go func() {
		defer close(stop)
		for lines.Scan() && strings.TrimSpace(lines.Text()) != "stop" {
		}
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	ended := make([]chan struct{}, len(bots))
	for i, b := range bots {
		ended[i] = make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ended[i])
			if err := b.Run(ctx); err != nil && ctx.Err() == nil && !b.Synced() {
				_ = write(burstLine{Type: burstFailed, Bot: first + i, Err: err.Error()})
			}
		}()
	}
	defer wg.Wait() // after cancel
	defer cancel()

	reported := make([]bool, len(bots))
	left := len(bots)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for left > 0 {
		for i, b := range bots {
			if reported[i] {
				continue
			}
			if b.Synced() {
				reported[i] = true
				left--
				if err := write(burstLine{Type: burstSynced, Bot: first + i, NS: time.Since(at).Nanoseconds()}); err != nil {
					return err
				}
				continue
			}
			select {
			case <-ended[i]: // failed (written by its goroutine) or stopped
				reported[i] = true
				left--
			default:
			}
		}
		if left == 0 {
			break
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			left = 0
		case <-stop:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	if err := write(burstLine{Type: burstDone}); err != nil {
		return err
	}
	select {
	case <-stop:
	case <-ctx.Done():
	}
	return nil
}

// peerBot is a burstBot on a real peer: its link API (the shared UDP socket, the certificate)
// and the peer made before the go, its websocket opened and its join sent at the go.
type peerBot struct {
	p   *peer.Peer
	api interface{ Close() error }
}

func (b *peerBot) Run(ctx context.Context) error { return b.p.Run(ctx) }
func (b *peerBot) Synced() bool                  { return b.p.Status().Synced }
func (b *peerBot) Close()                        { _ = b.api.Close() }

// newPeerBot prepares bot number n of a burst against server.
func newPeerBot(server string, n int, move bool, cfg peer.Config) (*peerBot, error) {
	moveFor := time.Millisecond // passive: its avatar stands still
	if move {
		moveFor = 0
	}
	cfg.Server, cfg.Room, cfg.User, cfg.Device, cfg.Kind = server, "arena", fmt.Sprintf("bot%d", n), "burst", signaling.KindBot
	cfg.App = arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(n), MoveFor: moveFor}})
	if err := (peerNet{}).config(cfg.Logger, &cfg); err != nil {
		return nil, err
	}
	api, err := peer.LinkAPI(cfg)
	if err != nil {
		return nil, err
	}
	if err := api.Prepare(); err != nil { // its certificate, before the go
		_ = api.Close()
		return nil, err
	}
	cfg.Transport = peer.PionTransport{API: api}
	p, err := peer.New(cfg)
	if err != nil {
		_ = api.Close()
		return nil, err
	}
	return &peerBot{p: p, api: api}, nil
}

func cmdBenchJoinBots(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-join-bots", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:7880", "signaling server URL")
	n := fs.Int("n", 256, "bots this process runs")
	first := fs.Int("first", 1, "the number of its first bot in the burst (its user is bot<number>)")
	move := fs.Bool("move", false, "bots move and grab boxes (default: passive)")
	timeout := fs.Duration("timeout", 60*time.Second, "how long after the go to wait for every bot to be synced")
	profile := fs.String("cpuprofile", "", "write a CPU profile of this process from the go until it stops to this file")
	logLevel := fs.String("log-level", "error", "log level of the bots: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 2048 || *first < 1 {
		return usageError{fmt.Errorf("-n %d -first %d: want -n 1..2048, -first ≥ 1", *n, *first)}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	bots := make([]burstBot, 0, *n)
	defer func() { // on a failed preparation (nil once runBurstBots has them: it closes them)
		for _, b := range bots {
			b.Close()
		}
	}()
	for i := range *n {
		b, err := newPeerBot(*server, *first+i, *move, peer.Config{Logger: log})
		if err != nil {
			return err
		}
		bots = append(bots, b)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errors.Join(err, f.Close())
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	prepared := bots
	bots = nil
	return runBurstBots(ctx, prepared, *first, *timeout, stdin, stdout)
}
