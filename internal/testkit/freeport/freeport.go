// Package freeport hands tests TCP ports on 127.0.0.1 that were free a moment ago, for servers
// whose port must be known before they start (a cluster's route ports, a node restarted on the
// same address). Only tests import it.
//
// The ports are drawn below the kernel's ephemeral range (net.ipv4.ip_local_port_range starts at
// 32768 by default): a port taken from port 0 and closed again is the kernel's to hand the next
// listener on port 0 — of a test running in parallel in another package — before this test's
// server binds it. CI once had one package's cluster answer another's routes so.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// low and high bound the range the ports are drawn from.
const low, high = 20000, 32768

// Ports returns n distinct ports of 127.0.0.1, each free when it was drawn.
func Ports(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("freeport: no free port in %d–%d", low, high-1)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(high-low)))
		if err != nil {
			continue // taken
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// Addr returns one such address, "127.0.0.1:PORT".
func Addr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", Ports(t, 1)[0])
}
