package bench

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/concordrtc/concord/peer"
)

// Print writes the fanout report: one row per phase, then the concord/raw ratios.
func (r *FanoutResult) Print(w io.Writer) {
	o := r.opts
	fmt.Fprintf(w, "concord bench fanout: 1 host + %d bots, %d entities moved every %v tick, %v measured per phase after %v warm-up, GOMAXPROCS %d, %d CPUs\n",
		o.Bots, o.Entities, tick, o.Duration, o.Warmup, runtime.GOMAXPROCS(0), runtime.NumCPU())
	if o.Schema == SchemaPlain {
		fmt.Fprintln(w, "schema: plain (position as two float32, 8 bytes)")
	}
	if o.Interest > 0 {
		fmt.Fprintf(w, "interest management: each bot follows %d of the entities (the raw pion phase sends them all)\n", min(o.Interest, o.Entities))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tCPU %1core\thost in B/s\thost out B/s\tbot in B/s\tbot out B/s\tdgrams/s/bot\tB/dgram\thost drops/s\tupdates/s/bot\tdelivered\tlatency p50\tp99\t≥40ms\t")
	// What a bot should receive: the entities it follows (concord) or all of them (raw pion).
	follows := o.Entities
	if o.Interest > 0 {
		follows = min(o.Interest, o.Entities)
	}
	row := func(name string, p *phase) {
		want := float64(follows) * float64(time.Second/tick)
		if p == &r.raw {
			want = float64(o.Entities) * float64(time.Second/tick)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.0f\t%.1f\t%.0f\t%.1f%%\t%v\t%v\t%.1f%%\t\n", name, p.cpuPercent(),
			p.hostIn, p.hostOut, p.botIn, p.botOut, p.dgrams, p.dgramLen, p.dropped, p.updates, 100*p.updates/want,
			p.lat.quantile(0.5).Round(time.Microsecond), p.lat.quantile(0.99).Round(time.Microsecond), 100*p.lat.above(40*time.Millisecond))
	}
	if o.Relay {
		row("concord relay", &r.concord)
	} else {
		row("concord", &r.concord)
	}
	if !o.NoRaw {
		row("raw pion", &r.raw)
	}
	_ = tw.Flush()
	if o.Relay {
		secs := r.concord.wall.Seconds()
		host := r.concord.hostCPU
		if host <= 0 {
			host = r.concord.cpu // the host ran in this process (-host-in-process): this process's CPU
		}
		fmt.Fprintf(w, "relay process (TURN on loopback, every bot relay-only): CPU %.1f%% of one core (%.2f × the host's), relayed %.0f B/s\n",
			100*r.concord.relay.cpu.Seconds()/secs, r.concord.relay.cpu.Seconds()/max(host.Seconds(), 1e-9), float64(r.concord.relay.bytes)/secs)
	}
	r.printWire(w)
	ratio := func(a, b float64) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	if !o.NoRaw {
		fmt.Fprintf(w, "ratios concord/raw: CPU %s, latency p50 %s, p99 %s\n",
			ratio(r.concord.cpuPercent(), r.raw.cpuPercent()),
			ratio(float64(r.concord.lat.quantile(0.5)), float64(r.raw.lat.quantile(0.5))),
			ratio(float64(r.concord.lat.quantile(0.99)), float64(r.raw.lat.quantile(0.99))))
	}
	if c := &r.concord; c.hostCPU > 0 {
		fmt.Fprintf(w, "concord host process: CPU %.1f%% of one core (%.2f%% per bot); bots and signaling: %.1f%%\n",
			c.hostCPUPercent(), c.hostCPUPercent()/float64(o.Bots), c.cpuPercent()-c.hostCPUPercent())
	}
	for _, p := range []*phase{&r.concord, &r.raw} {
		if p.note != "" {
			fmt.Fprintf(w, "note: %s\n", p.note)
		}
	}
}

// printWire writes the host's (the raw sender's) UDP packets: how many per second and per
// datagram delivered, the share of packets holding only a SACK or a FORWARD TSN, and of other
// small packets (tail fragments of datagrams split in two, SACKs with gaps, heartbeats, pings,
// STUN).
func (r *FanoutResult) printWire(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\thost UDP pkts/s\thost UDP B/s\tpkts/dgram delivered\tSACK or FWD-TSN only\tother small pkts\t")
	row := func(name string, p *phase) {
		secs := p.wall.Seconds()
		if secs <= 0 || p.wire.packets == 0 {
			fmt.Fprintf(tw, "%s\tn/a\tn/a\tn/a\tn/a\tn/a\t\n", name)
			return
		}
		pkts := float64(p.wire.packets)
		perDgram := "n/a"
		if d := p.dgrams * float64(r.opts.Bots); d > 0 {
			perDgram = fmt.Sprintf("%.3f", pkts/secs/d)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%.2f%%\t%.2f%%\t\n", name, pkts/secs, float64(p.wire.bytes)/secs, perDgram,
			100*float64(p.wire.control)/pkts, 100*float64(p.wire.small)/pkts)
	}
	row("concord", &r.concord)
	if !r.opts.NoRaw {
		row("raw pion", &r.raw)
	}
	_ = tw.Flush()
}

// Print writes the migration report: one row per trial, then the pause percentiles against the
// goal, the bytes moved and what was lost.
func (r *MigrationResult) Print(w io.Writer) {
	o := r.opts
	fmt.Fprintf(w, "concord bench migration: %d surviving peers in this process + 1 bench host process killed with SIGKILL per trial, %d entities (%d moved every %v tick), %d trials, GOMAXPROCS %d, %d CPUs\n",
		o.Peers, o.Entities, o.Moving, tick, o.Trials, runtime.GOMAXPROCS(0), runtime.NumCPU())
	if o.ReportInterval != 0 || o.DigestInterval != 0 {
		fmt.Fprintf(w, "experiment: bots report every %v and send digests every %v (0: default 1s)\n", o.ReportInterval, o.DigestInterval)
	}
	r.printTrials(w)
	for _, f := range r.failures {
		fmt.Fprintf(w, "failed: %s\n", strings.SplitN(f, "\n", 2)[0])
	}
	if len(r.trials) == 0 {
		fmt.Fprintln(w, "no trial completed")
		return
	}
	r.printPhases(w)
	r.printLinkPhases(w)
	r.printSummary(w)
}

func (r *MigrationResult) printTrials(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trial\tdetect\theard\thosting\tfirst synced\tmedian synced\tall synced\tconverged\tflowing\tpause\tbytes\tstale keys\tstale buckets\tlost ents\tlost vals\tfull hash\t")
	for i, t := range r.trials {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%t\t\n", i+1, msf(t.detect), msf(t.heard), msf(t.hosting), msf(t.first), msf(t.median), msf(t.synced), msf(t.converged), msf(t.flowing), msf(t.pause()),
			t.bytes, t.staleKeys, t.staleBuckets, t.lostEnts, t.lostVals, t.fullHash)
	}
	_ = tw.Flush()
}

func msf(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }

// printPhases writes the medians over the trials of each phase's end, counted from the kill:
// where a migration's time goes.
func (r *MigrationResult) printPhases(w io.Writer) {
	phase := func(f func(t *trial) time.Duration) string {
		var ds []time.Duration
		for i := range r.trials {
			ds = append(ds, f(&r.trials[i]))
		}
		return msf(quantile(ds, 0.5))
	}
	fmt.Fprintf(w, "phases (median over trials, from the kill): signaling's announcement reaches the first survivor %s, the median member %s; "+
		"the new host's takeover step (with the greetings waiting for it) ends %s; members synced (link, greeting, repair snapshot): first %s, median %s, all %s; "+
		"converged %s; then updates flow %s after the new host resumes\n",
		phase(func(t *trial) time.Duration { return t.detect }),
		phase(func(t *trial) time.Duration { return t.heard }), phase(func(t *trial) time.Duration { return t.hosting }),
		phase(func(t *trial) time.Duration { return t.first }), phase(func(t *trial) time.Duration { return t.median }),
		phase(func(t *trial) time.Duration { return t.synced }), phase(func(t *trial) time.Duration { return t.converged }),
		phase(func(t *trial) time.Duration { return t.flowing }))
}

// printLinkPhases writes when the phases of the members' new links to the new host ended, from the
// kill: median and p90 over every member of every trial.
func (r *MigrationResult) printLinkPhases(w io.Writer) {
	var cols [numLinkPhases][]time.Duration
	for _, t := range r.trials {
		for _, l := range t.links {
			for i, d := range l {
				if d > 0 {
					cols[i] = append(cols[i], d)
				}
			}
		}
	}
	if len(cols[linkPhaseSynced]) == 0 {
		return
	}
	var b strings.Builder
	for i, c := range cols {
		name := "synced"
		switch {
		case i == linkPhaseHeard:
			name = "heard"
		case i <= numPhases:
			name = phaseNames[i-1]
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if len(c) == 0 { // a standby link: made before the kill
			fmt.Fprintf(&b, "%s —", name)
			continue
		}
		fmt.Fprintf(&b, "%s %s/%s", name, msf(quantile(c, 0.5)), msf(quantile(c, 0.9)))
	}
	fmt.Fprintf(w, "members' new links (from the kill, median/p90 over %d members × trials): %s\n", len(cols[linkPhaseSynced]), b.String())
}

func (r *MigrationResult) printSummary(w io.Writer) {
	o := r.opts
	var pauses, conv []time.Duration
	var byteCounts []uint64
	lostEnts, lostVals, hashBad := 0, 0, 0
	for _, t := range r.trials {
		pauses = append(pauses, t.pause())
		conv = append(conv, t.converged)
		byteCounts = append(byteCounts, t.bytes)
		lostEnts += t.lostEnts
		lostVals += t.lostVals
		if !t.fullHash {
			hashBad++
		}
	}
	p50, p99 := quantile(pauses, 0.5), quantile(pauses, 0.99)
	verdict := "met"
	if p99 > 250*time.Millisecond {
		verdict = "NOT met"
	}
	fmt.Fprintf(w, "pause (kill → converged, plus new host resumed → fresh update at every member): p50 %v, p99 %v over %d trials; goal p99 ≤ 250ms %s\n",
		p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), len(pauses), verdict)
	fmt.Fprintf(w, "kill → converged: p50 %v, p99 %v\n", quantile(conv, 0.5).Round(100*time.Microsecond), quantile(conv, 0.99).Round(100*time.Microsecond))
	slices.Sort(byteCounts)
	fmt.Fprintf(w, "bytes moved (sum over survivors of in+out, kill → converged): p50 %d, max %d", byteCounts[len(byteCounts)/2], byteCounts[len(byteCounts)-1])
	if r.fullSnapshot > 0 {
		naive := uint64(r.fullSnapshot) * uint64(o.Peers-1) * 2
		fmt.Fprintf(w, "; one full snapshot is %d bytes, a full-snapshot migration would move ≥ %d (p50 is %.2f%% of it)",
			r.fullSnapshot, naive, 100*float64(byteCounts[len(byteCounts)/2])/float64(naive))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "lost: %d survivor replicas short of entities, %d newest values lost, %d trials with unequal full hashes\n", lostEnts, lostVals, hashBad)
	switch {
	case o.Standby:
		fmt.Fprintln(w, "standby links: on, forced (-standby: members kept an idle link to the next host and promoted it)")
	case o.NoStandby:
		fmt.Fprintln(w, "standby links: off (-no-standby: members connected to the new host after the kill)")
	case o.Peers+1 <= peer.DefaultStandbyMaxMembers:
		fmt.Fprintf(w, "standby links: on, the default in a room of ≤ %d members (-no-standby to compare)\n", peer.DefaultStandbyMaxMembers)
	default:
		fmt.Fprintf(w, "standby links: off, the default in a room of > %d members (-standby to compare)\n", peer.DefaultStandbyMaxMembers)
	}
	if o.Relay && r.wall > 0 {
		secs := r.wall.Seconds()
		fmt.Fprintf(w, "relay process (TURN on loopback, members relay-only), trials 2–%d: CPU %.1f%% of one core (this process %.1f%%), relayed %.0f B/s\n",
			len(r.trials), 100*r.relay.cpu.Seconds()/secs, 100*r.cpu.Seconds()/secs, float64(r.relay.bytes)/secs)
	}
}
