// Package netmsg is Concord's wire codec for the Third Room Network Protocol
// (TRNP) and Concord's extension messages. It owns the byte layout of every
// message that travels on a peer's data channels and nothing else: it knows
// no schemas, sessions, peers or channels. docs/protocol.md is the
// specification; the golden vectors in testdata/netmsg are its contract.
//
// # Who may call it
//
// The package is pure: no goroutines, no locks, no global state. Any
// goroutine may call any function on values it owns. Encoders are
// AppendX(dst, *X) []byte; decoders are ConsumeX(b, *X) (n, error) and fill
// a caller-owned value, reusing its slices, so a loop that decodes into the
// same value allocates nothing in steady state. Byte slices in decoded values
// alias the input and are valid until the input is reused; strings (peer ids,
// close reasons) are copies.
//
// # Conventions
//
// All integers are little-endian. Every message starts with a u8 Type: 0–5
// are the TRNP messages, 6–127 Concord extensions, 128–255 application
// messages. A data-channel payload carries one or more messages back to back
// and every message is self-delimiting without a schema; Reader walks them.
// Types from 6 up share one frame, so a receiver can step over a type it
// does not know:
//
//	+------+----------------+------------------------+
//	| type | bodyLength u32 | body [bodyLength]byte  |
//	+------+----------------+------------------------+
//
// # Layouts
//
//	PeerInfo          = peerIndex u64 | peerIdLength u32 | peerId (UTF-8, ≤ 256)
//	Spawn             = networkId u64 | schemaId u32 |
//	                    creationDataLength u32 | creationData |
//	                    updateDataLength u32 | updateData
//	Despawn           = networkId u64
//	Update            = networkId u64 | lengthAndWidth u16 | mask | data
//	                    lengthAndWidth: bits 15..14 width code (0 u8, 1 u16,
//	                    2 u32, 3 invalid), bits 13..0 len(data)
//	AuthorityTransfer = networkId u64 | newAuthorIndex u64
//	RPC, Action       = type u32 | dataLength u32 | data
//
//	0  HostSnapshot   = 0 | hostTime u64 | localPeerIndex u64 | hostPeerIndex u64 |
//	                    peerCount u32 | PeerInfo* | entityCount u32 | Spawn* |
//	                    hostStateByteLength u32 | hostState
//	1  PeerEntered    = 1 | PeerInfo
//	2  PeerExited     = 2 | peerIndex u64
//	3  HostCommands   = 3 | spawnCount u32 | Spawn* | despawnCount u32 | Despawn* |
//	                    authorityTransferCount u32 | AuthorityTransfer* |
//	                    rpcCount u32 | RPC* | actionCount u32 | Action*
//	4  PeerCommands   = 4 | rpcCount u32 | RPC*
//	5  EntityUpdates  = 5 | time u64 | updateCount u32 | Update*
//
//	6  Fragment       = 6 | bodyLength u32 | messageId u32 | totalLength u32 | offset u32 | chunk
//	7  CrdtBatch      = 7 | bodyLength u32 | term u64 | ADR-117 messages
//	8  Ping           = 8 | bodyLength u32 (16) | nonce u64 | sendTime u64
//	9  Pong           = 9 | bodyLength u32 (16) | nonce u64 | echoTime u64
//	10 Close          = 10 | bodyLength u32 | code u16 | reasonLength u16 | reason (UTF-8, ≤ 256)
//	11 Hello          = 11 | bodyLength u32 (24) | term u64 | peerIndex u64 | schemaFingerprint u64
//	12 Stamp          = 12 | bodyLength u32 (8) | time u64
//	13 Digest         = 13 | bodyLength u32 | term u64 | clock u32 | bucketCount u16 | digests [bucketCount]u64
//	…
//	18 DeltaUpdates   = 18 | bodyLength u32 | seq uvarint | time uvarint | PackedUpdate*
//	19 Ack            = 19 | bodyLength u32 | highest uvarint | received u64
//
// Stamp and Digest are the session layer's (package peer), which decodes them
// with ConsumeStamp and ConsumeDigest; Reader checks only their frames.
//
// # Limits
//
// A payload on the unreliable channel is at most MaxDatagram (1156) bytes,
// what one SCTP packet carries, and one on the reliable channel at most
// MaxReliableMessage (16 KiB);
// receivers check them with CheckDatagram and CheckReliable. A larger
// reliable payload travels as Fragment messages (Fragmenter) and is rebuilt
// by a Reassembler, capped by Config.MaxTotal (64 MiB by default). A decoder
// checks every length against the remaining input and every count times its
// element's minimum size against the remaining input before it grows a
// slice, so no input can make it panic or allocate more than a small
// multiple of the input's size. Fields are checked in wire order; a length
// with a cap of its own (peer id, close reason) is checked against the cap
// before the remaining input.
//
// # Errors: drop the message or close the peer
//
// Every error a decoder, Reader, CheckDatagram, CheckReliable or Reassembler
// returns for bad input is a *ProtocolError: the sender broke the wire
// format (data channels are reliable about bytes, so this is a bug or
// hostility, never line noise), nothing after the fault can be trusted to be
// framed, and the receiver closes the peer. Errors of any other kind mean
// "drop this one message and carry on": ErrUnknownType for an extension type
// this build does not define (the Reader has already stepped over it), and
// ErrMaskMismatch from Update.CheckMask for an update that does not fit its
// entity's schema. Meaning beyond the bytes (unknown network ids, authority,
// terms) is for the caller to judge and is usually a drop too.
//
// Encoders panic only on values their fields cannot express (a mask wider
// than its Width, update data over MaxUpdateData, a peer id that ValidPeerID
// rejects, a length over u32): those are bugs in the calling code, and an
// encoder never produces bytes a decoder rejects. AppendClose instead
// repairs its reason, since reasons are often built from error strings.
package netmsg
