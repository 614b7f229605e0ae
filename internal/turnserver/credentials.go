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

// MaxIdentity caps the identity part of a username, in bytes.
const MaxIdentity = 256

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

// parseUsername checks a REST API username at time now and returns its
// identity. It never panics on any input (see FuzzParseUsername).
func parseUsername(username string, now time.Time) (identity string, err error) {
	exp, id, ok := strings.Cut(username, ":")
	if !ok || exp == "" || len(exp) > maxExpiryDigits || id == "" || len(id) > MaxIdentity {
		return "", fmt.Errorf("%w: %q", ErrCredentialMalformed, truncate(username))
	}
	for i := 0; i < len(exp); i++ {
		if exp[i] < '0' || exp[i] > '9' {
			return "", fmt.Errorf("%w: %q", ErrCredentialMalformed, truncate(username))
		}
	}
	sec, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrCredentialMalformed, truncate(username))
	}
	if sec < now.Unix() {
		return "", fmt.Errorf("%w: %q expired %s ago", ErrCredentialExpired, truncate(username), now.Sub(time.Unix(sec, 0)).Round(time.Second))
	}
	return id, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
