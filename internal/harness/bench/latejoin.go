package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/signaling"
)

// LateJoinOptions configures LateJoin.
type LateJoinOptions struct {
	Entities int // entities in the host's world
	Moving   int // entities the host moves every tick (the room is live while members join)
	Joins    int // members that join one after another, each alone
	// HostCommand makes the command of the bench host process from bench-host's flags.
	HostCommand func(args []string) *exec.Cmd
	// CPUProfile, when not empty, is the file that receives a CPU profile of this process (the
	// members) over the joins.
	CPUProfile string
}

// LateJoinSummary is what LateJoin measured.
type LateJoinSummary struct {
	Entities, Joins int           // Joins: completed
	P50, P99        time.Duration // joined (the member learnt the host: EventHostChanged) → synced
	StartP50        time.Duration // peer started → synced (signaling, ICE, DTLS and SCTP included)
	SnapshotBytes   int           // a snapshot of the whole world
	// Phases are the medians of the steps from joined to synced (link made, offer sent, answer
	// in, ICE, DTLS, channels open, first and last snapshot byte, apply).
	Phases string
	Load   string
}

// LateJoin starts a bench host process holding o.Entities entities, then o.Joins members one after
// another, each alone in this process: each joins, syncs and leaves before the next starts. It
// measures joined → synced, the time the host's snapshot takes to reach a member and apply.
func LateJoin(ctx context.Context, o LateJoinOptions, log zerolog.Logger, progress io.Writer) (*LateJoinSummary, error) {
	if o.Entities < 1 || o.Entities > MaxEntities || o.Joins < 1 || o.Joins > MaxTrials || o.Moving < 0 || o.HostCommand == nil {
		return nil, fmt.Errorf("late join: want 1 ≤ entities ≤ %d, 1 ≤ joins ≤ %d, moving ≥ 0 and a host command", MaxEntities, MaxTrials)
	}
	room, err := startBenchRoom(ctx, false, nil, log)
	if err != nil {
		return nil, err
	}
	defer room.close()
	hp, err := startBenchHost(o.HostCommand([]string{"-server", room.sig.url, "-entities", fmt.Sprint(o.Entities),
		"-moving", fmt.Sprint(o.Moving), "-exit-on-stdin-eof", "-log-level", "warn"}), nil)
	if err != nil {
		return nil, err
	}
	defer hp.stop(10 * time.Second)
	if err := waitBenchHost(ctx, room.sig, hp); err != nil {
		return nil, fmt.Errorf("%w\nbench host output:\n%s", err, hp.out)
	}
	fmt.Fprintf(progress, "late join: %d members joining a world of %d entities one after another\n", o.Joins, o.Entities)
	s := &LateJoinSummary{Entities: o.Entities}
	var joined, started []time.Duration
	var phases []joinPhases
	stopProfile, err := startProfile(o.CPUProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	for i := range o.Joins {
		j, st, snap, ph, err := lateJoinOne(ctx, room.sig.url, fmt.Sprintf("late%d", i+1), i == 0, log)
		if err != nil {
			return nil, fmt.Errorf("join %d: %w", i+1, err)
		}
		if err := hp.exited(); err != nil {
			return nil, fmt.Errorf("%w\n%s", err, hp.out)
		}
		if i == 0 {
			s.SnapshotBytes = snap
		}
		joined, started = append(joined, j), append(started, st)
		if ph != nil {
			phases = append(phases, *ph)
		}
	}
	slices.Sort(joined)
	slices.Sort(started)
	s.Joins = len(joined)
	s.P50, s.P99 = quantile(joined, 0.5), quantile(joined, 0.99)
	s.StartP50 = quantile(started, 0.5)
	s.Phases = phaseMedians(phases)
	return s, nil
}

// lateJoinOne starts one member in a group of its own, waits until it is synced, and stops it.
func lateJoinOne(ctx context.Context, url, user string, sizeSnapshot bool, log zerolog.Logger) (joined, started time.Duration, snap int, ph *joinPhases, err error) {
	g := newPeerGroup(ctx, url, log)
	defer g.close()
	pr := newProbe(nil, false)
	g.trace = &joinTrace{synced: func() bool { return pr.syncedTerm.Load() != 0 }}
	t0 := time.Now()
	p, err := g.start(user, signaling.KindBot, &app{probe: pr})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	if err := wait(ctx, 60*time.Second, "member synced", g.failed, func() error {
		if pr.syncedTerm.Load() == 0 {
			return errors.New("not synced yet")
		}
		return nil
	}); err != nil {
		return 0, 0, 0, nil, err
	}
	syncedAt, hostAt := pr.syncedAt.Load(), pr.hostChangedAt.Load()
	if hostAt == 0 || hostAt > syncedAt {
		return 0, 0, 0, nil, errors.New("synced before it learnt the host")
	}
	if p, ok := g.trace.phases(hostAt, syncedAt); ok {
		ph = &p
	}
	if sizeSnapshot {
		snap = fullSnapshotSize(ctx, p)
	}
	return time.Duration(syncedAt - hostAt), time.Duration(syncedAt - t0.UnixNano()), snap, ph, nil
}
