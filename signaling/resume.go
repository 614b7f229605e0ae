package signaling

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
)

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
