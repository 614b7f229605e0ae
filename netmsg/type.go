package netmsg

import "strconv"

// Type is the first byte of every message. 0–5 are the TRNP messages,
// 6–127 Concord's extensions and 128–255 application messages. Every type
// from 6 up shares the extension frame (type u8 | bodyLength u32 | body), so
// a receiver can step over a type it does not know.
type Type uint8

// TRNP messages. Layouts are little-endian; the structs they reference
// (PeerInfo, Spawn, …) are documented on their Go types.
const (
	// TypeHostSnapshot is HostSnapshot, reliable, host → peer:
	//	type u8 | hostTime u64 | localPeerIndex u64 | hostPeerIndex u64 |
	//	peerCount u32 | PeerInfo* | entityCount u32 | Spawn* |
	//	hostStateByteLength u32 | hostState
	TypeHostSnapshot Type = 0

	// TypePeerEntered is PeerEntered, reliable, host → peers:
	//	type u8 | PeerInfo
	TypePeerEntered Type = 1

	// TypePeerExited is PeerExited, reliable, host → peers:
	//	type u8 | peerIndex u64
	TypePeerExited Type = 2

	// TypeHostCommands is HostCommands, reliable, host → peers:
	//	type u8 | spawnCount u32 | Spawn* | despawnCount u32 | Despawn* |
	//	authorityTransferCount u32 | AuthorityTransfer* |
	//	rpcCount u32 | RPC* | actionCount u32 | Action*
	TypeHostCommands Type = 3

	// TypePeerCommands is PeerCommands, reliable, peer → host:
	//	type u8 | rpcCount u32 | RPC*
	TypePeerCommands Type = 4

	// TypeEntityUpdates is EntityUpdates, unreliable, either direction:
	//	type u8 | time u64 | updateCount u32 | Update*
	TypeEntityUpdates Type = 5
)

// Concord extensions. Each is framed as
//
//	type u8 | bodyLength u32 | body[bodyLength]
//
// and the layouts below are of the body.
const (
	// TypeFragment is Fragment, reliable:
	//	messageId u32 | totalLength u32 | offset u32 | chunk (rest of body)
	TypeFragment Type = 6

	// TypeCrdtBatch is CrdtBatch, reliable:
	//	term u64 | ADR-117 message stream (rest of body)
	TypeCrdtBatch Type = 7

	// TypePing is Ping, either channel:
	//	nonce u64 | sendTime u64
	TypePing Type = 8

	// TypePong is Pong, either channel:
	//	nonce u64 | echoTime u64
	TypePong Type = 9

	// TypeClose is Close, reliable:
	//	code u16 | reasonLength u16 | reason (UTF-8, ≤ MaxCloseReason bytes)
	TypeClose Type = 10

	// TypeHello is Hello, reliable, the first message on a fresh link:
	//	term u64 | peerIndex u64 | schemaFingerprint u64
	TypeHello Type = 11

	// TypeStamp is Stamp, reliable, placed before a HostCommands in the same
	// payload: the Lamport time of the spawns and authority transfers it
	// carries (TRNP's HostCommands has no time):
	//	time u64
	TypeStamp Type = 12

	// TypeDigest is Digest, reliable, member → host: per-bucket digests of the
	// member's replica (bucket = entity number % bucketCount). The host answers
	// with a HostSnapshot of the buckets that differ:
	//	term u64 | clock u32 | bucketCount u16 | digests [bucketCount]u64
	TypeDigest Type = 13

	// TypeRelay is Relay, either channel: an application message relayed by
	// the host between members. Peer is the destination (0: every member)
	// from a member, the sender from the host:
	//	peer u64 | appType u8 (128–255) | data (rest of body)
	TypeRelay Type = 14

	// TypeActions is Actions, reliable, member → host: the member's TRNP
	// Actions (TRNP's PeerCommands carries RPCs only):
	//	actionCount u32 | Action*
	TypeActions Type = 15

	// TypeForget is Forget, reliable, host → member: entities that left the
	// member's interest, to drop without deleting them:
	//	count u32 | networkId u64 * count
	TypeForget Type = 16

	// TypePackedUpdates is PackedUpdates, unreliable, either direction:
	// EntityUpdates with varints (packed.go):
	//	time uvarint | (networkId uvarint | lengthAndWidth uvarint | mask | data)*
	TypePackedUpdates Type = 17

	// TypeDeltaUpdates is DeltaUpdates, unreliable, host → member: PackedUpdates
	// numbered for one member, whose numeric values may be differences from
	// values the member acknowledged (delta.go):
	//	seq uvarint | time uvarint | (networkId uvarint | lengthAndWidth uvarint | mask | data)*
	TypeDeltaUpdates Type = 18

	// TypeAck is Ack, either channel, member → host: which DeltaUpdates the
	// member received (and, the first time, that it takes them):
	//	highest uvarint | received u64 (bit i: seq highest−1−i)
	TypeAck Type = 19

	// TypeRunUpdates is RunUpdates, unreliable, either direction: PackedUpdates
	// with consecutive entities' updates of one mask and length as runs (runs.go):
	//	time uvarint | (networkId uvarint | count uvarint | lengthAndWidth uvarint | mask | data*count)*
	TypeRunUpdates Type = 20
)

// Bounds of the type ranges.
const (
	// FirstExtension is the first Concord extension type.
	FirstExtension Type = 6
	// FirstApplication is the first application type.
	FirstApplication Type = 128
)

var typeNames = [...]string{
	TypeHostSnapshot:  "HostSnapshot",
	TypePeerEntered:   "PeerEntered",
	TypePeerExited:    "PeerExited",
	TypeHostCommands:  "HostCommands",
	TypePeerCommands:  "PeerCommands",
	TypeEntityUpdates: "EntityUpdates",
	TypeFragment:      "Fragment",
	TypeCrdtBatch:     "CrdtBatch",
	TypePing:          "Ping",
	TypePong:          "Pong",
	TypeClose:         "Close",
	TypeHello:         "Hello",
	TypeStamp:         "Stamp",
	TypeDigest:        "Digest",
	TypeRelay:         "Relay",
	TypeActions:       "Actions",
	TypeForget:        "Forget",
	TypePackedUpdates: "PackedUpdates",
	TypeDeltaUpdates:  "DeltaUpdates",
	TypeAck:           "Ack",
	TypeRunUpdates:    "RunUpdates",
}

// String returns the message name, "Extension(n)" for an undefined
// extension type, or "Application(n)".
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	if t.IsApplication() {
		return "Application(" + strconv.Itoa(int(t)) + ")"
	}
	return "Extension(" + strconv.Itoa(int(t)) + ")"
}

// IsTRNP reports whether t is one of the six TRNP messages (0–5).
func (t Type) IsTRNP() bool { return t < FirstExtension }

// IsExtension reports whether t is in the Concord extension range (6–127),
// defined by this build or not.
func (t Type) IsExtension() bool { return t >= FirstExtension && t < FirstApplication }

// IsApplication reports whether t is in the application range (128–255).
func (t Type) IsApplication() bool { return t >= FirstApplication }

// IsFramed reports whether t uses the extension frame (types 6–255).
func (t Type) IsFramed() bool { return t >= FirstExtension }

// Known reports whether this build defines t (0–19).
func (t Type) Known() bool { return int(t) < len(typeNames) }
