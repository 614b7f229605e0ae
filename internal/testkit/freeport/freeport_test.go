package freeport

import (
	"net"
	"testing"
)

// TestPorts: the ports are distinct, below the ephemeral range, and free.
func TestPorts(t *testing.T) {
	ps := Ports(t, 8)
	seen := map[int]bool{}
	for _, p := range ps {
		if p < low || p >= high || seen[p] {
			t.Fatalf("port %d (of %v): outside %d–%d or repeated", p, ps, low, high-1)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", Addr(t))
		if err != nil {
			t.Fatal(err)
		}
		_ = ln.Close()
	}
}
