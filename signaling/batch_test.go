package signaling

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// wsPair returns the server side and the client side of one real websocket (over loopback).
func wsPair(t *testing.T) (srv, cli *websocket.Conn) {
	t.Helper()
	got := make(chan *websocket.Conn, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			close(got)
			return
		}
		got <- ws
	}))
	t.Cleanup(hs.Close)
	cli, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv = <-got
	if srv == nil {
		t.FailNow()
	}
	t.Cleanup(func() { _ = cli.Close(); _ = srv.Close() })
	return srv, cli
}

// TestBatchedWrites: a batching connection writes its first message alone, then joins queued
// frames into websocket messages of at most maxBatchFrames frames and maxBatchBytes bytes, in
// order; a connection that did not ask for batches gets one message per frame.
func TestBatchedWrites(t *testing.T) {
	for _, batch := range []bool{true, false} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			srvWS, cli := wsPair(t)
			s := &Server{cfg: Config{WriteWait: DefaultWriteWait, SendQueue: 1024}}
			c := newConn(s, srvWS, zerolog.Nop())
			c.batch.Store(batch)
			const n = 600
			frame := func(i int) []byte {
				return fmt.Appendf(nil, `{"v":1,"type":"member-left","peerIndex":%d,"pad":"%s"}`, i, strings.Repeat("x", i%700))
			}
			if !c.write(frame(0)) { // the first message (joined) is always alone
				t.Fatal("first write failed")
			}
			for i := 1; i < n; i++ {
				c.send <- frame(i)
			}
			go func() {
				for len(c.send) > 0 {
					if !c.writeQueued(<-c.send) {
						return
					}
				}
			}()
			next, messages := 0, 0
			for next < n {
				_, data, err := cli.ReadMessage()
				if err != nil {
					t.Fatalf("read after %d frames: %v", next, err)
				}
				messages++
				lines := bytes.Split(data, []byte{'\n'})
				if messages == 1 && len(lines) != 1 {
					t.Fatalf("the first message holds %d frames, want 1", len(lines))
				}
				if len(lines) > maxBatchFrames || (len(lines) > 1 && len(data) > maxBatchBytes) {
					t.Fatalf("a message of %d frames, %d bytes: over the bounds", len(lines), len(data))
				}
				for _, l := range lines {
					if !bytes.Equal(l, frame(next)) {
						t.Fatalf("frame %d: got %.60q", next, l)
					}
					next++
				}
			}
			t.Logf("%d frames in %d websocket messages", n, messages)
			if batch && messages > n/8 {
				t.Errorf("batching: %d frames took %d messages", n, messages)
			}
			if !batch && messages != n {
				t.Errorf("without batching: %d frames took %d messages, want one each", n, messages)
			}
		})
	}
}
