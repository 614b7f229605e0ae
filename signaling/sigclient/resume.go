package sigclient

import "fmt"

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

// MaxResumeTokenLen caps a resume token on receive; real ones are at most 60 bytes.
const MaxResumeTokenLen = 128

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
	if len(r.Token) > MaxResumeTokenLen {
		return fmt.Errorf("%w: resume token is %d bytes, the limit is %d", ErrBadMessage, len(r.Token), MaxResumeTokenLen)
	}
	if r.Room != "" {
		return CheckRoom(r.Room)
	}
	return nil
}
