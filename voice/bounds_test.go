package voice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

var testSecret = []byte("voice-test-secret")

func token(t *testing.T, room, user, device, voiceClaim string) string {
	t.Helper()
	tok, err := signaling.IssueToken(testSecret, signaling.Claims{Room: signaling.RoomID(room), User: user, Device: device,
		Voice: voiceClaim, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dialErr dials and returns the refusal status (0 when the session opened).
func (fx *fixture) dialErr(cfg DialConfig) (*Client, int) {
	fx.t.Helper()
	cfg.Server = fx.srv.URL
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		st, ok := IsRefusal(err)
		if !ok {
			fx.t.Fatalf("dial %s: %v", cfg.Member, err)
		}
		return nil, st
	}
	fx.t.Cleanup(func() { _ = c.Close() })
	return c, 0
}

// TestTokens: with a secret, no token is 401, a token of another member or with voice "none" is
// 403, someone not in the room is 404; a listen-only member's packets are dropped and counted.
func TestTokens(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2}}
	fx := newFixture(t, Config{Members: members, Secret: testSecret})
	cases := []struct {
		name   string
		cfg    DialConfig
		status int
	}{
		{"no token", DialConfig{Room: "r", Member: "a/1"}, http.StatusUnauthorized},
		{"bad token", DialConfig{Room: "r", Member: "a/1", Token: "x.y.z"}, http.StatusUnauthorized},
		{"other room", DialConfig{Room: "r", Member: "a/1", Token: token(t, "s", "a", "1", "")}, http.StatusUnauthorized},
		{"other member", DialConfig{Room: "r", Member: "a/1", Token: token(t, "r", "b", "1", "")}, http.StatusForbidden},
		{"voice none", DialConfig{Room: "r", Member: "a/1", Token: token(t, "r", "a", "1", "none")}, http.StatusForbidden},
		{"not in the room", DialConfig{Room: "r", Member: "c/1", Token: token(t, "r", "c", "1", "")}, http.StatusNotFound},
	}
	for _, tc := range cases {
		if _, st := fx.dialErr(tc.cfg); st != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, st, tc.status)
		}
	}
	// a may only listen but publishes anyway; b listens to everyone.
	a, st := fx.dialErr(DialConfig{Room: "r", Member: "a/1", Token: token(t, "r", "a", "1", "listen"), Publish: silenceOgg(t, 50), Loop: true, Stamp: true})
	if st != 0 {
		t.Fatalf("listen-only session refused: %d", st)
	}
	b, st := fx.dialErr(DialConfig{Room: "r", Member: "b/1", Token: token(t, "r", "b", "", ""), Publish: silenceOgg(t, 50), Loop: true, Stamp: true})
	if st != 0 {
		t.Fatalf("publisher refused: %d", st)
	}
	poll.Until(t, 10*time.Second, "a's packets dropped, b heard by a", func() error {
		if s := fx.f.Stats(); s.DroppedListenOnly < 50 {
			return errors.New("listen-only packets not dropped yet")
		}
		if a.Speakers()["b/1"].Packets < 20 {
			return errors.New("a does not hear b")
		}
		return nil
	})
	if n := b.Speakers()["a/1"].Packets; n != 0 || a.Sent() == 0 {
		t.Fatalf("b heard %d packets of the listen-only a (a sent %d)", n, a.Sent())
	}
}

// TestBitrateBound: a publisher over --voice-max-bitrate has its packets dropped and counted.
func TestBitrateBound(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2}}
	fx := newFixture(t, Config{Members: members, MaxBitrate: 8000}) // 1000 B/s; a sends ~2500
	a := fx.dial("r", "a/1", true, 1)
	b := fx.dial("r", "b/1", false, 1)
	poll.Until(t, 10*time.Second, "a's excess dropped", func() error {
		if fx.f.Stats().DroppedBitrate < 50 || a.Sent() < 150 {
			return errors.New("not yet")
		}
		return nil
	})
	if got, sent := b.Speakers()["a/1"].Packets, a.Sent(); got == 0 || got > sent*3/4 {
		t.Fatalf("b heard %d of a's %d packets through a bound of 1000 B/s", got, sent)
	}
}

// TestSessionBounds: a room's sessions are bounded (429); a second session of a member
// replaces its first (bye "replaced").
func TestSessionBounds(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2, "c/1": 3}}
	fx := newFixture(t, Config{Members: members, MaxSessions: 2})
	a := fx.dial("r", "a/1", false, 1)
	fx.dial("r", "b/1", false, 1)
	if _, st := fx.dialErr(DialConfig{Room: "r", Member: "c/1"}); st != http.StatusTooManyRequests {
		t.Fatalf("third session: %d, want 429", st)
	}
	poll.Until(t, 5*time.Second, "a's channel open", func() error {
		if !a.Ready() {
			return errors.New("not yet")
		}
		return nil
	})
	fx.dial("r", "a/1", false, 1)
	poll.Until(t, 5*time.Second, "a's first session replaced", func() error {
		if a.Bye() != ByeReplaced {
			return errors.New("no bye yet")
		}
		return nil
	})
	if s := fx.f.Stats(); s.Sessions != 2 || s.Refused["too_many"] != 1 || s.Replaced != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestSlotsBound: a member asking for more slots than MaxSlots gets MaxSlots.
func TestSlotsBound(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2, "c/1": 3, "d/1": 4}}
	fx := newFixture(t, Config{Members: members, MaxSlots: 2})
	for _, m := range []string{"b/1", "c/1", "d/1"} {
		fx.dial("r", m, true, 1)
	}
	a := fx.dial("r", "a/1", false, 5)
	poll.Until(t, 10*time.Second, "a hears two speakers", func() error {
		if len(a.Slots()) != 2 || len(a.Speakers()) != 2 {
			return errors.New("not yet")
		}
		return nil
	})
	if sp := a.Speakers(); sp["d/1"].Packets != 0 {
		t.Fatalf("a hears a third speaker with 2 slots: %v", len(sp))
	}
}

// TestMuteAndSlotChange: a listener with one slot hears the nearest speaker (b); when b mutes,
// c takes the slot and the slot's sequence numbers run on without a break.
func TestMuteAndSlotChange(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2, "c/1": 3}}
	fx := newFixture(t, Config{Members: members})
	a := fx.dial("r", "a/1", false, 1)
	b := fx.dial("r", "b/1", true, 1)
	fx.dial("r", "c/1", true, 1)
	poll.Until(t, 10*time.Second, "a hears b", func() error {
		if a.Speakers()["b/1"].Packets < 20 {
			return errors.New("not yet")
		}
		return nil
	})
	poll.Until(t, 5*time.Second, "b mutes", func() error { return b.SetMuted(true) })
	poll.Until(t, 10*time.Second, "a hears c in b's place", func() error {
		if a.Speakers()["c/1"].Packets < 20 {
			return errors.New("not yet")
		}
		return nil
	})
	if a.Speakers()["c/1"].Packets == 0 || fx.f.Stats().DroppedMuted == 0 {
		t.Fatal("muted b still forwarded")
	}
	for mid, st := range a.SlotStats() {
		if st.SeqBreaks != 0 {
			t.Fatalf("slot %s: %d sequence breaks across the change of speaker (%d packets)", mid, st.SeqBreaks, st.Packets)
		}
	}
}

// lockedMembers is a member table a test changes while the forwarder reads it.
type lockedMembers struct {
	mu sync.Mutex
	m  memberSet
}

func (l *lockedMembers) MemberIndex(room signaling.RoomID, id signaling.Identity) (signaling.PeerIndex, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.MemberIndex(room, id)
}

// TestMessageBounds: a data-channel message over 1024 bytes ends the session (bye "protocol");
// one that is not a mute is ignored and counted.
func TestMessageBounds(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2}}
	fx := newFixture(t, Config{Members: members})
	a := fx.dial("r", "a/1", false, 1)
	b := fx.dial("r", "b/1", false, 1)
	send := func(c *Client, msg []byte) {
		poll.Until(t, 5*time.Second, "voice channel open", func() error {
			c.mu.Lock()
			rw := c.rw
			c.mu.Unlock()
			if rw == nil {
				return errors.New("not open")
			}
			_, err := rw.WriteDataChannel(msg, true)
			return err
		})
	}
	send(b, []byte(`{"t":"shout"}`))
	send(a, bytes.Repeat([]byte("x"), maxMessage+1))
	poll.Until(t, 5*time.Second, "a's session ended, b's message counted", func() error {
		if a.Bye() != ByeProtocol || fx.f.Stats().MessagesDropped != 1 {
			return fmt.Errorf("a's bye %q, %d messages dropped", a.Bye(), fx.f.Stats().MessagesDropped)
		}
		return nil
	})
	if b.Bye() != "" {
		t.Fatalf("b's session ended: %q", b.Bye())
	}
}

// TestLeavingTheRoomEndsVoice: a member that leaves the room (signaling's table) loses its
// session within a tick (bye "left").
func TestLeavingTheRoomEndsVoice(t *testing.T) {
	lm := &lockedMembers{m: memberSet{"r": {"a/1": 1, "b/1": 2}}}
	fx := newFixture(t, Config{Members: lm, Interval: 20 * time.Millisecond})
	a := fx.dial("r", "a/1", false, 1)
	b := fx.dial("r", "b/1", false, 1)
	poll.Until(t, 5*time.Second, "both sessions open", func() error {
		if fx.f.Stats().Sessions != 2 || !a.Ready() || !b.Ready() {
			return errors.New("not yet")
		}
		return nil
	})
	lm.mu.Lock()
	delete(lm.m["r"], "a/1")
	lm.mu.Unlock()
	poll.Until(t, 5*time.Second, "a's session ended", func() error {
		if a.Bye() != ByeLeft || fx.f.Stats().Sessions != 1 {
			return fmt.Errorf("a's bye %q, %d sessions", a.Bye(), fx.f.Stats().Sessions)
		}
		return nil
	})
	if b.Bye() != "" {
		t.Fatalf("b's session ended: %q", b.Bye())
	}
}

// TestDelete: DELETE of the session's Location ends it (204); another id is 404.
func TestDelete(t *testing.T) {
	members := memberSet{"r": {"a/1": 1}}
	fx := newFixture(t, Config{Members: members})
	a := fx.dial("r", "a/1", false, 1)
	del := func(url string) int {
		req, _ := http.NewRequest(http.MethodDelete, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := del(fx.srv.URL + "/voice/r/00000000000000000000000000000000"); st != http.StatusNotFound {
		t.Fatalf("a made-up session: %d, want 404", st)
	}
	if st := del(strings.Replace(a.location, "/voice/r/", "/voice/s/", 1)); st != http.StatusNotFound {
		t.Fatalf("the session under another room: %d, want 404", st)
	}
	if st := del(a.location); st != http.StatusNoContent {
		t.Fatalf("the session: %d, want 204", st)
	}
	poll.Until(t, 5*time.Second, "session gone", func() error {
		if fx.f.Stats().Sessions != 0 {
			return errors.New("not yet")
		}
		return nil
	})
}
