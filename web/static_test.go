package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

// A game's directory: its page and scripts under its own CSP (or the one given), no dot files, no
// listings; the client modules from the embedded js/ tree.
func TestStaticAndClientHandlers(t *testing.T) {
	dir := fstest.MapFS{
		"index.html":        {Data: []byte("<title>game</title>")},
		"game.mjs":          {Data: []byte("export {}")},
		".git/config":       {Data: []byte("[core]")},
		"assets/sprite.png": {Data: []byte("png")},
	}
	get := func(h http.Handler, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	h := StaticHandler(dir, "")
	if rec := get(h, "/"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "game") ||
		rec.Header().Get("Content-Security-Policy") != StaticContentSecurityPolicy || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("/: %d %v", rec.Code, rec.Header())
	}
	if rec := get(h, "/game.mjs"); rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
		t.Fatalf("/game.mjs: %d %v", rec.Code, rec.Header())
	}
	for _, p := range []string{"/.git/config", "/assets/", "/missing.js"} {
		if rec := get(h, p); rec.Code != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404", p, rec.Code)
		}
	}
	if rec := get(StaticHandler(dir, "default-src 'none'"), "/"); rec.Header().Get("Content-Security-Policy") != "default-src 'none'" {
		t.Fatalf("custom CSP: %v", rec.Header())
	}
	c := ClientHandler()
	if rec := get(c, "/index.js"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "export { Peer") {
		t.Fatalf("client index.js: %d", rec.Code)
	}
}
