package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/netmsg"
)

func TestBenchHistogramQuantiles(t *testing.T) {
	tests := []struct {
		name   string
		values []time.Duration
		q      float64
		want   time.Duration
	}{
		{"single small", []time.Duration{40 * time.Microsecond}, 0.5, 40 * time.Microsecond},
		{"single large", []time.Duration{123 * time.Millisecond}, 0.99, 123 * time.Millisecond},
		{"uniform p50", uniform(1000), 0.5, 500 * time.Microsecond},
		{"uniform p99", uniform(1000), 0.99, 990 * time.Microsecond},
		{"negative clamps to zero", []time.Duration{-time.Second}, 0.5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h benchHist
			for _, v := range tc.values {
				h.add(int64(v))
			}
			got := h.quantile(tc.q)
			// Buckets are 1 µs wide below 64 µs and about 3% wide above.
			tol := max(time.Microsecond, time.Duration(0.035*float64(tc.want)))
			if math.Abs(float64(got-tc.want)) > float64(tol) {
				t.Fatalf("quantile(%v) = %v, want %v ± %v", tc.q, got, tc.want, tol)
			}
		})
	}
	var empty benchHist
	if got := empty.quantile(0.5); got != 0 {
		t.Fatalf("empty histogram quantile = %v, want 0", got)
	}
}

func uniform(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * time.Microsecond
	}
	return out
}

// TestBenchRawTemplatesMatchConcordDatagrams checks that the baseline's datagrams are what a
// Concord host sends: EntityUpdates of at most 1200 bytes carrying every entity once.
func TestBenchRawTemplatesMatchConcordDatagrams(t *testing.T) {
	for _, m := range []int{1, 43, 44, 1000} {
		var eu netmsg.EntityUpdates
		total := 0
		for _, d := range rawTemplates(m) {
			if len(d) > netmsg.MaxDatagram {
				t.Fatalf("m=%d: datagram of %d bytes", m, len(d))
			}
			n, err := netmsg.ConsumeEntityUpdates(d, &eu)
			if err != nil || n != len(d) {
				t.Fatalf("m=%d: decode: n=%d of %d, %v", m, n, len(d), err)
			}
			total += len(eu.Updates)
		}
		if total != m {
			t.Fatalf("m=%d: templates carry %d updates", m, total)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	var out bytes.Buffer
	tests := []struct {
		name string
		args []string
		want func(error) bool
	}{
		{"no benchmark", nil, isUsage},
		{"unknown benchmark", []string{"nope"}, isUsage},
		{"fanout too many bots", []string{"fanout", "-n", "100000"}, isUsage},
		{"migration too few peers", []string{"migration", "-peers", "1"}, isUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := cmdBench(context.Background(), tc.args, &out, io.Discard)
			if !tc.want(err) {
				t.Fatalf("cmdBench(%q) = %v", tc.args, err)
			}
		})
	}
}

func isUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}

// TestBenchFanoutSmoke runs both phases of the fanout benchmark with tiny parameters.
func TestBenchFanoutSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	o := fanoutOptions{bots: 2, entities: 20, duration: 1500 * time.Millisecond, warmup: 300 * time.Millisecond}
	res, err := runFanout(ctx, o, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := float64(len(rawTemplates(o.entities)[0]))
	for name, p := range map[string]*phaseResult{"concord": &res.concord, "raw": &res.raw} {
		if p.lat.n == 0 || p.cpu <= 0 || p.wall <= 0 {
			t.Errorf("%s: %d latency samples, cpu %v over %v", name, p.lat.n, p.cpu, p.wall)
		}
		if p.dgramLen != want {
			t.Errorf("%s: mean datagram %.1f bytes, want %.0f (one EntityUpdates of %d entities)", name, p.dgramLen, want, o.entities)
		}
		if p50 := p.lat.quantile(0.5); p50 <= 0 || p50 > 5*time.Second {
			t.Errorf("%s: latency p50 %v", name, p50)
		}
	}
	var out bytes.Buffer
	printFanout(&out, res)
	if !strings.Contains(out.String(), "ratios concord/raw: CPU") {
		t.Fatalf("report lacks the ratios:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}

// benchServeHelperEnv makes this test binary run `concord serve` (TestBenchServeHelperProcess):
// the relay of the -relay smoke tests.
const benchServeHelperEnv = "CONCORD_BENCH_SERVE_HELPER"

func TestBenchServeHelperProcess(t *testing.T) {
	if os.Getenv(benchServeHelperEnv) != "1" {
		t.Skip("the relay process of TestBenchFanoutRelaySmoke")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmdServe(ctx, flag.Args()[1:], os.Stderr); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func benchServeHelper(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestBenchServeHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), benchServeHelperEnv+"=1")
	return cmd
}

// TestBenchFanoutRelaySmoke runs the fanout benchmark through a TURN relay process: updates
// arrive, and the relay measurably relays them.
func TestBenchFanoutRelaySmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	o := fanoutOptions{bots: 2, entities: 20, duration: 1500 * time.Millisecond, warmup: 300 * time.Millisecond,
		relay: true, relayCommand: benchServeHelper}
	res, err := runFanout(ctx, o, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := &res.concord
	if c.lat.n == 0 || c.relay.bytes == 0 || c.relay.cpu < 0 {
		t.Fatalf("%d latency samples; relay moved %d bytes with %v CPU", c.lat.n, c.relay.bytes, c.relay.cpu)
	}
	// Everything the host sent crossed the relay, with TURN, DTLS and SCTP framing on top.
	if sent := c.hostOut * c.wall.Seconds(); float64(c.relay.bytes) < sent {
		t.Errorf("the relay moved %d bytes in the window, the host sent %.0f", c.relay.bytes, sent)
	}
	var out bytes.Buffer
	printFanout(&out, res)
	if !strings.Contains(out.String(), "relay process (TURN on loopback") {
		t.Fatalf("report lacks the relay line:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}

// benchHostHelperEnv makes this test binary run `concord bench-host` (TestBenchHostHelperProcess)
// so that TestBenchMigrationSmoke can kill a real process without building the binary.
const benchHostHelperEnv = "CONCORD_BENCH_HOST_HELPER"

func TestBenchHostHelperProcess(t *testing.T) {
	if os.Getenv(benchHostHelperEnv) != "1" {
		t.Skip("the bench host process of TestBenchMigrationSmoke")
	}
	err := cmdBenchHost(context.Background(), flag.Args(), os.Stderr)
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestBenchMigrationSmoke kills a bench host process twice under three peers and a small world.
func TestBenchMigrationSmoke(t *testing.T) {
	for _, standby := range []bool{false, true} {
		t.Run(fmt.Sprintf("standby=%v", standby), func(t *testing.T) { benchMigrationSmoke(t, standby, false) })
	}
	t.Run("relay", func(t *testing.T) { benchMigrationSmoke(t, false, true) })
}

func benchMigrationSmoke(t *testing.T, standby, relay bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	o := migrationOptions{
		standby: standby, relay: relay, relayCommand: benchServeHelper,
		peers: 3, entities: 300, moving: 20, trials: 2, settle: 100 * time.Millisecond, hostLog: "error",
		hostCommand: func(args []string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestBenchHostHelperProcess$", "--"}, args...)...)
			cmd.Env = append(os.Environ(), benchHostHelperEnv+"=1")
			return cmd
		},
	}
	res, err := runMigration(ctx, o, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.trials) != o.trials {
		t.Fatalf("%d trials completed, want %d: %v", len(res.trials), o.trials, res.failures)
	}
	for i, tr := range res.trials {
		if tr.lostEnts != 0 || tr.lostVals != 0 || !tr.fullHash {
			t.Errorf("trial %d: %d replicas short of entities, %d values lost, full hashes equal %t", i+1, tr.lostEnts, tr.lostVals, tr.fullHash)
		}
		if tr.converged <= 0 || tr.synced <= 0 || tr.synced > tr.converged || tr.bytes == 0 {
			t.Errorf("trial %d: synced %v, converged %v, %d bytes", i+1, tr.synced, tr.converged, tr.bytes)
		}
	}
	if res.fullSnapshot == 0 {
		t.Error("full snapshot size not measured")
	}
	if relay && res.relay.bytes == 0 {
		t.Error("nothing crossed the relay")
	}
	var out bytes.Buffer
	printMigration(&out, res)
	t.Logf("\n%s", out.String())
}
