package sigclient

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/concordrtc/concord/internal/testkit/poll"
)

// TestIdleClientHoldsLittle: a client that read a burst (a 32 KiB batch of membership messages,
// as a big room's joins send it) and sent a burst keeps neither the burst's read buffer nor its
// send queue's storage once idle: an idle member's client costs what it holds.
func TestIdleClientHoldsLittle(t *testing.T) {
	var batch []string
	for i := 2; len(strings.Join(batch, "\n")) < 30<<10; i++ {
		batch = append(batch, fmt.Sprintf(`{"v":1,"type":"member-joined","member":{"peerIndex":%d,"peerId":"user%d/device","kind":"bot","power":0,"mayHost":true,"synced":false}}`, i, i))
	}
	received := make(chan int, 1)
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		if _, _, err := ws.ReadMessage(); err != nil { // the join
			return
		}
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"v":1,"type":"joined","room":"r","self":1,"peerId":"u/d","term":1,"host":0,"members":[{"peerIndex":1,"peerId":"u/d","kind":"bot","power":0,"mayHost":true,"synced":false}]}`))
		_ = ws.WriteMessage(websocket.TextMessage, []byte(strings.Join(batch, "\n")))
		n := 0
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				received <- n
				return
			}
			n++
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.URL, JoinOptions{Room: "r", User: "u", Device: "d", Kind: KindBot}, ClientConfig{SendQueue: 1024, EventQueue: 4096})
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for events < 1+len(batch) { // joined, then the batch
		select {
		case <-c.Events():
			events++
		case <-ctx.Done():
			t.Fatalf("%d of %d events", events, 1+len(batch))
		}
	}
	const sent = 300 // and one more, below
	for range sent {
		if err := c.SetSynced(ctx); err != nil {
			t.Fatal(err)
		}
	}
	drained := func() error {
		if n := c.send.Len(); n > 0 {
			return fmt.Errorf("%d frames queued", n)
		}
		return nil
	}
	poll.Until(t, 5*time.Second, "the writer drained the send queue", drained)
	// Quiet again: one more frame, and the next drain lets the burst's ring go.
	if err := c.SetSynced(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the writer drained the send queue", drained)
	if n := c.send.Slots(); n > idleSendSlots {
		t.Errorf("an idle client keeps %d send slots, want at most %d", n, idleSendSlots)
	}
	// The reader's buffer is its own: read it once the reader has nothing left to do, after Close.
	_ = c.Close()
	if got := <-received; got != sent+1 {
		t.Errorf("server received %d messages, want %d", got, sent+1)
	}
	<-c.readerDone
	if n := c.buf.Cap(); n > idleReadBuffer {
		t.Errorf("an idle client keeps a read buffer of %d bytes, want at most %d", n, idleReadBuffer)
	}
}
