package peer

import (
	"sync/atomic"
	"time"
)

// Status is a snapshot of a peer, safe to read from any goroutine.
type Status struct {
	Self     PeerIndex
	Host     PeerIndex
	Term     Term
	IsHost   bool
	Synced   bool
	Entities int
	Clock    uint32
	Hash     uint64
	Members  int
	Links    int
	RTT      time.Duration
	BytesIn  uint64
	BytesOut uint64
	// Rejected counts writes the host refused for lack of authority.
	Rejected uint64
	// RejectedRace counts the part of Rejected that are expected races of normal play (logged at
	// debug, not warn): writes of a member that lost the entity's authority moments ago (a lock
	// handed back or expired, the transfer still on its way to it), and corrections to values this
	// host already holds.
	RejectedRace uint64
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
	// Signaling reports a live signaling connection. While it is down the room plays on over
	// the links, and the peer redials (Config.RedialMin, RedialMax).
	Signaling bool
	// Resumes counts signaling connections resumed under this peer's index after a loss.
	Resumes uint64
	// ResumeRefused is why the server refused to resume this peer, "" if it did not: the peer
	// then plays on without signaling and stops redialing.
	ResumeRefused string
}

type counters struct {
	bytesIn, bytesOut, rejected, rejectedRace, fenced, dropped, droppedIn, promoted, resumes atomic.Uint64
}

// Status returns the latest published status (updated every report interval and on host changes).
func (p *Peer) Status() Status { return *p.status.Load() }

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
		Clock:           uint32(p.w.r.Clock()),
		Hash:            p.hash,
		Members:         len(p.members),
		Links:           len(p.remotes),
		BytesIn:         p.count.bytesIn.Load(),
		BytesOut:        p.count.bytesOut.Load(),
		Rejected:        p.count.rejected.Load(),
		RejectedRace:    p.count.rejectedRace.Load(),
		Fenced:          p.count.fenced.Load(),
		Dropped:         p.count.dropped.Load() + p.count.droppedIn.Load(),
		StandbyPromoted: p.count.promoted.Load(),
		Standby:         p.standby != nil && p.standby.ready,
		Signaling:       p.sig != nil,
		Resumes:         p.count.resumes.Load(),
	}
	if p.resumeErr != nil {
		st.ResumeRefused = p.resumeErr.Error()
	}
	for _, r := range p.remotes {
		if r.l != nil {
			c := r.l.Stats().Channels[1]
			st.LinkLost += c.Lost + c.Dropped
		}
	}
	if p.member != nil && p.member.hostLink != nil {
		st.RTT = p.member.hostLink.rtt
	}
	p.status.Store(st)
	return st
}
