package voice

import (
	"errors"
	"net/http"
)

// Errors of the forwarder. Each refusal of a session is a *RefusalError wrapping one of these, so
// a caller picks the HTTP status with errors.As and the reason with errors.Is.
var (
	ErrDisabled     = errors.New("voice: disabled")
	ErrNoToken      = errors.New("voice: a token is required")
	ErrBadToken     = errors.New("voice: invalid token")
	ErrForbidden    = errors.New("voice: not allowed")
	ErrNotMember    = errors.New("voice: not a member of the room")
	ErrTooMany      = errors.New("voice: too many sessions in the room")
	ErrBadOffer     = errors.New("voice: bad offer")
	ErrClosed       = errors.New("voice: forwarder closed")
	ErrNoSession    = errors.New("voice: no such session")
	ErrConfig       = errors.New("voice: bad config")
	ErrServer       = errors.New("voice: forwarder refused")
	ErrSessionEnded = errors.New("voice: session ended")
)

// RefusalError is a refused session: Status is the HTTP status the forwarder answers, Err the
// reason (one of the sentinels above, wrapped with detail).
type RefusalError struct {
	Status int
	Err    error
}

func (e *RefusalError) Error() string { return e.Err.Error() }
func (e *RefusalError) Unwrap() error { return e.Err }

// refusals maps each sentinel to its HTTP status and metric label (docs/protocol.md §10 "Voice:
// opening a session"); anything else is a 500, "error".
var refusals = []struct {
	err    error
	status int
	reason string
}{
	{ErrDisabled, http.StatusServiceUnavailable, "disabled"},
	{ErrClosed, http.StatusServiceUnavailable, "disabled"},
	{ErrNoToken, http.StatusUnauthorized, "token_required"},
	{ErrBadToken, http.StatusUnauthorized, "bad_token"},
	{ErrForbidden, http.StatusForbidden, "forbidden"},
	{ErrNotMember, http.StatusNotFound, "not_member"},
	{ErrNoSession, http.StatusNotFound, "not_member"},
	{ErrTooMany, http.StatusTooManyRequests, "too_many"},
	{ErrBadOffer, http.StatusBadRequest, "bad_offer"},
}

// refusal wraps err with its status.
func refusal(err error) *RefusalError {
	status, _ := classify(err)
	return &RefusalError{Status: status, Err: err}
}

// refusalReason is the metric label of a refusal.
func refusalReason(err error) string {
	_, reason := classify(err)
	return reason
}

func classify(err error) (int, string) {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return r.status, r.reason
		}
	}
	return http.StatusInternalServerError, "error"
}
