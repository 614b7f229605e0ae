package durable

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/peer"
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

// Restore bounds (docs/protocol.md §6 "Durable rooms: restore bounds"): a checkpoint or scene is
// merged into a host that holds nothing, so it is judged as a member judges the first snapshot of
// a host when it holds nothing (docs/protocol.md §5 "Session: limits"). A well-formed stream can
// still freeze a room for good: one stamp of 2³²−1 and every later write loses; a deletion at
// version 0xffff leaves its number unusable, on every number no entity can spawn.
const (
	// MaxRestoreClock is the highest stamp and clock a restore takes: 2²⁸ of the wire clock's
	// headroom stays (52 days at 60 Hz), as for a fresh member's first snapshot.
	MaxRestoreClock = math.MaxUint32 - 1<<28
	// MaxRestoreVersion is the highest entity version a restore takes: every number keeps 256
	// reuses. The host hands numbers out round-robin, so an honest room reaches it after some
	// 2²⁴ × 65,024 spawns.
	MaxRestoreVersion = 0xffff - 1<<8
)

// Reasons of the messages Bound drops (concord_restore_refused_total{reason}).
const (
	RestoreClock    = "clock"    // the stored clock beyond MaxRestoreClock (lowered to it)
	RestoreStamp    = "stamp"    // a message stamped beyond MaxRestoreClock
	RestoreVersion  = "version"  // a message of an entity version beyond MaxRestoreVersion
	RestoreReserved = "reserved" // a deletion of a reserved entity number (not the room entity)
)

// Bound applies the restore bounds to a validated stream and its stored clock: it returns the
// stream without the messages beyond them (data itself when none is), the clock lowered to
// MaxRestoreClock, and how many were dropped by reason (nil when nothing was). Dropping rather
// than refusing the whole restore keeps the room and everything honest in it.
func Bound(data []byte, clock crdt.Timestamp) ([]byte, crdt.Timestamp, map[string]int, error) {
	var dropped map[string]int
	drop := func(reason string) {
		if dropped == nil {
			dropped = map[string]int{}
		}
		dropped[reason]++
	}
	if clock > MaxRestoreClock {
		clock = MaxRestoreClock
		drop(RestoreClock)
	}
	var rd crdt.Reader
	var m crdt.Message
	var out []byte
	kept := 0 // messages before the first dropped one are copied only once one is
	for rd.Reset(data); ; {
		err := rd.Next(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, nil, err
		}
		reason := ""
		switch {
		case m.Entity.Version() > MaxRestoreVersion:
			reason = RestoreVersion
		case (m.Type == crdt.DeleteEntity || m.Type == crdt.DeleteEntityNetwork) &&
			m.Entity.Number() < peer.FirstSpawnNumber && m.Entity != peer.RoomEntity:
			reason = RestoreReserved
		case m.Timestamp > MaxRestoreClock:
			reason = RestoreStamp
		}
		if reason == "" {
			if out != nil {
				out = crdt.AppendMessage(out, &m)
			} else {
				kept++
			}
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(data))
			var rd2 crdt.Reader
			var m2 crdt.Message
			rd2.Reset(data)
			for range kept {
				_ = rd2.Next(&m2)
				out = crdt.AppendMessage(out, &m2)
			}
		}
		drop(reason)
	}
	if out == nil {
		return data, clock, dropped, nil
	}
	return out, clock, dropped, nil
}
