package peer

import (
	"sync"

	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// MemoryTransport connects members of one process through in-memory pipes (link.Pipe), for
// deterministic tests: the reliable channel is ordered and lossless, the unreliable one loses and
// reorders datagrams as Pipe says, from a seed. Signaling still pairs the two ends: the offerer
// sends an offer, which makes the host answer; the transport then joins the two halves.
type MemoryTransport struct {
	// Pipe configures every pipe; its handlers are set per link. Seed is mixed with the session so
	// that every link has its own deterministic loss pattern.
	Pipe link.PipeConfig

	mu      sync.Mutex // guards pending
	pending map[memKey]*memLink
}

type memKey struct {
	offerer, answerer PeerIndex
	session           uint64
}

// AnswersInline implements InlineTransport: a pipe half is made at once, so an answer takes no
// worker.
func (t *MemoryTransport) AnswersInline() bool { return true }

// Connect makes one half of a pipe; the pipe exists once both halves are made.
func (t *MemoryTransport) Connect(cfg LinkConfig) (Link, error) {
	l := &memLink{handler: cfg.Handler, ready: make(chan struct{}), done: make(chan struct{})}
	key := memKey{offerer: cfg.Local, answerer: cfg.Remote, session: cfg.Session}
	if !cfg.Offerer {
		key.offerer, key.answerer = cfg.Remote, cfg.Local
	}
	t.mu.Lock()
	if t.pending == nil {
		t.pending = make(map[memKey]*memLink)
	}
	other, ok := t.pending[key]
	if ok {
		delete(t.pending, key)
	} else {
		t.pending[key] = l
	}
	t.mu.Unlock()
	if ok {
		pc := t.Pipe
		pc.Seed ^= cfg.Session*0x9e3779b97f4a7c15 + uint64(key.offerer)<<32 + uint64(key.answerer)
		pc.HandlerA, pc.HandlerB = other.handler, l.handler
		a, b := link.Pipe(pc)
		other.attach(a)
		l.attach(b)
	}
	if cfg.Offerer {
		// The host makes its half when this offer reaches it.
		if err := cfg.Signal(sigclient.SignalPayload{Kind: sigclient.SignalOffer, SDP: "memory", Session: cfg.Session}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// memLink is one half of an in-memory link, usable before the other half exists.
type memLink struct {
	handler link.Handler
	ready   chan struct{}
	done    chan struct{}

	mu     sync.Mutex // guards inner and closed
	inner  link.Link
	closed bool
}

func (l *memLink) attach(inner link.Link) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = inner.Close()
		return
	}
	l.inner = inner
	l.mu.Unlock()
	close(l.ready)
	go func() { <-inner.Done(); l.finish() }()
}

func (l *memLink) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
	default:
		close(l.done)
	}
}

// current is the inner link once there is one.
func (l *memLink) current() (link.Link, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inner == nil {
		return nil, link.ErrNotReady
	}
	return l.inner, nil
}

func (l *memLink) Send(ch link.Channel, payload []byte) error {
	inner, err := l.current()
	if err != nil {
		return err
	}
	return inner.Send(ch, payload)
}

// SendOwned implements link.OwnedSender through the inner link.
func (l *memLink) SendOwned(ch link.Channel, payload []byte) error {
	inner, err := l.current()
	if err != nil {
		return err
	}
	return link.SendOwned(inner, ch, payload)
}

func (l *memLink) Close() error {
	l.mu.Lock()
	l.closed = true
	inner := l.inner
	l.mu.Unlock()
	if inner != nil {
		err := inner.Close()
		<-l.done
		return err
	}
	l.finish()
	return nil
}

func (l *memLink) Done() <-chan struct{}                      { return l.done }
func (l *memLink) Ready() <-chan struct{}                     { return l.ready }
func (l *memLink) HandleSignal(sigclient.SignalPayload) error { return nil }

func (l *memLink) Stats() link.Stats {
	inner, err := l.current()
	if err != nil {
		return link.Stats{}
	}
	return inner.Stats()
}
