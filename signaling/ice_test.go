package signaling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The joined message carries the ICE servers Config.ICEServers gives each member, and nothing
// when there is no such function.
func TestJoinedICEServers(t *testing.T) {
	e := newEnv(t, Config{ICEServers: func(room RoomID, id Identity) []ICEServer {
		return []ICEServer{{URLs: []string{"stun:203.0.113.7:3478"}},
			{URLs: []string{"turn:203.0.113.7:3478?transport=udp"}, Username: "9:" + string(id), Credential: string(room)}}
	}})
	_, j := e.joined(JoinOptions{Room: "r", User: "a", Device: "1"})
	want := []ICEServer{{URLs: []string{"stun:203.0.113.7:3478"}},
		{URLs: []string{"turn:203.0.113.7:3478?transport=udp"}, Username: "9:a/1", Credential: "r"}}
	if !reflect.DeepEqual(j.ICEServers, want) {
		t.Fatalf("ICEServers = %+v, want %+v", j.ICEServers, want)
	}
}

func TestJoinedWithoutICEServers(t *testing.T) {
	e := newEnv(t, Config{})
	if _, j := e.joined(JoinOptions{Room: "r", User: "a"}); j.ICEServers != nil {
		t.Fatalf("ICEServers without Config.ICEServers = %+v", j.ICEServers)
	}
}

func TestDecodeJoinedICEServerLimits(t *testing.T) {
	var dst serverMessage
	many := `{"v":1,"type":"joined","self":1,"iceServers":[` + repeatJSON(`{"urls":["stun:a"]}`, maxICEServers+1) + `]}`
	noURL := `{"v":1,"type":"joined","self":1,"iceServers":[{"urls":[]}]}`
	for _, b := range []string{many, noURL} {
		if _, err := decodeServerMessage([]byte(b), &dst); !errors.Is(err, ErrBadMessage) {
			t.Errorf("decode: %v, want ErrBadMessage", err)
		}
	}
}

func repeatJSON(item string, n int) string {
	s := item
	for range n - 1 {
		s += "," + item
	}
	return s
}

// /api/rooms shows each member's reported link types, but not the host's; a report with an
// unknown candidate type is refused.
func TestAPIRoomsLink(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a", Device: "1", Kind: KindHost})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b", Device: "2"})
	ctx := context.Background()
	relay := &LinkTypes{Local: CandidateRelay, Remote: CandidateHost}
	if err := a.ReportReplica(ctx, Report{Term: 1, Hash: 1, Link: relay}); err != nil {
		t.Fatal(err)
	}
	if err := b.ReportReplica(ctx, Report{Term: 1, Hash: 1, Link: relay, RTTMicros: 1500}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, waitTimeout, func() error {
		code, body := e.get("/api/rooms")
		if code != http.StatusOK {
			return fmt.Errorf("status %d", code)
		}
		var rooms []struct {
			Members []struct {
				PeerIndex PeerIndex       `json:"peerIndex"`
				Link      json.RawMessage `json:"link"`
			} `json:"members"`
		}
		if err := json.Unmarshal(body, &rooms); err != nil {
			return err
		}
		if len(rooms) != 1 || len(rooms[0].Members) != 2 {
			return fmt.Errorf("got %s", body)
		}
		if l := rooms[0].Members[0].Link; l != nil {
			return fmt.Errorf("the host has a link entry: %s", l)
		}
		if l := string(rooms[0].Members[1].Link); l != `{"local":"relay","remote":"host"}` {
			return fmt.Errorf("member link %s in %s", l, body)
		}
		return nil
	})
	var r Report
	if err := json.Unmarshal([]byte(`{"term":1,"clock":0,"entities":0,"hash":"0000000000000001","link":{"local":"evil","remote":"host"}}`), &r); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("unknown candidate type: %v, want ErrBadMessage", err)
	}
}

// The histograms observe join-to-synced, reported round-trip times and reported migration
// pauses.
func TestHistograms(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, Config{Registerer: reg})
	_, _ = e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	ctx := context.Background()
	if err := b.SetSynced(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Report{
		{Term: 1, Hash: 1, RTTMicros: 800},
		{Term: 1, Hash: 1, RTTMicros: 900, Migrations: 1, PauseMicros: 250_000},
		{Term: 1, Hash: 1, Migrations: 1, PauseMicros: 250_000}, // the same migration again: not observed
	} {
		if err := b.ReportReplica(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, waitTimeout, func() error {
		mfs, err := reg.Gather()
		if err != nil {
			return err
		}
		got := map[string][2]float64{}
		for _, mf := range mfs {
			if h := mf.GetMetric()[0].GetHistogram(); h != nil {
				got[mf.GetName()] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
			}
		}
		want := map[string][2]float64{
			"concord_signaling_member_rtt_seconds":      {2, 0.0017},
			"concord_signaling_migration_pause_seconds": {1, 0.25},
		}
		for name, w := range want {
			g := got[name]
			if g[0] != w[0] || g[1] < w[1]-1e-9 || g[1] > w[1]+1e-9 {
				return fmt.Errorf("%s = %v, want %v", name, g, w)
			}
		}
		if got["concord_signaling_join_to_synced_seconds"][0] != 1 {
			return fmt.Errorf("join_to_synced = %v, want one observation", got["concord_signaling_join_to_synced_seconds"])
		}
		return nil
	})
}

// With ICERefresh, every member gets fresh ICE servers (an ice-servers message) while it stays:
// credentials issued by Config.ICEServers again, for the same member.
func TestICEServersRefreshed(t *testing.T) {
	var mu sync.Mutex
	issued := 0
	e := newEnv(t, Config{ICERefresh: 20 * time.Millisecond, ICEServers: func(room RoomID, id Identity) []ICEServer {
		mu.Lock()
		defer mu.Unlock()
		issued++
		return []ICEServer{{URLs: []string{"turn:203.0.113.7:3478"}, Username: fmt.Sprintf("%d:%s", issued, id), Credential: string(room)}}
	}})
	c, j := e.joined(JoinOptions{Room: "r", User: "a", Device: "1"})
	got := until(t, c, func(u ICEServersUpdated) bool { return true })
	if len(got.ICEServers) != 1 || got.ICEServers[0].Username == j.ICEServers[0].Username ||
		!strings.HasSuffix(got.ICEServers[0].Username, ":a/1") || got.ICEServers[0].Credential != "r" {
		t.Fatalf("refreshed %+v after joined's %+v", got.ICEServers, j.ICEServers)
	}
}

// IsMember follows membership from any goroutine, and MemberLeft is told of each departure with
// its reason, after IsMember stopped reporting the member.
func TestIsMemberAndMemberLeft(t *testing.T) {
	type left struct {
		room   RoomID
		id     Identity
		reason LeaveReason
		member bool
	}
	var srv atomic.Pointer[Server]
	gone := make(chan left, 4)
	e := newEnv(t, Config{MemberLeft: func(room RoomID, id Identity, reason LeaveReason) {
		gone <- left{room, id, reason, srv.Load().IsMember(room, id)}
	}})
	srv.Store(e.srv)
	a, ja := e.joined(JoinOptions{Room: "r", User: "a", Device: "1"})
	_, jb := e.joined(JoinOptions{Room: "r", User: "b", Device: "2"})
	if !e.srv.IsMember("r", ja.PeerID) || !e.srv.IsMember("r", jb.PeerID) || e.srv.IsMember("other", ja.PeerID) {
		t.Fatal("IsMember does not follow the joins")
	}
	_ = a.Close()
	select {
	case l := <-gone:
		if l != (left{"r", "a/1", ReasonLeft, false}) {
			t.Fatalf("MemberLeft %+v", l)
		}
	case <-time.After(waitTimeout):
		t.Fatal("MemberLeft not called")
	}
	if e.srv.IsMember("r", ja.PeerID) || !e.srv.IsMember("r", jb.PeerID) {
		t.Fatal("IsMember after a leave")
	}
}

func TestDecodeICEServersUpdate(t *testing.T) {
	var dst serverMessage
	ev, err := decodeServerMessage([]byte(`{"v":1,"type":"ice-servers","iceServers":[{"urls":["turn:a"],"username":"u","credential":"c"}]}`), &dst)
	if err != nil || !reflect.DeepEqual(ev, ICEServersUpdated{ICEServers: []ICEServer{{URLs: []string{"turn:a"}, Username: "u", Credential: "c"}}}) {
		t.Fatalf("decoded %+v, %v", ev, err)
	}
	if _, err := decodeServerMessage([]byte(`{"v":1,"type":"ice-servers","iceServers":[{"urls":[]}]}`), &dst); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("an ICE server without URLs: %v", err)
	}
}
