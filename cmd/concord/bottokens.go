package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/concordrtc/concord/signaling"
)

// BotTokenTTL is how long the join tokens `concord bot` mints from CONCORD_SECRET are valid. A
// token is checked when a bot joins; once in, a bot that loses its connection resumes with the
// server's resume token, so an hour covers a test rig's start however long it then runs.
const BotTokenTTL = time.Hour

// botIdentity is who one bot of `concord bot` joins as.
type botIdentity struct {
	user, device string
	token        string // "" on an open server
	label        string // the bot's "bot" log field
}

// botIdentities says who the n bots join room as, for a server with or without a secret:
//   - token (--token, CONCORD_TOKEN) set: every bot is the token's user, on a device of its own
//     (device-1 … device-n); the server admits up to --max-devices-per-token of them through one
//     token without a device claim. A token that pins a device admits one bot.
//   - else secret (CONCORD_SECRET) set: bot i is user name+i with a token of its own, minted
//     here and valid for BotTokenTTL, that lets it be elected host as on an open server.
//   - else (an open server): bot i is user name+i, without a token.
func botIdentities(n int, name, room, device, token, secret string, now time.Time) ([]botIdentity, error) {
	ids := make([]botIdentity, n)
	if token != "" {
		c, err := peekClaims(token)
		if err != nil {
			return nil, usageError{fmt.Errorf("--token: %w", err)}
		}
		if c.Device != "" && n > 1 {
			return nil, usageError{fmt.Errorf("--token pins device %q: it admits one bot, not -n %d (mint one without a device claim, or set CONCORD_SECRET instead of --token so that each bot gets its own)", c.Device, n)}
		}
		for i := range ids {
			d := fmt.Sprintf("%s-%d", device, i+1)
			if c.Device != "" {
				d = c.Device
			}
			ids[i] = botIdentity{user: c.User, device: d, token: token, label: c.User + "/" + d}
		}
		return ids, nil
	}
	for i := range ids {
		user := fmt.Sprintf("%s%d", name, i+1)
		ids[i] = botIdentity{user: user, device: device, label: user}
		if secret == "" {
			continue
		}
		t, err := signaling.IssueToken([]byte(secret), signaling.Claims{
			Room: signaling.RoomID(room), User: user, Kind: signaling.KindBot, MayHost: true,
			IssuedAt: now, ExpiresAt: now.Add(BotTokenTTL),
		})
		if err != nil {
			return nil, err
		}
		ids[i].token = t
	}
	return ids, nil
}

// tokenIdentity is the identity claims of a join token (signaling.Claims).
type tokenIdentity struct {
	User   string `json:"user"`
	Device string `json:"device"`
}

// peekClaims reads the user and device claims of a join token without verifying it: the server
// verifies it when each bot joins; the bots only need to know whom it names.
func peekClaims(token string) (tokenIdentity, error) {
	var c tokenIdentity
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, errors.New("not a JWT (three dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return c, fmt.Errorf("its payload: %w", err)
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, fmt.Errorf("its payload: %w", err)
	}
	if c.User == "" {
		return c, errors.New("it names no user")
	}
	return c, nil
}
