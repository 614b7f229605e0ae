package server

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// startTestServer starts a server of o on a free loopback port, WebRTC on loopback, with
// /metrics, and shuts it down when the test ends. Its log is the test's (warnings) unless o has
// a Logger of its own.
func startTestServer(t *testing.T, o Options) *Server {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	o.Metrics = true
	o.Network.LoopbackOnly = true
	if reflect.ValueOf(o.Logger).IsZero() {
		o.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		select {
		case err := <-s.Failed():
			if !errors.Is(err, ErrShutdown) {
				t.Errorf("serve: %v", err)
			}
		default:
		}
	})
	return s
}
