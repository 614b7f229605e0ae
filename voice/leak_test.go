package voice

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the forwarder, its clients and followers leave no goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
