package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

// TestServeHTTPTimeouts: serve closes an idle keep-alive connection after its idle timeout and a
// connection that never finishes its headers after the header timeout, so that idle sockets
// cannot pile up (5,000 of them held +100 MiB before).
func TestServeHTTPTimeouts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena",
		HTTP: server.HTTPTimeouts{ReadHeader: 300 * time.Millisecond, Read: time.Second, Idle: 300 * time.Millisecond}}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	addr := strings.TrimPrefix(s.url, "http://")

	// closedWithin reads c until the server closes it and reports how long that took.
	closedWithin := func(c net.Conn, r io.Reader) time.Duration {
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(5 * time.Second))
		_, err := io.Copy(io.Discard, r)
		if err != nil {
			t.Fatalf("connection still open after 5 s: %v", err)
		}
		return time.Since(start)
	}

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := idle.Write([]byte("GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if d := closedWithin(idle, br); d > 2*time.Second {
		t.Fatalf("idle keep-alive closed after %v", d)
	}

	// A websocket sets its own deadlines once upgraded: it outlives the HTTP read timeout.
	c, err := signaling.Dial(ctx, s.url, signaling.JoinOptions{Room: "arena", User: "ws"}, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-c.Events() // joined
	select {
	case ev := <-c.Events():
		t.Fatalf("websocket got %T %+v within 1.5 s, want it kept past the 1 s read timeout", ev, ev)
	case <-time.After(1500 * time.Millisecond):
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if d := closedWithin(slow, slow); d > 2*time.Second {
		t.Fatalf("unfinished headers closed after %v", d)
	}
}

// TestServeLimitFlags: serve's limit flags reach the signaling config; unset ones keep the
// defaults.
func TestServeLimitFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var o server.Options
	limitFlags(fs, &o)
	if err := fs.Parse([]string{"--max-members", "512", "--signal-rate", "80", "--ping-interval", "10s", "--max-conns-per-addr", "7", "--http-idle-timeout", "1m"}); err != nil {
		t.Fatal(err)
	}
	l := o.Limits
	if l.MaxMembers != 512 || l.SignalRate != 80 || l.PingInterval != 10*time.Second || l.MaxConnsPerAddr != 7 || o.HTTP.Idle != time.Minute {
		t.Fatalf("limits %+v http %+v", l, o.HTTP)
	}
	if l.SignalBurst != signaling.DefaultSignalBurst || l.MaxRooms != signaling.DefaultMaxRooms || l.PongWait != signaling.DefaultPongWait {
		t.Fatalf("unset flags changed defaults: %+v", l)
	}
}
