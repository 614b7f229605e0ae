package peer

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// Unit tests for the rules of docs/protocol.md §5, each driving the roles step by step in a
// steppable room (harness_test.go): no links, no signaling server, no sleeps.

const (
	boxPos    crdt.ComponentID = 1100
	avatarPos crdt.ComponentID = 1200
)

// room12 starts host 1 and member 2 (term 1) and waits until the member is synced.
func room12(t *testing.T) (*stepNet, *stepPeer, *stepPeer, *stepApp) {
	t.Helper()
	n := newStepNet(t)
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 1, 1)
	m := n.join(2, &stepApp{table: stepSchemas()}, 1, 1)
	if m.member == nil || !m.member.synced {
		t.Fatal("member 2 not synced")
	}
	if !m.w.Exists(app.box) {
		t.Fatalf("member 2 lacks the box %v", app.box)
	}
	return n, h, m, app
}

// forgedUpdate encodes an EntityUpdates writing a 4-byte value v to property 0 of e at ts.
func forgedUpdate(e Entity, ts crdt.Timestamp, v byte) []byte {
	return netmsg.AppendEntityUpdates(nil, &netmsg.EntityUpdates{Time: uint64(ts), Updates: []netmsg.Update{
		{NetworkID: uint64(e), Width: netmsg.Width8, Mask: 1, Data: []byte{v, 0, 0, 0}},
	}})
}

func value(w *World, e Entity, c crdt.ComponentID) (byte, crdt.Timestamp) {
	data, ts, ok, _ := w.r.Get(e, c)
	if !ok || len(data) == 0 {
		return 0xff, ts
	}
	return data[0], ts
}

// Rule "re-stamp": a write the host rejects is re-asserted with the host's value above it, so
// the writer, which keeps its own write, converges back.
func TestRuleRestamp(t *testing.T) {
	n, h, m, app := room12(t)
	_, hostTS := value(h.w, app.box, boxPos)
	forged := m.w.r.Clock() + 5
	m.w.r.WriteAt(app.box, boxPos, forged, []byte{7, 0, 0, 0}, false) // the member writes without authority
	n.send(2, 1, link.Unreliable, forgedUpdate(app.box, forged, 7))

	if v, ts := value(h.w, app.box, boxPos); v != 0 || ts <= forged {
		t.Fatalf("host box = %d at %d, want 0 re-stamped above the rejected write (%d; was %d)", v, ts, forged, hostTS)
	}
	if got := h.publish().Rejected; got != 1 {
		t.Fatalf("host Rejected = %d, want 1", got)
	}
	hv, hts := value(h.w, app.box, boxPos)
	if v, ts := value(m.w, app.box, boxPos); v != hv || ts != hts {
		t.Fatalf("member box = %d at %d, want the host's %d at %d", v, ts, hv, hts)
	}
}

// Rule "correction window": the first CRDT batch after its sync snapshot of a member that held an
// earlier host's state may carry host entities (values from the previous host); later batches
// may not.
func TestRuleCorrectionWindow(t *testing.T) {
	n := newStepNet(t)
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 2, 1)
	_, hostTS := value(h.w, app.box, boxPos)
	// Member 2 holds a newer value of the host's box, as it would from the host of term 1.
	m := n.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.r.WriteAt(app.box, boxPos, hostTS+10, []byte{9, 0, 0, 0}, false)
		w.heldTerm = 1
	})
	if v, _ := value(h.w, app.box, boxPos); v != 9 {
		t.Fatalf("host box = %d after the first batch, want the member's correction 9", v)
	}
	// The window is closed: a later correction to the host's box is refused and re-stamped.
	m.w.r.WriteAt(app.box, boxPos, m.w.r.Clock()+10, []byte{5, 0, 0, 0}, false)
	n.advance(h.cfg.QuietPeriod)
	m.member.sendDigest()
	n.pump()
	if v, _ := value(h.w, app.box, boxPos); v != 9 {
		t.Fatalf("host box = %d after a later correction, want 9 kept", v)
	}
	if v, _ := value(m.w, app.box, boxPos); v != 9 {
		t.Fatalf("member box = %d, want the host's 9 after the re-stamp", v)
	}
	if got := h.publish().Rejected; got == 0 {
		t.Fatal("host Rejected = 0, want the late correction counted")
	}
}

// Rule "owner write after re-stamp": the author's writes stamped below a re-stamp of its entity,
// but newer than the value re-stamped, win; the host rewrites them under its own stamp.
func TestRuleOwnerWriteAfterRestamp(t *testing.T) {
	n, h, _, app := room12(t)
	third := n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	avatar, ok := h.w.AvatarOf(2)
	if !ok {
		t.Fatal("member 2 has no avatar")
	}
	_, before := value(h.w, avatar, avatarPos)
	// Member 3 forges a write to member 2's avatar: the host re-stamps the avatar.
	n.send(3, 1, link.Unreliable, forgedUpdate(avatar, third.w.r.Clock()+50, 6))
	_, restamp := value(h.w, avatar, avatarPos)
	if restamp <= before {
		t.Fatalf("avatar not re-stamped: %d → %d", before, restamp)
	}
	// The owner's next write was stamped before it heard of the re-stamp: below it, above before.
	owner := before + 1
	if owner >= restamp {
		t.Fatalf("test setup: owner stamp %d not below the re-stamp %d", owner, restamp)
	}
	n.send(2, 1, link.Unreliable, forgedUpdate(avatar, owner, 4))
	if v, ts := value(h.w, avatar, avatarPos); v != 4 || ts <= restamp {
		t.Fatalf("host avatar = %d at %d, want the owner's 4 above the re-stamp %d", v, ts, restamp)
	}
	_ = app
}

// Rule "sweeps after ResumeSettle": a new host takes members that own avatars but are neither
// in the room nor linked as gone only after ResumeSettle; a member listed again by then stays.
func TestRuleSweepAfterResumeSettle(t *testing.T) {
	n, _, m2, _ := room12(t)
	n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	a1, ok1 := m2.w.AvatarOf(1)
	a3, ok3 := m2.w.AvatarOf(3)
	if !ok1 || !ok3 {
		t.Fatalf("member 2 lacks avatars: host %v, member 3 %v", ok1, ok3)
	}
	// Peers 1 and 3 vanish; signaling elects 2 in term 2.
	delete(m2.members, 1)
	delete(m2.members, 3)
	m2.setHost(2, 2)
	m2.afterEvent()
	n.pump()
	if m2.host == nil {
		t.Fatal("peer 2 is not host")
	}
	n.advance(m2.cfg.ResumeSettle / 2)
	if !m2.w.Exists(a1) || !m2.w.Exists(a3) {
		t.Fatalf("avatars swept before ResumeSettle: 1 %v, 3 %v", m2.w.Exists(a1), m2.w.Exists(a3))
	}
	m2.members[1] = n.roster[0] // peer 1 resumes in time
	n.advance(m2.cfg.ResumeSettle / 2)
	if !m2.w.Exists(a1) {
		t.Fatal("the avatar of a member that resumed was swept")
	}
	if m2.w.Exists(a3) {
		t.Fatal("the avatar of a member gone for ResumeSettle was kept")
	}
}

// Rule "fencing by term": a member refuses host messages on a link of an older term, and counts
// them.
func TestRuleMemberFencesOlderTerm(t *testing.T) {
	n, _, m, app := room12(t)
	// In term 1 the host's update is taken (the control).
	n.send(1, 2, link.Unreliable, forgedUpdate(app.box, m.w.r.Clock()+5, 3))
	if v, _ := value(m.w, app.box, boxPos); v != 3 {
		t.Fatalf("member box = %d, want 3 from the host of its term", v)
	}
	fenced := m.publish().Fenced
	// Signaling starts term 2 without a host; the old host's link stays open.
	m.setHost(2, 0)
	m.afterEvent()
	n.send(1, 2, link.Unreliable, forgedUpdate(app.box, m.w.r.Clock()+5, 8))
	cmds := netmsg.AppendStamp(nil, &netmsg.Stamp{Time: uint64(m.w.r.Clock() + 6)})
	cmds = netmsg.AppendHostCommands(cmds, &netmsg.HostCommands{Despawns: []netmsg.Despawn{{NetworkID: uint64(app.box)}}})
	n.send(1, 2, link.Reliable, cmds)
	if v, _ := value(m.w, app.box, boxPos); v != 3 {
		t.Fatalf("member box = %d, want 3: an EntityUpdates of term 1 was taken in term 2", v)
	}
	if !m.w.Exists(app.box) {
		t.Fatal("a HostCommands of term 1 despawned the box in term 2")
	}
	if got := m.publish().Fenced - fenced; got != 2 {
		t.Fatalf("Fenced grew by %d, want 2", got)
	}
}

// A host that runs another schema table closes the link with both fingerprints, and the member
// ends Run with ErrSchemaMismatch instead of reconnecting.
func TestSchemaMismatchFails(t *testing.T) {
	n := newStepNet(t)
	hostApp := &stepApp{table: stepSchemas()}
	n.join(1, hostApp, 1, 1)
	other := stepSchemas(crdtProperty("extra", 1101))
	m := n.join(2, &stepApp{table: other}, 1, 1)
	err := m.fatal
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("member fatal = %v, want ErrSchemaMismatch", err)
	}
	for _, fp := range []uint64{hostApp.table.Fingerprint(), other.Fingerprint()} {
		if !strings.Contains(err.Error(), fmt.Sprintf("%016x", fp)) {
			t.Errorf("error %q does not name schema table %016x", err, fp)
		}
	}
}

// A write that arrives after its writer handed the lock back is an expected race (counted in
// RejectedRace, logged at debug); a write from a member that never held the entity is a real
// rejection.
func TestRejectedRaceTold(t *testing.T) {
	n, h, m, app := room12(t)
	third := n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	n.do(2, func(w *World) {
		if err := w.RequestLock(app.box); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	if !m.w.CanWrite(app.box) {
		t.Fatal("member 2 did not get the lock")
	}
	// Member 2 writes and hands the lock back; the write's datagram is overtaken by the
	// reliable Relinquish (unordered channel), so it reaches the host after the lock moved.
	n.do(2, func(w *World) {
		if err := w.Relinquish(app.box); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	n.send(2, 1, link.Unreliable, forgedUpdate(app.box, m.w.r.Clock(), 1))
	st := h.publish()
	if st.Rejected != 1 || st.RejectedRace != 1 {
		t.Fatalf("after a late write of the last holder: Rejected %d, RejectedRace %d; want 1, 1", st.Rejected, st.RejectedRace)
	}
	// Member 3 never held the box: a real rejection.
	n.send(3, 1, link.Unreliable, forgedUpdate(app.box, third.w.r.Clock()+1, 2))
	st = h.publish()
	if st.Rejected != 2 || st.RejectedRace != 1 {
		t.Fatalf("after a forged write: Rejected %d, RejectedRace %d; want 2, 1", st.Rejected, st.RejectedRace)
	}
	// Long after the hand-back, the same member's write is a fault too.
	n.advance(raceWindow)
	n.send(2, 1, link.Unreliable, forgedUpdate(app.box, m.w.r.Clock()+1, 3))
	if st = h.publish(); st.Rejected != 3 || st.RejectedRace != 1 {
		t.Fatalf("after a late write past the window: Rejected %d, RejectedRace %d; want 3, 1", st.Rejected, st.RejectedRace)
	}
}

// Rule "fencing by term", host side: corrections stamped with another term than the host's are
// ignored and counted.
func TestRuleHostFencesOtherTermCorrections(t *testing.T) {
	n, h, m, _ := room12(t)
	avatar, ok := h.w.AvatarOf(2)
	if !ok {
		t.Fatal("member 2 has no avatar")
	}
	msg := crdt.AppendMessage(nil, &crdt.Message{Type: crdt.PutComponent, Entity: avatar, Component: avatarPos, Timestamp: m.w.r.Clock() + 10, Data: []byte{5, 0, 0, 0}})
	fenced := h.publish().Fenced
	n.send(2, 1, link.Reliable, netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: 0, Messages: msg}))
	if v, _ := value(h.w, avatar, avatarPos); v == 5 {
		t.Fatal("the host merged corrections of term 0 in term 1")
	}
	if got := h.publish().Fenced - fenced; got != 1 {
		t.Fatalf("host Fenced grew by %d, want 1", got)
	}
	// The same corrections in the host's term are the owner's writes: merged.
	n.send(2, 1, link.Reliable, netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: 1, Messages: msg}))
	if v, _ := value(h.w, avatar, avatarPos); v != 5 {
		t.Fatalf("host avatar = %d, want the owner's correction 5 in term 1", v)
	}
}

// A host announced in the term the member first heard as "no host" (a restarted server that
// waited for its host to resume) is followed, and its messages pass the fence.
func TestFenceHostAnnouncedAfterNoHostInSameTerm(t *testing.T) {
	n, _, m, app := room12(t)
	m.setHost(2, 0)
	m.afterEvent()
	m.setHost(2, 1)
	m.afterEvent()
	n.pump()
	if !m.member.synced {
		t.Fatal("member not synced with the host of term 2")
	}
	fenced := m.publish().Fenced
	n.send(1, 2, link.Unreliable, forgedUpdate(app.box, m.w.r.Clock()+5, 4))
	if v, _ := value(m.w, app.box, boxPos); v != 4 {
		t.Fatalf("member box = %d, want 4 from the host of term 2", v)
	}
	if got := m.publish().Fenced - fenced; got != 0 {
		t.Fatalf("Fenced grew by %d, want 0", got)
	}
}
