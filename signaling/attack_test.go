package signaling

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// These tests replay the attacks of issue 14 against the signaling server: each asserts that
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
	if rs := e.rooms(); rs[0].Term != 1 {
		t.Fatalf("room at term %d, want 1", rs[0].Term)
	}
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
