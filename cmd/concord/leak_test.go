package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: every goroutine has an owner
// that ends it.
// Every server and peer these tests start, in this process or as a child, keeps its WebRTC on
// loopback (envLoopbackOnly): tests never use the machine's other interfaces.
func TestMain(m *testing.M) {
	if err := os.Setenv(envLoopbackOnly, "1"); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m)
}
