package peer

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
)

// Finding "a member's first snapshot from a new host is unbounded": a member judges every host
// snapshot, its first from a new host included, before it merges anything: bytes, values, stamps
// within the snapshot's own clock, and that clock within the skew of the member's (or, for a
// member that holds nothing, below maxFreshClock). Deletions in it are judged as a host's later
// input by a member that holds a replica.

// A fresh joiner refuses a host whose clock leaves no headroom: it stays unsynced with a clock of
// 0 instead of carrying a saturated clock into a later term.
func TestSnapshotFreshJoinerRefusesSaturatedClock(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	n.do(1, func(w *World) { w.r.ObserveClock(math.MaxUint32 - 5) })
	m := n.join(2, &stepApp{table: stepSchemas()}, 1, 1)
	if m.member.synced || m.w.r.Clock() != 0 {
		t.Fatalf("fresh joiner synced %v with clock %d from a host at %d", m.member.synced, m.w.r.Clock(), h.w.r.Clock())
	}
	if st := m.publish(); st.RefusedBy[RefusedSnapshot] != 1 || st.Refused != 1 {
		t.Fatalf("snapshot refusals %d (refused %d), want 1", st.RefusedBy[RefusedSnapshot], st.Refused)
	}
	// An honest host's room (a clock well within the headroom) syncs a fresh joiner.
	n2 := newStepNet(t)
	n2.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	n2.do(1, func(w *World) { w.r.ObserveClock(maxFreshClock) })
	if m := n2.join(2, &stepApp{table: stepSchemas()}, 1, 1); !m.member.synced {
		t.Fatal("a fresh joiner refused a clock at maxFreshClock")
	}
}

// A survivor of a migration (a replica of term 1) joining a new host whose clock jumped far above
// its own refuses its first snapshot whole: the new host cannot freeze its successors.
func TestSnapshotSurvivorRefusesClockJump(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	n.do(1, func(w *World) { w.r.ObserveClock(1 << 24) })
	m := n.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.r.ObserveClock(100)
		w.heldTerm = 1
	})
	if m.member.synced || m.w.r.Clock() != 100 {
		t.Fatalf("survivor synced %v, clock %d, from a host at %d", m.member.synced, m.w.r.Clock(), h.w.r.Clock())
	}
	if st := m.publish(); st.RefusedBy[RefusedSnapshot] != 1 {
		t.Fatalf("snapshot refusals %d, want 1", st.RefusedBy[RefusedSnapshot])
	}
	// A host within the skew, plus syncClockRate for the time since the survivor last heard a
	// host, is taken.
	n2 := newStepNet(t)
	n2.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	n2.do(1, func(w *World) { w.r.ObserveClock(100 + maxHostSkew) })
	if m := n2.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.r.ObserveClock(100)
		w.heldTerm = 1
	}); !m.member.synced {
		t.Fatal("a survivor refused a host within the skew")
	}
}

// A survivor's first snapshot may not delete numbers far above any version it knows (0xffff on
// every number leaves no number to spawn for good); the rest of it is merged.
func TestSnapshotSurvivorRefusesFarDeletions(t *testing.T) {
	n := newStepNet(t)
	app := &stepApp{table: stepSchemas()}
	n.join(1, app, 2, 1)
	n.do(1, func(w *World) {
		for num := uint16(FirstSpawnNumber + 100); num < FirstSpawnNumber+200; num++ {
			w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(num, 0xffff)})
		}
	})
	m := n.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.r.ObserveClock(1)
		w.heldTerm = 1
	})
	if !m.member.synced || !m.w.Exists(app.box) {
		t.Fatalf("survivor synced %v, has the box %v", m.member.synced, m.w.Exists(app.box))
	}
	for num := uint16(FirstSpawnNumber + 100); num < FirstSpawnNumber+200; num++ {
		if v, ok := m.w.r.DeletedVersion(num); ok {
			t.Fatalf("number %d deleted at version %d", num, v)
		}
	}
	if st := m.publish(); st.RefusedBy[RefusedHostDeletion] != 100 {
		t.Fatalf("host_deletion refusals %d, want 100", st.RefusedBy[RefusedHostDeletion])
	}
}

// hostState encodes a snapshot's host state (version 1, one bucket covered) by hand.
func hostState(clock uint32, fingerprint uint64, stamps []uint32, stream []byte) []byte {
	le := binary.LittleEndian
	b := le.AppendUint64([]byte{1}, 1)
	b = le.AppendUint32(b, clock)
	b = le.AppendUint64(b, fingerprint)
	b = le.AppendUint16(b, 1)
	b = append(b, 1)
	b = le.AppendUint32(b, uint32(len(stamps)))
	for _, s := range stamps {
		b = le.AppendUint32(b, s)
	}
	b = le.AppendUint32(b, uint32(len(stream)))
	return append(b, stream...)
}

// A synced member refuses whole a snapshot beyond the bounds: a value stamped above the
// snapshot's own clock, more bytes or values than it takes, a clock far above its own.
func TestSnapshotBoundsRefused(t *testing.T) {
	n, _, m, app := room12(t)
	fp := m.w.schemas.Fingerprint()
	clock := uint32(m.w.r.Clock())
	put := crdt.AppendMessage(nil, &crdt.Message{Type: crdt.PutComponent, Entity: app.box, Component: boxPos, Timestamp: math.MaxUint32, Data: []byte{9, 0, 0, 0}})
	cases := map[string]netmsg.HostSnapshot{
		"stamp above its clock": {HostState: hostState(clock, fp, nil, put)},
		"clock far ahead":       {HostState: hostState(clock+2*maxHostSkew, fp, nil, nil)},
		"bytes":                 {HostState: hostState(clock, fp, nil, nil), Spawns: []netmsg.Spawn{{CreationData: make([]byte, maxSnapshotBytes)}}},
		"values":                {HostState: hostState(clock, fp, make([]uint32, maxSnapshotValues+1), nil)},
	}
	for name, snap := range cases {
		refused := m.publish().RefusedBy[RefusedSnapshot]
		snap.HostPeerIndex, snap.LocalPeerIndex = 1, 2
		n.do(2, func(*World) {
			if err := m.member.snapshot(&snap); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		})
		if got := m.publish().RefusedBy[RefusedSnapshot]; got != refused+1 {
			t.Fatalf("%s: snapshot refusals %d → %d, want one more", name, refused, got)
		}
		if got := uint32(m.w.r.Clock()); got != clock {
			t.Fatalf("%s: member clock %d → %d", name, clock, got)
		}
		if v, _ := value(m.w, app.box, boxPos); v == 9 {
			t.Fatalf("%s: merged", name)
		}
	}
}

// A member makes room for a snapshot's events before it merges it, from the values the snapshot
// claims: a host that claims as many as the bounds allow, in a snapshot Apply then refuses (its
// stamps match no spawn), gets at most maxEventRoom events' room made, not 40 bytes a claimed
// value (80 MiB at maxSnapshotValues).
func TestSnapshotEventRoomBounded(t *testing.T) {
	n, _, m, _ := room12(t)
	fp := m.w.schemas.Fingerprint()
	snap := netmsg.HostSnapshot{HostPeerIndex: 1, LocalPeerIndex: 2,
		HostState: hostState(uint32(m.w.r.Clock()), fp, make([]uint32, maxSnapshotValues), nil)}
	n.do(2, func(w *World) {
		if err := m.member.snapshot(&snap); err == nil {
			t.Fatal("a snapshot whose stamps match no spawn was applied")
		}
		// 2 × 65,536 (not the constant itself, so that raising it fails here): slices.Grow may
		// round up.
		if c := cap(w.events); c > 1<<17 {
			t.Fatalf("room for %d events made ahead of a refused snapshot, want at most %d", c, 1<<17)
		}
	})
}
