package peer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// The world's bounds (world_limits.go; docs/security.md §5, "Append sets and world size"): a
// member appending across many components of one entity, or writing corrections of its own
// avatar, is refused past the bounds, and the room's world stays bounded; honest members keep
// playing and a late joiner syncs.

// testLimits are small WorldLimits for a stepped room.
var testLimits = WorldLimits{AppendSets: 4, MemberBytes: 64 << 10, RoomBytes: 160 << 10}

// appendValue is a 1000-byte append value numbered i.
func appendValue(i int) []byte {
	v := make([]byte, 1000)
	v[0], v[1], v[2] = byte(i), byte(i>>8), 0xa5
	return v
}

// requestAppends has member idx ask the host for count appends to e, component by component
// from first as comps allows, as a hostile member would (bypassing World.Append's own checks),
// in bursts within its application traffic budget.
func requestAppends(n *stepNet, idx PeerIndex, e Entity, first crdt.ComponentID, comps, count int) {
	for i := 0; i < count; i += 100 {
		n.do(idx, func(*World) {
			for j := i; j < min(i+100, count); j++ {
				_ = n.peers[idx].member.requestAppend(e, first+crdt.ComponentID(j%comps), appendValue(j))
			}
		})
		n.pump()
		n.advance(time.Second) // refills the traffic budget; strikes drain one a second
	}
}

func TestWorldLimitsBoundAppends(t *testing.T) {
	n := newStepNet(t)
	n.limits = testLimits
	host := n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	for idx := PeerIndex(2); idx <= 5; idx++ {
		n.join(idx, &stepApp{table: stepSchemas()}, 1, 1)
	}
	avatar := func(idx PeerIndex) Entity { e, _ := host.w.AvatarOf(idx); return e }
	start := host.w.r.Size()

	// Append sets: member 2 asks for one value on each of 10 components of its avatar; 4 sets
	// are admitted, the other 6 refused.
	requestAppends(n, 2, avatar(2), 6000, 10, 10)
	if sets, _ := host.w.r.AppendSets(avatar(2), 0); sets != testLimits.AppendSets {
		t.Fatalf("member 2's avatar carries %d append sets on the host, want %d", sets, testLimits.AppendSets)
	}
	if got := host.publish().RefusedBy[RefusedAppendSets]; got != 6 {
		t.Fatalf("RefusedBy[append_sets] = %d, want 6", got)
	}

	// Member budget: member 2 fills its 4 sets with 1000-byte values; past MemberBytes the host
	// refuses, the world grows by at most the member's budget, and a member that keeps on is
	// closed with a Close that says why.
	requestAppends(n, 2, avatar(2), 6000, 4, 200)
	st := host.publish()
	if st.RefusedBy[RefusedMemberWorld] == 0 || st.Offenders != 1 {
		t.Fatalf("RefusedBy %v, Offenders %d: want appends refused past the member's budget and member 2 closed", st.RefusedBy, st.Offenders)
	}
	if grown := host.w.r.Size() - start; grown > testLimits.MemberBytes {
		t.Fatalf("member 2 grew the world by %d bytes, its budget is %d", grown, testLimits.MemberBytes)
	}

	// Corrections count too: member 3 puts 100 arbitrary components of 1000 bytes on its own
	// avatar; what passes its budget is refused.
	var stream []byte
	for i := range 100 {
		m := crdt.Message{Type: crdt.PutComponent, Entity: avatar(3), Component: 7000 + crdt.ComponentID(i), Timestamp: host.w.r.Clock(), Data: appendValue(i)}
		stream = crdt.AppendMessage(stream, &m)
	}
	before, refused := host.w.r.Size(), host.publish().RefusedBy[RefusedMemberWorld]
	n.send(3, 1, link.Reliable, netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: 1, Messages: stream}))
	if grown := host.w.r.Size() - before; grown > testLimits.MemberBytes {
		t.Fatalf("member 3's corrections grew the world by %d bytes, its budget is %d", grown, testLimits.MemberBytes)
	}
	if host.publish().RefusedBy[RefusedMemberWorld] == refused {
		t.Fatal("no correction refused past the member's budget")
	}

	// Room bound: member 4 has a budget of its own, but the world stops at RoomBytes; its own
	// World.Append says so once its replica holds the full world.
	requestAppends(n, 4, avatar(4), 6000, 4, 60)
	if got := host.w.r.Size(); got > testLimits.RoomBytes {
		t.Fatalf("world of %d bytes, RoomBytes is %d", got, testLimits.RoomBytes)
	}
	st = host.publish()
	if st.RefusedBy[RefusedWorldBytes] == 0 {
		t.Fatalf("no append refused past the room's bound (RefusedBy %v)", st.RefusedBy)
	}
	if st.WorldBytes != host.w.r.Size() {
		t.Fatalf("Status.WorldBytes = %d, the replica's size %d", st.WorldBytes, host.w.r.Size())
	}
	n.do(4, func(w *World) {
		if err := w.Append(avatar(4), 6000, appendValue(9999)); !errors.Is(err, ErrWorldLimit) {
			t.Errorf("member 4's append to a full world: %v, want ErrWorldLimit", err)
		}
	})

	// The host's own appends are bounded as well: World.Append says why.
	n.do(1, func(w *World) {
		if err := w.Append(avatar(5), 6000, appendValue(1)); !errors.Is(err, ErrWorldLimit) {
			t.Errorf("host append to a full world: %v, want ErrWorldLimit", err)
		}
	})

	// Honest play goes on: member 5 moves its avatar, and the host and member 4 see it.
	n.do(5, func(w *World) {
		if err := w.Set(avatar(5), 0, []byte{42, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	})
	n.peers[5].flushUpdates()
	n.pump()
	host.flushUpdates()
	n.pump()
	if v, _ := value(host.w, avatar(5), avatarPos); v != 42 {
		t.Fatalf("the host sees member 5's avatar at %d, want 42", v)
	}
	if v, _ := value(n.peers[4].w, avatar(5), avatarPos); v != 42 {
		t.Fatalf("member 4 sees member 5's avatar at %d, want 42", v)
	}

	// A late joiner syncs the bounded world.
	late := n.join(6, &stepApp{table: stepSchemas()}, 1, 1)
	n.advance(time.Second)
	if !late.member.synced {
		t.Fatal("late joiner not synced")
	}
	if got, want := late.w.r.Hash(), host.w.r.Hash(); got != want {
		t.Fatalf("late joiner's replica %x, the host's %x", got, want)
	}
}

// TestWorldLimitsAppendSetsOnHost: the host's own World.Append is bounded by the append sets of
// an entity; appending to a set it holds goes on.
func TestWorldLimitsAppendSetsOnHost(t *testing.T) {
	n := newStepNet(t)
	n.limits = testLimits
	app := &stepApp{table: stepSchemas()}
	n.join(1, app, 1, 1)
	n.do(1, func(w *World) {
		for c := range crdt.ComponentID(testLimits.AppendSets) {
			if err := w.Append(app.box, 6000+c, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Append(app.box, 6100, []byte("x")); !errors.Is(err, ErrWorldLimit) {
			t.Fatalf("an append set past the limit: %v, want ErrWorldLimit", err)
		}
		if err := w.Append(app.box, 6000, []byte("y")); err != nil {
			t.Fatalf("an append to a set the entity holds: %v", err)
		}
	})
}

// worldVectors is testdata/peer/world_limits.json.
type worldVectors struct {
	Limits struct{ AppendSets, MemberBytes, RoomBytes int }
	Steps  []struct {
		Member            PeerIndex
		Op                string
		Entity, Component uint32
		Len               int
		Want              string
		Size              int
	}
	Used map[string]int
}

// TestWorldLimitsVectors runs the admission rule (admitWorld) over the shared vectors that the JS
// host's web/test/worldlimits.test.js runs too.
func TestWorldLimitsVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "peer", "world_limits.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v worldVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	l := WorldLimits{AppendSets: v.Limits.AppendSets, MemberBytes: v.Limits.MemberBytes, RoomBytes: v.Limits.RoomBytes}
	r := crdt.New(crdt.Config{})
	used := map[PeerIndex]int{}
	for i, st := range v.Steps {
		n := i + 1
		m := crdt.Message{Entity: crdt.Entity(st.Entity), Component: crdt.ComponentID(st.Component), Timestamp: crdt.Timestamp(n), Data: bytes.Repeat([]byte{byte(n)}, st.Len)}
		switch st.Op {
		case "append":
			m.Type = crdt.AppendValue
		case "put":
			m.Type = crdt.PutComponent
		case "delete":
			m.Type, m.Data = crdt.DeleteComponent, nil
		default:
			t.Fatalf("step %d: op %q", n, st.Op)
		}
		why, reason := admitWorld(r, l, used[st.Member], &m)
		got := ""
		if reason != "" {
			got = why.String()
		} else {
			before := r.Size()
			r.Merge(&m)
			used[st.Member] = max(0, used[st.Member]+r.Size()-before)
		}
		if got != st.Want || r.Size() != st.Size {
			t.Fatalf("step %d (%s by %d): refusal %q (%s), size %d; want %q, size %d", n, st.Op, st.Member, got, reason, r.Size(), st.Want, st.Size)
		}
	}
	for k, want := range v.Used {
		idx, _ := strconv.Atoi(k)
		if got := used[PeerIndex(idx)]; got != want {
			t.Errorf("member %s's account %d, want %d", k, got, want)
		}
	}
}
