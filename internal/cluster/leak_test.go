package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every relay, subscription,
// directory and embedded server the tests start must have ended.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
