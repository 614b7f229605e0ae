package sigclient

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each wire error code (ErrorCode) maps to one of them, so a
// Go client can test a server's answer with errors.Is.
var (
	// ErrBadMessage: a message is not valid JSON or breaks a field rule.
	ErrBadMessage = errors.New("signaling: bad message")
	// ErrUnsupportedVersion: a message's "v" is not ProtocolVersion.
	ErrUnsupportedVersion = errors.New("signaling: unsupported protocol version")
	// ErrJoinRequired: the first message on a socket was not a join.
	ErrJoinRequired = errors.New("signaling: first message must be a join")
	// ErrJoinTimeout: no join arrived within the join timeout.
	ErrJoinTimeout = errors.New("signaling: join timeout")
	// ErrAlreadyJoined: a join arrived on a socket that has joined.
	ErrAlreadyJoined = errors.New("signaling: already joined")
	// ErrTokenRequired: the server has a secret and the join carried no token.
	ErrTokenRequired = errors.New("signaling: token required")
	// ErrTokenInvalid: the token is malformed, badly signed or not yet valid.
	ErrTokenInvalid = errors.New("signaling: token invalid")
	// ErrTokenExpired: the token's "exp" has passed.
	ErrTokenExpired = errors.New("signaling: token expired")
	// ErrWrongRoom: the token or a signal names another room.
	ErrWrongRoom = errors.New("signaling: wrong room")
	// ErrTokenMismatch: the join names a user, device or kind its token does not.
	ErrTokenMismatch = errors.New("signaling: join does not match token")
	// ErrRoomFull: the room has its maximum number of members.
	ErrRoomFull = errors.New("signaling: room full")
	// ErrUnknownPeer: a signal names a peer index that is not in the sender's room.
	ErrUnknownPeer = errors.New("signaling: unknown peer")
	// ErrRateLimited: a member sent signals faster than Config.SignalRate.
	ErrRateLimited = errors.New("signaling: rate limited")
	// ErrBadSignal: a signal payload breaks the payload rules.
	ErrBadSignal = errors.New("signaling: bad signal")
	// ErrReplaced: another connection joined with the same identity.
	ErrReplaced = errors.New("signaling: replaced by a newer connection")
	// ErrServerClosing: the server is shutting down.
	ErrServerClosing = errors.New("signaling: server closing")

	// ErrResumeRefused is the parent of every refused resume (errors.Is holds for each of the
	// three below): the member cannot get its index back from this server, and joining anew
	// would give it another one. Retrying does not help.
	ErrResumeRefused = errors.New("signaling: resume refused")
	// ErrIndexTaken: another member (another identity) holds the claimed peer index.
	ErrIndexTaken = fmt.Errorf("%w: peer index taken", ErrResumeRefused)
	// ErrResumeToken: the resume token does not match the room, index and identity.
	ErrResumeToken = fmt.Errorf("%w: bad resume token", ErrResumeRefused)
	// ErrResumeRoom: the claim was issued in another room than the one joined.
	ErrResumeRoom = fmt.Errorf("%w: resume claim is for another room", ErrResumeRefused)
	// ErrResumeTerm: the claim's term runs further ahead than the server can vouch for (its
	// resume token's term, or the room's term on an open server, plus MaxTermSkew).
	ErrResumeTerm = fmt.Errorf("%w: claimed term out of bounds", ErrResumeRefused)
	// ErrResumeIgnored is the client's own: the server answered a resume with another index,
	// as a server that predates resume does. Dial leaves that room again.
	ErrResumeIgnored = fmt.Errorf("%w: the server does not support resume", ErrResumeRefused)

	// ErrRecipientBusy: a signal was not relayed because its recipient's signal budget or send
	// queue is full; the recipient stays, the sender may retry later.
	ErrRecipientBusy = errors.New("signaling: recipient busy")
	// ErrTooManyErrors: a member's messages were refused too often (bad messages, rate limits,
	// unknown peers); it is dropped as a repeat offender.
	ErrTooManyErrors = errors.New("signaling: too many refused messages")
	// ErrServerBusy: the server is at a capacity limit (rooms); try later or elsewhere.
	ErrServerBusy = errors.New("signaling: server busy")
	// ErrTooManyDevices: a token without a device claim already has its maximum number of
	// members in the room.
	ErrTooManyDevices = errors.New("signaling: too many devices for this token")
	// ErrEvicted: a member that had not synced within Config.SyncTimeout made room for a new one
	// in a full room.
	ErrEvicted = errors.New("signaling: evicted from a full room")
	// ErrForbidden: an HTTP request's credential does not allow what it asks (an admin-only
	// route without the admin key, a moderation request with a token without the mod claim).
	ErrForbidden = errors.New("signaling: forbidden")
	// ErrKicked: a moderator removed the member from its room. Redialing is no use: a client
	// that rejoins on its own after a kick defeats it, so the peers end their session.
	ErrKicked = errors.New("signaling: kicked by a moderator")
	// ErrBanned: the member's identity is banned from the room (a moderator's ban, until the
	// expiry the message gives, or for good); errors.Is(ErrBanned, ErrKicked) holds.
	ErrBanned = fmt.Errorf("%w: banned", ErrKicked)

	// ErrServerClosed is returned by Server methods after Close.
	ErrServerClosed = errors.New("signaling: server closed")
	// ErrClosed is returned by Client methods after Close.
	ErrClosed = errors.New("signaling: client closed")
	// ErrSendQueueFull: a Try method found the client's send queue full
	// (ClientConfig.SendQueue); the message was not sent.
	ErrSendQueueFull = errors.New("signaling: send queue full")
	// ErrDisconnected wraps why a client lost its connection (Closed.Err).
	ErrDisconnected = errors.New("signaling: disconnected")
	// ErrEventOverflow: the client's event queue filled up because Events was
	// not drained; the client disconnects rather than drop an event.
	ErrEventOverflow = errors.New("signaling: event queue overflow")
	// ErrNoSecret: IssueToken was given an empty secret.
	ErrNoSecret = errors.New("signaling: empty secret")
	// ErrNoExpiry: IssueToken was given claims without ExpiresAt.
	ErrNoExpiry = errors.New("signaling: token without expiry")
)

// ErrorCode is the machine-readable code of an error message.
type ErrorCode string

// Error codes sent in "error" messages and as the reason of 1008 close frames.
const (
	CodeBadMessage         ErrorCode = "bad_message"
	CodeUnsupportedVersion ErrorCode = "unsupported_version"
	CodeJoinRequired       ErrorCode = "join_required"
	CodeJoinTimeout        ErrorCode = "join_timeout"
	CodeAlreadyJoined      ErrorCode = "already_joined"
	CodeTokenRequired      ErrorCode = "token_required"
	CodeTokenInvalid       ErrorCode = "token_invalid"
	CodeTokenExpired       ErrorCode = "token_expired"
	CodeWrongRoom          ErrorCode = "wrong_room"
	CodeTokenMismatch      ErrorCode = "token_mismatch"
	CodeRoomFull           ErrorCode = "room_full"
	CodeUnknownPeer        ErrorCode = "unknown_peer"
	CodeBadSignal          ErrorCode = "bad_signal"
	CodeRateLimited        ErrorCode = "rate_limited"
	CodeReplaced           ErrorCode = "replaced"
	CodeServerClosing      ErrorCode = "server_closing"
	CodeIndexTaken         ErrorCode = "index_taken"
	CodeResumeToken        ErrorCode = "resume_token_invalid"
	CodeResumeRoom         ErrorCode = "resume_room_mismatch"
	CodeResumeTerm         ErrorCode = "resume_term_invalid"
	CodeRecipientBusy      ErrorCode = "recipient_busy"
	CodeTooManyErrors      ErrorCode = "too_many_errors"
	CodeServerBusy         ErrorCode = "server_busy"
	CodeTooManyDevices     ErrorCode = "too_many_devices"
	CodeEvicted            ErrorCode = "evicted"
	CodeForbidden          ErrorCode = "forbidden"
	CodeBanned             ErrorCode = "banned"
	CodeKicked             ErrorCode = "kicked"
)

// CodeTable pairs every code with its sentinel; the order is the order in
// which CodeOf tests a wrapped error.
var CodeTable = [...]struct {
	Code ErrorCode
	Err  error
}{
	{CodeBadSignal, ErrBadSignal},
	{CodeBadMessage, ErrBadMessage},
	{CodeUnsupportedVersion, ErrUnsupportedVersion},
	{CodeJoinRequired, ErrJoinRequired},
	{CodeJoinTimeout, ErrJoinTimeout},
	{CodeAlreadyJoined, ErrAlreadyJoined},
	{CodeTokenRequired, ErrTokenRequired},
	{CodeTokenInvalid, ErrTokenInvalid},
	{CodeTokenExpired, ErrTokenExpired},
	{CodeWrongRoom, ErrWrongRoom},
	{CodeTokenMismatch, ErrTokenMismatch},
	{CodeRoomFull, ErrRoomFull},
	{CodeUnknownPeer, ErrUnknownPeer},
	{CodeRateLimited, ErrRateLimited},
	{CodeReplaced, ErrReplaced},
	{CodeServerClosing, ErrServerClosing},
	{CodeIndexTaken, ErrIndexTaken},
	{CodeResumeToken, ErrResumeToken},
	{CodeResumeRoom, ErrResumeRoom},
	{CodeResumeTerm, ErrResumeTerm},
	{CodeRecipientBusy, ErrRecipientBusy},
	{CodeTooManyErrors, ErrTooManyErrors},
	{CodeServerBusy, ErrServerBusy},
	{CodeTooManyDevices, ErrTooManyDevices},
	{CodeEvicted, ErrEvicted},
	{CodeForbidden, ErrForbidden},
	{CodeBanned, ErrBanned}, // before kicked: a ban is a kick too
	{CodeKicked, ErrKicked},
}

// CodeOf maps an error to its wire code; unknown errors are bad messages.
func CodeOf(err error) ErrorCode {
	for _, e := range CodeTable {
		if errors.Is(err, e.Err) {
			return e.Code
		}
	}
	return CodeBadMessage
}

// sentinelOf maps a wire code to its sentinel, or nil for an unknown code.
func sentinelOf(code ErrorCode) error {
	for _, e := range CodeTable {
		if e.Code == code {
			return e.Err
		}
	}
	return nil
}

// Error is an error the server reported: on the client it is both an Event
// (a non-fatal error, such as a signal to an unknown peer) and the error Dial
// returns when a join is rejected. errors.Is(e, ErrRoomFull) and friends work
// through Unwrap.
type Error struct {
	// Code is the machine-readable code.
	Code ErrorCode
	// Message is a human-readable explanation.
	Message string
	// PeerIndex is the peer a rejected signal was addressed to, else 0.
	PeerIndex PeerIndex
	// Signal and Session are the kind and session of the rejected signal ("" and 0 from a server
	// that does not say): a signal refused with recipient_busy was not relayed, and its sender
	// may send it again.
	Signal  SignalKind
	Session uint64
}

// Error implements error.
func (e Error) Error() string {
	if e.Message == "" {
		return "signaling: server error " + string(e.Code)
	}
	return "signaling: server error " + string(e.Code) + ": " + e.Message
}

// Unwrap returns the sentinel for the code, if the code is known.
func (e Error) Unwrap() error { return sentinelOf(e.Code) }
