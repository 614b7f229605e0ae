package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/server"
	"github.com/concordrtc/concord/signaling"
)

func fetchRooms(url string) ([]signaling.RoomInfo, error) {
	resp, err := http.Get(url + "/api/rooms")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rooms []signaling.RoomInfo
	return rooms, json.NewDecoder(resp.Body).Decode(&rooms)
}

// TestServeDedicatedHostAndEightBots is the first run a new user makes: `concord serve` and
// `concord bot -n 8 --move-for …`; /api/rooms must show the dedicated host and eight bots, all
// synced, with equal replica hashes once the bots rest.
func TestServeDedicatedHostAndEightBots(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := startServer(ctx, server.Options{Addr: "127.0.0.1:0", Room: "arena", DedicatedHost: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.wait(ctx) }()

	var out bytes.Buffer
	bots := make(chan error, 1)
	go func() {
		bots <- cmdBot(ctx, []string{"--server", s.url, "-n", "8", "--move-for", "2s", "--log-level", "error"}, &lockedWriter{w: &out}, io.Discard)
	}()

	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if last = checkRooms(s.url); last == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("room never converged: %v", last)
	}
	cancel()
	if err := <-bots; err != nil {
		t.Errorf("bots: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

func checkRooms(url string) error {
	rooms, err := fetchRooms(url)
	if err != nil {
		return err
	}
	if len(rooms) != 1 || rooms[0].Room != "arena" {
		return fmt.Errorf("rooms: %+v", rooms)
	}
	r := rooms[0]
	if len(r.Members) != 9 {
		return fmt.Errorf("%d members", len(r.Members))
	}
	var hash string
	for _, m := range r.Members {
		if m.PeerIndex == r.Host && m.Kind != signaling.KindHost {
			return fmt.Errorf("host %d is a %s, want the dedicated host", r.Host, m.Kind)
		}
		if !m.Synced || m.Replica == nil {
			return fmt.Errorf("member %d not synced or not reporting", m.PeerIndex)
		}
		h := fmt.Sprintf("%016x", m.Replica.Hash)
		if hash == "" {
			hash = h
		} else if h != hash {
			return fmt.Errorf("member %d hash %s, another %s", m.PeerIndex, h, hash)
		}
	}
	return nil
}

type lockedWriter struct{ w io.Writer }

func (l *lockedWriter) Write(p []byte) (int, error) { return l.w.Write(p) }
