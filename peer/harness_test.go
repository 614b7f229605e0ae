package peer

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
)

// A steppable room: peers built with New but never Run, driven one loop step at a time by the
// test. Links are fakes that queue what they send; pump delivers it. Time is a manual clock;
// advance runs the timers that fall due. No goroutine, no sleep, no socket.

const (
	stepSchemaBox    schema.ID = 1
	stepSchemaAvatar schema.ID = 2
)

func stepSchemas(extra ...schema.Property) *schema.Table {
	return schema.MustTable(
		schema.Schema{ID: stepSchemaBox, Name: "box", Properties: append([]schema.Property{{Name: "pos", Component: 1100, Size: 4}}, extra...)},
		schema.Schema{ID: stepSchemaAvatar, Name: "avatar", Properties: []schema.Property{{Name: "pos", Component: 1200, Size: 4}}},
	)
}

func crdtProperty(name string, c crdt.ComponentID) schema.Property {
	return schema.Property{Name: name, Component: c, Size: 4}
}

// stepApp spawns one box on host start and an avatar per member.
type stepApp struct {
	table *schema.Table
	box   Entity
}

func (a *stepApp) Schemas() *schema.Table { return a.table }
func (a *stepApp) HostStart(w *World) {
	if len(w.EntitiesOf(stepSchemaBox)) == 0 {
		a.box, _ = w.Spawn(stepSchemaBox, nil, []byte{0, 0, 0, 0})
	}
}
func (a *stepApp) SpawnAvatar(w *World, p PeerInfo) (Entity, error) {
	return w.Spawn(stepSchemaAvatar, nil, []byte{0, 0, 0, 0})
}
func (a *stepApp) Tick(*World, time.Duration)            {}
func (a *stepApp) RPC(*World, PeerIndex, uint32, []byte) {}

// manualClock is a Clock that moves only when the test says so.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// NewTimer returns a timer that never fires by itself: stepped peers run their timers through
// stepPeer.advance.
func (c *manualClock) NewTimer(time.Duration) Timer { return manualTimer{make(chan time.Time)} }

type manualTimer struct{ c chan time.Time }

func (t manualTimer) C() <-chan time.Time    { return t.c }
func (manualTimer) Reset(time.Duration) bool { return true }
func (manualTimer) Stop() bool               { return true }

// stepNet is the fake network of a steppable room.
type stepNet struct {
	t      testing.TB
	clock  *manualClock
	peers  map[PeerIndex]*stepPeer
	roster []signaling.Member
	links  []*fakeLink
	lose   bool // drop unreliable datagrams
	// loseTo drops the unreliable datagrams sent to these peers.
	loseTo map[PeerIndex]bool
	// hold keeps what is sent to these peers queued (in flight) until it is cleared.
	hold map[PeerIndex]bool
	// unacked is the reliable bytes a link to each peer reports as not acknowledged (Stats).
	unacked map[PeerIndex]uint64
	// noDeltas joins the next peers with Config.NoDeltas (they do not ask for deltas).
	noDeltas bool
	// unrecorded: signaling records no sync of the next peers whose world holds an earlier
	// term (a liar's greeting); otherwise joinWith records them synced in their held term, as
	// the server does for a real survivor (Member.SyncedTerm).
	unrecorded bool
	// records, when set for a peer, is the record signaling holds of it as it joins (after a
	// restart of the server: the term its resume token vouches for), whatever its world holds.
	records map[PeerIndex]Term
	// onSend, when set, sees every payload a link sends (counting traffic by message type).
	onSend func(from, to PeerIndex, ch link.Channel, b []byte)
	// onSendOwned, when set, sees every payload a link takes over (SendOwned), after onSend.
	onSendOwned func(from, to PeerIndex, ch link.Channel, b []byte)
	// sendErr, when set, is asked first by every Send and SendOwned: an error fails the send,
	// as a real link's does (a full reliable queue: link.ErrBackpressure).
	sendErr func(from, to PeerIndex, ch link.Channel, b []byte) error
	// buffered, when set, is what a link reports buffered on ch (Stats) instead of unacked.
	buffered func(from, to PeerIndex, ch link.Channel) uint64
	// limits are the next peers' Config.WorldLimits.
	limits WorldLimits
	// noHost lists the members whose token forbids hosting (signaling.Member.MayHost false).
	noHost map[PeerIndex]bool
}

type stepPeer struct {
	*Peer
	net *stepNet
	sig *fakeSig
}

func newStepNet(t testing.TB) *stepNet {
	n := &stepNet{t: t, clock: &manualClock{now: time.Unix(1_000_000, 0)}, peers: map[PeerIndex]*stepPeer{}}
	t.Cleanup(func() {
		for _, sp := range n.peers {
			sp.shutdown() // closes the links and waits for their goroutines
		}
	})
	return n
}

// join adds peer idx to the room as signaling would, with the given term and host.
func (n *stepNet) join(idx PeerIndex, app App, term Term, host PeerIndex) *stepPeer {
	n.t.Helper()
	return n.joinWith(idx, app, term, host, nil)
}

// joinWith is join with before run on the peer's world before it joins.
func (n *stepNet) joinWith(idx PeerIndex, app App, term Term, host PeerIndex, before func(w *World)) *stepPeer {
	n.t.Helper()
	p, err := New(Config{
		Server: "http://step.invalid", Room: "step", User: "u", Device: string(rune('a' + idx)), App: app,
		Transport: n, Clock: n.clock, Logger: zerolog.New(zerolog.NewTestWriter(n.t)).Level(zerolog.InfoLevel),
		NoDeltas: n.noDeltas, Deltas: true, WorldLimits: n.limits,
	})
	if err != nil {
		n.t.Fatal(err)
	}
	if before != nil {
		before(p.w)
	}
	m := signaling.Member{Index: idx, ID: signaling.NewIdentity("u", string(rune('a'+idx))), Kind: signaling.KindBot, MayHost: !n.noHost[idx]}
	if p.w.heldTerm != 0 && !n.unrecorded {
		m.Synced, m.SyncedTerm = true, p.w.heldTerm
	}
	if t, ok := n.records[idx]; ok {
		m.Synced, m.SyncedTerm = t != 0, t
	}
	n.roster = append(n.roster, m)
	for _, o := range n.peers {
		o.members[idx] = m
	}
	sp := &stepPeer{Peer: p, net: n, sig: &fakeSig{}}
	n.peers[idx] = sp
	sp.sig.joined = signaling.Joined{Self: idx, Term: term, Host: host, Members: slices.Clone(n.roster)}
	p.joined(sp.sig)
	p.afterEvent()
	n.pump()
	return sp
}

// converge runs rounds of host h's network flush, each followed by 2 s of the net (digests repair
// what differs), and fails the test unless member m then holds h's replica.
func (n *stepNet) converge(h, m *stepPeer, rounds int) {
	n.t.Helper()
	for range rounds {
		h.flushUpdates()
		n.advance(2 * time.Second)
	}
	if got, want := m.w.r.Hash(), h.w.r.Hash(); got != want {
		n.t.Fatalf("member %x, host %x: the member stays apart", got, want)
	}
}

// recordSynced records member idx synced in term, as signaling does when it reports synced
// (Member.SyncedTerm), in every peer's roster.
func (n *stepNet) recordSynced(idx PeerIndex, term Term) {
	for i, m := range n.roster {
		if m.Index == idx {
			n.roster[i].Synced, n.roster[i].SyncedTerm = true, term
			for _, o := range n.peers {
				o.members[idx] = n.roster[i]
			}
		}
	}
}

// Connect implements Transport with a fakeLink; an offer reaches the other peer through pump.
func (n *stepNet) Connect(cfg LinkConfig) (Link, error) {
	l := &fakeLink{net: n, local: cfg.Local, remote: cfg.Remote, session: cfg.Session, handler: cfg.Handler, done: make(chan struct{}), ready: make(chan struct{})}
	n.links = append(n.links, l)
	if cfg.Offerer {
		if err := cfg.Signal(signaling.SignalPayload{Kind: signaling.SignalOffer, SDP: "step", Session: cfg.Session}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// AnswersInline implements InlineTransport: the step harness drives the peers without their
// loops, so an offer is answered in the step that delivers it.
func (n *stepNet) AnswersInline() bool { return true }

// pump delivers signals and messages until nothing moves.
func (n *stepNet) pump() {
	n.t.Helper()
	for range 1000 {
		moved := false
		for idx, sp := range n.peers {
			for _, s := range sp.sig.take() {
				if to := n.peers[s.to]; to != nil {
					to.handleSignal(idx, s.payload)
					to.afterEvent()
					moved = true
				}
			}
		}
		for _, l := range slices.Clone(n.links) {
			moved = l.deliver() || moved
		}
		if !moved {
			return
		}
	}
	n.t.Fatal("pump: the room never went quiet")
}

// advance moves the clock by d, running every timer that falls due on every peer.
func (n *stepNet) advance(d time.Duration) {
	n.t.Helper()
	now := n.clock.add(d)
	for _, sp := range n.peers {
		sp.runTimers(now)
	}
	n.pump()
}

// send delivers raw payload to peer to as if peer from sent it on ch.
func (n *stepNet) send(from, to PeerIndex, ch link.Channel, payload []byte) {
	n.t.Helper()
	sp := n.peers[to]
	r := sp.remotes[from]
	if r == nil {
		n.t.Fatalf("peer %d has no link to %d", to, from)
	}
	b := slices.Clone(payload)
	sp.handleLinkEvent(loopEvent{r: r, kind: evMessage, ch: ch, data: &b})
	sp.afterEvent()
	n.pump()
}

// do runs fn on peer idx as one loop step.
func (n *stepNet) do(idx PeerIndex, fn func(w *World)) {
	sp := n.peers[idx]
	fn(sp.w)
	sp.afterEvent()
}

// fakeLink is one end of a fake link: it queues what it sends until pump delivers it.
type fakeLink struct {
	net           *stepNet
	local, remote PeerIndex
	session       uint64
	handler       link.Handler
	out           []fakeMsg
	readied       bool
	closed        atomic.Bool // Close runs on the peer's closing goroutine
	once          sync.Once
	done, ready   chan struct{}
}

type fakeMsg struct {
	ch link.Channel
	b  []byte
}

// peerRemote returns the remote of the peer at this end, if it still holds this link.
func (l *fakeLink) peerRemote() *remote {
	sp := l.net.peers[l.local]
	if sp == nil {
		return nil
	}
	r := sp.remotes[l.remote]
	if r == nil || r.l != Link(l) {
		return nil
	}
	return r
}

// other is the link at the far end of the same session.
func (l *fakeLink) other() *fakeLink {
	for _, o := range l.net.links {
		if o != l && o.local == l.remote && o.remote == l.local && o.session == l.session && !o.closed.Load() {
			return o
		}
	}
	return nil
}

// deliver opens the link once both ends exist and hands the far end what this end sent.
func (l *fakeLink) deliver() bool {
	if l.closed.Load() {
		return false
	}
	o := l.other()
	if o == nil {
		return false
	}
	moved := false
	if !l.readied {
		if r := l.peerRemote(); r != nil {
			l.readied = true
			sp := l.net.peers[l.local]
			sp.handleLinkEvent(loopEvent{r: r, kind: evReady})
			sp.afterEvent()
			moved = true
		}
	}
	if l.net.hold[o.local] {
		return moved
	}
	out := l.out
	l.out = nil
	for _, m := range out {
		r := o.peerRemote()
		if r == nil || (m.ch == link.Unreliable && (l.net.lose || l.net.loseTo[o.local])) {
			continue
		}
		sp := l.net.peers[o.local]
		b := m.b
		sp.handleLinkEvent(loopEvent{r: r, kind: evMessage, ch: m.ch, data: &b})
		sp.afterEvent()
		moved = true
	}
	return moved
}

func (l *fakeLink) Send(ch link.Channel, payload []byte) error {
	if l.closed.Load() {
		return link.ErrClosed
	}
	if l.net.sendErr != nil {
		if err := l.net.sendErr(l.local, l.remote, ch, payload); err != nil {
			return err
		}
	}
	if l.net.onSend != nil {
		l.net.onSend(l.local, l.remote, ch, payload)
	}
	l.out = append(l.out, fakeMsg{ch, slices.Clone(payload)})
	return nil
}

// SendOwned implements link.OwnedSender: it keeps payload itself, uncopied, until the pump
// delivers it, so a sender that wrote into it afterwards would corrupt what the member receives.
func (l *fakeLink) SendOwned(ch link.Channel, payload []byte) error {
	if l.closed.Load() {
		return link.ErrClosed
	}
	if l.net.sendErr != nil {
		if err := l.net.sendErr(l.local, l.remote, ch, payload); err != nil {
			return err
		}
	}
	if l.net.onSend != nil {
		l.net.onSend(l.local, l.remote, ch, payload)
	}
	if l.net.onSendOwned != nil {
		l.net.onSendOwned(l.local, l.remote, ch, payload)
	}
	l.out = append(l.out, fakeMsg{ch, payload})
	return nil
}

func (l *fakeLink) Close() error {
	l.once.Do(func() {
		l.closed.Store(true)
		close(l.done)
	})
	return nil
}

func (l *fakeLink) Done() <-chan struct{}  { return l.done }
func (l *fakeLink) Ready() <-chan struct{} { return l.ready }
func (l *fakeLink) Stats() link.Stats {
	var s link.Stats
	s.Channels[link.Reliable].Buffered = l.net.unacked[l.remote]
	if l.net.buffered != nil {
		for ch := range link.NumChannels {
			s.Channels[ch].Buffered = l.net.buffered(l.local, l.remote, link.Channel(ch))
		}
	}
	return s
}
func (l *fakeLink) HandleSignal(signaling.SignalPayload) error { return nil }

// fakeSig is a signaling client that queues what the peer sends.
type fakeSig struct {
	mu      sync.Mutex
	joined  signaling.Joined
	signals []fakeSignal
	synced  int
}

type fakeSignal struct {
	to      PeerIndex
	payload signaling.SignalPayload
}

func (s *fakeSig) Joined() signaling.Joined                { return s.joined }
func (s *fakeSig) Events() <-chan signaling.Event          { return nil }
func (s *fakeSig) TryReportReplica(signaling.Report) error { return nil }
func (s *fakeSig) Close() error                            { return nil }
func (s *fakeSig) TrySetSynced() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced++
	return nil
}
func (s *fakeSig) TrySendSignal(to PeerIndex, p signaling.SignalPayload) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signals = append(s.signals, fakeSignal{to, p})
	return nil
}
func (s *fakeSig) take() []fakeSignal {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.signals
	s.signals = nil
	return out
}
