package main

// concord bench joins: a burst of bots joining one dedicated host at once (BENCHMARKS.md; docs/benchmarks-history.md "Crowds").

import (
	"bufio"
	"bytes"
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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/concordrtc/concord/signaling"
)

// joinBurst configures a join burst.
type joinBurst struct {
	exe     string        // the concord binary that runs serve and the bot processes
	bots    int           // bots started at once
	procs   int           // bot processes (bench-join-bots) the bots are spread over; 0: one per 256 bots
	timeout time.Duration // how long to wait for all of them
	move    bool          // bots move (default: passive, their avatars stand still)
	// profile, when set, names the CPU profiles written over the burst: profile+".serve" (serve
	// and its dedicated host, through its --pprof endpoint) and profile+".botsK" (bot process K).
	profile    string
	profileFor time.Duration // serve's profile window; 0: b.timeout
	stderr     io.Writer     // the bot processes' logs; nil: discarded
	logLevel   string        // the bots' log level; "": error
}

// joinResult is what a join burst measured.
type joinResult struct {
	bots       int
	procs      int
	synced     int
	failed     int             // bots that stopped before they were synced
	firstErr   string          // why the first of them stopped
	all        time.Duration   // start → every bot synced (0: not all)
	p50, p90   time.Duration   // start → a bot synced
	term       signaling.Term  // the room's term at the end (1: the host never changed)
	serveRSS   int64           // bytes, at the end
	sinceStart []time.Duration // per synced bot, sorted
	// serveCPU and botsCPU are the CPU time serve (with its dedicated host) and the bot processes
	// used from the go to the end: per synced bot, a cost the machine's load moves far less than
	// it moves the times.
	serveCPU, botsCPU time.Duration
	// refused is serve's refusal and drop counters that are not zero at the end (its /metrics):
	// which of its protections the burst ran into.
	refused []string
}

func (r *joinResult) String() string {
	all := "not all synced"
	if r.all > 0 {
		all = r.all.Round(time.Millisecond).String()
	}
	failed := ""
	if r.failed > 0 {
		failed = fmt.Sprintf(", %d failed (the first: %s)", r.failed, r.firstErr)
	}
	perBot := ""
	if r.synced > 0 {
		perBot = fmt.Sprintf(" (%.1f ms and %.1f ms per synced bot)", float64(r.serveCPU.Microseconds())/1e3/float64(r.synced), float64(r.botsCPU.Microseconds())/1e3/float64(r.synced))
	}
	refused := "none"
	if len(r.refused) > 0 {
		refused = strings.Join(r.refused, ", ")
	}
	return fmt.Sprintf("joins: %d bots in %d processes → %d synced%s; all synced in %s (p50 %v, p90 %v); room term %d (%d term changes); serve RSS %.0f MiB; CPU over the burst: serve %.2f s, bots %.2f s%s; serve refused or dropped: %s",
		r.bots, r.procs, r.synced, failed, all, r.p50.Round(time.Millisecond), r.p90.Round(time.Millisecond), r.term, r.term-1, float64(r.serveRSS)/(1<<20),
		r.serveCPU.Seconds(), r.botsCPU.Seconds(), perBot, refused)
}

// burstTally gathers the bot processes' lines into a joinResult.
type burstTally struct {
	res      joinResult
	syncedAt []time.Duration // by bot number - 1; 0: not (yet) synced
	ended    []bool          // by bot number - 1: synced or failed
	left     int             // bots neither synced nor failed
}

func newBurstTally(bots, procs int) *burstTally {
	return &burstTally{res: joinResult{bots: bots, procs: procs}, syncedAt: make([]time.Duration, bots), ended: make([]bool, bots), left: bots}
}

// add takes a synced or failed line (ready and done lines are the parent's to act on).
func (t *burstTally) add(l burstLine) error {
	if l.Type != burstSynced && l.Type != burstFailed {
		return nil
	}
	if l.Bot < 1 || l.Bot > len(t.ended) {
		return fmt.Errorf("bot process: bot %d of a burst of %d", l.Bot, len(t.ended))
	}
	i := l.Bot - 1
	if t.ended[i] {
		return fmt.Errorf("bot process: bot %d reported twice", l.Bot)
	}
	t.ended[i] = true
	t.left--
	if l.Type == burstFailed {
		if t.res.failed++; t.res.failed == 1 {
			t.res.firstErr = l.Err
		}
		return nil
	}
	t.syncedAt[i] = max(time.Duration(l.NS), 1) // 0 means not synced
	return nil
}

// result computes the figures of the lines so far.
func (t *burstTally) result() *joinResult {
	r := t.res
	r.sinceStart = nil
	for _, d := range t.syncedAt {
		if d > 0 {
			r.sinceStart = append(r.sinceStart, d)
		}
	}
	slices.Sort(r.sinceStart)
	r.synced = len(r.sinceStart)
	if n := r.synced; n > 0 {
		r.p50, r.p90 = r.sinceStart[n/2], r.sinceStart[n*9/10]
		if n == r.bots {
			r.all = r.sinceStart[n-1]
		}
	}
	return &r
}

// botProc is a running bench-join-bots process.
type botProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// childLine is a line of bot process k, or its end (err set, io.EOF when it closed stdout).
type childLine struct {
	k    int
	line burstLine
	err  error
}

// runJoinBurst starts `concord serve` on a free loopback port, then b.bots bots in b.procs bot
// processes; when every process has prepared its bots it tells all of them to start at one
// instant, and waits until every bot is synced or b.timeout passes.
func runJoinBurst(ctx context.Context, b joinBurst) (*joinResult, error) {
	if b.procs <= 0 {
		b.procs = (b.bots + 255) / 256
	}
	b.procs = min(b.procs, b.bots)
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
	lines := make(chan childLine, b.bots+2*b.procs)
	procs := make([]*botProc, 0, b.procs)
	defer func() {
		for _, p := range procs {
			_, _ = io.WriteString(p.stdin, "stop\n")
			_ = p.stdin.Close()
		}
		for _, p := range procs {
			t := time.AfterFunc(10*time.Second, func() { _ = p.cmd.Process.Kill() })
			_ = p.cmd.Wait()
			t.Stop()
		}
	}()
	first := 1
	for k := range b.procs {
		n := b.bots/b.procs + btoi(k < b.bots%b.procs)
		p, err := startBotProc(b, url, k, first, n, lines)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		first += n
	}
	// Every process prepares its bots (a peer and its UDP socket each) before any bot dials.
	prepare := time.NewTimer(2 * time.Minute)
	defer prepare.Stop()
	for ready := 0; ready < b.procs; {
		select {
		case l := <-lines:
			if l.err != nil {
				return nil, fmt.Errorf("bot process %d before the go: %w", l.k, l.err)
			}
			if l.line.Type == burstReady {
				ready++
			}
		case <-prepare.C:
			return nil, fmt.Errorf("bot processes: %d of %d ready within 2m", ready, b.procs)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if b.profile != "" {
		window := b.profileFor
		if window <= 0 {
			window = b.timeout
		}
		stop, err := startServeProfile(ctx, url, b.profile+".serve", window)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	cpuAt := func() (ofServe, ofBots time.Duration) {
		ofServe = procCPU(serve.Process.Pid)
		for _, p := range procs {
			ofBots += procCPU(p.cmd.Process.Pid)
		}
		return ofServe, ofBots
	}
	serve0, bots0 := cpuAt()
	start := time.Now()
	for k, p := range procs {
		if _, err := io.WriteString(p.stdin, goLine(start)); err != nil {
			return nil, fmt.Errorf("bot process %d: the go line: %w", k, err)
		}
	}
	tally := newBurstTally(b.bots, b.procs)
	deadline := time.NewTimer(b.timeout + 5*time.Second) // the processes stop waiting at b.timeout
	defer deadline.Stop()
	running := b.procs
	for tally.left > 0 && running > 0 {
		select {
		case l := <-lines:
			switch {
			case l.err != nil:
				running--
			case l.line.Type == burstDone:
				running--
			default:
				if err := tally.add(l.line); err != nil {
					return nil, err
				}
			}
		case <-deadline.C:
			running = 0
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	res := tally.result()
	serve1, bots1 := cpuAt()
	res.serveCPU, res.botsCPU = serve1-serve0, bots1-bots0
	_ = waitRooms(ctx, url, 5*time.Second, func(rooms []signaling.RoomInfo) bool {
		if len(rooms) == 1 {
			res.term = rooms[0].Term
		}
		return true
	})
	res.refused = serveRefusals(ctx, url)
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", serve.Process.Pid)); err == nil {
		if s, ok := procField(st, "VmRSS:"); ok {
			res.serveRSS = s << 10
		}
	}
	return res, nil
}

// refusalMetrics are the counters of serve's refusals and drops a burst may run into.
var refusalMetrics = []string{
	"concord_signaling_refusals_total", "concord_signaling_rejected_joins_total",
	"concord_signaling_refused_connections_total", "concord_signaling_shed_signals_total",
	"concord_signaling_slow_consumer_drops_total", "concord_signaling_relay_errors_total",
	"concord_signaling_ping_timeouts_total", "concord_peer_refused_total", "concord_host_link_dropped_total",
	"concord_peer_signals_shed_total", "concord_peer_signals_resent_total", "concord_peer_signals_dropped_total",
}

// serveRefusals reads serve's /metrics and returns the refusal counters that are not zero, as
// name{labels}=value (nil when the metrics cannot be read).
func serveRefusals(ctx context.Context, url string) []string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return nil
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	return nonZeroCounters(io.LimitReader(resp.Body, 16<<20), refusalMetrics)
}

// nonZeroCounters returns the samples of the Prometheus text exposition in r whose metric is
// one of names and whose value is not zero.
func nonZeroCounters(r io.Reader, names []string) []string {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line+" ", "{ ")]
		if !slices.Contains(names, name) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil && v != 0 {
			out = append(out, line[:i]+"="+line[i+1:])
		}
	}
	return out
}

// procCPU is the CPU time (user and system) process pid has used so far, 0 when unknown.
func procCPU(pid int) time.Duration {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's ")": state is field 3, utime 14 and stime 15, in clock
	// ticks (100 a second on Linux).
	i := bytes.LastIndexByte(st, ')') // the command may hold one too
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * 10 * time.Millisecond
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// startBotProc starts bot process k, bots first…first+n-1, and forwards its lines to lines.
func startBotProc(b joinBurst, url string, k, first, n int, lines chan<- childLine) (*botProc, error) {
	logLevel := b.logLevel
	if logLevel == "" {
		logLevel = "error"
	}
	args := []string{"bench-join-bots", "-server", url, "-n", fmt.Sprint(n), "-first", fmt.Sprint(first),
		"-timeout", b.timeout.String(), "-log-level", logLevel}
	if b.move {
		args = append(args, "-move")
	}
	if b.profile != "" {
		args = append(args, "-cpuprofile", fmt.Sprintf("%s.bots%d", b.profile, k))
	}
	cmd := exec.Command(b.exe, args...)
	cmd.Stderr = b.stderr
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l, err := parseBurstLine(sc.Bytes())
			if err != nil {
				lines <- childLine{k: k, err: err}
				_, _ = io.Copy(io.Discard, stdout) // let it finish writing
				return
			}
			lines <- childLine{k: k, line: l}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		lines <- childLine{k: k, err: err}
	}()
	return &botProc{cmd: cmd, stdin: stdin}, nil
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
	fs.IntVar(&b.procs, "procs", 0, "bot processes (concord bench-join-bots) the bots are spread over; 0: one per 256 bots")
	fs.StringVar(&b.profile, "cpuprofile", "", "write CPU profiles of the burst to `FILE`.serve (serve and its dedicated host) and FILE.botsK (bot process K)")
	fs.DurationVar(&b.profileFor, "cpuprofile-window", 12*time.Second, "how long serve's CPU profile runs from the go")
	fs.StringVar(&b.logLevel, "log-level", "error", "log level of the bots: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if b.bots < 1 || b.bots > 2048 || b.procs < 0 {
		return usageError{fmt.Errorf("-n %d -procs %d: want -n 1..2048, -procs ≥ 0", b.bots, b.procs)}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	b.exe, b.stderr = exe, stderr
	if _, err := newLogger(stderr, b.logLevel); err != nil {
		return err
	}
	res, err := runJoinBurst(ctx, b)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	return nil
}

// startServeProfile profiles serve (its --pprof endpoint) into file for at most d; stop waits
// for the profile.
func startServeProfile(ctx context.Context, url, file string, d time.Duration) (stop func(), err error) {
	out, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer out.Close()
		c := http.Client{Timeout: d + 10*time.Second}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", url, max(int(d.Seconds()), 1)), nil)
		if err != nil {
			return
		}
		resp, err := c.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(out, resp.Body)
	}()
	return func() { <-done }, nil
}
