package peer

import (
	"sync/atomic"
	"time"

	"github.com/concordrtc/concord/signaling/sigclient"
)

// Idle members sleep (docs/protocol.md §5, "Idle members"). An awake peer runs three periodic
// loop timers: the tick (TickInterval, with the network flush every NetworkInterval), the status
// report (ReportInterval) and, on a member, the digest (DigestInterval). A member of room in which
// nothing happens would wake 20 times a second for nothing: its App ticks with nothing to do,
// its flush finds nothing to send. So a synced member whose App is an Idler that says it is idle
// sleeps: its periodic timers are removed and one wake-up is armed at the earliest time it has
// work:
//
//   - the flush, NetworkInterval after the last one, once it has something to send (its own
//     writes, an acknowledgement of the host's deltas, queued or backlogged reliable messages, a
//     fragmented payload to expire);
//   - the report, ReportInterval after the last one once its state changed (reportKey), and
//     every ReportKeepalive otherwise;
//   - the digest, when the adaptive anti-entropy schedule says (memberRole.digestDue).
//
// The check runs after every loop step (schedule), so a write, an arriving message or the App
// waking up re-arms it; a peer that stops being a sleepy member (it becomes host, loses its
// link or signaling, its App has something to do) gets its periodic timers back at once. What
// the host needs to know of a member it does not hear from, it asks (confirmGone pings it).

// sleepState is the loop's sleep bookkeeping; the atomics are for Status readers.
type sleepState struct {
	asleep bool
	wake   *timerEntry // the one wake-up of a sleeping peer
	// wantStatus is signaled (without blocking) by a Status reader that found the status stale
	// while the peer sleeps: the loop publishes it again.
	wantStatus chan struct{}
	sleeping   atomic.Bool  // asleep, for Status readers
	statusAt   atomic.Int64 // the clock at the latest publish, in Unix nanoseconds

	// The report (Peer.report): when it last ran, what the last report to signaling said (zero
	// after a failed one), and when the last keepalive (a report and a ping, whatever changed)
	// went.
	ranAt    time.Time
	reported reportKey
	keptAt   time.Time
}

// reportKey is what makes a report worth sending: a new report is due when it differs from the
// last one sent. The replica's change count stands for its clock, hash and entities; a new
// signaling connection has heard no report yet.
type reportKey struct {
	sig        sigClient
	term       Term
	host       PeerIndex
	changes    uint64
	synced     bool
	migrations uint64
	pause      time.Duration
	link       sigclient.LinkTypes // Peer.report fills it in from the status it publishes
}

func (p *Peer) reportKey() reportKey {
	return reportKey{sig: p.sig, term: p.w.term, host: p.w.host, changes: p.w.r.Changes(),
		synced:     p.host != nil || p.member != nil && p.member.synced,
		migrations: p.count.migrations.Load(), pause: p.lastPause}
}

// maySleep reports whether this peer may sleep now: a synced member with a live link to its
// host and live signaling (and its standby link, when it wants one), whose App says it is idle.
func (p *Peer) maySleep() bool {
	m := p.member
	if p.idler == nil || m == nil || p.host != nil || !m.synced || m.stopped || m.hostLink == nil || !m.hostLink.ready || p.sig == nil {
		return false
	}
	if p.standby == nil && p.standbyTarget() != 0 {
		return false // a standby link it wants is not made yet: updateStandby runs with the periodic report
	}
	return p.idler.Idle(p.w)
}

// schedule puts the peer to sleep or wakes it up, after every loop step, and keeps a sleeping
// peer's wake-up at its earliest work.
func (p *Peer) schedule() {
	s := &p.sleep
	if p.tickTimer == nil && !s.asleep {
		return // the timers have not started
	}
	sleepy := p.maySleep()
	switch {
	case sleepy && !s.asleep:
		for _, e := range []**timerEntry{&p.tickTimer, &p.reportTimer, &p.digestTimer} {
			p.timers.remove(*e)
			*e = nil
		}
		s.asleep = true
		s.sleeping.Store(true)
		p.armWake(p.clock.Now())
	case !sleepy && s.asleep:
		p.timers.remove(s.wake)
		s.wake = nil
		s.asleep = false
		s.sleeping.Store(false)
		now := p.clock.Now()
		p.lastTick = now // the App's next Tick covers one interval, not the sleep
		p.startPeriodic(now)
	case sleepy:
		p.armWake(p.clock.Now())
	}
}

// armWake arms the wake-up at the earliest work, unless one is armed earlier already (a wake-up
// with nothing to do only arms the next).
func (p *Peer) armWake(now time.Time) {
	at := p.reportDue()
	if d := p.member.digestDue(); d.Before(at) {
		at = d
	}
	if p.hasWork() {
		at = minTime(at, maxTime(p.lastFlush.Add(p.cfg.NetworkInterval), now))
	}
	s := &p.sleep
	if s.wake != nil {
		if !at.Before(s.wake.at) {
			return
		}
		p.timers.remove(s.wake)
	}
	s.wake = p.timers.add(at, 0, p.wakeUp)
}

// wakeUp runs a sleeping peer's work that is due: the flush (without a Tick), the report, the
// digest. schedule, after it, arms the next.
func (p *Peer) wakeUp(now time.Time) {
	p.sleep.wake = nil
	if !p.sleep.asleep {
		return
	}
	if p.hasWork() && !now.Before(p.lastFlush.Add(p.cfg.NetworkInterval)) {
		p.drainBacklogs(now)
		p.flush(now)
	}
	if !now.Before(p.reportDue()) {
		p.report()
	}
	if m := p.member; m != nil && !now.Before(m.digestDue()) {
		m.sendDigest()
	}
}

// hasWork reports whether a sleeping member has something for the network flush.
func (p *Peer) hasWork() bool {
	if len(p.queuedTo) > 0 {
		return true
	}
	for _, r := range p.remotes {
		if len(r.backlog) > 0 || r.reasm != nil && r.reasm.InProgress() {
			return true
		}
	}
	m := p.member
	return len(m.dirty) > 0 || m.delta != nil && m.delta.link == m.hostLink && m.delta.ackPending()
}

// reportDue is when a sleeping peer's next report is due.
func (p *Peer) reportDue() time.Time {
	s := &p.sleep
	due := s.keptAt.Add(p.cfg.ReportKeepalive)
	key := p.reportKey()
	key.link = s.reported.link // the link's types are read when reporting; a new pair waits for the next report
	if key != s.reported {
		due = minTime(due, s.ranAt.Add(p.cfg.ReportInterval))
	}
	return due
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
