package voice

import (
	"encoding/json"
	"errors"
	"fmt"
)

// maxMessage is the largest data-channel message a client may send (docs/protocol.md §10).
const maxMessage = 1024

// Message types on the `voice` data channel (docs/protocol.md §10 "Voice: the voice data channel").
const (
	msgSlots  = "slots"
	msgLevels = "levels"
	msgBye    = "bye"
	msgMute   = "mute"
)

// Bye reasons.
const (
	ByeReplaced = "replaced"
	ByeLeft     = "left"
	ByeShutdown = "shutdown"
	ByeProtocol = "protocol"
	ByeDeleted  = "deleted"
)

var errUnknownMessage = errors.New("voice: unknown message")

// clientMsg is what a client may send.
type clientMsg struct {
	T     string `json:"t"`
	Muted *bool  `json:"muted,omitempty"`
}

// parseClient decodes a client's message: a mute, or an error (never a panic) for anything else.
func parseClient(b []byte) (muted bool, err error) {
	if len(b) > maxMessage {
		return false, fmt.Errorf("voice: message of %d bytes over %d", len(b), maxMessage)
	}
	var m clientMsg
	if err := json.Unmarshal(b, &m); err != nil {
		return false, fmt.Errorf("voice: message: %w", err)
	}
	if m.T != msgMute || m.Muted == nil {
		return false, fmt.Errorf("%w %q", errUnknownMessage, m.T)
	}
	return *m.Muted, nil
}

// serverMsg is what the forwarder sends (and the Go client decodes).
type serverMsg struct {
	T      string             `json:"t"`
	Slots  map[string]*string `json:"slots,omitempty"`
	Levels map[string]uint8   `json:"levels,omitempty"`
	Reason string             `json:"reason,omitempty"`
}
