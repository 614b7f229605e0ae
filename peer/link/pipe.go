package link

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// maxPipeQueue bounds the messages queued in one direction of a Pipe, on top
// of the byte thresholds, so that even empty messages cannot pile up.
const maxPipeQueue = 8192

// PipeConfig configures Pipe. The zero value is a lossless, in-order pipe
// with the same thresholds as a Conn.
type PipeConfig struct {
	// HandlerA receives what b sends; HandlerB receives what a sends. Each
	// runs on the pipe's delivery goroutine for that direction, with the same
	// contract as Handler. Default nil: messages are counted and discarded.
	HandlerA Handler
	HandlerB Handler

	// Loss is the probability, in [0, 1], that an unreliable message is lost.
	// Out-of-range values are clamped; NaN is 0. Reliable messages are never
	// lost.
	Loss float64
	// Reorder is the probability, in [0, 1], that an unreliable message is
	// held back and delivered right after the next message sent in the same
	// direction (on either channel). A held message with no successor is
	// never delivered, like a datagram delayed forever. Reliable messages
	// keep their order.
	Reorder float64
	// Seed seeds the PCG generator of each direction. Every unreliable Send
	// draws the same two numbers whatever happens to the message, so with the
	// same seed and the same sequence of sends, the same messages are lost
	// and reordered.
	Seed uint64

	// UnreliableDropThreshold and ReliableHighWater apply to the bytes queued
	// in one direction, as Config's do to a data channel's buffered amount.
	// Defaults: DefaultUnreliableDropThreshold, DefaultReliableHighWater.
	UnreliableDropThreshold uint64
	ReliableHighWater       uint64
}

// Pipe returns two connected in-memory links for deterministic tests of code
// that uses Link. What a sends is delivered to HandlerB and vice versa.
//
// Each direction has one bounded FIFO and one delivery goroutine, owned by the
// pipe; messages are copied on Send. Over the thresholds, unreliable sends are
// dropped and reliable sends fail with ErrBackpressure, as on a Conn. Closing
// either end closes both: Done fires on both, the closing end's Err wraps
// ErrClosed and the other's ErrPeerClosed, queued messages are discarded, and
// Close returns after both delivery goroutines have exited (so, as with Conn,
// it must not be called from a Handler).
func Pipe(cfg PipeConfig) (a, b Link) {
	p := &pipe{
		loss:    clampProbability(cfg.Loss),
		reorder: clampProbability(cfg.Reorder),
		dropAt:  cfg.UnreliableDropThreshold,
		highAt:  cfg.ReliableHighWater,
		closing: make(chan struct{}),
	}
	if p.dropAt == 0 {
		p.dropAt = DefaultUnreliableDropThreshold
	}
	if p.highAt == 0 {
		p.highAt = DefaultReliableHighWater
	}
	handlers := [2]Handler{cfg.HandlerA, cfg.HandlerB}
	for side := range 2 {
		p.ends[side] = &pipeEnd{p: p, side: side, handler: handlers[side], done: make(chan struct{})}
		p.dirs[side] = pipeDir{
			rng:  rand.New(rand.NewPCG(cfg.Seed, uint64(side))),
			wake: make(chan struct{}, 1),
		}
	}
	p.wg.Add(2)
	for side := range 2 {
		go p.deliver(side)
	}
	return p.ends[0], p.ends[1]
}

func clampProbability(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	return math.Min(v, 1)
}

type pipe struct {
	loss, reorder  float64
	dropAt, highAt uint64
	ends           [2]*pipeEnd

	mu     sync.Mutex // guards the following
	closed bool
	dirs   [2]pipeDir // dirs[s] carries what ends[s] sends

	closing   chan struct{} // closed once by close
	closeOnce sync.Once
	wg        sync.WaitGroup // the two delivery goroutines
}

// pipeDir is one direction's queue. Guarded by pipe.mu.
type pipeDir struct {
	ring    []pipeMsg // FIFO ring buffer: n messages from head
	head, n int
	bytes   [NumChannels]uint64 // queued or held, not yet delivered
	held    pipeMsg
	hasHeld bool
	free    [][]byte // delivered buffers, reused by Send
	rng     *rand.Rand
	wake    chan struct{} // capacity 1
}

type pipeMsg struct {
	ch  Channel
	buf []byte
}

// newMsg copies payload into a recycled buffer.
func (d *pipeDir) newMsg(ch Channel, payload []byte) pipeMsg {
	var buf []byte
	if k := len(d.free); k > 0 {
		buf, d.free = d.free[k-1], d.free[:k-1]
	}
	d.bytes[ch] += uint64(len(payload))
	return pipeMsg{ch: ch, buf: append(buf[:0], payload...)}
}

func (d *pipeDir) push(m pipeMsg) {
	if d.n == len(d.ring) {
		grown := make([]pipeMsg, max(16, 2*len(d.ring)))
		for i := range d.n {
			grown[i] = d.ring[(d.head+i)%len(d.ring)]
		}
		d.ring, d.head = grown, 0
	}
	d.ring[(d.head+d.n)%len(d.ring)] = m
	d.n++
}

func (d *pipeDir) pop() (pipeMsg, bool) {
	if d.n == 0 {
		return pipeMsg{}, false
	}
	m := d.ring[d.head]
	d.ring[d.head] = pipeMsg{}
	d.head = (d.head + 1) % len(d.ring)
	d.n--
	d.bytes[m.ch] -= uint64(len(m.buf))
	return m, true
}

// deliver runs the handler of the receiving end for each message of one
// direction, in queue order, until the pipe closes.
func (p *pipe) deliver(side int) {
	defer p.wg.Done()
	d := &p.dirs[side]
	dst := p.ends[1-side]
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		m, ok := d.pop()
		p.mu.Unlock()
		if !ok {
			select {
			case <-d.wake:
				continue
			case <-p.closing:
				return
			}
		}
		ctr := &dst.stats[m.ch]
		ctr.msgsRecv.Add(1)
		ctr.bytesRecv.Add(uint64(len(m.buf)))
		if dst.handler != nil {
			dst.handler(m.ch, m.buf)
		}
		p.mu.Lock()
		d.free = append(d.free, m.buf[:0])
		p.mu.Unlock()
	}
}

func (p *pipe) close(side int) {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.ends[side].cause = ErrClosed
		p.ends[1-side].cause = fmt.Errorf("%w: the other end of the pipe closed it", ErrPeerClosed)
		p.mu.Unlock()
		close(p.closing)
		p.wg.Wait()
		close(p.ends[0].done)
		close(p.ends[1].done)
	})
}

// pipeEnd is one end of a Pipe.
type pipeEnd struct {
	p       *pipe
	side    int
	handler Handler // receives what the other end sends
	stats   [NumChannels]counters
	done    chan struct{}
	cause   error // guarded by p.mu; set once when the pipe closes
}

var (
	_ Link        = (*pipeEnd)(nil)
	_ OwnedSender = (*pipeEnd)(nil)
)

// SendOwned implements OwnedSender; a Pipe copies the payload anyway.
func (e *pipeEnd) SendOwned(ch Channel, payload []byte) error { return e.Send(ch, payload) }

// Send implements Link.
func (e *pipeEnd) Send(ch Channel, payload []byte) error {
	if ch >= NumChannels {
		return fmt.Errorf("%w: %d", ErrBadChannel, ch)
	}
	if len(payload) > MaxMessage(ch) {
		return fmt.Errorf("%w: %d-byte %s message, limit %d", ErrTooLarge, len(payload), ch, MaxMessage(ch))
	}
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return e.deadErrLocked()
	}
	d := &p.dirs[e.side]
	ctr := &e.stats[ch]
	justHeld := false
	if ch == Unreliable {
		// Draw first, so the fate of the k-th datagram depends only on the
		// seed and k, not on timing-dependent backpressure drops.
		lossDraw, reorderDraw := d.rng.Float64(), d.rng.Float64()
		if d.bytes[Unreliable] > p.dropAt || d.n >= maxPipeQueue {
			ctr.dropped.Add(1)
			return nil
		}
		ctr.msgsSent.Add(1)
		ctr.bytesSent.Add(uint64(len(payload)))
		if lossDraw < p.loss {
			ctr.lost.Add(1)
			return nil
		}
		m := d.newMsg(ch, payload)
		if reorderDraw < p.reorder && !d.hasHeld {
			d.held, d.hasHeld, justHeld = m, true, true
		} else {
			d.push(m)
		}
	} else {
		if buffered := d.bytes[Reliable]; buffered > p.highAt || d.n >= maxPipeQueue {
			ctr.backpressured.Add(1)
			return &BackpressureError{Channel: ch, Buffered: buffered, Limit: p.highAt}
		}
		ctr.msgsSent.Add(1)
		ctr.bytesSent.Add(uint64(len(payload)))
		d.push(d.newMsg(ch, payload))
	}
	if d.hasHeld && !justHeld {
		d.push(d.held)
		d.held, d.hasHeld = pipeMsg{}, false
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return nil
}

func (e *pipeEnd) deadErrLocked() error {
	if e.cause == ErrClosed {
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrClosed, e.cause)
}

// Close implements Link.
func (e *pipeEnd) Close() error {
	e.p.close(e.side)
	return nil
}

// Done implements Link.
func (e *pipeEnd) Done() <-chan struct{} { return e.done }

// Err returns why the pipe closed (wrapping ErrClosed or ErrPeerClosed), or
// nil while it is open.
func (e *pipeEnd) Err() error {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return e.cause
}

// Stats implements Link. Buffered is the bytes this end sent that are not yet
// delivered.
func (e *pipeEnd) Stats() Stats {
	var s Stats
	e.p.mu.Lock()
	bytes := e.p.dirs[e.side].bytes
	e.p.mu.Unlock()
	for i := range NumChannels {
		s.Channels[i] = e.stats[i].snapshot(bytes[i])
	}
	return s
}
