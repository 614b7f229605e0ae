package crdt

import (
	"errors"
	"strconv"
)

// Decoding errors. Every error returned by ConsumeMessage wraps exactly one of these with detail;
// stream functions wrap it again in a *StreamError that carries the offset.
var (
	// ErrTruncated: the input ends inside a message (inside the header, before the declared
	// length, or before the declared data length).
	ErrTruncated = errors.New("crdt: truncated message")
	// ErrBadLength: the length field is below 8, or it does not match the layout of the type
	// (a fixed-size type with another length, or a data length that disagrees with it).
	ErrBadLength = errors.New("crdt: bad message length")
	// ErrTooLarge: the length field exceeds the maximum message size. It is checked right
	// after the header is read, before anything else.
	ErrTooLarge = errors.New("crdt: message too large")
)

// StreamError reports a malformed message in a stream of concatenated messages. Offset is the
// byte offset of the start of that message in the stream; Err wraps one of the sentinels above.
// Messages before Offset were valid (MergeStream has merged them).
type StreamError struct {
	Offset int
	Err    error
}

func (e *StreamError) Error() string {
	return "crdt: malformed message at offset " + strconv.Itoa(e.Offset) + ": " + e.Err.Error()
}

// Unwrap returns the underlying error, so errors.Is(err, ErrTruncated) works through it.
func (e *StreamError) Unwrap() error { return e.Err }
