package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// ClientPrefix is the fixed path under which `concord serve` always serves the client modules
// (ClientPrefix+"index.js" is the package entry), next to a game's own page served at "/" by
// StaticHandler. The arena demo keeps its own paths (/, /js/, /css/, /inspect) when no game
// page is served.
const ClientPrefix = "/concord/js/"

//go:embed static
var static embed.FS

// Files is the embedded static tree (index.html, inspect.html, js/…).
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	return sub
}

// ContentSecurityPolicy is sent with every response of Handler: scripts, styles and fetches
// from this origin only (websockets to any host: the page may name another signaling server),
// no plugins, and no framing (clickjacking).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// StaticContentSecurityPolicy is the default policy of a game's own pages (StaticHandler): like
// ContentSecurityPolicy, scripts only from the page's origin (no inline script, no eval), but
// inline styles, images, media and fonts from data: and blob: URLs, and framing by the same
// origin, which games commonly need.
const StaticContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self' data:; connect-src 'self' ws: wss:; " +
	"object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'"

// secure sets the headers every response of this package carries, csp first.
func secure(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// ClientHandler serves the client modules (the js/ tree) with paths relative to its root: mount
// it with http.StripPrefix(ClientPrefix, …). Cross-origin access (CORS) is the caller's choice.
func ClientHandler() http.Handler {
	sub, err := fs.Sub(Files(), "js")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w.Header(), ContentSecurityPolicy)
		serveModule(files, w, r)
	})
}

// StaticHandler serves a game's own page and assets from dir (index.html at "/") with csp as
// their Content-Security-Policy (empty: StaticContentSecurityPolicy). Directory listings are
// refused, and so are dot files (.git, .env), which a game directory may hold.
func StaticHandler(dir fs.FS, csp string) http.Handler {
	if csp == "" {
		csp = StaticContentSecurityPolicy
	}
	files := http.FileServerFS(dir)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w.Header(), csp)
		p := r.URL.Path
		if strings.Contains(p, "/.") {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(p, "/") {
			if f, err := fs.Stat(dir, strings.TrimPrefix(p+"index.html", "/")); err != nil || f.IsDir() {
				http.NotFound(w, r) // no index.html: no listing either
				return
			}
		}
		serveModule(files, w, r)
	})
}

// serveModule serves r from files, with JavaScript's media type for .js/.mjs (module scripts
// need it under nosniff) and revalidation on every load.
func serveModule(files http.Handler, w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, ".js") || strings.HasSuffix(r.URL.Path, ".mjs") {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-cache")
	files.ServeHTTP(w, r)
}

// Handler serves the page at "/", the inspector at "/inspect" and the client modules.
func Handler() http.Handler {
	files := http.FileServerFS(Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		secure(h, ContentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY") // frame-ancestors for older browsers
		if r.URL.Path == "/inspect" {
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/inspect.html"
			files.ServeHTTP(w, r2)
			return
		}
		serveModule(files, w, r)
	})
}
