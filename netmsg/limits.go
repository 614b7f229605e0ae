package netmsg

import (
	"fmt"
	"unicode/utf8"
)

// Limits of the wire format. Receivers check them; senders stay within them.
const (
	// MaxDatagram caps a payload on the unreliable channel: the most user
	// data one SCTP packet carries (see SCTPPacketSize), so a datagram leaves
	// as exactly one packet and a loss drops one batch of updates, never a
	// fragment of many. docs/protocol.md §1.3 gives the derivation.
	MaxDatagram = (SCTPPacketSize - sctpCommonHeader - sctpIDataChunkHeader) &^ 3 // 1156

	// SCTPPacketSize is the largest SCTP packet WebRTC stacks send: pion's
	// initialMTU/sctpOutboundMTU and Chromium dcsctp's kMaxSafeMTUSize are both
	// 1191 (1280 IPv6 MTU − IPv6 40 − UDP 8 − AES-GCM 24 − DTLS record
	// header 13 − TURN ChannelData 4).
	SCTPPacketSize = 1191

	// MaxReliableMessage caps a payload on the reliable channel. A larger
	// payload is sent as Fragment messages (see Fragmenter).
	MaxReliableMessage = 16 << 10

	// MaxPeerIDLen caps PeerInfo.PeerID in bytes.
	MaxPeerIDLen = 256

	// MaxUpdateData caps Update.Data: its length has 14 bits on the wire.
	MaxUpdateData = 1<<14 - 1

	// MaxCloseReason caps Close.Reason in bytes.
	MaxCloseReason = 256

	// MaxProperties is the most properties an Update mask can address.
	MaxProperties = 32
)

// SCTP framing around a datagram (RFC 9260 §3, RFC 8260 §2.1). The limit uses
// the larger I-DATA header so that it holds whether or not the association
// negotiates message interleaving; both pion and dcsctp round a chunk's user
// data down to a multiple of 4 when they split a message.
const (
	sctpCommonHeader     = 12 // source/destination port, verification tag, checksum
	sctpIDataChunkHeader = 20 // chunk header 4 + TSN, stream, MID, PPID/FSN 16 (DATA: 16)
)

// CheckDatagram checks the size of a payload received on the unreliable
// channel. A payload over MaxDatagram is a *ProtocolError wrapping
// ErrTooLarge. An empty payload carries no message and passes.
func CheckDatagram(payload []byte) error {
	return checkSize(payload, MaxDatagram, "datagram")
}

// CheckReliable checks the size of a payload received on the reliable
// channel. A payload over MaxReliableMessage is a *ProtocolError wrapping
// ErrTooLarge; larger payloads must arrive as fragments. A payload rebuilt by
// a Reassembler is not subject to this limit.
func CheckReliable(payload []byte) error {
	return checkSize(payload, MaxReliableMessage, "reliable message")
}

func checkSize(b []byte, limit int, what string) error {
	if len(b) <= limit {
		return nil
	}
	return &ProtocolError{
		Type:   Type(b[0]),
		Offset: limit,
		Err:    fmt.Errorf("%w: %s of %d bytes exceeds %d", ErrTooLarge, what, len(b), limit),
	}
}

// ValidPeerID reports whether id can be sent in a PeerInfo: at most
// MaxPeerIDLen bytes of valid UTF-8. The encoders panic on an invalid id, so
// code taking ids from outside (signaling) checks them with this first.
func ValidPeerID(id string) error {
	if len(id) > MaxPeerIDLen {
		return fmt.Errorf("%w: %d bytes exceed %d", ErrInvalidPeerID, len(id), MaxPeerIDLen)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidPeerID)
	}
	return nil
}
