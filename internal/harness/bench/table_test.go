package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestHeadlineTable runs the table path of `concord bench all` on made-up figures: each row's
// verdict against its goal (pass, or MISS and by how much), skipped rows, and the Markdown table
// with its count of misses.
func TestHeadlineTable(t *testing.T) {
	rows := []Row{
		FanoutRow(FanoutRun{N: 8, M: 100, Seconds: 3, Schema: SchemaPlain, TLS: true, Load: "1.00 2.00 3.00",
			Colyseus: Side{CPU: 10, Bytes: 1000, Delivered: 1, P50: 40, P99: 50},
			Concord:  Side{CPU: 22, Bytes: 900, Delivered: 1, P50: 1, P99: 2}}),
		FanoutRow(FanoutRun{N: 8, M: 100, Schema: SchemaPlain, TLS: false,
			Colyseus: Side{CPU: 10, Bytes: 1000, Delivered: 0.6, P50: 40, P99: 50},
			Concord:  Side{CPU: 5, Bytes: 900, Delivered: 1, P50: 1, P99: 2}}),
		FanoutRow(FanoutRun{N: 32, M: 1000, Schema: SchemaQuantized, TLS: true,
			Colyseus: Side{CPU: 50, Bytes: 1000, Delivered: 1, P50: 40, P99: 50},
			Concord:  Side{CPU: 40, Bytes: 800, Delivered: 0.99, P50: 8, P99: 20}}),
		MigrationRow(MigrationSummary{Peers: 8, Entities: 10000, Trials: 3, P50: 120 * time.Millisecond, P99: 237 * time.Millisecond}),
		MigrationRow(MigrationSummary{Peers: 8, Entities: 10000, Standby: true}),
		LateJoinRow(LateJoinSummary{Entities: 10000, Joins: 5, P50: 20 * time.Millisecond, P99: 40 * time.Millisecond, StartP50: 90 * time.Millisecond}),
		JoinsRow(JoinsSummary{Bots: 128, Synced: 128, All: 2 * time.Second, P50: time.Second}),
		JoinsRow(JoinsSummary{Bots: 1024, Synced: 1000}),
		CRDTRow(200_000, 20e6, 80e3, "", ""),
		CRDTRow(200_000, 20e6, 0, "node is not installed", ""),
		SignalingRow(ConnLoad{Conns: 2000, Offered: 1000, Rate: 990, P99: 50 * time.Millisecond, PerConnKB: 20},
			ConnLoad{Conns: 2000, Rate: 1000, PerConnKB: 20}),
		SignalingRow(ConnLoad{Conns: 12000, Offered: 4000, Rate: 4100, P50: time.Millisecond, P99: 120 * time.Millisecond, PerConnKB: 30},
			ConnLoad{Conns: 12000, Rate: 4000, P99: 10 * time.Millisecond, PerConnKB: 20}),
	}
	want := []string{
		"MISS by 1.20× CPU (+120%)", "pass (doubtful: Colyseus delivered 60%, Concord 100%)", verdictPass, "MISS by 137 ms (+137%)", "skipped: no trial completed (0 failed)",
		verdictPass, "pass at 128 (the goal is at 1,024)", "MISS: 24 of 1024 not synced", verdictPass, "skipped: node is not installed",
		"pass at 1000 offered (the goal is at 4,000)",
		"MISS by 20.0 ms p99 (+20%); MISS by 0.30× memory (+25%)",
	}
	for i, r := range rows {
		if r.Verdict != want[i] {
			t.Errorf("row %d (%s): verdict %q, want %q", i, r.What, r.Verdict, want[i])
		}
	}
	if v := AtLeast(50, 100, "×"); v != "MISS by 50.0× (−50%)" {
		t.Errorf("AtLeast: %q", v)
	}
	var out bytes.Buffer
	// A measurement that did not finish is counted as failed, never as a pass.
	failedRow := Row{What: "1024 members joining one dedicated host", Verdict: "error: a bot stopped"}
	PrintTable(&out, "concord bench all (-quick)", time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC), append(rows, failedRow))
	s := out.String()
	for _, w := range []string{"— 2026-11-28 18:00 UTC", "| what | figure | same-run comparison | goal | verdict | load average |",
		"Fan-out 8 × 100, plain schema, vs Colyseus (TLS)", "CPU **2.20×**", "| 1.00 2.00 3.00 |", "**250×** @dcl/ecs",
		"13 rows: 6 pass, 4 miss, 2 skipped, 1 failed"} {
		if !strings.Contains(s, w) {
			t.Errorf("table lacks %q:\n%s", w, s)
		}
	}
	if n := strings.Count(s, "\n|"); n != len(rows)+3 {
		t.Errorf("%d table lines, want %d:\n%s", n, len(rows)+2, s)
	}
}
