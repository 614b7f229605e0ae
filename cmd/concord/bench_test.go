package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

// TestBenchHostStdinEOFAndProfile runs `concord bench-host` as the migration benchmark starts it:
// it hosts the bench room, stops with exit 0 when its standard input ends, and then holds the
// CPU profile -cpuprofile asked for.
func TestBenchHostStdinEOFAndProfile(t *testing.T) {
	srv := signaling.New(signaling.Config{Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	prof := filepath.Join(t.TempDir(), "host.prof")
	stdin, feed := io.Pipe()
	var stderr bytes.Buffer // written by run's goroutine; read after it returned
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"bench-host", "-server", hs.URL, "-entities", "20", "-moving", "5",
			"-exit-on-stdin-eof", "-cpuprofile", prof, "-log-level", "error"}, stdin, io.Discard, &stderr)
	}()
	poll.Until(t, 10*time.Second, "the bench host hosts the bench room", func() error {
		select {
		case c := <-code:
			code <- c
			return fmt.Errorf("bench-host exited early with %d", c)
		default:
		}
		rooms, err := fetchRooms(hs.URL)
		if err != nil {
			return err
		}
		for _, r := range rooms {
			if r.Room == "bench" && r.Host != 0 && len(r.Members) == 1 {
				return nil
			}
		}
		return errors.New("no bench room with a host yet")
	})
	_ = feed.Close() // the benchmark that started it is gone
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d after stdin ended:\n%s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bench-host did not stop when its standard input ended")
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("no CPU profile at %s: %v", prof, err)
	}
}
