package link

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// testLogger logs warnings and errors (ours and pion's) through t. Every test
// that uses it joins all goroutines before returning, so nothing logs late.
func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

type pairOpts struct {
	cfgA, cfgB         Config // a is the offerer, b the answerer
	handlerA, handlerB Handler
	// chromiumLike makes the offerer look like Chromium on loopback: its
	// candidates are neither trickled nor in its SDP.
	chromiumLike bool
	// candidatesFirst delivers the offerer's first candidate before its offer.
	candidatesFirst bool
	logger          zerolog.Logger
	// traceA and traceB are the ends' ConnConfig.Trace.
	traceA, traceB func(string)
	// apiA and apiB, when set, are used instead of APIs built from cfgA and
	// cfgB, and are left open by close.
	apiA, apiB *API
}

// pair is two Conns signaling through an in-test relay goroutine.
type pair struct {
	apiA, apiB *API
	a, b       *Conn

	mu   sync.Mutex // guards sent
	sent [2][]Signal

	stop    chan struct{}
	wg      sync.WaitGroup
	ownAPIs bool
}

func mustAPI(t testing.TB, cfg Config) *API {
	t.Helper()
	api, err := NewAPI(cfg)
	if err != nil {
		t.Fatalf("NewAPI: %v", err)
	}
	return api
}

func newPair(t testing.TB, o pairOpts) *pair {
	t.Helper()
	p := &pair{apiA: o.apiA, apiB: o.apiB, stop: make(chan struct{})}
	if p.apiA == nil {
		p.apiA, p.apiB, p.ownAPIs = mustAPI(t, o.cfgA), mustAPI(t, o.cfgB), true
	}
	aToB, bToA := make(chan Signal, 64), make(chan Signal, 64)
	var err error
	p.b, err = p.apiB.NewAnswerer(ConnConfig{Signal: queueTo(bToA), Handler: o.handlerB, Logger: o.logger, Trace: o.traceB})
	if err != nil {
		t.Fatalf("NewAnswerer: %v", err)
	}
	p.a, err = p.apiA.NewOfferer(ConnConfig{Signal: queueTo(aToB), Handler: o.handlerA, Logger: o.logger, Trace: o.traceA})
	if err != nil {
		t.Fatalf("NewOfferer: %v", err)
	}
	p.wg.Add(1)
	go p.relay(t, o, aToB, bToA)
	return p
}

func queueTo(ch chan Signal) func(Signal) error {
	return func(s Signal) error {
		select {
		case ch <- s:
			return nil
		default:
			return context.DeadlineExceeded // The test relay is stuck.
		}
	}
}

func (p *pair) relay(t testing.TB, o pairOpts, aToB, bToA chan Signal) {
	defer p.wg.Done()
	var heldOffer *Signal
	deliver := func(to *Conn, s Signal) {
		if err := to.HandleSignal(s); err != nil && to.Err() == nil {
			t.Errorf("HandleSignal(%s): %v", s.Kind, err)
		}
	}
	for {
		select {
		case <-p.stop:
			return
		case s := <-aToB:
			p.record(0, s)
			if o.chromiumLike {
				if s.Kind == SignalCandidate {
					continue
				}
				s.SDP = stripCandidates(s.SDP)
			}
			if o.candidatesFirst && s.Kind == SignalOffer {
				heldOffer = &s
				continue
			}
			deliver(p.b, s)
			if heldOffer != nil {
				deliver(p.b, *heldOffer)
				heldOffer = nil
			}
		case s := <-bToA:
			p.record(1, s)
			deliver(p.a, s)
		}
	}
}

func (p *pair) record(side int, s Signal) {
	p.mu.Lock()
	p.sent[side] = append(p.sent[side], s)
	p.mu.Unlock()
}

func (p *pair) signals(side int) []Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Signal(nil), p.sent[side]...)
}

func stripCandidates(sdp string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(sdp, "\r\n") {
		if line == "" || strings.HasPrefix(line, "a=candidate:") || line == "a=end-of-candidates" {
			continue
		}
		b.WriteString(line)
		b.WriteString("\r\n")
	}
	return b.String()
}

func (p *pair) waitReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []*Conn{p.a, p.b} {
		if err := c.WaitReady(ctx); err != nil {
			t.Fatalf("%s not ready: %v", c.role, err)
		}
	}
}

// close closes both Conns, stops the relay and closes both APIs.
func (p *pair) close() {
	_ = p.a.Close()
	_ = p.b.Close()
	close(p.stop)
	p.wg.Wait()
	if p.ownAPIs {
		_ = p.apiA.Close()
		_ = p.apiB.Close()
	}
}

// connRef is a late-bound Conn for handlers created before the Conn.
type connRef struct{ p atomic.Pointer[Conn] }

func (r *connRef) get() *Conn { return r.p.Load() }

// needCarriedSCTP skips t when this build uses stock pion/sctp: t asserts what Concord's carried
// copy (third_party/pion-sctp) does and stock pion does not. In this module (go.mod's replace) it runs.
func needCarriedSCTP(t testing.TB, what string) {
	t.Helper()
	if !FastPaths() {
		t.Skipf("needs Concord's carried pion/sctp (%s); this build uses stock pion/sctp: "+
			"its go.mod has no `replace github.com/pion/sctp => ./third_party/pion-sctp`", what)
	}
}
