package peer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// Status is a snapshot of a peer, safe to read from any goroutine.
type Status struct {
	Self     PeerIndex
	Host     PeerIndex
	Term     Term
	IsHost   bool
	Synced   bool
	Entities int
	// WorldBytes is the replica's size as an ADR-117 message stream (crdt.Replica.Size): the
	// bytes of a checkpoint, what WorldLimits.RoomBytes bounds.
	WorldBytes int
	Clock      uint32
	Hash       uint64
	Members    int
	Links      int
	RTT        time.Duration
	BytesIn    uint64
	BytesOut   uint64
	// Rejected counts writes the host refused for lack of authority.
	Rejected uint64
	// RejectedRace counts the part of Rejected that are expected races of normal play (logged at
	// debug, not warn): writes of a member that lost the entity's authority moments ago (a lock
	// handed back or expired, the transfer still on its way to it), and corrections to values this
	// host already holds.
	RejectedRace uint64
	// Refused counts inputs refused by the limits of docs/protocol.md §5 ("Limits"): on a host,
	// a member's stamps too far ahead, oversized or forged corrections, digests of another
	// bucket count, relayed messages over the relay budgets (dropped, not held against the
	// member: RefusedRelayBudget, RefusedRelayInbound, RefusedRelayBacklog); on a member, a host's stamps too far ahead or deletions far above any known
	// version or a snapshot beyond the sync bounds; on either, a fragmented payload left
	// unfinished past its deadline. RefusedBy splits Refused by reason (index: Refusal).
	// Offenders counts members whose link the host closed for repeated refusals.
	Refused   uint64
	RefusedBy [NumRefusals]uint64
	Offenders uint64
	// Fenced counts messages ignored because they did not come from the host of the term: on a
	// member, host messages refused by its fence (docs/protocol.md §5, "Fencing").
	Fenced uint64
	// Dropped counts messages dropped as unusable (unknown entity, unknown extension, full queue).
	Dropped uint64
	// LinkLost counts unreliable datagrams the current links lost or dropped on the way out
	// (the in-memory transport's simulated loss, a full send buffer).
	LinkLost uint64
	// Standby reports an open standby link to the next host in election order.
	Standby bool
	// StandbyPromoted counts migrations that reused a standby link instead of connecting anew.
	StandbyPromoted uint64
	// SignalsShed counts this peer's signals signaling did not relay because their recipient was
	// busy (recipient_busy), and SignalsResent the times a link sent such signals again
	// (docs/protocol.md §4 "Signal budgets"; resend.go).
	SignalsShed, SignalsResent uint64
	// SignalsDropped counts signals to this peer its signaling client dropped on arrival, its
	// event queue three quarters full (sigclient.Client.ShedSignals, of the current connection):
	// their senders are not told, and their links wait out the connect timeout.
	SignalsDropped uint64
	// Signaling reports a live signaling connection. While it is down the room plays on over
	// the links, and the peer redials (Config.RedialMin, RedialMax).
	Signaling bool
	// Server is the URL of the node the signaling connection was last made to (one of
	// Config.Server's list).
	Server string
	// Resumes counts signaling connections resumed under this peer's index after a loss.
	Resumes uint64
	// ResumeRefused is why the server refused to resume this peer, "" if it did not: the peer
	// then plays on without signaling and stops redialing.
	ResumeRefused string
	// HostLink is the candidate types of the selected pair of this member's link to the host
	// (pion links only); nil on the host and before the link is up. Reported to signaling.
	HostLink *sigclient.LinkTypes
	// Channels sums the counters of every link this peer had, per channel (link.Reliable,
	// link.Unreliable); Buffered is over the current links only.
	Channels [link.NumChannels]link.ChannelStats
	// Pairs counts the current links by the candidate types of their selected pair (pion links
	// only; a link without a selected pair yet is not counted).
	Pairs map[sigclient.LinkTypes]int
	// Migrations counts host changes this member lived through while synced, and
	// MigrationPause is how long the latest took: from learning of the new host to having
	// merged its snapshot.
	Migrations     uint64
	MigrationPause time.Duration
	// Deltas counts values of delta-capable properties sent (host) or taken (member) as
	// differences from an acknowledged value, and Wholes those a host sent whole to members that
	// take deltas (no acknowledged value yet, or the difference was not shorter). DeltaMissed
	// counts values a member dropped because it did not hold the value the difference was from
	// (docs/protocol.md §2.10; the host's next whole value or later difference repairs it).
	Deltas, Wholes, DeltaMissed uint64
	// Superseded counts entity numbers a host gave up because a member holds them deleted at a
	// version it had not seen (a host restored from an older checkpoint; host_supersede.go).
	Superseded uint64
}

type counters struct {
	bytesIn, bytesOut, rejected, rejectedRace, refused, offenders, fenced, dropped, droppedIn, promoted, resumes atomic.Uint64
	migrations                                                                                                   atomic.Uint64
	deltas, wholes, deltaMissed                                                                                  atomic.Uint64
	superseded                                                                                                   atomic.Uint64
	signalsShed, signalsResent                                                                                   atomic.Uint64
	refusedBy                                                                                                    [NumRefusals]atomic.Uint64
	// closedMu guards closed: the counters of links already closed (by any goroutine).
	closedMu sync.Mutex
	closed   [link.NumChannels]link.ChannelStats
}

// linkClosed adds a closed link's final counters to the totals; any goroutine.
func (c *counters) linkClosed(ls link.Stats) {
	ls.Channels[link.Reliable].Buffered, ls.Channels[link.Unreliable].Buffered = 0, 0
	c.closedMu.Lock()
	addChannels(&c.closed, &ls)
	c.closedMu.Unlock()
}

// Status returns the latest published status: updated every ReportInterval and on host changes.
// A sleeping member (Idler) publishes only when it reports; a Status read that finds its status
// older than ReportInterval asks its loop to publish it again, which a later read returns.
func (p *Peer) Status() Status {
	st := p.status.Load()
	if p.sleep.sleeping.Load() && p.clock.Now().UnixNano()-p.sleep.statusAt.Load() >= int64(p.cfg.ReportInterval) {
		select {
		case p.sleep.wantStatus <- struct{}{}:
		default:
		}
	}
	return *st
}

// publish computes and stores the status; loop goroutine only. The replica hash is recomputed
// only when the world changed since the last one (a hash walks the whole replica).
func (p *Peer) publish() *Status {
	if p.hashAt != p.w.r.Changes() || !p.hashOK {
		p.hash, p.hashAt, p.hashOK = p.w.r.Hash(), p.w.r.Changes(), true
	}
	st := &Status{
		Self:            p.w.self,
		Host:            p.w.host,
		Term:            p.w.term,
		IsHost:          p.host != nil,
		Synced:          p.host != nil || (p.member != nil && p.member.synced),
		Entities:        p.w.Len(),
		WorldBytes:      p.w.r.Size(),
		Clock:           uint32(p.w.r.Clock()),
		Hash:            p.hash,
		Members:         len(p.members),
		Links:           len(p.remotes),
		BytesIn:         p.count.bytesIn.Load(),
		BytesOut:        p.count.bytesOut.Load(),
		Rejected:        p.count.rejected.Load(),
		RejectedRace:    p.count.rejectedRace.Load(),
		Refused:         p.count.refused.Load(),
		Offenders:       p.count.offenders.Load(),
		Fenced:          p.count.fenced.Load(),
		Dropped:         p.count.dropped.Load() + p.count.droppedIn.Load(),
		Deltas:          p.count.deltas.Load(),
		Wholes:          p.count.wholes.Load(),
		Superseded:      p.count.superseded.Load(),
		DeltaMissed:     p.count.deltaMissed.Load(),
		StandbyPromoted: p.count.promoted.Load(),
		SignalsShed:     p.count.signalsShed.Load(),
		SignalsResent:   p.count.signalsResent.Load(),
		Standby:         p.standby != nil && p.standby.ready,
		Signaling:       p.sig != nil,
		Server:          p.servers[p.server],
		Resumes:         p.count.resumes.Load(),
		Migrations:      p.count.migrations.Load(),
		MigrationPause:  p.lastPause,
	}
	for i := range st.RefusedBy {
		st.RefusedBy[i] = p.count.refusedBy[i].Load()
	}
	if c, ok := p.sig.(interface{ ShedSignals() uint64 }); ok {
		st.SignalsDropped = c.ShedSignals()
	}
	if p.resumeErr != nil {
		st.ResumeRefused = p.resumeErr.Error()
	}
	p.count.closedMu.Lock()
	st.Channels = p.count.closed
	p.count.closedMu.Unlock()
	for _, r := range p.remotes {
		if r.l != nil {
			ls := r.l.Stats()
			c := ls.Channels[1]
			st.LinkLost += c.Lost + c.Dropped
			addChannels(&st.Channels, &ls)
			if lt := linkTypes(r); lt != nil {
				if st.Pairs == nil {
					st.Pairs = make(map[sigclient.LinkTypes]int)
				}
				st.Pairs[*lt]++
			}
		}
	}
	if p.member != nil && p.member.hostLink != nil {
		st.RTT = p.member.hostLink.rtt
		st.HostLink = linkTypes(p.member.hostLink)
	}
	// A link out of p.remotes whose close has not finished is briefly in neither sum: never
	// publish less than before.
	if prev := p.status.Load(); prev != nil {
		for i := range st.Channels {
			c, o := &st.Channels[i], &prev.Channels[i]
			c.MessagesSent, c.BytesSent = max(c.MessagesSent, o.MessagesSent), max(c.BytesSent, o.BytesSent)
			c.MessagesReceived, c.BytesReceived = max(c.MessagesReceived, o.MessagesReceived), max(c.BytesReceived, o.BytesReceived)
			c.Dropped, c.Lost, c.Backpressured = max(c.Dropped, o.Dropped), max(c.Lost, o.Lost), max(c.Backpressured, o.Backpressured)
		}
	}
	p.status.Store(st)
	p.sleep.statusAt.Store(p.clock.Now().UnixNano())
	return st
}

// addChannels adds a link's per-channel counters to sum.
func addChannels(sum *[link.NumChannels]link.ChannelStats, ls *link.Stats) {
	for i := range sum {
		c, s := &ls.Channels[i], &sum[i]
		s.MessagesSent += c.MessagesSent
		s.BytesSent += c.BytesSent
		s.MessagesReceived += c.MessagesReceived
		s.BytesReceived += c.BytesReceived
		s.Dropped += c.Dropped
		s.Backpressured += c.Backpressured
		s.Lost += c.Lost
		s.Oversize += c.Oversize
		s.Buffered += c.Buffered
	}
}
