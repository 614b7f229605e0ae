package signaling

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// queueFrame queues f for a writer the test runs itself (no writeLoop starts: see asWriter).
func (c *conn) queueFrame(f []byte) {
	c.qMu.Lock()
	c.queue = append(c.queue, f)
	c.qMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// asWriter makes the test's goroutine c's writer: kickLocked (a shutdown's) starts no writeLoop.
func (c *conn) asWriter() *conn {
	c.qMu.Lock()
	c.writing = true
	c.qMu.Unlock()
	return c
}

// TestBatchedWrites: a batching connection writes its first message alone, then joins queued
// frames into websocket messages of at most maxBatchFrames frames and maxBatchBytes bytes, in
// order; a connection that did not ask for batches gets one message per frame.
func TestBatchedWrites(t *testing.T) {
	for _, batch := range []bool{true, false} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			srvWS, cli := wsPair(t)
			s := &Server{cfg: Config{WriteWait: DefaultWriteWait, SendQueue: 1024}}
			c := newConn(s, srvWS, zerolog.Nop()).asWriter()
			c.batch.Store(batch)
			const n = 600
			frame := func(i int) []byte {
				return fmt.Appendf(nil, `{"v":1,"type":"member-left","peerIndex":%d,"pad":"%s"}`, i, strings.Repeat("x", i%700))
			}
			if !c.write(frame(0)) { // the first message (joined) is always alone
				t.Fatal("first write failed")
			}
			for i := 1; i < n; i++ {
				c.queueFrame(frame(i))
			}
			go func() {
				for {
					f, ok := c.pop()
					if !ok || !c.writeQueued(f) {
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

// TestMembershipLinger: a batching writer that holds only membership messages waits up to
// MembershipLinger for more (a burst of joins then takes a few websocket messages per member,
// not one per join); any other message ends the wait at once, in order; a message of another
// kind is never held.
func TestMembershipLinger(t *testing.T) {
	joined := func(i PeerIndex) []byte {
		return mustMarshal(memberJoinedMsg{V: ProtocolVersion, Type: typeMemberJoined, Member: Member{Index: i, ID: "u/d"}})
	}
	synced := mustMarshal(memberSyncedMsg{V: ProtocolVersion, Type: typeMemberSynced, PeerIndex: 2})
	left := mustMarshal(memberLeftMsg{V: ProtocolVersion, Type: typeMemberLeft, PeerIndex: 3, PeerID: "u/d", Reason: ReasonLeft})
	host := mustMarshal(hostMsg{V: ProtocolVersion, Type: typeHost, Term: 2, Host: 2})
	signal := mustMarshal(signalMsg{V: ProtocolVersion, Type: typeSignal, From: 2, To: 1, Payload: SignalPayload{Kind: SignalOffer, SDP: "x", Session: 1}})
	for _, f := range [][]byte{joined(2), synced, left} {
		if !isMembership(f) {
			t.Fatalf("%s is not taken for a membership message", f)
		}
	}
	for _, f := range [][]byte{host, signal} {
		if isMembership(f) {
			t.Fatalf("%s is taken for a membership message", f)
		}
	}

	start := func(t *testing.T, linger time.Duration) (*conn, *websocket.Conn) {
		srvWS, cli := wsPair(t)
		s := &Server{cfg: Config{WriteWait: DefaultWriteWait, SendQueue: 64, MembershipLinger: linger}}
		c := newConn(s, srvWS, zerolog.Nop()).asWriter()
		c.batch.Store(true)
		if !c.write(joined(1)) { // the first message goes alone
			t.Fatal("first write failed")
		}
		if _, _, err := cli.ReadMessage(); err != nil {
			t.Fatal(err)
		}
		_ = cli.SetReadDeadline(time.Now().Add(10 * time.Second))
		return c, cli
	}
	read := func(t *testing.T, cli *websocket.Conn) [][]byte {
		t.Helper()
		_, data, err := cli.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Split(data, []byte{'\n'})
	}

	t.Run("a signal ends the wait", func(t *testing.T) {
		c, cli := start(t, time.Hour)
		done := make(chan bool, 1)
		go func() { done <- c.writeQueued(joined(2)) }()
		c.queueFrame(synced)
		c.queueFrame(signal)
		got := read(t, cli)
		if !<-done {
			t.Fatal("write failed")
		}
		want := [][]byte{joined(2), synced, signal}
		if len(got) != len(want) {
			t.Fatalf("one message of %d frames, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d: %s, want %s", i, got[i], want[i])
			}
		}
	})
	t.Run("the linger ends", func(t *testing.T) {
		c, cli := start(t, 20*time.Millisecond)
		go c.writeQueued(joined(2))
		if got := read(t, cli); len(got) != 1 || !bytes.Equal(got[0], joined(2)) {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("a full batch ends the wait", func(t *testing.T) {
		c, cli := start(t, time.Hour)
		done := make(chan bool, 1)
		go func() { done <- c.writeQueued(joined(2)) }()
		for i := range maxBatchFrames - 1 {
			c.queueFrame(joined(PeerIndex(3 + i)))
		}
		if got := read(t, cli); len(got) != maxBatchFrames {
			t.Fatalf("%d frames, want %d", len(got), maxBatchFrames)
		}
		<-done
	})
	t.Run("a wake-up with nothing queued keeps the wait", func(t *testing.T) {
		c, cli := start(t, 50*time.Millisecond)
		c.wake <- struct{}{}
		done := make(chan bool, 1)
		go func() { done <- c.writeQueued(joined(2)) }()
		if got := read(t, cli); len(got) != 1 {
			t.Fatalf("%d frames, want 1", len(got))
		}
		<-done
	})
	t.Run("other messages never wait", func(t *testing.T) {
		c, cli := start(t, time.Hour)
		go c.writeQueued(host)
		if got := read(t, cli); len(got) != 1 || !bytes.Equal(got[0], host) {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("shutdown ends the wait", func(t *testing.T) {
		c, cli := start(t, time.Hour)
		go c.writeQueued(joined(2))
		c.shutdown(closeInfo{graceful: true})
		if got := read(t, cli); len(got) != 1 {
			t.Fatalf("%d frames, want 1", len(got))
		}
	})
}
