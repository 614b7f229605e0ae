package link

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers match them with errors.Is; the returned errors wrap
// them with detail.
var (
	// ErrClosed: the link was closed locally (Close was called).
	ErrClosed = errors.New("link: closed")
	// ErrPeerClosed: the remote side closed the connection.
	ErrPeerClosed = errors.New("link: closed by peer")
	// ErrConnectionLost: ICE reported the connection disconnected or failed, or
	// a data channel read failed.
	ErrConnectionLost = errors.New("link: connection lost")
	// ErrNotReady: Send was called before both data channels were open.
	ErrNotReady = errors.New("link: data channels not open yet")
	// ErrBackpressure: a reliable send was refused because the peer cannot keep
	// up. Returned as a *BackpressureError.
	ErrBackpressure = errors.New("link: peer cannot keep up")
	// ErrTooLarge: a payload exceeds the channel's message size limit.
	ErrTooLarge = errors.New("link: message too large")
	// ErrBadChannel: the Channel value is not Reliable or Unreliable.
	ErrBadChannel = errors.New("link: unknown channel")
	// ErrBadSignal: an inbound Signal is malformed or arrives in a state that
	// cannot accept it (an answer to an answerer, a second offer, …).
	ErrBadSignal = errors.New("link: bad signal")
	// ErrSignalFailed: the Signal callback returned an error; the Conn is dead.
	ErrSignalFailed = errors.New("link: sending a signal failed")
	// ErrNegotiation: pion rejected a session description; the Conn is dead.
	ErrNegotiation = errors.New("link: negotiation failed")
	// ErrConfig: a Config or ConnConfig field is invalid.
	ErrConfig = errors.New("link: invalid config")
	// ErrPionInternals: the pion internals this package patches do not have the
	// expected shape (see pionfix.go); only possible after a pion upgrade.
	ErrPionInternals = errors.New("link: unexpected pion internals")
)

// BackpressureError is returned by Send on the reliable channel when the
// channel's send buffer is above the high-water mark. The message was not
// sent. The peer loop should treat it as "this member cannot keep up" and
// disconnect it rather than queue more.
type BackpressureError struct {
	Channel  Channel
	Buffered uint64 // bytes queued and not yet acknowledged when Send was refused
	Limit    uint64 // the high-water mark
}

func (e *BackpressureError) Error() string {
	return fmt.Sprintf("%v: %s channel has %d bytes buffered, limit %d",
		ErrBackpressure, e.Channel, e.Buffered, e.Limit)
}

// Is reports whether target is ErrBackpressure, so errors.Is works.
func (e *BackpressureError) Is(target error) bool { return target == ErrBackpressure }
