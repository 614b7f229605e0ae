//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/voice"
)

// TestVoiceClusterFailover: two `concord serve` nodes share one nats-server (JetStream) on
// loopback. Member a joins through n1 (which so owns room arena), members b and c through n2 (an
// edge: their websockets are relayed to n1). Each opens a voice session (voice.Keep) through the
// node it joined: b's POST (b is given only n2) reaches n2, which relays it to n1 over NATS
// (docs/protocol.md §10 "In a cluster"), and all hear each other through n1's forwarder. n1 is
// SIGKILLed (in a second run, stopped with SIGTERM): the room moves to n2 once its lease expires,
// every member's signaling resumes there, every voice session notices the failure and POSTs again,
// and everyone hears everyone again. The outage (each listener's last packet of each speaker in its
// old session to the first in its new one) is logged.
func TestVoiceClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped in -short mode")
	}
	t.Run("SIGKILL", func(t *testing.T) { voiceClusterFailover(t, (*hostProcess).kill) })
	// A graceful stop: the owner releases its leases, closes its members (server_closing) and
	// says bye on every voice session before it exits.
	t.Run("SIGTERM", func(t *testing.T) {
		voiceClusterFailover(t, func(h *hostProcess) error {
			if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				return err
			}
			select {
			case <-h.waited:
				return nil
			case <-time.After(20 * time.Second):
				return errors.New("serve still running 20 s after SIGTERM")
			}
		})
	})
}

func voiceClusterFailover(t *testing.T, stop func(*hostProcess) error) {
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
	lists := map[string][]string{"a": {urls[0], urls[1]}, "b": {urls[1], urls[0]}, "c": {urls[1], urls[0]}}
	users := []string{"a", "b", "c"}
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
		for _, u := range users {
			if !slices.Contains(ids, signaling.Identity(u+"/d")) {
				return fmt.Errorf("members %v", ids)
			}
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
	member("c")
	poll.Until(t, 20*time.Second, "a, b and c members of arena on n1", func() error { return members(urls[0]) })

	var silence bytes.Buffer
	if err := voice.WriteSilence(&silence, 50); err != nil {
		t.Fatal(err)
	}
	keep := map[string]*voice.Keeper{}
	for _, user := range users {
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
	// heard is what listener got of speaker: the last packet in its first old sessions, and the
	// first packet and the number of packets in the later ones (opened after the failure).
	heard := func(listener, speaker string, old int) (last, first time.Time, n int) {
		for i, c := range keep[listener].Sessions() {
			st := c.Speakers()[speaker+"/d"]
			if i < old {
				if st.Last.After(last) {
					last = st.Last
				}
				continue
			}
			n += st.Packets
			if st.Packets > 0 && (first.IsZero() || st.First.Before(first)) {
				first = st.First
			}
		}
		return last, first, n
	}
	var pairs [][2]string
	for _, l := range users {
		for _, s := range users {
			if l != s {
				pairs = append(pairs, [2]string{l, s})
			}
		}
	}
	hearEachOther := func(old int) error {
		for _, p := range pairs {
			if err := keep[p[0]].Err(); err != nil {
				return fmt.Errorf("%s's voice gave up: %w", p[0], err)
			}
			if _, _, n := heard(p[0], p[1], old); n < 25 {
				return fmt.Errorf("%s heard %d packets of %s", p[0], n, p[1])
			}
		}
		return nil
	}
	poll.Until(t, 30*time.Second, "everyone hears everyone through n1 (b's offer relayed by n2)", func() error {
		return hearEachOther(0)
	})
	for _, u := range users {
		if got := len(keep[u].Sessions()); got != 1 {
			t.Fatalf("%s opened %d sessions before the failure, want 1", u, got)
		}
	}
	// b's and c's offers went through n2's relay, answered by n1's forwarder.
	if edge, owner := voiceRelayed(t, urls[1], admin, "edge"), voiceRelayed(t, urls[0], admin, "owner"); edge < 2 || owner < 2 {
		t.Fatalf("relayed voice requests: n2 as edge %v, n1 as owner %v; want at least 2 each", edge, owner)
	}

	killed := time.Now()
	if err := stop(nodes[0]); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 45*time.Second, "every member resumed on n2", func() error { return members(urls[1]) })
	t.Logf("every member's signaling resumed on n2 %v after the signal", time.Since(killed).Round(10*time.Millisecond))
	// The sessions opened before the failure (one each, checked above) are the old ones.
	poll.Until(t, 45*time.Second, "everyone hears everyone again through n2", func() error { return hearEachOther(1) })
	for _, p := range pairs {
		last, first, _ := heard(p[0], p[1], 1)
		t.Logf("%s hears %s again: outage %v (last packet %v before the signal, first %v after); %d sessions",
			p[0], p[1], first.Sub(last).Round(time.Millisecond), killed.Sub(last).Round(time.Millisecond),
			first.Sub(killed).Round(time.Millisecond), len(keep[p[0]].Sessions()))
	}
}

// voiceRelayed is url's concord_voice_relayed_total{side,result="ok"}, read from /metrics with the admin key.
func voiceRelayed(t *testing.T, url, key, side string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := `concord_voice_relayed_total{result="ok",side="` + side + `"} `
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, want); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}
