package peer

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// gateTransport makes answering links that take as long as the test says: Connect of an
// answerer waits for gate, as a pion answer holds its caller for its PeerConnection,
// SetRemoteDescription and CreateAnswer. It counts the answers being made at once.
type gateTransport struct {
	gate chan struct{}

	mu       sync.Mutex
	inFlight int
	most     int
	links    []*gateLink
}

func (t *gateTransport) Connect(cfg LinkConfig) (Link, error) {
	t.mu.Lock()
	t.inFlight++
	t.most = max(t.most, t.inFlight)
	t.mu.Unlock()
	<-t.gate
	l := &gateLink{remote: cfg.Remote, session: cfg.Session, done: make(chan struct{}), ready: make(chan struct{})}
	t.mu.Lock()
	t.inFlight--
	t.links = append(t.links, l)
	t.mu.Unlock()
	return l, nil
}

func (t *gateTransport) counts() (inFlight, most int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inFlight, t.most
}

// gateLink records the signals it is fed; it never opens.
type gateLink struct {
	remote  PeerIndex
	session uint64
	done    chan struct{}
	ready   chan struct{}

	mu      sync.Mutex
	signals []sigclient.SignalKind
	closed  bool
}

func (l *gateLink) HandleSignal(pl sigclient.SignalPayload) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.signals = append(l.signals, pl.Kind)
	return nil
}
func (l *gateLink) Send(link.Channel, []byte) error { return link.ErrNotReady }
func (l *gateLink) Stats() link.Stats               { return link.Stats{} }
func (l *gateLink) Done() <-chan struct{}           { return l.done }
func (l *gateLink) Ready() <-chan struct{}          { return l.ready }
func (l *gateLink) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	return nil
}

func (l *gateLink) state() ([]sigclient.SignalKind, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.signals), l.closed
}

// newAnswerPeer is a peer on gt, driven by the test in place of its loop (it never runs).
func newAnswerPeer(t *testing.T, gt *gateTransport) *Peer {
	p, err := New(Config{
		Server: "http://answer.invalid", Room: "answer", User: "u", App: &stepApp{table: stepSchemas()},
		Transport: gt, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAnswerOffLoop: a peer answers offers off its loop (answer.go). While the pion calls of
// six answers are held, the loop's handleSignal returns at once for every offer (before, the
// first offer held the loop for as long as its answer took: a new host answering 31 survivors
// held their greetings behind every answer), at most maxAnswering answers are made at once, a
// candidate that arrives before its link is made is fed to it after the offer, and the answer of
// a link replaced meanwhile (a new session) is closed, not adopted.
func TestAnswerOffLoop(t *testing.T) {
	gt := &gateTransport{gate: make(chan struct{})}
	p := newAnswerPeer(t, gt)
	offer := func(session uint64) sigclient.SignalPayload {
		return sigclient.SignalPayload{Kind: sigclient.SignalOffer, SDP: "offer", Session: session}
	}
	members := []PeerIndex{2, 3, 4, 5, 6, 7}
	stepped := make(chan struct{})
	go func() { // the loop's steps, each one signal
		defer close(stepped)
		for _, idx := range members {
			p.handleSignal(idx, offer(1))
		}
		p.handleSignal(2, sigclient.SignalPayload{Kind: sigclient.SignalCandidate, Session: 1,
			Candidate: &sigclient.ICECandidate{Candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host"}})
		p.handleSignal(7, offer(2)) // member 7 offers again: its first answer is not wanted
	}()
	select {
	case <-stepped:
	case <-time.After(10 * time.Second):
		close(gt.gate)
		t.Fatal("the loop was held by the answers' pion calls")
	}
	poll.Until(t, 10*time.Second, "answers being made", func() error {
		if n, _ := gt.counts(); n != maxAnswering {
			return fmt.Errorf("%d answers being made, want %d", n, maxAnswering)
		}
		return nil
	})
	close(gt.gate)

	// The loop adopts what the workers made: one evLinked per answer made (member 7's first answer
	// is made only if its worker had a place before the second offer came: one waiting for a
	// place makes none, TestAnswerReplacedOffersMakeNoLink).
	poll.Until(t, 10*time.Second, "every answer linked", func() error {
		for ev, ok := p.events.Pop(); ok; ev, ok = p.events.Pop() {
			p.handleLinkEvent(ev)
		}
		for _, idx := range members {
			if r := p.remotes[idx]; r == nil || r.answering != nil || (idx == 7 && r.session != 2) {
				return fmt.Errorf("member %d's answer not adopted", idx)
			}
		}
		return nil
	})
	if _, most := gt.counts(); most > maxAnswering {
		t.Errorf("%d answers made at once, want at most %d", most, maxAnswering)
	}
	for _, idx := range members {
		r := p.remotes[idx]
		if r == nil || r.l == nil || r.answering != nil {
			t.Fatalf("member %d: no link adopted (%+v)", idx, r)
		}
	}
	if got := p.remotes[7].session; got != 2 {
		t.Errorf("member 7's link is of session %d, want 2", got)
	}
	for _, l := range gt.links {
		signals, closed := l.state()
		switch {
		case l.remote == 2:
			if want := []sigclient.SignalKind{sigclient.SignalOffer, sigclient.SignalCandidate}; !slices.Equal(signals, want) {
				t.Errorf("member 2's link was fed %v, want %v", signals, want)
			}
		case l.remote == 7 && l.session == 1:
			poll.Until(t, 10*time.Second, "member 7's replaced answer closed", func() error { // on a goroutine
				if _, closed := l.state(); !closed {
					return errors.New("open")
				}
				return nil
			})
		case closed:
			t.Errorf("member %d's link (session %d) was closed", l.remote, l.session)
		}
	}
	p.shutdown()
	for _, l := range gt.links {
		if _, closed := l.state(); !closed {
			t.Errorf("member %d's link (session %d) outlived the peer", l.remote, l.session)
		}
	}
}

// TestAnswerEarlySignalsBounded: a member that floods candidates while its answer is being made
// loses its link at the 65th (maxEarlySignals, the link's own bound before the remote
// description), and the answer made meanwhile is closed, not adopted: a remote cannot make the
// loop hold signals without bound.
func TestAnswerEarlySignalsBounded(t *testing.T) {
	gt := &gateTransport{gate: make(chan struct{})}
	p := newAnswerPeer(t, gt)
	p.handleSignal(2, sigclient.SignalPayload{Kind: sigclient.SignalOffer, SDP: "offer", Session: 1})
	cand := sigclient.SignalPayload{Kind: sigclient.SignalCandidate, Session: 1,
		Candidate: &sigclient.ICECandidate{Candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host"}}
	for range maxEarlySignals {
		p.handleSignal(2, cand)
	}
	if r := p.remotes[2]; r == nil || len(r.answering.early) != maxEarlySignals {
		t.Fatalf("the link did not hold %d signals", maxEarlySignals)
	}
	p.handleSignal(2, cand)
	if r := p.remotes[2]; r != nil {
		t.Fatalf("the link holds %d signals; want it dropped past %d", len(r.answering.early), maxEarlySignals)
	}
	if got := p.count.refusedBy[RefusedEarlySignals].Load(); got != 1 {
		t.Fatalf("RefusedBy[early_signals] = %d, want 1 (the metric concord_peer_refused_total{reason=\"early_signals\"})", got)
	}
	close(gt.gate)
	p.shutdown() // waits for the worker: the answer it made, if it made one, is closed, not adopted
	gt.mu.Lock()
	defer gt.mu.Unlock()
	for _, l := range gt.links {
		if _, closed := l.state(); !closed {
			t.Fatalf("the dropped link's answer (session %d) is open", l.session)
		}
	}
}

// TestAnswerReplacedOffersMakeNoLink: a member that sends offer after offer while every answering
// place is taken costs one pion answer, not one per offer: the workers of the replaced offers,
// still waiting for a place, make no link (answering.abandoned). Before, each replaced offer's
// worker made its PeerConnection once a place came free, only for the loop to close it.
func TestAnswerReplacedOffersMakeNoLink(t *testing.T) {
	gt := &gateTransport{gate: make(chan struct{})}
	p := newAnswerPeer(t, gt)
	for m := PeerIndex(2); m < 2+maxAnswering; m++ { // every place taken, held at the gate
		p.handleSignal(m, sigclient.SignalPayload{Kind: sigclient.SignalOffer, SDP: "offer", Session: 1})
	}
	poll.Until(t, 10*time.Second, "every answering place taken", func() error {
		if in, _ := gt.counts(); in != maxAnswering {
			return fmt.Errorf("%d answers being made", in)
		}
		return nil
	})
	const offers = 10
	flood := PeerIndex(2 + maxAnswering)
	for s := uint64(1); s <= offers; s++ {
		p.handleSignal(flood, sigclient.SignalPayload{Kind: sigclient.SignalOffer, SDP: "offer", Session: s})
	}
	close(gt.gate)
	want := maxAnswering + 1 // the held ones and the flooder's last offer
	poll.Until(t, 10*time.Second, "the flooder's last offer answered", func() error {
		for ev, ok := p.events.Pop(); ok; ev, ok = p.events.Pop() {
			p.handleLinkEvent(ev)
		}
		if r := p.remotes[flood]; r == nil || r.session != offers || r.answering != nil {
			return errors.New("not adopted yet")
		}
		return nil
	})
	p.shutdown() // waits for every worker: none can make a link after this
	gt.mu.Lock()
	made := len(gt.links)
	gt.mu.Unlock()
	if made != want {
		t.Fatalf("%d links made for %d offers of one member and %d others; want %d (one per member)", made, offers, maxAnswering, want)
	}
}
