package main

// concord bench signaling: joins per second through `concord serve` and the memory of an idle
// member, against a bare gorilla/websocket echo server (concord bench-echo) in the same run.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/concordrtc/concord/internal/harness/bench"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// signalingLoad configures a run: rate joins a second for d, members kept open, roomSize members a room.
type signalingLoad struct {
	exe      string
	rate     int
	d        time.Duration
	roomSize int
	// profile, when set, is the prefix of the serve run's profiles: CPU of serve and of this
	// process while members join (PREFIX.serve, PREFIX.bots) and serve's heap once they idle
	// (PREFIX.heap).
	profile string
}

// connLoad is what one side of the run measured.
type connLoad struct {
	offered   int           // connections started a second
	conns     int           // connections (members) that completed
	failed    int           // that did not
	rate      float64       // completed a second, first start → last completed
	p50, p99  time.Duration // start → joined (echo: start → first echo)
	perConnKB float64       // (RSS after − RSS before) / conns, KiB
}

func (c connLoad) summary() bench.ConnLoad {
	return bench.ConnLoad{Offered: float64(c.offered), Conns: c.conns, Failed: c.failed, Rate: c.rate, P50: c.p50, P99: c.p99, PerConnKB: c.perConnKB}
}

// runSignalingLoad measures the echo server, then serve, with the same load.
func runSignalingLoad(ctx context.Context, l signalingLoad, progress io.Writer) (echo, sig connLoad, err error) {
	fmt.Fprintf(progress, "signaling: %d connections a second for %v against a gorilla/websocket echo server\n", l.rate, l.d)
	echo, err = runConnLoad(ctx, l, []string{"bench-echo"}, func(ctx context.Context, url string, i int) (io.Closer, error) {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+url[len("http"):]+"/", nil)
		if err != nil {
			return nil, err
		}
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"v":1,"type":"join"}`)); err != nil {
			_ = ws.Close()
			return nil, err
		}
		if _, _, err := ws.ReadMessage(); err != nil {
			_ = ws.Close()
			return nil, err
		}
		return ws, nil
	})
	if err != nil {
		return echo, sig, fmt.Errorf("echo server: %w", err)
	}
	fmt.Fprintf(progress, "signaling: the same against concord serve, rooms of %d\n", l.roomSize)
	n := l.rate*int(l.d.Seconds()) + 64
	serveArgs := []string{"serve", "--data", "", "--log-level", "error", "--max-conns", fmt.Sprint(n), "--max-conns-per-addr", fmt.Sprint(n),
		"--max-rooms", fmt.Sprint(n/l.roomSize + 64)}
	if l.profile != "" {
		serveArgs = append(serveArgs, "--pprof")
	}
	sig, err = runConnLoad(ctx, l, serveArgs, func(ctx context.Context, url string, i int) (io.Closer, error) {
		return dialMember(ctx, url, signaling.RoomID(fmt.Sprintf("r%d", i/l.roomSize)), fmt.Sprintf("u%d", i))
	})
	if err != nil {
		return echo, sig, fmt.Errorf("serve: %w", err)
	}
	return echo, sig, nil
}

// dialMember joins room as user with a bare websocket, as the echo side dials: the join
// sigclient sends (batched), read until joined, and no more. The members of a room then idle
// like the echo's connections (what the server sends them waits in the socket buffers), and the
// bench's own cost per join stays a dial, a write and a read: a full sigclient (its reader,
// writer and event goroutines) cost this process three times what serve spends on the join, and
// on a shared 2-core machine the bench measured itself.
func dialMember(ctx context.Context, url string, room signaling.RoomID, user string) (io.Closer, error) {
	join, err := json.Marshal(sigclient.ClientMessage{V: signaling.ProtocolVersion, Type: sigclient.TypeJoin, Room: room, User: user,
		Device: "d", Kind: signaling.KindBot, Batch: true})
	if err != nil {
		return nil, err
	}
	endpoint, err := sigclient.WebSocketURL(url)
	if err != nil {
		return nil, err
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, endpoint, nil)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = ws.SetReadDeadline(dl)
	}
	if err := ws.WriteMessage(websocket.TextMessage, join); err != nil {
		_ = ws.Close()
		return nil, err
	}
	for { // the first message is joined or the refusal, alone (docs/protocol.md §4)
		_, data, err := ws.ReadMessage()
		if err != nil {
			_ = ws.Close()
			return nil, err
		}
		var m struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			_ = ws.Close()
			return nil, err
		}
		switch m.Type {
		case "joined":
			_ = ws.SetReadDeadline(time.Time{})
			return ws, nil
		case "error":
			_ = ws.Close()
			return nil, fmt.Errorf("join refused: %s", m.Message)
		}
	}
}

// runConnLoad starts `exe args --addr ADDR`, opens l.rate connections a second for l.d with dial,
// keeps them open while it reads the server's RSS, and closes them.
func runConnLoad(ctx context.Context, l signalingLoad, args []string, dial func(ctx context.Context, url string, i int) (io.Closer, error)) (connLoad, error) {
	res := connLoad{offered: l.rate}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	srv := exec.Command(l.exe, append(args, "--addr", addr)...)
	srv.Stdout, srv.Stderr = io.Discard, os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return res, err
	}
	defer func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	}()
	url := "http://" + addr
	if err := waitHTTP(ctx, url, 30*time.Second); err != nil {
		return res, err
	}
	time.Sleep(500 * time.Millisecond) // let the server's start-up allocations settle before the baseline
	before := procRSS(srv.Process.Pid)

	profile := l.profile != "" && args[0] == "serve"
	if profile {
		stop, err := startBurstProfiles(ctx, url, l.profile, l.d+time.Second)
		if err != nil {
			return res, err
		}
		defer stop()
	}
	n := l.rate * int(l.d.Seconds())
	lat := make([]time.Duration, n)
	conns := make([]io.Closer, n)
	var wg sync.WaitGroup
	start := time.Now()
	var lastDone sync.Mutex
	var last time.Time
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(l.rate))); d > 0 {
			time.Sleep(d) // the pacer: connection i starts at i/rate
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			t0 := time.Now()
			c, err := dial(dctx, url, i)
			if err != nil {
				return
			}
			t1 := time.Now()
			lat[i], conns[i] = t1.Sub(t0), c
			lastDone.Lock()
			if t1.After(last) {
				last = t1
			}
			lastDone.Unlock()
		}()
	}
	wg.Wait()
	var done []time.Duration
	for _, d := range lat {
		if d > 0 {
			done = append(done, d)
		}
	}
	res.conns, res.failed = len(done), n-len(done)
	if len(done) > 0 {
		slices.Sort(done)
		res.p50, res.p99 = done[len(done)/2], done[min(len(done)-1, len(done)*99/100)]
		res.rate = float64(len(done)) / last.Sub(start).Seconds()
		time.Sleep(time.Second) // idle: what the members hold, not what joining them took
		res.perConnKB = float64(procRSS(srv.Process.Pid)-before) / 1024 / float64(len(done))
		if profile {
			saveURL(url+"/debug/pprof/heap", l.profile+".heap")
			saveURL(url+"/debug/pprof/heap?debug=1", l.profile+".heap.txt")
			saveURL(url+"/debug/pprof/goroutine?debug=1", l.profile+".goroutines.txt")
		}
	}
	_ = srv.Process.Kill() // the clients' closes then fail fast
	var cw sync.WaitGroup
	for _, c := range conns {
		if c != nil {
			cw.Add(1)
			go func() { defer cw.Done(); _ = c.Close() }()
		}
	}
	cw.Wait()
	return res, nil
}

// saveURL writes what a GET of url answers to path (a profile: best effort).
func saveURL(url, path string) {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if out, err := os.Create(path); err == nil {
		_, _ = io.Copy(out, resp.Body)
		_ = out.Close()
	}
}

// procRSS is a process's resident set in bytes (0 when unknown).
func procRSS(pid int) int64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	kb, _ := procField(st, "VmRSS:")
	return kb << 10
}

// waitHTTP polls url until it answers.
func waitHTTP(ctx context.Context, url string, d time.Duration) error {
	c := http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := c.Get(url + "/"); err == nil {
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within %v", url, d)
}

func cmdBenchSignaling(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench signaling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	l := signalingLoad{}
	fs.IntVar(&l.rate, "rate", 4000, "joins started a second")
	fs.DurationVar(&l.d, "duration", 3*time.Second, "how long joins start (every member stays until the end)")
	fs.IntVar(&l.roomSize, "room-size", 4, "members a room")
	fs.StringVar(&l.profile, "profile", "", "`PREFIX` of profiles of the serve run: CPU of serve (PREFIX.serve) and of the bench clients (PREFIX.bots) while members join, serve's heap once they idle (PREFIX.heap)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if l.rate < 1 || l.rate > 20000 || l.d < time.Second || l.d > time.Minute || l.roomSize < 1 || l.rate*int(l.d.Seconds()) > 16000 || l.roomSize > 64 {
		return usageError{errors.New("want 1 ≤ -rate ≤ 20000, 1s ≤ -duration ≤ 1m, rate × duration ≤ 16000, 1 ≤ -room-size ≤ 64")}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	l.exe = exe
	echo, sig, err := runSignalingLoad(ctx, l, stderr)
	if err != nil {
		return err
	}
	row := bench.SignalingRow(sig.summary(), echo.summary())
	fmt.Fprintf(stdout, "%s: %s (%s) — goal %s: %s\n", row.What, row.Figure, row.Compare, row.Goal, row.Verdict)
	return nil
}

// cmdBenchEcho is the bare gorilla/websocket echo server `bench signaling` compares serve's
// memory per member with: every websocket echoes what it reads.
func cmdBenchEcho(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-echo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// A benchmark's server: loopback only.
	if ap, err := netip.ParseAddrPort(*addr); err != nil || !ap.Addr().IsLoopback() {
		return usageError{fmt.Errorf("-addr %q: want a loopback address and port", *addr)}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	up := websocket.Upgrader{}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !websocket.IsWebSocketUpgrade(r) {
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			t, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if ws.WriteMessage(t, b) != nil {
				return
			}
		}
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startBurstProfiles profiles this process (the bench's clients) into prefix+".bots" and serve
// (its --pprof endpoint) into prefix+".serve" for at most d; stop ends the first and waits for
// the second.
func startBurstProfiles(ctx context.Context, url, prefix string, d time.Duration) (stop func(), err error) {
	f, err := os.Create(prefix + ".bots")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	waitServe, err := startServeProfile(ctx, url, prefix+".serve", d)
	if err != nil {
		pprof.StopCPUProfile()
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		waitServe()
	}, nil
}
