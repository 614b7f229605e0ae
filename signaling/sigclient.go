package signaling

// The Go client and the wire messages it shares with the server live in package sigclient,
// which imports neither Prometheus nor JWT, so that a peer (package peer) links the client
// without the server. The names below keep the client's API reachable as signaling.X, and
// give the server's files the wire helpers under their old unexported names.

import (
	"context"

	"github.com/concordrtc/concord/signaling/sigclient"
)

type (
	JoinOptions       = sigclient.JoinOptions
	ClientConfig      = sigclient.ClientConfig
	Client            = sigclient.Client
	Candidate         = sigclient.Candidate
	ErrorCode         = sigclient.ErrorCode
	Error             = sigclient.Error
	Event             = sigclient.Event
	Joined            = sigclient.Joined
	MemberJoined      = sigclient.MemberJoined
	MemberLeft        = sigclient.MemberLeft
	MemberSynced      = sigclient.MemberSynced
	HostChanged       = sigclient.HostChanged
	ICEServersUpdated = sigclient.ICEServersUpdated
	Signal            = sigclient.Signal
	Closed            = sigclient.Closed
	ICEServer         = sigclient.ICEServer
	ICEServersFunc    = sigclient.ICEServersFunc
	LinkTypes         = sigclient.LinkTypes
	PeerIndex         = sigclient.PeerIndex
	Term              = sigclient.Term
	RoomID            = sigclient.RoomID
	Identity          = sigclient.Identity
	Kind              = sigclient.Kind
	SignalKind        = sigclient.SignalKind
	ICECandidate      = sigclient.ICECandidate
	SignalPayload     = sigclient.SignalPayload
	Report            = sigclient.Report
	Member            = sigclient.Member
	LeaveReason       = sigclient.LeaveReason
	Resume            = sigclient.Resume
)

const (
	MaxServers             = sigclient.MaxServers
	CodeBadMessage         = sigclient.CodeBadMessage
	CodeUnsupportedVersion = sigclient.CodeUnsupportedVersion
	CodeJoinRequired       = sigclient.CodeJoinRequired
	CodeJoinTimeout        = sigclient.CodeJoinTimeout
	CodeAlreadyJoined      = sigclient.CodeAlreadyJoined
	CodeTokenRequired      = sigclient.CodeTokenRequired
	CodeTokenInvalid       = sigclient.CodeTokenInvalid
	CodeTokenExpired       = sigclient.CodeTokenExpired
	CodeWrongRoom          = sigclient.CodeWrongRoom
	CodeTokenMismatch      = sigclient.CodeTokenMismatch
	CodeRoomFull           = sigclient.CodeRoomFull
	CodeUnknownPeer        = sigclient.CodeUnknownPeer
	CodeBadSignal          = sigclient.CodeBadSignal
	CodeRateLimited        = sigclient.CodeRateLimited
	CodeReplaced           = sigclient.CodeReplaced
	CodeServerClosing      = sigclient.CodeServerClosing
	CodeIndexTaken         = sigclient.CodeIndexTaken
	CodeResumeToken        = sigclient.CodeResumeToken
	CodeResumeRoom         = sigclient.CodeResumeRoom
	CodeResumeTerm         = sigclient.CodeResumeTerm
	CodeRecipientBusy      = sigclient.CodeRecipientBusy
	CodeTooManyErrors      = sigclient.CodeTooManyErrors
	CodeServerBusy         = sigclient.CodeServerBusy
	CodeTooManyDevices     = sigclient.CodeTooManyDevices
	CodeEvicted            = sigclient.CodeEvicted
	CodeForbidden          = sigclient.CodeForbidden
	CodeBanned             = sigclient.CodeBanned
	CodeKicked             = sigclient.CodeKicked
	CandidateHost          = sigclient.CandidateHost
	CandidateSrflx         = sigclient.CandidateSrflx
	CandidatePrflx         = sigclient.CandidatePrflx
	CandidateRelay         = sigclient.CandidateRelay
	KindBrowser            = sigclient.KindBrowser
	KindBot                = sigclient.KindBot
	KindHost               = sigclient.KindHost
	ProtocolVersion        = sigclient.ProtocolVersion
	SignalOffer            = sigclient.SignalOffer
	SignalAnswer           = sigclient.SignalAnswer
	SignalCandidate        = sigclient.SignalCandidate
	MaxSDPLen              = sigclient.MaxSDPLen
	MaxCandidateLen        = sigclient.MaxCandidateLen
	ReasonLeft             = sigclient.ReasonLeft
	ReasonReplaced         = sigclient.ReasonReplaced
	ReasonTimeout          = sigclient.ReasonTimeout
	ReasonLost             = sigclient.ReasonLost
	ReasonDropped          = sigclient.ReasonDropped
	ReasonError            = sigclient.ReasonError
	ReasonEvicted          = sigclient.ReasonEvicted
	ReasonKicked           = sigclient.ReasonKicked
	ReasonBanned           = sigclient.ReasonBanned
	MaxTerm                = sigclient.MaxTerm
	MaxTermSkew            = sigclient.MaxTermSkew
)

var (
	ErrBadMessage         = sigclient.ErrBadMessage
	ErrUnsupportedVersion = sigclient.ErrUnsupportedVersion
	ErrJoinRequired       = sigclient.ErrJoinRequired
	ErrJoinTimeout        = sigclient.ErrJoinTimeout
	ErrAlreadyJoined      = sigclient.ErrAlreadyJoined
	ErrTokenRequired      = sigclient.ErrTokenRequired
	ErrTokenInvalid       = sigclient.ErrTokenInvalid
	ErrTokenExpired       = sigclient.ErrTokenExpired
	ErrWrongRoom          = sigclient.ErrWrongRoom
	ErrTokenMismatch      = sigclient.ErrTokenMismatch
	ErrRoomFull           = sigclient.ErrRoomFull
	ErrUnknownPeer        = sigclient.ErrUnknownPeer
	ErrRateLimited        = sigclient.ErrRateLimited
	ErrBadSignal          = sigclient.ErrBadSignal
	ErrReplaced           = sigclient.ErrReplaced
	ErrServerClosing      = sigclient.ErrServerClosing
	ErrResumeRefused      = sigclient.ErrResumeRefused
	ErrIndexTaken         = sigclient.ErrIndexTaken
	ErrResumeToken        = sigclient.ErrResumeToken
	ErrResumeRoom         = sigclient.ErrResumeRoom
	ErrResumeTerm         = sigclient.ErrResumeTerm
	ErrResumeIgnored      = sigclient.ErrResumeIgnored
	ErrRecipientBusy      = sigclient.ErrRecipientBusy
	ErrTooManyErrors      = sigclient.ErrTooManyErrors
	ErrServerBusy         = sigclient.ErrServerBusy
	ErrTooManyDevices     = sigclient.ErrTooManyDevices
	ErrEvicted            = sigclient.ErrEvicted
	ErrForbidden          = sigclient.ErrForbidden
	ErrKicked             = sigclient.ErrKicked
	ErrBanned             = sigclient.ErrBanned
	ErrServerClosed       = sigclient.ErrServerClosed
	ErrClosed             = sigclient.ErrClosed
	ErrSendQueueFull      = sigclient.ErrSendQueueFull
	ErrDisconnected       = sigclient.ErrDisconnected
	ErrEventOverflow      = sigclient.ErrEventOverflow
	ErrNoSecret           = sigclient.ErrNoSecret
	ErrNoExpiry           = sigclient.ErrNoExpiry
)

// Dial is sigclient.Dial.
func Dial(ctx context.Context, serverURL string, opts JoinOptions, cfg ClientConfig) (*Client, error) {
	return sigclient.Dial(ctx, serverURL, opts, cfg)
}

// ParseServers is sigclient.ParseServers.
func ParseServers(list string) ([]string, error) {
	return sigclient.ParseServers(list)
}

// Elect is sigclient.Elect.
func Elect(members []Candidate, pinned []Identity) (PeerIndex, bool) {
	return sigclient.Elect(members, pinned)
}

// Preempts is sigclient.Preempts.
func Preempts(winner, cur Candidate, pinned []Identity) bool {
	return sigclient.Preempts(winner, cur, pinned)
}

// NewIdentity is sigclient.NewIdentity.
func NewIdentity(user, device string) Identity {
	return sigclient.NewIdentity(user, device)
}

// The server's names for sigclient's wire helpers.

type (
	msgType         = sigclient.MsgType
	clientMessage   = sigclient.ClientMessage
	joinedMsg       = sigclient.JoinedMsg
	memberJoinedMsg = sigclient.MemberJoinedMsg
	memberLeftMsg   = sigclient.MemberLeftMsg
	memberSyncedMsg = sigclient.MemberSyncedMsg
	hostMsg         = sigclient.HostMsg
	signalMsg       = sigclient.SignalMsg
)

const (
	maxDeviceLen       = sigclient.MaxDeviceLen
	maxTokenLen        = sigclient.MaxTokenLen
	serverDevicePrefix = sigclient.ServerDevicePrefix
	typeJoin           = sigclient.TypeJoin
	typeSignal         = sigclient.TypeSignal
	typeSynced         = sigclient.TypeSynced
	typeReport         = sigclient.TypeReport
	typeJoined         = sigclient.TypeJoined
	typeMemberJoined   = sigclient.TypeMemberJoined
	typeMemberLeft     = sigclient.TypeMemberLeft
	typeMemberSynced   = sigclient.TypeMemberSynced
	typeHost           = sigclient.TypeHost
	typeICEServers     = sigclient.TypeICEServers
)

var ()

func codeOf(err error) ErrorCode {
	return sigclient.CodeOf(err)
}

func checkName(what, s string, max int, noSlash bool) error {
	return sigclient.CheckName(what, s, max, noSlash)
}

func checkRoom(room RoomID) error {
	return sigclient.CheckRoom(room)
}

func checkUser(user string) error {
	return sigclient.CheckUser(user)
}

func checkDevice(device string) error {
	return sigclient.CheckDevice(device)
}

func decodeClientMessage(b []byte, dst *clientMessage) error {
	return sigclient.DecodeClientMessage(b, dst)
}

func mustMarshal(v any) []byte {
	return sigclient.MustMarshal(v)
}

func encodeError(err error, peer PeerIndex) []byte {
	return sigclient.EncodeError(err, peer)
}

func encodeSignalError(err error, peer PeerIndex, kind SignalKind, session uint64) []byte {
	return sigclient.EncodeSignalError(err, peer, kind, session)
}

// iceServers returns the ICE servers of a joining member; nil without Config.ICEServers.
func (h *hub) iceServers(room RoomID, id Identity) []ICEServer {
	if h.cfg.ICEServers == nil {
		return nil
	}
	return h.cfg.ICEServers(room, id)
}

// codeTable is sigclient.CodeTable under the server's field names.
var codeTable = func() (t [len(sigclient.CodeTable)]struct {
	code ErrorCode
	err  error
}) {
	for i, e := range sigclient.CodeTable {
		t[i].code, t[i].err = e.Code, e.Err
	}
	return t
}()
