package peer

import (
	"slices"
	"testing"
	"time"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// Interest management in a stepped room: a host whose app follows a radius sends each member the
// entities near its avatar and nothing else, moves them in and out as the avatar moves, keeps the
// successor whole, and loses nothing when the successor takes over.

const interestRadius = 15

// radiusApp puts boxes at x = 0, 10, …, 90 (the first byte of pos) and avatars at x = 0; a member
// follows what is within interestRadius of its avatar.
type radiusApp struct {
	stepApp
	boxes []Entity
	left  int // EventLeftInterest heard
}

func (a *radiusApp) OnEvent(_ *World, ev Event) {
	if ev.Kind == EventLeftInterest {
		a.left++
	}
}

func (a *radiusApp) HostStart(w *World) {
	if len(w.EntitiesOf(stepSchemaBox)) > 0 {
		return
	}
	for x := 0; x < 100; x += 10 {
		e, _ := w.Spawn(stepSchemaBox, nil, []byte{byte(x), 0, 0, 0})
		a.boxes = append(a.boxes, e)
	}
}

func (a *radiusApp) Interest(w *World, member PeerIndex, e Entity) bool {
	av, ok := w.AvatarOf(member)
	if !ok {
		return false
	}
	p, _ := w.Get(av, 0)
	q, ok := w.Get(e, 0)
	if len(p) == 0 || !ok || len(q) == 0 {
		return false
	}
	d := int(p[0]) - int(q[0])
	return d*d <= interestRadius*interestRadius
}

// boxXs returns the x of every box member w holds, ascending.
func boxXs(w *World) []int {
	var xs []int
	for _, e := range w.EntitiesOf(stepSchemaBox) {
		v, _ := w.Get(e, 0)
		xs = append(xs, int(v[0]))
	}
	slices.Sort(xs)
	return xs
}

// followsExactly checks that member idx holds exactly its interest: its digests are the host's
// over the numbers it follows.
func followsExactly(t *testing.T, n *stepNet, host, idx PeerIndex) {
	t.Helper()
	h := n.peers[host].host
	hm := h.mems[idx]
	want := n.peers[host].w.r.BucketDigestsOf(64, hm.keep(), nil)
	got := n.peers[idx].w.r.BucketDigests(64, nil)
	if !slices.Equal(got, want) {
		t.Errorf("member %d's replica is not its interest in the host's (visible %v)", idx, hm.visible)
	}
}

func TestInterestRadius(t *testing.T) {
	n := newStepNet(t)
	var sent [256]int // Forget and HostSnapshot messages the host sends, by type
	n.onSend = func(from, to PeerIndex, ch link.Channel, b []byte) {
		if from != 1 {
			return
		}
		r := netmsg.NewReader(b)
		for r.More() {
			m, err := r.Next()
			if err != nil && m.Raw == nil {
				return
			}
			sent[m.Type]++
		}
	}
	apps := map[PeerIndex]*radiusApp{}
	for i := PeerIndex(1); i <= 4; i++ {
		apps[i] = &radiusApp{stepApp: stepApp{table: stepSchemas()}}
		n.join(i, apps[i], 1, 1)
	}
	h := n.peers[1]
	succ := h.successor()
	if succ < 2 {
		t.Fatalf("successor %d", succ)
	}
	n.advance(300 * time.Millisecond)
	h.flushUpdates() // the network flush works the interest out again
	n.pump()
	for i := PeerIndex(2); i <= 4; i++ {
		want := []int{0, 10}
		if i == succ {
			want = []int{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}
		}
		if got := boxXs(n.peers[i].w); !slices.Equal(got, want) {
			t.Errorf("member %d holds boxes at %v, want %v", i, got, want)
		}
		followsExactly(t, n, 1, i)
	}
	// A member that is not the successor walks to x = 50: the boxes near 0 leave its replica,
	// those near 50 arrive.
	walker := PeerIndex(2)
	if walker == succ {
		walker = 3
	}
	av, _ := n.peers[walker].w.AvatarOf(walker)
	n.do(walker, func(w *World) { _ = w.Set(av, 0, []byte{50, 0, 0, 0}) })
	n.peers[walker].flushUpdates()
	n.pump()
	h.flushUpdates()
	n.pump()
	forgets := sent[netmsg.TypeForget]
	n.advance(300 * time.Millisecond)
	h.flushUpdates()
	n.pump()
	if got, want := boxXs(n.peers[walker].w), []int{40, 50, 60}; !slices.Equal(got, want) {
		t.Errorf("the walker holds boxes at %v after its walk, want %v", got, want)
	}
	if sent[netmsg.TypeForget] == forgets {
		t.Error("no Forget sent to the walker")
	}
	if apps[walker].left == 0 {
		t.Error("the walker heard no EventLeftInterest")
	}
	followsExactly(t, n, 1, walker)
	// The host moves the box at 50: the walker hears it, a member at 0 does not (nor holds it).
	box50 := apps[1].boxes[5]
	n.do(1, func(w *World) { _ = w.Set(box50, 0, []byte{51, 0, 0, 0}) })
	h.flushUpdates()
	n.pump()
	if v, _ := value(n.peers[walker].w, box50, 1100); v != 51 {
		t.Errorf("the walker sees box 50 at %d, want 51", v)
	}
	other := PeerIndex(4)
	if other == succ || other == walker {
		other = 3
	}
	if n.peers[other].w.Exists(box50) {
		t.Errorf("member %d at x=0 holds box 50", other)
	}
	// At rest, digests agree: no snapshot is sent any more.
	n.advance(2 * time.Second)
	snaps := sent[netmsg.TypeHostSnapshot]
	for range 5 {
		n.advance(2 * time.Second)
	}
	if d := sent[netmsg.TypeHostSnapshot] - snaps; d != 0 {
		t.Errorf("%d snapshots sent in a room at rest: partial digests disagree", d)
	}
	for i := PeerIndex(2); i <= 4; i++ {
		followsExactly(t, n, 1, i)
	}
	// The host goes; signaling elects the successor, which held everything: nothing is lost, and
	// the members that followed part of the world converge with the new host.
	hostHash := h.w.r.Hash()
	h.shutdown()
	delete(n.peers, 1)
	for _, sp := range n.peers {
		delete(sp.members, 1)
		sp.setHost(2, succ)
		sp.afterEvent()
	}
	n.pump()
	nh := n.peers[succ]
	if nh.host == nil {
		t.Fatal("the successor is not host")
	}
	if got := boxXs(nh.w); len(got) != 10 {
		t.Errorf("the new host holds boxes at %v: the successor's replica was not whole", got)
	}
	n.advance(500 * time.Millisecond)
	nh.flushUpdates()
	n.pump()
	n.advance(2 * time.Second) // digests repair what the migration left apart
	nh.flushUpdates()
	n.pump()
	for i := range n.peers {
		if i != succ {
			followsExactly(t, n, succ, i)
		}
	}
	_ = hostHash
}

// TestInterestSuccessorPaced: the successor keeps the whole world, but what lies beyond its own
// interest reaches it every farEvery-th flush; its own surroundings at every flush.
func TestInterestSuccessorPaced(t *testing.T) {
	n := newStepNet(t)
	apps := map[PeerIndex]*radiusApp{}
	for i := PeerIndex(1); i <= 3; i++ {
		apps[i] = &radiusApp{stepApp: stepApp{table: stepSchemas()}}
		n.join(i, apps[i], 1, 1)
	}
	h := n.peers[1]
	succ := h.successor()
	n.advance(300 * time.Millisecond)
	h.flushUpdates()
	n.pump()
	if hm := h.host.mems[succ]; hm.visible != nil || hm.near == nil {
		t.Fatalf("successor %d: visible %v, near %v", succ, hm.visible, hm.near)
	}
	near, far := apps[1].boxes[0], apps[1].boxes[9] // x = 0 (by its avatar) and x = 90
	slowest := 0
	for round := byte(1); round <= 3; round++ {
		n.do(1, func(w *World) {
			_ = w.Set(near, 0, []byte{0, round, 0, 0})
			_ = w.Set(far, 0, []byte{90, round, 0, 0})
		})
		flushesUntilFar := 0
		for {
			h.flushUpdates()
			n.pump()
			flushesUntilFar++
			if v, _ := n.peers[succ].w.Get(near, 0); v[1] != round {
				t.Fatalf("round %d: the successor's near box not updated at the first flush", round)
			}
			if v, _ := n.peers[succ].w.Get(far, 0); v[1] == round {
				break
			}
			if flushesUntilFar > farEvery {
				t.Fatalf("round %d: the far box did not reach the successor in %d flushes", round, farEvery)
			}
		}
		t.Logf("round %d: the far box arrived after %d flushes", round, flushesUntilFar)
		slowest = max(slowest, flushesUntilFar)
	}
	if slowest < farEvery {
		t.Errorf("the far box always arrived within %d flushes: updates beyond the successor's interest are not paced", slowest)
	}
	if got := boxXs(n.peers[succ].w); len(got) != 10 {
		t.Errorf("the successor holds %d boxes, want all 10", len(got))
	}
}

// TestInterestSuccessorMayHost: the member that follows the whole world is the one signaling would
// elect next, so never a member whose token forbids hosting: with a secret, the full replica goes
// only to members allowed to host (docs/security.md §3). With nobody allowed, nobody gets it.
func TestInterestSuccessorMayHost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noHost []PeerIndex
		want   PeerIndex // the member that holds every box; 0: none
	}{
		{"the earliest joiners may not host", []PeerIndex{2, 3}, 4},
		{"nobody else may host", []PeerIndex{2, 3, 4}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newStepNet(t)
			n.noHost = map[PeerIndex]bool{}
			for _, i := range tc.noHost {
				n.noHost[i] = true
			}
			for i := PeerIndex(1); i <= 4; i++ {
				n.join(i, &radiusApp{stepApp: stepApp{table: stepSchemas()}}, 1, 1)
			}
			h := n.peers[1]
			if succ := h.successor(); succ != tc.want {
				t.Fatalf("successor %d, want %d", succ, tc.want)
			}
			n.advance(300 * time.Millisecond)
			h.flushUpdates()
			n.pump()
			for i := PeerIndex(2); i <= 4; i++ {
				want := []int{0, 10}
				if i == tc.want {
					want = []int{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}
				}
				if got := boxXs(n.peers[i].w); !slices.Equal(got, want) {
					t.Errorf("member %d (may host: %v) holds boxes at %v, want %v", i, !n.noHost[i], got, want)
				}
			}
		})
	}
}
