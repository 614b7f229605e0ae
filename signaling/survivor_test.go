package signaling

import (
	"context"
	"testing"
)

// The record a host opens the survivors' correction window on (Member.SyncedTerm, docs/protocol.md
// §4): the term the server saw a member synced in. A member that joined in term 2 is never
// recorded synced in term 1, whatever it reports or claims, live or after a restart of the server.
func TestSyncedTermRecord(t *testing.T) {
	e := newEnv(t, Config{Secret: resumeSecret})
	a, ja := e.joined(claim{user: "a"}.opts(t, "r"))
	if ja.Term != 1 || ja.Members[0].SyncedTerm != 1 {
		t.Fatalf("the first host's record: term %d, %+v", ja.Term, ja.Members)
	}
	b, jb := e.joined(claim{user: "b"}.opts(t, "r"))
	if got := next[MemberJoined](t, a); got.Member.SyncedTerm != 0 {
		t.Fatalf("a fresh joiner recorded synced in term %d", got.Member.SyncedTerm)
	}
	if err := b.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := next[MemberSynced](t, a); got.Index != jb.Self || got.Term != 1 {
		t.Fatalf("a saw %+v, want member %d synced in term 1", got, jb.Self)
	}
	next[MemberSynced](t, b)

	// The host leaves: b hosts term 2. c joins then, and reports synced: recorded in term 2, the
	// host's own term, which opens no window.
	_ = a.Close()
	if got := until[HostChanged](t, b, nil); got.Term != 2 || got.Host != jb.Self {
		t.Fatalf("b saw %+v", got)
	}
	c, jc := e.joined(claim{user: "c"}.opts(t, "r"))
	for _, m := range jc.Members {
		if want := map[PeerIndex]Term{jb.Self: 2, jc.Self: 0}[m.Index]; m.SyncedTerm != want {
			t.Fatalf("member %d recorded synced in term %d, want %d", m.Index, m.SyncedTerm, want)
		}
	}
	if err := c.SetSynced(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := until[MemberSynced](t, b, nil); got.Index != jc.Self || got.Term != 2 {
		t.Fatalf("b saw %+v, want member %d synced in term 2", got, jc.Self)
	}
	_ = b.Close()
	_ = c.Close()
	_ = e.srv.Close()

	// The server restarts. c resumes with a claim of term 1, synced: its token vouches for term
	// 2 only, and the server records that, not the claim.
	e2 := newEnv(t, Config{Secret: resumeSecret})
	opts := claim{user: "c"}.opts(t, "r")
	opts.Resume = &Resume{Index: jc.Self, Term: 1, Host: jb.Self, Synced: true, Room: "r", Token: jc.ResumeToken}
	cl, err := e2.dialErr(opts, e2.clientConfig())
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	j := next[Joined](t, cl)
	for _, m := range j.Members {
		if m.Index == jc.Self && m.SyncedTerm != 2 {
			t.Fatalf("c resumed recorded synced in term %d, want its token's 2 (claimed 1)", m.SyncedTerm)
		}
	}
	_ = cl.Close()
}
