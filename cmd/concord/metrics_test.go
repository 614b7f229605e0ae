package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/server"
)

// labelled reads the sample of name whose labels include every one of labels (`key="value"`)
// from serve's /metrics.
func labelled(url, name string, labels ...string) (float64, error) {
	return labelledAuth(url, "", name, labels...)
}

// labelledAuth is labelled with key as the bearer credential (a server with a secret serves
// /metrics only to the admin key).
func labelledAuth(url, key, name string, labels ...string) (float64, error) {
	req, err := http.NewRequest("GET", url+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
next:
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		set, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(","+set+",", ","+l+",") {
				continue next
			}
		}
		return strconv.ParseFloat(value, 64)
	}
	return 0, fmt.Errorf("no %s%v in /metrics", name, labels)
}

// TestServeMetricsRefusals: a member of serve's dedicated host writes its avatar stamped far above
// the host's clock (the stamp freeze of docs/security.md §2); the host refuses it, and /metrics shows the
// refusal under its reason, then the member dropped as an offender once it insists.
func TestServeMetricsRefusals(t *testing.T) {
	s := startTestServer(t, server.Options{DedicatedHost: true})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	attacker := startTestBot(t, ctx, &wg, s.url, "attacker", arena.New(arena.Config{}), log)

	if v, err := labelled(s.url, "concord_peer_refused_total", `reason="stamp_skew"`, `room="arena"`); err != nil || v != 0 {
		t.Fatalf("before the attack: stamp_skew refusals %v (%v), want 0", v, err)
	}
	poll.Until(t, 30*time.Second, "attacker synced with an avatar", func() error {
		var has bool
		if err := attacker.Do(ctx, func(w *peer.World) { _, has = w.AvatarOf(w.Self()) }); err != nil {
			return err
		}
		if !has || !attacker.Status().Synced {
			return fmt.Errorf("synced %v, avatar %v", attacker.Status().Synced, has)
		}
		return nil
	})
	// Re-stamp the attacker's own avatar 2²⁰ above its clock, as a hostile member would: its next
	// updates carry that stamp. Again and again, until the host drops it.
	forge := func(w *peer.World) {
		avatar, _ := w.AvatarOf(w.Self())
		stream, clock := w.Checkpoint()
		var out []byte
		var rd crdt.Reader
		var m crdt.Message
		for rd.Reset(stream); rd.Next(&m) == nil; {
			if m.Entity == avatar && m.Type == crdt.PutComponent && m.Component > schema.ComponentAuthority {
				m.Timestamp = clock + 1<<20
				out = crdt.AppendMessage(out, &m)
			}
		}
		if err := w.MergeCheckpoint(out); err != nil {
			t.Error(err)
		}
	}
	poll.Until(t, 30*time.Second, "stamp_skew refusals and an offender in /metrics", func() error {
		if attacker.Status().Synced {
			_ = attacker.Do(ctx, forge)
		}
		refused, err := labelled(s.url, "concord_peer_refused_total", `reason="stamp_skew"`, `room="arena"`)
		if err != nil {
			return err
		}
		offenders, err := labelled(s.url, "concord_peer_offenders_total", `room="arena"`)
		if err != nil {
			return err
		}
		if refused == 0 || offenders == 0 {
			return fmt.Errorf("stamp_skew refusals %v, offenders %v", refused, offenders)
		}
		return nil
	})
	if v, err := labelled(s.url, "concord_peer_refused_total", `reason="digest_buckets"`, `room="arena"`); err != nil || v != 0 {
		t.Fatalf("digest_buckets refusals %v (%v), want 0: only stamps were forged", v, err)
	}
}
