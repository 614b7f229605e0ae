package signaling

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// smallBufferDialer dials websockets with a tiny receive buffer: a client that does not read
// fills the server's send queue at once.
func smallBufferDialer() *websocket.Dialer {
	return &websocket.Dialer{
		HandshakeTimeout: waitTimeout,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			return c, err
		},
	}
}

// TestBurstSpillsNotDrops: a burst of joins and leaves larger than a member's send queue, while
// the member does not read (a host busy answering the joiners), spills in order instead of
// dropping it as a slow consumer: the host keeps its room and no term changes.
func TestBurstSpillsNotDrops(t *testing.T) {
	const queue, burst = 8, 24
	e := newEnvWith(t, Config{SendQueue: queue, MaxMembers: 64, PongWait: time.Minute, PingInterval: time.Minute, WriteWait: time.Minute},
		func(hs *httptest.Server) { hs.Listener = smallBufferListener{hs.Listener} })
	host := e.raw(smallBufferDialer())
	rawSend(t, host, `{"v":1,"type":"join","room":"r","user":"host","kind":"host"}`)
	if m := rawRead(t, host); m["type"] != "joined" {
		t.Fatalf("host got %v", m)
	}
	// The host does not read while members join and leave: 2 × burst frames, far past its queue.
	for i := range burst {
		c, _ := e.joined(JoinOptions{Room: "r", User: fmt.Sprintf("c%d", i)})
		_ = c.Close()
	}
	e.joined(JoinOptions{Room: "r", User: "late"})
	if st := e.srv.Stats(); st.SlowConsumers != 0 {
		t.Fatalf("stats %+v: the host was dropped as a slow consumer", st)
	}
	// Now it reads: every announcement, in order.
	joins, leaves := 0, 0
	last := 0.0
	for joins < burst+1 || leaves < burst {
		m := rawRead(t, host)
		switch m["type"] {
		case "member-joined":
			idx, _ := m["member"].(map[string]any)["peerIndex"].(float64)
			if idx <= last {
				t.Fatalf("member %v announced after member %v: out of order", idx, last)
			}
			last = idx
			joins++
		case "member-left":
			leaves++
		case "host-changed":
			t.Fatalf("host change %v: the host lost its room", m)
		}
	}
	rooms := e.rooms()
	if len(rooms) != 1 || rooms[0].Term != 1 {
		t.Fatalf("rooms %+v, want one room still in term 1", rooms)
	}
}

// TestBurstQueuesSignalsBehindMembership: a host whose queue is full of a burst's membership
// frames (it does not read: busy answering the joiners) still gets the joiners' offers, queued
// behind those frames in order, instead of the joiners hearing recipient_busy and waiting out
// their connect timeouts; signals keep a share of their own (three quarters of SendQueue),
// past which they are shed as before (the refusal names the signal), and the host is never
// dropped.
func TestBurstQueuesSignalsBehindMembership(t *testing.T) {
	const queue, burst = 8, 160 // 160 announcements: far more than the socket buffers take
	share := signalShare(queue)
	e := newEnvWith(t, Config{SendQueue: queue, MaxMembers: burst + 8, PongWait: time.Minute, PingInterval: time.Minute, WriteWait: time.Minute},
		func(hs *httptest.Server) { hs.Listener = smallBufferListener{hs.Listener} })
	host := e.raw(smallBufferDialer())
	rawSend(t, host, `{"v":1,"type":"join","room":"r","user":"host","kind":"host"}`)
	if m := rawRead(t, host); m["type"] != "joined" {
		t.Fatalf("host got %v", m)
	}
	var last *Client
	for i := range burst {
		last, _ = e.joined(JoinOptions{Room: "r", User: fmt.Sprintf("c%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// Offers go until one is refused: the share fits, the next one is shed.
	var refused Error
	sent := 0
	for refused.Code == "" {
		if sent > 4*queue {
			t.Fatalf("%d offers relayed to a host that reads nothing", sent)
		}
		sent++
		if err := last.SendSignal(ctx, 1, SignalPayload{Kind: SignalOffer, SDP: fmt.Sprint("offer", sent), Session: uint64(sent)}); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(50 * time.Millisecond)
	events:
		for {
			select {
			case ev := <-last.Events():
				if er, ok := ev.(Error); ok {
					refused = er
					break events
				}
			case <-deadline:
				break events
			}
		}
	}
	relayed := sent - 1
	// The refusal names the signal, so that its sender can send it again.
	if refused.Code != CodeRecipientBusy || refused.PeerIndex != 1 || refused.Signal != SignalOffer || refused.Session != uint64(sent) {
		t.Fatalf("sender got %+v, want recipient_busy for the host's offer of session %d", refused, sent)
	}
	if relayed < share {
		t.Fatalf("%d offers relayed before one was refused, want at least the share (%d): the announcements shed them", relayed, share)
	}
	if st := e.srv.Stats(); st.ShedSignals != 1 || st.SlowConsumers != 0 {
		t.Fatalf("stats %+v: want exactly the offer past the share shed, nobody dropped", st)
	}
	// The host reads: every announcement, then the relayed offers, in order.
	joins, offers := 0, 0
	for offers < relayed {
		m := rawRead(t, host)
		switch m["type"] {
		case "member-joined":
			if offers > 0 {
				t.Fatalf("an announcement after an offer: out of order")
			}
			joins++
		case "signal":
			if s := m["payload"].(map[string]any)["sdp"]; s != fmt.Sprint("offer", offers+1) {
				t.Fatalf("offer %d: got %v", offers+1, s)
			}
			offers++
		}
	}
	if joins != burst {
		t.Fatalf("%d announcements before the offers, want %d", joins, burst)
	}
}
