package signaling

import (
	"crypto/hmac"
	"net/http"
	"strings"
)

// The operator's routes (metrics, profiles, moderation) answer only to the admin key on a server
// with a secret: their data (rooms, identities, goroutine stacks) is no member's business, and a
// profile costs CPU. docs/security.md §9.

// bearer returns the request's "Authorization: Bearer" credential, "" if none (or one too long
// to be a token or a key).
func bearer(r *http.Request) string {
	b, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || len(b) > maxTokenLen {
		return ""
	}
	return b
}

// IsAdmin reports whether r carries the admin key (Config.AdminKey) as its bearer credential,
// compared in constant time. Without an AdminKey no request is admin.
func (s *Server) IsAdmin(r *http.Request) bool {
	b := bearer(r)
	return s.cfg.AdminKey != "" && b != "" && hmac.Equal([]byte(b), []byte(s.cfg.AdminKey))
}

// AdminOnly serves h only to the admin key when the server has a Secret: other requests get 401
// (no credential: token_required) or 403 (another credential: forbidden), counted in
// concord_signaling_refusals_total. An open server (no Secret) serves h to anyone: it already
// lets anyone see every room (docs/security.md §9).
func (s *Server) AdminOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.cfg.Secret) == 0 || s.IsAdmin(r) {
			h.ServeHTTP(w, r)
			return
		}
		s.refuseHTTP(w, r, "this route answers only to the admin key (Authorization: Bearer $CONCORD_ADMIN_KEY)")
	})
}

// refuseHTTP answers a request that lacks the credential a route needs: 401 without one, 403
// with another.
func (s *Server) refuseHTTP(w http.ResponseWriter, r *http.Request, why string) {
	w.Header().Set("Cache-Control", "no-store")
	if bearer(r) == "" {
		s.stats.refuse(ErrTokenRequired)
		w.Header().Set("WWW-Authenticate", `Bearer realm="concord"`)
		http.Error(w, string(CodeTokenRequired)+": "+why, http.StatusUnauthorized)
		return
	}
	s.stats.refuse(ErrForbidden)
	http.Error(w, string(CodeForbidden)+": "+why, http.StatusForbidden)
}
