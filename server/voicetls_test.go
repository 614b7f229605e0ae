package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/testcert"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// TestVoicePositionsUnderTLS: a TLS server without dedicated hosts (the room hosted by a Go
// peer) still gives its forwarder positions: its follower dials the inner loopback door, not the
// public one whose certificate it would have to verify. Two members in range hear each other;
// one walking out of range leaves the other's slots.
func TestVoicePositionsUnderTLS(t *testing.T) {
	certFile, keyFile, pool := testcert.Write(t, net.ParseIP("127.0.0.1"))
	s := startTestServer(t, Options{TLSCert: certFile, TLSKey: keyFile, Voice: Voice{On: true, Radius: 3000}})
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	ctx, cancel := context.WithCancel(context.Background())
	var peers []*peer.Peer
	t.Cleanup(func() {
		cancel()
		for _, p := range peers {
			<-p.Done()
		}
	})
	join := func(user string, kind signaling.Kind) *peer.Peer {
		cfg := peer.Config{Server: s.URL(), Room: "arena", User: user, Device: "d", Kind: kind, App: arena.New(arena.Config{}), Logger: log}
		cfg.SignalingConfig.Dialer = &websocket.Dialer{HandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsCfg}
		p, err := peer.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, p)
		go func() { _ = p.Run(ctx) }()
		return p
	}
	host := join("host", signaling.KindHost)
	poll.Until(t, 10*time.Second, "the Go host hosts", func() error {
		if !host.Status().IsHost {
			return errors.New("not yet")
		}
		return nil
	})
	a, b := join("a", signaling.KindBot), join("b", signaling.KindBot)
	poll.Until(t, 15*time.Second, "members synced", func() error {
		if !a.Status().Synced || !b.Status().Synced {
			return errors.New("not yet")
		}
		return nil
	})
	place := func(p *peer.Peer, x, y int32) {
		poll.Until(t, 10*time.Second, "avatar placed", func() error {
			var err error
			if derr := p.Do(context.Background(), func(w *peer.World) { err = arena.MoveSelf(w, arena.Vec{X: x, Y: y}) }); derr != nil {
				return derr
			}
			return err
		})
	}
	place(a, 1000, 1000)
	place(b, 2000, 1000) // 1 m from a, within 3 m
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	dial := func(user string) *voice.Client {
		var ogg bytes.Buffer
		if err := voice.WriteSilence(&ogg, 50); err != nil {
			t.Fatal(err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		defer dcancel()
		c, err := voice.Dial(dctx, voice.DialConfig{Server: s.URL(), Room: "arena", Member: user + "/d", Publish: bytes.NewReader(ogg.Bytes()),
			Loop: true, Slots: 4, HTTP: httpc})
		if err != nil {
			t.Fatalf("dial %s: %v", user, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	va, vb := dial("a"), dial("b")
	heard := func(c *voice.Client, who string) int { return c.Speakers()[who+"/d"].Packets }
	poll.Until(t, 20*time.Second, "a and b, in range, hear each other", func() error {
		if heard(va, "b") < 50 || heard(vb, "a") < 50 {
			return fmt.Errorf("a heard %d of b, b %d of a", heard(va, "b"), heard(vb, "a"))
		}
		return nil
	})
	place(b, 15000, 1000) // out of range
	poll.Until(t, 20*time.Second, "b, out of range, leaves a's slots", func() error {
		for _, who := range va.Slots() {
			if who == "b/d" {
				return errors.New("b still in a slot of a")
			}
		}
		return nil
	})
}
