package turnserver

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseUsername: any username either parses into a non-empty identity
// that it ends with, after a current expiry, or is refused; nothing panics.
// Credentials issued by Username always parse back.
func FuzzParseUsername(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	for _, s := range []string{
		"1800003600:alice/p1", "1799999999:alice/p1", ":alice", "1800003600:", "abc:alice",
		"99999999999999999999:x", "1800003600:a:b", "", ":", "+1800003600:x", "-1:x", "1800003600",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, username string) {
		expiry, id, err := parseUsername(username)
		if err != nil {
			if id != "" {
				t.Fatalf("refused %q but returned identity %q", username, id)
			}
			return
		}
		if checkExpiry(username, expiry, now) != nil {
			return
		}
		if id == "" || len(id) > MaxIdentity || !strings.HasSuffix(username, ":"+id) {
			t.Fatalf("parseUsername(%q) = %q", username, id)
		}
		exp, _, _ := strings.Cut(username, ":")
		if strings.TrimLeft(exp, "0123456789") != "" {
			t.Fatalf("accepted a non-numeric expiry in %q", username)
		}
		// The identity, reissued with any current expiry, parses back to itself.
		_, again, err := parseUsername(Username(id, now.Add(time.Hour)))
		if err != nil || again != id {
			t.Fatalf("reissued %q: %q, %v", id, again, err)
		}
	})
}
