package peer

import (
	"context"
	"testing"

	"github.com/concordrtc/concord/signaling"
)

// TestResumeClaimCarriesNewestToken: a resume token vouches for one term, so after a host
// change the claim must carry the HostChanged's token, not the one of Joined (the server refuses
// a claim too far past its token's term: resume_term_invalid).
func TestResumeClaimCarriesNewestToken(t *testing.T) {
	n := newStepNet(t)
	p := n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	p.resumeToken = "tok-1"
	p.handleSignaling(context.Background(), signaling.HostChanged{Term: 2, Host: 1, ResumeToken: "tok-2"})
	c := p.resumeClaim()
	if c.Term != 2 || c.Token != "tok-2" {
		t.Fatalf("claim term %d token %q; want term 2 with tok-2", c.Term, c.Token)
	}
	// An open server sends no token: the peer keeps the one it has.
	p.handleSignaling(context.Background(), signaling.HostChanged{Term: 3, Host: 1})
	if c := p.resumeClaim(); c.Token != "tok-2" {
		t.Fatalf("token %q after a host change without one; want tok-2 kept", c.Token)
	}
}
