package main

import (
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/testkit/testcert"
	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// getAuth GETs url with bearer as its Authorization (none if empty) and returns the status.
func getAuth(t *testing.T, client *http.Client, url, bearer string) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// With a secret, /metrics (which labels rooms) and /debug/pprof (stacks, CPU) answer only to the
// admin key: anonymous requests get 401 and a member's join token 403 (docs/security.md §9).
func TestServeOperatorRoutesNeedAdminKey(t *testing.T) {
	const secret, adminKey = "0123456789abcdef0123456789abcdef", "operator-key"
	o := server.Options{Secret: secret, Pprof: true}
	o.Limits.AdminKey = adminKey
	s := startTestServer(t, o)
	tok, err := signaling.IssueToken([]byte(secret), signaling.Claims{Room: "arena", User: "alice", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	c := http.DefaultClient
	for _, route := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/cmdline"} {
		if code := getAuth(t, c, s.url+route, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s anonymous: %d, want 401", route, code)
		}
		if code := getAuth(t, c, s.url+route, tok); code != http.StatusForbidden {
			t.Errorf("GET %s with a join token: %d, want 403", route, code)
		}
		if code := getAuth(t, c, s.url+route, adminKey); code != http.StatusOK {
			t.Errorf("GET %s with the admin key: %d, want 200", route, code)
		}
	}
	if v, err := labelledAuth(s.url, adminKey, "concord_signaling_refusals_total", `code="forbidden"`); err != nil || v < 3 {
		t.Errorf("refusals_total{code=forbidden} = %v, %v; want ≥ 3", v, err)
	}
}

// An open server (no secret) serves /metrics to anyone, as before: it shows every room to anyone.
func TestServeOperatorRoutesOpenServer(t *testing.T) {
	s := startTestServer(t, server.Options{Pprof: true})
	for _, route := range []string{"/metrics", "/debug/pprof/"} {
		if code := getAuth(t, http.DefaultClient, s.url+route, ""); code != http.StatusOK {
			t.Errorf("GET %s on an open server: %d, want 200", route, code)
		}
	}
}

// Over TLS every response carries Strict-Transport-Security (--hsts-max-age); plain HTTP none.
func TestServeHSTS(t *testing.T) {
	certFile, keyFile, pool := testcert.Write(t, net.ParseIP("127.0.0.1"))
	s := startTestServer(t, server.Options{TLSCert: certFile, TLSKey: keyFile, HSTSMaxAge: 48 * time.Hour})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, route := range []string{"/", "/healthz", "/api/rooms", "/no-such-page"} {
		resp, err := client.Get(s.url + route)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=172800" {
			t.Errorf("GET %s over TLS: Strict-Transport-Security %q, want max-age=172800", route, got)
		}
	}
	plain := startTestServer(t, server.Options{HSTSMaxAge: 48 * time.Hour})
	resp, err := http.Get(plain.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := resp.Header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("plain HTTP: Strict-Transport-Security %q, want none", got)
	}
}
