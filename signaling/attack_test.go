package signaling

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// These tests replay the attacks on the signaling server (docs/security.md §1): each asserts that
// the attacker is refused (or dropped) with a clear reason and that the room is unharmed.

// TestAttackResumeTermWrap: a member with a valid token (mayHost false) claims term 2^64−1 and
// then the largest term the decoder takes; the room's term must not move, let alone wrap to 0,
// and the next host change must still raise it.
func TestAttackResumeTermWrap(t *testing.T) {
	e := newEnv(t, Config{Secret: resumeSecret})
	tok := func(user string, mayHost bool) string {
		s, err := IssueToken(resumeSecret, Claims{Room: "r", User: user, Device: "d", MayHost: mayHost, Kind: KindBot, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	h, jh := e.joined(JoinOptions{Room: "r", Token: tok("h", true)})
	m, jm := e.joined(JoinOptions{Room: "r", Token: tok("m", true)})
	if jh.Host != 1 || jm.Term != 1 {
		t.Fatalf("setup: host %d term %d", jm.Host, jm.Term)
	}
	_, ja := e.joined(JoinOptions{Room: "r", Token: tok("mallory", false)})

	// 2^64−1 on the wire: refused by the decoder, before any room sees it.
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","token":"`+tok("mallory", false)+`","resume":{"peerIndex":`+
		strconv.FormatUint(uint64(ja.Self), 10)+`,"term":18446744073709551615,"host":3,"synced":true,"room":"r","token":"`+ja.ResumeToken+`"}}`)
	if msg := rawRead(t, ws); msg["code"] != string(CodeBadMessage) {
		t.Fatalf("claim of 2^64-1: %v, want bad_message", msg)
	}

	// MaxTerm with the token of term 1: more than MaxTermSkew ahead of what the token vouches for.
	_, err := e.dialErr(JoinOptions{Room: "r", Token: tok("mallory", false),
		Resume: &Resume{Index: ja.Self, Term: MaxTerm, Host: ja.Self, Synced: true, Room: "r", Token: ja.ResumeToken}}, e.clientConfig())
	if !errors.Is(err, ErrResumeTerm) || !errors.Is(err, ErrResumeRefused) {
		t.Fatalf("claim of MaxTerm: %v, want ErrResumeTerm", err)
	}
	// Within the skew: accepted, but a running room moves only to a term the server vouched for.
	for i := 0; i < 3; i++ {
		a, err := e.dialErr(JoinOptions{Room: "r", Token: tok("mallory", false),
			Resume: &Resume{Index: ja.Self, Term: ja.Term + MaxTermSkew, Host: 1, Synced: true, Room: "r", Token: ja.ResumeToken}}, e.clientConfig())
		if err != nil {
			t.Fatalf("claim %d within the skew: %v", i, err)
		}
		if j := next[Joined](t, a); j.Term != 1 || j.Host != 1 {
			t.Fatalf("claim %d within the skew moved the room: term %d host %d", i, j.Term, j.Host)
		}
		_ = a.Close()
	}
	if rs := e.rooms(); rs[0].Term != 1 {
		t.Fatalf("room at term %d after the claims, want 1", rs[0].Term)
	}
	if s := e.srv.Stats(); s.Refused[CodeResumeTerm] != 1 || s.Refused[CodeBadMessage] == 0 {
		t.Fatalf("refusals %v, want one resume_term_invalid and a bad_message", s.Refused)
	}
	// The host leaves: the next host gets term 2 and the member follows it.
	if err := m.SetSynced(t.Context()); err != nil {
		t.Fatal(err)
	}
	until(t, m, func(ev MemberSynced) bool { return ev.Index == jm.Self })
	_ = h.Close()
	if got := until(t, m, func(HostChanged) bool { return true }); got.Term != 2 || got.Host != jm.Self {
		t.Fatalf("after the host left: %+v, want term 2 host %d", got, jm.Self)
	}
}

// TestAttackResumeTermOpen: on an open server claims are trusted, but not far past the running
// room's term, never above MaxTerm, and a room's term saturates instead of wrapping.
func TestAttackResumeTermOpen(t *testing.T) {
	e := newEnv(t, Config{})
	h, _ := e.joined(JoinOptions{Room: "r", User: "h"})
	m, jm := e.joined(JoinOptions{Room: "r", User: "m"})
	_, err := e.dialErr(JoinOptions{Room: "r", User: "x", Resume: &Resume{Index: 9, Term: 1 + MaxTermSkew + 1, Host: 9, Synced: true}}, e.clientConfig())
	if !errors.Is(err, ErrResumeTerm) {
		t.Fatalf("claim past the skew: %v, want ErrResumeTerm", err)
	}
	// Within the skew the claim is taken, but a room the server ran moves only by its own
	// elections: resuming again and again inflates nothing.
	for i := range 3 {
		x, err := e.dialErr(JoinOptions{Room: "r", User: "x", Resume: &Resume{Index: 9, Term: 1 + MaxTermSkew, Host: 1, Synced: true}}, e.clientConfig())
		if err != nil {
			t.Fatalf("claim %d within the skew: %v", i, err)
		}
		if j := next[Joined](t, x); j.Term != 1 {
			t.Fatalf("claim %d within the skew moved the room to term %d", i, j.Term)
		}
		_ = x.Close()
	}
	if rs := e.rooms(); rs[0].Term != 1 {
		t.Fatalf("room at term %d, want 1", rs[0].Term)
	}
	// x's last leave must be through before the host leaves, or x (synced, by its claim) may be
	// the one elected.
	checkFor(t, waitTimeout, func() error {
		if n := len(e.rooms()[0].Members); n != 2 {
			return fmt.Errorf("%d members, want h and m", n)
		}
		return nil
	})
	_ = h.Close()
	if got := until(t, m, func(HostChanged) bool { return true }); got.Term != 2 || got.Host != jm.Self {
		t.Fatalf("after the host left: %+v, want term 2", got)
	}

	// A room opened by a claim at MaxTerm stays there: no wrap to 0 on the next election.
	a, err := e.dialErr(JoinOptions{Room: "top", User: "a", Resume: &Resume{Index: 1, Term: MaxTerm, Host: 1, Synced: true}}, e.clientConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.joined(JoinOptions{Room: "top", User: "b"})
	_ = a.Close()
	if got := until(t, b, func(HostChanged) bool { return true }); got.Term != MaxTerm {
		t.Fatalf("after the host left a room at MaxTerm: %+v, want the term to stay at %d", got, MaxTerm)
	}
}

// TestAttackReportClaims: a report's term may not exceed the room's, nor its numbers 2^53−1.
func TestAttackReportClaims(t *testing.T) {
	e := newEnv(t, Config{})
	_, j := e.joined(JoinOptions{Room: "r", User: "h"})
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","user":"m"}`)
	rawRead(t, ws) // joined
	for _, rep := range []string{
		`{"term":18446744073709551615,"clock":1,"entities":1,"hash":"0000000000000001"}`,
		`{"term":1,"clock":18446744073709551615,"entities":1,"hash":"0000000000000001"}`,
		`{"term":2,"clock":1,"entities":1,"hash":"0000000000000001"}`,
	} {
		rawSend(t, ws, `{"v":1,"type":"report","replica":`+rep+`}`)
		if msg := rawRead(t, ws); msg["code"] != string(CodeBadMessage) {
			t.Fatalf("report %s: %v, want bad_message", rep, msg)
		}
	}
	rawSend(t, ws, `{"v":1,"type":"report","replica":{"term":1,"clock":5,"entities":1,"hash":"0000000000000001"}}`)
	checkFor(t, waitTimeout, func() error {
		rs := e.rooms()
		if r := rs[0].Members[1].Replica; r == nil || *r != (Report{Term: j.Term, Clock: 5, Entities: 1, Hash: 1}) {
			return fmt.Errorf("member report %+v", r)
		}
		return nil
	})
}

// TestAttackSignalFlood: ten members relay offers of the largest size as fast as they can at the
// host, whose events nobody drains for a while. The server sheds signals (the flooders hear
// recipient_busy or rate_limited), the host's client sheds what its queue cannot take, and the
// host stays in the room: no leave, no new term, and it still hears members and honest signals.
func TestAttackSignalFlood(t *testing.T) {
	// The production PongWait: the flood is 48 MB of offers through a race-instrumented server on a
	// shared machine, and the test is about who gets dropped for flooding, not about liveness.
	e := newEnv(t, Config{SendQueue: 64, RecvSignalRate: 100, RecvSignalBurst: 200, PongWait: DefaultPongWait})
	cfg := e.clientConfig()
	cfg.EventQueue = 32
	h, err := e.dialErr(JoinOptions{Room: "r", User: "host"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	next[Joined](t, h)
	var flooders []*Client
	for i := range 10 {
		f, _ := e.joined(JoinOptions{Room: "r", User: fmt.Sprintf("f%d", i)})
		flooders = append(flooders, f)
	}
	offer := SignalPayload{Kind: SignalOffer, SDP: strings.Repeat("s", MaxSDPLen)}
	var wg sync.WaitGroup
	for _, f := range flooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Drain f's events so that f itself is not the one to overflow.
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case <-f.Events():
					case <-done:
						return
					}
				}
			}()
			for range 300 {
				if err := f.SendSignal(t.Context(), 1, offer); err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	checkFor(t, waitTimeout, func() error {
		if st := e.srv.Stats(); st.Refused[CodeRecipientBusy]+st.Refused[CodeRateLimited] == 0 || h.ShedSignals() == 0 {
			return fmt.Errorf("refused %v, host shed %d: want both", st.Refused, h.ShedSignals())
		}
		return nil
	})
	// The host is still there, and still hears the room. The honest signal is retried while
	// the host's budget refills, as a peer retries its negotiation.
	late, _ := e.joined(JoinOptions{Room: "r", User: "late"})
	retry := time.NewTicker(50 * time.Millisecond)
	defer retry.Stop()
	deadline := time.After(waitTimeout)
	sawJoin := false
	for {
		select {
		case ev := <-h.Events():
			switch ev := ev.(type) {
			case MemberJoined:
				sawJoin = sawJoin || ev.Member.ID == "late/~12"
			case Signal:
				if ev.Payload.SDP != "honest" {
					continue
				}
				if !sawJoin {
					t.Fatal("the honest signal arrived before late's member-joined")
				}
				if st := e.srv.Stats(); st.SlowConsumers != 0 || e.rooms()[0].Term != 1 {
					t.Fatalf("stats %+v, term %d: the host was dropped", st, e.rooms()[0].Term)
				}
				return
			case Closed, HostChanged:
				t.Fatalf("host got %T %+v", ev, ev)
			}
		case <-retry.C:
			if err := late.SendSignal(t.Context(), 1, SignalPayload{Kind: SignalOffer, SDP: "honest"}); err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("the host never got the honest signal")
		}
	}
}

// manualClock is a Clock the test moves.
type manualClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// dialFrom dials the server from the loopback address local (127.0.0.x), as another client.
func (e *testEnv) dialFrom(local string, opts JoinOptions) (*Client, error) {
	cfg := e.clientConfig()
	cfg.Dialer = &websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}).DialContext}
	return e.dialErr(opts, cfg)
}

// TestAttackConnectionCaps: one address cannot hold more than MaxConnsPerAddr websockets, all
// addresses together not more than MaxConns, and no join opens more than MaxRooms rooms. Refused
// handshakes are answered 503 server_busy before any upgrade; a slot freed is usable again.
func TestAttackConnectionCaps(t *testing.T) {
	e := newEnv(t, Config{MaxConnsPerAddr: 3, MaxConns: 5, MaxRooms: 4})
	var held []*Client
	for i := range 3 {
		c, err := e.dialFrom("127.0.0.1", JoinOptions{Room: RoomID(fmt.Sprintf("r%d", i)), User: "a"})
		if err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
		held = append(held, c)
	}
	if _, err := e.dialFrom("127.0.0.1", JoinOptions{Room: "r9", User: "a"}); !errors.Is(err, ErrServerBusy) || !strings.Contains(err.Error(), "per address") {
		t.Fatalf("4th socket from one address: %v, want server_busy per address", err)
	}
	// A raw handshake sees the reason and Retry-After.
	u, _ := wsURL(e.url)
	_, resp, err := websocket.DefaultDialer.Dial(u, nil)
	if err == nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("raw handshake past the cap: %v %+v", err, resp)
	}
	_ = resp.Body.Close()
	// Another address opens the 4th room; the 5th room is refused by MaxRooms.
	c, err := e.dialFrom("127.0.0.2", JoinOptions{Room: "r3", User: "b"})
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, c)
	if _, err := e.dialFrom("127.0.0.2", JoinOptions{Room: "r4", User: "b"}); !errors.Is(err, ErrServerBusy) || !strings.Contains(err.Error(), "rooms") {
		t.Fatalf("5th room: %v, want server_busy (rooms)", err)
	}
	// Joining an open room still works: the 5th socket, then the total cap.
	// (The refused join's socket is released when its handler returns.)
	checkFor(t, waitTimeout, func() error {
		c, err = e.dialFrom("127.0.0.2", JoinOptions{Room: "r3", User: "b2"})
		return err
	})
	held = append(held, c)
	if _, err := e.dialFrom("127.0.0.3", JoinOptions{Room: "r3", User: "c"}); !errors.Is(err, ErrServerBusy) || strings.Contains(err.Error(), "per address") {
		t.Fatalf("6th socket: %v, want server_busy (total)", err)
	}
	// A hundred more handshakes past the caps leave nothing behind: refused before the upgrade,
	// they cost no goroutine and no socket.
	base := runtime.NumGoroutine()
	for range 100 {
		if _, err := e.dialFrom("127.0.0.1", JoinOptions{Room: "r0", User: "a"}); !errors.Is(err, ErrServerBusy) {
			t.Fatalf("handshake past the cap: %v", err)
		}
	}
	checkFor(t, waitTimeout, func() error {
		if n := runtime.NumGoroutine(); n > base+5 {
			return fmt.Errorf("%d goroutines after 100 refused handshakes, %d before", n, base)
		}
		if n := e.srv.Stats().Conns; n != 5 {
			return fmt.Errorf("%d websockets, want the 5 held", n)
		}
		return nil
	})
	st := e.srv.Stats()
	if st.RefusedConns["address"] != 2 || st.RefusedConns["total"] < 101 || st.Refused[CodeServerBusy] != 1 {
		t.Fatalf("refused %v conns %v, want 2 per address, 101 total, 1 room", st.Refused, st.RefusedConns)
	}
	_ = held[0].Close()
	checkFor(t, waitTimeout, func() error {
		c, err := e.dialFrom("127.0.0.1", JoinOptions{Room: "r0", User: "a2"})
		if err == nil {
			_ = c.Close()
		}
		return err
	})
}

// TestAttackSquatters: sockets that join a full room and never sync are evicted, one per new
// join, once they have been unsynced for SyncTimeout in a room with a host; before that the
// room is full.
func TestAttackSquatters(t *testing.T) {
	clk := &manualClock{t: time.Unix(1e9, 0)}
	e := newEnv(t, Config{MaxMembers: 3, Clock: clk})
	h, _ := e.joined(JoinOptions{Room: "arena", User: "host"})
	s1, _ := e.joined(JoinOptions{Room: "arena", User: "s1"})
	clk.add(time.Second)
	s2, _ := e.joined(JoinOptions{Room: "arena", User: "s2"})
	if _, err := e.dialErr(JoinOptions{Room: "arena", User: "honest"}, e.clientConfig()); !errors.Is(err, ErrRoomFull) {
		t.Fatalf("join before SyncTimeout: %v, want room_full", err)
	}
	clk.add(DefaultSyncTimeout)
	c, err := e.dialErr(JoinOptions{Room: "arena", User: "honest"}, e.clientConfig())
	if err != nil {
		t.Fatalf("join after SyncTimeout: %v", err)
	}
	if cl := closedEvent(t, s1); !errors.Is(cl.Err, ErrEvicted) {
		t.Fatalf("s1 closed with %v, want evicted", cl.Err)
	}
	if got := until(t, h, func(ev MemberLeft) bool { return true }); got.Index != 2 || got.Reason != ReasonEvicted {
		t.Fatalf("host saw %+v, want s1 evicted", got)
	}
	// s2 syncs: it is no squatter and stays; the room is full again.
	if err := s2.SetSynced(t.Context()); err != nil {
		t.Fatal(err)
	}
	until(t, h, func(ev MemberSynced) bool { return ev.Index == 3 })
	_ = c
	if _, err := e.dialErr(JoinOptions{Room: "arena", User: "x"}, e.clientConfig()); !errors.Is(err, ErrRoomFull) {
		t.Fatalf("join into a room of synced members and a fresh one: %v, want room_full", err)
	}
}

// TestAttackTokenDevices: a token without a device claim admits at most MaxDevicesPerToken
// members; tokens that name devices are not counted.
func TestAttackTokenDevices(t *testing.T) {
	e := newEnv(t, Config{Secret: resumeSecret, MaxDevicesPerToken: 2})
	tok := func(device string) string {
		s, err := IssueToken(resumeSecret, Claims{Room: "r", User: "u", Device: device, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	free := tok("")
	e.joined(JoinOptions{Room: "r", Token: free, Device: "a"})
	e.joined(JoinOptions{Room: "r", Token: free})
	if _, err := e.dialErr(JoinOptions{Room: "r", Token: free, Device: "c"}, e.clientConfig()); !errors.Is(err, ErrTooManyDevices) {
		t.Fatalf("3rd device of one token: %v, want too_many_devices", err)
	}
	// Rejoining an existing device replaces it and is not a new device.
	e.joined(JoinOptions{Room: "r", Token: free, Device: "a"})
	e.joined(JoinOptions{Room: "r", Token: tok("pinned")})
}

// TestAttackAPIRoomsSecret: with a secret, /api/rooms tells nobody every room: a join token sees
// its own room, the admin key all of them, anything else gets 401.
func TestAttackAPIRoomsSecret(t *testing.T) {
	e := newEnv(t, Config{Secret: resumeSecret, AdminKey: "admin-key-0123456789"})
	tok := func(room RoomID) string {
		s, err := IssueToken(resumeSecret, Claims{Room: room, User: "u", ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e.joined(JoinOptions{Room: "a", Token: tok("a")})
	e.joined(JoinOptions{Room: "b", Token: tok("b")})
	rooms := func(bearer string) (int, []RoomID) {
		code, body := e.getWith("/api/rooms", "", bearer)
		if code != http.StatusOK {
			return code, nil
		}
		var rs []RoomInfo
		if err := json.Unmarshal(body, &rs); err != nil {
			t.Fatal(err)
		}
		var ids []RoomID
		for _, r := range rs {
			ids = append(ids, r.Room)
		}
		return code, ids
	}
	for _, bearer := range []string{"", "not-a-token", "admin-key-012345678", tok("a") + "x"} {
		if code, ids := rooms(bearer); code != http.StatusUnauthorized {
			t.Fatalf("bearer %q: %d %v, want 401", bearer, code, ids)
		}
	}
	if code, ids := rooms(tok("a")); code != 200 || len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("token for a: %d %v", code, ids)
	}
	if code, ids := rooms("admin-key-0123456789"); code != 200 || len(ids) != 2 {
		t.Fatalf("admin key: %d %v", code, ids)
	}
}

// TestAttackHostHeader: a loopback server answers only loopback names, so a page that rebinds
// its own name to 127.0.0.1 cannot read it; AllowedHosts replaces that rule.
func TestAttackHostHeader(t *testing.T) {
	e := newEnv(t, Config{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.url, "http://"))
	for host, want := range map[string]int{
		"evil.example:" + port: http.StatusMisdirectedRequest, "127.0.0.1.nip.io:" + port: http.StatusMisdirectedRequest,
		"localhost:" + port: 200, "127.0.0.1:" + port: 200, "[::1]:" + port: 200, "app.localhost:" + port: 200,
	} {
		if code, body := e.getWith("/api/rooms", host, ""); code != want {
			t.Errorf("Host %s: %d %s, want %d", host, code, body, want)
		}
	}
	u, _ := wsURL(e.url)
	if _, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"Host": {"evil.example"}}); err == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("websocket with Host evil.example: %v", err)
	}
	if e.srv.Stats().RefusedHosts < 3 {
		t.Fatalf("RefusedHosts = %d", e.srv.Stats().RefusedHosts)
	}
	_ = e.srv.Close() // each env's cleanup checks that no server goroutine is left
	e2 := newEnv(t, Config{AllowedHosts: []string{"concord.example"}})
	if code, _ := e2.getWith("/healthz", "concord.example:443", ""); code != 200 {
		t.Fatalf("allowed host: %d", code)
	}
	if code, _ := e2.getWith("/healthz", "localhost", ""); code != http.StatusMisdirectedRequest {
		t.Fatalf("host outside AllowedHosts: %d", code)
	}
}

// TestAttackRepeatOffender: a member whose messages keep being refused is told why each time,
// then dropped with too_many_errors once past ErrorBurst; the room goes on without it.
func TestAttackRepeatOffender(t *testing.T) {
	e := newEnv(t, Config{ErrorBurst: 5, ErrorRate: 0.001})
	h, _ := e.joined(JoinOptions{Room: "r", User: "h"})
	ws := e.raw(nil)
	rawSend(t, ws, `{"v":1,"type":"join","room":"r","user":"m"}`)
	rawRead(t, ws) // joined
	for i := range 5 {
		rawSend(t, ws, `{"v":1,"type":"signal","to":99,"payload":{"kind":"offer","sdp":"x"}}`)
		if msg := rawRead(t, ws); msg["code"] != string(CodeUnknownPeer) {
			t.Fatalf("refusal %d: %v", i, msg)
		}
	}
	rawSend(t, ws, `{"v":1,"type":"nonsense"}`)
	for {
		msg := rawRead(t, ws)
		if msg["code"] == string(CodeTooManyErrors) {
			break
		}
		if msg["code"] != string(CodeBadMessage) {
			t.Fatalf("got %v, want bad_message then too_many_errors", msg)
		}
	}
	var ce *websocket.CloseError
	if err := rawReadClose(t, ws); !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || ce.Text != string(CodeTooManyErrors) {
		t.Fatalf("close %v, want 1008 too_many_errors", err)
	}
	if got := until(t, h, func(MemberLeft) bool { return true }); got.Index != 2 || got.Reason != ReasonError {
		t.Fatalf("host saw %+v", got)
	}
	if n := e.srv.Stats().Refused[CodeTooManyErrors]; n != 1 {
		t.Fatalf("too_many_errors counted %d times, want 1", n)
	}
}
