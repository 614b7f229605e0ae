package cluster

import (
	"errors"
	"fmt"
)

// Errors of the node-to-node messages (wire.go). A decoder's error wraps one of these with the
// detail; the receiver drops the message and counts it (concord_cluster_refused_total{reason}).
var (
	// ErrShortFrame: a relay frame without its kind byte, or a close frame of one byte.
	ErrShortFrame = errors.New("cluster: short frame")
	// ErrUnknownKind: a relay frame whose kind byte is none of Kind's.
	ErrUnknownKind = errors.New("cluster: unknown frame kind")
	// ErrFrameTooLong: a control frame (ping, pong, close) with more than 125 bytes of payload
	// (RFC 6455 §5.5), or a heartbeat or binary frame with any.
	ErrFrameTooLong = errors.New("cluster: frame payload too long")
	// ErrBadMessage: a control message (open request, open reply, rooms reply, presence) that is
	// too long, not JSON, or whose fields are out of bounds.
	ErrBadMessage = errors.New("cluster: bad message")
	// ErrVersion: a control message of another node protocol version than Version.
	ErrVersion = errors.New("cluster: unknown node protocol version")
)

// Errors of an open request, as the owner answers it (OpenError.Code).
var (
	// ErrNotOwner: the asked node does not hold the room's lease (it moved, or expired there).
	ErrNotOwner = errors.New("cluster: node does not own the room")
	// ErrClosing: the asked node is stopping, or has no signaling server attached yet.
	ErrClosing = errors.New("cluster: node closing")
)

// ErrRoomBroken, wrapped by a PlacementConfig.Start error, says that a room cannot open on this
// node (its checkpoint or scene is bad): placement releases its lease and does not try again.
var ErrRoomBroken = errors.New("cluster: room cannot open here")

// OpenCode is the reason an owner gives for refusing an open request (OpenReply.Code).
type OpenCode string

// Open reply codes; the empty code accepts.
const (
	OpenOK         OpenCode = ""
	OpenNotOwner   OpenCode = "not_owner"
	OpenClosing    OpenCode = "closing"
	OpenBadRequest OpenCode = "bad_request"
	OpenVersion    OpenCode = "version"
	OpenInternal   OpenCode = "internal"
)

// OpenError is an owner's refusal of an open request: errors.Is matches ErrNotOwner,
// ErrClosing, ErrBadMessage or ErrVersion by its Code, so that Route knows whether to read the
// directory again (not_owner) or wait (closing).
type OpenError struct {
	Node   string   // the node asked
	Code   OpenCode // its reason
	Reason string   // its detail, for logs
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("cluster: node %s refused the relay: %s (%s)", e.Node, e.Code, e.Reason)
}

// Is matches the sentinel of e's Code.
func (e *OpenError) Is(target error) bool {
	switch e.Code {
	case OpenNotOwner:
		return target == ErrNotOwner
	case OpenClosing:
		return target == ErrClosing
	case OpenBadRequest:
		return target == ErrBadMessage
	case OpenVersion:
		return target == ErrVersion
	}
	return false
}
