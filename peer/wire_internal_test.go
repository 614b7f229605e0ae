package peer

import (
	"strings"
	"testing"

	"github.com/concordrtc/concord/netmsg"
)

func TestWirePeerID(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"short", "alice/tab1"},
		{"257 bytes", strings.Repeat("u", 128) + "/" + strings.Repeat("d", 128)},
		{"multibyte at the cut", strings.Repeat("é", 128) + "/" + strings.Repeat("例", 40)},
		{"invalid utf8", "bob/\xff\xfe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wirePeerID(tc.in)
			if err := netmsg.ValidPeerID(got); err != nil {
				t.Fatalf("wirePeerID(%q) = %q: %v", tc.in, got, err)
			}
			if netmsg.ValidPeerID(tc.in) == nil && got != tc.in {
				t.Fatalf("valid id changed: %q → %q", tc.in, got)
			}
		})
	}
}
