package signaling

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Claims are what a join token grants. Tokens are HS256 JWTs signed with
// Config.Secret.
type Claims struct {
	// Room is the only room the token admits (claim "room").
	Room RoomID
	// User is the member's user name (claim "user").
	User string
	// Device pins the device (claim "device"); empty lets the join choose.
	Device string
	// Power is the member's power level (claim "power").
	Power int
	// MayHost allows the member to be elected host (claim "mayHost"); absent
	// means false.
	MayHost bool
	// Kind pins the member kind (claim "kind"); empty lets the join choose.
	Kind Kind
	// Mod lets the token's holder kick and ban members of Room through the HTTP API (claim
	// "mod"; docs/protocol.md §4 "Signaling: moderation"); absent means false.
	Mod bool
	// Voice is what the member may do with voice (claim "voice"; docs/protocol.md §10): "publish"
	// (also when absent), "listen" (hear, not speak) or "none" (no voice session).
	Voice string
	// ExpiresAt is required (claim "exp"): tokens without expiry are refused.
	ExpiresAt time.Time
	// NotBefore is optional (claim "nbf").
	NotBefore time.Time
	// IssuedAt is optional (claim "iat").
	IssuedAt time.Time
}

// tokenClaims is the JWT form of Claims.
type tokenClaims struct {
	Room    RoomID `json:"room"`
	User    string `json:"user"`
	Device  string `json:"device,omitempty"`
	Power   int    `json:"power"`
	MayHost bool   `json:"mayHost,omitempty"`
	Kind    Kind   `json:"kind,omitempty"`
	Mod     bool   `json:"mod,omitempty"`
	Voice   string `json:"voice,omitempty"`
	jwt.RegisteredClaims
}

// IssueToken signs claims with secret (HS256). It is meant for tools and
// tests; production deployments may mint the same tokens elsewhere.
func IssueToken(secret []byte, c Claims) (string, error) {
	if len(secret) == 0 {
		return "", ErrNoSecret
	}
	if c.ExpiresAt.IsZero() {
		return "", ErrNoExpiry
	}
	if err := checkClaims(c.Room, c.User, c.Device, c.Kind); err != nil {
		return "", err
	}
	tc := tokenClaims{Room: c.Room, User: c.User, Device: c.Device, Power: c.Power, MayHost: c.MayHost, Kind: c.Kind, Mod: c.Mod, Voice: c.Voice}
	tc.ExpiresAt = jwt.NewNumericDate(c.ExpiresAt)
	if !c.NotBefore.IsZero() {
		tc.NotBefore = jwt.NewNumericDate(c.NotBefore)
	}
	if !c.IssuedAt.IsZero() {
		tc.IssuedAt = jwt.NewNumericDate(c.IssuedAt)
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, tc).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("signaling: signing token: %w", err)
	}
	return s, nil
}

func checkClaims(room RoomID, user, device string, kind Kind) error {
	if err := checkRoom(room); err != nil {
		return err
	}
	if err := checkUser(user); err != nil {
		return err
	}
	if err := checkDevice(device); err != nil {
		return err
	}
	if kind != "" && !kind.Valid() {
		return fmt.Errorf("%w: unknown kind %q", ErrBadMessage, kind)
	}
	return nil
}

// ParseToken verifies a join token against secret at time now and returns its claims, for
// services beside signaling that take the same tokens (the voice forwarder, docs/protocol.md §10).
// Errors wrap ErrTokenInvalid or ErrTokenExpired.
func ParseToken(secret []byte, token string, now time.Time) (Claims, error) {
	return parseToken(secret, token, func() time.Time { return now })
}

// parseToken verifies a token against secret at the time now() and returns its
// claims. Errors wrap ErrTokenInvalid or ErrTokenExpired.
func parseToken(secret []byte, token string, now func() time.Time) (Claims, error) {
	var tc tokenClaims
	_, err := jwt.ParseWithClaims(token, &tc,
		func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(now),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, fmt.Errorf("%w: %v", ErrTokenExpired, err)
	case err != nil:
		return Claims{}, fmt.Errorf("%w: %v", ErrTokenInvalid, err)
	}
	if err := checkClaims(tc.Room, tc.User, tc.Device, tc.Kind); err != nil {
		return Claims{}, fmt.Errorf("%w: claims: %v", ErrTokenInvalid, err)
	}
	c := Claims{Room: tc.Room, User: tc.User, Device: tc.Device, Power: tc.Power, MayHost: tc.MayHost, Kind: tc.Kind, Mod: tc.Mod, Voice: tc.Voice}
	c.ExpiresAt = tc.ExpiresAt.Time
	if tc.NotBefore != nil {
		c.NotBefore = tc.NotBefore.Time
	}
	if tc.IssuedAt != nil {
		c.IssuedAt = tc.IssuedAt.Time
	}
	return c, nil
}
