package signaling

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
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

// maxResumeTokenLen caps a resume token on receive; real ones are at most 60 bytes.
const maxResumeTokenLen = 128

// MaxTerm is the largest term a claim or report may carry, and the one at which a room's term
// stops growing (2^53−1: JavaScript peers keep terms in doubles). Terms never wrap.
const MaxTerm Term = 1<<53 - 1

// MaxTermSkew is how far a resume claim's term may exceed what the server can vouch for: the
// term bound in its resume token (with a secret), or the term of the room it joins (open
// server). Legitimate claims run ahead only by the elections a member saw after its token was
// issued or while the server was away; a claim past the bound is refused (resume_term_invalid).
const MaxTermSkew Term = 16

// check validates a claim's fields (not its token).
func (r *Resume) check() error {
	if r.Index == 0 {
		return fmt.Errorf("%w: resume without peerIndex", ErrBadMessage)
	}
	if r.Term > MaxTerm {
		return fmt.Errorf("%w: resume term %d is above the limit %d", ErrBadMessage, r.Term, MaxTerm)
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

// resumeKeyLabel separates the resume key from any other use of the JWT secret. v2 tokens bind
// the term.
const resumeKeyLabel = "concord signaling resume token v2"

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

// resumeToken is "<term>.<mac>": the term in decimal, then HMAC-SHA256(key, room|index|term|
// identity) in base64url without padding. The fields are length-prefixed (room: uint32 LE
// length, index and term: uint64 LE, identity: the rest), so that no two inputs share a MAC.
// The term in clear tells a restarted server which term the token vouches for.
func resumeToken(key []byte, room RoomID, index PeerIndex, term Term, id Identity) string {
	if key == nil {
		return ""
	}
	return strconv.FormatUint(uint64(term), 10) + "." + resumeMAC(key, room, index, term, id)
}

func resumeMAC(key []byte, room RoomID, index PeerIndex, term Term, id Identity) string {
	m := hmac.New(sha256.New, key)
	var b [20]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(len(room)))
	m.Write(b[:4])
	m.Write([]byte(room))
	binary.LittleEndian.PutUint64(b[4:12], uint64(index))
	binary.LittleEndian.PutUint64(b[12:], uint64(term))
	m.Write(b[4:])
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkResumeToken reports whether token is a resume token of (room, index, id) under key, and
// the term it vouches for. A nil key (open mode) accepts every token and vouches for no term
// (ok, 0).
func checkResumeToken(key []byte, room RoomID, index PeerIndex, id Identity, token string) (term Term, ok bool) {
	if key == nil {
		return 0, true
	}
	ts, mac, found := strings.Cut(token, ".")
	if !found || len(ts) == 0 || len(ts) > 16 || (len(ts) > 1 && ts[0] == '0') {
		return 0, false
	}
	t, err := strconv.ParseUint(ts, 10, 64)
	if err != nil || Term(t) > MaxTerm {
		return 0, false
	}
	if !hmac.Equal([]byte(mac), []byte(resumeMAC(key, room, index, Term(t), id))) {
		return 0, false
	}
	return Term(t), true
}
