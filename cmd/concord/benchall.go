package main

// concord bench all: the headline set of BENCHMARKS.md in one command, printed as its leading table.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/internal/harness/bench"
)

// fanoutCase is one run of bench/colyseus/run.mjs.
type fanoutCase struct {
	n, m   int
	schema string
}

// benchAllPlan is the sizes of one `bench all`: the headline sizes, or the quick ones.
type benchAllPlan struct {
	fanout       []fanoutCase
	fanoutSecs   int
	migPeers     int
	migEntities  int
	migTrials    int
	migNoStandby bool // also a run without standby links (the default has them at 32 members)
	lateEntities int
	lateJoins    int
	joinBots     int
	crdtMessages int
	sigRate      int           // joins started a second
	sigFor       time.Duration // for this long
	idleMembers  int
	idleWindow   time.Duration
}

// benchAllPlanFor returns the headline plan (about 15 minutes on 2 vCPUs) or the quick one (under 3).
func benchAllPlanFor(quick bool) benchAllPlan {
	if quick {
		return benchAllPlan{
			fanout:     []fanoutCase{{8, 100, bench.SchemaQuantized}, {8, 100, bench.SchemaPlain}},
			fanoutSecs: 3, migPeers: 8, migEntities: 10000, migTrials: 3,
			lateEntities: 10000, lateJoins: 5, joinBots: 128, crdtMessages: 200_000,
			sigRate: 1000, sigFor: 2 * time.Second, idleMembers: 32, idleWindow: 3 * time.Second,
		}
	}
	var cases []fanoutCase
	for _, nm := range [][2]int{{8, 100}, {32, 100}, {8, 1000}, {32, 1000}} {
		for _, s := range []string{bench.SchemaQuantized, bench.SchemaPlain} {
			cases = append(cases, fanoutCase{nm[0], nm[1], s})
		}
	}
	return benchAllPlan{
		fanout: cases, fanoutSecs: 10, migPeers: 32, migEntities: 10000, migTrials: 20, migNoStandby: true,
		lateEntities: 10000, lateJoins: 20, joinBots: 1024, crdtMessages: 1_000_000,
		// Signaling is offered 10% over its goal: a paced load of exactly 4,000 a second measures
		// just under it, and a server that sustains 4,000 keeps up with more.
		sigRate: 4400, sigFor: 3 * time.Second, idleMembers: 256, idleWindow: 10 * time.Second,
	}
}

// benchAllSections are the names -skip takes.
var benchAllSections = []string{"fanout", "migration", "latejoin", "joins", "signaling", "idle", "crdt"}

func cmdBenchAll(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench all", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small sizes and short windows (under 3 minutes): a check that every row runs, not the headline figures")
	colyseus := fs.String("colyseus", "bench/colyseus", "the directory of run.mjs (its dependencies are installed with npm ci when missing)")
	dcl := fs.String("dcl", "crdt/testdata/dcl", "the directory of the @dcl/ecs benchmark (bench.mjs; npm ci when missing)")
	skip := fs.String("skip", "", "comma-separated sections not to run: "+strings.Join(benchAllSections, ", "))
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	skipped := map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(benchAllSections, s) {
			return usageError{fmt.Errorf("-skip %q: want some of %s", s, strings.Join(benchAllSections, ", "))}
		}
		skipped[s] = true
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	plan := benchAllPlanFor(*quick)
	start := time.Now()
	var rows []bench.Row
	if !skipped["fanout"] {
		rows = append(rows, benchAllFanout(ctx, plan, exe, *colyseus, stderr)...)
	}
	if !skipped["migration"] {
		rows = append(rows, benchAllMigration(ctx, plan, false, exe, log, stderr))
		if plan.migNoStandby {
			rows = append(rows, benchAllMigration(ctx, plan, true, exe, log, stderr))
		}
	}
	if !skipped["latejoin"] {
		rows = append(rows, benchAllLateJoin(ctx, plan, exe, log, stderr))
	}
	if !skipped["joins"] {
		rows = append(rows, benchAllJoins(ctx, plan, exe, stderr))
	}
	if !skipped["signaling"] {
		rows = append(rows, benchAllSignaling(ctx, plan, exe, stderr))
	}
	if !skipped["idle"] {
		rows = append(rows, benchAllIdle(ctx, plan, exe, log, stderr)...)
	}
	if !skipped["crdt"] {
		rows = append(rows, benchAllCRDT(ctx, plan, *dcl, stderr))
	}
	mode := "headline sizes"
	if *quick {
		mode = "-quick: small sizes, short windows; not the headline figures"
	}
	bench.PrintTable(stdout, fmt.Sprintf("concord bench all (%s), %s, took %v", mode, benchMachine(), time.Since(start).Round(time.Second)), time.Now(), rows)
	return ctx.Err()
}

// benchMachine describes the machine the table was measured on.
func benchMachine() string {
	return fmt.Sprintf("%d CPUs, load average %s at the end", runtime.NumCPU(), bench.LoadAverage())
}

// nodeReady checks that node runs and that dir's dependencies are installed, installing them with
// npm ci when node_modules is missing. The error says why the rows are skipped.
func nodeReady(ctx context.Context, dir string, stderr io.Writer) error {
	if _, err := exec.LookPath("node"); err != nil {
		return errors.New("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		return fmt.Errorf("no %s (run from the repository's root or give the directory)", filepath.Join(dir, "package-lock.json"))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		return nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("%s: no node_modules and npm is not installed", dir)
	}
	fmt.Fprintf(stderr, "bench all: npm ci in %s\n", dir)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci in %s: %w", dir, err)
	}
	return nil
}

func benchAllFanout(ctx context.Context, plan benchAllPlan, exe, dir string, stderr io.Writer) []bench.Row {
	var rows []bench.Row
	ready := nodeReady(ctx, dir, stderr)
	for _, c := range plan.fanout {
		what := fmt.Sprintf("Fan-out %d × %d, %s schema, vs Colyseus", c.n, c.m, c.schema)
		if ready != nil {
			rows = append(rows, bench.Row{What: what, Goal: "CPU, bytes ≤ 1×; p50/p99 ≤ Colyseus's", Verdict: bench.Skipped(ready.Error()), Load: bench.LoadAverage()})
			continue
		}
		fmt.Fprintf(stderr, "bench all: fan-out %d × %d, %s schema, against Colyseus\n", c.n, c.m, c.schema)
		run, err := runFanoutScript(ctx, exe, dir, c, plan.fanoutSecs, stderr)
		if err != nil {
			rows = append(rows, bench.Row{What: what, Verdict: bench.Skipped(err.Error()), Load: bench.LoadAverage()})
			continue
		}
		rows = append(rows, bench.FanoutRow(*run))
	}
	return rows
}

// runFanoutScript runs `node run.mjs N M SECS -schema S` and reads its last line.
func runFanoutScript(ctx context.Context, exe, dir string, c fanoutCase, secs int, stderr io.Writer) (*bench.FanoutRun, error) {
	cmd := exec.CommandContext(ctx, "node", "run.mjs", fmt.Sprint(c.n), fmt.Sprint(c.m), fmt.Sprint(secs), "-schema", c.schema)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CONCORD_BIN="+exe)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, stderr), stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run.mjs: %w", err)
	}
	return parseFanoutRun(out.Bytes())
}

// parseFanoutRun reads run.mjs's last "json " line.
func parseFanoutRun(out []byte) (*bench.FanoutRun, error) {
	for _, line := range slices.Backward(strings.Split(string(out), "\n")) {
		if s, ok := strings.CutPrefix(line, "json "); ok {
			var r bench.FanoutRun
			if err := json.Unmarshal([]byte(s), &r); err != nil {
				return nil, fmt.Errorf("run.mjs: %w", err)
			}
			return &r, nil
		}
	}
	return nil, errors.New("run.mjs printed no json line")
}

func benchHostCommand(exe string) func(args []string) *exec.Cmd {
	return func(args []string) *exec.Cmd { return exec.Command(exe, append([]string{"bench-host"}, args...)...) }
}

// benchRawHostCommand makes the command of the idle benchmark's raw host process.
func benchRawHostCommand(exe string) func(args []string) *exec.Cmd {
	return func(args []string) *exec.Cmd { return exec.Command(exe, append([]string{"bench-rawhost"}, args...)...) }
}

func benchAllMigration(ctx context.Context, plan benchAllPlan, noStandby bool, exe string, log zerolog.Logger, stderr io.Writer) bench.Row {
	o := bench.MigrationOptions{Peers: plan.migPeers, Entities: plan.migEntities, Moving: 100, Trials: plan.migTrials,
		Settle: 500 * time.Millisecond, NoStandby: noStandby, HostLogLevel: "warn", HostCommand: benchHostCommand(exe)}
	res, err := bench.Migration(ctx, o, log, stderr)
	var s bench.MigrationSummary
	if res != nil {
		s = res.Summary()
	} else {
		s = bench.MigrationSummary{Peers: o.Peers, Entities: o.Entities, NoStandby: noStandby}
	}
	s.Load = bench.LoadAverage()
	row := bench.MigrationRow(s)
	if err != nil {
		row.Verdict = bench.Both(row.Verdict, "error: "+firstLine(err))
	}
	return row
}

func benchAllLateJoin(ctx context.Context, plan benchAllPlan, exe string, log zerolog.Logger, stderr io.Writer) bench.Row {
	s, err := bench.LateJoin(ctx, bench.LateJoinOptions{Entities: plan.lateEntities, Moving: 100, Joins: plan.lateJoins, HostCommand: benchHostCommand(exe)}, log, stderr)
	if err != nil {
		return bench.Row{What: fmt.Sprintf("Late join of a %d-entity room", plan.lateEntities), Verdict: "error: " + firstLine(err), Load: bench.LoadAverage()}
	}
	s.Load = bench.LoadAverage()
	fmt.Fprintf(stderr, "late join: %s\n", s.Phases)
	return bench.LateJoinRow(*s)
}

// cmdBenchLateJoin runs the late-join row of bench all alone, with its step-by-step breakdown.
func cmdBenchLateJoin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench latejoin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := bench.LateJoinOptions{}
	fs.IntVar(&o.Entities, "entities", 10000, "entities in the host's world")
	fs.IntVar(&o.Moving, "moving", 100, "entities the host moves every tick")
	fs.IntVar(&o.Joins, "joins", 20, "members that join one after another")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process (the members) over the joins to this file")
	hostProfile := fs.String("host-cpuprofile", "", "write a CPU profile of the bench-host process (its whole life, set-up included) to this file")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o.HostCommand = benchHostCommand(exe)
	if *hostProfile != "" {
		host := o.HostCommand
		o.HostCommand = func(args []string) *exec.Cmd { return host(append(args, "-cpuprofile", *hostProfile)) }
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	s, err := bench.LateJoin(ctx, o, log, stderr)
	if err != nil {
		return err
	}
	s.Load = bench.LoadAverage()
	r := bench.LateJoinRow(*s)
	fmt.Fprintf(stdout, "%s: %s (%s) — goal %s: %s; load %s\nsteps: %s\n", r.What, r.Figure, r.Compare, r.Goal, r.Verdict, r.Load, s.Phases)
	return nil
}

func benchAllJoins(ctx context.Context, plan benchAllPlan, exe string, stderr io.Writer) bench.Row {
	fmt.Fprintf(stderr, "bench all: %d bots joining one dedicated host\n", plan.joinBots)
	// The bots in bot processes of 256 (bench joins' default): one process of 1,024 pion peers
	// starves itself, and its joins reach serve after join_timeout.
	res, err := runJoinBurst(ctx, joinBurst{exe: exe, bots: plan.joinBots, timeout: 60 * time.Second, stderr: stderr})
	if err != nil {
		return bench.Row{What: fmt.Sprintf("%d members joining one dedicated host", plan.joinBots), Verdict: "error: " + firstLine(err), Load: bench.LoadAverage()}
	}
	return bench.JoinsRow(bench.JoinsSummary{Bots: res.bots, Synced: res.synced, All: res.all, P50: res.p50,
		TermChanges: int(res.term) - 1, Load: bench.LoadAverage()})
}

func benchAllIdle(ctx context.Context, plan benchAllPlan, exe string, log zerolog.Logger, stderr io.Writer) []bench.Row {
	s, err := bench.Idle(ctx, bench.IdleOptions{Members: plan.idleMembers, Window: plan.idleWindow, Standby: true,
		HostCommand: benchHostCommand(exe), RawHostCommand: benchRawHostCommand(exe)}, log, stderr)
	if err != nil {
		return []bench.Row{{What: fmt.Sprintf("Idle members, %d", plan.idleMembers), Verdict: "error: " + firstLine(err), Load: bench.LoadAverage()}}
	}
	s.Load = bench.LoadAverage()
	return bench.IdleRows(*s)
}

func benchAllSignaling(ctx context.Context, plan benchAllPlan, exe string, stderr io.Writer) bench.Row {
	echo, sig, err := runSignalingLoad(ctx, signalingLoad{exe: exe, rate: plan.sigRate, d: plan.sigFor, roomSize: 4}, stderr)
	if err != nil {
		return bench.Row{What: "Signaling joins", Verdict: "error: " + firstLine(err), Load: bench.LoadAverage()}
	}
	s := sig.summary()
	s.Load = bench.LoadAverage()
	return bench.SignalingRow(s, echo.summary())
}

// benchAllCRDT decodes and merges the @dcl/ecs benchmark's workload (PUTs of 44-byte values over
// 10,000 entities × 3 components, every one newer than the last for its key) into a fresh
// replica, best of 5, and runs @dcl/ecs's bench.mjs on the same count for the comparison.
func benchAllCRDT(ctx context.Context, plan benchAllPlan, dir string, stderr io.Writer) bench.Row {
	fmt.Fprintf(stderr, "bench all: CRDT decode + merge of %d PUTs\n", plan.crdtMessages)
	stream := crdtBenchStream(plan.crdtMessages)
	best := time.Duration(0)
	for range 5 {
		r := crdt.New(crdt.Config{})
		t0 := time.Now()
		applied, err := r.MergeStream(stream)
		d := time.Since(t0)
		if err != nil || applied != plan.crdtMessages {
			return bench.Row{What: "CRDT decode + merge", Verdict: fmt.Sprintf("error: applied %d of %d: %v", applied, plan.crdtMessages, err)}
		}
		if best == 0 || d < best {
			best = d
		}
	}
	concord := float64(plan.crdtMessages) / best.Seconds()
	dcl, why := 0.0, ""
	if err := nodeReady(ctx, dir, stderr); err != nil {
		why = err.Error()
	} else if dcl, err = runDCLBench(ctx, dir, plan.crdtMessages, stderr); err != nil {
		why = err.Error()
	}
	return bench.CRDTRow(plan.crdtMessages, concord, dcl, why, bench.LoadAverage())
}

// crdtBenchStream is crdt's BenchmarkDecodeMerge stream with n messages: message i writes key
// i % 30,000 at timestamp i / 30,000 + 1, 44 bytes of data.
func crdtBenchStream(n int) []byte {
	const entities, components, payload = 10_000, 3, 44
	keys := entities * components
	var stream []byte
	data := make([]byte, payload)
	for i := range n {
		k := i % keys
		for j := range data {
			data[j] = byte(i + j)
		}
		m := crdt.Message{Type: crdt.PutComponent, Entity: crdt.NewEntity(uint16(512+k/components), 0),
			Component: crdt.ComponentID(1 + k%components), Timestamp: crdt.Timestamp(i/keys + 1), Data: data}
		stream = crdt.AppendMessage(stream, &m)
	}
	return stream
}

// runDCLBench runs @dcl/ecs's bench.mjs on n messages and returns its messages per second (best
// wall time of its runs).
func runDCLBench(ctx context.Context, dir string, n int, stderr io.Writer) (float64, error) {
	cmd := exec.CommandContext(ctx, "node", "--expose-gc", "bench.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("BENCH_MESSAGES=%d", n))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("bench.mjs: %w", err)
	}
	var r struct {
		MsgsPerSec float64 `json:"msgsPerSec"`
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r.MsgsPerSec <= 0 {
		return 0, fmt.Errorf("bench.mjs: no msgsPerSec in its output (%v)", err)
	}
	return r.MsgsPerSec, nil
}

func firstLine(err error) string { return strings.SplitN(err.Error(), "\n", 2)[0] }

func cmdBenchIdle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench idle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := bench.IdleOptions{}
	fs.IntVar(&o.Members, "n", 256, "idle members of one room, and raw pion link pairs")
	fs.DurationVar(&o.Window, "window", 10*time.Second, "measured time of each phase")
	fs.BoolVar(&o.Standby, "standby", false, "also a room whose members keep standby links")
	oneProcess := fs.Bool("raw-one-process-only", false, "skip the raw baseline in two processes (a raw pion host process, concord bench-rawhost, and the links' other ends here); the verdict is then the whole against raw pairs in one process")
	fs.DurationVar(&o.ReportInterval, "report-interval", 0, "the members' status report interval (0: peer's default, 1s); an experiment")
	fs.DurationVar(&o.TickInterval, "tick-interval", 0, "the members' tick and network interval (0: peer's default, 50ms); an experiment")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process (the members and signaling) over the window of the room without standby links to this file")
	fs.StringVar(&o.MemProfile, "memprofile", "", "write a heap profile of this process (the members and signaling) at the end of the window of the room without standby links to this file")
	hostProfile := fs.String("host-cpuprofile", "", "write a CPU profile of the bench-host process (its whole life, the members' joins included) to this file")
	hostWindowProfile := fs.String("host-window-cpuprofile", "", "write a CPU profile of the bench-host process over the window of the room without standby links to this file (what the host pays for idle members, the joins left out)")
	hostMemProfile := fs.String("host-memprofile", "", "write a heap profile of the bench-host process to this file when it settles at the end of the window (inuse_space: what it holds for its members; with -standby, the standby room's)")
	rawHostWindowProfile := fs.String("rawhost-window-cpuprofile", "", "write a CPU profile of the raw host process (bench-rawhost) over its window to this file")
	rawHostMemProfile := fs.String("rawhost-memprofile", "", "write a heap profile of the raw host process (bench-rawhost) to this file when it settles at the end of its window (inuse_space: what it holds for its links)")
	logLevel := fs.String("log-level", "error", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o.HostCommand = benchHostCommand(exe)
	if !*oneProcess {
		o.RawHostCommand = benchRawHostCommand(exe)
		o.RawHostWindowProfile = *rawHostWindowProfile != ""
		if o.RawHostWindowProfile || *rawHostMemProfile != "" {
			o.RawHostCommand = func(args []string) *exec.Cmd {
				pre := []string{"bench-rawhost"}
				if o.RawHostWindowProfile {
					pre = append(pre, "-window-cpuprofile", *rawHostWindowProfile)
				}
				if *rawHostMemProfile != "" {
					pre = append(pre, "-settle-memprofile", *rawHostMemProfile)
				}
				return exec.Command(exe, append(pre, args...)...)
			}
		}
	}
	o.HostWindowProfile = *hostWindowProfile != ""
	if *hostProfile != "" || *hostMemProfile != "" || o.HostWindowProfile {
		o.HostCommand = func(args []string) *exec.Cmd {
			pre := []string{"bench-host"}
			if *hostProfile != "" {
				pre = append(pre, "-cpuprofile", *hostProfile)
			}
			if o.HostWindowProfile {
				pre = append(pre, "-window-cpuprofile", *hostWindowProfile)
			}
			if *hostMemProfile != "" {
				pre = append(pre, "-settle-memprofile", *hostMemProfile)
			}
			return exec.Command(exe, append(pre, args...)...)
		}
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	s, err := bench.Idle(ctx, o, log, stderr)
	if err != nil {
		return err
	}
	s.Load = bench.LoadAverage()
	for _, r := range bench.IdleRows(*s) {
		fmt.Fprintf(stdout, "%s: %s (%s) — goal %s: %s; load %s\n", r.What, r.Figure, r.Compare, r.Goal, r.Verdict, r.Load)
	}
	return nil
}
