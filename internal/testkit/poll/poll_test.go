package poll

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records Fatalf instead of stopping the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestUntil(t *testing.T) {
	calls := 0
	Until(t, time.Second, "third call", func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("%d calls, want 3", calls)
	}

	r := &recorder{TB: t}
	start := time.Now()
	Until(r, 50*time.Millisecond, "never", func() error {
		if r.failed != "" {
			return nil // Fatalf recorded: end the loop as a real Fatalf would
		}
		return errors.New("still false")
	})
	if !strings.Contains(r.failed, "never: not reached in 50ms: still false") {
		t.Fatalf("failure %q", r.failed)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("gave up before the deadline")
	}
}
