package main

// concord bench joins: a burst of bots joining one dedicated host at once (BENCHMARKS.md; docs/benchmarks-history.md "Crowds").

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// joinBurst configures a join burst.
type joinBurst struct {
	exe     string        // the concord binary that runs serve
	bots    int           // bots started at once
	timeout time.Duration // how long to wait for all of them
	move    bool          // bots move (default: passive, their avatars stand still)
	// profile, when set, names two CPU profiles written over the burst: profile+".serve" (serve,
	// through its --pprof endpoint) and profile+".bots" (this process, the bots).
	profile string
	log     zerolog.Logger
}

// joinResult is what a join burst measured.
type joinResult struct {
	bots       int
	synced     int
	all        time.Duration   // start → every bot synced (0: not all)
	p50, p90   time.Duration   // start → a bot synced
	term       signaling.Term  // the room's term at the end (1: the host never changed)
	serveRSS   int64           // bytes, at the end
	sinceStart []time.Duration // per synced bot
}

func (r *joinResult) String() string {
	all := "not all synced"
	if r.all > 0 {
		all = r.all.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("joins: %d bots → %d synced; all synced in %s (p50 %v, p90 %v); room term %d (%d term changes); serve RSS %.0f MiB",
		r.bots, r.synced, all, r.p50.Round(time.Millisecond), r.p90.Round(time.Millisecond), r.term, r.term-1, float64(r.serveRSS)/(1<<20))
}

// runJoinBurst starts `concord serve` on a free loopback port, then b.bots bots at once, and
// waits until all are synced or b.timeout passes.
func runJoinBurst(ctx context.Context, b joinBurst) (*joinResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	url := "http://" + addr
	// --data "": a burst measures joins, not checkpoints, and leaves no data directory behind.
	// Every bot and the dedicated host come from 127.0.0.1: lift the per-address cap (1,024 by default) with the room's.
	serveArgs := []string{"serve", "--addr", addr, "--data", "", "--max-members", fmt.Sprint(b.bots + 8),
		"--max-conns-per-addr", fmt.Sprint(b.bots + 64), "--log-level", "warn"}
	if b.profile != "" {
		serveArgs = append(serveArgs, "--pprof")
	}
	serve := exec.Command(b.exe, serveArgs...)
	serve.Stdout, serve.Stderr = io.Discard, io.Discard
	serve.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := serve.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = serve.Process.Kill()
		_ = serve.Wait()
	}()
	if err := waitRooms(ctx, url, 30*time.Second, func(rooms []signaling.RoomInfo) bool {
		return len(rooms) == 1 && rooms[0].Host != 0
	}); err != nil {
		return nil, fmt.Errorf("dedicated host: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	peers := make([]*peer.Peer, b.bots)
	errs := make(chan error, b.bots)
	moveFor := time.Millisecond
	if b.move {
		moveFor = 0
	}
	if b.profile != "" {
		stop, err := startBurstProfiles(ctx, url, b.profile, b.timeout)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	start := time.Now()
	for i := range peers {
		user := fmt.Sprintf("bot%d", i+1)
		app := arena.New(arena.Config{Bot: &arena.BotConfig{Seed: uint64(i + 1), MoveFor: moveFor}})
		p, err := newPeer(peer.Config{Server: url, Room: "arena", User: user, Device: "burst", Kind: signaling.KindBot, App: app, Logger: b.log}, peerNet{})
		if err != nil {
			return nil, err
		}
		peers[i] = p
		go func() { errs <- p.Run(ctx) }()
	}
	res := &joinResult{bots: b.bots}
	syncedAt := make([]time.Duration, b.bots)
	deadline := time.Now().Add(b.timeout)
	for {
		res.synced = 0
		for i, p := range peers {
			if syncedAt[i] == 0 && p.Status().Synced {
				syncedAt[i] = time.Since(start)
			}
			if syncedAt[i] > 0 {
				res.synced++
			}
		}
		if res.synced == b.bots {
			res.all = slices.Max(syncedAt)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case err := <-errs:
			return nil, fmt.Errorf("a bot stopped: %w", err)
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	for _, d := range syncedAt {
		if d > 0 {
			res.sinceStart = append(res.sinceStart, d)
		}
	}
	slices.Sort(res.sinceStart)
	if n := len(res.sinceStart); n > 0 {
		res.p50, res.p90 = res.sinceStart[n/2], res.sinceStart[n*9/10]
	}
	_ = waitRooms(ctx, url, 5*time.Second, func(rooms []signaling.RoomInfo) bool {
		if len(rooms) == 1 {
			res.term = rooms[0].Term
		}
		return true
	})
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", serve.Process.Pid)); err == nil {
		if s, ok := procField(st, "VmRSS:"); ok {
			res.serveRSS = s << 10
		}
	}
	cancel()
	for range peers {
		<-errs
	}
	return res, nil
}

// procField reads a numeric field of /proc/PID/status.
func procField(status []byte, name string) (int64, bool) {
	for line := range splitLines(status) {
		var v int64
		if n, _ := fmt.Sscanf(line, name+" %d", &v); n == 1 {
			return v, true
		}
	}
	return 0, false
}

func splitLines(b []byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(b) > 0 {
			i := slices.Index(b, '\n')
			if i < 0 {
				i = len(b)
			}
			if !yield(string(b[:i])) {
				return
			}
			b = b[min(i+1, len(b)):]
		}
	}
}

// waitRooms polls GET /api/rooms until cond holds or d passes.
func waitRooms(ctx context.Context, url string, d time.Duration, cond func([]signaling.RoomInfo) bool) error {
	c := http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := c.Get(url + "/api/rooms")
		if err == nil {
			var rooms []signaling.RoomInfo
			err = json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&rooms)
			_ = resp.Body.Close()
			if err == nil && cond(rooms) {
				return nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	if last == nil {
		last = errors.New("condition not met")
	}
	return fmt.Errorf("not within %v: %w", d, last)
}

func cmdBenchJoins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench joins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var b joinBurst
	fs.IntVar(&b.bots, "n", 512, "bots started at once against one dedicated host (concord serve)")
	fs.DurationVar(&b.timeout, "timeout", 60*time.Second, "how long to wait for every bot to be synced")
	fs.BoolVar(&b.move, "move", false, "bots move and grab boxes (default: passive, as joins alone are measured)")
	fs.StringVar(&b.profile, "cpuprofile", "", "write CPU profiles of the burst to `FILE`.serve (serve) and FILE.bots (the bots)")
	logLevel := fs.String("log-level", "error", "log level of the bots: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if b.bots < 1 || b.bots > 2048 {
		return usageError{fmt.Errorf("-n %d: want 1..2048", b.bots)}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	b.exe = exe
	if b.log, err = newLogger(stderr, *logLevel); err != nil {
		return err
	}
	res, err := runJoinBurst(ctx, b)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	return nil
}

// startBurstProfiles profiles this process into prefix+".bots" and serve (its --pprof endpoint)
// into prefix+".serve" for at most d; stop ends the first and waits for the second.
func startBurstProfiles(ctx context.Context, url, prefix string, d time.Duration) (stop func(), err error) {
	f, err := os.Create(prefix + ".bots")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := http.Client{Timeout: d + 10*time.Second}
		resp, err := c.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", url, int(d.Seconds())))
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if out, err := os.Create(prefix + ".serve"); err == nil {
			_, _ = io.Copy(out, resp.Body)
			_ = out.Close()
		}
	}()
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		<-done
	}, nil
}
