package peer

import "github.com/concordrtc/concord/peer/link"

// SendToHostForTest sends a raw payload to the host over this member's link, bypassing the
// world's authority checks, so tests can play a misbehaving member.
func (p *Peer) SendToHostForTest(ch link.Channel, payload []byte) bool {
	done := make(chan bool, 1)
	p.calls <- func() {
		if p.member == nil || p.member.hostLink == nil {
			done <- false
			return
		}
		p.send(p.member.hostLink, ch, payload)
		done <- true
	}
	return <-done
}

// ReopenFirstBatchForTest makes the host take member idx's next CRDT batch as its answer to a
// sync snapshot (the window in which it may carry what the previous host sent it), as right after
// a migration; it reports whether idx is a synced member of this host.
func (p *Peer) ReopenFirstBatchForTest(idx PeerIndex) bool {
	done := make(chan bool, 1)
	p.calls <- func() {
		if p.host == nil || p.host.synced(idx) == nil {
			done <- false
			return
		}
		p.host.synced(idx).acceptRelayed = true
		// As if this host had just taken over with what it holds: what it spawned is what a
		// previous host could have sent the member.
		p.host.startWindow()
		done <- true
	}
	return <-done
}
