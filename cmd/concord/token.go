package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/concordrtc/concord/signaling"
)

// tokenOptions are the flags of `concord token`: the claims of one join token.
type tokenOptions struct {
	room, user, device, kind string
	voice                    string
	power                    int
	mayHost, mod             bool
	ttl                      time.Duration
}

// cmdToken mints a join token from CONCORD_SECRET (the secret `concord serve` verifies with)
// and prints it: a way to try a server with a secret, and to script tests against one. Real
// deployments mint the same HS256 tokens in their own backend (signaling.Claims lists them).
func cmdToken(args []string, stdout, stderr io.Writer, now func() time.Time) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o tokenOptions
	fs.StringVar(&o.room, "room", "", "the room the token admits (required)")
	fs.StringVar(&o.user, "user", "", "the member's user name (required)")
	fs.StringVar(&o.device, "device", "", "pin the device (default: the join chooses)")
	fs.StringVar(&o.kind, "kind", "", "pin the member kind: browser, bot or host (default: the join chooses)")
	fs.IntVar(&o.power, "power", 0, "the member's power level")
	fs.BoolVar(&o.mayHost, "host", false, "allow the member to be elected host")
	fs.BoolVar(&o.mod, "mod", false, "let the holder kick and ban members of the room (concord kick/ban --token)")
	fs.StringVar(&o.voice, "voice", "", "what the member may do with voice: publish (the default), listen (hear, not speak) or none (docs/protocol.md §10)")
	fs.DurationVar(&o.ttl, "ttl", time.Hour, "how long the token is valid")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch o.voice {
	case "", "publish", "listen", "none":
	default:
		return usageError{fmt.Errorf("--voice %q: want publish, listen or none", o.voice)}
	}
	if o.room == "" || o.user == "" {
		return usageError{errors.New("--room and --user are required")}
	}
	if o.ttl <= 0 {
		return usageError{fmt.Errorf("--ttl %v: must be positive", o.ttl)}
	}
	secret := os.Getenv("CONCORD_SECRET")
	if secret == "" {
		return errors.New("CONCORD_SECRET is empty: set it to the secret `concord serve` runs with")
	}
	t := now()
	token, err := signaling.IssueToken([]byte(secret), signaling.Claims{
		Room: signaling.RoomID(o.room), User: o.user, Device: o.device, Kind: signaling.Kind(o.kind),
		Power: o.power, MayHost: o.mayHost, Mod: o.mod, Voice: o.voice, IssuedAt: t, ExpiresAt: t.Add(o.ttl),
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, token)
	return err
}
