package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"github.com/concordrtc/concord/server"
)

// TestServeVoice: `concord serve` with voice on and `concord bot --voice`: every bot hears the
// others through the forwarder (positions from the dedicated host's world), counted in /metrics.
func TestServeVoice(t *testing.T) {
	s := startTestServer(t, server.Options{DedicatedHost: true, Voice: server.Voice{On: true, Radius: 6000}})
	ctx, cancel := context.WithCancel(context.Background())
	var out syncbuf.Buffer
	bots := make(chan error, 1)
	go func() {
		bots <- cmdBot(ctx, []string{"--server", s.url, "-n", "3", "--voice", "../../testdata/voice/silence.ogg", "--log-level", "error"}, &out, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-bots; err != nil {
			t.Errorf("bots: %v", err)
		}
	}()
	heard := regexp.MustCompile(`voice: 3/3 sessions, \d+ packets sent, (\d+) heard from 3 speakers`)
	poll.Until(t, 30*time.Second, "3 bots hear each other", func() error {
		m := heard.FindAllStringSubmatch(out.String(), -1)
		if len(m) == 0 {
			return errors.New("no voice line yet")
		}
		if n, _ := strconv.Atoi(m[len(m)-1][1]); n < 100 {
			return errors.New("few packets heard yet")
		}
		return nil
	})
	_, metrics, err := get(http.DefaultClient, s.url+"/metrics")
	if err != nil || !strings.Contains(metrics, "concord_voice_forwarded_packets_total") || !strings.Contains(metrics, "concord_voice_sessions 3") {
		t.Fatalf("metrics: %v\n%s", err, grepLines(metrics, "concord_voice"))
	}
}

// TestServeVoiceOff: --voice=false answers 503.
func TestServeVoiceOff(t *testing.T) {
	s := startTestServer(t, server.Options{})
	resp, err := http.Post(s.url+"/voice/arena?member=a/b", "application/sdp", strings.NewReader("v=0"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", resp.StatusCode)
	}
}

func grepLines(s, sub string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestServeVoiceCORS: a page on an --origin origin may post its offer (the preflight answers,
// Location is exposed); another origin gets 403.
func TestServeVoiceCORS(t *testing.T) {
	s := startTestServer(t, server.Options{Origins: []string{"https://game.example.com"}, Voice: server.Voice{On: true}})
	do := func(method, origin string) *http.Response {
		req, _ := http.NewRequest(method, s.url+"/voice/arena?member=a/b", strings.NewReader("v=0"))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/sdp")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := do(http.MethodOptions, "https://game.example.com"); r.StatusCode != http.StatusNoContent ||
		r.Header.Get("Access-Control-Allow-Origin") != "https://game.example.com" || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", r.StatusCode, r.Header)
	}
	if r := do(http.MethodPost, "https://game.example.com"); r.StatusCode != http.StatusNotFound || r.Header.Get("Access-Control-Expose-Headers") != "Location" {
		t.Fatalf("post from an allowed origin (not a member): %d %v", r.StatusCode, r.Header)
	}
	if r := do(http.MethodPost, "https://evil.example.com"); r.StatusCode != http.StatusForbidden {
		t.Fatalf("post from another origin: %d", r.StatusCode)
	}
}
