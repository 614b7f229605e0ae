package durable

import (
	"errors"
	"fmt"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/signaling"
)

// CorruptError reports a checkpoint or scene whose message stream is malformed: the room does not
// open from it.
type CorruptError struct {
	Room signaling.RoomID
	// Source names the file or the JetStream stream and subject.
	Source string
	// Offset is the byte offset of the first malformed message.
	Offset int
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("room %q: %s: byte offset %d: %v", e.Room, e.Source, e.Offset, e.Err)
}

// Unwrap returns the crdt decoding error (crdt.ErrTruncated, crdt.ErrBadLength, ...).
func (e *CorruptError) Unwrap() error { return e.Err }

// Validate merges the whole stream into a scratch replica and returns a *CorruptError at the first
// malformed message, or the number of live entities the stream holds.
func Validate(room signaling.RoomID, source string, data []byte) (entities int, err error) {
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(data); err != nil {
		var se *crdt.StreamError
		if errors.As(err, &se) {
			return 0, &CorruptError{Room: room, Source: source, Offset: se.Offset, Err: se.Err}
		}
		return 0, &CorruptError{Room: room, Source: source, Err: err}
	}
	return r.LiveEntities(), nil
}

// Canonical returns the stream as the canonical AppendState export of the state it holds (what
// `concord crdt export` prints): equal states give equal bytes.
func Canonical(room signaling.RoomID, source string, data []byte) ([]byte, error) {
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(data); err != nil {
		var se *crdt.StreamError
		if errors.As(err, &se) {
			return nil, &CorruptError{Room: room, Source: source, Offset: se.Offset, Err: se.Err}
		}
		return nil, err
	}
	return r.AppendState(nil), nil
}
