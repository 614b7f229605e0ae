package server

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/web"
)

// pageRoutes mounts the pages and the client modules on mux. The client is always at
// web.ClientPrefix (/concord/js/). Without --static, "/" is the arena demo as before (its
// modules also at /js/); with --static DIR, "/" is the game's own directory under its own CSP
// (--static-csp, default web.StaticContentSecurityPolicy) and the arena is not served. Cross-origin
// module loads are admitted for the origins of --origin (CORS) and refused otherwise.
func pageRoutes(mux *http.ServeMux, o Options, origins *originPolicy, log zerolog.Logger) error {
	c := &corsGate{p: origins, log: log.With().Str("component", "http").Logger()}
	mux.Handle(web.ClientPrefix, c.wrap(http.StripPrefix(web.ClientPrefix, web.ClientHandler())))
	if o.Static == "" {
		mux.Handle("/js/", c.wrap(web.Handler()))
		mux.Handle("/", web.Handler())
		return nil
	}
	st, err := os.Stat(o.Static)
	if err != nil {
		return optionError(fmt.Errorf("--static %q: %w", o.Static, err))
	}
	if !st.IsDir() {
		return optionError(fmt.Errorf("--static %q: not a directory", o.Static))
	}
	mux.Handle("/", web.StaticHandler(os.DirFS(o.Static), o.StaticCSP))
	return nil
}

// maxWarnedOrigins bounds the set of refused origins serve remembers having logged.
const maxWarnedOrigins = 64

// corsGate admits cross-origin loads of the client modules from the origins of --origin: it
// answers them with Access-Control-Allow-Origin (and preflights), and refuses other origins with
// 403 and a body naming the flag that admits them. A browser hides that body from the page, so
// serve also logs the first refusal of each origin. Requests without Origin, or from the server's
// own host, pass as they are.
type corsGate struct {
	p   *originPolicy
	log zerolog.Logger

	mu     sync.Mutex
	warned map[string]bool
}

func (c *corsGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" || sameHost(origin, r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		if !c.p.allowed(r) {
			c.warnOnce(origin)
			http.Error(w, fmt.Sprintf("%s: a page on %q may not load the client here (serve --origin %s admits it)", refusedOrigin, origin, origin), http.StatusForbidden)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, HEAD")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (c *corsGate) warnOnce(origin string) {
	if len(origin) > 200 {
		origin = origin[:200]
	}
	c.mu.Lock()
	if c.warned == nil {
		c.warned = map[string]bool{}
	}
	first := !c.warned[origin] && len(c.warned) < maxWarnedOrigins
	if first {
		c.warned[origin] = true
	}
	c.mu.Unlock()
	if first {
		c.log.Warn().Str("origin", origin).Msg("refused a cross-origin load of the client modules; serve --origin admits it")
	}
}

// sameHost reports whether origin names the host the request was sent to (a page this server
// served).
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}
