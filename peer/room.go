package peer

import (
	"context"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// The room as signaling tells it: members, pinned hosts, and the host of each term. Peer keeps
// it on the loop and starts and stops the roles as hosts change.

// sigClient is what the peer uses of a signaling connection. Every call the loop makes is
// non-blocking: a full send queue fails at once (the message is dropped and logged), so a stuck
// server never holds the loop up. *sigclient.Client implements it.
type sigClient interface {
	Joined() sigclient.Joined
	Events() <-chan sigclient.Event
	TrySendSignal(to PeerIndex, payload sigclient.SignalPayload) error
	TrySetSynced() error
	TryReportReplica(r sigclient.Report) error
	Close() error
}

// sigHolder lets link goroutines load the current client atomically.
type sigHolder struct{ c sigClient }

func (p *Peer) setSig(c sigClient) {
	p.sig = c
	if c == nil {
		p.sigNow.Store(nil)
		p.sigEvents = nil
		return
	}
	p.sigNow.Store(&sigHolder{c})
	p.sigEvents = c.Events()
}

func (p *Peer) joinOptions(resume *sigclient.Resume) sigclient.JoinOptions {
	return sigclient.JoinOptions{
		Room: sigclient.RoomID(p.cfg.Room), User: p.cfg.User, Device: p.cfg.Device, Kind: p.cfg.Kind, Token: p.cfg.Token,
		Resume: resume, NoHost: p.cfg.NoHost,
	}
}

// joined adopts the first signaling connection.
func (p *Peer) joined(sig sigClient) {
	p.setSig(sig)
	j := sig.Joined()
	p.resumeToken = j.ResumeToken
	p.setICEServers(j.ICEServers)
	p.w.self = j.Self
	p.log = p.log.With().Uint64("self", uint64(j.Self)).Logger()
	for _, m := range j.Members {
		p.members[m.Index] = m
	}
	p.pinned = j.PinnedHosts
	p.log.Info().Uint64("term", uint64(j.Term)).Uint64("host", uint64(j.Host)).Int("members", len(j.Members)).Msg("joined room")
	p.setHost(j.Term, j.Host)
}

func (p *Peer) handleSignaling(ctx context.Context, ev sigclient.Event) {
	switch ev := ev.(type) {
	case sigclient.MemberJoined:
		p.members[ev.Member.Index] = ev.Member
	case sigclient.MemberSynced:
		if m, ok := p.members[ev.Index]; ok {
			m.Synced = true
			m.SyncedTerm = max(m.SyncedTerm, ev.Term)
			p.members[ev.Index] = m
		}
	case sigclient.MemberLeft:
		delete(p.members, ev.Index)
		if p.host != nil {
			p.host.signalingLeft(ev.Index)
		}
	case sigclient.HostChanged:
		if ev.ResumeToken != "" {
			p.resumeToken = ev.ResumeToken // it vouches for the new term
		}
		p.setHost(ev.Term, ev.Host)
	case sigclient.ICEServersUpdated:
		p.setICEServers(ev.ICEServers) // fresh TURN credentials: every new link uses them
	case sigclient.Signal:
		p.handleSignal(ev.From, ev.Payload)
	case sigclient.Error:
		if ev.Code == sigclient.CodeRecipientBusy && ev.Signal != "" {
			p.signalShed(ev) // a burst's busy host or member: sent again soon, logged at debug
			break
		}
		p.log.Warn().Str("code", string(ev.Code)).Str("message", ev.Message).Msg("signaling error")
	case sigclient.Closed:
		// Links stay up: the room keeps playing without signaling, and nothing is lost; the
		// peer redials and resumes its index (resume.go).
		p.signalingLost(ctx, ev.Err)
	}
	p.updateStandby()
}

// setHost adopts a host announcement. The same term and host again (a resumed signaling
// connection) changes nothing; neither does "no host" in the term this peer knows a host for:
// that is a server waiting for the host to resume (its resume grace), which announces the host
// in the same term if it comes back and a new term otherwise.
func (p *Peer) setHost(term Term, host PeerIndex) {
	if term < p.w.term || (term == p.w.term && (host == p.w.host || (host == 0 && p.w.host != 0))) {
		p.publish()
		return
	}
	prevHost := p.w.host
	p.w.term, p.w.host = term, host
	p.w.events = append(p.w.events, Event{Kind: EventHostChanged, Term: term, Peer: host})
	p.log.Info().Uint64("term", uint64(term)).Uint64("host", uint64(host)).Msg("host changed")
	switch {
	case host == p.w.self:
		if p.host == nil {
			p.becomeHost()
		}
	case host == 0:
		// Nobody may host: keep the replica and wait.
		if p.host != nil {
			p.stepDown()
		}
		if p.member != nil {
			p.member.newTerm(term, host)
		}
	default:
		if p.host != nil {
			p.stepDown()
		}
		if p.member == nil {
			p.member = newMemberRole(p.roleBase())
			p.notMigrating() // a fresh member (or a former host)
		}
		p.member.newTerm(term, host)
		if prevHost != host {
			p.migrationStarts()
			p.member.follow(host)
		}
	}
	p.publish()
}

func (p *Peer) becomeHost() {
	if p.member != nil {
		p.member.stop()
		p.member = nil
	}
	if s := p.standby; s != nil {
		// This peer is the host now: its own standby link has no use.
		p.discard(s)
	}
	p.held = true
	p.host = newHostRole(p.roleBase())
	p.host.start()
	for _, r := range p.remotes {
		aside := r.aside
		r.aside = nil
		for _, raw := range aside {
			if err := p.handlePayload(r, link.Reliable, raw, 0); err != nil {
				p.drop(r)
				break
			}
		}
	}
}

func (p *Peer) stepDown() {
	p.host.stop()
	p.host = nil
	for _, r := range p.remotes {
		p.discard(r)
	}
	p.w.setRole(false, nopSink{})
}

// report publishes the status (every ReportInterval while the peer is awake, sleep.go) and
// reports the replica to signaling when its state changed since the last report
// (reportKey), or every ReportKeepalive. A member pings its host with a keepalive (its RTT in
// Status), while signaling is down, and until it has an RTT; the host no longer needs pings to
// tell a live member (confirmGone asks). A ping never kept a lock: the host touches a lock's
// holder for the messages its role handles (hostRole.handle), and a Ping is answered before.
func (p *Peer) report() {
	p.updateStandby() // also after links the other end closed
	st := p.publish()
	s := &p.sleep
	now := p.clock.Now()
	s.ranAt = now
	keep := now.Sub(s.keptAt) >= p.cfg.ReportKeepalive-p.cfg.ReportInterval/2
	if keep {
		s.keptAt = now
	}
	// Without signaling too, every ReportInterval: a host of an earlier version takes a member
	// signaling dropped as gone unless it pings.
	if m := p.member; m != nil && m.hostLink != nil && (keep || m.hostLink.rtt == 0 || p.sig == nil) {
		m.ping()
	}
	if p.sig == nil {
		return
	}
	key := p.reportKey()
	if st.HostLink != nil {
		key.link = *st.HostLink // known by now, or only later (ICE renominated): reported when it changes
	}
	if !keep && key == s.reported {
		return
	}
	if err := p.sig.TryReportReplica(sigclient.Report{
		Term: st.Term, Clock: uint64(st.Clock), Entities: uint64(st.Entities), Hash: st.Hash,
		Link: st.HostLink, RTTMicros: uint64(st.RTT.Microseconds()),
		Migrations: st.Migrations, PauseMicros: uint64(st.MigrationPause.Microseconds()),
	}); err != nil {
		s.reported = reportKey{} // again at the next report
		p.log.Debug().Err(err).Msg("replica report failed")
		return
	}
	s.reported = key
}

// setSynced tells signaling that this member holds the host's world (and may host next).
func (p *Peer) setSynced() {
	if p.sig == nil || p.sigEvents == nil {
		return
	}
	if err := p.sig.TrySetSynced(); err != nil {
		p.log.Warn().Err(err).Msg("cannot report synced")
	}
}
