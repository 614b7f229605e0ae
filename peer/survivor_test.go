package peer

import (
	"encoding/binary"
	"testing"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
)

// Finding "the lying survivor" (docs/security.md §2, the correction window): a member's greeting
// names an earlier term, and the host took it as a survivor of the previous host. Through the
// window it deleted boxes, wrote the score and handed boxes to an accomplice. The window now opens
// only on signaling's record (Member.SyncedTerm), and admits only what a survivor could have seen.

// survivorRoom is host 1 in term 2, which took over holding eight boxes and a score (a box whose
// value is the score), with honest member 2 and member 4 (the accomplice) synced.
type survivorRoom struct {
	n           *stepNet
	app         *renumberApp
	h, honest   *stepPeer
	boxes       []Entity
	score       Entity
	accomplice  PeerIndex
	scoreBefore uint32
}

func newSurvivorRoom(t *testing.T) *survivorRoom {
	t.Helper()
	n := newStepNet(t)
	app := &renumberApp{stepApp: &stepApp{table: stepSchemas()}, moved: map[Entity]Entity{}}
	h := n.join(1, app, 2, 1)
	s := &survivorRoom{n: n, app: app, h: h, accomplice: 4, scoreBefore: 5}
	n.do(1, func(w *World) {
		for range 8 {
			e, err := w.Spawn(stepSchemaBox, nil, []byte{1, 0, 0, 0})
			if err != nil {
				t.Fatal(err)
			}
			s.boxes = append(s.boxes, e)
		}
		var err error
		if s.score, err = w.Spawn(stepSchemaBox, nil, binary.LittleEndian.AppendUint32(nil, s.scoreBefore)); err != nil {
			t.Fatal(err)
		}
	})
	h.host.startWindow() // as if host 1 had taken over holding them: the previous host's entities
	s.honest = n.join(2, &stepApp{table: stepSchemas()}, 2, 1)
	n.join(s.accomplice, &stepApp{table: stepSchemas()}, 2, 1)
	return s
}

// renumberApp is a stepApp that follows the entities its host moves to a fresh number
// (EventRenumbered): a deletion the host refuses still tells it the member will never take that
// number, so the entity moves rather than stays apart (host_supersede.go).
type renumberApp struct {
	*stepApp
	moved map[Entity]Entity
}

func (a *renumberApp) OnEvent(_ *World, ev Event) {
	if ev.Kind == EventRenumbered {
		a.moved[ev.From] = ev.Entity
	}
}

// current is what e is now, after the moves.
func (a *renumberApp) current(e Entity) Entity {
	for range len(a.moved) + 1 {
		to, ok := a.moved[e]
		if !ok {
			break
		}
		e = to
	}
	return e
}

// u32 reads the 4-byte value of e's property c in w.
func u32(w *World, e Entity, c crdt.ComponentID) uint32 {
	data, _, ok, _ := w.r.Get(e, c)
	if !ok || len(data) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(data)
}

// poisonAt writes into w what the attacker's answer to its sync snapshot carries: the deletion of
// two boxes, the other six handed to the accomplice, and the score at 2,147,483,677, stamped ts.
func (s *survivorRoom) poisonAt(w *World, ts crdt.Timestamp) {
	for _, e := range s.boxes[:2] {
		w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: e})
	}
	rec := authority.AppendRecord(nil, authority.Record{Kind: authority.KindLock, Peer: s.accomplice})
	for _, e := range s.boxes[2:] {
		w.r.WriteAt(e, schema.ComponentAuthority, ts, rec, false)
	}
	w.r.WriteAt(s.score, boxPos, ts, binary.LittleEndian.AppendUint32(nil, 2_147_483_677), false)
}

// assertKept checks that the host still has every box, unhanded, and the score it had.
func (s *survivorRoom) assertKept(t *testing.T) {
	t.Helper()
	h := s.h
	for i, e := range s.boxes {
		// The attacker's deletions take nothing: a box held at the takeover stays; one spawned
		// since would move to a fresh number, its value and authority kept (host_supersede.go).
		e = s.app.current(e)
		if !h.w.Exists(e) {
			t.Errorf("box %d (%v) deleted", i, e)
			continue
		}
		if rec := h.w.AuthorityRecord(e); rec.Kind != authority.KindHost {
			t.Errorf("box %d (%v) handed away: %+v", i, e, rec)
		}
	}
	if got := u32(h.w, s.score, boxPos); got != s.scoreBefore {
		t.Errorf("score %d, want %d", got, s.scoreBefore)
	}
	if got := u32(h.w, s.app.current(s.boxes[0]), boxPos); got != 1 {
		t.Errorf("box 0 = %d, want 1", got)
	}
}

// playOn has the honest member write its avatar, and checks that the host takes it and that the
// two converge.
func (s *survivorRoom) playOn(t *testing.T) {
	t.Helper()
	s.n.do(2, func(w *World) {
		a, _ := w.AvatarOf(2)
		if err := w.Set(a, 0, []byte{7, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	s.honest.flushUpdates()
	s.n.pump()
	a, _ := s.h.w.AvatarOf(2)
	if v, _ := value(s.h.w, a, avatarPos); v != 7 {
		t.Fatalf("host has member 2's avatar at %d, want 7", v)
	}
	s.h.flushUpdates()
	s.n.pump()
	converge(t, s.h, s.honest)
}

// A fresh joiner whose greeting names term 1 in a room at term 2 — signaling never recorded it
// synced — gets no window: its deletions, its score and its hand-over of six boxes to the
// accomplice are all refused, and the claim is counted (survivor_claim).
func TestAttackLyingSurvivorUnrecorded(t *testing.T) {
	s := newSurvivorRoom(t)
	s.n.unrecorded = true
	s.lie(t)
}

// lie joins member 3 greeting with term 1 and carrying the attack, stamped within the skew bound
// and the window's ceiling (only the record refuses it), and checks that nothing of it is taken,
// that the claim is counted (survivor_claim) and that the honest member plays on.
func (s *survivorRoom) lie(t *testing.T) {
	t.Helper()
	ts := s.h.w.r.Clock() + 10
	s.n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		s.poisonAt(w, ts)
		w.heldTerm = 1
	})
	s.assertKept(t)
	if got := s.h.publish().RefusedBy[RefusedSurvivor]; got == 0 {
		t.Error("the claim was not counted as survivor_claim")
	}
	s.playOn(t)
}

// A member that signaling recorded synced in term 1 gets the window, but only for what a survivor
// of term 1 could have seen: no stamp above the clock this host took over with (plus the skew
// bound), no deletion of an entity this host spawned since, no entity handed to a member that
// joined since. What it really relays is still admitted.
func TestAttackRecordedSurvivorBeyondWindow(t *testing.T) {
	s := newSurvivorRoom(t)
	h := s.h
	var late Entity
	s.n.do(1, func(w *World) {
		var err error
		if late, err = w.Spawn(stepSchemaBox, nil, []byte{1, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	// The room plays on: this host's clock moves well past the one it took over with.
	h.w.r.ObserveClock(h.host.tookOver + 2*maxStampSkew)
	above := windowCeiling(h.host.tookOver) + 100 // within the skew bound of the host's clock now
	honestTS := h.host.tookOver + 5
	refused := h.publish().RefusedBy[RefusedSurvivor]
	s.n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		s.poisonAt(w, above)
		w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: late})
		// What the previous host really sent it and this host missed: a box moved to 9.
		w.r.WriteAt(s.boxes[0], boxPos, honestTS, []byte{9, 0, 0, 0}, false)
		w.heldTerm = 1
	})
	if moved := s.app.current(late); !h.w.Exists(moved) || moved == late {
		t.Errorf("the box this host spawned after it took over (%v) was deleted, or kept under a number the survivor holds deleted (now %v)", late, moved)
	}
	for i, e := range s.boxes[2:] {
		if rec := h.w.AuthorityRecord(e); rec.Kind != authority.KindHost {
			t.Errorf("box %d handed to a member that joined after the takeover: %+v", i+2, rec)
		}
	}
	if got := u32(h.w, s.score, boxPos); got != s.scoreBefore {
		t.Errorf("score %d, want %d: a stamp above the window's ceiling admitted", got, s.scoreBefore)
	}
	// The two deletions of boxes the previous host had are a survivor's to relay (they existed
	// when this host took over): admitted. The box's relayed value is lost with its deletion.
	for i, e := range s.boxes[:2] {
		if h.w.Exists(e) {
			t.Errorf("box %d: the survivor's relayed deletion was refused", i)
		}
	}
	// 6 records, the score and the late deletion.
	if got := h.publish().RefusedBy[RefusedSurvivor] - refused; got != 8 {
		t.Errorf("survivor_claim refusals %d, want 8", got)
	}
	s.playOn(t)
}

// An honest survivor recorded in term 1 relays what the previous host sent it (a box's value this
// host missed, stamped below the window's ceiling, and a lock the previous host gave a member of
// its term): admitted, and the room converges.
func TestSurvivorRecordedRelayAdmitted(t *testing.T) {
	s := newSurvivorRoom(t)
	h := s.h
	ts := h.host.tookOver + 5
	s.n.recordSynced(2, 1) // member 2 synced with the previous host
	rec := authority.AppendRecord(nil, authority.Record{Kind: authority.KindLock, Peer: 2})
	survivor := s.n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.r.WriteAt(s.boxes[0], boxPos, ts, []byte{9, 0, 0, 0}, false)
		w.r.WriteAt(s.boxes[1], schema.ComponentAuthority, ts, rec, false)
		w.heldTerm = 1
	})
	if v, _ := value(h.w, s.boxes[0], boxPos); v != 9 {
		t.Errorf("host box 0 = %d, want the survivor's relayed 9", v)
	}
	if got := h.w.AuthorityRecord(s.boxes[1]); got.Kind != authority.KindLock || got.Peer != 2 {
		t.Errorf("box 1's authority %+v, want member 2's lock relayed by the survivor", got)
	}
	if got := h.publish().RefusedBy[RefusedSurvivor]; got != 0 {
		t.Errorf("survivor_claim refusals %d, want 0", got)
	}
	h.flushUpdates()
	s.n.pump()
	converge(t, h, s.honest, survivor)
}

// The same attacker after a restart of the signaling server: it resumes with a claim of term 1,
// synced, but its resume token vouches for term 2, the term it joined in, and the server records
// that (signaling TestSyncedTermRecord). The host, back in its own term 2, reads a record of its
// own term: no window.
func TestAttackLyingSurvivorAfterResume(t *testing.T) {
	s := newSurvivorRoom(t)
	s.n.records = map[PeerIndex]Term{3: 2}
	s.lie(t)
}
