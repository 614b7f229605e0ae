package signaling

import (
	"testing"
	"time"
)

// TestVoiceClaimAndMemberIndex: the voice claim survives a token's round trip, and the member
// table answers a member's index until it leaves.
func TestVoiceClaimAndMemberIndex(t *testing.T) {
	secret := []byte("k")
	now := time.Now()
	tok, err := IssueToken(secret, Claims{Room: "r", User: "ann", Voice: "listen", ExpiresAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseToken(secret, tok, now)
	if err != nil || c.Voice != "listen" {
		t.Fatalf("claims %+v, %v", c, err)
	}
	if _, err := ParseToken(secret, tok, now.Add(time.Hour)); err == nil {
		t.Fatal("an expired token parsed")
	}
	l := &liveMembers{m: map[liveKey]PeerIndex{}}
	l.add("r", "ann/a", 7)
	if i, ok := l.index("r", "ann/a"); !ok || i != 7 {
		t.Fatalf("index %d %v", i, ok)
	}
	l.remove("r", "ann/a")
	if _, ok := l.index("r", "ann/a"); ok {
		t.Fatal("a member that left still has an index")
	}
}
