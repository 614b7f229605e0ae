package durable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

// The ban bucket stores bans by room and target (any bytes: keys are escaped), loads them back
// after a restart of the store, and tells a watcher of every put and delete, as each node of a
// cluster hears the bans made through the others.
func TestBansBucket(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	bans, err := s.Bans()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type change struct {
		ban    signaling.Ban
		lifted bool
	}
	changes := make(chan change, 16)
	watched := make(chan error, 1)
	go func() {
		watched <- bans.Watch(ctx, func(b signaling.Ban, lifted bool) { changes <- change{b, lifted} })
	}()
	until := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	b1 := signaling.Ban{Room: "lobby.1/x", Target: "bob/phone", Until: until, Reason: "spam"}
	b2 := signaling.Ban{Room: "lobby.1/x", Target: "eve"}
	// The watch may start after the first put: put until it sees one.
	var got change
	poll.Until(t, 10*time.Second, "the watcher sees a put", func() error {
		if err := bans.PutBan(b1); err != nil {
			return err
		}
		select {
		case got = <-changes:
			return nil
		case <-time.After(100 * time.Millisecond):
			return fmt.Errorf("no change seen")
		}
	})
	if got.lifted || got.ban.Target != b1.Target || got.ban.Room != b1.Room || !got.ban.Until.Equal(until) {
		t.Fatalf("watched %+v", got)
	}
	for len(changes) > 0 {
		<-changes // the repeated puts
	}
	if err := bans.PutBan(b2); err != nil {
		t.Fatal(err)
	}
	if err := bans.DeleteBan(b1.Room, b1.Target); err != nil {
		t.Fatal(err)
	}
	for _, want := range []change{{b2, false}, {signaling.Ban{Room: b1.Room, Target: b1.Target}, true}} {
		select {
		case c := <-changes:
			if c.lifted != want.lifted || c.ban.Room != want.ban.Room || c.ban.Target != want.ban.Target {
				t.Fatalf("watched %+v, want %+v", c, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change for %+v", want)
		}
	}
	cancel()
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openStore(t, dir)
	bans, err = s.Bans()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := bans.LoadBans()
	if err != nil || len(loaded) != 1 || loaded[0].Room != b2.Room || loaded[0].Target != b2.Target {
		t.Fatalf("after a restart: %+v %v", loaded, err)
	}
}

// TestBansAcrossCluster: three clustered stores, a signaling server on each with the ban bucket as
// its BanStore, a watcher that passes the others' changes on and the kick relay (as serve wires
// them). A ban made through node 1 kicks a member of node 3 at once ("banned") and refuses its
// rejoin there; lifted through node 2, it admits it again on node 3; a kick sent to node 1 reaches
// it on node 3.
func TestBansAcrossCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node JetStream cluster; skipped in -short mode")
	}
	stores := openCluster(t)
	// Every node makes the bucket at once, as the nodes of a cluster started together do.
	buckets := make([]*Bans, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() { buckets[i], errs[i] = st.Bans() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var servers []*signaling.Server
	var urls []string
	for i, bans := range buckets {
		srv := signaling.New(signaling.Config{Secret: []byte("cluster bans secret, 32 bytes!!!"), Bans: bans, AdminKey: "admin",
			KickElsewhere: bans.Kick,
			Logger:        zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Int("node", i+1).Logger()})
		hs := httptest.NewServer(srv.Handler())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, 2)
		go func() {
			defer func() { done <- struct{}{} }()
			_ = bans.Watch(ctx, func(b signaling.Ban, lifted bool) { _ = srv.BanChanged(ctx, b, lifted) })
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			_ = bans.ServeKicks(ctx, srv.Kick)
		}()
		t.Cleanup(func() { cancel(); <-done; <-done; _ = srv.Close(); hs.Close() })
		servers, urls = append(servers, srv), append(urls, hs.URL)
	}
	tok, err := signaling.IssueToken([]byte("cluster bans secret, 32 bytes!!!"), signaling.Claims{Room: "r", User: "bob", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	dial := func() (*signaling.Client, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return signaling.Dial(ctx, urls[2], signaling.JoinOptions{Room: "r", Device: "pc", Token: tok}, signaling.ClientConfig{})
	}
	bob, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if _, err := servers[0].Ban(context.Background(), signaling.Ban{Room: "r", Target: "bob", Until: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for closed := false; !closed; {
		select {
		case ev := <-bob.Events():
			if cl, ok := ev.(signaling.Closed); ok {
				if !errors.Is(cl.Err, signaling.ErrBanned) {
					t.Fatalf("bob on node 3 closed with %v, want ErrBanned", cl.Err)
				}
				closed = true
			}
		case <-deadline:
			t.Fatal("the ban made on node 1 did not reach bob on node 3")
		}
	}
	if _, err := dial(); !errors.Is(err, signaling.ErrBanned) {
		t.Fatalf("bob's rejoin on node 3: %v, want ErrBanned", err)
	}
	if _, err := servers[1].Unban(context.Background(), "r", "bob"); err != nil {
		t.Fatal(err)
	}
	// Node 2 holds the ban through its watch; its unban is stored, and node 3 hears it.
	var bob2 *signaling.Client
	poll.Until(t, 20*time.Second, "bob admitted on node 3 after the lift on node 2", func() error {
		bob2, err = dial()
		return err
	})
	defer bob2.Close()
	// A kick sent to node 1, which has no member bob, reaches him on node 3.
	req, _ := http.NewRequest(http.MethodPost, urls[0]+"/api/rooms/r/kick", strings.NewReader(`{"user":"bob"}`))
	req.Header.Set("Authorization", "Bearer admin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "bob/pc") {
		t.Fatalf("kick through node 1: %d %s", resp.StatusCode, body)
	}
	for ev := range bob2.Events() {
		if cl, ok := ev.(signaling.Closed); ok {
			if !errors.Is(cl.Err, signaling.ErrKicked) || errors.Is(cl.Err, signaling.ErrBanned) {
				t.Fatalf("bob on node 3 closed with %v, want ErrKicked", cl.Err)
			}
		}
	}
}
