package signaling

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

func TestJoinAndMembership(t *testing.T) {
	e := newEnv(t, Config{})
	a, ja := e.joined(JoinOptions{Room: "lobby", User: "alice", Device: "tab-1"})
	wantA := Member{Index: 1, ID: "alice/tab-1", Kind: KindBrowser, Power: 0, MayHost: true, Synced: true, SyncedTerm: 1}
	if ja.Self != 1 || ja.Term != 1 || ja.Host != 1 || ja.Room != "lobby" || ja.PeerID != "alice/tab-1" ||
		!reflect.DeepEqual(ja.Members, []Member{wantA}) {
		t.Fatalf("first join: %+v", ja)
	}
	if a.Self() != 1 {
		t.Fatalf("Self = %d", a.Self())
	}

	// Two tabs of one user do not collide; a join without a device gets one.
	b, jb := e.joined(JoinOptions{Room: "lobby", User: "alice", Device: "tab-2", Kind: KindBot})
	c, jc := e.joined(JoinOptions{Room: "lobby", User: "carol"})
	if jb.Self != 2 || jb.Host != 1 || jb.Term != 1 || len(jb.Members) != 2 {
		t.Fatalf("second join: %+v", jb)
	}
	if jc.Self != 3 || jc.PeerID != "carol/~3" || len(jc.Members) != 3 {
		t.Fatalf("third join: %+v", jc)
	}
	wantB := Member{Index: 2, ID: "alice/tab-2", Kind: KindBot, MayHost: true}
	if got := next[MemberJoined](t, a); got.Member != wantB {
		t.Fatalf("a saw %+v, want %+v", got.Member, wantB)
	}
	if got := next[MemberJoined](t, a); got.Member.Index != 3 || got.Member.ID != "carol/~3" {
		t.Fatalf("a saw %+v", got.Member)
	}
	if got := next[MemberJoined](t, b); got.Member.Index != 3 {
		t.Fatalf("b saw %+v", got.Member)
	}

	// Synced is broadcast to everyone, the sender included.
	if err := b.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*Client{a, b, c} {
		if got := next[MemberSynced](t, cl); got.Index != 2 {
			t.Fatalf("peer %d saw synced %d", cl.Self(), got.Index)
		}
	}

	// A member leaving is announced with its reason; the host stays.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*Client{a, b} {
		if got := next[MemberLeft](t, cl); got != (MemberLeft{Index: 3, PeerID: "carol/~3", Reason: ReasonLeft}) {
			t.Fatalf("peer %d saw %+v", cl.Self(), got)
		}
	}
	if rs := e.rooms(); len(rs) != 1 || rs[0].Host != 1 || rs[0].Term != 1 || len(rs[0].Members) != 2 {
		t.Fatalf("rooms: %+v", rs)
	}
}

func TestPeerIndicesNeverReused(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	_ = b.Close()
	until(t, a, func(l MemberLeft) bool { return l.Index == 2 })
	c, jc := e.joined(JoinOptions{Room: "r", User: "c", Device: "1"})
	if jc.Self != 3 {
		t.Fatalf("index after a leave = %d, want 3", jc.Self)
	}
	// Another room counts from 1.
	if _, jx := e.joined(JoinOptions{Room: "other", User: "x"}); jx.Self != 1 {
		t.Fatalf("first index of another room = %d", jx.Self)
	}
	_ = a.Close()
	if got := until[HostChanged](t, c, nil); got != (HostChanged{Term: 2, Host: 3}) {
		t.Fatalf("host after a left: %+v", got)
	}
	// Empty the room: it goes away, then opens again with indices and a term
	// that continue where they stopped.
	_ = c.Close()
	checkFor(t, waitTimeout, func() error {
		for _, r := range e.rooms() {
			if r.Room == "r" {
				return fmt.Errorf("room r still open: %+v", r)
			}
		}
		return nil
	})
	_, jd := e.joined(JoinOptions{Room: "r", User: "d"})
	if jd.Self != 4 || jd.Term != 3 || jd.Host != 4 {
		t.Fatalf("join after the room emptied: %+v, want self 4, term 3", jd)
	}
}

func TestHostLeaveElectsNextAndTermGrows(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	c, _ := e.joined(JoinOptions{Room: "r", User: "c"})
	next[MemberJoined](t, b)
	for _, cl := range []*Client{b, c} {
		if err := cl.SetSynced(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, cl := range []*Client{b, c} {
		seen := map[PeerIndex]bool{}
		for len(seen) < 2 {
			seen[next[MemberSynced](t, cl).Index] = true
		}
	}
	_ = a.Close()
	for _, cl := range []*Client{b, c} {
		if got := next[MemberLeft](t, cl); got.Index != 1 || got.Reason != ReasonLeft {
			t.Fatalf("peer %d: %+v", cl.Self(), got)
		}
		if got := next[HostChanged](t, cl); got != (HostChanged{Term: 2, Host: 2}) {
			t.Fatalf("peer %d: %+v", cl.Self(), got)
		}
	}
	_ = b.Close()
	next[MemberLeft](t, c)
	if got := next[HostChanged](t, c); got != (HostChanged{Term: 3, Host: 3}) {
		t.Fatalf("after second leave: %+v", got)
	}
}

// TestUnsyncedNotElected: when the host leaves, members that have not synced
// are passed over as long as someone has.
func TestUnsyncedNotElected(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"}) // never syncs
	c, _ := e.joined(JoinOptions{Room: "r", User: "c"})
	if err := c.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	until(t, b, func(s MemberSynced) bool { return s.Index == 3 })
	_ = a.Close()
	if got := until[HostChanged](t, b, nil); got != (HostChanged{Term: 2, Host: 3}) {
		t.Fatalf("host after leave: %+v", got)
	}
}

// TestHostDiedBeforeAnyoneSynced: with nobody eligible the fallback elects
// among everyone, and the new host counts as synced.
func TestHostDiedBeforeAnyoneSynced(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	c, _ := e.joined(JoinOptions{Room: "r", User: "c"})
	next[MemberJoined](t, b)
	e.kill(a)
	for _, cl := range []*Client{b, c} {
		if got := next[MemberLeft](t, cl); got.Index != 1 || got.Reason != ReasonLost {
			t.Fatalf("peer %d: %+v", cl.Self(), got)
		}
		if got := next[HostChanged](t, cl); got != (HostChanged{Term: 2, Host: 2}) {
			t.Fatalf("peer %d: %+v", cl.Self(), got)
		}
	}
	rs := e.rooms()
	if len(rs) != 1 || !rs[0].Members[0].Synced || rs[0].Members[1].Synced {
		t.Fatalf("synced flags after fallback: %+v", rs)
	}
}

// TestHostKilledAbruptly closes the host's TCP connection without a close
// frame: the server notices, elects the next synced member and bumps the
// term at once.
func TestHostKilledAbruptly(t *testing.T) {
	e := newEnv(t, Config{PingInterval: 50 * time.Millisecond, PongWait: 1500 * time.Millisecond})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	if err := b.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	next[MemberSynced](t, b)
	start := time.Now()
	e.kill(a)
	if got := next[MemberLeft](t, b); got.Index != 1 || (got.Reason != ReasonLost && got.Reason != ReasonTimeout) {
		t.Fatalf("left: %+v", got)
	}
	if got := next[HostChanged](t, b); got != (HostChanged{Term: 2, Host: 2}) {
		t.Fatalf("host: %+v", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("detection took %v", d)
	}
	if cl := closedEvent(t, a); !errors.Is(cl.Err, ErrDisconnected) {
		t.Fatalf("killed client: %v", cl.Err)
	}
}

// TestHostPingTimeout: the host's socket stays open but it stops answering
// pings; the server drops it after PongWait and hands over.
func TestHostPingTimeout(t *testing.T) {
	const pongWait = 1500 * time.Millisecond
	e := newEnv(t, Config{PingInterval: 50 * time.Millisecond, PongWait: pongWait})
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","user":"mute"}`)
	if m := rawRead(t, ws); m["type"] != "joined" || m["host"] != 1.0 {
		t.Fatalf("raw join: %v", m)
	}
	// From now on the raw client reads (so control frames are consumed) but
	// never answers a ping.
	ws.SetPingHandler(func(string) error { return nil })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = ws.SetReadDeadline(time.Now().Add(waitTimeout))
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	defer wg.Wait()

	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	if err := b.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	next[MemberSynced](t, b)
	start := time.Now()
	if got := next[MemberLeft](t, b); got.Index != 1 || got.Reason != ReasonTimeout {
		t.Fatalf("left: %+v", got)
	}
	if got := next[HostChanged](t, b); got != (HostChanged{Term: 2, Host: 2}) {
		t.Fatalf("host: %+v", got)
	}
	if d := time.Since(start); d > pongWait+2*time.Second {
		t.Fatalf("timeout detected after %v", d)
	}
	if n := e.srv.Stats().PingTimeouts; n != 1 {
		t.Fatalf("PingTimeouts = %d", n)
	}
}

// TestPinnedHostHandover: a pinned host that rejoins a room run by another
// host takes over only after it reported synced, with a new term.
func TestPinnedHostHandover(t *testing.T) {
	e := newEnv(t, Config{Rooms: map[RoomID]RoomConfig{"r": {PinnedHosts: []Identity{"pin/main"}}}})
	p, jp := e.joined(JoinOptions{Room: "r", User: "pin", Device: "main", Kind: KindHost})
	if jp.Host != 1 || jp.Term != 1 || !reflect.DeepEqual(jp.PinnedHosts, []Identity{"pin/main"}) {
		t.Fatalf("pinned first: %+v", jp)
	}
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	if err := a.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	next[MemberSynced](t, a)
	_ = p.Close()
	next[MemberLeft](t, a)
	if got := next[HostChanged](t, a); got != (HostChanged{Term: 2, Host: 2}) {
		t.Fatalf("after pinned left: %+v", got)
	}

	// The pinned host comes back: a stays host until the pinned one syncs.
	p2, jp2 := e.joined(JoinOptions{Room: "r", User: "pin", Device: "main", Kind: KindHost})
	if jp2.Self != 3 || jp2.Host != 2 || jp2.Term != 2 {
		t.Fatalf("pinned rejoin: %+v", jp2)
	}
	if got := next[MemberJoined](t, a); got.Member.Index != 3 || got.Member.Synced {
		t.Fatalf("a saw %+v", got)
	}
	// A signal round trip proves a has seen everything up to now and no host
	// change came before the synced report.
	if err := p2.SendSignal(context.Background(), 2, SignalPayload{Kind: SignalOffer, SDP: "v=0"}); err != nil {
		t.Fatal(err)
	}
	if got := next[Signal](t, a); got.From != 3 {
		t.Fatalf("a got %+v", got)
	}
	if rs := e.rooms(); rs[0].Host != 2 || rs[0].Term != 2 {
		t.Fatalf("host changed before synced: %+v", rs)
	}
	if err := p2.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*Client{a, p2} {
		if got := next[MemberSynced](t, cl); got.Index != 3 {
			t.Fatalf("peer %d: %+v", cl.Self(), got)
		}
		if got := next[HostChanged](t, cl); got != (HostChanged{Term: 3, Host: 3}) {
			t.Fatalf("peer %d: %+v", cl.Self(), got)
		}
	}
}

func TestRelayOnlyWithinRoom(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r1", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r1", User: "b"})
	next[MemberJoined](t, a)
	x, _ := e.joined(JoinOptions{Room: "r2", User: "x"})
	y, _ := e.joined(JoinOptions{Room: "r2", User: "y"})
	z, _ := e.joined(JoinOptions{Room: "r2", User: "z"})
	ctx := context.Background()

	offer := SignalPayload{Kind: SignalOffer, SDP: "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n", Session: 7}
	if err := a.SendSignal(ctx, 2, offer); err != nil {
		t.Fatal(err)
	}
	if got := next[Signal](t, b); got.From != 1 || !reflect.DeepEqual(got.Payload, offer) {
		t.Fatalf("b got %+v", got)
	}
	mid, idx := "0", uint16(0)
	cand := SignalPayload{Kind: SignalCandidate, Candidate: &ICECandidate{Candidate: "candidate:1 1 udp 1 127.0.0.1 5000 typ host", SDPMid: &mid, SDPMLineIndex: &idx}, Session: 7}
	if err := b.SendSignal(ctx, 1, cand); err != nil {
		t.Fatal(err)
	}
	if got := next[Signal](t, a); got.From != 2 || !reflect.DeepEqual(got.Payload, cand) {
		t.Fatalf("a got %+v", got)
	}

	// Index 3 exists in r2 but not in r1.
	if err := a.SendSignal(ctx, 3, offer); err != nil {
		t.Fatal(err)
	}
	if got := next[Error](t, a); got.Code != CodeUnknownPeer || got.PeerIndex != 3 || !strings.Contains(got.Message, "no member with peer index 3") {
		t.Fatalf("a got %+v", got)
	}
	if err := a.SendSignal(ctx, 1, offer); err != nil {
		t.Fatal(err)
	}
	if got := next[Error](t, a); !errors.Is(got, ErrBadSignal) {
		t.Fatalf("self signal: %+v", got)
	}
	// A raw member of r1 naming r2 explicitly is refused too.
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r1","user":"raw"}`)
	if m := rawRead(t, ws); m["type"] != "joined" {
		t.Fatalf("raw join: %v", m)
	}
	rawSend(t, ws, `{"v":1,"type":"signal","to":3,"room":"r2","payload":{"kind":"offer","sdp":"x"}}`)
	if m := rawRead(t, ws); m["type"] != "error" || m["code"] != "wrong_room" {
		t.Fatalf("raw got %v", m)
	}
	// z received nothing from r1: its next events are y's signal.
	next[MemberJoined](t, x) // y
	next[MemberJoined](t, x) // z
	next[MemberJoined](t, y) // z
	if err := y.SendSignal(ctx, 3, offer); err != nil {
		t.Fatal(err)
	}
	if got := next[Signal](t, z); got.From != 2 {
		t.Fatalf("z got %+v", got)
	}
	if n := e.srv.Stats().RelayErrors; n != 3 {
		t.Fatalf("RelayErrors = %d", n)
	}
}

func TestAPIRooms(t *testing.T) {
	e := newEnv(t, Config{})
	if code, body := e.get("/api/rooms"); code != http.StatusOK || string(body) != "[]" {
		t.Fatalf("empty: %d %s", code, body)
	}
	if code, body := e.get("/healthz"); code != http.StatusOK || string(body) != "ok" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	a, _ := e.joined(JoinOptions{Room: "zeta", User: "a", Device: "1", Kind: KindHost})
	b, _ := e.joined(JoinOptions{Room: "zeta", User: "b", Device: "2"})
	_, _ = e.joined(JoinOptions{Room: "alpha", User: "c", Device: "3", Kind: KindBot})
	if err := b.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.ReportReplica(context.Background(), Report{Term: 1, Clock: 42, Entities: 3, Hash: 0xdeadbeef}); err != nil {
		t.Fatal(err)
	}
	want := `[
	 {"room":"alpha","term":1,"host":1,"members":[
	   {"peerIndex":1,"peerId":"c/3","kind":"bot","synced":true,"replica":null}]},
	 {"room":"zeta","term":1,"host":1,"members":[
	   {"peerIndex":1,"peerId":"a/1","kind":"host","synced":true,"replica":{"term":1,"clock":42,"entities":3,"hash":"00000000deadbeef"}},
	   {"peerIndex":2,"peerId":"b/2","kind":"browser","synced":true,"replica":null}]}
	]`
	var wantV any
	if err := json.Unmarshal([]byte(want), &wantV); err != nil {
		t.Fatal(err)
	}
	checkFor(t, waitTimeout, func() error {
		code, body := e.get("/api/rooms")
		if code != http.StatusOK {
			return fmt.Errorf("status %d", code)
		}
		var got any
		if err := json.Unmarshal(body, &got); err != nil {
			return err
		}
		if !reflect.DeepEqual(got, wantV) {
			return fmt.Errorf("got %s", body)
		}
		return nil
	})
	if code, _ := e.get("/nope"); code != http.StatusNotFound {
		t.Fatalf("unknown path: %d", code)
	}
}

func TestTokens(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	e := newEnv(t, Config{Secret: secret, Clock: fixedClock{now}})
	token := func(c Claims) string {
		t.Helper()
		if c.ExpiresAt.IsZero() {
			c.ExpiresAt = now.Add(time.Hour)
		}
		s, err := IssueToken(secret, c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	otherSecret, err := IssueToken([]byte("another secret, 32 bytes long!!!"), Claims{Room: "r", User: "a", ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    JoinOptions
		wantErr error
	}{
		{"missing", JoinOptions{Room: "r", User: "a"}, ErrTokenRequired},
		{"garbage", JoinOptions{Room: "r", Token: "not.a.jwt"}, ErrTokenInvalid},
		{"other secret", JoinOptions{Room: "r", Token: otherSecret}, ErrTokenInvalid},
		{"alg none", JoinOptions{Room: "r", Token: unsignedToken(t, now.Add(time.Hour))}, ErrTokenInvalid},
		{"expired", JoinOptions{Room: "r", Token: token(Claims{Room: "r", User: "a", ExpiresAt: now.Add(-time.Second)})}, ErrTokenExpired},
		{"not yet valid", JoinOptions{Room: "r", Token: token(Claims{Room: "r", User: "a", NotBefore: now.Add(time.Minute)})}, ErrTokenInvalid},
		{"wrong room", JoinOptions{Room: "r", Token: token(Claims{Room: "elsewhere", User: "a"})}, ErrWrongRoom},
		{"other user", JoinOptions{Room: "r", User: "mallory", Token: token(Claims{Room: "r", User: "a"})}, ErrTokenMismatch},
		{"other device", JoinOptions{Room: "r", Device: "x", Token: token(Claims{Room: "r", User: "a", Device: "y"})}, ErrTokenMismatch},
		{"other kind", JoinOptions{Room: "r", Kind: KindHost, Token: token(Claims{Room: "r", User: "a", Kind: KindBot})}, ErrTokenMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.dialErr(tt.opts, e.clientConfig())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Dial error = %v, want %v", err, tt.wantErr)
			}
			var se Error
			if !errors.As(err, &se) || se.Message == "" {
				t.Fatalf("no server message in %v", err)
			}
		})
	}
	if n := e.srv.Stats().RejectedJoins; n != uint64(len(tests)) {
		t.Fatalf("RejectedJoins = %d, want %d", n, len(tests))
	}

	// A member whose token forbids hosting is never host, even alone.
	v, jv := e.joined(JoinOptions{Room: "r", Token: token(Claims{Room: "r", User: "viewer", Power: 100, MayHost: false})})
	if jv.Host != 0 || jv.Term != 0 || jv.Members[0].Power != 100 || jv.Members[0].MayHost || jv.Members[0].Kind != KindBrowser {
		t.Fatalf("viewer join: %+v", jv)
	}
	// Claims give power, may-host, device and kind.
	_, jh := e.joined(JoinOptions{Room: "r", Token: token(Claims{Room: "r", User: "low", Device: "d", Power: 10, MayHost: true, Kind: KindBot})})
	if jh.Host != 2 || jh.Term != 1 || jh.PeerID != "low/d" || jh.Members[1] != (Member{Index: 2, ID: "low/d", Kind: KindBot, Power: 10, MayHost: true, Synced: true, SyncedTerm: 1}) {
		t.Fatalf("host join: %+v", jh)
	}
	if got := until[HostChanged](t, v, nil); got.Term != 1 || got.Host != 2 || got.ResumeToken == "" {
		t.Fatalf("viewer saw %+v", got)
	}
	// A more powerful member takes over once synced, not before.
	hi, jhi := e.joined(JoinOptions{Room: "r", Token: token(Claims{Room: "r", User: "high", Power: 50, MayHost: true})})
	if jhi.Host != 2 {
		t.Fatalf("unsynced powerful member elected: %+v", jhi)
	}
	if err := hi.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	next[MemberSynced](t, hi)
	if got := next[HostChanged](t, hi); got.Term != 2 || got.Host != 3 || got.ResumeToken == jhi.ResumeToken {
		t.Fatalf("handover: %+v", got)
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// unsignedToken builds an "alg":"none" token by hand.
func unsignedToken(t *testing.T, exp time.Time) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." +
		enc(map[string]any{"room": "r", "user": "a", "power": 1000, "mayHost": true, "exp": exp.Unix()}) + "."
}

func TestIssueTokenErrors(t *testing.T) {
	exp := time.Now().Add(time.Hour)
	tests := []struct {
		name    string
		secret  []byte
		c       Claims
		wantErr error
	}{
		{"no secret", nil, Claims{Room: "r", User: "a", ExpiresAt: exp}, ErrNoSecret},
		{"no expiry", []byte("s"), Claims{Room: "r", User: "a"}, ErrNoExpiry},
		{"no room", []byte("s"), Claims{User: "a", ExpiresAt: exp}, ErrBadMessage},
		{"no user", []byte("s"), Claims{Room: "r", ExpiresAt: exp}, ErrBadMessage},
		{"bad kind", []byte("s"), Claims{Room: "r", User: "a", Kind: "robot", ExpiresAt: exp}, ErrBadMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := IssueToken(tt.secret, tt.c); !errors.Is(err, tt.wantErr) {
				t.Fatalf("IssueToken error = %v, want %v", err, tt.wantErr)
			}
		})
	}
	// Round trip through the parser.
	in := Claims{Room: "r", User: "a", Device: "d", Power: -3, MayHost: true, Kind: KindHost,
		ExpiresAt: exp.Truncate(time.Second), NotBefore: exp.Add(-2 * time.Hour).Truncate(time.Second), IssuedAt: exp.Add(-2 * time.Hour).Truncate(time.Second)}
	s, err := IssueToken([]byte("s"), in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := parseToken([]byte("s"), s, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !out.ExpiresAt.Equal(in.ExpiresAt) || !out.NotBefore.Equal(in.NotBefore) || !out.IssuedAt.Equal(in.IssuedAt) {
		t.Fatalf("times: %+v vs %+v", out, in)
	}
	out.ExpiresAt, out.NotBefore, out.IssuedAt = in.ExpiresAt, in.NotBefore, in.IssuedAt
	if out != in {
		t.Fatalf("claims round trip: %+v vs %+v", out, in)
	}
}

func TestOpenModeWarning(t *testing.T) {
	e := newEnv(t, Config{DefaultPowerLevel: 7})
	// The power level never comes from the client in open mode.
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","user":"sneaky","power":1000,"mayHost":false}`)
	m := rawRead(t, ws)
	members, _ := m["members"].([]any)
	if m["type"] != "joined" || len(members) != 1 {
		t.Fatalf("raw join: %v", m)
	}
	if mem := members[0].(map[string]any); mem["power"] != 7.0 || mem["mayHost"] != true {
		t.Fatalf("member: %v", mem)
	}
	e.joined(JoinOptions{Room: "r", User: "b"})
	if n := strings.Count(e.logs.String(), "the server is OPEN"); n != 1 {
		t.Fatalf("open-mode warning logged %d times; logs:\n%s", n, e.logs.String())
	}
	if !strings.Contains(e.logs.String(), `"level":"warn"`) {
		t.Fatalf("warning not at warn level:\n%s", e.logs.String())
	}
	var logs syncbuf.Buffer
	closed := New(Config{Secret: []byte("0123456789abcdef0123456789abcdef"), Logger: zerolog.New(&logs)})
	_ = closed.Close()
	if strings.Contains(logs.String(), "OPEN") {
		t.Fatalf("warning with a secret:\n%s", logs.String())
	}
}

func TestReplaceSameIdentity(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r", User: "alice", Device: "tab"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "bob"})
	next[MemberJoined](t, a)
	_, ja2 := e.joined(JoinOptions{Room: "r", User: "alice", Device: "tab"})
	// The replaced host leaves; nobody has synced, so the fallback elects b,
	// the earliest join.
	if ja2.Self != 3 || ja2.Host != 2 || ja2.Term != 2 || len(ja2.Members) != 2 || ja2.Members[0].Index != 2 {
		t.Fatalf("replacing join: %+v", ja2)
	}
	if cl := closedEvent(t, a); !errors.Is(cl.Err, ErrReplaced) || !errors.Is(cl.Err, ErrDisconnected) {
		t.Fatalf("replaced client closed with %v", cl.Err)
	}
	if got := next[MemberLeft](t, b); got != (MemberLeft{Index: 1, PeerID: "alice/tab", Reason: ReasonReplaced}) {
		t.Fatalf("b saw %+v", got)
	}
	if got := next[MemberJoined](t, b); got.Member.Index != 3 || got.Member.ID != "alice/tab" {
		t.Fatalf("b saw %+v", got)
	}
	if got := next[HostChanged](t, b); got != (HostChanged{Term: 2, Host: 2}) {
		t.Fatalf("b saw %+v", got)
	}
}

func TestRoomFull(t *testing.T) {
	e := newEnv(t, Config{MaxMembers: 3, Rooms: map[RoomID]RoomConfig{"small": {MaxMembers: 1}}})
	e.joined(JoinOptions{Room: "small", User: "a", Device: "1"})
	if _, err := e.dialErr(JoinOptions{Room: "small", User: "b"}, e.clientConfig()); !errors.Is(err, ErrRoomFull) {
		t.Fatalf("second join: %v", err)
	}
	// Replacing an identity does not need a free place.
	e.joined(JoinOptions{Room: "small", User: "a", Device: "1"})
	for i := range 3 {
		e.joined(JoinOptions{Room: "big", User: fmt.Sprint("u", i)})
	}
	if _, err := e.dialErr(JoinOptions{Room: "big", User: "late"}, e.clientConfig()); !errors.Is(err, ErrRoomFull) {
		t.Fatalf("fourth join: %v", err)
	}
}

func TestJoinErrors(t *testing.T) {
	e := newEnv(t, Config{JoinTimeout: 300 * time.Millisecond})
	tests := []struct {
		name     string
		first    string // "" sends nothing
		wantCode string
	}{
		{"not json", `{"v":1,`, "bad_message"},
		{"old version", `{"v":0,"type":"join","room":"r","user":"a"}`, "unsupported_version"},
		{"signal first", `{"v":1,"type":"synced"}`, "join_required"},
		{"no user in open mode", `{"v":1,"type":"join","room":"r"}`, "bad_message"},
		{"silence", "", "join_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := e.raw(nil)
			if tt.first != "" {
				rawSend(t, ws, tt.first)
			}
			m := rawRead(t, ws)
			if m["type"] != "error" || m["code"] != tt.wantCode || m["message"] == "" {
				t.Fatalf("got %v, want error %s", m, tt.wantCode)
			}
			err := rawReadClose(t, ws)
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || ce.Text != tt.wantCode {
				t.Fatalf("close: %v", err)
			}
		})
	}
	// After a join, bad messages get an error and the socket stays.
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","user":"a"}`)
	rawRead(t, ws)
	for _, tt := range []struct{ msg, code string }{
		{`{"v":1,"type":"join","room":"r","user":"a"}`, "already_joined"},
		{`nonsense`, "bad_message"},
		{`{"v":1,"type":"signal","to":1,"payload":{"kind":"offer"}}`, "bad_signal"},
		{`{"v":1,"type":"report","replica":{"term":1,"clock":1,"entities":1,"hash":"XYZ"}}`, "bad_message"},
	} {
		rawSend(t, ws, tt.msg)
		if m := rawRead(t, ws); m["type"] != "error" || m["code"] != tt.code {
			t.Fatalf("%s: got %v", tt.msg, m)
		}
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if m := rawRead(t, ws); m["code"] != "bad_message" {
		t.Fatalf("binary: got %v", m)
	}
	// Still joined: the hub answers a signal to self.
	rawSend(t, ws, `{"v":1,"type":"signal","to":1,"payload":{"kind":"offer","sdp":"x"}}`)
	if m := rawRead(t, ws); m["code"] != "bad_signal" || !strings.Contains(m["message"].(string), "itself") {
		t.Fatalf("still joined? got %v", m)
	}
}

func TestReadLimit(t *testing.T) {
	e := newEnv(t, Config{ReadLimit: 1024})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","user":"big"}`)
	rawRead(t, ws)
	next[MemberJoined](t, a)
	// Just under the limit passes.
	sdp := strings.Repeat("x", 900)
	rawSend(t, ws, `{"v":1,"type":"signal","to":1,"payload":{"kind":"offer","sdp":"`+sdp+`"}}`)
	if got := next[Signal](t, a); got.Payload.SDP != sdp {
		t.Fatalf("a got %+v", got)
	}
	sdp = strings.Repeat("x", 2000)
	_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"v":1,"type":"signal","to":1,"payload":{"kind":"offer","sdp":"`+sdp+`"}}`))
	if got := next[MemberLeft](t, a); got.Index != 2 || got.Reason != ReasonError {
		t.Fatalf("a saw %+v", got)
	}
	if err := rawReadClose(t, ws); err == nil {
		t.Fatal("oversized sender not disconnected")
	}
}

// TestSlowConsumerDropped: a member that never reads fills its queue and is
// disconnected and counted; the others keep going.
// TestSlowConsumerDropped: signals to a member that does not read are shed once its queue is
// three quarters full (the senders hear recipient_busy, the member stays); membership messages,
// which cannot be lost, fill the rest and the spill (4 × 8 frames) and then drop it as a slow consumer.
func TestSlowConsumerDropped(t *testing.T) {
	e := newEnvWith(t, Config{SendQueue: 8, MaxMembers: 8, PongWait: time.Minute, PingInterval: time.Minute, WriteWait: time.Minute, SignalBurst: 1 << 20},
		func(hs *httptest.Server) { hs.Listener = smallBufferListener{hs.Listener} })
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	next[MemberJoined](t, a)
	// The slow member has a tiny receive buffer and never reads after join.
	slow := e.raw(smallBufferDialer())
	rawSend(t, slow, `{"v":1,"type":"join","room":"r","user":"slow"}`)
	rawRead(t, slow)
	next[MemberJoined](t, a)
	next[MemberJoined](t, b)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	big := SignalPayload{Kind: SignalOffer, SDP: strings.Repeat("s", MaxSDPLen)}
	// Flood the slow member until the server sheds a's signals.
	for busy := false; !busy; {
		if err := a.SendSignal(ctx, 3, big); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-a.Events():
			er, ok := ev.(Error)
			if !ok || er.Code != CodeRecipientBusy || er.PeerIndex != 3 {
				t.Fatalf("a got %T %+v, want recipient_busy for peer 3", ev, ev)
			}
			busy = true
		case <-time.After(5 * time.Millisecond):
		}
	}
	if st := e.srv.Stats(); st.SlowConsumers != 0 || st.ShedSignals == 0 || len(e.rooms()[0].Members) != 3 {
		t.Fatalf("after the flood: %+v, members %d; want the slow member kept and signals shed", st, len(e.rooms()[0].Members))
	}
	// a and b still talk.
	if err := a.SendSignal(ctx, 2, SignalPayload{Kind: SignalOffer, SDP: "ping"}); err != nil {
		t.Fatal(err)
	}
	if got := until(t, b, func(Signal) bool { return true }); got.From != 1 {
		t.Fatalf("b got %+v", got)
	}
	// Members come and go: their announcements fill the slow member's queue, which drops it.
	for i := 0; e.srv.Stats().SlowConsumers == 0; i++ {
		if i > 20+spillFrames(&e.srv.cfg) {
			t.Fatal("slow consumer never dropped")
		}
		c, _ := e.joined(JoinOptions{Room: "r", User: fmt.Sprintf("c%d", i)})
		_ = c.Close()
	}
	if got := until(t, b, func(ev MemberLeft) bool { return ev.Index == 3 }); got.Reason != ReasonDropped {
		t.Fatalf("b saw %+v", got)
	}
	if n := e.srv.Stats().SlowConsumers; n != 1 {
		t.Fatalf("SlowConsumers = %d", n)
	}
}

func TestCloseWaitsForGoroutines(t *testing.T) {
	e := newEnv(t, Config{})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	mute := e.raw(nil) // connected, never joins, never reads
	_ = mute
	deaf := e.raw(nil) // joined, never reads again
	rawSend(t, deaf, `{"v":1,"type":"join","room":"r","user":"deaf"}`)
	checkFor(t, waitTimeout, func() error {
		if n := e.srv.Stats().Members; n != 3 {
			return fmt.Errorf("%d members", n)
		}
		return nil
	})
	if n := e.srv.Stats().Conns; n != 4 {
		t.Fatalf("Conns = %d", n)
	}
	start := time.Now()
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	// CloseGrace is 500ms in tests; mute and deaf never answer the close.
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %v", d)
	}
	// Every goroutine calls wg.Done as its very last step, so right after
	// Close one may still be returning ("runnable"), but none may be blocked
	// or still working.
	for _, g := range ourGoroutines(serverMarkers) {
		header, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(header, "[runnable]") && !strings.Contains(header, "[running]") {
			t.Fatalf("server goroutine still blocked after Close:\n%s", g)
		}
	}
	checkFor(t, waitTimeout, func() error {
		if gs := ourGoroutines(serverMarkers); len(gs) > 0 {
			return fmt.Errorf("%d server goroutines after Close, first:\n%s", len(gs), gs[0])
		}
		return nil
	})
	for _, c := range []*Client{a, b} {
		if cl := closedEvent(t, c); !errors.Is(cl.Err, ErrServerClosing) {
			t.Fatalf("peer %d closed with %v", c.Self(), cl.Err)
		}
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if code, _ := e.get("/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("after Close: %d", code)
	}
	if _, err := e.srv.Rooms(context.Background()); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Rooms after Close: %v", err)
	}
}

func TestSignalRateLimit(t *testing.T) {
	// A fixed clock never refills the bucket, so exactly SignalBurst signals
	// pass.
	e := newEnv(t, Config{SignalRate: 1, SignalBurst: 3, Clock: fixedClock{time.Unix(1e9, 0)}})
	a, _ := e.joined(JoinOptions{Room: "r", User: "a"})
	b, _ := e.joined(JoinOptions{Room: "r", User: "b"})
	ctx := context.Background()
	offer := SignalPayload{Kind: SignalOffer, SDP: "x"}
	for range 4 {
		if err := a.SendSignal(ctx, 2, offer); err != nil {
			t.Fatal(err)
		}
	}
	next[MemberJoined](t, a)
	if got := next[Error](t, a); got.Code != CodeRateLimited || got.PeerIndex != 2 {
		t.Fatalf("a got %+v", got)
	}
	for range 3 {
		next[Signal](t, b)
	}
	// b's own bucket is untouched.
	if err := b.SendSignal(ctx, 1, offer); err != nil {
		t.Fatal(err)
	}
	if got := next[Signal](t, a); got.From != 2 {
		t.Fatalf("a got %+v", got)
	}
}

func TestTokenBucket(t *testing.T) {
	var b tokenBucket
	t0 := time.Unix(100, 0)
	for i := range 2 {
		if !b.allow(t0, 10, 2) {
			t.Fatalf("burst token %d refused", i)
		}
	}
	if b.allow(t0, 10, 2) {
		t.Fatal("third token at once allowed")
	}
	if !b.allow(t0.Add(100*time.Millisecond), 10, 2) {
		t.Fatal("refilled token refused")
	}
	if b.allow(t0.Add(50*time.Millisecond), 10, 2) {
		t.Fatal("a clock going back refilled the bucket")
	}
	later := t0.Add(time.Hour)
	first, second, third := b.allow(later, 10, 2), b.allow(later, 10, 2), b.allow(later, 10, 2)
	if !first || !second || third {
		t.Fatal("bucket holds more than the burst")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, Config{Registerer: reg})
	e.joined(JoinOptions{Room: "r", User: "a"})
	e.joined(JoinOptions{Room: "r", User: "b"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		if h := m.GetHistogram(); h != nil {
			got[mf.GetName()] = float64(h.GetSampleCount())
		} else if m.GetGauge() != nil {
			got[mf.GetName()] = m.GetGauge().GetValue()
		} else {
			got[mf.GetName()] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"concord_signaling_rooms": 1, "concord_signaling_members": 2, "concord_signaling_connections": 2,
		"concord_signaling_joins_total": 2, "concord_signaling_rejected_joins_total": 0,
		"concord_signaling_slow_consumer_drops_total": 0, "concord_signaling_ping_timeouts_total": 0, "concord_signaling_store_errors_total": 0,
		"concord_signaling_bad_messages_total": 0, "concord_signaling_relay_errors_total": 0,
		"concord_signaling_member_rtt_seconds": 0, "concord_signaling_join_to_synced_seconds": 0,
		"concord_signaling_migration_pause_seconds": 0,
		"concord_signaling_refusals_total":          0, "concord_signaling_refused_connections_total": 0,
		"concord_signaling_shed_signals_total": 0, "concord_signaling_refused_hosts_total": 0,
		"concord_signaling_relayed_connections": 0,
	}
	limits := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "concord_signaling_limit" {
			continue
		}
		for _, m := range mf.GetMetric() {
			limits[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	delete(got, "concord_signaling_limit")
	if limits["max_members"] != DefaultMaxMembers || limits["signal_rate"] != DefaultSignalRate || limits["ping_interval_seconds"] != 0.1 ||
		limits["max_sdp_bytes"] != MaxSDPLen || limits["max_bans_per_room"] != DefaultMaxBansPerRoom || len(limits) != 21 {
		t.Fatalf("limits = %v", limits)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("metrics = %v, want %v", got, want)
	}
	// A second server on the same registry logs an error instead of panicking.
	var logs syncbuf.Buffer
	s2 := New(Config{Registerer: reg, Logger: zerolog.New(&logs)})
	_ = s2.Close()
	if !strings.Contains(logs.String(), "registering metric") {
		t.Fatalf("no registration error logged: %s", logs.String())
	}
}

// BenchmarkRelay measures one signal from a Go client through the server to
// another Go client (one op = one delivered signal).
func BenchmarkRelay(b *testing.B) {
	srv := New(Config{SignalRate: 1e9, SignalBurst: 1 << 30})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	ctx := context.Background()
	dial := func(user string) *Client {
		c, err := Dial(ctx, hs.URL, JoinOptions{Room: "bench", User: user}, ClientConfig{})
		if err != nil {
			b.Fatal(err)
		}
		<-c.Events() // Joined
		return c
	}
	a, c := dial("a"), dial("b")
	defer a.Close()
	defer c.Close()
	<-a.Events() // MemberJoined
	payload := SignalPayload{Kind: SignalCandidate, Candidate: &ICECandidate{Candidate: "candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host"}}
	b.ReportAllocs()
	b.SetBytes(int64(len(payload.Candidate.Candidate)))
	for b.Loop() {
		if err := a.SendSignal(ctx, 2, payload); err != nil {
			b.Fatal(err)
		}
		if _, ok := (<-c.Events()).(Signal); !ok {
			b.Fatal("not a signal")
		}
	}
}
