package signaling

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fakeTimers is an injected Config.AfterFunc: timers fire only when the test says so.
type fakeTimers struct {
	mu      sync.Mutex // guards the following fields
	pending map[int]func()
	next    int
	started int
}

func (f *fakeTimers) AfterFunc(_ time.Duration, fn func()) func() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == nil {
		f.pending = make(map[int]func())
	}
	id := f.next
	f.next++
	f.started++
	f.pending[id] = fn
	return func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, ok := f.pending[id]
		delete(f.pending, id)
		return ok
	}
}

// fire runs every pending timer and returns how many there were.
func (f *fakeTimers) fire() int {
	f.mu.Lock()
	fns := make([]func(), 0, len(f.pending))
	for id, fn := range f.pending {
		fns = append(fns, fn)
		delete(f.pending, id)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	return len(fns)
}

func (f *fakeTimers) count() (pending, started int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending), f.started
}

var resumeSecret = []byte("0123456789abcdef0123456789abcdef")

// claim is one resume join of a table test.
type claim struct {
	user   string
	index  PeerIndex // 0: a plain join
	term   Term
	host   PeerIndex
	synced bool
	room   RoomID // the claim's room, if set
	token  string // "": the right token; "bad": a wrong one; "stale", "skew": see opts
}

func (c claim) opts(t *testing.T, room RoomID) JoinOptions {
	tok, err := IssueToken(resumeSecret, Claims{Room: room, User: c.user, Device: "d", MayHost: true, Kind: KindBot, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	o := JoinOptions{Room: room, User: c.user, Device: "d", Kind: KindBot, Token: tok}
	if c.index == 0 {
		return o
	}
	rt := resumeToken(deriveResumeKey(resumeSecret), room, c.index, c.term, NewIdentity(c.user, "d"))
	switch c.token {
	case "bad":
		rt = resumeToken(deriveResumeKey(resumeSecret), room, c.index+1, c.term, NewIdentity(c.user, "d"))
	case "stale":
		// Issued MaxTermSkew+1 terms before the claimed one.
		rt = resumeToken(deriveResumeKey(resumeSecret), room, c.index, c.term-MaxTermSkew-1, NewIdentity(c.user, "d"))
	case "skew":
		// Issued MaxTermSkew terms before the claimed one: still within the bound.
		rt = resumeToken(deriveResumeKey(resumeSecret), room, c.index, c.term-MaxTermSkew, NewIdentity(c.user, "d"))
	}
	o.Resume = &Resume{Index: c.index, Term: c.term, Host: c.host, Synced: c.synced, Room: c.room, Token: rt}
	return o
}

// TestResumeRules joins claims one by one into a fresh server (as after a restart) and checks
// what each join gets, then the room after an optional grace timeout.
func TestResumeRules(t *testing.T) {
	type want struct {
		self PeerIndex
		term Term
		host PeerIndex
		err  error
	}
	tests := []struct {
		name   string
		claims []claim
		want   []want
		// waiting: a grace timer is pending after the last claim; fire it and expect after.
		waiting bool
		after   *want // the room's term and host at the end (after the grace, if any)
	}{
		{
			name:   "accept into an empty room",
			claims: []claim{{user: "a", index: 5, term: 3, host: 7, synced: true}},
			want:   []want{{self: 5, term: 3, host: 0}},
			// Host 7 has not come back: the room waits, then elects a at term 4.
			waiting: true,
			after:   &want{term: 4, host: 5},
		},
		{
			name:   "host restored at its own term",
			claims: []claim{{user: "m", index: 3, term: 4, host: 1, synced: true}, {user: "h", index: 1, term: 4, host: 1, synced: true}},
			want:   []want{{self: 3, term: 4, host: 0}, {self: 1, term: 4, host: 1}},
			after:  &want{term: 4, host: 1},
		},
		{
			name:   "host first, then members: no grace at all",
			claims: []claim{{user: "h", index: 1, term: 9, host: 1, synced: true}, {user: "m", index: 2, term: 9, host: 1, synced: true}},
			want:   []want{{self: 1, term: 9, host: 1}, {self: 2, term: 9, host: 1}},
			after:  &want{term: 9, host: 1},
		},
		{
			name: "members-only room elects after the grace",
			claims: []claim{
				{user: "m3", index: 3, term: 4, host: 1, synced: true},
				{user: "m2", index: 2, term: 4, host: 1, synced: true},
			},
			want:    []want{{self: 3, term: 4}, {self: 2, term: 4}},
			waiting: true,
			after:   &want{term: 5, host: 2},
		},
		{
			name: "the awaited host back in an older term ends the grace",
			claims: []claim{
				{user: "m", index: 2, term: 4, host: 1, synced: true},
				{user: "h", index: 1, term: 3, host: 1, synced: true},
			},
			want:  []want{{self: 2, term: 4}, {self: 1, term: 5, host: 1}},
			after: &want{term: 5, host: 1},
		},
		{
			name:   "refuse a taken index",
			claims: []claim{{user: "a", index: 2, term: 1, host: 2, synced: true}, {user: "b", index: 2, term: 1, host: 2, synced: true}},
			want:   []want{{self: 2, term: 1, host: 2}, {err: ErrIndexTaken}},
		},
		{
			name:   "refuse a bad token",
			claims: []claim{{user: "a", index: 2, term: 1, host: 2, token: "bad"}},
			want:   []want{{err: ErrResumeToken}},
		},
		{
			name:   "refuse a claim from another room",
			claims: []claim{{user: "a", index: 2, term: 1, host: 2, room: "elsewhere"}},
			want:   []want{{err: ErrResumeRoom}},
		},
		{
			name:   "next index raised above a claim",
			claims: []claim{{user: "a", index: 7, term: 2, host: 7, synced: true}, {user: "fresh"}},
			want:   []want{{self: 7, term: 2, host: 7}, {self: 8, term: 2, host: 7}},
		},
		{
			name: "a later term than the room's host moves the room past it",
			claims: []claim{
				{user: "h", index: 1, term: 2, host: 1, synced: true},
				{user: "m", index: 2, term: 6, host: 4, synced: true},
			},
			want:  []want{{self: 1, term: 2, host: 1}, {self: 2, term: 7, host: 1}},
			after: &want{term: 7, host: 1},
		},
		{
			// Elect ranks the lower index first, yet the running host keeps the room: a
			// switch would be a migration for nothing.
			name: "a resumed lower index does not take the room from its running host",
			claims: []claim{
				{user: "h", index: 3, term: 5, host: 3, synced: true},
				{user: "m", index: 2, term: 5, host: 3, synced: true},
			},
			want:  []want{{self: 3, term: 5, host: 3}, {self: 2, term: 5, host: 3}},
			after: &want{term: 5, host: 3},
		},
		{
			name: "fresh joins wait with the room",
			claims: []claim{
				{user: "m", index: 4, term: 3, host: 2, synced: true},
				{user: "fresh"},
			},
			want:    []want{{self: 4, term: 3}, {self: 5, term: 3}},
			waiting: true,
			after:   &want{term: 4, host: 4}, // the synced resumer, not the fresh member
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeTimers{}
			e := newEnv(t, Config{Secret: resumeSecret, AfterFunc: ft.AfterFunc})
			var clients []*Client
			for i, c := range tt.claims {
				cl, err := e.dialErr(c.opts(t, "r"), e.clientConfig())
				w := tt.want[i]
				if w.err != nil {
					if !errors.Is(err, w.err) || !errors.Is(err, ErrResumeRefused) {
						t.Fatalf("claim %d: err %v, want %v (a resume refusal)", i, err, w.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("claim %d: %v", i, err)
				}
				clients = append(clients, cl)
				j := next[Joined](t, cl)
				if j.Self != w.self || j.Term != w.term || j.Host != w.host {
					t.Fatalf("claim %d: joined self %d term %d host %d, want self %d term %d host %d", i, j.Self, j.Term, j.Host, w.self, w.term, w.host)
				}
				if term, ok := checkResumeToken(deriveResumeKey(resumeSecret), "r", j.Self, j.PeerID, j.ResumeToken); !ok || term != j.Term || j.ResumeToken == "" {
					t.Fatalf("claim %d: joined carries resume token %q, which does not check", i, j.ResumeToken)
				}
			}
			pending, _ := ft.count()
			if (pending > 0) != tt.waiting {
				t.Fatalf("%d grace timers pending, want waiting=%v", pending, tt.waiting)
			}
			if tt.waiting {
				if rs := e.rooms(); len(rs) != 1 || rs[0].Host != 0 {
					t.Fatalf("rooms during the grace: %+v, want one room without a host", rs)
				}
				ft.fire()
			}
			if tt.after == nil {
				return
			}
			checkFor(t, waitTimeout, func() error {
				rs := e.rooms()
				if len(rs) != 1 || rs[0].Term != tt.after.term || rs[0].Host != tt.after.host {
					return fmt.Errorf("rooms %+v, want term %d host %d", rs, tt.after.term, tt.after.host)
				}
				return nil
			})
			// Every member hears the room's final host and term.
			for _, cl := range clients {
				j := cl.Joined()
				if j.Term == tt.after.term && j.Host == tt.after.host {
					continue
				}
				until(t, cl, func(h HostChanged) bool { return h.Term == tt.after.term && h.Host == tt.after.host })
			}
		})
	}
}

// TestResumeTokenSurvivesRestart joins a server, stops it, and resumes the index the first one
// issued on a new server with the same secret; a server with another secret refuses it.
func TestResumeTokenSurvivesRestart(t *testing.T) {
	e1 := newEnv(t, Config{Secret: resumeSecret})
	c := claim{user: "a"}
	opts := c.opts(t, "r")
	// Every env checks for leaked goroutines at its cleanup, so clients close before the next.
	ca, j := e1.joined(opts)
	cb, j2 := e1.joined(claim{user: "b"}.opts(t, "r"))
	_ = ca.Close()
	_ = cb.Close()
	if j.ResumeToken == "" || j2.ResumeToken == j.ResumeToken {
		t.Fatalf("resume tokens %q and %q", j.ResumeToken, j2.ResumeToken)
	}
	_ = e1.srv.Close()

	e2 := newEnv(t, Config{Secret: resumeSecret})
	opts.Resume = &Resume{Index: j2.Self, Term: j2.Term, Host: j2.Host, Synced: true, Room: "r", Token: j.ResumeToken}
	if _, err := e2.dialErr(opts, e2.clientConfig()); !errors.Is(err, ErrResumeToken) {
		t.Fatalf("a's token for b's index: %v, want ErrResumeToken", err)
	}
	opts.Resume = &Resume{Index: j.Self, Term: j.Term, Host: j.Host, Synced: true, Room: "r", Token: j.ResumeToken}
	cl, err := e2.dialErr(opts, e2.clientConfig())
	if err != nil {
		t.Fatalf("resume on the restarted server: %v", err)
	}
	if got := next[Joined](t, cl); got.Self != j.Self || got.Term != j.Term || got.Host != j.Host || got.ResumeToken != j.ResumeToken {
		t.Fatalf("resumed as %+v, want self %d term %d host %d and the same token", got, j.Self, j.Term, j.Host)
	}
	_ = cl.Close()
	_ = e2.srv.Close()

	other := []byte("another secret, 32 bytes long!!!")
	e3 := newEnv(t, Config{Secret: other})
	if opts.Token, err = IssueToken(other, Claims{Room: "r", User: "a", Device: "d", MayHost: true, Kind: KindBot, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e3.dialErr(opts, e3.clientConfig()); !errors.Is(err, ErrResumeToken) {
		t.Fatalf("resume with another server's token: %v, want ErrResumeToken", err)
	}
}

// TestResumeOpenModeTrusts: an open server gives no token and takes every claim.
func TestResumeOpenModeTrusts(t *testing.T) {
	e := newEnv(t, Config{})
	cl, err := e.dialErr(JoinOptions{Room: "r", User: "a", Resume: &Resume{Index: 4, Term: 2, Host: 4, Synced: true}}, e.clientConfig())
	if err != nil {
		t.Fatal(err)
	}
	j := next[Joined](t, cl)
	if j.Self != 4 || j.Term != 2 || j.Host != 4 || j.ResumeToken != "" || j.PeerID != "a/~4" {
		t.Fatalf("joined %+v, want self 4 (a/~4) term 2 host 4 and no token", j)
	}
}

// TestResumeOwnConnection: a member resumes while the server still holds its old socket (a
// half-open connection): it keeps its index and the others hear neither a leave nor a join.
func TestResumeOwnConnection(t *testing.T) {
	e := newEnv(t, Config{})
	a, ja := e.joined(JoinOptions{Room: "r", User: "a", Device: "x"})
	b, jb := e.joined(JoinOptions{Room: "r", User: "b", Device: "y"})
	until(t, a, func(m MemberJoined) bool { return m.Member.Index == jb.Self })
	b2, err := e.dialErr(JoinOptions{Room: "r", User: "b", Device: "y", Resume: &Resume{Index: jb.Self, Term: jb.Term, Host: jb.Host}}, e.clientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if j := next[Joined](t, b2); j.Self != jb.Self || j.Term != ja.Term || j.Host != ja.Self || len(j.Members) != 2 {
		t.Fatalf("resumed as %+v", j)
	}
	if cl := closedEvent(t, b); !errors.Is(cl.Err, ErrReplaced) {
		t.Fatalf("old connection closed with %v, want ErrReplaced", cl.Err)
	}
	// The next thing a hears is c joining: nothing about b.
	_, jc := e.joined(JoinOptions{Room: "r", User: "c"})
	if ev := nextEvent(t, a); ev != (MemberJoined{Member: Member{Index: jc.Self, ID: jc.PeerID, Kind: KindBrowser, MayHost: true}}) {
		t.Fatalf("a heard %T %+v, want c joining", ev, ev)
	}
}

// TestResumeIgnoredByOldServer: a server that predates resume answers with a new index; Dial
// leaves and reports ErrResumeIgnored.
func TestResumeIgnoredByOldServer(t *testing.T) {
	defer checkNoGoroutines(t)
	closed := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"v":1,"type":"joined","room":"r","self":9,"peerId":"a/~9","term":1,"host":9,"members":[],"pinnedHosts":[]}`))
		_, _, err = ws.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
			close(closed)
		}
	}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := Dial(ctx, hs.URL, JoinOptions{Room: "r", User: "a", Resume: &Resume{Index: 3, Term: 1, Host: 3}}, ClientConfig{})
	if !errors.Is(err, ErrResumeIgnored) || !errors.Is(err, ErrResumeRefused) {
		t.Fatalf("Dial: %v, want ErrResumeIgnored", err)
	}
	select {
	case <-closed:
	case <-time.After(waitTimeout):
		t.Fatal("the old server saw no close frame")
	}
}

// TestResumeClaimDecode checks the claim's field rules.
func TestResumeClaimDecode(t *testing.T) {
	tests := []struct {
		name, resume string
		ok           bool
	}{
		{"full", `{"peerIndex":3,"term":2,"host":1,"synced":true,"room":"r","token":"abc"}`, true},
		{"minimal", `{"peerIndex":3}`, true},
		{"no index", `{"term":2,"host":1}`, false},
		{"host in term 0", `{"peerIndex":3,"host":1}`, false},
		{"long token", `{"peerIndex":3,"token":"` + strings.Repeat("x", maxResumeTokenLen+1) + `"}`, false},
		{"bad room", `{"peerIndex":3,"room":"a\u0001"}`, false},
		{"not an object", `7`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m clientMessage
			err := decodeClientMessage([]byte(`{"v":1,"type":"join","room":"r","user":"u","resume":`+tt.resume+`}`), &m)
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadMessage) {
				t.Fatalf("err %v does not wrap ErrBadMessage", err)
			}
		})
	}
}

// FuzzResumeToken: the token check never panics and accepts exactly the issued token.
func FuzzResumeToken(f *testing.F) {
	key := deriveResumeKey(resumeSecret)
	f.Add("r", uint64(1), uint64(3), "a/b", resumeToken(key, "r", 1, 3, "a/b"))
	f.Add("", uint64(0), uint64(0), "", "")
	f.Add("r|1", uint64(2), uint64(1), "x", "AAAA")
	f.Add("r", uint64(2), uint64(1), "x", "01.AAAA")
	f.Add("r", uint64(2), uint64(1), "x", "18446744073709551615.AAAA")
	f.Fuzz(func(t *testing.T, room string, index, term uint64, id, token string) {
		term = min(term, uint64(MaxTerm))
		want := resumeToken(key, RoomID(room), PeerIndex(index), Term(term), Identity(id))
		// A token checks only if it is exactly the one issued for the term it names.
		if got, ok := checkResumeToken(key, RoomID(room), PeerIndex(index), Identity(id), token); ok &&
			token != resumeToken(key, RoomID(room), PeerIndex(index), got, Identity(id)) {
			t.Fatalf("check(%q) accepts a token that was not issued for term %d", token, got)
		}
		if got, ok := checkResumeToken(key, RoomID(room), PeerIndex(index), Identity(id), want); !ok || got != Term(term) {
			t.Fatalf("the issued token does not check: %d %v", got, ok)
		}
	})
}
