package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/pionlog"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/web"
)

// request sends a GET (or OPTIONS) with an Origin header and returns the response, body read.
func request(t *testing.T, method, url, origin string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// Two real origins (httptest servers, as a game's page host would be): serve --static admits
// the one named by --origin for the client modules (CORS) and the websocket, and refuses the
// other with a reason; the game's own page is at "/" under its CSP, the client at /concord/js/.
func TestServeStaticAndCrossOriginClient(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html><title>my game</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "game.js"), []byte("export const x = 1;"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("SECRET=1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("a page")) }
	admitted := httptest.NewServer(http.HandlerFunc(page))
	defer admitted.Close()
	other := httptest.NewServer(http.HandlerFunc(page))
	defer other.Close()

	s := startTestServer(t, server.Options{Static: dir, Origins: []string{admitted.URL}})
	entry := s.url + web.ClientPrefix + "index.js"

	// The game's page, its script, and no dot files nor listings.
	resp, body := request(t, "GET", s.url+"/", "")
	if resp.StatusCode != 200 || !strings.Contains(body, "my game") || resp.Header.Get("Content-Security-Policy") != web.StaticContentSecurityPolicy {
		t.Fatalf("GET /: %d %q CSP %q", resp.StatusCode, body, resp.Header.Get("Content-Security-Policy"))
	}
	if resp, _ := request(t, "GET", s.url+"/game.js", ""); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("GET /game.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, p := range []string{"/.env", "/assets/", "/inspect"} {
		if resp, body := request(t, "GET", s.url+p, ""); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %d %q, want 404", p, resp.StatusCode, body)
		}
	}

	// The client: same origin without CORS headers; the admitted origin with them (and its
	// preflight); the other origin refused with the flag that would admit it.
	resp, body = request(t, "GET", entry, "")
	if resp.StatusCode != 200 || !strings.Contains(body, "export") || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("same-origin client: %d ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, body = request(t, "GET", entry, admitted.URL)
	if resp.StatusCode != 200 || !strings.Contains(body, "export") || resp.Header.Get("Access-Control-Allow-Origin") != admitted.URL {
		t.Fatalf("admitted origin: %d ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if resp, _ := request(t, "OPTIONS", entry, admitted.URL); resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != admitted.URL {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = request(t, "GET", entry, other.URL)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" ||
		!strings.Contains(body, refusedOrigin) || !strings.Contains(body, "--origin "+other.URL) {
		t.Fatalf("other origin: %d ACAO %q %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body)
	}

	// The websocket follows the same list.
	join := func(origin string) error {
		h := http.Header{}
		h.Set("Origin", origin)
		c, err := signaling.Dial(context.Background(), s.url, signaling.JoinOptions{Room: "game", User: "u"}, signaling.ClientConfig{Header: h})
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	if err := join(admitted.URL); err != nil {
		t.Fatalf("admitted origin's websocket: %v", err)
	}
	if err := join(other.URL); err == nil || !strings.Contains(err.Error(), refusedOrigin) {
		t.Fatalf("other origin's websocket: %v, want %s", err, refusedOrigin)
	}
}

// Without --static, serve is as before: the arena at "/", its modules at /js/, and the client
// also at /concord/js/; cross-origin module loads are refused without --origin.
func TestServeDefaultPagesAndClientPrefix(t *testing.T) {
	s := startTestServer(t, server.Options{})
	resp, body := request(t, "GET", s.url+"/", "")
	if resp.StatusCode != 200 || !strings.Contains(body, "Concord arena") || resp.Header.Get("Content-Security-Policy") != web.ContentSecurityPolicy {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	for _, p := range []string{"/js/index.js", web.ClientPrefix + "index.js", web.ClientPrefix + "package.json"} {
		if resp, _ := request(t, "GET", s.url+p, ""); resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		if resp, _ := request(t, "GET", s.url+p, "http://127.0.0.2:8000"); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET %s from another origin: %d, want 403", p, resp.StatusCode)
		}
	}
}

func TestServeStaticBadDir(t *testing.T) {
	o := server.Options{Addr: "127.0.0.1:0", Room: "arena", Static: filepath.Join(t.TempDir(), "missing")}
	if _, err := startServer(context.Background(), o, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "--static") {
		t.Fatalf("missing --static dir: %v", err)
	}
}

// The peers' pion logs (link.Config.Logger) keep the peer's own fields, one "component" key, and
// let warnings through but not pion's info.
func TestPeerPionLogger(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf).With().Timestamp().Str("component", "host").Logger()
	var cfg peer.Config
	if err := (peerNet{}).config(log, &cfg); err != nil {
		t.Fatal(err)
	}
	l := pionlog.New(cfg.Link.Logger).NewLogger("ice")
	l.Info("checking pairs")
	l.Warn("pair failed")
	out := buf.String()
	if strings.Contains(out, "checking pairs") || !strings.Contains(out, "pair failed") ||
		strings.Count(out, `"component"`) != 1 || !strings.Contains(out, `"component":"host"`) || !strings.Contains(out, `"time"`) {
		t.Fatalf("pion's log: %s", out)
	}
}
