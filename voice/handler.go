package voice

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/concordrtc/concord/signaling"
)

// Handler serves POST /voice/{room} and DELETE /voice/{room}/{session} (docs/protocol.md §10). A
// nil Forwarder's handler answers 503 (voice disabled) to both.
func (f *Forwarder) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /voice/{room}", f.servePost)
	mux.HandleFunc("DELETE /voice/{room}/{session}", f.serveDelete)
	return mux
}

func (f *Forwarder) refuse(w http.ResponseWriter, err error) {
	re := refusal(err)
	if f != nil {
		f.c.result(refusalReason(err))
	}
	if re.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	http.Error(w, err.Error(), re.Status)
}

func (f *Forwarder) servePost(w http.ResponseWriter, r *http.Request) {
	if f == nil {
		f.refuse(w, ErrDisabled)
		return
	}
	room := signaling.RoomID(r.PathValue("room"))
	member := signaling.Identity(r.URL.Query().Get("member"))
	listen, err := f.authorize(room, member, r.Header.Get("Authorization"))
	if err != nil {
		f.refuse(w, err)
		return
	}
	idx, ok := f.cfg.Members.MemberIndex(room, member)
	if !ok {
		f.refuse(w, fmt.Errorf("%w: %q in %q", ErrNotMember, member, room))
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/sdp" {
		f.refuse(w, fmt.Errorf("%w: Content-Type %q, want application/sdp", ErrBadOffer, ct))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxOffer+1))
	if err != nil || len(body) > maxOffer {
		f.refuse(w, fmt.Errorf("%w: body over %d bytes or unread", ErrBadOffer, maxOffer))
		return
	}
	s, answer, err := f.open(r.Context(), room, member, idx, listen, string(body))
	if err != nil {
		f.refuse(w, err)
		return
	}
	f.log.Debug().Str("room", string(room)).Str("member", string(member)).Int("slots", len(s.slots)).Bool("listenOnly", listen).Msg("voice session")
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Location", "/voice/"+string(room)+"/"+s.id)
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answer)
}

func (f *Forwarder) serveDelete(w http.ResponseWriter, r *http.Request) {
	if f == nil {
		f.refuse(w, ErrDisabled)
		return
	}
	if err := f.remove(signaling.RoomID(r.PathValue("room")), r.PathValue("session")); err != nil {
		http.Error(w, err.Error(), refusal(err).Status)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// authorize checks the join token (with a secret) for room and member and returns whether the
// member may only listen.
func (f *Forwarder) authorize(room signaling.RoomID, member signaling.Identity, auth string) (bool, error) {
	if len(f.cfg.Secret) == 0 {
		return false, nil
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || token == "" {
		return false, ErrNoToken
	}
	c, err := signaling.ParseToken(f.cfg.Secret, token, f.cfg.Now())
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if c.Room != room {
		return false, fmt.Errorf("%w: the token is for room %q", ErrBadToken, c.Room)
	}
	if c.Device != "" && member != signaling.NewIdentity(c.User, c.Device) || c.Device == "" && member.User() != c.User {
		return false, fmt.Errorf("%w: the token is not %q's", ErrForbidden, member)
	}
	switch c.Voice {
	case "", "publish":
		return false, nil
	case "listen":
		return true, nil
	}
	return false, fmt.Errorf("%w: the token's voice claim is %q", ErrForbidden, c.Voice)
}

// IsRefusal reports whether err is a refusal of the forwarder and its HTTP status.
func IsRefusal(err error) (int, bool) {
	var re *RefusalError
	if errors.As(err, &re) {
		return re.Status, true
	}
	return 0, false
}
