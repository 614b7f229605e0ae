package peer

import (
	"context"
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// idleApp is a stepApp whose members are always idle (an Idler), counting its ticks.
type idleApp struct {
	stepApp
	ticks int
}

func (a *idleApp) Idle(*World) bool           { return true }
func (a *idleApp) Tick(*World, time.Duration) { a.ticks++ }

// roomIdle is host 1 and a member 2 whose App is an idleApp, synced, timers running, settled.
func roomIdle(t *testing.T) (*stepNet, *stepPeer, *stepPeer, *idleApp) {
	t.Helper()
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 1, 1)
	app := &idleApp{stepApp: stepApp{table: stepSchemas()}}
	m := n.join(2, app, 1, 1)
	if m.member == nil || !m.member.synced {
		t.Fatal("member 2 not synced")
	}
	startTimers(n)
	n.advance(time.Second)
	return n, h, m, app
}

// An idle member sleeps (docs/protocol.md §5, "Idle members"): for a minute in which nothing
// happens its loop wakes only for its backed-off digests and its report keepalive, not 20 times a
// second; its App does not tick; it sends no ping but the keepalive's. A write of its own still
// leaves within one network interval, and it sleeps again after.
func TestIdleMemberSleeps(t *testing.T) {
	n, h, m, app := roomIdle(t)
	sent := map[netmsg.Type]int{}
	onMessages(n, func(from, _ PeerIndex) bool { return from == 2 }, func(t netmsg.Type, _ *inbox, _ int) { sent[t]++ })
	step := m.cfg.TickInterval
	wakes := func(d time.Duration) int {
		w := 0
		for range int(d / step) {
			if at, ok := m.timers.next(); ok && !at.After(n.clock.Now().Add(step)) {
				w++
			}
			n.advance(step)
		}
		return w
	}
	ticks := app.ticks
	const idle = time.Minute
	w := wakes(idle)
	t.Logf("idle %v: %d wake-ups, %d ticks, sent %v", idle, w, app.ticks-ticks, sent)
	// Digests 2, 4, 8, 16 and 32 s apart and two keepalives: about 7 (an awake member: 1,200).
	if w > 12 {
		t.Fatalf("an idle member woke %d times in %v, want at most 12", w, idle)
	}
	if app.ticks != ticks {
		t.Fatalf("an idle member's App ticked %d times", app.ticks-ticks)
	}
	if sent[netmsg.TypePing] > 3 {
		t.Fatalf("an idle member pinged %d times in %v, want its keepalives only", sent[netmsg.TypePing], idle)
	}

	// Its own write leaves at once (nothing was flushed for a network interval).
	me, _ := m.w.AvatarOf(2)
	n.do(2, func(w *World) { _ = w.Set(me, 0, []byte{7, 0, 0, 0}) })
	n.advance(m.cfg.NetworkInterval)
	if v, _ := value(h.w, me, stepPropComponent(h.w, me)); v != 7 {
		t.Fatalf("the host holds %d of the sleeping member's write, want 7", v)
	}
	if w := wakes(10 * time.Second); w > 6 {
		t.Fatalf("after its write the member woke %d times in 10 s, want it asleep again", w)
	}
}

// stepPropComponent is the component of property 0 of e.
func stepPropComponent(w *World, e Entity) crdt.ComponentID {
	return w.ents[e].schema.Properties[0].Component
}

// A member that signaling dropped but whose link is up is kept while it answers: the host pings
// it (confirmGone) instead of waiting for pings of its own, which a sleeping member does not
// send. Without the host's ping it was taken as gone after 2 × max(DigestInterval,
// ReportInterval) of silence, its avatar deleted for good.
func TestSleepingMemberKeptWhileItAnswers(t *testing.T) {
	n, h, _, _ := roomIdle(t)
	avatar, ok := h.w.AvatarOf(2)
	if !ok {
		t.Fatal("member 2 has no avatar")
	}
	h.handleSignaling(context.Background(), sigclient.MemberLeft{Index: 2})
	h.afterEvent()
	n.pump()
	for range 20 {
		n.advance(500 * time.Millisecond)
	}
	if !h.w.Exists(avatar) {
		t.Fatal("a live member cut off from signaling alone was taken as gone")
	}
}

// A crashed member that signaling dropped is taken as gone within silence = 2 × max(DigestInterval,
// ReportInterval) of signaling's word (docs/protocol.md §5, "Idle members"): the host's ping goes
// unanswered.
func TestCrashedMemberGoneWithinSilence(t *testing.T) {
	n, h, m, _ := roomIdle(t)
	avatar, _ := h.w.AvatarOf(2)
	n.hold = map[PeerIndex]bool{1: true, 2: true} // nothing arrives either way: member 2 is dead
	h.handleSignaling(context.Background(), sigclient.MemberLeft{Index: 2})
	h.afterEvent()
	n.pump()
	silence := 2 * max(m.cfg.DigestInterval, m.cfg.ReportInterval)
	for waited := time.Duration(0); h.w.Exists(avatar); waited += 100 * time.Millisecond {
		if waited > silence {
			t.Fatalf("a dead member was not taken as gone within %v", silence)
		}
		n.advance(100 * time.Millisecond)
	}
}

// A sleeping member publishes its status only when it reports; a Status read that finds it older
// than ReportInterval asks the loop for a fresh one.
func TestSleepingStatusOnDemand(t *testing.T) {
	n, _, m, _ := roomIdle(t)
	if !m.sleep.sleeping.Load() {
		t.Fatal("the idle member is not asleep")
	}
	_ = m.Status()
	select {
	case <-m.sleep.wantStatus:
		t.Fatal("a fresh status was asked for again")
	default:
	}
	n.clock.add(m.cfg.ReportInterval)
	_ = m.Status()
	select {
	case <-m.sleep.wantStatus:
	default:
		t.Fatal("a stale status of a sleeping member was not asked for")
	}
}
