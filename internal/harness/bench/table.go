package bench

// The headline table `concord bench all` prints (BENCHMARKS.md): one row per figure, its same-run
// comparison, the goal, and whether the figure meets it and by how much.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Row is one line of the headline table.
type Row struct {
	What    string // the measurement and its size
	Figure  string // what was measured
	Compare string // the same-run comparison ("" when the goal is absolute)
	Goal    string
	Verdict string // Pass, Miss(…), or why the row was skipped
	Load    string // the machine's load average when the row was measured
}

// Verdicts.
const verdictPass = "pass"

// Pass is the verdict of a figure that meets its goal.
func Pass() string { return verdictPass }

// AtMost is the verdict of value against the goal value ≤ goal, saying by how much it misses.
func AtMost(value, goal float64, unit string) string {
	if value <= goal {
		return verdictPass
	}
	return fmt.Sprintf("MISS by %s%s (+%.0f%%)", trimFloat(value-goal), unit, 100*(value-goal)/goal)
}

// AtLeast is the verdict of value against the goal value ≥ goal.
func AtLeast(value, goal float64, unit string) string {
	if value >= goal {
		return verdictPass
	}
	return fmt.Sprintf("MISS by %s%s (−%.0f%%)", trimFloat(goal-value), unit, 100*(goal-value)/goal)
}

// Both combines two verdicts: pass only when both pass, otherwise the misses.
func Both(a, b string) string {
	switch {
	case a == verdictPass && b == verdictPass:
		return verdictPass
	case a == verdictPass:
		return b
	case b == verdictPass:
		return a
	}
	return a + "; " + b
}

// Skipped is the verdict of a row that was not measured.
func Skipped(why string) string { return "skipped: " + why }

func trimFloat(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// LoadAverage reads the 1, 5 and 15 minute load averages ("?" when /proc is not there).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// PrintTable writes the rows as the Markdown table that leads BENCHMARKS.md, under a line saying
// when, on what and in which mode, and over a count of the rows that miss their goal.
func PrintTable(w io.Writer, title string, at time.Time, rows []Row) {
	fmt.Fprintf(w, "%s — %s\n\n", title, at.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintln(w, "| what | figure | same-run comparison | goal | verdict | load average |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	cell := func(s string) string {
		if s == "" {
			return "—"
		}
		return strings.ReplaceAll(s, "|", "/")
	}
	passed, missed, skipped, failed := 0, 0, 0, 0
	for _, r := range rows {
		switch {
		case strings.HasPrefix(r.Verdict, "pass"):
			passed++
		case strings.HasPrefix(r.Verdict, "MISS"):
			missed++
		case strings.HasPrefix(r.Verdict, "skipped"):
			skipped++
		default: // "error: …": the measurement did not finish
			failed++
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", cell(r.What), cell(r.Figure), cell(r.Compare), cell(r.Goal), cell(r.Verdict), cell(r.Load))
	}
	fmt.Fprintf(w, "\n%d rows: %d pass, %d miss, %d skipped", len(rows), passed, missed, skipped)
	if failed > 0 {
		fmt.Fprintf(w, ", %d failed", failed)
	}
	fmt.Fprintln(w)
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// FanoutRun is one run of bench/colyseus/run.mjs: its last line, "json " and this as JSON.
type FanoutRun struct {
	N        int     `json:"n"`
	M        int     `json:"m"`
	Seconds  float64 `json:"seconds"`
	Schema   string  `json:"schema"`
	TLS      bool    `json:"tls"`
	Load     string  `json:"load"`
	Colyseus Side    `json:"colyseus"`
	Concord  Side    `json:"concord"`
}

// Side is one side of a FanoutRun: the server's (host's) CPU in % of one core, the bytes it sent
// per second, the fraction of entity updates delivered and the latency percentiles in ms.
type Side struct {
	CPU       float64 `json:"cpu"`
	Bytes     float64 `json:"bytes"`
	Delivered float64 `json:"delivered"`
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
}

// FanoutRow is the row of one run against issue's goal: CPU and bytes ≤ 1× Colyseus's, p50 and
// p99 ≤ Colyseus's.
func FanoutRow(r FanoutRun) Row {
	c, k := r.Concord, r.Colyseus
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	cpu, bytes := ratio(c.CPU, k.CPU), ratio(c.Bytes, k.Bytes)
	v := Both(AtMost(cpu, 1, "× CPU"), AtMost(bytes, 1, "× bytes"))
	v = Both(v, Both(AtMost(c.P50, k.P50, " ms p50"), AtMost(c.P99, k.P99, " ms p99")))
	if k.Delivered < 0.95 || c.Delivered < 0.95 {
		// A side that delivered less did less work: its CPU and bytes are low.
		v += fmt.Sprintf(" (doubtful: Colyseus delivered %.0f%%, Concord %.0f%%)", 100*k.Delivered, 100*c.Delivered)
	}
	tls := "TLS"
	if !r.TLS {
		tls = "no TLS"
	}
	return Row{
		What:    fmt.Sprintf("Fan-out %d × %d, %s schema, vs Colyseus (%s)", r.N, r.M, r.Schema, tls),
		Figure:  fmt.Sprintf("CPU **%.2f×**, bytes %.2f×; p50/p99 %.1f/%.1f ms; delivered %.1f%%", cpu, bytes, c.P50, c.P99, 100*c.Delivered),
		Compare: fmt.Sprintf("Colyseus CPU %.1f%% vs host %.1f%% of a core; p50/p99 %.0f/%.0f ms; delivered %.1f%%", k.CPU, c.CPU, k.P50, k.P99, 100*k.Delivered),
		Goal:    "CPU, bytes ≤ 1×; p50/p99 ≤ Colyseus's",
		Verdict: v,
		Load:    r.Load,
	}
}

// MigrationSummary is what a migration run measured, for its row.
type MigrationSummary struct {
	Peers, Entities, Trials int // Trials: completed
	Failed                  int
	Standby, NoStandby      bool          // forced on, off (neither: the peer's default)
	P50, P99                time.Duration // pause
	Lost                    int           // entities and values lost, over every trial
	Load                    string
}

// Summary returns the figures of the headline row.
func (r *MigrationResult) Summary() MigrationSummary {
	s := MigrationSummary{Peers: r.opts.Peers, Entities: r.opts.Entities, Trials: len(r.trials), Failed: len(r.failures), Standby: r.opts.Standby, NoStandby: r.opts.NoStandby}
	var pauses []time.Duration
	for _, t := range r.trials {
		pauses = append(pauses, t.pause())
		s.Lost += t.lostEnts + t.lostVals
	}
	if len(pauses) > 0 {
		s.P50, s.P99 = quantile(pauses, 0.5), quantile(pauses, 0.99)
	}
	return s
}

// MigrationRow is the row of a migration run against the goal: p99 ≤ 100 ms, 0 lost.
func MigrationRow(s MigrationSummary) Row {
	what := fmt.Sprintf("Migration, kill -9, %d × %d, default configuration", s.Peers, s.Entities)
	switch {
	case s.Standby:
		what = fmt.Sprintf("Migration, kill -9, %d × %d, standby links", s.Peers, s.Entities)
	case s.NoStandby:
		what = fmt.Sprintf("Migration, kill -9, %d × %d, no standby links", s.Peers, s.Entities)
	}
	row := Row{What: what, Goal: "p99 ≤ 100 ms, 0 lost", Load: s.Load}
	if s.Trials == 0 {
		row.Verdict = Skipped(fmt.Sprintf("no trial completed (%d failed)", s.Failed))
		return row
	}
	row.Figure = fmt.Sprintf("pause p50 %s, p99 **%s**; %d lost in %d kills (%d failed)", ms(s.P50), ms(s.P99), s.Lost, s.Trials, s.Failed)
	v := AtMost(float64(s.P99)/1e6, 100, " ms")
	if s.Lost > 0 || s.Failed > 0 {
		v = Both(v, fmt.Sprintf("MISS: %d lost, %d failed trials", s.Lost, s.Failed))
	}
	row.Verdict = v
	return row
}

// LateJoinRow is the row of a late-join run against the goal: joined → synced p50 ≤ 25 ms, p99
// ≤ 50 ms.
func LateJoinRow(s LateJoinSummary) Row {
	row := Row{What: fmt.Sprintf("Late join of a %d-entity room, host in its own process", s.Entities),
		Goal: "joined → synced p50 ≤ 25 ms, p99 ≤ 50 ms", Load: s.Load}
	if s.Joins == 0 {
		row.Verdict = Skipped("no join completed")
		return row
	}
	row.Figure = fmt.Sprintf("joined → synced p50 **%s**, p99 **%s** (%d joins; start → synced p50 %s)", ms(s.P50), ms(s.P99), s.Joins, ms(s.StartP50))
	row.Compare = fmt.Sprintf("snapshot %d B", s.SnapshotBytes)
	row.Verdict = Both(AtMost(float64(s.P50)/1e6, 25, " ms p50"), AtMost(float64(s.P99)/1e6, 50, " ms p99"))
	return row
}

// JoinsSummary is what a join burst (`concord bench joins`) measured.
type JoinsSummary struct {
	Bots, Synced int
	All          time.Duration // start → every bot synced; 0: not all
	P50          time.Duration
	TermChanges  int
	Load         string
}

// JoinsRow is the row of a join burst against the goal: every member synced within 10 s (the goal
// is stated for 1,024 members; a smaller burst is reported against the same bound).
func JoinsRow(s JoinsSummary) Row {
	row := Row{What: fmt.Sprintf("%d members joining one dedicated host at once", s.Bots),
		Goal: "1,024 all synced ≤ 10 s", Load: s.Load}
	if s.All == 0 {
		row.Figure = fmt.Sprintf("%d of %d synced", s.Synced, s.Bots)
		row.Verdict = fmt.Sprintf("MISS: %d of %d not synced", s.Bots-s.Synced, s.Bots)
		return row
	}
	row.Figure = fmt.Sprintf("all synced in **%.1f s** (p50 %.1f s), %d term changes", s.All.Seconds(), s.P50.Seconds(), s.TermChanges)
	row.Verdict = AtMost(s.All.Seconds(), 10, " s")
	if s.Bots < 1024 && row.Verdict == verdictPass {
		row.Verdict = fmt.Sprintf("pass at %d (the goal is at 1,024)", s.Bots)
	}
	return row
}

// CRDTRow is the row of the decode + merge comparison against the goal: ≥ 100× @dcl/ecs's
// messages per second. dcl is 0 when @dcl/ecs's side did not run (why says why).
func CRDTRow(messages int, concord, dcl float64, why, load string) Row {
	row := Row{What: fmt.Sprintf("CRDT decode + merge, %d PUTs", messages), Goal: "≥ 100× @dcl/ecs", Load: load,
		Figure: fmt.Sprintf("%.1f M msgs/s", concord/1e6)}
	if dcl <= 0 {
		row.Verdict = Skipped(why)
		return row
	}
	row.Figure = fmt.Sprintf("**%.0f×** @dcl/ecs (%.1f M msgs/s)", concord/dcl, concord/1e6)
	row.Compare = fmt.Sprintf("@dcl/ecs %.1f k msgs/s", dcl/1e3)
	row.Verdict = AtLeast(concord/dcl, 100, "×")
	return row
}

// ConnLoad is what `concord bench signaling` measured on one server: connections opened at a set
// rate and kept open.
type ConnLoad struct {
	Conns, Failed int
	Offered       float64       // connections started a second
	Rate          float64       // completed a second, first start → last completed
	P50, P99      time.Duration // start → joined (the echo server: start → first echo)
	PerConnKB     float64       // the server's RSS growth per open connection, KiB
	Load          string
}

// SignalingRow is the row of a signaling run against the goal: ≥ 4,000 joins/s sustained, p99
// join → joined ≤ 100 ms, memory per idle member ≤ 1.2× the echo server's per connection.
func SignalingRow(sig, echo ConnLoad) Row {
	row := Row{What: fmt.Sprintf("Signaling: %d joins into rooms, members kept open", sig.Conns+sig.Failed),
		Goal: "≥ 4,000 joins/s, p99 join → joined ≤ 100 ms, memory per member ≤ 1.2× echo's", Load: sig.Load}
	if sig.Conns == 0 || echo.Conns == 0 {
		row.Verdict = Skipped(fmt.Sprintf("%d of %d joins and %d of %d echo connections completed", sig.Conns, sig.Conns+sig.Failed, echo.Conns, echo.Conns+echo.Failed))
		return row
	}
	mem := 0.0
	if echo.PerConnKB > 0 {
		mem = sig.PerConnKB / echo.PerConnKB
	}
	row.Figure = fmt.Sprintf("**%.0f joins/s**, join → joined p50/p99 %s/**%s**, %.1f KiB per member (**%.2f×** echo); %d failed",
		sig.Rate, ms(sig.P50), ms(sig.P99), sig.PerConnKB, mem, sig.Failed)
	row.Compare = fmt.Sprintf("gorilla/websocket echo: %.0f conns/s, p99 %s, %.1f KiB per connection", echo.Rate, ms(echo.P99), echo.PerConnKB)
	// A run offered fewer than 4,000 joins a second (-quick) is judged on whether it kept up with
	// what it was offered.
	rate := AtLeast(sig.Rate, 4000, " joins/s")
	if sig.Offered > 0 && sig.Offered < 4000 {
		if rate = AtLeast(sig.Rate, 0.95*sig.Offered, " joins/s"); rate == verdictPass {
			rate = fmt.Sprintf("pass at %.0f offered (the goal is at 4,000)", sig.Offered)
		}
	}
	v := Both(rate, AtMost(float64(sig.P99)/1e6, 100, " ms p99"))
	v = Both(v, AtMost(mem, 1.2, "× memory"))
	if sig.Failed > 0 {
		v = Both(v, fmt.Sprintf("MISS: %d joins failed", sig.Failed))
	}
	row.Verdict = v
	return row
}

// IdleRows are the rows of an idle run: the members' cost against raw pion's (goal: ≤ raw + 10%),
// and, when measured, what standby links add (goal: within the same budget, to make them default).
func IdleRows(s IdleSummary) []Row {
	// Judged by the host: with the two-process baseline (the goal is what an idle member costs a
	// host), Concord's host process against the raw host process; the wholes and the
	// one-process baseline are printed beside it. Without it, the whole against one process.
	ratio := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	if s.RawTwo <= 0 {
		return idleRowsOneProcess(s, ratio)
	}
	// A raw host's CPU is read in 10 ms ticks: none in a short window is no baseline, not a pass.
	judge := func(a, b float64) string {
		if b <= 0 {
			return "no verdict: the raw host's figure is 0"
		}
		return AtMost(a/b, 1.1, "×")
	}
	rows := []Row{{
		What: fmt.Sprintf("Idle members, %d in one room: the host's CPU (host process vs a raw pion host process)", s.Members),
		Figure: fmt.Sprintf("**%.2f×** the raw host's CPU (host %.1f%% of a core; both processes %.1f%%, %.2f× raw's two)",
			ratio(s.ConcordHost, s.RawTwoHost), s.ConcordHost, s.Concord, ratio(s.Concord, s.RawTwo)),
		Compare: fmt.Sprintf("raw pion, two processes: host %.1f%%, both %.1f%%; one process: %.1f%% (%.2f× of it)",
			s.RawTwoHost, s.RawTwo, s.Raw, ratio(s.Concord, s.Raw)),
		Goal: "host ≤ raw pion host + 10%", Verdict: judge(s.ConcordHost, s.RawTwoHost), Load: s.Load,
	}}
	if s.RawTwoHostKiB > 0 {
		rows = append(rows, Row{
			What: fmt.Sprintf("Idle members' memory, %d in one room: the host's (host process vs a raw pion host process)", s.Members),
			Figure: fmt.Sprintf("**%.2f×** the raw host's RSS (host %.0f KiB a member; both processes %.0f KiB, %.2f× raw's two)",
				ratio(s.ConcordHostKiB, s.RawTwoHostKiB), s.ConcordHostKiB, s.ConcordKiB, ratio(s.ConcordKiB, s.RawTwoKiB)),
			Compare: fmt.Sprintf("raw pion, two processes: host %.0f KiB, both %.0f KiB a link; one process: %.0f KiB a pair",
				s.RawTwoHostKiB, s.RawTwoKiB, s.RawKiB),
			Goal: "host ≤ raw pion host + 10%", Verdict: judge(s.ConcordHostKiB, s.RawTwoHostKiB), Load: s.Load,
		})
	}
	if s.Standby > 0 {
		rows = append(rows, Row{
			What: fmt.Sprintf("Idle members with standby links, %d: the host's CPU", s.Members),
			Figure: fmt.Sprintf("**%.2f×** the raw host's CPU (host %.1f%%, both processes %.1f%%); %+.1f%% of a core over no standby",
				ratio(s.StandbyHost, s.RawTwoHost), s.StandbyHost, s.Standby, s.Standby-s.Concord),
			Compare: fmt.Sprintf("raw pion host %.1f%%, both %.1f%%; without standby: host %.1f%%, both %.1f%%", s.RawTwoHost, s.RawTwo, s.ConcordHost, s.Concord),
			Goal:    "host ≤ raw pion host + 10% (to make standby links default)", Verdict: judge(s.StandbyHost, s.RawTwoHost), Load: s.Load,
		})
	}
	return rows
}

// idleRowsOneProcess are IdleRows without the two-process baseline: both Concord processes
// against raw pairs in one process.
func idleRowsOneProcess(s IdleSummary, ratio func(a, b float64) float64) []Row {
	rows := []Row{{
		What:    fmt.Sprintf("Idle members, %d in one room (host in its own process)", s.Members),
		Figure:  fmt.Sprintf("**%.2f×** raw pion's CPU (%.1f%% of a core, host %.1f%%)", ratio(s.Concord, s.Raw), s.Concord, s.ConcordHost),
		Compare: fmt.Sprintf("raw pion: %d idle link pairs in one process, %.1f%% of a core", s.Members, s.Raw),
		Goal:    "≤ raw pion + 10%", Verdict: AtMost(ratio(s.Concord, s.Raw), 1.1, "×"), Load: s.Load,
	}}
	if s.RawKiB > 0 {
		rows = append(rows, Row{
			What:    fmt.Sprintf("Idle members' memory, %d in one room", s.Members),
			Figure:  fmt.Sprintf("**%.2f×** raw pion's RSS (%.0f KiB a member, host process %.0f KiB of it)", s.ConcordKiB/s.RawKiB, s.ConcordKiB, s.ConcordHostKiB),
			Compare: fmt.Sprintf("raw pion: %.0f KiB a link pair", s.RawKiB),
			Goal:    "≤ raw pion + 10%", Verdict: AtMost(s.ConcordKiB/s.RawKiB, 1.1, "×"), Load: s.Load,
		})
	}
	if s.Standby > 0 {
		rows = append(rows, Row{
			What:    fmt.Sprintf("Idle members with standby links, %d", s.Members),
			Figure:  fmt.Sprintf("**%.2f×** raw pion's CPU (%.1f%% of a core, host %.1f%%); %+.1f%% of a core over no standby", ratio(s.Standby, s.Raw), s.Standby, s.StandbyHost, s.Standby-s.Concord),
			Compare: fmt.Sprintf("raw pion %.1f%%; without standby %.1f%%", s.Raw, s.Concord),
			Goal:    "≤ raw pion + 10% (to make standby links default)", Verdict: AtMost(ratio(s.Standby, s.Raw), 1.1, "×"), Load: s.Load,
		})
	}
	return rows
}
