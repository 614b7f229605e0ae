package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/signaling"
)

// MaxIdleMembers bounds IdleOptions.Members.
const MaxIdleMembers = 256

// IdleOptions configures Idle.
type IdleOptions struct {
	Members int           // idle members of one room (and raw pion pairs)
	Window  time.Duration // measured time of each phase, after the members are connected
	// Standby adds a phase whose members keep standby links (peer.Config.Standby).
	Standby bool
	// HostCommand makes the command of the bench host process from bench-host's flags.
	HostCommand func(args []string) *exec.Cmd
	// RawHostCommand makes the command of the raw host process (bench-rawhost, RunRawHost) from
	// its flags: the raw baseline in Concord's shape, its links' host ends in a process of their
	// own. Nil: that phase is not run.
	RawHostCommand func(args []string) *exec.Cmd
	// ReportInterval and TickInterval, when not zero, override the members' status report
	// interval and their tick and network intervals (experiments: what an idle member's cost
	// comes from).
	ReportInterval, TickInterval time.Duration
	// CPUProfile, when not empty, receives a CPU profile of this process over the window of the
	// room without standby links.
	CPUProfile string
	// MemProfile, when not empty, receives a heap profile of this process (the members and
	// signaling) at the end of that window: inuse_space is what the room holds.
	MemProfile string
	// HostWindowProfile makes Idle start and stop the host process's window profile (bench-host
	// -window-cpuprofile) around the window of the room without standby links.
	HostWindowProfile bool
	// RawHostWindowProfile does the same for the raw host process (bench-rawhost
	// -window-cpuprofile) around its window.
	RawHostWindowProfile bool
}

// IdleSummary is what Idle measured: CPU in % of one core over each window, both ends of every
// link together (Concord: this process's members and signaling, and the host process).
type IdleSummary struct {
	Members      int
	Raw, Concord float64 // CPU %; Raw: both ends of every pair in this process
	Standby      float64 // CPU %, the phase with standby links; 0 when not run
	ConcordHost  float64 // the host process's part of Concord
	StandbyHost  float64

	// RawTwo is the raw baseline in Concord's shape (RawHostCommand), both processes; RawTwoHost
	// is its raw host process's part. 0 when not run.
	RawTwo, RawTwoHost float64

	// Memory per member (or raw pair), KiB of resident set: what the room or the pairs added to
	// this process's RSS, plus (Concord) what the members added to the host process's.
	RawKiB, ConcordKiB, ConcordHostKiB float64
	// RawTwoKiB is what the two-process baseline's links added to both processes, RawTwoHostKiB
	// to its raw host process.
	RawTwoKiB, RawTwoHostKiB float64
	Load                     string
}

// Idle measures what idle members cost: o.Members raw pion link pairs open and carrying nothing
// but their own keepalives, then a room of o.Members members whose host (a bench-host process
// with an empty world) moves nothing, then the same with standby links.
func Idle(ctx context.Context, o IdleOptions, log zerolog.Logger, progress io.Writer) (*IdleSummary, error) {
	if o.Members < 1 || o.Members > MaxIdleMembers || o.Window <= 0 || o.Window > MaxDuration || o.HostCommand == nil {
		return nil, fmt.Errorf("idle: want 1 ≤ members ≤ %d, 0 < window ≤ %v and a host command", MaxIdleMembers, MaxDuration)
	}
	s := &IdleSummary{Members: o.Members}
	fmt.Fprintf(progress, "idle: %d raw pion pairs\n", o.Members)
	rss0 := settledRSS()
	rp, err := dialRawPairs(ctx, o.Members, pionLogger(log), new(atomic.Bool))
	if err != nil {
		return nil, fmt.Errorf("raw pairs: %w", err)
	}
	s.Raw, _, err = idleWindow(ctx, o.Window, nil)
	s.RawKiB = perMember(settledRSS()-rss0, o.Members)
	fmt.Fprintf(progress, "idle: raw pion %.1f%% of a core, %.0f KiB a pair\n", s.Raw, s.RawKiB)
	rp.close()
	if err != nil {
		return nil, err
	}
	runtime.GC()
	if o.RawHostCommand != nil {
		fmt.Fprintf(progress, "idle: %d raw pion links to a raw host process\n", o.Members)
		if err := idleRawHost(ctx, o, s, log, progress); err != nil {
			return nil, fmt.Errorf("raw host: %w", err)
		}
		runtime.GC()
	}
	fmt.Fprintf(progress, "idle: a room of %d members\n", o.Members)
	var mem idleMemory
	if s.Concord, s.ConcordHost, mem, err = idleRoom(ctx, o, false, log, progress); err != nil {
		return nil, err
	}
	s.ConcordKiB, s.ConcordHostKiB = perMember(mem.self+mem.host, o.Members), perMember(mem.host, o.Members)
	if o.Standby {
		runtime.GC()
		fmt.Fprintf(progress, "idle: a room of %d members with standby links\n", o.Members)
		if s.Standby, s.StandbyHost, _, err = idleRoom(ctx, o, true, log, progress); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// idleRawHost runs the two-process raw phase of Idle (RawHostCommand) and fills in its figures.
func idleRawHost(ctx context.Context, o IdleOptions, s *IdleSummary, log zerolog.Logger, progress io.Writer) error {
	self0 := settledRSS()
	rl, err := dialRawHost(ctx, o.RawHostCommand(nil), o.Members, pionLogger(log))
	if err != nil {
		return err
	}
	defer rl.close()
	// As in the Concord phase: the set-up is over, what is left is the links' idle traffic.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	if o.RawHostWindowProfile {
		if err := rl.hp.profileWindow(ctx, true); err != nil {
			return err
		}
	}
	if s.RawTwo, s.RawTwoHost, err = idleWindow(ctx, o.Window, rl.hp); err != nil {
		return err
	}
	if o.RawHostWindowProfile {
		if err := rl.hp.profileWindow(ctx, false); err != nil {
			return err
		}
	}
	self := settledRSS() - self0
	if err := rl.hp.settle(ctx); err != nil {
		return err
	}
	host, err := procRSS(rl.hp.cmd.Process.Pid)
	if err != nil {
		return err
	}
	s.RawTwoKiB, s.RawTwoHostKiB = perMember(self+host-rl.host0, o.Members), perMember(host-rl.host0, o.Members)
	fmt.Fprintf(progress, "idle: raw pion in two processes %.1f%% of a core (raw host %.1f%%), %.0f KiB a link (raw host %.0f KiB)\n",
		s.RawTwo, s.RawTwoHost, s.RawTwoKiB, s.RawTwoHostKiB)
	return rl.hp.exited()
}

// idleMemory is the resident memory a room of idle members added, in bytes: to this process
// (the members, and signaling's share) and to the host process.
type idleMemory struct{ self, host int64 }

// idleRoom runs one Concord phase of Idle and returns its CPU, the host process's part, and the
// memory the members added.
func idleRoom(ctx context.Context, o IdleOptions, standby bool, log zerolog.Logger, progress io.Writer) (total, host float64, mem idleMemory, err error) {
	self0 := settledRSS()
	room, err := startBenchRoom(ctx, false, nil, log)
	if err != nil {
		return 0, 0, mem, err
	}
	defer room.close()
	g := room.g
	g.standby, g.noStandby = standby, !standby // the phase without standby links has none
	g.reportInterval, g.tickInterval = o.ReportInterval, o.TickInterval
	// An empty world: the host has nothing to move, its members nothing to receive.
	hp, err := startBenchHost(o.HostCommand([]string{"-server", room.sig.url, "-entities", "0", "-exit-on-stdin-eof", "-log-level", "warn"}), nil)
	if err != nil {
		return 0, 0, mem, err
	}
	defer hp.stop(10 * time.Second)
	if err := waitBenchHost(ctx, room.sig, hp); err != nil {
		return 0, 0, mem, fmt.Errorf("%w\n%s", err, hp.out)
	}
	g.remoteHost = hp
	// The host process's resident set is read settled, as this process's is (settledRSS): what
	// is live, not the garbage its collector has yet to reach.
	if err := hp.settle(ctx); err != nil {
		return 0, 0, mem, err
	}
	host0, _ := procRSS(hp.cmd.Process.Pid)
	for i := range o.Members {
		if _, err := g.start(fmt.Sprintf("idle%d", i+1), signaling.KindBot, &app{idle: true}); err != nil {
			return 0, 0, mem, err
		}
	}
	if err := wait(ctx, 60*time.Second+time.Duration(o.Members)*200*time.Millisecond, "idle members synced", g.failed, func() error {
		for i, p := range g.peers {
			if !p.Status().Synced {
				return fmt.Errorf("member %d not synced yet", i+1)
			}
		}
		return nil
	}); err != nil {
		return 0, 0, mem, err
	}
	// Joining is over; what is left is the members' idle traffic.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return 0, 0, mem, err
	}
	profile := ""
	if !standby {
		profile = o.CPUProfile
	}
	stopProfile, err := startProfile(profile)
	if err != nil {
		return 0, 0, mem, err
	}
	hostProfile := !standby && o.HostWindowProfile
	if hostProfile {
		if err := hp.profileWindow(ctx, true); err != nil {
			stopProfile()
			return 0, 0, mem, err
		}
	}
	total, host, err = idleWindow(ctx, o.Window, hp)
	stopProfile()
	if hostProfile {
		if perr := hp.profileWindow(ctx, false); perr != nil && err == nil {
			err = perr
		}
	}
	mem.self = settledRSS() - self0
	if !standby {
		writeMemProfile(o.MemProfile, log)
	}
	unsettled, _ := procRSS(hp.cmd.Process.Pid)
	if serr := hp.settle(ctx); serr != nil && err == nil {
		err = serr
	}
	if h, rerr := procRSS(hp.cmd.Process.Pid); rerr == nil {
		mem.host = h - host0
	}
	// Said before the room closes: closing hundreds of links is the slow part.
	fmt.Fprintf(progress, "idle: %.1f%% of a core (host %.1f%%), %.0f KiB a member (host %.0f KiB; %.0f before its collection)\n",
		total, host, perMember(mem.self+mem.host, o.Members), perMember(mem.host, o.Members), perMember(unsettled-host0, o.Members))
	if err == nil {
		err = g.failed()
	}
	if err == nil {
		err = hp.exited()
	}
	return total, host, mem, err
}

// idleWindow measures this process's CPU, and hp's when hp is not nil, over d.
func idleWindow(ctx context.Context, d time.Duration, hp *hostProc) (total, host float64, err error) {
	var h0 time.Duration
	if hp != nil {
		if h0, err = procCPU(hp.cmd.Process.Pid); err != nil {
			return 0, 0, err
		}
	}
	t0, c0 := time.Now(), cpuTime()
	if err := sleep(ctx, d); err != nil {
		return 0, 0, err
	}
	t1, c1 := time.Now(), cpuTime()
	var h time.Duration
	if hp != nil {
		h1, err := procCPU(hp.cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		if h = h1 - h0; h < 0 {
			return 0, 0, errors.New("idle: host CPU went back")
		}
	}
	wall := t1.Sub(t0).Seconds()
	return 100 * (float64(c1-c0) + float64(h)) / 1e9 / wall, 100 * float64(h) / 1e9 / wall, nil
}

// settledRSS is this process's resident set in bytes after a collection that returns the freed
// heap to the OS, so that two readings differ by what is live between them.
func settledRSS() int64 {
	debug.FreeOSMemory()
	n, _ := procRSS(os.Getpid())
	return n
}

// procRSS reads a process's resident set (VmRSS) in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kib, err := strconv.ParseInt(f[0], 10, 64)
				return kib << 10, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// perMember is bytes per member in KiB.
func perMember(bytes int64, members int) float64 {
	return float64(bytes) / 1024 / float64(members)
}
