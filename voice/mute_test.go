package voice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/testkit/poll"
)

// TestMutedBeforeTrack: a member that mutes before its microphone's first packet reaches the
// forwarder — a browser joins voice muted and says so as soon as the channel opens — is not
// forwarded once the track arrives. (The mute used to be dropped while the session had no
// publisher yet, and the member was forwarded though it had said it was muted.)
func TestMutedBeforeTrack(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2}}
	fx := newFixture(t, Config{Members: members})
	a := fx.dial("r", "a/1", false, 1)
	// b's microphone sends nothing until the test feeds it.
	pr, pw := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := Dial(ctx, DialConfig{Server: fx.srv.URL, Room: "r", Member: "b/1", Slots: 1, Stamp: true, Publish: pr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	t.Cleanup(func() { _ = pw.Close() }) // first: b's publisher may still wait on the pipe
	poll.Until(t, 5*time.Second, "b mutes", func() error { return b.SetMuted(true) })
	// A message the forwarder ignores and counts, after the mute on the same ordered channel:
	// once it is counted, the mute was read (and handed to the loop) before the track can arrive.
	b.mu.Lock()
	rw := b.rw
	b.mu.Unlock()
	if _, err := rw.WriteDataChannel([]byte(`{"t":"shout"}`), true); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the forwarder to read b's messages", func() error {
		if fx.f.Stats().MessagesDropped != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	go func() { _, _ = io.Copy(pw, silenceOgg(t, 100)) }()
	poll.Until(t, 10*time.Second, "b's microphone to send", func() error {
		if b.Sent() < 50 || fx.f.Stats().DroppedMuted < 20 {
			return fmt.Errorf("b sent %d, the forwarder dropped %d as muted", b.Sent(), fx.f.Stats().DroppedMuted)
		}
		return nil
	})
	if n := a.Speakers()["b/1"].Packets; n != 0 || len(a.Slots()) != 0 && a.Slots()[firstMid(a)] != "" {
		t.Fatalf("a heard %d packets of muted b (slots %v)", n, a.Slots())
	}
}

// firstMid is any mid of c's slots ("" without slots).
func firstMid(c *Client) string {
	for mid := range c.Slots() {
		return mid
	}
	return ""
}
