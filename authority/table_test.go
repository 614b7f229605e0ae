package authority_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/concordrtc/concord/authority"
)

type (
	PeerIndex = authority.PeerIndex
	EntityID  = authority.EntityID
	Term      = authority.Term
)

// The fixture world: the host of term 5, three members, and a few entities.
const (
	host  PeerIndex = 1
	alice PeerIndex = 2 // owns avatarA
	bob   PeerIndex = 3 // owns avatarB, holds a lock on crate since t0
	carol PeerIndex = 4 // owns nothing

	room    EntityID = 0    // the room's own state: reserved
	avatarA EntityID = 1000 // alice's avatar
	avatarB EntityID = 1001 // bob's avatar
	box     EntityID = 2000 // a free host entity
	crate   EntityID = 2001 // a host entity locked by bob
	unknown EntityID = 9000 // never registered: host-owned by default

	term Term = 5
)

var t0 = time.Unix(1_700_000_000, 0)

// fixture builds the world above with the default Config.
func fixture(t *testing.T) (*authority.Table, *authority.Fence) {
	t.Helper()
	tb := authority.New(host, authority.Config{})
	mustTransfer(t)(tb.SetAvatar(avatarA, alice))
	mustTransfer(t)(tb.SetAvatar(avatarB, bob))
	mustTransfer(t)(tb.RequestLock(bob, crate, t0))
	var f authority.Fence
	if !f.Observe(term, host) {
		t.Fatal("fresh fence refused term 5")
	}
	return tb, &f
}

func mustTransfer(t *testing.T) func(authority.Transfer, error) authority.Transfer {
	t.Helper()
	return func(tr authority.Transfer, err error) authority.Transfer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
}

// lockMany makes peer lock n free host entities, starting at entity 5000.
func lockMany(tb *authority.Table, peer PeerIndex, n int) {
	for i := range n {
		if _, err := tb.RequestLock(peer, EntityID(5000+i), t0); err != nil {
			panic(err)
		}
	}
}

// TestRules is the rule table: (role, term, op) → the expected rejection,
// played against the fixture after an optional prep.
func TestRules(t *testing.T) {
	const notAuth = authority.NotAuthority
	type prepFn = func(*authority.Table, *authority.Fence)
	leave := func(p PeerIndex) prepFn { return func(tb *authority.Table, _ *authority.Fence) { tb.Leave(p) } }
	expireAt := func(d time.Duration) prepFn {
		return func(tb *authority.Table, _ *authority.Fence) { tb.Expire(t0.Add(d)) }
	}
	tests := []struct {
		name    string
		role    PeerIndex
		term    Term // only for OpHostMessage
		op      authority.Op
		entity  EntityID
		at      time.Duration // since t0, for OpLock
		relayed bool          // for OpCorrection
		prep    prepFn
		want    authority.RejectCode
	}{
		// Writes: exactly the author.
		{name: "host/write/box", role: host, op: authority.OpWrite, entity: box},
		{name: "host/write/unknown", role: host, op: authority.OpWrite, entity: unknown},
		{name: "host/write/room", role: host, op: authority.OpWrite, entity: room},
		{name: "host/write/avatarA", role: host, op: authority.OpWrite, entity: avatarA, want: notAuth},
		{name: "host/write/crate-locked", role: host, op: authority.OpWrite, entity: crate, want: notAuth},
		{name: "alice/write/avatarA", role: alice, op: authority.OpWrite, entity: avatarA},
		{name: "alice/write/avatarB", role: alice, op: authority.OpWrite, entity: avatarB, want: notAuth},
		{name: "alice/write/box", role: alice, op: authority.OpWrite, entity: box, want: notAuth},
		{name: "alice/write/unknown", role: alice, op: authority.OpWrite, entity: unknown, want: notAuth},
		{name: "alice/write/room", role: alice, op: authority.OpWrite, entity: room, want: notAuth},
		{name: "bob/write/crate", role: bob, op: authority.OpWrite, entity: crate},
		{name: "carol/write/crate", role: carol, op: authority.OpWrite, entity: crate, want: notAuth},
		{name: "alice/write/box/after-lock", role: alice, op: authority.OpWrite, entity: box,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.RequestLock(alice, box, t0) }},
		{name: "host/write/box/after-alice-lock", role: host, op: authority.OpWrite, entity: box, want: notAuth,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.RequestLock(alice, box, t0) }},
		{name: "bob/write/crate/after-relinquish", role: bob, op: authority.OpWrite, entity: crate, want: notAuth,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.Relinquish(bob, crate) }},
		{name: "host/write/crate/after-relinquish", role: host, op: authority.OpWrite, entity: crate,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.Relinquish(bob, crate) }},
		{name: "alice/write/avatarA/after-leave", role: alice, op: authority.OpWrite, entity: avatarA, want: notAuth, prep: leave(alice)},
		{name: "host/write/avatarA/after-leave", role: host, op: authority.OpWrite, entity: avatarA, prep: leave(alice)},
		{name: "bob/write/crate/after-leave", role: bob, op: authority.OpWrite, entity: crate, want: notAuth, prep: leave(bob)},
		{name: "host/write/crate/after-bob-leave", role: host, op: authority.OpWrite, entity: crate, prep: leave(bob)},
		{name: "bob/write/crate/after-despawn", role: bob, op: authority.OpWrite, entity: crate, want: notAuth,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.Despawn(crate) }},
		{name: "host/write/crate/after-despawn", role: host, op: authority.OpWrite, entity: crate,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.Despawn(crate) }},
		{name: "alice/write/avatarA/after-despawn", role: alice, op: authority.OpWrite, entity: avatarA, want: notAuth,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.Despawn(avatarA) }},
		{name: "bob/write/crate/expire-at-timeout", role: bob, op: authority.OpWrite, entity: crate, prep: expireAt(3 * time.Second)},
		{name: "bob/write/crate/expired", role: bob, op: authority.OpWrite, entity: crate, want: notAuth,
			prep: expireAt(3*time.Second + time.Nanosecond)},
		{name: "host/write/crate/expired", role: host, op: authority.OpWrite, entity: crate,
			prep: expireAt(3*time.Second + time.Nanosecond)},
		{name: "bob/write/crate/touched-then-expire", role: bob, op: authority.OpWrite, entity: crate,
			prep: func(tb *authority.Table, _ *authority.Fence) {
				tb.Touch(bob, t0.Add(2*time.Second))
				tb.Expire(t0.Add(4 * time.Second))
			}},
		{name: "bob/write/crate/other-touched-then-expire", role: bob, op: authority.OpWrite, entity: crate, want: notAuth,
			prep: func(tb *authority.Table, _ *authority.Fence) {
				tb.Touch(alice, t0.Add(2*time.Second))
				tb.Expire(t0.Add(4 * time.Second))
			}},
		{name: "bob/write/avatarB/expired", role: bob, op: authority.OpWrite, entity: avatarB, prep: expireAt(time.Hour)},

		// Lock requests.
		{name: "alice/lock/box", role: alice, op: authority.OpLock, entity: box},
		{name: "alice/lock/unknown", role: alice, op: authority.OpLock, entity: unknown},
		{name: "alice/lock/crate-held", role: alice, op: authority.OpLock, entity: crate, want: authority.LockHeld},
		{name: "alice/lock/crate-at-timeout", role: alice, op: authority.OpLock, entity: crate, at: 3 * time.Second, want: authority.LockHeld},
		{name: "alice/lock/crate-holder-silent", role: alice, op: authority.OpLock, entity: crate, at: 3*time.Second + time.Nanosecond},
		{name: "alice/lock/crate-holder-touched", role: alice, op: authority.OpLock, entity: crate, at: 4 * time.Second, want: authority.LockHeld,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.Touch(bob, t0.Add(2*time.Second)) }},
		{name: "alice/lock/crate/after-bob-leave", role: alice, op: authority.OpLock, entity: crate, prep: leave(bob)},
		{name: "bob/lock/crate-refresh", role: bob, op: authority.OpLock, entity: crate, at: time.Hour},
		{name: "alice/lock/avatarB", role: alice, op: authority.OpLock, entity: avatarB, want: authority.NotLockable},
		{name: "alice/lock/avatarA-own", role: alice, op: authority.OpLock, entity: avatarA, want: authority.NotLockable},
		{name: "host/lock/box", role: host, op: authority.OpLock, entity: box, want: authority.NotLockable},
		{name: "alice/lock/room", role: alice, op: authority.OpLock, entity: room, want: authority.NotLockable},
		{name: "alice/lock/number-511", role: alice, op: authority.OpLock, entity: 511, want: authority.NotLockable},
		{name: "alice/lock/number-5-version-2", role: alice, op: authority.OpLock, entity: 2<<16 | 5, want: authority.NotLockable},
		{name: "alice/lock/number-512-version-3", role: alice, op: authority.OpLock, entity: 3<<16 | 512},
		{name: "carol/lock/16th", role: carol, op: authority.OpLock, entity: box,
			prep: func(tb *authority.Table, _ *authority.Fence) { lockMany(tb, carol, 15) }},
		{name: "carol/lock/17th", role: carol, op: authority.OpLock, entity: box, want: authority.TooManyLocks,
			prep: func(tb *authority.Table, _ *authority.Fence) { lockMany(tb, carol, 16) }},
		{name: "carol/lock/17th-takeover", role: carol, op: authority.OpLock, entity: crate, at: time.Hour, want: authority.TooManyLocks,
			prep: func(tb *authority.Table, _ *authority.Fence) { lockMany(tb, carol, 16) }},
		{name: "carol/lock/refresh-at-max", role: carol, op: authority.OpLock, entity: 5000,
			prep: func(tb *authority.Table, _ *authority.Fence) { lockMany(tb, carol, 16) }},
		{name: "carol/lock/after-relinquish-at-max", role: carol, op: authority.OpLock, entity: box,
			prep: func(tb *authority.Table, _ *authority.Fence) { lockMany(tb, carol, 16); tb.Relinquish(carol, 5003) }},
		{name: "carol/lock/after-despawn-at-max", role: carol, op: authority.OpLock, entity: box,
			prep: func(tb *authority.Table, _ *authority.Fence) { lockMany(tb, carol, 16); tb.Despawn(5003) }},
		{name: "carol/lock/after-expire-at-max", role: carol, op: authority.OpLock, entity: box, at: 4 * time.Second,
			prep: func(tb *authority.Table, _ *authority.Fence) {
				lockMany(tb, carol, 16)
				tb.Expire(t0.Add(4 * time.Second))
			}},

		// Relinquish: only the holder.
		{name: "bob/relinquish/crate", role: bob, op: authority.OpRelinquish, entity: crate},
		{name: "bob/relinquish/crate-twice", role: bob, op: authority.OpRelinquish, entity: crate, want: notAuth,
			prep: func(tb *authority.Table, _ *authority.Fence) { tb.Relinquish(bob, crate) }},
		{name: "alice/relinquish/crate", role: alice, op: authority.OpRelinquish, entity: crate, want: notAuth},
		{name: "host/relinquish/crate", role: host, op: authority.OpRelinquish, entity: crate, want: notAuth},
		{name: "bob/relinquish/box-unlocked", role: bob, op: authority.OpRelinquish, entity: box, want: notAuth},
		{name: "bob/relinquish/avatarB-own", role: bob, op: authority.OpRelinquish, entity: avatarB, want: notAuth},
		{name: "bob/relinquish/crate-expired", role: bob, op: authority.OpRelinquish, entity: crate, want: notAuth, prep: expireAt(time.Hour)},

		// Avatar assignment; role is the proposed owner.
		{name: "carol/avatar/box", role: carol, op: authority.OpSetAvatar, entity: box},
		{name: "host/avatar/box", role: host, op: authority.OpSetAvatar, entity: box},
		{name: "alice/avatar/avatarA-again", role: alice, op: authority.OpSetAvatar, entity: avatarA},
		{name: "carol/avatar/avatarA", role: carol, op: authority.OpSetAvatar, entity: avatarA, want: notAuth},
		{name: "carol/avatar/crate-locked", role: carol, op: authority.OpSetAvatar, entity: crate, want: authority.LockHeld},
		{name: "carol/avatar/room", role: carol, op: authority.OpSetAvatar, entity: room, want: authority.NotLockable},
		{name: "carol/avatar/avatarA/after-leave", role: carol, op: authority.OpSetAvatar, entity: avatarA, prep: leave(alice)},

		// Migration corrections.
		{name: "alice/correct/avatarA", role: alice, op: authority.OpCorrection, entity: avatarA},
		{name: "bob/correct/crate", role: bob, op: authority.OpCorrection, entity: crate},
		{name: "alice/correct/box", role: alice, op: authority.OpCorrection, entity: box, want: notAuth},
		{name: "alice/correct/box/relayed", role: alice, op: authority.OpCorrection, entity: box, relayed: true},
		{name: "carol/correct/unknown/relayed", role: carol, op: authority.OpCorrection, entity: unknown, relayed: true},
		{name: "alice/correct/avatarB/relayed", role: alice, op: authority.OpCorrection, entity: avatarB, relayed: true, want: notAuth},
		{name: "alice/correct/crate/relayed", role: alice, op: authority.OpCorrection, entity: crate, relayed: true, want: notAuth},
		{name: "host/correct/box", role: host, op: authority.OpCorrection, entity: box},
		{name: "host/correct/avatarA", role: host, op: authority.OpCorrection, entity: avatarA, want: notAuth},
		{name: "alice/correct/avatarA/after-leave", role: alice, op: authority.OpCorrection, entity: avatarA, want: notAuth, prep: leave(alice)},

		// Host messages seen by a peer whose fence is at (term 5, host).
		{name: "host/message/term-5", role: host, term: 5, op: authority.OpHostMessage},
		{name: "host/message/term-4", role: host, term: 4, op: authority.OpHostMessage, want: authority.StaleTerm},
		{name: "host/message/term-0", role: host, term: 0, op: authority.OpHostMessage, want: authority.StaleTerm},
		{name: "host/message/term-6", role: host, term: 6, op: authority.OpHostMessage, want: authority.FutureTerm},
		{name: "alice/message/term-5", role: alice, term: 5, op: authority.OpHostMessage, want: authority.NotHost},
		{name: "alice/message/term-4", role: alice, term: 4, op: authority.OpHostMessage, want: authority.StaleTerm},
		{name: "alice/message/term-6", role: alice, term: 6, op: authority.OpHostMessage, want: authority.FutureTerm},
		{name: "alice/message/term-6/observed", role: alice, term: 6, op: authority.OpHostMessage,
			prep: func(_ *authority.Table, f *authority.Fence) { f.Observe(6, alice) }},
		{name: "host/message/term-5/after-term-6", role: host, term: 5, op: authority.OpHostMessage, want: authority.StaleTerm,
			prep: func(_ *authority.Table, f *authority.Fence) { f.Observe(6, alice) }},
		{name: "host/message/term-6/alice-elected", role: host, term: 6, op: authority.OpHostMessage, want: authority.NotHost,
			prep: func(_ *authority.Table, f *authority.Fence) { f.Observe(6, alice) }},
		{name: "host/message/term-5/older-observe-ignored", role: host, term: 5, op: authority.OpHostMessage,
			prep: func(_ *authority.Table, f *authority.Fence) { f.Observe(3, alice); f.Observe(5, alice) }},
	}
	seen := make(map[string]bool)
	for _, tc := range tests {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			tb, f := fixture(t)
			if tc.prep != nil {
				tc.prep(tb, f)
			}
			var err error
			switch tc.op {
			case authority.OpWrite:
				err = tb.AdmitWrite(tc.role, tc.entity)
			case authority.OpCorrection:
				err = tb.AdmitCorrection(tc.role, tc.entity, tc.relayed)
			case authority.OpLock:
				_, err = tb.RequestLock(tc.role, tc.entity, t0.Add(tc.at))
			case authority.OpRelinquish:
				_, err = tb.Relinquish(tc.role, tc.entity)
			case authority.OpSetAvatar:
				_, err = tb.SetAvatar(tc.entity, tc.role)
			case authority.OpHostMessage:
				err = f.Accept(tc.term, tc.role)
			default:
				t.Fatalf("op %v is not in the table", tc.op)
			}
			checkReject(t, err, tc.want, authority.RejectError{
				Code: tc.want, Op: tc.op, Peer: tc.role, Entity: tc.entity, Term: tc.term,
			})
			if err := tb.CheckInvariants(); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkReject asserts that err is nil when code is 0, and otherwise a
// *RejectError equal to want.
func checkReject(t *testing.T, err error, code authority.RejectCode, want authority.RejectError) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		return
	}
	var re *authority.RejectError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *RejectError %v", err, code)
	}
	if want.Op == authority.OpHostMessage {
		want.Entity = 0
	} else {
		want.Term = 0
	}
	if *re != want {
		t.Fatalf("got %+v, want %+v", *re, want)
	}
}

func TestTransfers(t *testing.T) {
	tb, _ := fixture(t)
	type step struct {
		name string
		do   func() (authority.Transfer, error)
		want authority.Transfer
	}
	steps := []step{
		{"grant", func() (authority.Transfer, error) { return tb.RequestLock(alice, box, t0) },
			authority.Transfer{Entity: box, From: host, To: alice}},
		{"refresh", func() (authority.Transfer, error) { return tb.RequestLock(alice, box, t0.Add(time.Second)) },
			authority.Transfer{Entity: box, From: alice, To: alice}},
		{"takeover-from-silent", func() (authority.Transfer, error) { return tb.RequestLock(alice, crate, t0.Add(5*time.Second)) },
			authority.Transfer{Entity: crate, From: bob, To: alice}},
		{"relinquish", func() (authority.Transfer, error) { return tb.Relinquish(alice, box) },
			authority.Transfer{Entity: box, From: alice, To: host}},
		{"avatar", func() (authority.Transfer, error) { return tb.SetAvatar(box, carol) },
			authority.Transfer{Entity: box, From: host, To: carol}},
		{"avatar-again", func() (authority.Transfer, error) { return tb.SetAvatar(box, carol) },
			authority.Transfer{Entity: box, From: carol, To: carol}},
	}
	for _, s := range steps {
		got, err := s.do()
		if err != nil || got != s.want {
			t.Fatalf("%s: got %+v, %v; want %+v", s.name, got, err, s.want)
		}
		if a := tb.Author(s.want.Entity); a != s.want.To {
			t.Fatalf("%s: author %d, want %d", s.name, a, s.want.To)
		}
	}
	// bob lost crate on takeover: his lock slot is free and he cannot write it.
	if err := tb.AdmitWrite(bob, crate); err == nil {
		t.Fatal("bob still writes crate after the takeover")
	}
	if err := tb.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestExpire(t *testing.T) {
	tb := authority.New(host, authority.Config{LockTimeout: time.Second})
	for i, p := range []PeerIndex{alice, bob, carol} {
		for j := range 2 {
			mustTransfer(t)(tb.RequestLock(p, EntityID(3000-10*i+j), t0))
		}
	}
	tb.Touch(bob, t0.Add(1500*time.Millisecond))
	tb.Touch(bob, t0.Add(500*time.Millisecond)) // late and older: no rewind
	tb.Touch(host, t0.Add(time.Hour))           // holds nothing: no effect

	if got := tb.Expire(t0.Add(time.Second)); got != nil {
		t.Fatalf("expired at exactly the timeout: %+v", got)
	}
	got := tb.Expire(t0.Add(time.Second + 1))
	want := []authority.Transfer{ // ascending entity order
		{Entity: 2980, From: carol, To: host}, {Entity: 2981, From: carol, To: host},
		{Entity: 3000, From: alice, To: host}, {Entity: 3001, From: alice, To: host},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Expire = %+v, want %+v", got, want)
	}
	if got := tb.Expire(t0.Add(2500 * time.Millisecond)); got != nil {
		t.Fatalf("bob expired before his timeout: %+v", got)
	}
	got = tb.Expire(t0.Add(2501 * time.Millisecond))
	want = []authority.Transfer{{Entity: 2990, From: bob, To: host}, {Entity: 2991, From: bob, To: host}}
	if !slices.Equal(got, want) {
		t.Fatalf("Expire = %+v, want %+v", got, want)
	}
	for e, r := range tb.All() {
		t.Fatalf("entity %d still has %+v after every lock expired", e, r)
	}
}

func TestLeave(t *testing.T) {
	tb, _ := fixture(t)
	mustTransfer(t)(tb.SetAvatar(1002, alice)) // a second avatar entity
	mustTransfer(t)(tb.RequestLock(alice, 2003, t0))
	mustTransfer(t)(tb.RequestLock(alice, box, t0))
	avatars, released := tb.Leave(alice)
	if want := []EntityID{avatarA, 1002}; !slices.Equal(avatars, want) {
		t.Errorf("avatars = %v, want %v", avatars, want)
	}
	if want := []authority.Transfer{{Entity: box, From: alice, To: host}, {Entity: 2003, From: alice, To: host}}; !slices.Equal(released, want) {
		t.Errorf("released = %+v, want %+v", released, want)
	}
	for _, e := range []EntityID{avatarA, 1002, 2003, box} {
		if r := tb.Record(e); r != (authority.Record{}) {
			t.Errorf("entity %d still has %+v", e, r)
		}
	}
	if r := tb.Record(crate); r != (authority.Record{Kind: authority.KindLock, Peer: bob}) {
		t.Errorf("bob's lock was touched: %+v", r)
	}
	if avatars, released := tb.Leave(alice); avatars != nil || released != nil {
		t.Errorf("second Leave = %v, %v; want nothing", avatars, released)
	}
	if err := tb.CheckInvariants(); err != nil {
		t.Error(err)
	}
}

// TestMigration plays a host migration: the old host's table is encoded as
// authority components, decoded by the new host (bob), restored, and the old
// host leaves.
func TestMigration(t *testing.T) {
	old, _ := fixture(t)
	mustTransfer(t)(old.SetAvatar(1003, host)) // the old host's own avatar
	mustTransfer(t)(old.RequestLock(carol, box, t0))

	var component []byte
	var entities []EntityID
	for e, r := range old.All() {
		entities = append(entities, e)
		component = authority.AppendRecord(component, r)
	}
	t1 := t0.Add(time.Minute) // long after every lock would have expired
	tb := authority.New(bob, authority.Config{})
	for i, e := range entities {
		var r authority.Record
		if _, err := authority.ConsumeRecord(component[i*authority.RecordSize:], &r); err != nil {
			t.Fatal(err)
		}
		if err := tb.Restore(e, r, t1); err != nil {
			t.Fatal(err)
		}
	}
	avatars, released := tb.Leave(host)
	if !slices.Equal(avatars, []EntityID{1003}) || released != nil {
		t.Fatalf("old host leaves: %v, %+v", avatars, released)
	}
	wantAuthor := map[EntityID]PeerIndex{avatarA: alice, avatarB: bob, crate: bob, box: carol, 1003: bob, unknown: bob}
	for e, p := range wantAuthor {
		if got := tb.Author(e); got != p {
			t.Errorf("author of %d = %d, want %d", e, got, p)
		}
	}
	if r := tb.Record(crate); r != (authority.Record{}) {
		t.Errorf("the new host's lock on crate is %+v, want host-owned", r)
	}
	// carol's lock restarted its timer at t1.
	if got := tb.Expire(t1.Add(3 * time.Second)); got != nil {
		t.Errorf("expired at t1+3s: %+v", got)
	}
	if got := tb.Expire(t1.Add(3*time.Second + 1)); !slices.Equal(got, []authority.Transfer{{Entity: box, From: carol, To: bob}}) {
		t.Errorf("Expire = %+v", got)
	}
	if err := tb.CheckInvariants(); err != nil {
		t.Error(err)
	}
}

func TestRestore(t *testing.T) {
	tb, _ := fixture(t)
	lock := func(p PeerIndex) authority.Record { return authority.Record{Kind: authority.KindLock, Peer: p} }
	avatar := func(p PeerIndex) authority.Record { return authority.Record{Kind: authority.KindAvatar, Peer: p} }
	tests := []struct {
		name    string
		entity  EntityID
		rec     authority.Record
		wantErr error
		code    authority.RejectCode
		want    authority.Record // the record afterwards
	}{
		{name: "host-record-frees-lock", entity: crate, rec: authority.Record{}, want: authority.Record{}},
		{name: "host-record-with-peer", entity: avatarA, rec: authority.Record{Peer: 9}, want: authority.Record{}},
		{name: "lock-over-avatar", entity: avatarB, rec: lock(carol), want: lock(carol)},
		{name: "lock-by-host-is-host", entity: box, rec: lock(host), want: authority.Record{}},
		{name: "host-avatar", entity: box, rec: avatar(host), want: avatar(host)},
		{name: "lock-on-room", entity: room, rec: lock(alice), code: authority.NotLockable},
		{name: "avatar-on-reserved", entity: 2<<16 | 7, rec: avatar(alice), code: authority.NotLockable},
		{name: "host-record-on-room", entity: room, rec: authority.Record{}, want: authority.Record{}},
		{name: "unknown-kind", entity: crate, rec: authority.Record{Kind: 3, Peer: 1}, wantErr: authority.ErrUnknownKind, want: lock(bob)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tb.Record(tc.entity)
			err := tb.Restore(tc.entity, tc.rec, t0)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
			default:
				checkReject(t, err, tc.code, authority.RejectError{
					Code: tc.code, Op: authority.OpRestore, Peer: tc.rec.Peer, Entity: tc.entity,
				})
			}
			want := tc.want
			if err != nil {
				want = before
			}
			if got := tb.Record(tc.entity); got != want {
				t.Fatalf("record = %+v, want %+v", got, want)
			}
			if err := tb.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, cfg := range []authority.Config{{}, {LockTimeout: -1, MaxLocksPerPeer: -1}} {
		tb := authority.New(host, cfg)
		lockMany(tb, alice, authority.DefaultMaxLocksPerPeer)
		if _, err := tb.RequestLock(alice, box, t0); err == nil {
			t.Fatalf("%+v: lock %d granted", cfg, authority.DefaultMaxLocksPerPeer+1)
		}
		if got := tb.Expire(t0.Add(authority.DefaultLockTimeout)); got != nil {
			t.Fatalf("%+v: expired at the default timeout", cfg)
		}
		if got := tb.Expire(t0.Add(authority.DefaultLockTimeout + 1)); len(got) != authority.DefaultMaxLocksPerPeer {
			t.Fatalf("%+v: %d expired after the default timeout", cfg, len(got))
		}
	}
	tb := authority.New(host, authority.Config{LockTimeout: time.Minute, MaxLocksPerPeer: 2})
	lockMany(tb, alice, 2)
	if _, err := tb.RequestLock(alice, box, t0); err == nil {
		t.Fatal("third lock granted with MaxLocksPerPeer 2")
	}
	if got := tb.Expire(t0.Add(30 * time.Second)); got != nil {
		t.Fatal("expired before a one-minute timeout")
	}
	if tb.Host() != host {
		t.Fatalf("Host() = %d", tb.Host())
	}
}

func TestAllStopsEarly(t *testing.T) {
	tb, _ := fixture(t)
	var got []EntityID
	for e := range tb.All() {
		got = append(got, e)
		if len(got) == 2 {
			break
		}
	}
	if want := []EntityID{avatarA, avatarB}; !slices.Equal(got, want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
}

func TestRejectErrorString(t *testing.T) {
	tests := []struct {
		err  authority.RejectError
		want string
	}{
		{authority.RejectError{Code: authority.NotAuthority, Op: authority.OpWrite, Peer: 3, Entity: 2000},
			"authority: write of entity 2000 by peer 3 rejected: not authority"},
		{authority.RejectError{Code: authority.LockHeld, Op: authority.OpLock, Peer: 2, Entity: 7},
			"authority: lock request of entity 7 by peer 2 rejected: lock held"},
		{authority.RejectError{Code: authority.StaleTerm, Op: authority.OpHostMessage, Peer: 1, Term: 4},
			"authority: host message from peer 1 at term 4 rejected: stale term"},
		{authority.RejectError{Code: 99, Op: 99},
			"authority: Op(99) of entity 0 by peer 0 rejected: RejectCode(99)"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	for c := authority.NotAuthority; c <= authority.NotHost; c++ {
		if s := c.String(); s == "" || s == fmt.Sprintf("RejectCode(%d)", c) {
			t.Errorf("code %d has no name", c)
		}
	}
	for o := authority.OpWrite; o <= authority.OpHostMessage; o++ {
		if s := o.String(); s == "" || s == fmt.Sprintf("Op(%d)", o) {
			t.Errorf("op %d has no name", o)
		}
	}
	if s := authority.RejectCode(0).String(); s != "RejectCode(0)" {
		t.Errorf("RejectCode(0) = %q", s)
	}
}

func TestFenceZero(t *testing.T) {
	var f authority.Fence
	if err := f.Accept(0, 0); err == nil {
		t.Fatal("a fresh fence accepted peer 0 at term 0")
	}
	checkReject(t, f.Accept(1, 0), authority.FutureTerm,
		authority.RejectError{Code: authority.FutureTerm, Op: authority.OpHostMessage, Term: 1})
	if f.Observe(0, 7) {
		t.Fatal("observed term 0")
	}
	if !f.Observe(2, 7) || f.Term() != 2 || f.Host() != 7 {
		t.Fatalf("after Observe(2, 7): term %d host %d", f.Term(), f.Host())
	}
	if f.Observe(2, 8) || f.Host() != 7 {
		t.Fatal("a second host for term 2 was adopted")
	}
	if err := f.Accept(2, 7); err != nil {
		t.Fatal(err)
	}
}

func TestNoAllocs(t *testing.T) {
	tb, f := fixture(t)
	var sink error
	checks := map[string]func(){
		"AdmitWrite/hit":      func() { sink = tb.AdmitWrite(bob, crate) },
		"AdmitWrite/miss":     func() { sink = tb.AdmitWrite(host, unknown) },
		"AdmitCorrection":     func() { sink = tb.AdmitCorrection(alice, box, true) },
		"Touch":               func() { tb.Touch(bob, t0.Add(time.Second)) },
		"Expire/none":         func() { _ = tb.Expire(t0.Add(time.Second)) },
		"RequestLock/refresh": func() { _, sink = tb.RequestLock(bob, crate, t0.Add(time.Second)) },
		"Fence.Accept":        func() { sink = f.Accept(term, host) },
	}
	for name, fn := range checks {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocs, want 0", name, n)
		}
	}
	if sink != nil {
		t.Fatal(sink)
	}
}

func BenchmarkAdmitWrite(b *testing.B) {
	// A full room: 65,000 entities, a quarter of them avatars or locks.
	tb := authority.New(host, authority.Config{MaxLocksPerPeer: 1 << 20})
	for i := range 65_000 {
		e := EntityID(512 + i)
		switch i % 8 {
		case 0:
			tb.SetAvatar(e, PeerIndex(10+i%100))
		case 1:
			tb.RequestLock(PeerIndex(10+i%100), e, t0)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = tb.AdmitWrite(11, 513) }); n != 0 {
		b.Fatalf("AdmitWrite allocates %v times", n)
	}
	b.ReportAllocs()
	// No b.SetBytes: AdmitWrite handles no bytes; the unit is one admission.
	for i := 0; b.Loop(); i++ {
		e := EntityID(512 + i%65_000)
		if err := tb.AdmitWrite(tb.Author(e), e); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGrant: the host hands a host entity to a member, takes it from a live holder without the
// per-peer lock bound, refuses avatars, reserved entities and itself, and Relinquish on the
// holder's behalf revokes it.
func TestGrant(t *testing.T) {
	const host, alice, bob authority.PeerIndex = 1, 2, 3
	t0 := time.Unix(100, 0)
	tab := authority.New(host, authority.Config{MaxLocksPerPeer: 1})
	box, crate, avatar := authority.EntityID(600), authority.EntityID(601), authority.EntityID(602)
	if _, err := tab.SetAvatar(avatar, bob); err != nil {
		t.Fatal(err)
	}
	if tr, err := tab.RequestLock(bob, box, t0); err != nil || tr.To != bob {
		t.Fatalf("lock: %+v %v", tr, err)
	}
	tr, err := tab.Grant(alice, box, t0)
	if err != nil || tr.From != bob || tr.To != alice || tab.Author(box) != alice {
		t.Fatalf("grant over a live lock: %+v %v, author %d", tr, err, tab.Author(box))
	}
	if _, err := tab.Grant(alice, crate, t0); err != nil || tab.Author(crate) != alice {
		t.Fatalf("second grant beyond MaxLocksPerPeer: %v", err)
	}
	for _, c := range []struct {
		peer authority.PeerIndex
		e    authority.EntityID
	}{{alice, avatar}, {alice, 1}, {host, box}} {
		var re *authority.RejectError
		if _, err := tab.Grant(c.peer, c.e, t0); !errors.As(err, &re) || re.Code != authority.NotLockable || re.Op != authority.OpGrant {
			t.Errorf("Grant(%d, %d) = %v, want NotLockable", c.peer, c.e, err)
		}
	}
	if tr, err := tab.Relinquish(alice, box); err != nil || tr.To != host || tab.Author(box) != host {
		t.Fatalf("revoke: %+v %v", tr, err)
	}
}
