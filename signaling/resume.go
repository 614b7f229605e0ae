package signaling

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// Resume is a join's claim to the peer index its member held before its connection to the
// server was lost (the server went away, or a network blip cut the socket). A server that
// accepts it gives the member the same index, so authority keyed by the index (avatars,
// locks) stays valid, and it may restore the member as host without a new term. The rules are
// in docs/protocol.md §5 "Resume".
type Resume struct {
	// Index is the peer index the member held. Required.
	Index PeerIndex `json:"peerIndex"`
	// Term is the last host term the member knew.
	Term Term `json:"term"`
	// Host is the host the member followed in Term (itself if it was the host), 0 if none.
	Host PeerIndex `json:"host"`
	// Synced is true if the member held the host's state (or was the host).
	Synced bool `json:"synced"`
	// Room is the room the claim was issued in; if set, it must be the joined room.
	Room RoomID `json:"room,omitempty"`
	// Token is the Joined.ResumeToken the member received for Index. An open server (no
	// secret) does not check it.
	Token string `json:"token,omitempty"`
}

// maxResumeTokenLen caps a resume token on receive; real ones are 43 bytes.
const maxResumeTokenLen = 128

// check validates a claim's fields (not its token).
func (r *Resume) check() error {
	if r.Index == 0 {
		return fmt.Errorf("%w: resume without peerIndex", ErrBadMessage)
	}
	if r.Host != 0 && r.Term == 0 {
		return fmt.Errorf("%w: resume names host %d in term 0", ErrBadMessage, r.Host)
	}
	if len(r.Token) > maxResumeTokenLen {
		return fmt.Errorf("%w: resume token is %d bytes, the limit is %d", ErrBadMessage, len(r.Token), maxResumeTokenLen)
	}
	if r.Room != "" {
		return checkRoom(r.Room)
	}
	return nil
}

// resumeKeyLabel separates the resume key from any other use of the JWT secret.
const resumeKeyLabel = "concord signaling resume token v1"

// deriveResumeKey returns the key that signs resume tokens: HMAC-SHA256(secret, label). It is
// a function of the JWT secret alone, so a restarted server checks the tokens its predecessor
// issued. An empty secret (open mode) has no key.
func deriveResumeKey(secret []byte) []byte {
	if len(secret) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(resumeKeyLabel))
	return m.Sum(nil)
}

// resumeToken is HMAC-SHA256(key, room|index|identity), base64url without padding. The fields
// are length-prefixed (room: uint32 LE length, index: uint64 LE, identity: the rest), so that
// no two (room, index, identity) triples share an input.
func resumeToken(key []byte, room RoomID, index PeerIndex, id Identity) string {
	if key == nil {
		return ""
	}
	m := hmac.New(sha256.New, key)
	var b [12]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(len(room)))
	m.Write(b[:4])
	m.Write([]byte(room))
	binary.LittleEndian.PutUint64(b[4:], uint64(index))
	m.Write(b[4:])
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkResumeToken reports whether token is the resume token of (room, index, id) under key. A
// nil key (open mode) accepts every token.
func checkResumeToken(key []byte, room RoomID, index PeerIndex, id Identity, token string) bool {
	if key == nil {
		return true
	}
	return hmac.Equal([]byte(token), []byte(resumeToken(key, room, index, id)))
}
