package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/turn/v5"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

// joinForTURN joins room as user and returns the client and the embedded relay's UDP address
// and credentials, as the joined message hands them out.
func joinForTURN(t *testing.T, s *Server, room, user string) (*signaling.Client, string, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := signaling.Dial(ctx, s.url, signaling.JoinOptions{Room: signaling.RoomID(room), User: user}, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	j := c.Joined()
	for _, ice := range j.ICEServers {
		for _, u := range ice.URLs {
			if addr, ok := strings.CutPrefix(u, "turn:"); ok && strings.HasSuffix(addr, "?transport=udp") && ice.Username != "" {
				return c, strings.TrimSuffix(addr, "?transport=udp"), ice.Username, ice.Credential
			}
		}
	}
	t.Fatalf("no TURN server in %+v", j.ICEServers)
	return nil, "", "", ""
}

func turnAllocate(t *testing.T, server, user, pass string) (net.PacketConn, error) {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := turn.NewClient(&turn.ClientConfig{STUNServerAddr: server, TURNServerAddr: server, Username: user, Password: pass,
		Realm: "concord", Conn: conn, RTO: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); _ = conn.Close() })
	relay, err := c.Allocate()
	if err == nil {
		t.Cleanup(func() { _ = relay.Close() })
	}
	return relay, err
}

// serve wires the relay to membership: a member's credentials allocate while it is in its room;
// when it leaves, its allocation ends at once and its credentials are refused. A member still
// in the room goes on allocating.
func TestServeTURNCredentialsEndWithMember(t *testing.T) {
	s := startTestServer(t, Options{TURN: "127.0.0.1:0", TURNPorts: "20000-20999"})
	alice, addr, ua, pa := joinForTURN(t, s, "r", "alice")
	_, _, ub, pb := joinForTURN(t, s, "r", "bob")
	if _, err := turnAllocate(t, addr, ua, pa); err != nil {
		t.Fatalf("a member's allocation: %v", err)
	}
	_ = alice.Close() // alice leaves (a kick removes the membership the same way)
	poll.Until(t, 10*time.Second, "alice's allocation ended", func() error {
		if st := s.turn.Stats(); st.Allocations != 0 || st.Revoked != 1 {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
	if _, err := turnAllocate(t, addr, ua, pa); err == nil {
		t.Fatal("a departed member's credentials allocated")
	}
	if st := s.turn.Stats(); st.RefusedNotMember == 0 {
		t.Fatalf("stats %+v, want a refusal for membership", st)
	}
	if _, err := turnAllocate(t, addr, ub, pb); err != nil {
		t.Fatalf("a present member's allocation: %v", err)
	}
}
