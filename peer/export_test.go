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
