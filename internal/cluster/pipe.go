package cluster

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/concordrtc/concord/signaling"
)

// relayQueue bounds the frames waiting for one side of a relay; past it the relay fails (a slow
// consumer), as a websocket whose send queue overflows.
const relayQueue = 1024

// pipe is this node's end of a relay, a signaling.Pipe over two NATS subjects: it publishes
// its frames on out and receives the other side's on its subscription. The heartbeat loop
// (Node.heartbeats) publishes its heartbeats and fails it when the other side falls silent.
type pipe struct {
	n     *Node
	out   string // the subject of this side's frames and heartbeats
	heard atomic.Int64
	in    chan signaling.Frame // frames from the other side, bounded
	dead  chan struct{}
	once  sync.Once
	sub   *nats.Subscription

	sentClose atomic.Bool
	closeOnce sync.Once
}

var _ signaling.Pipe = (*pipe)(nil)

func newPipe(n *Node, out string) *pipe {
	p := &pipe{n: n, out: out, in: make(chan signaling.Frame, relayQueue), dead: make(chan struct{})}
	p.heard.Store(time.Now().UnixNano())
	return p
}

// deliver is the subscription's callback: it decodes a frame and queues it without blocking.
// A frame that does not decode is dropped and counted.
func (p *pipe) deliver(m *nats.Msg) {
	p.heard.Store(time.Now().UnixNano())
	f, err := ConsumeFrame(m.Data)
	if err != nil {
		p.n.refuse(err)
		return
	}
	sf, ok := toSignaling(f)
	if !ok {
		return // a heartbeat
	}
	select {
	case p.in <- sf:
	default:
		p.fail()
	}
}

// fail ends the pipe: the other side is gone or too slow.
func (p *pipe) fail() { p.once.Do(func() { close(p.dead) }) }

// Send implements signaling.Pipe.
func (p *pipe) Send(f signaling.Frame) error {
	wf, ok := fromSignaling(f)
	if !ok {
		return nil
	}
	if wf.Kind == KindClose {
		p.sentClose.Store(true)
	}
	return p.n.nc.Publish(p.out, AppendFrame(make([]byte, 0, SizeFrame(wf)), wf))
}

// Recv implements signaling.Pipe.
func (p *pipe) Recv() <-chan signaling.Frame { return p.in }

// Done implements signaling.Pipe.
func (p *pipe) Done() <-chan struct{} { return p.dead }

// Close implements signaling.Pipe: the other side is told of a lost socket (an empty close
// frame) unless a close frame went already; the subscription ends.
func (p *pipe) Close() error {
	p.closeOnce.Do(func() {
		if !p.sentClose.Load() {
			_ = p.n.nc.Publish(p.out, AppendFrame(nil, Frame{Kind: KindClose}))
		}
		if p.sub != nil {
			_ = p.sub.Unsubscribe()
		}
		p.n.forget(p)
		p.fail()
	})
	return nil
}
