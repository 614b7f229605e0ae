package turnserver

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the TURN REST API (and coturn) define the password as HMAC-SHA1
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxIdentity caps the identity part of a username, in bytes: a member's user, device and room
// (128 bytes each in signaling) and their two slashes, under STUN's 513-byte USERNAME.
const MaxIdentity = 400

// maxExpiryDigits caps the expiry part: Unix seconds fit in 11 digits until year 5138.
const maxExpiryDigits = 11

// Credential errors, wrapped with detail.
var (
	ErrCredentialMalformed = errors.New("turnserver: malformed username (want expiry:identity)")
	ErrCredentialExpired   = errors.New("turnserver: expired credentials")
)

// DeriveKey returns the HMAC key of TURN credentials for a deployment secret
// (CONCORD_SECRET), so that TURN passwords do not reveal anything about the
// key that signs join tokens.
func DeriveKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("concord turn rest credentials v1"))
	return m.Sum(nil)
}

// Password returns the TURN REST API password of username under key:
// base64(HMAC-SHA1(key, username)), as coturn's use-auth-secret computes it.
func Password(key []byte, username string) string {
	m := hmac.New(sha1.New, key)
	m.Write([]byte(username))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Username returns "expiry:identity" for credentials valid until expiry.
func Username(identity string, expiry time.Time) string {
	return strconv.FormatInt(expiry.Unix(), 10) + ":" + identity
}

// Member is whom credentials are issued to: a member of a room, as signaling admitted it. Its
// identity in a username is "user/device/room" ("user/device" without a room); user and device
// hold no "/" (signaling's rule), the room may.
type Member struct {
	User, Device, Room string
}

// Identity returns the identity part of m's usernames.
func (m Member) Identity() string {
	if m.Room == "" {
		return m.User + "/" + m.Device
	}
	return m.User + "/" + m.Device + "/" + m.Room
}

// token is the key of Config.MaxAllocationsPerToken: a join token names one user in one room,
// and every device it admits shares the user.
func (m Member) token() string { return m.User + "/" + m.Room }

// memberOf reads an identity back into a Member; any string reads as one.
func memberOf(identity string) Member {
	var m Member
	m.User, m.Device, _ = strings.Cut(identity, "/")
	m.Device, m.Room, _ = strings.Cut(m.Device, "/")
	return m
}

// parseUsername reads a REST API username into its expiry and identity, without checking the
// expiry (the caller decides which requests it gates). It never panics on any input (see
// FuzzParseUsername).
func parseUsername(username string) (expiry time.Time, identity string, err error) {
	exp, id, ok := strings.Cut(username, ":")
	if !ok || exp == "" || len(exp) > maxExpiryDigits || id == "" || len(id) > MaxIdentity {
		return time.Time{}, "", fmt.Errorf("%w: %q", ErrCredentialMalformed, truncate(username))
	}
	for i := 0; i < len(exp); i++ {
		if exp[i] < '0' || exp[i] > '9' {
			return time.Time{}, "", fmt.Errorf("%w: %q", ErrCredentialMalformed, truncate(username))
		}
	}
	sec, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w: %q", ErrCredentialMalformed, truncate(username))
	}
	return time.Unix(sec, 0), id, nil
}

// checkExpiry refuses credentials whose expiry is before now.
func checkExpiry(username string, expiry, now time.Time) error {
	if expiry.Unix() < now.Unix() {
		return fmt.Errorf("%w: %q expired %s ago", ErrCredentialExpired, truncate(username), now.Sub(expiry).Round(time.Second))
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
