package peer

import (
	"sync/atomic"

	"github.com/concordrtc/concord/signaling/sigclient"
)

// Answering offers off the loop (docs/protocol.md §5, "Session: joining"). A pion answer — a new
// PeerConnection, its data channels, SetRemoteDescription, CreateAnswer, SetLocalDescription —
// holds its caller 0.4–1.3 ms of wall time (link.BenchmarkAnswerOffer), mostly waiting on pion's
// own goroutines and locks. A new host after a migration without standby links answers every
// survivor's offer at once: on its loop that was 31 answers in a row, each holding back the
// greetings, repair snapshots and links that were already up. So the loop only decides: it
// registers the remote (l nil: "answering") and hands the pion calls to a worker; the worker
// posts the made link back as an evLinked event, and the loop feeds it the signals that arrived
// meanwhile. At most maxAnswering workers run at once per peer (a burst of offers waits for a
// place instead of starting a goroutine per pion call), and no lock of the peer's is shared with
// them: a worker touches only its own answer and the event queue.

// maxAnswering is how many answers a peer makes at once off its loop.
const maxAnswering = 4

// maxEarlySignals bounds the signals a remote holds while its answer is being made: the offer's
// trickled candidates (a browser sends a handful, pion one per address) and a refusal or two of
// the answer by signaling; the same bound as the link's on candidates before the remote
// description. Past it the link is dropped, as a bad signal would drop it.
const maxEarlySignals = 64

// answering is what a remote whose answer is being made holds for the loop (remote.answering).
type answering struct {
	// early is the signals that arrived for the link before it was made, in order.
	early []sigclient.SignalPayload
	// shed is signaling's refusals of the answer's own signals (recipient_busy) heard before the
	// link was made: signalShed runs for them once it is.
	shed []sigclient.Error
	// made and err are the worker's result, written before it posts evLinked (the event queue
	// orders them before the loop reads them).
	made Link
	err  error
	// abandoned is set by the loop when the remote is replaced or dropped before its worker
	// starts: a worker waiting for a place then makes no link (a member sending offer after offer
	// costs one pion answer, not one per offer).
	abandoned atomic.Bool
}

// answersInline reports whether the transport wants its offers answered on the loop
// (InlineTransport).
func (p *Peer) answersInline() bool {
	t, ok := p.cfg.Transport.(InlineTransport)
	return ok && t.AnswersInline()
}

// answer makes the answering link for an offer from member from: the loop registers the remote
// now, a worker makes the link and applies the offer, and linked finishes on the loop.
func (p *Peer) answer(from PeerIndex, offer sigclient.SignalPayload) {
	a := &answering{}
	r := &remote{idx: from, session: offer.Session, answering: a}
	p.remotes[from] = r
	cfg := p.linkConfig(r, false)
	if p.answerSem == nil {
		p.answerSem = make(chan struct{}, maxAnswering)
	}
	p.goTracked(func() {
		select {
		case p.answerSem <- struct{}{}:
		case <-p.quit:
			return
		}
		if a.abandoned.Load() {
			<-p.answerSem
			return // nobody waits for this link: linked would close it
		}
		l, err := p.cfg.Transport.Connect(cfg)
		if err == nil {
			if err = l.HandleSignal(offer); err != nil {
				_ = l.Close()
				l = nil
			}
		}
		<-p.answerSem
		a.made, a.err = l, err
		if !p.events.PushWait(loopEvent{r: r, kind: evLinked}, p.quit, nil) && l != nil {
			_ = l.Close() // the peer is shutting down: nobody else will
		}
	})
}

// linked adopts the link a worker made for r (evLinked), or drops r if it failed or was replaced
// or dropped meanwhile.
func (p *Peer) linked(r *remote) {
	a := r.answering
	r.answering = nil
	l, err := a.made, a.err
	if p.remotes[r.idx] != r || r.closing {
		if l != nil {
			p.goTracked(func() { _ = l.Close() })
		}
		return
	}
	if err != nil {
		p.log.Warn().Err(err).Uint64("peer", uint64(r.idx)).Msg("cannot answer offer; closing link")
		p.drop(r)
		return
	}
	p.watch(r, l)
	for _, pl := range a.early {
		if p.remotes[r.idx] != r {
			return
		}
		p.feed(r, pl)
	}
	for _, ev := range a.shed {
		p.resendShed(ev)
	}
}

// early holds a signal for r while its answer is being made; past maxEarlySignals r is dropped.
func (p *Peer) early(r *remote, pl sigclient.SignalPayload) {
	a := r.answering
	if len(a.early) >= maxEarlySignals {
		p.log.Warn().Uint64("peer", uint64(r.idx)).Msg("too many signals before the answer; closing link")
		p.count.refuse(RefusedEarlySignals)
		p.drop(r)
		return
	}
	a.early = append(a.early, pl)
}
