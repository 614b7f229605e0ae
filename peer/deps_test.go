package peer_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoServerDependencies checks that a program embedding a peer does not link the signaling
// server's dependencies: peer speaks to signaling through signaling/sigclient, which imports
// neither Prometheus nor JWT. A file of peer that imports package signaling (the server) fails
// it.
func TestNoServerDependencies(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".", "./link").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "prometheus") || strings.Contains(pkg, "golang-jwt") || pkg == "github.com/concordrtc/concord/signaling" {
			t.Errorf("peer depends on %s", pkg)
		}
	}
}
