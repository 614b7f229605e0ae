package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// `concord kick`, `ban`, `bans` and `unban` moderate a running serve: a moderator's token from
// `concord token --mod` kicks (the member's client ends with ErrKicked), bans for a while (the
// next join is refused with ErrBanned), lists and lifts the ban; a token without --mod is refused.
// With --data the ban survives a restart of serve.
func TestModerationCLI(t *testing.T) {
	t.Setenv("CONCORD_SECRET", testSecret)
	t.Setenv("CONCORD_ADMIN_KEY", "")
	dir := t.TempDir()
	s := startTestServer(t, server.Options{Secret: testSecret, Data: dir})
	now := time.Now()
	modTok := mint(t, now, "--room", "lobby", "--user", "mod", "--mod")
	plainTok := mint(t, now, "--room", "lobby", "--user", "eve")
	bobTok := mint(t, now, "--room", "lobby", "--user", "bob")
	dial := func() (*signaling.Client, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return signaling.Dial(ctx, s.url, signaling.JoinOptions{Room: "lobby", Device: "pc", Token: bobTok}, signaling.ClientConfig{})
	}
	cli := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		return out.String() + errOut.String(), code
	}
	bob, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if out, code := cli("kick", "--server", s.url, "--room", "lobby", "--user", "bob", "--token", plainTok); code != 1 || !strings.Contains(out, "403") {
		t.Fatalf("kick with a token without --mod: %d %s", code, out)
	}
	if out, code := cli("kick", "--server", s.url, "--room", "lobby", "--user", "bob", "--token", modTok, "--reason", "spam"); code != 0 || !strings.Contains(out, "removed bob/pc") {
		t.Fatalf("kick: %d %s", code, out)
	}
	if err := closedWith(bob); !errors.Is(err, signaling.ErrKicked) {
		t.Fatalf("bob closed with %v, want ErrKicked", err)
	}
	if out, code := cli("ban", "--server", s.url, "--room", "lobby", "--user", "bob", "--for", "1h", "--token", modTok); code != 0 || !strings.Contains(out, "banned bob from lobby until") {
		t.Fatalf("ban: %d %s", code, out)
	}
	if _, err := dial(); !errors.Is(err, signaling.ErrBanned) {
		t.Fatalf("banned bob's join: %v", err)
	}
	if out, code := cli("bans", "--server", s.url, "--room", "lobby", "--token", modTok); code != 0 || !strings.Contains(out, "banned bob") {
		t.Fatalf("bans: %d %s", code, out)
	}
	if out, code := cli("kick", "--server", s.url, "--room", "lobby"); code != 2 {
		t.Fatalf("kick without a target: %d %s", code, out)
	}
	// serve restarts on the same data directory: the ban holds.
	s.stop()
	s = startTestServer(t, server.Options{Secret: testSecret, Data: dir})
	if _, err := dial(); !errors.Is(err, signaling.ErrBanned) {
		t.Fatalf("after a restart banned bob's join: %v", err)
	}
	if out, code := cli("unban", "--server", s.url, "--room", "lobby", "--user", "bob", "--token", modTok); code != 0 || !strings.Contains(out, "lifted") {
		t.Fatalf("unban: %d %s", code, out)
	}
	c, err := dial()
	if err != nil {
		t.Fatalf("bob after the unban: %v", err)
	}
	_ = c.Close()
}

// closedWith returns the error c's Closed event carries.
func closedWith(c *signaling.Client) error {
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				return io.EOF
			}
			if cl, ok := ev.(signaling.Closed); ok {
				return cl.Err
			}
		case <-deadline:
			return errors.New("no Closed event")
		}
	}
}
