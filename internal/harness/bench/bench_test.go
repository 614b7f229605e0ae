package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer"
)

func TestHistogramQuantiles(t *testing.T) {
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
			var h hist
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
	var empty hist
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

// TestRawTemplatesMatchConcordDatagrams checks that the baseline's datagrams are what a Concord
// host sends: EntityUpdates of at most MaxDatagram bytes carrying every entity once, each with a
// 6-byte quantized position and an 8-byte time.
func TestRawTemplatesMatchConcordDatagrams(t *testing.T) {
	s, _ := schemas.Lookup(schemaMover)
	pos := appendPos(nil, 999, -1024)
	if len(pos) != 6 || s.Properties[propPos].Size != 6 || s.CheckValue(propPos, pos) != nil {
		t.Fatalf("position %x: %v", pos, s.CheckValue(propPos, pos))
	}
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
			for _, u := range eu.Updates {
				if err := s.ConsumeValues(u.Data, u.Mask, func(int, []byte) {}); err != nil || len(u.Data) != 14 {
					t.Fatalf("m=%d: update data %x: %v", m, u.Data, err)
				}
			}
		}
		if total != m {
			t.Fatalf("m=%d: templates carry %d updates", m, total)
		}
	}
	// -schema plain: the position as two float32, 16 bytes an update with the time.
	ps, _ := plainSchemas.Lookup(schemaMover)
	if pos := appendPlainPos(nil, 999, -1024); len(pos) != 8 || ps.CheckValue(propPos, pos) != nil {
		t.Fatalf("plain position %x: %v", pos, ps.CheckValue(propPos, pos))
	}
	var eu netmsg.EntityUpdates
	if _, err := netmsg.ConsumeEntityUpdates(rawTemplatesOf(schemaTable(SchemaPlain), 10)[0], &eu); err != nil || len(eu.Updates[0].Data) != 16 {
		t.Fatalf("plain template: %v", err)
	}
}

func TestValidate(t *testing.T) {
	good := MigrationOptions{Peers: 2, Entities: 1, Moving: 1, Trials: 1, HostCommand: func([]string) *exec.Cmd { return nil }}
	tests := []struct {
		name string
		err  error
		ok   bool
	}{
		{"fanout", FanoutOptions{Bots: 1, Entities: 1, Duration: time.Second}.Validate(), true},
		{"fanout too many bots", FanoutOptions{Bots: MaxBots + 1, Entities: 1, Duration: time.Second}.Validate(), false},
		{"fanout no duration", FanoutOptions{Bots: 1, Entities: 1}.Validate(), false},
		{"migration", good.Validate(), true},
		{"migration one peer", func() error { o := good; o.Peers = 1; return o.Validate() }(), false},
		{"migration no host command", func() error { o := good; o.HostCommand = nil; return o.Validate() }(), false},
		{"host", HostOptions{Entities: MaxEntities}.Validate(), true},
		{"host too many entities", HostOptions{Entities: MaxEntities + 1}.Validate(), false},
		{"fanout plain", FanoutOptions{Bots: 1, Entities: 1, Duration: time.Second, Schema: SchemaPlain}.Validate(), true},
		{"fanout unknown schema", FanoutOptions{Bots: 1, Entities: 1, Duration: time.Second, Schema: "float64"}.Validate(), false},
		{"host unknown schema", HostOptions{Schema: "float64"}.Validate(), false},
	}
	for _, tc := range tests {
		if (tc.err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %t", tc.name, tc.err, tc.ok)
		}
	}
}

// TestFanoutSmoke runs both phases of the fanout benchmark with tiny parameters, with the host
// in this process and in a process of its own.
func TestFanoutSmoke(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("host-process=%v", own), func(t *testing.T) { fanoutSmoke(t, own, false) })
	}
	t.Run("deltas", func(t *testing.T) { fanoutSmoke(t, true, true) })
}

// fanoutSmoke runs a small fanout. Without deltas, the bots get the host's shared RunUpdates;
// with them (the host's -deltas), DeltaUpdates that are smaller once the bots acknowledged values.
func fanoutSmoke(t *testing.T, hostProcess, deltas bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	o := FanoutOptions{Bots: 2, Entities: 20, Duration: 1500 * time.Millisecond, Warmup: 300 * time.Millisecond, Deltas: deltas}
	if hostProcess {
		o.HostCommand = helperHostCommand
	}
	res, err := Fanout(ctx, o, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The raw baseline sends one EntityUpdates of every entity; Concord one RunUpdates, whose
	// varint time grows by a byte at 2⁷ and 2¹⁴ ticks (deltas: DeltaUpdates, PackedUpdates numbered).
	raw := float64(len(rawTemplates(o.Entities)[0]))
	packed := float64(updatesLen(o.Entities, &netmsg.PackedUpdatesWriter{}))
	runs := float64(updatesLen(o.Entities, &netmsg.RunUpdatesWriter{}))
	for name, p := range map[string]*phase{"concord": &res.concord, "raw": &res.raw} {
		if p.lat.n == 0 || p.cpu <= 0 || p.wall <= 0 {
			t.Errorf("%s: %d latency samples, cpu %v over %v", name, p.lat.n, p.cpu, p.wall)
		}
		if want := raw; name == "raw" && p.dgramLen != want {
			t.Errorf("%s: mean datagram %.1f bytes, want %.0f (one EntityUpdates of %d entities)", name, p.dgramLen, want, o.Entities)
		}
		if name == "concord" && deltas && !(p.dgramLen > 0 && p.dgramLen < 0.9*packed) {
			t.Errorf("%s: mean datagram %.1f bytes with deltas, want below 90%% of %.0f (one PackedUpdates of %d entities)", name, p.dgramLen, packed, o.Entities)
		}
		if name == "concord" && !deltas && (p.dgramLen < runs || p.dgramLen > runs+2) {
			t.Errorf("%s: mean datagram %.1f bytes, want %.0f to %.0f (one RunUpdates of %d entities)", name, p.dgramLen, runs, runs+2, o.Entities)
		}
		if p50 := p.lat.quantile(0.5); p50 <= 0 || p50 > 5*time.Second {
			t.Errorf("%s: latency p50 %v", name, p50)
		}
		// Every datagram is one packet: 2 bots × 20 ticks/s × 1.5 s, plus a few SACKs and
		// keepalives.
		if p.wire.packets < 40 || p.wire.packets > 2*60+30 {
			t.Errorf("%s: the host sent %d UDP packets in the window, want about %d", name, p.wire.packets, 2*20*3/2)
		}
	}
	if hostProcess != (res.concord.hostCPU > 0) {
		t.Errorf("host CPU measured apart: %v, want %t", res.concord.hostCPU, hostProcess)
	}
	var out bytes.Buffer
	res.Print(&out)
	if !strings.Contains(out.String(), "ratios concord/raw: CPU") {
		t.Fatalf("report lacks the ratios:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}

// hostHelperEnv makes this test binary run a bench host (TestHostHelperProcess), so that
// TestMigrationSmoke can kill a real process without building the concord binary.
const hostHelperEnv = "CONCORD_BENCH_HOST_HELPER"

// TestHostHelperProcess is the bench host process of TestMigrationSmoke: it takes bench-host's
// flags and stops when its standard input ends, as `concord bench-host -exit-on-stdin-eof` does.
func TestHostHelperProcess(t *testing.T) {
	if os.Getenv(hostHelperEnv) != "1" {
		t.Skip("the bench host process of TestMigrationSmoke")
	}
	fs := flag.NewFlagSet("bench-host", flag.ContinueOnError)
	var o HostOptions
	fs.StringVar(&o.Server, "server", "", "")
	fs.IntVar(&o.Entities, "entities", 0, "")
	fs.IntVar(&o.Moving, "moving", 0, "")
	fs.BoolVar(&o.Deltas, "deltas", false, "")
	fs.Bool("exit-on-stdin-eof", false, "")
	wire := fs.Bool("wire-stats", false, "")
	logLevel := fs.String("log-level", "warn", "")
	if err := fs.Parse(flag.Args()); err != nil {
		os.Exit(2)
	}
	if *wire {
		o.WireOut = os.Stdout
	}
	o.SettleOut = os.Stderr // as bench-host: the idle benchmark settles it
	lv, _ := zerolog.ParseLevel(*logLevel)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := RunHost(ctx, o, zerolog.New(os.Stderr).Level(lv)); err != nil && ctx.Err() == nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// helperHostCommand runs TestHostHelperProcess as a bench host process.
func helperHostCommand(args []string) *exec.Cmd {
	return helperCommand("TestHostHelperProcess", hostHelperEnv, args)
}

// helperCommand runs this test binary's test (a helper process's) with env set, and args.
func helperCommand(test, env string, args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + test + "$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), env+"=1")
	return cmd
}

// rawHostHelperEnv makes this test binary run a raw host (TestRawHostHelperProcess).
const rawHostHelperEnv = "CONCORD_BENCH_RAWHOST_HELPER"

// TestRawHostHelperProcess is the raw host process of TestIdleSmoke, as `concord bench-rawhost`.
func TestRawHostHelperProcess(t *testing.T) {
	if os.Getenv(rawHostHelperEnv) != "1" {
		t.Skip("the raw host process of TestIdleSmoke")
	}
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	if err := RunRawHost(context.Background(), RawHostOptions{SettleOut: os.Stderr}, os.Stdin, os.Stdout, log); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// helperRawHostCommand runs TestRawHostHelperProcess as a raw host process.
func helperRawHostCommand(args []string) *exec.Cmd {
	return helperCommand("TestRawHostHelperProcess", rawHostHelperEnv, args)
}

// TestIdleSmoke runs the idle benchmark at a small size: raw pairs in one process, raw links to a
// raw host process, a room whose host process settles its memory before and after the window
// (the resident set is read settled on both sides), and its standby phase; its rows judge the
// host against the raw host and print both baselines.
func TestIdleSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	s, err := Idle(ctx, IdleOptions{Members: 3, Window: 500 * time.Millisecond, Standby: true,
		HostCommand: helperHostCommand, RawHostCommand: helperRawHostCommand}, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The processes' CPU is read in 10 ms ticks: a host's may be 0 here, the wholes may not.
	if s.Members != 3 || s.Concord <= 0 || s.Standby <= 0 || s.Raw <= 0 || s.RawTwo <= 0 {
		t.Fatalf("summary %+v: want CPU figures for both raw baselines, the room and its standby phase", s)
	}
	if s.RawTwoHostKiB <= 0 || s.RawTwoKiB < s.RawTwoHostKiB {
		t.Fatalf("summary %+v: want the raw host's memory per link, and the whole's at least that", s)
	}
	rows := IdleRows(*s)
	if len(rows) != 3 || !strings.Contains(rows[0].What, "raw pion host process") || !strings.Contains(rows[0].Compare, "one process") ||
		!strings.Contains(rows[1].What, "raw pion host process") {
		t.Fatalf("rows %+v: want the host judged against the raw host, with the one-process baseline shown", rows)
	}
	for _, r := range rows {
		t.Logf("%s: %s (%s) — %s: %s", r.What, r.Figure, r.Compare, r.Goal, r.Verdict)
	}
}

// TestMigrationSmoke kills a bench host process twice under three peers and a small world.
func TestMigrationSmoke(t *testing.T) {
	for _, standby := range []bool{false, true} {
		t.Run(fmt.Sprintf("standby=%v", standby), func(t *testing.T) { migrationSmoke(t, standby) })
	}
}

func migrationSmoke(t *testing.T, standby bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	o := MigrationOptions{
		Standby: standby,
		Peers:   3, Entities: 300, Moving: 20, Trials: 2, Settle: 100 * time.Millisecond, HostLogLevel: "error",
		HostCommand: helperHostCommand,
	}
	res, err := Migration(ctx, o, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.trials) != o.Trials {
		t.Fatalf("%d trials completed, want %d: %v", len(res.trials), o.Trials, res.failures)
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
	var out bytes.Buffer
	res.Print(&out) // with standby links no new link is traced: the phases print as "—"
	t.Logf("\n%s", out.String())
	if !standby && !strings.Contains(out.String(), "members' new links") {
		t.Error("no phases of the members' new links printed")
	}
}

// TestRunHostProfile checks that a bench host writes its CPU profile when it stops.
func TestRunHostProfile(t *testing.T) {
	sig, err := startSignaling(zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sig.stop()
	prof, memProf := t.TempDir()+"/host.prof", t.TempDir()+"/host.mem"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunHost(ctx, HostOptions{Server: sig.url, Entities: 10, CPUProfile: prof, MemProfile: memProf}, zerolog.Nop())
	}()
	if err := wait(context.Background(), 10*time.Second, "bench host elected", nil, func() error {
		rooms, err := sig.srv.Rooms(context.Background())
		if err != nil || len(rooms) == 0 || rooms[0].Host == 0 {
			return fmt.Errorf("no host yet (%v)", err)
		}
		return nil
	}); err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	for _, f := range []string{prof, memProf} {
		fi, err := os.Stat(f)
		if err != nil || fi.Size() == 0 {
			t.Fatalf("profile %s: %v, %d bytes", f, err, sizeOf(fi))
		}
	}
}

// TestPrintNoRaw: with NoRaw the report has the Concord rows only.
func TestPrintNoRaw(t *testing.T) {
	r := &FanoutResult{opts: FanoutOptions{Bots: 2, Entities: 20, Duration: time.Second, NoRaw: true}}
	r.concord = phase{wall: time.Second, cpu: time.Second / 10, dgrams: 20}
	var out bytes.Buffer
	r.Print(&out)
	if s := out.String(); strings.Contains(s, "raw pion") || strings.Contains(s, "ratios concord/raw") || !strings.Contains(s, "concord") {
		t.Fatalf("report with NoRaw:\n%s", s)
	}
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}

// updatesLen is the size of one message of w's kind (PackedUpdates or RunUpdates) of m movers
// (entity ids from 512 up) at time 0.
func updatesLen(m int, w interface {
	Reset([]byte, uint64, int) bool
	Add(*netmsg.Update) bool
	Len() int
}) int {
	s, _ := schemas.Lookup(schemaMover)
	width, _ := netmsg.MaskWidth(len(s.Properties))
	data := make([]byte, s.Properties[propPos].Size+s.Properties[propSent].Size)
	w.Reset(nil, 0, netmsg.MaxDatagram)
	for i := range m {
		w.Add(&netmsg.Update{NetworkID: uint64(peer.FirstSpawnNumber) + uint64(i), Width: width, Mask: 0b11, Data: data})
	}
	return w.Len()
}
