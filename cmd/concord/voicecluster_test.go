//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/arena"
	"github.com/concordrtc/concord/internal/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// TestVoiceClusterFailover: two `concord serve` nodes share one nats-server (JetStream) on
// loopback. Member a joins through n1 (which so owns room arena), member b through n2 (an edge:
// its websocket is relayed to n1). Each opens a voice session (voice.Keep) through the node it
// joined: b's POST reaches n2, which relays it to n1 over NATS (docs/protocol.md §10 "In a
// cluster"), and both hear each other through n1's forwarder. n1 is SIGKILLed: the room moves to
// n2 once its lease expires, both members' signaling resumes there, both voice sessions notice
// the failure and POST again, and both hear each other again. The outage (each listener's last
// packet of each speaker before the kill to its first after) is logged.
func TestVoiceClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped in -short mode")
	}
	const secret, admin = "voice cluster secret, 32 bytes!!", "voice-admin"
	t.Setenv("CONCORD_SECRET", secret)
	t.Setenv("CONCORD_ADMIN_KEY", admin)
	t.Setenv(envLoopbackOnly, "1")
	ns := runNATS(t, natsserver.Options{JetStream: true, StoreDir: t.TempDir()})
	bin := buildConcord(t)
	var urls []string
	var nodes []*hostProcess
	for i := range 2 {
		addr := freeLoopbackAddr(t)
		nodes = append(nodes, startProcess(t, bin, "serve", "--addr", addr, "--nats", ns.ClientURL(), "--node-name", fmt.Sprintf("n%d", i+1),
			"--lease-ttl", "2s", "--dedicated-host=false", "--voice", "--voice-radius", "0", "--log-level", "warn"))
		urls = append(urls, "http://"+addr)
	}
	for _, u := range urls {
		waitHealthy(t, u)
	}
	token := func(user string) string {
		tok, err := signaling.IssueToken([]byte(secret), signaling.Claims{Room: "arena", User: user, Device: "d", Kind: signaling.KindBot,
			ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	lists := map[string][]string{"a": {urls[0], urls[1]}, "b": {urls[1], urls[0]}}
	member := func(user string) {
		startTestBot(t, ctx, &wg, lists[user][0]+","+lists[user][1], user, arena.New(arena.Config{}), log, func(c *peer.Config) {
			c.Device, c.Token = "d", token(user)
			c.RedialMin, c.RedialMax = 50*time.Millisecond, 500*time.Millisecond
		})
	}
	members := func(url string) error {
		r, err := adminRoom(url, admin)
		if err != nil {
			return err
		}
		var ids []signaling.Identity
		for _, m := range r.Members {
			ids = append(ids, m.PeerID)
		}
		if !slices.Contains(ids, "a/d") || !slices.Contains(ids, "b/d") {
			return fmt.Errorf("members %v", ids)
		}
		return nil
	}
	member("a")
	poll.Until(t, 20*time.Second, "a joined n1", func() error {
		r, err := adminRoom(urls[0], admin)
		if err != nil {
			return err
		}
		if len(r.Members) == 0 {
			return fmt.Errorf("room %+v", r)
		}
		return nil
	})
	member("b")
	poll.Until(t, 20*time.Second, "a and b members of arena on n1", func() error { return members(urls[0]) })

	var silence bytes.Buffer
	if err := voice.WriteSilence(&silence, 50); err != nil {
		t.Fatal(err)
	}
	keep := map[string]*voice.Keeper{}
	for _, user := range []string{"a", "b"} {
		// Short ICE timeouts: a dead forwarder is noticed in about a second, not five.
		lapi, err := link.NewAPI(link.Config{Logger: zerolog.Nop(), DisableUDPMux: true,
			ICEDisconnectedTimeout: time.Second, ICEFailedTimeout: 3 * time.Second, ICEKeepaliveInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		api, err := voice.NewMediaAPI(lapi)
		if err != nil {
			t.Fatal(err)
		}
		// b's voice goes only to n2, its edge: the offer must be relayed to n1, the owner.
		servers := lists[user]
		if user == "b" {
			servers = servers[:1]
		}
		k := voice.Keep(ctx, voice.KeepConfig{Servers: servers, Grace: 500 * time.Millisecond,
			RedialMin: 100 * time.Millisecond, RedialMax: time.Second, MaxAttempts: 60,
			Publish: func() io.Reader { return bytes.NewReader(silence.Bytes()) },
			Dial: voice.DialConfig{Room: "arena", Member: user + "/d", Token: token(user), Loop: true, Stamp: true, Slots: 2, API: api,
				Logger: log}})
		keep[user] = k
		t.Cleanup(func() { _ = k.Close(); _ = lapi.Close() })
	}
	// hears reports whether listener's sessions from start on got packets of speaker.
	heard := func(listener, speaker string, after time.Time) (first, last time.Time, n int) {
		for _, c := range keep[listener].Sessions() {
			st, ok := c.Speakers()[speaker+"/d"]
			if !ok {
				continue
			}
			for _, at := range st.Arrivals {
				if at.Before(after) {
					if at.After(last) {
						last = at
					}
					continue
				}
				n++
				if first.IsZero() || at.Before(first) {
					first = at
				}
			}
		}
		return first, last, n
	}
	pairs := [][2]string{{"a", "b"}, {"b", "a"}}
	hearEachOther := func(after time.Time) error {
		for _, p := range pairs {
			if err := keep[p[0]].Err(); err != nil {
				return fmt.Errorf("%s's voice gave up: %w", p[0], err)
			}
			if _, _, n := heard(p[0], p[1], after); n < 25 {
				return fmt.Errorf("%s heard %d packets of %s", p[0], n, p[1])
			}
		}
		return nil
	}
	start := time.Now()
	poll.Until(t, 30*time.Second, "a and b hear each other through n1 (b's offer relayed by n2)", func() error {
		if err := hearEachOther(start); err != nil {
			return fmt.Errorf("%w (a: %d sessions, b: %d)", err, len(keep["a"].Sessions()), len(keep["b"].Sessions()))
		}
		return nil
	})
	if got := len(keep["b"].Sessions()); got != 1 {
		t.Fatalf("b opened %d sessions before the failure, want 1", got)
	}

	if err := nodes[0].kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	poll.Until(t, 45*time.Second, "a and b hear each other again through n2", func() error {
		if err := members(urls[1]); err != nil {
			return fmt.Errorf("signaling not resumed on n2: %w", err)
		}
		return hearEachOther(killed)
	})
	for _, p := range pairs {
		first, last, _ := heard(p[0], p[1], killed)
		t.Logf("%s hears %s again: outage %v (last packet %v before the kill, first %v after); %d sessions",
			p[0], p[1], first.Sub(last).Round(time.Millisecond), killed.Sub(last).Round(time.Millisecond),
			first.Sub(killed).Round(time.Millisecond), len(keep[p[0]].Sessions()))
	}
}
