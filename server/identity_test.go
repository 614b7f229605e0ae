package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/follow"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/signaling/sigclient"
	"github.com/concordrtc/concord/voice"
)

// TestOpenServerKeepsItsOwnIdentities: on an open server (no secret: the README's demo), a
// stranger who claims the identity of one of the server's own members — the dedicated host
// (host/serve), the kept rooms' follower, the voice follower — is refused with token_required,
// instead of replacing that member's connection (a join with the same user and device replaces
// the older one: the dedicated host was knocked off and the stranger hosted the room). The
// server's own members still join: they carry tokens of the server's service key. Another
// device of the pinned user (a `concord host` process) still joins, and does not displace the
// dedicated host (docs/security.md "Signaling", docs/protocol.md §4).
func TestOpenServerKeepsItsOwnIdentities(t *testing.T) {
	s := startTestServer(t, Options{DedicatedHost: true})
	host := s.Host("arena")
	if host == nil {
		t.Fatal("no dedicated host")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := host.Do(ctx, func(*peer.World) {}); err != nil {
		t.Fatal(err)
	}
	claims := []sigclient.JoinOptions{
		{Room: "arena", User: DedicatedHostUser, Device: "serve", Kind: signaling.KindHost},
		{Room: "arena", User: follow.DefaultUser, Device: "serve", Kind: signaling.KindHost, NoHost: true},
		{Room: "arena", User: voice.FollowerUser, Device: "forwarder", Kind: signaling.KindHost, NoHost: true},
		// A token the server did not sign does not help.
		{Room: "arena", User: DedicatedHostUser, Device: "serve", Kind: signaling.KindHost,
			Token: mustToken(t, "not the service key, 32 bytes long", DedicatedHostUser)},
	}
	for _, jo := range claims {
		c, err := sigclient.Dial(ctx, s.URL(), jo, sigclient.ClientConfig{})
		if err == nil {
			_ = c.Close()
			t.Errorf("join as %s/%s (token %v): accepted, want refused", jo.User, jo.Device, jo.Token != "")
			continue
		}
		if !errors.Is(err, sigclient.ErrTokenRequired) && !errors.Is(err, sigclient.ErrTokenInvalid) {
			t.Errorf("join as %s/%s: %v, want token_required or bad_token", jo.User, jo.Device, err)
		}
	}
	select {
	case <-host.Done():
		t.Fatal("the dedicated host stopped")
	default:
	}
	// Another device of the pinned user still joins without a token, and the dedicated host is
	// still the host.
	c, err := sigclient.Dial(ctx, s.URL(), sigclient.JoinOptions{Room: "arena", User: DedicatedHostUser, Device: "other", Kind: signaling.KindHost}, sigclient.ClientConfig{})
	if err != nil {
		t.Fatalf("host/other: %v", err)
	}
	defer c.Close()
	j := c.Joined()
	var hostUser signaling.Identity
	for _, m := range j.Members {
		if m.Index == j.Host {
			hostUser = m.ID
		}
	}
	if hostUser.User() != DedicatedHostUser || hostUser.Device() != "serve" {
		t.Fatalf("host of the room: %q, want the dedicated host", hostUser)
	}
}

func mustToken(t *testing.T, key, user string) string {
	t.Helper()
	tok, err := signaling.IssueToken([]byte(key), signaling.Claims{Room: "arena", User: user, Device: "serve",
		Kind: signaling.KindHost, MayHost: true, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
