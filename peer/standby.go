package peer

import (
	"time"

	"github.com/concordrtc/concord/signaling/sigclient"
)

// updateStandby keeps, for a synced member that wants one (standbyWanted), one idle link to the
// member that signaling would elect if the host went away (docs/design.md §4), computed with the
// server's own election function over what this peer knows of the room.
func (p *Peer) updateStandby() {
	target := p.standbyTarget()
	if s := p.standby; s != nil && s.idx != target {
		p.discard(s)
	}
	if target == 0 || p.standby != nil || p.clock.Now().Before(p.standbyAt) {
		return
	}
	if r := p.remotes[target]; r != nil {
		return // it offered us a standby link first; keep one link per pair
	}
	p.standby = p.dial(target)
}

// standbyTarget is the member this peer keeps a standby link to, 0 if none.
func (p *Peer) standbyTarget() PeerIndex {
	if p.member != nil && p.member.synced && p.standbyWanted() {
		if next := p.electWithout(p.w.host); next != p.w.self && p.standbyTo(next) {
			return next
		}
	}
	return 0
}

// electWithout returns the member signaling would elect if member gone left, by the server's own
// election function over what this peer knows of the room; 0 if none.
func (p *Peer) electWithout(gone PeerIndex) PeerIndex {
	cands := make([]sigclient.Candidate, 0, len(p.members))
	for _, m := range p.members {
		if m.Index != gone {
			c := m.Candidate()
			if m.Index == p.w.self {
				c.Synced = true // the server announces other members' sync, not our own
			}
			cands = append(cands, c)
		}
	}
	next, _ := sigclient.Elect(cands, p.pinned)
	return next
}

func (p *Peer) successor() PeerIndex { return p.electWithout(p.w.self) }

// standbyDelay is how long after its sync a member waits before it makes a standby link.
const standbyDelay = 250 * time.Millisecond

// standbyWanted reports whether this member keeps a standby link (Config.Standby): always with
// Standby, never with NoStandby, else while the room has at most StandbyMaxMembers members.
func (p *Peer) standbyWanted() bool {
	switch {
	case p.cfg.Standby:
		return true
	case p.cfg.NoStandby:
		return false
	}
	return len(p.members) <= p.cfg.StandbyMaxMembers
}

// standbyTo reports whether a standby link to member next is worth making: a browser answers no
// standby offer (only its host link's), so by default none is made to one; with Config.Standby
// every member is dialled, as before the default.
func (p *Peer) standbyTo(next PeerIndex) bool {
	if p.cfg.Standby {
		return true
	}
	m, ok := p.members[next]
	return ok && m.Kind != sigclient.KindBrowser
}
