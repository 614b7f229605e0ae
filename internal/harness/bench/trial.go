package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordrtc/concord/peer"
)

// trialRun is one host kill: it waits until the bench host process hosts everyone and updates
// flow, kills it, and measures the migration to the in-process peer that signaling elects next.
type trialRun struct {
	ctx  context.Context
	o    MigrationOptions
	g    *peerGroup
	hp   *hostProc
	hold *atomic.Bool    // the new host holds its simulation while set
	self map[uint64]bool // peer indices of the in-process peers, learnt as they join

	tr     trial
	term   uint64 // the bench host's term, once every peer follows it
	kill   time.Time
	movers []peer.Entity
}

// run measures the trial. The host process is dead when it returns.
func (r *trialRun) run() (tr *trial, err error) {
	defer func() {
		r.hp.kill()
		if err != nil {
			err = fmt.Errorf("%w\nbench host output (tail):\n%s", err, r.hp.out)
		}
	}()
	steps := []func() error{r.steady, r.killHost, r.newHostSynced, r.converge, r.verify, r.resume}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return &r.tr, nil
}

// failed reports a peer that stopped, or the host process's exit while it should be alive.
func (r *trialRun) failed() error {
	if err := r.g.failed(); err != nil {
		return err
	}
	if r.kill.IsZero() {
		return r.hp.exited()
	}
	return nil
}

// steady waits until every peer follows the process host, synced, and receives its updates, then
// lets the room run o.Settle.
func (r *trialRun) steady() error {
	g := r.g
	if err := wait(r.ctx, 60*time.Second+time.Duration(r.o.Peers)*time.Second, "every peer follows the bench host", r.failed, func() error {
		term := g.probes[0].hostTerm.Load()
		r.term = term
		for i, pr := range g.probes {
			r.self[uint64(g.peers[i].Status().Self)] = true
			h := pr.host.Load()
			if h == 0 || r.self[h] || pr.hostTerm.Load() != term || pr.syncedTerm.Load() != term {
				return fmt.Errorf("peer %d: host %d term %d synced %d (want the bench host, term %d)", i+1, h, pr.hostTerm.Load(), pr.syncedTerm.Load(), term)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	now := time.Now()
	for _, pr := range g.probes {
		pr.expectFresh(now)
	}
	if err := wait(r.ctx, 30*time.Second, "updates from the bench host reach every peer", r.failed, func() error {
		for i, pr := range g.probes {
			if pr.freshAt.Load() == 0 {
				return fmt.Errorf("peer %d has no fresh update", i+1)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return sleep(r.ctx, r.o.Settle)
}

// killHost holds the simulation of whoever hosts next, kills the host process and records the
// divergence the kill left.
func (r *trialRun) killHost() error {
	r.hold.Store(true)
	r.tr.bytes = r.g.bytes() // the count at the kill; converge makes it the difference
	for _, t := range r.g.traces {
		t.reset()
	}
	r.kill = time.Now()
	for _, pr := range r.g.probes {
		pr.expectFresh(r.kill)
	}
	r.hp.signalKill()
	err := r.measureStale()
	r.hp.kill()
	return err
}

// measureStale copies what every survivor has seen of the moving entities (nothing new can
// arrive: the host is dead), then counts the keys and buckets where a survivor is older than the
// newest any survivor holds.
func (r *trialRun) measureStale() error {
	g := r.g
	views := make([]map[peer.Entity]int64, len(g.peers))
	if err := doAll(r.ctx, g.peers, func(i int, _ *peer.World) { views[i] = maps.Clone(g.probes[i].seen) }); err != nil {
		return err
	}
	newest := make(map[peer.Entity]int64)
	for _, v := range views {
		for e, s := range v {
			newest[e] = max(newest[e], s)
		}
	}
	for _, v := range views {
		buckets := make(map[int]bool)
		for e, s := range newest {
			if v[e] < s {
				r.tr.staleKeys++
				buckets[int(e.Number())%peer.DefaultBuckets] = true
			}
		}
		r.tr.staleBuckets += len(buckets)
	}
	return nil
}

// newHostSynced waits until every survivor is synced under a new term, and records when each
// stage was reached.
func (r *trialRun) newHostSynced() error {
	g := r.g
	if err := wait(r.ctx, 30*time.Second, "survivors synced under a new host", r.failed, func() error {
		newTerm := g.probes[0].hostTerm.Load()
		if newTerm <= r.term {
			return errors.New("no new term yet")
		}
		for i, pr := range g.probes {
			if !r.self[pr.host.Load()] || pr.hostTerm.Load() != newTerm || pr.syncedTerm.Load() != newTerm {
				return fmt.Errorf("peer %d: host %d term %d synced %d", i+1, pr.host.Load(), pr.hostTerm.Load(), pr.syncedTerm.Load())
			}
		}
		return nil
	}); err != nil {
		return err
	}
	k := r.kill.UnixNano()
	var firstHeard, firstSynced, lastSynced, hosting int64
	var heard, synced []time.Duration // the members'
	for i, pr := range g.probes {
		h := pr.hostChangedAt.Load()
		if firstHeard == 0 || h < firstHeard {
			firstHeard = h
		}
		at := pr.syncedAt.Load()
		if r.isHost(i) {
			hosting = at
			continue
		}
		heard = append(heard, time.Duration(h-k))
		synced = append(synced, time.Duration(at-k))
		if i < len(g.traces) {
			r.tr.links = append(r.tr.links, linkPhases(g.traces[i], k, h, at))
		}
		if firstSynced == 0 || at < firstSynced {
			firstSynced = at
		}
		lastSynced = max(lastSynced, at)
	}
	r.tr.detect = time.Duration(firstHeard - k)
	r.tr.heard = quantile(heard, 0.5)
	r.tr.hosting = time.Duration(hosting - k)
	r.tr.first = time.Duration(firstSynced - k)
	r.tr.median = quantile(synced, 0.5)
	r.tr.synced = time.Duration(max(lastSynced, hosting) - k)
	return nil
}

// isHost reports whether in-process peer i hosts, as its probe last heard.
func (r *trialRun) isHost(i int) bool {
	return uint64(r.g.peers[i].Status().Self) == r.g.probes[i].host.Load()
}

// converge waits until the moving entities (the only ones written since the world was made, so
// the only ones that can differ) hold equal values and stamps everywhere: checked cheaply while
// the clock runs; verify checks the full replica hash afterwards.
func (r *trialRun) converge() error {
	g := r.g
	_ = g.peers[0].Do(r.ctx, func(w *peer.World) {
		r.movers = w.EntitiesOf(schemaMover)
		r.movers = r.movers[:min(len(r.movers), r.o.Moving)]
	})
	digests := make([]uint64, len(g.peers))
	lens := make([]int, len(g.peers))
	if err := wait(r.ctx, 30*time.Second, "survivors converged", r.failed, func() error {
		if err := doAll(r.ctx, g.peers, func(i int, w *peer.World) {
			digests[i], lens[i] = moverDigest(w, r.movers), w.Len()
		}); err != nil {
			return err
		}
		for i := range digests {
			if digests[i] != digests[0] || lens[i] != lens[0] {
				return fmt.Errorf("peer %d differs from peer 1", i+1)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	r.tr.converged = time.Since(r.kill)
	r.tr.bytes = g.bytes() - r.tr.bytes
	return nil
}

// verify (not timed) compares full hashes and entity counts, and checks that no value was lost:
// every moving entity's converged sent time is at least the newest one any survivor had seen.
func (r *trialRun) verify() error {
	g := r.g
	hashes := make([]uint64, len(g.peers))
	lens := make([]int, len(g.peers))
	newestSeen := make(map[peer.Entity]int64, len(r.movers))
	var mu sync.Mutex // guards newestSeen
	converged := make([]int64, len(r.movers))
	if err := doAll(r.ctx, g.peers, func(i int, w *peer.World) {
		hashes[i], lens[i] = w.Replica().Hash(), w.Len()
		if i == 0 {
			for j, e := range r.movers {
				if v, ok := w.Get(e, propSent); ok && len(v) == 8 {
					converged[j] = int64(binary.LittleEndian.Uint64(v))
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for e, s := range g.probes[i].seen {
			newestSeen[e] = max(newestSeen[e], s)
		}
	}); err != nil {
		return err
	}
	r.tr.fullHash = true
	for i := range hashes {
		if hashes[i] != hashes[0] {
			r.tr.fullHash = false
		}
		if lens[i] < r.o.Entities {
			r.tr.lostEnts++
		}
	}
	for j, e := range r.movers {
		if converged[j] < newestSeen[e] {
			r.tr.lostVals++
		}
	}
	return nil
}

// resume lets the new host move again and waits until every member has received a fresh value.
func (r *trialRun) resume() error {
	g := r.g
	release := time.Now()
	r.hold.Store(false)
	if err := wait(r.ctx, 30*time.Second, "updates flow from the new host", r.failed, func() error {
		for i, pr := range g.probes {
			if !r.isHost(i) && pr.freshAt.Load() == 0 {
				return fmt.Errorf("peer %d has no fresh update", i+1)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	var lastFresh int64
	for i, pr := range g.probes {
		if !r.isHost(i) { // the new host writes them
			lastFresh = max(lastFresh, pr.freshAt.Load())
		}
	}
	r.tr.flowing = time.Duration(lastFresh - release.UnixNano())
	return nil
}

// moverDigest hashes the stamps and values of the moving entities' properties.
func moverDigest(w *peer.World, movers []peer.Entity) uint64 {
	h := fnv.New64a()
	var b [12]byte
	s, _ := schemas.Lookup(schemaMover)
	for _, e := range movers {
		for _, prop := range s.Properties {
			data, ts, ok, deleted := w.Replica().Get(e, prop.Component)
			binary.LittleEndian.PutUint32(b[:], uint32(e))
			binary.LittleEndian.PutUint32(b[4:], uint32(ts))
			b[8], b[9] = boolByte(ok), boolByte(deleted)
			_, _ = h.Write(b[:10])
			_, _ = h.Write(data)
		}
	}
	return h.Sum64()
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// linkPhases is when each phase of a member's link to the new host happened, from the kill k:
// heard h, the trace's phases (0 where one is missing: a link that opened before it was traced),
// synced at.
func linkPhases(t *joinTrace, k, h, at int64) (p [numLinkPhases]time.Duration) {
	p[linkPhaseHeard] = time.Duration(h - k)
	for i := range numPhases {
		if s := t.at[i].Load(); s != 0 {
			p[1+i] = time.Duration(s - k)
		}
	}
	p[linkPhaseSynced] = time.Duration(at - k)
	return p
}
