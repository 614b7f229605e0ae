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

// refusal maps a sentinel to its status (docs/protocol.md §10 "Voice: opening a session").
func refusal(err error) *RefusalError {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrDisabled), errors.Is(err, ErrClosed):
		status = http.StatusServiceUnavailable
	case errors.Is(err, ErrNoToken), errors.Is(err, ErrBadToken):
		status = http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		status = http.StatusForbidden
	case errors.Is(err, ErrNotMember), errors.Is(err, ErrNoSession):
		status = http.StatusNotFound
	case errors.Is(err, ErrTooMany):
		status = http.StatusTooManyRequests
	case errors.Is(err, ErrBadOffer):
		status = http.StatusBadRequest
	}
	return &RefusalError{Status: status, Err: err}
}

// refusalReason is the metric label of a refusal.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrDisabled), errors.Is(err, ErrClosed):
		return "disabled"
	case errors.Is(err, ErrNoToken):
		return "token_required"
	case errors.Is(err, ErrBadToken):
		return "bad_token"
	case errors.Is(err, ErrForbidden):
		return "forbidden"
	case errors.Is(err, ErrNotMember):
		return "not_member"
	case errors.Is(err, ErrTooMany):
		return "too_many"
	case errors.Is(err, ErrBadOffer):
		return "bad_offer"
	}
	return "error"
}
