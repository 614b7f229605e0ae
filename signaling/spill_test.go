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
// past which they are shed as before, and the host is never dropped.
func TestBurstQueuesSignalsBehindMembership(t *testing.T) {
	const queue, burst = 8, 64
	share := signalShare(queue)
	e := newEnvWith(t, Config{SendQueue: queue, MaxMembers: 96, PongWait: time.Minute, PingInterval: time.Minute, WriteWait: time.Minute},
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
	// share offers fit; the next one is shed (the share still holds).
	for i := range share + 1 {
		if err := last.SendSignal(ctx, 1, SignalPayload{Kind: SignalOffer, SDP: fmt.Sprint("offer", i), Session: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	er := until(t, last, func(er Error) bool { return true })
	if er.Code != CodeRecipientBusy || er.PeerIndex != 1 {
		t.Fatalf("sender got %+v, want recipient_busy for the host", er)
	}
	if st := e.srv.Stats(); st.ShedSignals != 1 || st.SlowConsumers != 0 {
		t.Fatalf("stats %+v: want exactly the offer past the share shed, nobody dropped", st)
	}
	// The host reads: every announcement, then the offers within the share, in order.
	joins, offers := 0, 0
	for offers < share {
		m := rawRead(t, host)
		switch m["type"] {
		case "member-joined":
			if offers > 0 {
				t.Fatalf("an announcement after an offer: out of order")
			}
			joins++
		case "signal":
			if s := m["payload"].(map[string]any)["sdp"]; s != fmt.Sprint("offer", offers) {
				t.Fatalf("offer %d: got %v", offers, s)
			}
			offers++
		}
	}
	if joins != burst {
		t.Fatalf("%d announcements before the offers, want %d", joins, burst)
	}
}
