package link

import (
	"strconv"
	"sync/atomic"
)

// Channel names one of the two data channels every connection carries.
type Channel uint8

const (
	// Reliable is data channel id 0: ordered and reliable. Control messages,
	// HostCommands and snapshot fragments travel on it.
	Reliable Channel = 0
	// Unreliable is data channel id 1: unordered, maxRetransmits 0 (each
	// message is sent once and may be lost or overtaken). EntityUpdates travel
	// on it.
	Unreliable Channel = 1

	// NumChannels is the number of channels; Channel values are below it.
	NumChannels = 2
)

// String returns "reliable", "unreliable" or "channel(N)".
func (c Channel) String() string {
	switch c {
	case Reliable:
		return "reliable"
	case Unreliable:
		return "unreliable"
	default:
		return "channel(" + strconv.Itoa(int(c)) + ")"
	}
}

// Message size limits, checked on send and on receive. docs/design.md §2: reliable
// messages are at most 16 KiB and unreliable datagrams at most 1200 bytes; the
// slack leaves room for Concord's own framing. A received message over the
// limit ends the link with ErrTooLarge (a protocol error for that peer).
const (
	MaxReliableMessage   = 16*1024 + 256
	MaxUnreliableMessage = 1200 + 64
)

// MaxMessage returns the size limit of ch, or 0 for an unknown channel.
func MaxMessage(ch Channel) int {
	switch ch {
	case Reliable:
		return MaxReliableMessage
	case Unreliable:
		return MaxUnreliableMessage
	default:
		return 0
	}
}

// Handler receives one message. It runs on the link's per-channel read
// goroutine; payload is valid only until it returns (the buffer is reused for
// the next message). It must not block for long: copy what it needs, post it
// to the owning loop and return. It must not call the link's Close (Close
// waits for the read goroutines, so that would deadlock).
type Handler func(ch Channel, payload []byte)

// Link is a message transport to one remote peer with the two channels.
//
// Send may be called from any goroutine. Close is idempotent and returns once
// every goroutine of the link has exited. Done is closed when the link is dead
// for any reason (local Close, remote close, connection lost, protocol error)
// and its goroutines have exited.
type Link interface {
	// Send queues payload on ch. It does not retain payload after returning.
	// An unreliable send over the drop threshold is dropped, counted in
	// Stats and returns nil. A reliable send over the high-water mark returns
	// a *BackpressureError (errors.Is(err, ErrBackpressure)).
	Send(ch Channel, payload []byte) error
	Close() error
	Done() <-chan struct{}
	Stats() Stats
}

// OwnedSender is a Link that can take a payload over instead of copying it.
//
// SendOwned is Send, except that the caller hands payload to the link: it
// must never modify payload again, not even after SendOwned returns an error,
// and the link may keep reading it for as long as it likes (a Conn: until
// SCTP has the chunks acknowledged or abandoned). Many links may share one
// payload: a host sends the same datagram to every member with no copy each.
// The drop and backpressure rules are Send's.
type OwnedSender interface {
	SendOwned(ch Channel, payload []byte) error
}

// SendOwned sends payload on l under the ownership rule of OwnedSender: through
// l's SendOwned if it has one, else through Send (which copies).
func SendOwned(l Link, ch Channel, payload []byte) error {
	if o, ok := l.(OwnedSender); ok {
		return o.SendOwned(ch, payload)
	}
	return l.Send(ch, payload)
}

// OwnedBatchSender is an OwnedSender that takes several payloads in one call:
// SendOwnedBatch is SendOwned of each, in order, with what a call costs (a Conn:
// the SCTP stream's and association's locks, the write loop's wake) paid once.
// After an error none of the rest was sent. Drops follow Send's rule, datagram by
// datagram, and are counted the same way.
type OwnedBatchSender interface {
	SendOwnedBatch(ch Channel, payloads [][]byte) error
}

// SendOwnedBatch sends payloads on l, in order, under OwnedSender's rule: in one
// call when l is an OwnedBatchSender, else one SendOwned each, stopping at the
// first error.
func SendOwnedBatch(l Link, ch Channel, payloads [][]byte) error {
	if b, ok := l.(OwnedBatchSender); ok {
		return b.SendOwnedBatch(ch, payloads)
	}
	for _, p := range payloads {
		if err := SendOwned(l, ch, p); err != nil {
			return err
		}
	}
	return nil
}

// ChannelStats are the counters of one channel as seen from one end.
type ChannelStats struct {
	MessagesSent     uint64 // messages handed to the transport
	BytesSent        uint64
	MessagesReceived uint64 // messages delivered to the Handler
	BytesReceived    uint64
	// Dropped counts unreliable sends dropped because the send buffer was
	// above the drop threshold (never sent, not in MessagesSent).
	Dropped uint64
	// Backpressured counts reliable sends refused with ErrBackpressure.
	Backpressured uint64
	// Lost counts datagrams dropped by Pipe's simulated loss (always 0 on a
	// Conn: real losses are invisible to the sender). They are in MessagesSent.
	Lost uint64
	// Oversize counts received messages over the channel's limit (the first
	// one ends the link, so this is 0 or 1).
	Oversize uint64
	// Buffered is the number of bytes sent but not yet acknowledged (Conn: the
	// data channel's bufferedAmount) or not yet delivered (Pipe), at the time
	// of the Stats call.
	Buffered uint64
}

// Stats is a snapshot of a link's counters, indexed by Channel:
// s.Channels[link.Unreliable].Dropped.
type Stats struct {
	Channels [NumChannels]ChannelStats
}

// counters is the live, atomically updated form of ChannelStats.
type counters struct {
	msgsSent, bytesSent, msgsRecv, bytesRecv atomic.Uint64
	dropped, backpressured, lost, oversize   atomic.Uint64
}

func (c *counters) snapshot(buffered uint64) ChannelStats {
	return ChannelStats{
		MessagesSent:     c.msgsSent.Load(),
		BytesSent:        c.bytesSent.Load(),
		MessagesReceived: c.msgsRecv.Load(),
		BytesReceived:    c.bytesRecv.Load(),
		Dropped:          c.dropped.Load(),
		Backpressured:    c.backpressured.Load(),
		Lost:             c.lost.Load(),
		Oversize:         c.oversize.Load(),
		Buffered:         buffered,
	}
}
