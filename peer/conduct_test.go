package peer

import (
	"fmt"
	"math"
	"testing"

	"github.com/concordrtc/concord/peer/link"
)

// Finding "each new link gets a fresh skew budget and fresh strikes": a host keeps a member's
// record across its links (by identity and by peer index), so reconnecting between offences
// wipes nothing.

// reconnect makes member idx drop its link to the host and link anew (a new session), at once.
func reconnect(t *testing.T, n *stepNet, idx PeerIndex) {
	t.Helper()
	h := n.peers[1]
	old := h.remotes[idx]
	n.do(idx, func(*World) { n.peers[idx].member.follow(1) })
	n.pump()
	if r := h.remotes[idx]; r == nil || r == old || h.host.synced(idx) == nil {
		t.Fatalf("member %d did not link anew", idx)
	}
}

// offendUntilDropped sends forged updates stamped 2³²−1 from member 2 until the host closes its
// link, reconnecting after every `every` offences (0: never); it returns the offences it took.
func offendUntilDropped(t *testing.T, every int) int {
	n, h, _, _ := room12(t)
	avatar, _ := h.w.AvatarOf(2)
	for i := 1; i <= 4*maxStrikes; i++ {
		r := h.remotes[2]
		n.send(2, 1, link.Unreliable, forgedUpdate(avatar, math.MaxUint32, 9))
		if h.remotes[2] != r {
			if st := h.publish(); st.Offenders != 1 || st.RefusedBy[RefusedStampSkew] != uint64(i) {
				t.Fatalf("offenders %d, stamp_skew refusals %d after %d offences", st.Offenders, st.RefusedBy[RefusedStampSkew], i)
			}
			return i
		}
		if every > 0 && i%every == 0 {
			reconnect(t, n, 2)
		}
	}
	t.Fatalf("member never dropped in %d offences (reconnecting every %d)", 4*maxStrikes, every)
	return 0
}

func TestAttackReconnectKeepsStrikes(t *testing.T) {
	stays := offendUntilDropped(t, 0)
	if stays != maxStrikes {
		t.Fatalf("an attacker that stays is dropped after %d offences, want %d", stays, maxStrikes)
	}
	for _, every := range []int{1, 5, maxStrikes - 1} {
		t.Run(fmt.Sprint(every), func(t *testing.T) {
			if got := offendUntilDropped(t, every); got != stays {
				t.Fatalf("reconnecting every %d offences: dropped after %d, one that stays after %d", every, got, stays)
			}
		})
	}
}

// A member that spent its skew budget finds it spent on its next link: a stamp at the bound right
// after reconnecting is refused, as on the old link.
func TestAttackReconnectKeepsSkewBudget(t *testing.T) {
	n, h, _, _ := room12(t)
	avatar, _ := h.w.AvatarOf(2)
	n.send(2, 1, link.Unreliable, forgedUpdate(avatar, h.w.r.Clock()+maxStampSkew-1, 4))
	if v, _ := value(h.w, avatar, avatarPos); v != 4 {
		t.Fatalf("host avatar = %d, want 4: a stamp within the bound is admitted", v)
	}
	reconnect(t, n, 2)
	clock := h.w.r.Clock()
	n.send(2, 1, link.Unreliable, forgedUpdate(avatar, clock+maxStampSkew-1, 5))
	if got := h.w.r.Clock(); got > clock+maxStampSkew/2 {
		t.Fatalf("host clock %d → %d: a new link got a fresh skew budget", clock, got)
	}
	if st := h.publish(); st.RefusedBy[RefusedStampSkew] != 1 {
		t.Fatalf("stamp_skew refusals %d, want 1", st.RefusedBy[RefusedStampSkew])
	}
	// The budget refills with time, on any link: 4 s later the member may move the clock again.
	n.advance(maxStampSkew / stampRate * 1e9)
	n.send(2, 1, link.Unreliable, forgedUpdate(avatar, h.w.r.Clock()+maxStampSkew-1, 6))
	if v, _ := value(h.w, avatar, avatarPos); v != 6 {
		t.Fatalf("host avatar = %d, want 6 once the budget refilled", v)
	}
}

// The records are bounded: past maxConducts the least recently used goes, and records past
// conductMemory are dropped first.
func TestConductRecordsBounded(t *testing.T) {
	n, h, _, _ := room12(t)
	hr := h.host
	for i := range 2 * maxConducts {
		hr.conductOf(PeerIndex(1000 + i))
	}
	if got := len(hr.conducts); got > maxConducts {
		t.Fatalf("%d records, want ≤ %d", got, maxConducts)
	}
	c := hr.conductOf(2)
	c.strikes = 10
	n.advance(conductMemory + 1e9)
	hr.conductOf(1 << 20) // not among the indexes above
	if got := len(hr.conducts); got > 3 {
		t.Fatalf("%d records after conductMemory, want the expired ones dropped", got)
	}
	if fresh := hr.conductOf(2); fresh == c || fresh.strikes != 0 {
		t.Fatalf("an expired record came back (strikes %v)", fresh.strikes)
	}
}
