package sigclient

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/concordrtc/concord/authority"
)

// PeerIndex identifies a member within one room. The server issues indices in
// join order, starting at 1; 0 means "no member" (for example, no host). It is
// authority.PeerIndex: one vocabulary for every package of a peer.
type PeerIndex = authority.PeerIndex

// Term numbers the successive hosts of a room. It grows by one on every change
// of host (including a change to "no host") and never goes back. It is
// authority.Term.
type Term = authority.Term

// RoomID names a room ("group call").
type RoomID string

// Identity is a member's stable name, "user/device". Two tabs of one user use
// different devices and do not collide; a second join with the same identity
// replaces the first connection.
//
// In a list of pinned hosts an Identity without a device ("alice") stands for
// every device of that user.
type Identity string

// NewIdentity joins a user and a device into an Identity. An empty device
// yields the bare user, which is meaningful only as a pinned-host pattern.
func NewIdentity(user, device string) Identity {
	if device == "" {
		return Identity(user)
	}
	return Identity(user + "/" + device)
}

// User returns the part before the first slash.
func (id Identity) User() string {
	u, _, _ := strings.Cut(string(id), "/")
	return u
}

// Device returns the part after the first slash, or "" if there is none.
func (id Identity) Device() string {
	_, d, _ := strings.Cut(string(id), "/")
	return d
}

// Matches reports whether id, read as a pinned-host pattern, names the member
// identity m: either exactly, or id is a bare user and m is one of that user's
// devices.
func (id Identity) Matches(m Identity) bool {
	if id == "" {
		return false
	}
	if id == m {
		return true
	}
	return !strings.Contains(string(id), "/") && m.User() == string(id)
}

// String returns the identity as "user/device".
func (id Identity) String() string { return string(id) }

// Kind says what sort of program a member is. It is informational: whether a
// member may host comes from its token, not from its kind.
type Kind string

// Member kinds.
const (
	KindBrowser Kind = "browser" // the bundled web page
	KindBot     Kind = "bot"     // a headless Go peer
	KindHost    Kind = "host"    // a dedicated host process
)

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindBrowser, KindBot, KindHost:
		return true
	}
	return false
}

// Limits on names, checked on every join and token.
const (
	maxRoomLen   = 128  // bytes of a room name
	maxUserLen   = 128  // bytes of a user name
	MaxDeviceLen = 128  // bytes of a device name
	MaxTokenLen  = 4096 // bytes of a token string
)

// ServerDevicePrefix starts every device name the server makes up for a join
// without a device; clients may not use it, so made-up names never collide.
const ServerDevicePrefix = "~"

// CheckName validates a room, user or device name: valid UTF-8, no control
// characters, at most max bytes, and (when noSlash) no "/".
func CheckName(what, s string, max int, noSlash bool) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrBadMessage, what, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrBadMessage, what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%w: %s contains a control character", ErrBadMessage, what)
		}
		if noSlash && r == '/' {
			return fmt.Errorf("%w: %s may not contain \"/\"", ErrBadMessage, what)
		}
	}
	return nil
}

func CheckRoom(room RoomID) error {
	if room == "" {
		return fmt.Errorf("%w: room is empty", ErrBadMessage)
	}
	return CheckName("room", string(room), maxRoomLen, false)
}

func CheckUser(user string) error {
	if user == "" {
		return fmt.Errorf("%w: user is empty", ErrBadMessage)
	}
	return CheckName("user", user, maxUserLen, true)
}

func CheckDevice(device string) error {
	if strings.HasPrefix(device, ServerDevicePrefix) {
		return fmt.Errorf("%w: device names starting with %q are reserved for the server", ErrBadMessage, ServerDevicePrefix)
	}
	return CheckName("device", device, MaxDeviceLen, true)
}
