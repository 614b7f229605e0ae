package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// VoiceOptions configures `concord bench voice`: Publishers speakers, each heard by every one of
// Listeners listeners, through a forwarder in a process of its own (`concord bench-voice-server`),
// whose CPU is measured over the window; phases: the raw pion floor, the forwarder with proximity
// off (radius 0), and with proximity on (every listener within Radius of every speaker, so the
// same streams flow but selection runs).
type VoiceOptions struct {
	Publishers, Listeners int
	Radius                float64
	Duration, Warmup      time.Duration
	// ServerCommand makes the command of `concord bench-voice-server` with args.
	ServerCommand func(args []string) *exec.Cmd
	// NoRaw skips the raw floor.
	NoRaw bool
	// ServerProfile, when not empty, is a file name prefix: each phase's server writes a CPU
	// profile to PREFIX-MODE-RADIUS.pprof.
	ServerProfile string
}

// Validate checks the options.
func (o VoiceOptions) Validate() error {
	if o.Publishers < 1 || o.Publishers > 64 || o.Listeners < 1 || o.Listeners > 512 {
		return errors.New("bench voice: -publishers 1..64, -listeners 1..512")
	}
	if o.Duration <= 0 || o.Warmup < 0 || o.Radius <= 0 {
		return errors.New("bench voice: -duration > 0, -warmup ≥ 0, -radius > 0")
	}
	return nil
}

// VoicePhase is one phase's measurement.
type VoicePhase struct {
	Name      string
	Streams   int           // publishers × listeners
	Window    time.Duration // measured time
	CPU       time.Duration // the forwarder process's CPU over the window
	Packets   uint64        // RTP packets the listeners received in the window
	Bytes     uint64
	Expected  uint64 // packets the publishers sent in the window × listeners
	Jitter    time.Duration
	DelayP50  time.Duration // mouth to ear (send to receive, through the forwarder)
	DelayP99  time.Duration
	ServerErr string
}

// VoiceResult is the benchmark's outcome.
type VoiceResult struct {
	Opts   VoiceOptions
	Load   string // /proc/loadavg at the start
	Phases []VoicePhase
}

// Voice runs the benchmark.
func Voice(ctx context.Context, o VoiceOptions, log zerolog.Logger, progress io.Writer) (*VoiceResult, error) {
	load, _ := os.ReadFile("/proc/loadavg")
	res := &VoiceResult{Opts: o, Load: strings.TrimSpace(string(load))}
	type phase struct {
		name, mode string
		radius     float64
	}
	phases := []phase{{"raw pion relay", "raw", 0}, {"concord, proximity off", "concord", 0}, {"concord, proximity on", "concord", o.Radius}}
	if o.NoRaw {
		phases = phases[1:]
	}
	for _, ph := range phases {
		fmt.Fprintf(progress, "bench voice: %s: %d publishers × %d listeners…\n", ph.name, o.Publishers, o.Listeners)
		p, err := voicePhase(ctx, o, ph.mode, ph.radius, log)
		if err != nil {
			return res, fmt.Errorf("%s: %w", ph.name, err)
		}
		p.Name = ph.name
		res.Phases = append(res.Phases, p)
	}
	return res, nil
}

func voicePhase(ctx context.Context, o VoiceOptions, mode string, radius float64, log zerolog.Logger) (VoicePhase, error) {
	args := []string{"-mode", mode, "-publishers", strconv.Itoa(o.Publishers), "-radius", strconv.FormatFloat(radius, 'f', -1, 64)}
	if o.ServerProfile != "" {
		args = append(args, "-cpuprofile", fmt.Sprintf("%s-%s-%g.pprof", o.ServerProfile, mode, radius))
	}
	cmd := o.ServerCommand(args)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return VoicePhase{}, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return VoicePhase{}, err
	}
	errTail := &tail{max: 16 << 10}
	cmd.Stderr = errTail
	if err := cmd.Start(); err != nil {
		return VoicePhase{}, err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	defer func() {
		_ = stdin.Close()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return VoicePhase{}, fmt.Errorf("bench-voice-server: %v: %s", err, errTail.String())
	}
	url := strings.TrimSpace(line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	var ogg bytes.Buffer
	if err := voice.WriteSilence(&ogg, 50); err != nil {
		return VoicePhase{}, err
	}
	var clients []*voice.Client
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	dial := func(member string, cfg voice.DialConfig) (*voice.Client, error) {
		cfg.Server, cfg.Room, cfg.Member, cfg.Stamp, cfg.Logger = url, "bench", member, true, log
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		c, err := voice.Dial(dctx, cfg)
		if err == nil {
			clients = append(clients, c)
		}
		return c, err
	}
	var pubs, lis []*voice.Client
	for j := range o.Listeners {
		c, err := dial(fmt.Sprintf("lis-%d", j), voice.DialConfig{Slots: o.Publishers})
		if err != nil {
			return VoicePhase{}, err
		}
		lis = append(lis, c)
	}
	for i := range o.Publishers {
		c, err := dial(fmt.Sprintf("pub-%d", i), voice.DialConfig{Slots: -1, Publish: bytes.NewReader(ogg.Bytes()), Loop: true})
		if err != nil {
			return VoicePhase{}, err
		}
		pubs = append(pubs, c)
	}
	select {
	case <-ctx.Done():
		return VoicePhase{}, ctx.Err()
	case <-time.After(o.Warmup):
	}
	type mark struct {
		cpu            time.Duration
		at             time.Time
		sent, got, byt uint64
		delays         map[string]int
	}
	take := func() (mark, error) {
		cpu, err := procCPU(cmd.Process.Pid)
		m := mark{cpu: cpu, at: time.Now(), delays: map[string]int{}}
		for _, p := range pubs {
			m.sent += uint64(p.Sent())
		}
		for j, l := range lis {
			for who, st := range l.Speakers() {
				m.got += uint64(st.Packets)
				m.byt += uint64(st.Bytes)
				m.delays[fmt.Sprint(j, who)] = len(st.Delays)
			}
		}
		return m, err
	}
	m0, err := take()
	if err != nil {
		return VoicePhase{}, err
	}
	select {
	case <-ctx.Done():
		return VoicePhase{}, ctx.Err()
	case <-time.After(o.Duration):
	}
	m1, err := take()
	if err != nil {
		return VoicePhase{}, err
	}
	var delays []time.Duration
	var jitter time.Duration
	slotsSeen := 0
	for j, l := range lis {
		for who, st := range l.Speakers() {
			from := m0.delays[fmt.Sprint(j, who)]
			if from < len(st.Delays) {
				delays = append(delays, st.Delays[from:]...)
			}
		}
		for _, ss := range l.SlotStats() {
			if ss.Packets > 0 {
				jitter += time.Duration(ss.Jitter * float64(time.Second))
				slotsSeen++
			}
		}
	}
	slices.Sort(delays)
	ph := VoicePhase{Streams: o.Publishers * o.Listeners, Window: m1.at.Sub(m0.at), CPU: m1.cpu - m0.cpu,
		Packets: m1.got - m0.got, Bytes: m1.byt - m0.byt, Expected: (m1.sent - m0.sent) * uint64(o.Listeners)}
	if slotsSeen > 0 {
		ph.Jitter = jitter / time.Duration(slotsSeen)
	}
	if len(delays) > 0 {
		ph.DelayP50, ph.DelayP99 = delays[len(delays)/2], delays[len(delays)*99/100]
	}
	return ph, nil
}

// Print writes the result as a table.
func (r *VoiceResult) Print(w io.Writer) {
	fmt.Fprintf(w, "bench voice: %d publishers × %d listeners at 50 packets/s, %v window; load average at start %s\n",
		r.Opts.Publishers, r.Opts.Listeners, r.Opts.Duration, r.Load)
	fmt.Fprintf(w, "%-24s %8s %9s %11s %13s %11s %8s %8s %8s %9s %9s\n", "phase", "streams", "cpu %", "pkts/s", "streams/core", "pkts/core/s", "µs/pkt", "loss %", "jitter", "delay50", "delay99")
	for _, p := range r.Phases {
		secs := p.Window.Seconds()
		cores := p.CPU.Seconds() / secs
		pps := float64(p.Packets) / secs
		loss := 0.0
		if p.Expected > 0 {
			loss = max(0, 1-float64(p.Packets)/float64(p.Expected)) * 100
		}
		perCoreStreams, perCorePkts := 0.0, 0.0
		if cores > 0 {
			perCoreStreams, perCorePkts = float64(p.Streams)/cores, pps/cores
		}
		usPerPkt := 0.0
		if pps > 0 {
			usPerPkt = cores * 1e6 / pps
		}
		fmt.Fprintf(w, "%-24s %8d %9.1f %11.0f %13.0f %11.0f %8.2f %8.2f %8s %9s %9s\n", p.Name, p.Streams, cores*100, pps, perCoreStreams, perCorePkts,
			usPerPkt, loss, p.Jitter.Round(10*time.Microsecond), p.DelayP50.Round(10*time.Microsecond), p.DelayP99.Round(10*time.Microsecond))
	}
}

// VoiceServerOptions configure `concord bench-voice-server`.
type VoiceServerOptions struct {
	Mode       string // "raw" or "concord"
	Publishers int
	Radius     float64
	// CPUProfile, when not empty, receives a CPU profile of the process's life.
	CPUProfile string
}

// benchMembers admits every member of the bench: "pub-I" is peer index I+1, "lis-J" 1001+J.
type benchMembers struct{}

func (benchMembers) MemberIndex(_ signaling.RoomID, id signaling.Identity) (signaling.PeerIndex, bool) {
	if s, ok := strings.CutPrefix(string(id), "pub-"); ok {
		i, err := strconv.Atoi(s)
		return signaling.PeerIndex(i + 1), err == nil
	}
	if s, ok := strings.CutPrefix(string(id), "lis-"); ok {
		j, err := strconv.Atoi(s)
		return signaling.PeerIndex(1001 + j), err == nil
	}
	return 0, false
}

// benchPositions puts the publishers on a line and the listeners on a parallel one 1 m away,
// 10 cm apart: every listener within a few metres of every speaker.
type benchPositions struct{}

func (benchPositions) Locate(_ context.Context, _ signaling.RoomID, idx []signaling.PeerIndex, out []voice.Pos) error {
	for i, x := range idx {
		if x > 1000 {
			out[i] = voice.Pos{X: float64(x-1001) * 100, Y: 1000, Known: true}
		} else {
			out[i] = voice.Pos{X: float64(x-1) * 100, Known: true}
		}
	}
	return nil
}

func (benchPositions) Forget(signaling.RoomID) {}

// RunVoiceServer serves the raw relay or the forwarder on a loopback port, prints its URL on
// stdout, and runs until ctx ends.
func RunVoiceServer(ctx context.Context, o VoiceServerOptions, stdout io.Writer, log zerolog.Logger) error {
	stopProfile, err := startProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	api, err := link.NewAPI(link.Config{Logger: log})
	if err != nil {
		return err
	}
	defer api.Close()
	var h http.Handler
	switch o.Mode {
	case "raw":
		mapi, err := voice.NewMediaAPI(api)
		if err != nil {
			return err
		}
		rv, err := newRawVoice(mapi, o.Publishers)
		if err != nil {
			return err
		}
		defer rv.Close()
		h = rv
	case "concord":
		mapi, err := voice.NewMediaAPI(api)
		if err != nil {
			return err
		}
		cfg := voice.Config{Members: benchMembers{}, API: mapi, Flush: api.Flush, Radius: o.Radius, MaxSlots: o.Publishers, Logger: log}
		if o.Radius > 0 {
			cfg.Positions = benchPositions{}
		}
		f, err := voice.New(cfg)
		if err != nil {
			return err
		}
		defer f.Close()
		h = f.Handler()
	default:
		return fmt.Errorf("bench-voice-server: -mode %q: want raw or concord", o.Mode)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
