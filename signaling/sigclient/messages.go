package sigclient

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ProtocolVersion is the value of "v" in every message. A peer that receives
// another version rejects the message with unsupported_version.
const ProtocolVersion = 1

// MsgType is the "type" field of a message.
type MsgType string

// Client to server.
const (
	TypeJoin   MsgType = "join"   // room, user, device, kind, token, optional resume
	TypeSignal MsgType = "signal" // to, payload, optional room
	TypeSynced MsgType = "synced" // no fields
	TypeReport MsgType = "report" // replica
)

// Server to client.
const (
	TypeJoined       MsgType = "joined"        // room, self, peerId, term, host, members, pinnedHosts, resumeToken
	TypeMemberJoined MsgType = "member-joined" // member
	TypeMemberLeft   MsgType = "member-left"   // peerIndex, peerId, reason
	TypeMemberSynced MsgType = "member-synced" // peerIndex, term
	TypeHost         MsgType = "host"          // term, host
	TypeICEServers   MsgType = "ice-servers"   // iceServers: fresh credentials (Config.ICERefresh)
	// typeSignal is also sent to clients: from, to, payload.
	typeError MsgType = "error" // code, message, optional peerIndex
)

// SignalKind says what a signal payload carries.
type SignalKind string

// Signal kinds.
const (
	SignalOffer     SignalKind = "offer"     // SDP offer in SDP
	SignalAnswer    SignalKind = "answer"    // SDP answer in SDP
	SignalCandidate SignalKind = "candidate" // ICE candidate in Candidate
)

// ICECandidate is an ICE candidate in the shape of the browser's
// RTCIceCandidateInit and pion's webrtc.ICECandidateInit (same JSON names).
// An empty Candidate string means "end of candidates".
type ICECandidate struct {
	Candidate        string  `json:"candidate"`
	SDPMid           *string `json:"sdpMid,omitempty"`
	SDPMLineIndex    *uint16 `json:"sdpMLineIndex,omitempty"`
	UsernameFragment *string `json:"usernameFragment,omitempty"`
}

// SignalPayload is what one member relays to another through the server.
type SignalPayload struct {
	// Kind is offer, answer or candidate.
	Kind SignalKind `json:"kind"`
	// SDP is the session description of an offer or answer.
	SDP string `json:"sdp,omitempty"`
	// Candidate is the ICE candidate of a candidate signal.
	Candidate *ICECandidate `json:"candidate,omitempty"`
	// Session is chosen by the offerer and echoed unchanged by the peers; it
	// tells apart successive peer connections between the same two members
	// (for example a primary link and a standby link). The server does not
	// interpret it.
	Session uint64 `json:"session,omitempty"`
}

// Size limits of a signal payload. A data-channel-only SDP is 1–3 KiB and an ICE candidate line
// about 100 bytes; the limits leave room and stop a member from relaying megabytes.
const (
	// MaxSDPLen caps the sdp of an offer or answer, in bytes.
	MaxSDPLen = 16 << 10
	// MaxCandidateLen caps a candidate's candidate string, in bytes.
	MaxCandidateLen = 1 << 10
	// maxICEFieldLen caps sdpMid and usernameFragment.
	maxICEFieldLen = 256
)

// Validate checks the payload rules: offers and answers carry a non-empty SDP
// of at most MaxSDPLen bytes and no candidate; candidates carry a candidate
// (at most MaxCandidateLen bytes, sdpMid and usernameFragment at most 256)
// and no SDP.
func (p *SignalPayload) Validate() error {
	switch p.Kind {
	case SignalOffer, SignalAnswer:
		if p.SDP == "" {
			return fmt.Errorf("%w: %s without sdp", ErrBadSignal, p.Kind)
		}
		if len(p.SDP) > MaxSDPLen {
			return fmt.Errorf("%w: %s sdp is %d bytes, the limit is %d", ErrBadSignal, p.Kind, len(p.SDP), MaxSDPLen)
		}
		if p.Candidate != nil {
			return fmt.Errorf("%w: %s with a candidate", ErrBadSignal, p.Kind)
		}
	case SignalCandidate:
		if p.Candidate == nil {
			return fmt.Errorf("%w: candidate without candidate", ErrBadSignal)
		}
		if p.SDP != "" {
			return fmt.Errorf("%w: candidate with sdp", ErrBadSignal)
		}
		c := p.Candidate
		if len(c.Candidate) > MaxCandidateLen || (c.SDPMid != nil && len(*c.SDPMid) > maxICEFieldLen) ||
			(c.UsernameFragment != nil && len(*c.UsernameFragment) > maxICEFieldLen) {
			return fmt.Errorf("%w: candidate fields over %d bytes (candidate) or %d (sdpMid, usernameFragment)", ErrBadSignal, MaxCandidateLen, maxICEFieldLen)
		}
	default:
		return fmt.Errorf("%w: unknown payload kind %q", ErrBadSignal, p.Kind)
	}
	return nil
}

// maxSafeInt is the largest integer a JavaScript number holds exactly (2^53−1): the bound of
// every number a member reports, so that the inspector shows what was sent.
const maxSafeInt = 1<<53 - 1

// Report is a member's summary of its replica, sent about once a second and
// shown in /api/rooms, so operators can see whether replicas agree.
type Report struct {
	// Term is the host term the member's replica follows.
	Term Term
	// Clock is the replica's Lamport clock.
	Clock uint64
	// Entities is the number of live entities.
	Entities uint64
	// Hash is a digest of the replica state; on the wire it is 16 lowercase
	// hex digits (JSON numbers above 2^53 do not survive JavaScript).
	Hash uint64
	// Link is the candidate types of the selected pair of the member's link
	// to the host; nil on the host itself and before a link is up.
	Link *LinkTypes
	// RTTMicros is the member's round-trip time to the host in microseconds,
	// 0 when unknown.
	RTTMicros uint64
	// Migrations counts the host migrations the member lived through while synced;
	// PauseMicros is how long the latest took, in microseconds (until the new host's snapshot
	// merged).
	Migrations  uint64
	PauseMicros uint64
}

type reportJSON struct {
	Term      Term       `json:"term"`
	Clock     uint64     `json:"clock"`
	Entities  uint64     `json:"entities"`
	Hash      string     `json:"hash"`
	Link      *LinkTypes `json:"link,omitempty"`
	RTTMicros uint64     `json:"rttUs,omitempty"`
	// Migrations and PauseMicros: see Report.
	Migrations  uint64 `json:"migrations,omitempty"`
	PauseMicros uint64 `json:"pauseUs,omitempty"`
}

// MarshalJSON encodes the report with the hash as 16 lowercase hex digits.
func (r Report) MarshalJSON() ([]byte, error) {
	return json.Marshal(reportJSON{Term: r.Term, Clock: r.Clock, Entities: r.Entities, Hash: formatHash(r.Hash), Link: r.Link, RTTMicros: r.RTTMicros, Migrations: r.Migrations, PauseMicros: r.PauseMicros})
}

// UnmarshalJSON decodes a report; the hash must be exactly 16 lowercase hex
// digits.
func (r *Report) UnmarshalJSON(b []byte) error {
	var j reportJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	h, err := parseHash(j.Hash)
	if err != nil {
		return err
	}
	if j.Link != nil {
		if err := j.Link.check(); err != nil {
			return err
		}
	}
	*r = Report{Term: j.Term, Clock: j.Clock, Entities: j.Entities, Hash: h, Link: j.Link, RTTMicros: j.RTTMicros, Migrations: j.Migrations, PauseMicros: j.PauseMicros}
	return nil
}

func formatHash(h uint64) string {
	var b [16]byte
	const digits = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = digits[h&0xf]
		h >>= 4
	}
	return string(b[:])
}

func parseHash(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("%w: hash %q is not 16 hex digits", ErrBadMessage, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, fmt.Errorf("%w: hash %q is not lowercase hex", ErrBadMessage, s)
		}
	}
	return strconv.ParseUint(s, 16, 64)
}

// Member describes one member of a room, as sent in joined and member-joined.
type Member struct {
	// Index is the member's peer index.
	Index PeerIndex `json:"peerIndex"`
	// ID is the member's identity, "user/device".
	ID Identity `json:"peerId"`
	// Kind is browser, bot or host.
	Kind Kind `json:"kind"`
	// Power is the member's power level.
	Power int `json:"power"`
	// MayHost is false when the member's token forbids hosting.
	MayHost bool `json:"mayHost"`
	// Synced is true once the member reported synced or became host.
	Synced bool `json:"synced"`
	// SyncedTerm is the last term in which the server recorded the member synced (its report,
	// its election, or a resume claim the server vouches for; docs/protocol.md §4), 0 if never.
	// A host opens the survivors' correction window only to a member recorded synced in an
	// earlier term than its own (docs/protocol.md §5 "Limits"). Omitted when 0: a client that
	// predates it reads no record, so it opens no window.
	SyncedTerm Term `json:"syncedTerm,omitempty"`
}

// Candidate returns the member as an election candidate; join order is peer
// index order.
func (m Member) Candidate() Candidate {
	return Candidate{Index: m.Index, ID: m.ID, Power: m.Power, JoinOrder: uint64(m.Index), MayHost: m.MayHost, Synced: m.Synced}
}

// LeaveReason says why a member left.
type LeaveReason string

// Leave reasons.
const (
	ReasonLeft     LeaveReason = "left"     // the member closed its socket with a close frame
	ReasonReplaced LeaveReason = "replaced" // a newer connection joined with the same identity
	ReasonTimeout  LeaveReason = "timeout"  // the member stopped answering pings
	ReasonLost     LeaveReason = "lost"     // the socket broke without a close frame
	ReasonDropped  LeaveReason = "dropped"  // the member's send queue overflowed (slow consumer)
	ReasonError    LeaveReason = "error"    // the member broke the protocol (e.g. read limit, too many errors)
	ReasonEvicted  LeaveReason = "evicted"  // unsynced past SyncTimeout, it made room for a join to a full room
	ReasonKicked   LeaveReason = "kicked"   // a moderator removed the member (docs/protocol.md §4 "Signaling: moderation")
	ReasonBanned   LeaveReason = "banned"   // a moderator banned the member's identity from the room
)

// ClientMessage is every message a client sends, flattened: fields that do not
// belong to Type are ignored on decode and left empty on encode.
type ClientMessage struct {
	V    int     `json:"v"`
	Type MsgType `json:"type"`

	// join; Room is also an optional check on signal.
	Room   RoomID `json:"room,omitempty"`
	User   string `json:"user,omitempty"`
	Device string `json:"device,omitempty"`
	Kind   Kind   `json:"kind,omitempty"`
	Token  string `json:"token,omitempty"`
	// Resume is present only when the join reclaims a peer index (docs/protocol.md §5
	// "Resume"); clients older than resume never send it.
	Resume *Resume `json:"resume,omitempty"`
	// Batch says the client reads several server messages from one websocket message, separated
	// by '\n' (docs/protocol.md §4 "Batched messages"); a client that does not say so gets one
	// message per websocket message.
	Batch bool `json:"batch,omitempty"`
	// NoHost declines hosting (JoinOptions.NoHost): it only ever narrows what the token allows.
	NoHost bool `json:"noHost,omitempty"`

	// signal
	To      PeerIndex      `json:"to,omitempty"`
	Payload *SignalPayload `json:"payload,omitempty"`

	// report
	Replica *Report `json:"replica,omitempty"`
}

// DecodeClientMessage decodes and validates one client message into dst,
// overwriting every field. It never panics; errors wrap ErrBadMessage,
// ErrUnsupportedVersion or ErrBadSignal.
func DecodeClientMessage(b []byte, dst *ClientMessage) error {
	*dst = ClientMessage{}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if dst.V != ProtocolVersion {
		return fmt.Errorf("%w: v=%d, this server speaks v=%d", ErrUnsupportedVersion, dst.V, ProtocolVersion)
	}
	switch dst.Type {
	case TypeJoin:
		if err := CheckRoom(dst.Room); err != nil {
			return err
		}
		if dst.User != "" {
			if err := CheckUser(dst.User); err != nil {
				return err
			}
		}
		if err := CheckDevice(dst.Device); err != nil {
			return err
		}
		if dst.Kind != "" && !dst.Kind.Valid() {
			return fmt.Errorf("%w: unknown kind %q", ErrBadMessage, dst.Kind)
		}
		if len(dst.Token) > MaxTokenLen {
			return fmt.Errorf("%w: token is %d bytes, the limit is %d", ErrBadMessage, len(dst.Token), MaxTokenLen)
		}
		if dst.Resume != nil {
			if err := dst.Resume.check(); err != nil {
				return err
			}
		}
	case TypeSignal:
		if dst.To == 0 {
			return fmt.Errorf("%w: signal without \"to\"", ErrBadSignal)
		}
		if dst.Payload == nil {
			return fmt.Errorf("%w: signal without payload", ErrBadSignal)
		}
		if err := dst.Payload.Validate(); err != nil {
			return err
		}
		if dst.Room != "" {
			if err := CheckRoom(dst.Room); err != nil {
				return err
			}
		}
	case TypeSynced:
	case TypeReport:
		if dst.Replica == nil {
			return fmt.Errorf("%w: report without replica", ErrBadMessage)
		}
		if r := dst.Replica; r.Term > MaxTerm || r.Clock > maxSafeInt || r.Entities > maxSafeInt {
			return fmt.Errorf("%w: report numbers above %d (term %d, clock %d, entities %d)", ErrBadMessage, maxSafeInt, r.Term, r.Clock, r.Entities)
		}
	default:
		return fmt.Errorf("%w: unknown message type %q", ErrBadMessage, dst.Type)
	}
	return nil
}

// Server-to-client messages, one struct per type so that every field is
// always present.

type JoinedMsg struct {
	V       int        `json:"v"`
	Type    MsgType    `json:"type"`
	Room    RoomID     `json:"room"`
	Self    PeerIndex  `json:"self"`
	PeerID  Identity   `json:"peerId"`
	Term    Term       `json:"term"`
	Host    PeerIndex  `json:"host"`
	Members []Member   `json:"members"`
	Pinned  []Identity `json:"pinnedHosts"`
	// ResumeToken lets the member reclaim Self after losing its connection; empty on an open
	// server, where resume claims are trusted.
	ResumeToken string `json:"resumeToken,omitempty"`
	// ICEServers are the STUN/TURN servers (with this member's credentials) for its peer
	// connections; omitted when the server hands out none.
	ICEServers []ICEServer `json:"iceServers,omitempty"`
}

type MemberJoinedMsg struct {
	V      int     `json:"v"`
	Type   MsgType `json:"type"`
	Member Member  `json:"member"`
}

type MemberLeftMsg struct {
	V         int         `json:"v"`
	Type      MsgType     `json:"type"`
	PeerIndex PeerIndex   `json:"peerIndex"`
	PeerID    Identity    `json:"peerId"`
	Reason    LeaveReason `json:"reason"`
}

type MemberSyncedMsg struct {
	V         int       `json:"v"`
	Type      MsgType   `json:"type"`
	PeerIndex PeerIndex `json:"peerIndex"`
	// Term is the term the server recorded the member synced in (Member.SyncedTerm).
	Term Term `json:"term,omitempty"`
}

type HostMsg struct {
	V    int       `json:"v"`
	Type MsgType   `json:"type"`
	Term Term      `json:"term"`
	Host PeerIndex `json:"host"`
	// ResumeToken is the member's resume token for the new term; empty on an open server.
	ResumeToken string `json:"resumeToken,omitempty"`
}

type SignalMsg struct {
	V       int           `json:"v"`
	Type    MsgType       `json:"type"`
	From    PeerIndex     `json:"from"`
	To      PeerIndex     `json:"to"`
	Payload SignalPayload `json:"payload"`
}

type errorMsg struct {
	V         int       `json:"v"`
	Type      MsgType   `json:"type"`
	Code      ErrorCode `json:"code"`
	Message   string    `json:"message"`
	PeerIndex PeerIndex `json:"peerIndex,omitempty"`
	// Signal and Session name the refused signal (its kind and session), so that its sender
	// can send it again (docs/protocol.md §4 "Signal budgets").
	Signal  SignalKind `json:"signal,omitempty"`
	Session uint64     `json:"session,omitempty"`
}

// MustMarshal encodes a server message. The structs above hold no values
// json cannot encode, so a failure is a bug in this package.
func MustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("signaling: encoding a server message: " + err.Error())
	}
	return b
}

func EncodeError(err error, peer PeerIndex) []byte {
	return MustMarshal(errorMsg{V: ProtocolVersion, Type: typeError, Code: CodeOf(err), Message: err.Error(), PeerIndex: peer})
}

// EncodeSignalError encodes the refusal of a signal to peer: its kind and session go with it.
func EncodeSignalError(err error, peer PeerIndex, kind SignalKind, session uint64) []byte {
	return MustMarshal(errorMsg{V: ProtocolVersion, Type: typeError, Code: CodeOf(err), Message: err.Error(), PeerIndex: peer, Signal: kind, Session: session})
}

// ServerMessage is every message a server sends, flattened, as the client
// decodes it.
type ServerMessage struct {
	V    int     `json:"v"`
	Type MsgType `json:"type"`

	Room    RoomID      `json:"room"`
	Self    PeerIndex   `json:"self"`
	PeerID  Identity    `json:"peerId"`
	Term    Term        `json:"term"`
	Host    PeerIndex   `json:"host"`
	Members []Member    `json:"members"`
	Pinned  []Identity  `json:"pinnedHosts"`
	Resume  string      `json:"resumeToken"`
	ICE     []ICEServer `json:"iceServers"`

	Member    *Member     `json:"member"`
	PeerIndex PeerIndex   `json:"peerIndex"`
	Reason    LeaveReason `json:"reason"`

	From    PeerIndex      `json:"from"`
	To      PeerIndex      `json:"to"`
	Payload *SignalPayload `json:"payload"`

	Code    ErrorCode  `json:"code"`
	Message string     `json:"message"`
	Signal  SignalKind `json:"signal"`
	Session uint64     `json:"session"`
}

// DecodeServerMessage decodes one server message into dst, overwriting every
// field, and converts it to an Event. It returns a nil Event for message types
// it does not know (a newer server may add some). It never panics.
func DecodeServerMessage(b []byte, dst *ServerMessage) (Event, error) {
	if ev, ok := decodeNotice(b, dst); ok {
		return ev, nil // a burst's membership notices, without reflection (fastdecode.go)
	}
	return decodeServerJSON(b, dst)
}

// decodeServerJSON is DecodeServerMessage through encoding/json, for every message.
func decodeServerJSON(b []byte, dst *ServerMessage) (Event, error) {
	*dst = ServerMessage{}
	if err := json.Unmarshal(b, dst); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if dst.V != ProtocolVersion {
		return nil, fmt.Errorf("%w: v=%d, this client speaks v=%d", ErrUnsupportedVersion, dst.V, ProtocolVersion)
	}
	switch dst.Type {
	case TypeJoined:
		if dst.Self == 0 {
			return nil, fmt.Errorf("%w: joined without self", ErrBadMessage)
		}
		if err := checkICEServers(dst.ICE); err != nil {
			return nil, err
		}
		return Joined{Room: dst.Room, Self: dst.Self, PeerID: dst.PeerID, Term: dst.Term, Host: dst.Host, Members: dst.Members, PinnedHosts: dst.Pinned, ResumeToken: dst.Resume, ICEServers: dst.ICE}, nil
	case TypeMemberJoined:
		if dst.Member == nil || dst.Member.Index == 0 {
			return nil, fmt.Errorf("%w: member-joined without member", ErrBadMessage)
		}
		return MemberJoined{Member: *dst.Member}, nil
	case TypeMemberLeft:
		if dst.PeerIndex == 0 {
			return nil, fmt.Errorf("%w: member-left without peerIndex", ErrBadMessage)
		}
		return MemberLeft{Index: dst.PeerIndex, PeerID: dst.PeerID, Reason: dst.Reason}, nil
	case TypeMemberSynced:
		if dst.PeerIndex == 0 {
			return nil, fmt.Errorf("%w: member-synced without peerIndex", ErrBadMessage)
		}
		return MemberSynced{Index: dst.PeerIndex, Term: dst.Term}, nil
	case TypeHost:
		return HostChanged{Term: dst.Term, Host: dst.Host, ResumeToken: dst.Resume}, nil
	case TypeICEServers:
		if err := checkICEServers(dst.ICE); err != nil {
			return nil, err
		}
		return ICEServersUpdated{ICEServers: dst.ICE}, nil
	case TypeSignal:
		if dst.From == 0 || dst.Payload == nil {
			return nil, fmt.Errorf("%w: signal without from or payload", ErrBadMessage)
		}
		if err := dst.Payload.Validate(); err != nil {
			return nil, err
		}
		return Signal{From: dst.From, Payload: *dst.Payload}, nil
	case typeError:
		return Error{Code: dst.Code, Message: dst.Message, PeerIndex: dst.PeerIndex, Signal: dst.Signal, Session: dst.Session}, nil
	}
	return nil, nil
}
