package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// MigrationOptions configures Migration.
type MigrationOptions struct {
	Peers    int           // surviving peers in this process (the killed host is one more)
	Entities int           // entities in the world
	Moving   int           // entities the host moves every tick: the divergence a kill can leave
	Trials   int           // host kills
	Settle   time.Duration // steady state before each kill
	// CPUProfile, when not empty, is the file that receives a CPU profile of this process over
	// every trial after the first (the first includes the world's initial join).
	CPUProfile string
	// ReportInterval and DigestInterval override the in-process peers' defaults when not zero
	// (experiments on where the time goes: each report hashes the replica, each digest walks it).
	ReportInterval, DigestInterval time.Duration
	// Standby makes the members keep standby links to the next host in a room of any size
	// (peer.Config.Standby); NoStandby never (peer.Config.NoStandby); neither is the peer's
	// default (standby links in rooms of up to peer.DefaultStandbyMaxMembers).
	Standby, NoStandby bool
	// HostCommand makes the command of one bench host process; args are bench-host's flags
	// (-server, -entities, -moving, -exit-on-stdin-eof, -log-level). Required.
	HostCommand  func(args []string) *exec.Cmd
	HostLogLevel string // bench-host's -log-level; "" means warn
	// Relay makes the members reach the host only through a TURN relay process (relay).
	Relay bool
	// RelayCommand makes the relay's `concord serve` command from its arguments; nil runs this
	// executable.
	RelayCommand func(args []string) *exec.Cmd
}

// Validate checks the options against the package's bounds.
func (o MigrationOptions) Validate() error {
	if o.Peers < 2 || o.Peers > MaxBots || o.Entities < 1 || o.Entities > MaxEntities ||
		o.Moving < 1 || o.Trials < 1 || o.Trials > MaxTrials || o.Settle < 0 || o.Settle > time.Minute {
		return fmt.Errorf("want 2 ≤ -peers ≤ %d, 1 ≤ -entities ≤ %d, -moving ≥ 1, 1 ≤ -trials ≤ %d, 0 ≤ -settle ≤ 1m",
			MaxBots, MaxEntities, MaxTrials)
	}
	if o.HostCommand == nil {
		return errors.New("no HostCommand")
	}
	return nil
}

// trial is what one host kill measured.
type trial struct {
	detect time.Duration // kill → the first survivor hears of a new host
	heard  time.Duration // kill → the median member hears of it (the new host's "host" event)
	// hosting is kill → the end of the new host's takeover step: its app hears of the new term
	// after the step, which also answers the greetings that members' promoted standby links
	// delivered before signaling's announcement reached the new host (peer.becomeHost).
	hosting   time.Duration
	first     time.Duration // kill → the first member synced under the new term
	median    time.Duration // kill → the median member synced under the new term
	synced    time.Duration // kill → every survivor synced under the new term
	converged time.Duration // kill → every survivor holds the same state (detected)
	flowing   time.Duration // new host resumes → every member has received a fresh update
	bytes     uint64        // sum over survivors of bytes in+out, kill → converged
	// staleKeys and staleBuckets sum, over survivors, the moving entities (and their digest
	// buckets) where the survivor held an older value than the newest any survivor held.
	staleKeys, staleBuckets int
	lostEnts                int  // survivors missing entities after convergence
	lostVals                int  // moving entities whose converged value is older than one a survivor had seen
	fullHash                bool // the full replica hashes were equal at the check
	// links holds, per member that made a new link to the new host, when each phase of that
	// link happened, counted from the kill: heard (the member learnt of the new host), the
	// joinTrace phases, and synced (linkPhaseHeard … linkPhaseSynced).
	links [][numLinkPhases]time.Duration
}

// The columns of trial.links: the member heard of the new host, the phases of its new link
// (joinTrace), it synced.
const (
	linkPhaseHeard  = 0
	linkPhaseSynced = numPhases + 1
	numLinkPhases   = numPhases + 2
)

// pause is the user-visible gap: until the state converged, plus until updates reached everyone
// after the new host resumed (the driver's verification in between is not counted).
func (t *trial) pause() time.Duration { return t.converged + t.flowing }

// MigrationResult is what Migration measured; Print reports it.
type MigrationResult struct {
	opts         MigrationOptions
	trials       []trial
	failures     []string
	fullSnapshot int // bytes of one HostSnapshot covering the whole world
	// relay is the relay process's CPU and bytes over the trials after the first (Relay), wall
	// the time they took and cpu this process's CPU over it.
	relay relayWindow
	wall  time.Duration
	cpu   time.Duration
}

// Migration starts a bench host process and o.Peers peers in this process, then kills the host
// o.Trials times, each time measuring the migration to the peer signaling elects next and
// starting a new host process that takes the room back. It reports progress on progress. The
// result holds the trials that completed, also when err is not nil.
func Migration(ctx context.Context, o MigrationOptions, log zerolog.Logger, progress io.Writer) (*MigrationResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.HostLogLevel == "" {
		o.HostLogLevel = "warn"
	}
	res := &MigrationResult{opts: o}
	room, err := startBenchRoom(ctx, o.Relay, o.RelayCommand, log)
	if err != nil {
		return nil, err
	}
	defer room.close()
	rel, sig, g := room.rel, room.sig, room.g
	g.reportInterval, g.digestInterval, g.standby, g.noStandby = o.ReportInterval, o.DigestInterval, o.Standby, o.NoStandby
	hold := new(atomic.Bool)

	// The first host process spawns the world before any bot joins.
	hp, err := startHostProc(o, sig.url)
	if err != nil {
		return nil, err
	}
	if err := waitBenchHost(ctx, sig, hp); err != nil {
		hp.kill()
		return nil, fmt.Errorf("%w\nbench host output:\n%s", err, hp.out)
	}
	for i := range o.Peers {
		a := &app{entities: o.Entities, moving: o.Moving, hold: hold, probe: newProbe(nil, true)}
		pr := a.probe
		// Each member's links are traced; a trial clears the stamps at the kill, so they are the
		// phases of its link to the new host. Reliable bytes count until it syncs in the new term.
		g.trace = &joinTrace{synced: func() bool { return pr.syncedTerm.Load() >= pr.hostTerm.Load() }}
		g.traces = append(g.traces, g.trace)
		if _, err := g.start(fmt.Sprintf("peer%d", i+1), signaling.KindBot, a); err != nil {
			hp.kill()
			return nil, err
		}
	}
	fmt.Fprintf(progress, "migration: %d peers joining a world of %d entities\n", o.Peers, o.Entities)
	if err := res.runTrials(ctx, g, hp, sig.url, rel, hold, progress); err != nil {
		return res, err
	}
	res.fullSnapshot = fullSnapshotSize(ctx, g.peers[0])
	return res, nil
}

// waitBenchHost waits until signaling announces the bench host process as the room's host.
func waitBenchHost(ctx context.Context, sig *signalingServer, hp *hostProc) error {
	return wait(ctx, 30*time.Second, "bench host elected", hp.exited, func() error {
		rooms, err := sig.srv.Rooms(ctx)
		if err != nil {
			return err
		}
		for _, r := range rooms {
			for _, m := range r.Members {
				if r.Room == room && m.PeerIndex == r.Host && m.PeerID.User() == hostUser {
					return nil
				}
			}
		}
		return errors.New("no bench host yet")
	})
}

// runTrials kills the host o.Trials times; hp is the first trial's host, and every trial after
// it starts its own. It stops after three failed trials.
func (r *MigrationResult) runTrials(ctx context.Context, g *peerGroup, hp *hostProc, url string, rel *relay, hold *atomic.Bool, progress io.Writer) error {
	o := r.opts
	stopProfile := func() {}
	defer func() { stopProfile() }()
	var rel0 relayWindow
	var wall0 time.Time
	var cpu0 time.Duration
	defer func() {
		if !wall0.IsZero() {
			r.relay, r.wall, r.cpu = rel.mark().sub(rel0), time.Since(wall0), cpuTime()-cpu0
		}
	}()
	self := make(map[uint64]bool)
	for i := range o.Trials {
		if i > 0 {
			var err error
			if hp, err = startHostProc(o, url); err != nil {
				return err
			}
		}
		run := &trialRun{ctx: ctx, o: o, g: g, hp: hp, hold: hold, self: self}
		tr, err := run.run() // kills hp
		if err != nil {
			r.failures = append(r.failures, fmt.Sprintf("trial %d: %v", i+1, err))
			fmt.Fprintf(progress, "migration: trial %d failed: %v\n", i+1, err)
			if len(r.failures) >= 3 || ctx.Err() != nil {
				return fmt.Errorf("%d trials failed; stopping: %w", len(r.failures), err)
			}
			continue
		}
		r.trials = append(r.trials, *tr)
		fmt.Fprintf(progress, "migration: trial %d: pause %v (converged %v + flowing %v), %d bytes\n",
			i+1, tr.pause().Round(time.Millisecond), tr.converged.Round(time.Millisecond), tr.flowing.Round(time.Millisecond), tr.bytes)
		if i == 0 {
			// Profile the migrations, not the initial join of the world.
			if stopProfile, err = startProfile(o.CPUProfile); err != nil {
				return err
			}
			rel0, wall0, cpu0 = rel.mark(), time.Now(), cpuTime()
		}
	}
	return nil
}

// fullSnapshotSize is the size of a snapshot of p's whole world: what a migration without digests
// would send to every member.
func fullSnapshotSize(ctx context.Context, p *peer.Peer) int {
	n := 0
	_ = p.Do(ctx, func(w *peer.World) {
		var snap netmsg.HostSnapshot
		hostsnapshot.Build(&snap, w.Replica(), w.Schemas(), hostsnapshot.Options{Term: uint64(w.Term()), Cover: hostsnapshot.All(peer.DefaultBuckets)})
		n = len(netmsg.AppendHostSnapshot(nil, &snap))
	})
	return n
}
