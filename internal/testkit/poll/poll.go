// Package poll waits in tests for a condition with a deadline, instead of sleeping for a fixed
// time: tests of real networking stacks poll what they expect until it holds or time runs out.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until evaluates its condition.
const Interval = 20 * time.Millisecond

// Until evaluates cond every Interval until it returns nil, and fails t with the last error when
// d has passed (cond is always evaluated at least once, also after the deadline).
func Until(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v: %v", what, d, err)
		}
		time.Sleep(Interval)
	}
}
