package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/concordrtc/concord/signaling"
)

// Moderation from the command line: `concord kick|ban|unban|bans` call a running server's
// moderation API (docs/protocol.md §4 "Signaling: moderation") with the admin key (CONCORD_ADMIN_KEY) or a
// moderator's join token (--token, from `concord token --mod`).

func init() {
	const cred = `

The credential is --token (a join token of the room with the mod claim: concord token --mod) or,
without it, CONCORD_ADMIN_KEY (the admin key concord serve runs with).`
	helps["kick"] = helpText{"concord kick --room R (--user U | --peer-id U/D) [flags]", `Removes the members of room R that are user U (every device) or the one identity U/D: each
gets the error "kicked" and its connection ends; Concord's clients do not rejoin by themselves.
Prints who was removed.` + cred}
	helps["ban"] = helpText{"concord ban --room R (--user U | --peer-id U/D) [--for 1h] [flags]", `Bans user U (every device) or the identity U/D from room R, for --for or for good, and kicks
them now ("banned"). A banned join is refused with the ban's expiry. Bans survive restarts of a
server with --data.` + cred}
	helps["unban"] = helpText{"concord unban --room R (--user U | --peer-id U/D) [flags]", `Lifts a ban.` + cred}
	helps["bans"] = helpText{"concord bans --room R [flags]", `Lists the bans of room R that still hold.` + cred}
}

// cmdModerate runs `concord kick`, `ban`, `unban` or `bans` (name).
func cmdModerate(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:7880", "the concord serve URL")
	room := fs.String("room", "", "the room (required)")
	token := fs.String("token", "", "a join token of the room with the mod claim (default: CONCORD_ADMIN_KEY as the credential)")
	var user, peerID, reason string
	var dur time.Duration
	if name != "bans" {
		fs.StringVar(&user, "user", "", "the user: every device of it")
		fs.StringVar(&peerID, "peer-id", "", "one identity, user/device (a member's peerId in /api/rooms)")
	}
	if name == "kick" || name == "ban" {
		fs.StringVar(&reason, "reason", "", "why, as the removed member is told")
	}
	if name == "ban" {
		fs.DurationVar(&dur, "for", 0, "how long the ban holds (0: for good)")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *room == "" {
		return usageError{errors.New("--room is required")}
	}
	if name != "bans" && (user == "") == (peerID == "") {
		return usageError{errors.New("name the target: --user or --peer-id (one of them)")}
	}
	if dur < 0 {
		return usageError{fmt.Errorf("--for %v: must be positive (0: for good)", dur)}
	}
	cred := *token
	if cred == "" {
		cred = os.Getenv("CONCORD_ADMIN_KEY")
	}
	if cred == "" {
		return errors.New("no credential: give --token (concord token --mod) or set CONCORD_ADMIN_KEY")
	}
	method, path := http.MethodPost, "/"+name
	switch name {
	case "unban":
		method, path = http.MethodDelete, "/ban"
	case "bans":
		method = http.MethodGet
	}
	var body io.Reader
	if method != http.MethodGet {
		req := signaling.ModerationRequest{User: user, PeerID: signaling.Identity(peerID), Reason: reason}
		if dur > 0 {
			req.For = dur.String()
		}
		b, err := json.Marshal(req)
		if err != nil {
			return err
		}
		body = strings.NewReader(string(b))
	}
	u := strings.TrimSuffix(*server, "/") + "/api/rooms/" + url.PathEscape(*room) + path
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return usageError{fmt.Errorf("--server %q: %w", *server, err)}
	}
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(b)))
	}
	var out signaling.ModerationResponse
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	switch name {
	case "kick", "ban":
		for _, id := range out.Kicked {
			fmt.Fprintf(stdout, "removed %s\n", id)
		}
		for _, bn := range out.Bans {
			fmt.Fprintln(stdout, describeBan(bn))
		}
	case "unban":
		if !out.Lifted {
			return fmt.Errorf("room %s has no ban of %s", *room, user+peerID)
		}
		fmt.Fprintf(stdout, "ban of %s lifted\n", user+peerID)
	case "bans":
		for _, bn := range out.Bans {
			fmt.Fprintln(stdout, describeBan(bn))
		}
	}
	return nil
}

// describeBan is one line of a ban: target, until, reason.
func describeBan(b signaling.Ban) string {
	until := "for good"
	if !b.Until.IsZero() {
		until = "until " + b.Until.UTC().Format(time.RFC3339)
	}
	s := fmt.Sprintf("banned %s from %s %s", b.Target, b.Room, until)
	if b.Reason != "" {
		s += ": " + b.Reason
	}
	return s
}
