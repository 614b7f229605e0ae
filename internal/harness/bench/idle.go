package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
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
	// ReportInterval and TickInterval, when not zero, override the members' status report
	// interval and their tick and network intervals (experiments: what an idle member's cost
	// comes from).
	ReportInterval, TickInterval time.Duration
	// CPUProfile, when not empty, receives a CPU profile of this process over the window of the
	// room without standby links.
	CPUProfile string
}

// IdleSummary is what Idle measured: CPU in % of one core over each window, both ends of every
// link together (Concord: this process's members and signaling, and the host process).
type IdleSummary struct {
	Members      int
	Raw, Concord float64 // CPU %
	Standby      float64 // CPU %, the phase with standby links; 0 when not run
	ConcordHost  float64 // the host process's part of Concord
	StandbyHost  float64
	Load         string
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
	rp, err := dialRawPairs(ctx, o.Members, pionLogger(log), new(atomic.Bool))
	if err != nil {
		return nil, fmt.Errorf("raw pairs: %w", err)
	}
	s.Raw, _, err = idleWindow(ctx, o.Window, nil)
	rp.close()
	if err != nil {
		return nil, err
	}
	runtime.GC()
	fmt.Fprintf(progress, "idle: a room of %d members\n", o.Members)
	if s.Concord, s.ConcordHost, err = idleRoom(ctx, o, false, log); err != nil {
		return nil, err
	}
	if o.Standby {
		runtime.GC()
		fmt.Fprintf(progress, "idle: a room of %d members with standby links\n", o.Members)
		if s.Standby, s.StandbyHost, err = idleRoom(ctx, o, true, log); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// idleRoom runs one Concord phase of Idle and returns its CPU and the host process's part.
func idleRoom(ctx context.Context, o IdleOptions, standby bool, log zerolog.Logger) (total, host float64, err error) {
	room, err := startBenchRoom(ctx, false, nil, log)
	if err != nil {
		return 0, 0, err
	}
	defer room.close()
	g := room.g
	g.standby, g.noStandby = standby, !standby // the phase without standby links has none
	g.reportInterval, g.tickInterval = o.ReportInterval, o.TickInterval
	// An empty world: the host has nothing to move, its members nothing to receive.
	hp, err := startBenchHost(o.HostCommand([]string{"-server", room.sig.url, "-entities", "0", "-exit-on-stdin-eof", "-log-level", "warn"}), nil)
	if err != nil {
		return 0, 0, err
	}
	defer hp.stop(10 * time.Second)
	if err := waitBenchHost(ctx, room.sig, hp); err != nil {
		return 0, 0, fmt.Errorf("%w\n%s", err, hp.out)
	}
	g.remoteHost = hp
	for i := range o.Members {
		if _, err := g.start(fmt.Sprintf("idle%d", i+1), signaling.KindBot, &app{}); err != nil {
			return 0, 0, err
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
		return 0, 0, err
	}
	// Joining is over; what is left is the members' idle traffic.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return 0, 0, err
	}
	profile := ""
	if !standby {
		profile = o.CPUProfile
	}
	stopProfile, err := startProfile(profile)
	if err != nil {
		return 0, 0, err
	}
	total, host, err = idleWindow(ctx, o.Window, g)
	stopProfile()
	if err == nil {
		err = g.failed()
	}
	if err == nil {
		err = hp.exited()
	}
	return total, host, err
}

// idleWindow measures this process's CPU, and g's host process's when g is not nil, over d.
func idleWindow(ctx context.Context, d time.Duration, g *peerGroup) (total, host float64, err error) {
	var h0 time.Duration
	if g != nil {
		h0 = g.hostCPU()
	}
	t0, c0 := time.Now(), cpuTime()
	if err := sleep(ctx, d); err != nil {
		return 0, 0, err
	}
	t1, c1 := time.Now(), cpuTime()
	var h time.Duration
	if g != nil {
		if h = g.hostCPU() - h0; h < 0 {
			return 0, 0, errors.New("idle: host CPU went back")
		}
	}
	wall := t1.Sub(t0).Seconds()
	return 100 * (float64(c1-c0) + float64(h)) / 1e9 / wall, 100 * float64(h) / 1e9 / wall, nil
}
