package cluster

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/concordrtc/concord/signaling"
)

// The messages between nodes (docs/protocol.md §7 "Messages between nodes"). Two planes, two
// codecs, as in the rest of Concord:
//
//   - Relay frames (the data plane: every message of every relayed member) are binary,
//     AppendFrame/ConsumeFrame, one kind byte and a payload, like netmsg's frames. They carry
//     the member's protocol messages unchanged, so they need no version of their own.
//   - Control messages (open request and reply, rooms reply, presence: a few a second) are JSON
//     with a version field "v", like the signaling protocol (docs/protocol.md §4): readable in a
//     `nats sub` and extensible by field. A node refuses another version (ErrVersion, reply
//     code "version"): the nodes of one cluster run one node protocol version.
//
// Every decoder bounds what it reads before it allocates and never panics (FuzzConsumeFrame,
// FuzzDecodeControl); a refused message is dropped and counted.

// Version is the node protocol version of the control messages.
const Version = 1

// Kind is a relay frame's first byte.
type Kind byte

// Relay frame kinds. The payload follows the kind byte, up to the end of the NATS message.
const (
	// KindText: a text message of the member or the owner; payload: the message (the
	// protocol's JSON, batched or not), bounded by the owner's read limit.
	KindText Kind = 'T'
	// KindBinary: a binary message of the member, which the owner refuses; no payload.
	KindBinary Kind = 'B'
	// KindPing: a websocket ping; payload: its application data, at most 125 bytes.
	KindPing Kind = 'P'
	// KindPong: a websocket pong; payload: its application data, at most 125 bytes.
	KindPong Kind = 'O'
	// KindClose: a close frame; payload: empty (1006, the socket was lost) or a 2-byte
	// big-endian close code and a reason, at most 125 bytes in all (RFC 6455 §5.5.1).
	KindClose Kind = 'C'
	// KindHeartbeat: the side is alive; no payload. Never reaches the websocket.
	KindHeartbeat Kind = 'H'
)

// maxControlPayload bounds a ping, pong or close payload (RFC 6455 §5.5).
const maxControlPayload = 125

func (k Kind) String() string {
	switch k {
	case KindText:
		return "text"
	case KindBinary:
		return "binary"
	case KindPing:
		return "ping"
	case KindPong:
		return "pong"
	case KindClose:
		return "close"
	case KindHeartbeat:
		return "heartbeat"
	}
	return fmt.Sprintf("kind(%#02x)", byte(k))
}

// Frame is one relay frame: a member's websocket frame or a heartbeat.
type Frame struct {
	Kind Kind
	Data []byte
}

// SizeFrame is the length of f on the wire.
func SizeFrame(f Frame) int { return 1 + len(f.Data) }

// AppendFrame appends f to dst.
func AppendFrame(dst []byte, f Frame) []byte {
	dst = append(dst, byte(f.Kind))
	return append(dst, f.Data...)
}

// ConsumeFrame decodes b, one whole NATS message, as a frame. Data aliases b: it is valid until b
// is reused. Errors wrap ErrShortFrame, ErrUnknownKind or ErrFrameTooLong.
func ConsumeFrame(b []byte) (Frame, error) {
	if len(b) == 0 {
		return Frame{}, ErrShortFrame
	}
	f := Frame{Kind: Kind(b[0]), Data: b[1:]}
	switch f.Kind {
	case KindText:
	case KindBinary, KindHeartbeat:
		if len(f.Data) > 0 {
			return Frame{}, fmt.Errorf("%w: %s frame with %d bytes", ErrFrameTooLong, f.Kind, len(f.Data))
		}
	case KindPing, KindPong, KindClose:
		if len(f.Data) > maxControlPayload {
			return Frame{}, fmt.Errorf("%w: %s frame with %d bytes, the limit is %d", ErrFrameTooLong, f.Kind, len(f.Data), maxControlPayload)
		}
		if f.Kind == KindClose && len(f.Data) == 1 {
			return Frame{}, fmt.Errorf("%w: close frame with a 1-byte code", ErrShortFrame)
		}
	default:
		return Frame{}, fmt.Errorf("%w: %#02x", ErrUnknownKind, b[0])
	}
	return f, nil
}

// wireKind is the relay frame kind of a member's frame kind (false for none).
func wireKind(k signaling.FrameKind) (Kind, bool) {
	switch k {
	case signaling.FrameText:
		return KindText, true
	case signaling.FrameBinary:
		return KindBinary, true
	case signaling.FramePing:
		return KindPing, true
	case signaling.FramePong:
		return KindPong, true
	case signaling.FrameClose:
		return KindClose, true
	}
	return 0, false
}

// memberKind is the member's frame kind of a relay frame kind (false for a heartbeat).
func memberKind(k Kind) (signaling.FrameKind, bool) {
	switch k {
	case KindText:
		return signaling.FrameText, true
	case KindBinary:
		return signaling.FrameBinary, true
	case KindPing:
		return signaling.FramePing, true
	case KindPong:
		return signaling.FramePong, true
	case KindClose:
		return signaling.FrameClose, true
	case KindHeartbeat:
	}
	return 0, false
}

// closeLost is the close payload of a lost socket: 1006 (RFC 6455 §7.4.1).
var closeLost = binary.BigEndian.AppendUint16(nil, 1006)

// fromSignaling is the relay frame of a member's frame. A close frame without its payload's
// code goes as a lost socket (empty payload); data of a binary frame does not travel.
func fromSignaling(f signaling.Frame) (Frame, bool) {
	k, ok := wireKind(f.Kind)
	switch {
	case !ok:
		return Frame{}, false
	case k == KindBinary, k == KindClose && len(f.Data) < 2:
		return Frame{Kind: k}, true
	case k != KindText && len(f.Data) > maxControlPayload:
		f.Data = f.Data[:maxControlPayload] // gorilla refuses to send longer ones anyway
	}
	return Frame{Kind: k, Data: f.Data}, true
}

// toSignaling is the member's frame of a relay frame (false for a heartbeat). An empty close
// payload is a lost socket: 1006.
func toSignaling(f Frame) (signaling.Frame, bool) {
	k, ok := memberKind(f.Kind)
	switch {
	case !ok:
		return signaling.Frame{}, false
	case k == signaling.FrameClose && len(f.Data) == 0:
		return signaling.Frame{Kind: k, Data: closeLost}, true
	}
	return signaling.Frame{Kind: k, Data: f.Data}, true
}

// Bounds of the control messages.
const (
	maxOpenRequest = 4 << 10  // bytes of an open request
	maxOpenReply   = 8 << 10  // bytes of an open reply (a reason of maxReason bytes, escaped)
	maxRoomsReply  = 1 << 20  // bytes of a rooms reply: NATS's default max_payload
	maxAlive       = 2 << 10  // bytes of a presence message (a name of maxNodeName bytes, escaped)
	maxRelayID     = 64       // characters of a relay id (26 from rand.Text)
	maxNodeName    = 256      // bytes of a node name
	maxRoomName    = 128      // bytes of a room name (signaling's bound)
	maxReason      = 1 << 10  // bytes of an open reply's reason
	maxRooms       = 64 << 10 // rooms in a rooms reply
)

// OpenRequest asks the owner of Room to serve a relayed member (subject concord.node.NAME.open).
// ID names the relay's subjects (concord.relay.ID.up/down): letters and digits only, so that it is
// one subject token and never a wildcard.
type OpenRequest struct {
	V    int              `json:"v"`
	ID   string           `json:"id"`
	Room signaling.RoomID `json:"room"`
	Edge string           `json:"edge"` // the node that accepted the websocket
}

// OpenReply answers an OpenRequest: the empty Code accepts, any other refuses (OpenError).
type OpenReply struct {
	V      int      `json:"v"`
	Code   OpenCode `json:"code,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// RoomsReply answers a rooms request (subject concord.node.NAME.rooms): the node's rooms.
type RoomsReply struct {
	V     int                  `json:"v"`
	Rooms []signaling.RoomInfo `json:"rooms"`
}

// Alive is a node's presence (subject concord.nodes.alive, every HeartbeatInterval).
type Alive struct {
	V    int    `json:"v"`
	Node string `json:"node"`
}

// encode is the JSON of a control message; they have no values json.Marshal refuses.
func encode(m any) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic("cluster: " + err.Error()) // a bug: the message types are plain data
	}
	return b
}

// decode reads a control message of at most limit bytes into m and checks its version.
func decode(b []byte, limit int, what string, m any, v *int) error {
	if len(b) > limit {
		return fmt.Errorf("%w: %s of %d bytes, the limit is %d", ErrBadMessage, what, len(b), limit)
	}
	if err := json.Unmarshal(b, m); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadMessage, what, err)
	}
	if *v != Version {
		return fmt.Errorf("%w: %s of version %d, this node speaks %d", ErrVersion, what, *v, Version)
	}
	return nil
}

// DecodeOpenRequest decodes and checks an open request.
func DecodeOpenRequest(b []byte) (OpenRequest, error) {
	var m OpenRequest
	if err := decode(b, maxOpenRequest, "open request", &m, &m.V); err != nil {
		return OpenRequest{}, err
	}
	if err := checkRelayID(m.ID); err != nil {
		return OpenRequest{}, err
	}
	if err := checkName("room", string(m.Room), maxRoomName); err != nil {
		return OpenRequest{}, err
	}
	if err := checkName("edge", m.Edge, maxNodeName); err != nil {
		return OpenRequest{}, err
	}
	return m, nil
}

// refusal is the reply that refuses an open request with code, its reason cut to maxReason bytes.
func refusal(code OpenCode, reason string) OpenReply {
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "")
	}
	return OpenReply{V: Version, Code: code, Reason: reason}
}

// DecodeOpenReply decodes an open reply.
func DecodeOpenReply(b []byte) (OpenReply, error) {
	var m OpenReply
	if err := decode(b, maxOpenReply, "open reply", &m, &m.V); err != nil {
		return OpenReply{}, err
	}
	if len(m.Code) > 64 || len(m.Reason) > maxReason {
		return OpenReply{}, fmt.Errorf("%w: open reply code or reason too long", ErrBadMessage)
	}
	return m, nil
}

// DecodeRoomsReply decodes a rooms reply.
func DecodeRoomsReply(b []byte) (RoomsReply, error) {
	var m RoomsReply
	if err := decode(b, maxRoomsReply, "rooms reply", &m, &m.V); err != nil {
		return RoomsReply{}, err
	}
	if len(m.Rooms) > maxRooms {
		return RoomsReply{}, fmt.Errorf("%w: rooms reply of %d rooms, the limit is %d", ErrBadMessage, len(m.Rooms), maxRooms)
	}
	for _, r := range m.Rooms {
		if err := checkName("room", string(r.Room), maxRoomName); err != nil {
			return RoomsReply{}, err
		}
	}
	return m, nil
}

// DecodeAlive decodes a presence message.
func DecodeAlive(b []byte) (Alive, error) {
	var m Alive
	if err := decode(b, maxAlive, "presence", &m, &m.V); err != nil {
		return Alive{}, err
	}
	if err := checkName("node", m.Node, maxNodeName); err != nil {
		return Alive{}, err
	}
	return m, nil
}

// checkRelayID accepts 1 to maxRelayID ASCII letters and digits.
func checkRelayID(id string) error {
	if id == "" || len(id) > maxRelayID {
		return fmt.Errorf("%w: relay id of %d bytes", ErrBadMessage, len(id))
	}
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("%w: relay id %q: only letters and digits", ErrBadMessage, id)
		}
	}
	return nil
}

// checkName accepts a room or node name: 1 to limit bytes of UTF-8 without control characters,
// spaces or NATS wildcards ('*', '>').
func checkName(what, s string, limit int) error {
	if s == "" || len(s) > limit {
		return fmt.Errorf("%w: %s of %d bytes, the limit is %d", ErrBadMessage, what, len(s), limit)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not UTF-8", ErrBadMessage, what)
	}
	if what != "room" && strings.ContainsAny(s, " *>") {
		return fmt.Errorf("%w: %s %q holds a space or a NATS wildcard", ErrBadMessage, what, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%w: %s holds a control character", ErrBadMessage, what)
		}
	}
	return nil
}
