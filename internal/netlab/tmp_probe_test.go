package netlab_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/migrationcheck"
	"github.com/concordrtc/concord/internal/netlab"
)

func TestProbeDirect(t *testing.T) {
	lab := netlab.Get(t)
	bin := concord(t)
	start(t, lab.Server, "serve", bin, "serve", "--addr", serverHTTP, "--dedicated-host=false")
	waitFor(t, 10*time.Second, "healthz", func() error { _, err := http.Get(serverURL + "/healthz"); return err })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	clk := &migrationcheck.Clock{}
	startLabBot(t, ctx, &wg, netlab.Home{NS: lab.Public, Addr: netlab.PublicAddr}, "pubbot", 9, clk)
	waitFor(t, 10*time.Second, "room", func() error { _, err := getRoom("arena"); return err })
	startLabBot(t, ctx, &wg, lab.A, "abot", 10, clk)
	time.Sleep(5 * time.Second)
	clk.Jump(10 * time.Hour)
	r := converged(t, 2, 0, 40*time.Second, nil)
	t.Logf("%v", r)
	startBrowser(t, lab.B.NS, "bob")
	r = converged(t, 3, 0, 40*time.Second, nil)
	t.Logf("%v", r)
}
