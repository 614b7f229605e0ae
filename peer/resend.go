package peer

import (
	"math/rand/v2"
	"time"

	"github.com/concordrtc/concord/signaling/sigclient"
)

// Signals signaling did not relay (docs/protocol.md §4 "Signal budgets"). In a burst of joins a
// host's signal budget or share of its send queue runs out and signaling refuses a joiner's
// offer or candidates with recipient_busy (or, the other way, the host's answer to a joiner whose
// queue is full of the burst's membership messages). The remote never saw that signal, so the
// link cannot come up without it: its sender waited out its connect timeout (5 s, doubled after
// each, up to 30 s), the long tail of a burst. Instead the link sends the refused signals again
// after a short jittered pause, a bounded number of times. It sends them again, the same
// session: it never remakes the link, which may be connecting already (the remote got the
// description, and ICE needs no more candidates than those that arrived, or peer-reflexive
// ones). Past maxResends the connect timeout decides, as before.
const (
	resendPause    = 250 * time.Millisecond // the first pause; doubled after each resend
	maxResendPause = 2 * time.Second
	maxResends     = 6
)

// What a remote's refused signals ask to send again (remote.shed).
const (
	shedDescription uint8 = 1 << iota // the offer or answer, and the candidates after it
	shedCandidates
)

// resender is a Link that can send its refused signals again (a pion link).
type resender interface{ Resend(kind string) bool }

// signalShed handles signaling's refusal of one of this peer's signals as recipient_busy: the
// link it belongs to, if it is still being made, sends it again after a pause (resendPause,
// doubled each time, with up to half again of jitter so that a burst's refused joiners do not
// come back at once).
func (p *Peer) signalShed(ev sigclient.Error) {
	p.count.signalsShed.Add(1)
	p.log.Debug().Uint64("peer", uint64(ev.PeerIndex)).Str("signal", string(ev.Signal)).Uint64("session", ev.Session).Msg("signal not relayed: recipient busy")
	p.resendShed(ev)
}

// resendShed arms the resend of a refused signal (signalShed; linked, for the refusals heard
// while the link's answer was being made off the loop).
func (p *Peer) resendShed(ev sigclient.Error) {
	r := p.remotes[ev.PeerIndex]
	if r != nil && r.session == ev.Session && r.answering != nil && len(r.answering.shed) < maxEarlySignals {
		r.answering.shed = append(r.answering.shed, ev) // the answer went out before the loop adopted its link
		return
	}
	if r == nil || r.session != ev.Session || r.ready || r.closing || r.l == nil {
		return // a link since replaced, up or gone
	}
	rs, ok := r.l.(resender)
	if !ok {
		return
	}
	if ev.Signal == sigclient.SignalCandidate {
		r.shed |= shedCandidates
	} else {
		r.shed |= shedDescription
	}
	if r.resendArmed || r.resends >= maxResends {
		return
	}
	r.resendArmed = true
	pause := min(resendPause<<r.resends, maxResendPause)
	pause += rand.N(pause / 2)
	r.resends++
	p.after(pause, func() {
		r.resendArmed = false
		if p.remotes[r.idx] != r || r.ready || r.closing {
			return
		}
		kind := string(sigclient.SignalCandidate)
		if r.shed&shedDescription != 0 {
			kind = string(sigclient.SignalOffer) // the description, whichever it is, and the candidates after it
		}
		r.shed = 0
		if rs.Resend(kind) {
			p.count.signalsResent.Add(1)
		}
	})
}
