package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

const testSecret = "0123456789abcdef0123456789abcdef" // 32 bytes: no weak-secret warning

// mint runs `concord token args…` at time at and returns the token it printed.
func mint(t *testing.T, at time.Time, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := cmdToken(args, &out, io.Discard, func() time.Time { return at }); err != nil {
		t.Fatalf("concord token %q: %v", args, err)
	}
	tok := strings.TrimSuffix(out.String(), "\n")
	if tok == "" || strings.ContainsAny(tok, " \n") {
		t.Fatalf("concord token printed %q", out.String())
	}
	return tok
}

// TestTokenAdmitsJoin: a server with CONCORD_SECRET admits a join with a token minted by
// `concord token`, with the token's user, power and right to host, and refuses one without a
// token (token_required), an expired one and one for another room, each with its own code.
func TestTokenAdmitsJoin(t *testing.T) {
	t.Setenv("CONCORD_SECRET", testSecret)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", Secret: testSecret}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	dial := func(opts signaling.JoinOptions) (*signaling.Client, error) {
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		defer dcancel()
		return signaling.Dial(dctx, s.url, opts, signaling.ClientConfig{Logger: log})
	}

	tok := mint(t, time.Now(), "--room", "arena", "--user", "alice", "--power", "50", "--host")
	c, err := dial(signaling.JoinOptions{Room: "arena", Token: tok})
	if err != nil {
		t.Fatalf("join with a minted token: %v", err)
	}
	j := c.Joined()
	_ = c.Close()
	if !strings.HasPrefix(string(j.PeerID), "alice/") {
		t.Errorf("joined as %q, want the token's user alice", j.PeerID)
	}
	var self *signaling.Member
	for i := range j.Members {
		if j.Members[i].Index == j.Self {
			self = &j.Members[i]
		}
	}
	if self == nil || self.Power != 50 || !self.MayHost {
		t.Errorf("member %+v: want power 50 and mayHost from the token", self)
	}

	refused := []struct {
		name  string
		token string
		want  error
		code  signaling.ErrorCode
	}{
		{"no token", "", signaling.ErrTokenRequired, signaling.CodeTokenRequired},
		{"expired", mint(t, time.Now().Add(-2*time.Hour), "--room", "arena", "--user", "bob", "--ttl", "1h"), signaling.ErrTokenExpired, signaling.CodeTokenExpired},
		{"other room", mint(t, time.Now(), "--room", "lobby", "--user", "bob"), signaling.ErrWrongRoom, signaling.CodeWrongRoom},
	}
	for _, r := range refused {
		c, err := dial(signaling.JoinOptions{Room: "arena", User: "bob", Token: r.token})
		if err == nil {
			_ = c.Close()
			t.Errorf("%s: joined, want %v", r.name, r.want)
			continue
		}
		var se signaling.Error
		if !errors.Is(err, r.want) || !errors.As(err, &se) || se.Code != r.code {
			t.Errorf("%s: %v, want code %s", r.name, err, r.code)
		}
	}
}

func TestTokenFlags(t *testing.T) {
	now := time.Now()
	for _, args := range [][]string{
		{"--user", "alice"},
		{"--room", "arena"},
		{"--room", "arena", "--user", "alice", "--ttl", "0s"},
		{"--room", "arena", "--user", "alice", "extra"},
		{"--room", "arena", "--user", "alice", "--voice", "shout"},
	} {
		t.Setenv("CONCORD_SECRET", testSecret)
		var ue usageError
		if err := cmdToken(args, io.Discard, io.Discard, func() time.Time { return now }); !errors.As(err, &ue) {
			t.Errorf("concord token %q: %v, want a usage error", args, err)
		}
	}
	t.Setenv("CONCORD_SECRET", "")
	if err := cmdToken([]string{"--room", "arena", "--user", "alice"}, io.Discard, io.Discard, func() time.Time { return now }); err == nil || !strings.Contains(err.Error(), "CONCORD_SECRET") {
		t.Errorf("without a secret: %v, want an error naming CONCORD_SECRET", err)
	}
	t.Setenv("CONCORD_SECRET", testSecret)
	if err := cmdToken([]string{"--room", "arena", "--user", "alice", "--kind", "robot"}, io.Discard, io.Discard, func() time.Time { return now }); err == nil {
		t.Error("--kind robot: minted a token the server would refuse")
	}
	tok := mint(t, now, "--room", "arena", "--user", "alice", "--voice", "listen")
	if c, err := signaling.ParseToken([]byte(testSecret), tok, now); err != nil || c.Voice != "listen" {
		t.Errorf("--voice listen: claims %+v, %v", c, err)
	}
}
