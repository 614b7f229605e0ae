package netmsg

import (
	"errors"
	"strconv"
)

// Sentinel errors. Decoders wrap them with detail inside a *ProtocolError;
// callers test them with errors.Is.
var (
	// ErrShortBuffer reports input that ends before a field it announces:
	// a truncated message, a length past the end of the input, or a count
	// claiming more elements than the remaining bytes can hold.
	ErrShortBuffer = errors.New("netmsg: short buffer")

	// ErrWrongType reports a ConsumeX call on a message of another type.
	ErrWrongType = errors.New("netmsg: wrong message type")

	// ErrUnknownType reports a well-framed extension message (types 6–127)
	// that this build does not define. It is a drop-message error: the
	// Reader has already stepped over it, and the receiver skips and counts it.
	ErrUnknownType = errors.New("netmsg: unknown message type")

	// ErrTooLarge reports a payload over its channel's limit (MaxDatagram,
	// MaxReliableMessage) or a reassembly over Config.MaxTotal.
	ErrTooLarge = errors.New("netmsg: too large")

	// ErrInvalidMaskWidth reports an Update whose mask width code is 3, or
	// a property count no mask width can carry.
	ErrInvalidMaskWidth = errors.New("netmsg: invalid mask width")

	// ErrInvalidPeerID reports a peer id over MaxPeerIDLen bytes or not
	// valid UTF-8.
	ErrInvalidPeerID = errors.New("netmsg: invalid peer id")

	// ErrInvalidReason reports a Close reason over MaxCloseReason bytes or
	// not valid UTF-8.
	ErrInvalidReason = errors.New("netmsg: invalid close reason")

	// ErrBodyLength reports an extension body whose length does not match
	// the fields of its type (Ping, Pong and Hello bodies have a fixed size;
	// Close, Fragment and CrdtBatch a minimum one).
	ErrBodyLength = errors.New("netmsg: bad extension body length")

	// ErrFragment reports a Fragment that breaks the reassembly rules: a
	// chunk past totalLength, a first fragment with a non-zero offset, an
	// offset other than the bytes received so far, a changed messageId or
	// totalLength, or an empty chunk that makes no progress.
	ErrFragment = errors.New("netmsg: invalid fragment")

	// ErrMaskMismatch reports an Update whose mask does not fit the schema of
	// its entity (see Update.CheckMask). It is a drop-message error: the
	// update is well-formed, only meaningless to this receiver.
	ErrMaskMismatch = errors.New("netmsg: update mask does not match schema")
)

// ProtocolError reports input that breaks the wire format. Its consequence
// is "close the peer": a sender that produces it is buggy or hostile, and
// the rest of its payload cannot be trusted to be framed correctly.
//
// Errors that are not a *ProtocolError (ErrUnknownType, ErrMaskMismatch)
// mean "drop this one message and carry on".
type ProtocolError struct {
	// Type is the type byte of the message at fault, or the type the
	// decoder expected when the input was empty.
	Type Type
	// Offset is the byte offset of the faulty field within the input the
	// failing call was given (for a Reader, within the whole payload), or
	// -1 when no input position applies (reassembly).
	Offset int
	// Err wraps one of the package's sentinel errors with detail.
	Err error
}

func (e *ProtocolError) Error() string {
	s := "netmsg: protocol error in " + e.Type.String()
	if e.Offset >= 0 {
		s += " at offset " + strconv.Itoa(e.Offset)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the wrapped sentinel chain, for errors.Is.
func (e *ProtocolError) Unwrap() error { return e.Err }
