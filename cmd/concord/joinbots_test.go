package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeBot is a burstBot that syncs when its Run has run for after, or fails at once with err.
type fakeBot struct {
	after  time.Duration
	err    error
	synced atomic.Bool
	ran    atomic.Bool
	closed atomic.Bool
}

func (b *fakeBot) Run(ctx context.Context) error {
	b.ran.Store(true)
	if b.err != nil {
		return b.err
	}
	select {
	case <-time.After(b.after):
		b.synced.Store(true)
	case <-ctx.Done():
		return nil
	}
	<-ctx.Done()
	return nil
}
func (b *fakeBot) Synced() bool { return b.synced.Load() }
func (b *fakeBot) Close()       { b.closed.Store(true) }

// TestJoinBurstProtocol runs a bot process's side of the protocol (runBurstBots) with fake bots
// against a parent written here: ready before any bot runs, nothing until the go line, then one
// synced or failed line per bot numbered from -first with times after the parent's instant, done,
// and every bot stopped and closed at "stop". The parent's tally of those lines gives the figures.
func TestJoinBurstProtocol(t *testing.T) {
	bots := []*fakeBot{{after: 30 * time.Millisecond}, {err: errors.New("refused")}, {after: 60 * time.Millisecond}}
	bb := make([]burstBot, len(bots))
	for i, b := range bots {
		bb[i] = b
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ended := make(chan error, 1)
	go func() {
		ended <- runBurstBots(context.Background(), bb, 11, 10*time.Second, inR, outW)
		_ = outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	next := func() burstLine {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the bot process's output ended: %v", lines.Err())
		}
		l, err := parseBurstLine(lines.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := next(); l.Type != burstReady || l.Bots != 3 {
		t.Fatalf("first line %+v: want ready, 3 bots", l)
	}
	for i, b := range bots {
		if b.ran.Load() {
			t.Fatalf("bot %d runs before the go line", i)
		}
	}
	at := time.Now().Add(-time.Second) // the parent's instant: times count from it, not from the line's arrival
	if _, err := io.WriteString(inW, goLine(at)); err != nil {
		t.Fatal(err)
	}
	tally := newBurstTally(13, 1) // bots 11…13 of a burst of 13; 1…10 are another process's
	for i := range 10 {
		if err := tally.add(burstLine{Type: burstSynced, Bot: i + 1, NS: int64(time.Duration(i+1) * 100 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[int]burstLine{}
	for {
		l := next()
		if l.Type == burstDone {
			break
		}
		if _, dup := got[l.Bot]; dup {
			t.Fatalf("bot %d reported twice", l.Bot)
		}
		got[l.Bot] = l
		if err := tally.add(l); err != nil {
			t.Fatal(err)
		}
	}
	if l := got[11]; l.Type != burstSynced || time.Duration(l.NS) < time.Second {
		t.Errorf("bot 11: %+v, want synced ≥ 1s after the parent's instant", l)
	}
	if l := got[12]; l.Type != burstFailed || l.Err != "refused" {
		t.Errorf("bot 12: %+v, want failed: refused", l)
	}
	if l := got[13]; l.Type != burstSynced || l.NS <= got[11].NS {
		t.Errorf("bot 13: %+v, want synced after bot 11", l)
	}
	select {
	case err := <-ended:
		t.Fatalf("the bot process ended before the stop line: %v", err)
	default:
	}
	if _, err := io.WriteString(inW, "stop\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	for i, b := range bots {
		if !b.closed.Load() {
			t.Errorf("bot %d not closed", i)
		}
	}

	res := tally.result()
	if res.synced != 12 || res.failed != 1 || res.firstErr != "refused" || res.all != 0 {
		t.Errorf("tally: %d synced, %d failed (%q), all %v: want 12, 1 (refused), 0 (not all)", res.synced, res.failed, res.firstErr, res.all)
	}
	if res.p50 != 700*time.Millisecond {
		t.Errorf("p50 %v: want the 7th of 12 times, 700ms", res.p50)
	}
}

// TestJoinBurstTally: all synced gives the last time; a line for a bot outside the burst or
// twice for one bot is an error; malformed lines and go lines are refused.
func TestJoinBurstTally(t *testing.T) {
	tally := newBurstTally(2, 2)
	for _, l := range []burstLine{{Type: burstReady, Bots: 1}, {Type: burstSynced, Bot: 2, NS: 5e9}, {Type: burstSynced, Bot: 1, NS: 3e9}, {Type: burstDone}} {
		if err := tally.add(l); err != nil {
			t.Fatal(err)
		}
	}
	if res := tally.result(); res.all != 5*time.Second || res.synced != 2 || tally.left != 0 {
		t.Errorf("all %v, %d synced, %d left: want 5s, 2, 0", res.all, res.synced, tally.left)
	}
	if err := tally.add(burstLine{Type: burstSynced, Bot: 1, NS: 1}); err == nil {
		t.Error("bot 1 reported twice: no error")
	}
	if err := tally.add(burstLine{Type: burstFailed, Bot: 3}); err == nil {
		t.Error("bot 3 of a burst of 2: no error")
	}
	for _, s := range []string{`{"type":"synced"}`, `{"type":"nope"}`, `not json`} {
		if _, err := parseBurstLine([]byte(s)); err == nil {
			t.Errorf("parseBurstLine(%s): no error", s)
		}
	}
	at := time.Unix(0, 1764363600123456789)
	if got, err := parseGoLine(goLine(at)); err != nil || !got.Equal(at) {
		t.Errorf("parseGoLine(goLine(%v)) = %v, %v", at, got, err)
	}
	for _, s := range []string{"stop", "go", "go x", ""} {
		if _, err := parseGoLine(s); err == nil {
			t.Errorf("parseGoLine(%q): no error", s)
		}
	}
	var l burstLine
	if err := json.Unmarshal([]byte(strings.TrimSpace(fmt.Sprintf(`{"type":"synced","bot":%d,"ns":%d}`, 1, 2))), &l); err != nil || l.NS != 2 {
		t.Errorf("the synced line's fields: %+v, %v", l, err)
	}
}

// TestProcCPU: this process's CPU time reads from /proc and grows with work.
func TestProcCPU(t *testing.T) {
	before := procCPU(os.Getpid())
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for procCPU(os.Getpid()) <= before && time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
	}
	if after := procCPU(os.Getpid()); after <= before {
		t.Errorf("procCPU %v, then %v after 5s of work (%d)", before, after, x)
	}
	if procCPU(-1) != 0 {
		t.Error("procCPU of no process: not 0")
	}
}

// TestNonZeroCounters: the refusal counters a burst reports are the named ones that are not zero.
func TestNonZeroCounters(t *testing.T) {
	metrics := `# HELP concord_signaling_refusals_total x
# TYPE concord_signaling_refusals_total counter
concord_signaling_refusals_total{reason="join_timeout"} 3
concord_signaling_refusals_total{reason="rate_limited"} 0
concord_signaling_joins_total 512
concord_signaling_shed_signals_total 2
`
	got := nonZeroCounters(strings.NewReader(metrics), refusalMetrics)
	want := []string{`concord_signaling_refusals_total{reason="join_timeout"}=3`, "concord_signaling_shed_signals_total=2"}
	if !slices.Equal(got, want) {
		t.Errorf("nonZeroCounters = %q, want %q", got, want)
	}
}
