package peer

import "github.com/concordrtc/concord/signaling/sigclient"

// updateStandby keeps, for a synced member with Config.Standby, one idle link to the member that
// signaling would elect if the host went away (docs/design.md §4), computed with the server's own
// election function over what this peer knows of the room.
func (p *Peer) updateStandby() {
	target := PeerIndex(0)
	if p.cfg.Standby && p.member != nil && p.member.synced {
		if next := p.electWithout(p.w.host); next != p.w.self {
			target = next
		}
	}
	if s := p.standby; s != nil && s.idx != target {
		p.discard(s)
	}
	if target == 0 || p.standby != nil {
		return
	}
	if r := p.remotes[target]; r != nil {
		return // it offered us a standby link first; keep one link per pair
	}
	p.standby = p.dial(target)
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
