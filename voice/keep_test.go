package voice

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/testkit/poll"
)

// TestKeepBounds: Keep gives up at once on a refusal a redial cannot cure (403), and after
// MaxAttempts dials in a row on one it may (503, a room moving), alternating the node list.
func TestKeepBounds(t *testing.T) {
	var hits [2]atomic.Int32
	status := atomic.Int32{}
	srv := func(i int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			http.Error(w, "no", int(status.Load()))
		}))
		t.Cleanup(s.Close)
		return s
	}
	a, b := srv(0), srv(1)
	for _, tc := range []struct {
		status   int
		attempts int32
	}{{http.StatusForbidden, 1}, {http.StatusServiceUnavailable, 4}} {
		status.Store(int32(tc.status))
		hits[0].Store(0)
		hits[1].Store(0)
		k := Keep(context.Background(), KeepConfig{Servers: []string{a.URL, b.URL}, RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond,
			MaxAttempts: 4, Dial: DialConfig{Room: "arena", Member: "a/d", Slots: 1}})
		poll.Until(t, 20*time.Second, "the keeper gave up", func() error {
			if k.Err() == nil {
				return errors.New("still dialing")
			}
			return nil
		})
		_ = k.Close()
		if st, ok := IsRefusal(k.Err()); !ok || st != tc.status {
			t.Errorf("status %d: gave up with %v", tc.status, k.Err())
		}
		if got := hits[0].Load() + hits[1].Load(); got != tc.attempts {
			t.Errorf("status %d: %d dials, want %d", tc.status, got, tc.attempts)
		}
		if tc.attempts > 1 && (hits[0].Load() == 0 || hits[1].Load() == 0) {
			t.Errorf("status %d: dials %d/%d, want both nodes tried", tc.status, hits[0].Load(), hits[1].Load())
		}
		if len(k.Sessions()) != 0 {
			t.Errorf("status %d: %d sessions", tc.status, len(k.Sessions()))
		}
	}
}
