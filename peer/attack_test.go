package peer

import (
	"math"
	"testing"
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// Attacks on the peer's admission paths (docs/security.md §2–3), each in a steppable room: the attacker
// is refused (and dropped when it insists), the host's clock keeps its headroom, and the honest
// peers converge to one hash afterwards.

// converge asserts that every listed peer's replica has the host's hash.
func converge(t *testing.T, h *stepPeer, peers ...*stepPeer) {
	t.Helper()
	for _, p := range peers {
		if got, want := p.w.r.Hash(), h.w.r.Hash(); got != want {
			t.Fatalf("peer %d hash %016x, host %016x", p.w.self, got, want)
		}
	}
}

// A world whose clock is at 2³²−1 stamps its next batch at 2³²−1, never 0.
func TestBatchStampSaturates(t *testing.T) {
	w := newWorld(stepSchemas(), crdt.Config{})
	w.r.ObserveClock(math.MaxUint32)
	if ts := w.batchStamp(); ts != math.MaxUint32 {
		t.Fatalf("batchStamp at a saturated clock = %d, want %d", ts, uint32(math.MaxUint32))
	}
}

// Finding "one datagram freezes a room": a member writes its own avatar at 2³²−1, and a
// box it may not write at clock + 2²⁰ − 1. The host refuses both, its clock does not follow, and
// a member that insists is dropped.
func TestAttackStampFreeze(t *testing.T) {
	n, h, m, app := room12(t)
	honest := n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	avatar, ok := h.w.AvatarOf(2)
	if !ok {
		t.Fatal("member 2 has no avatar")
	}
	clock := h.w.r.Clock()
	n.send(2, 1, link.Unreliable, forgedUpdate(avatar, math.MaxUint32, 9))
	n.send(2, 1, link.Unreliable, forgedUpdate(app.box, clock+1<<20-1, 9))
	if got := h.w.r.Clock(); got > clock+maxStampSkew {
		t.Fatalf("host clock %d → %d: followed a stamp beyond the skew bound", clock, got)
	}
	if v, _ := value(h.w, avatar, avatarPos); v == 9 {
		t.Fatal("the host admitted an avatar write stamped 2³²−1")
	}
	if st := h.publish(); st.Refused != 2 {
		t.Fatalf("host Refused = %d, want 2", st.Refused)
	}
	// An honest write of the owner within the bound is taken.
	n.send(2, 1, link.Unreliable, forgedUpdate(avatar, h.w.r.Clock()+2, 4))
	if v, _ := value(h.w, avatar, avatarPos); v != 4 {
		t.Fatalf("host avatar = %d, want the owner's honest write 4", v)
	}
	// Sending within the bound again and again spends the member's skew budget: the clock moves
	// at most maxStampSkew at once.
	clock = h.w.r.Clock()
	for i := range 4 {
		n.send(2, 1, link.Unreliable, forgedUpdate(avatar, h.w.r.Clock()+maxStampSkew-1, byte(10+i)))
	}
	if got := h.w.r.Clock(); got > clock+maxStampSkew {
		t.Fatalf("host clock %d → %d: four writes at the skew bound all taken", clock, got)
	}
	// A member that keeps sending refused stamps is dropped with a Close that says why.
	for range maxStrikes {
		if h.remotes[2] == nil {
			break
		}
		n.send(2, 1, link.Unreliable, forgedUpdate(avatar, math.MaxUint32, 9))
	}
	if h.remotes[2] != nil && h.host.mems[2] != nil && !h.host.mems[2].refused {
		t.Fatal("the attacker's link is still served")
	}
	if st := h.publish(); st.Offenders != 1 {
		t.Fatalf("host Offenders = %d, want 1", st.Offenders)
	}
	if got := h.w.r.Clock(); got > math.MaxUint32/2 {
		t.Fatalf("host clock %d after the attack", got)
	}
	// The honest member still writes (its avatar), and converges with the host.
	n.do(3, func(w *World) {
		a, _ := w.AvatarOf(3)
		if err := w.Set(a, 0, []byte{7, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	honest.flushUpdates()
	n.pump()
	a3, _ := h.w.AvatarOf(3)
	if v, _ := value(h.w, a3, avatarPos); v != 7 {
		t.Fatalf("host has member 3's avatar at %d, want 7", v)
	}
	h.flushUpdates()
	n.pump()
	converge(t, h, honest)
	_ = m
}

// Finding "a member's first CRDT batch bypasses authority": a fresh joiner's answer to its sync
// snapshot deletes the box, deletes numbers at version 0xffff and hands the box to itself. None of
// it is admitted: the window for relayed corrections is closed to a member that never held an
// earlier host's state.
func TestAttackFreshJoinerFirstBatch(t *testing.T) {
	n, h, m, app := room12(t)
	refused := h.publish().Refused
	n.joinWith(3, &stepApp{table: stepSchemas()}, 1, 1, func(w *World) {
		poison(w, app.box, 3)
	})
	assertUnharmed(t, h, app.box)
	if got := h.publish().Refused - refused; got == 0 {
		t.Fatal("nothing refused")
	}
	converge(t, h, m)
}

// A member that claims to hold an earlier term's state (its greeting's term below the room's)
// gets the window, yet it cannot hand itself an entity, delete reserved numbers or numbers far
// above any version the host knows.
func TestAttackLyingSurvivorFirstBatch(t *testing.T) {
	n := newStepNet(t)
	app := &stepApp{table: stepSchemas()}
	h := n.join(1, app, 2, 1)
	honest := n.join(2, &stepApp{table: stepSchemas()}, 2, 1)
	n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		poison(w, app.box, 3)
		w.heldTerm = 1
	})
	if rec := h.w.AuthorityRecord(app.box); rec.Kind != authority.KindHost {
		t.Fatalf("the box's authority is %+v, want the host's", rec)
	}
	for num := uint16(FirstSpawnNumber + 100); num < FirstSpawnNumber+200; num++ {
		if v, ok := h.w.r.DeletedVersion(num); ok {
			t.Fatalf("number %d deleted at version %d", num, v)
		}
	}
	if h.w.r.EntityDeleted(RoomEntity) {
		t.Fatal("the room entity was deleted")
	}
	converge(t, h, honest)
}

// poison writes into w what an attacker's first batch would carry: the box's deletion or its
// authority record handed to self, a reserved number's and many numbers' deletion at 0xffff.
func poison(w *World, box Entity, self PeerIndex) {
	rec := authority.AppendRecord(nil, authority.Record{Kind: authority.KindLock, Peer: self})
	w.r.WriteAt(box, schema.ComponentAuthority, 1<<30, rec, false)
	for num := uint16(FirstSpawnNumber + 100); num < FirstSpawnNumber+200; num++ {
		w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(num, 0xffff)})
	}
	w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(1, 0xffff)})
}

func assertUnharmed(t *testing.T, h *stepPeer, box Entity) {
	t.Helper()
	if !h.w.Exists(box) {
		t.Fatal("the box was deleted")
	}
	if rec := h.w.AuthorityRecord(box); rec.Kind != authority.KindHost {
		t.Fatalf("the box's authority is %+v, want the host's", rec)
	}
	for num := uint16(FirstSpawnNumber + 100); num < FirstSpawnNumber+200; num++ {
		if v, ok := h.w.r.DeletedVersion(num); ok {
			t.Fatalf("number %d deleted at version %d", num, v)
		}
	}
	if got := h.w.r.Clock(); got > 1<<20 {
		t.Fatalf("host clock %d", got)
	}
}

// A correction batch above maxCorrectionBytes is refused whole, even of the sender's own avatar.
func TestAttackOversizedBatch(t *testing.T) {
	n, h, _, _ := room12(t)
	avatar, _ := h.w.AvatarOf(2)
	big := make([]byte, 0, maxCorrectionBytes+64)
	for c := crdt.ComponentID(4000); len(big) <= maxCorrectionBytes; c++ {
		big = crdt.AppendMessage(big, &crdt.Message{Type: crdt.PutComponent, Entity: avatar, Component: c, Timestamp: 1, Data: make([]byte, 1000)})
	}
	before := h.w.r.Changes()
	payload := netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: 1, Messages: big})
	n.send(2, 1, link.Reliable, fragmentAll(payload))
	if h.w.r.Changes() != before {
		t.Fatal("an oversized correction batch changed the host's replica")
	}
	if h.publish().Refused == 0 {
		t.Fatal("the oversized batch was not counted")
	}
}

// fragmentAll turns payload into its Fragment messages, concatenated (as one stream).
func fragmentAll(payload []byte) []byte {
	f := netmsg.NewFragmenter(payload, 1, netmsg.MaxReliableMessage)
	var out []byte
	for {
		var ok bool
		if out, ok = f.Next(out); !ok {
			return out
		}
	}
}

// Finding "a malicious host's damage is permanent": a host stamps an update 2³²−1, despawns a
// number at version 0xffff and sends CRDT deletions far above any known version. A synced member
// refuses them all, so its clock keeps the headroom a later honest host needs; the host's honest
// writes are still taken.
func TestAttackMaliciousHost(t *testing.T) {
	n, h, m, app := room12(t)
	clock := m.w.r.Clock()
	n.send(1, 2, link.Unreliable, forgedUpdate(app.box, math.MaxUint32, 9))
	cmds := netmsg.AppendStamp(nil, &netmsg.Stamp{Time: math.MaxUint32})
	cmds = netmsg.AppendHostCommands(cmds, &netmsg.HostCommands{Despawns: []netmsg.Despawn{{NetworkID: uint64(crdt.NewEntity(FirstSpawnNumber+50, 0xffff))}}})
	n.send(1, 2, link.Reliable, cmds)
	var dels []byte
	for num := uint16(FirstSpawnNumber + 100); num < FirstSpawnNumber+200; num++ {
		dels = crdt.AppendMessage(dels, &crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(num, 0xffff)})
	}
	n.send(1, 2, link.Reliable, netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: 1, Messages: dels}))
	if got := m.w.r.Clock(); got > clock+maxHostSkew {
		t.Fatalf("member clock %d → %d", clock, got)
	}
	if v, _ := value(m.w, app.box, boxPos); v == 9 {
		t.Fatal("the member took an update stamped 2³²−1")
	}
	if _, ok := m.w.r.DeletedVersion(FirstSpawnNumber + 50); ok {
		t.Fatal("the member took a despawn at version 0xffff")
	}
	if _, ok := m.w.r.DeletedVersion(FirstSpawnNumber + 150); ok {
		t.Fatal("the member took CRDT deletions at version 0xffff")
	}
	if got := m.publish().Refused; got < 3 {
		t.Fatalf("member Refused = %d, want ≥ 3", got)
	}
	// The host's honest write is taken.
	n.do(1, func(w *World) {
		if err := w.Set(app.box, 0, []byte{5, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	h.flushUpdates()
	n.pump()
	if v, _ := value(m.w, app.box, boxPos); v != 5 {
		t.Fatalf("member box = %d, want the host's honest 5", v)
	}
	converge(t, h, m)
}

// Finding "reassembly memory": a host takes from a member no fragmented payload above
// hostReassemblyLimit (a member may hold a host's snapshots of 64 MiB), and a payload left
// unfinished is dropped with its link after reassemblyTimeout.
func TestAttackReassembly(t *testing.T) {
	n, h, _, _ := room12(t)
	r := h.remotes[2]
	n.send(2, 1, link.Reliable, netmsg.AppendFragment(nil, &netmsg.Fragment{MessageID: 1, TotalLength: hostReassemblyLimit + 1, Chunk: make([]byte, 1000)}))
	if h.remotes[2] == r {
		t.Fatalf("the host took a fragmented payload of %d bytes from a member", hostReassemblyLimit+1)
	}
	// Another member starts a 1 MiB payload and stops.
	n.join(3, &stepApp{table: stepSchemas()}, 1, 1)
	r = h.remotes[3]
	n.send(3, 1, link.Reliable, netmsg.AppendFragment(nil, &netmsg.Fragment{MessageID: 1, TotalLength: 1 << 20, Chunk: make([]byte, 1000)}))
	if !r.reasm.InProgress() {
		t.Fatal("the fragment was not taken")
	}
	refused := h.publish().Refused
	h.expireReassembly(n.clock.add(reassemblyTimeout + time.Second))
	if h.remotes[3] == r || r.reasm.Buffered() != 0 {
		t.Fatal("an unfinished payload outlived reassemblyTimeout")
	}
	if h.publish().Refused != refused+1 {
		t.Fatal("the expired payload was not counted")
	}
}

// Finding "every rejected write re-stamps and re-broadcasts the entity": forged live writes cost
// the room a re-stamp each, so a member that keeps sending them is dropped; the re-stamps it
// caused are bounded by maxStrikes.
func TestAttackRestampStorm(t *testing.T) {
	n, h, _, app := room12(t)
	r := h.remotes[2]
	restamps := 0
	for i := range 10 * maxStrikes {
		if h.remotes[2] != r {
			break
		}
		_, before := value(h.w, app.box, boxPos)
		n.send(2, 1, link.Unreliable, forgedUpdate(app.box, h.w.r.Clock()+1, byte(i)))
		if _, after := value(h.w, app.box, boxPos); after != before {
			restamps++
		}
	}
	if h.remotes[2] == r {
		t.Fatalf("a member sending %d forged writes is still linked", 10*maxStrikes)
	}
	if restamps > maxStrikes {
		t.Fatalf("%d re-stamps, want ≤ %d", restamps, maxStrikes)
	}
	if st := h.publish(); st.Offenders != 1 {
		t.Fatalf("Offenders = %d, want 1", st.Offenders)
	}
}

// Finding "alternating digest bucket counts": a member's digests keep the bucket count of its
// first; another count is refused and counted, and answered with no snapshot.
func TestAttackDigestBucketCounts(t *testing.T) {
	n, h, m, _ := room12(t)
	n.advance(h.cfg.QuietPeriod)
	out := h.publish().BytesOut
	for _, buckets := range []int{1, 2, 3, 255} {
		dig := netmsg.AppendDigest(nil, &netmsg.Digest{Term: 1, Clock: uint32(m.w.r.Clock()), Digests: m.w.r.BucketDigests(buckets, nil)})
		n.send(2, 1, link.Reliable, dig)
	}
	if st := h.publish(); st.Refused != 4 || st.BytesOut != out {
		t.Fatalf("after 4 digests of other bucket counts: Refused %d (want 4), %d bytes sent (want 0)", st.Refused, st.BytesOut-out)
	}
}

// The window stays open to a real survivor: a member that held term 1's state relays, in its first
// batch to the host of term 2, the previous host's deletion of another member's avatar; the host
// admits it, gives the owner a new avatar, and the room converges.
func TestRelayedDeletionBySurvivor(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	owner := n.join(2, &stepApp{table: stepSchemas()}, 2, 1)
	old, ok := h.w.AvatarOf(2)
	if !ok {
		t.Fatal("member 2 has no avatar")
	}
	h.host.startWindow() // as if host 1 had taken over with the avatar: the previous host's
	survivor := n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: old})
		w.heldTerm = 1
	})
	if !h.w.r.EntityDeleted(old) {
		t.Fatal("the survivor's relayed deletion was not admitted")
	}
	fresh, ok := h.w.AvatarOf(2)
	if !ok || fresh == old {
		t.Fatalf("member 2's avatar is %v (%v), the deleted one was %v", fresh, ok, old)
	}
	h.flushUpdates()
	n.pump()
	converge(t, h, owner, survivor)
}
