package peer

import (
	"testing"
	"time"

	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// Finding "a relay to everyone multiplies one member's budget by the room" (docs/security.md §4,
// "Relays and application messages"): one member at its application limit (200 reliable
// messages of 16 KiB a second) relays to Everyone; the host used to forward 3.2 MB/s to each
// member, their reliable queues passed the high-water mark and the host closed every honest
// member's link as one that cannot keep up.

// relayApp counts the application messages and bytes it receives, by sender.
type relayApp struct {
	stepApp
	msgs, bytes map[PeerIndex]int
}

func newRelayApp() *relayApp {
	return &relayApp{stepApp: stepApp{table: stepSchemas()}, msgs: map[PeerIndex]int{}, bytes: map[PeerIndex]int{}}
}

func (a *relayApp) Message(_ *World, from PeerIndex, _ uint8, data []byte) {
	a.msgs[from]++
	a.bytes[from] += len(data)
}

// slowLinks makes the host's reliable channel to each member drain at rate bytes a second of the
// room's clock: what the host sent and the link has not carried yet is the link's Buffered, and a
// reliable send that finds more than link.DefaultReliableHighWater buffered fails with
// link.ErrBackpressure, as a Conn's does (the host then closes the link).
func slowLinks(n *stepNet, host PeerIndex, rate float64) {
	type queue struct {
		bytes float64
		at    time.Time
	}
	queues := map[PeerIndex]*queue{}
	drained := func(to PeerIndex) *queue {
		now := n.clock.Now()
		q := queues[to]
		if q == nil {
			q = &queue{at: now}
			queues[to] = q
		}
		q.bytes = max(0, q.bytes-now.Sub(q.at).Seconds()*rate)
		q.at = now
		return q
	}
	n.buffered = func(from, to PeerIndex, ch link.Channel) uint64 {
		if from != host || ch != link.Reliable {
			return 0
		}
		return uint64(drained(to).bytes)
	}
	n.sendErr = func(from, to PeerIndex, ch link.Channel, b []byte) error {
		if from != host || ch != link.Reliable {
			return nil
		}
		q := drained(to)
		if uint64(q.bytes) > link.DefaultReliableHighWater {
			return &link.BackpressureError{Channel: ch, Buffered: uint64(q.bytes), Limit: link.DefaultReliableHighWater}
		}
		q.bytes += float64(len(b))
		return nil
	}
}

// relayRoom is a host (1) with honest members 2..honest+1 and an attacker after them, each
// counting what it receives.
func relayRoom(t *testing.T, honest int) (n *stepNet, h *stepPeer, box Entity, attacker PeerIndex, apps map[PeerIndex]*relayApp) {
	t.Helper()
	n = newStepNet(t)
	hostApp := newRelayApp()
	h = n.join(1, hostApp, 1, 1)
	apps = map[PeerIndex]*relayApp{1: hostApp}
	for i := range honest + 1 {
		idx := PeerIndex(2 + i)
		apps[idx] = newRelayApp()
		m := n.join(idx, apps[idx], 1, 1)
		if m.member == nil || !m.member.synced {
			t.Fatalf("member %d not synced", idx)
		}
	}
	return n, h, hostApp.box, PeerIndex(2 + honest), apps
}

// linked asserts that the host still serves each of the members.
func linked(t *testing.T, h *stepPeer, members ...PeerIndex) {
	t.Helper()
	for _, idx := range members {
		if h.remotes[idx] == nil || h.host.synced(idx) == nil {
			t.Fatalf("the host closed member %d's link", idx)
		}
	}
}

func TestAttackRelayToEveryone(t *testing.T) {
	const honest = 6
	n, h, box, attacker, apps := relayRoom(t, honest)
	// Each member's link carries 1 MiB/s, a third of what the attack sent each.
	slowLinks(n, 1, 1<<20)
	members := make([]PeerIndex, 0, honest)
	for i := range honest {
		members = append(members, PeerIndex(2+i))
	}
	big := make([]byte, MaxMessage)
	const (
		step    = 50 * time.Millisecond
		steps   = 60 // 3 s
		perStep = appRate * step / time.Second
	)
	for i := range steps {
		n.do(attacker, func(w *World) {
			for range perStep {
				if err := w.SendMessage(Everyone, 200, big, true); err != nil {
					t.Fatal(err)
				}
			}
		})
		// An honest member chats once a second, and the host moves the box every step.
		if i%20 == 0 {
			n.do(2, func(w *World) {
				if err := w.SendMessage(Everyone, 201, []byte("hello"), true); err != nil {
					t.Fatal(err)
				}
			})
		}
		n.do(1, func(w *World) {
			if err := w.Set(box, 0, []byte{byte(i), 0, 0, 0}); err != nil {
				t.Fatal(err)
			}
		})
		n.advance(step)
		linked(t, h, members...)
	}
	linked(t, h, attacker) // over its budget, not an offender
	elapsed := (steps * step).Seconds()
	for _, idx := range members {
		app := apps[idx]
		// What one member received from the attacker: within its inbound budget, and within
		// the attacker's budget split among the room's six other members.
		got := app.bytes[attacker] + app.msgs[attacker]*netmsg.RelayOverhead
		if limit := DefaultRecvRelayBurst + int(elapsed*DefaultRecvRelayRate); got > limit {
			t.Errorf("member %d received %d relayed bytes in %.1fs, more than its inbound budget %d", idx, got, elapsed, limit)
		}
		if limit := (DefaultRelayBurst + int(elapsed*DefaultRelayRate)) / honest; got > limit {
			t.Errorf("member %d received %d relayed bytes from the attacker, more than its share %d of the sender's budget", idx, got, limit)
		}
		if app.msgs[attacker] == 0 {
			t.Errorf("member %d received nothing of the attacker: its budget lets some through", idx)
		}
		if idx != 2 && app.msgs[2] != steps/20 {
			t.Errorf("member %d received %d of member 2's %d chat lines", idx, app.msgs[2], steps/20)
		}
	}
	st := h.publish()
	if st.RefusedBy[RefusedRelayBudget] == 0 {
		t.Error("the attacker's excess was not counted (relay_budget)")
	}
	if st.Offenders != 0 {
		t.Errorf("host Offenders = %d, want 0", st.Offenders)
	}
	// The honest members kept the host's updates: they converge with it.
	h.flushUpdates()
	n.pump()
	honestPeers := make([]*stepPeer, 0, honest)
	for _, idx := range members {
		honestPeers = append(honestPeers, n.peers[idx])
		if v, _ := value(n.peers[idx].w, box, 1100); v != byte(steps-1) {
			t.Errorf("member %d has the box at %d, want %d", idx, v, steps-1)
		}
	}
	converge(t, h, honestPeers...)
}

// attackOne has attacker relay the largest reliable message to member victim at its message
// limit for the given number of 50 ms steps, while the host moves the box.
func attackOne(t *testing.T, n *stepNet, box Entity, attacker, victim PeerIndex, steps int) {
	t.Helper()
	big := make([]byte, MaxMessage)
	const step = 50 * time.Millisecond
	for i := range steps {
		n.do(attacker, func(w *World) {
			for range appRate * step / time.Second {
				if err := w.SendMessage(victim, 200, big, true); err != nil {
					t.Fatal(err)
				}
			}
		})
		n.do(1, func(w *World) {
			if err := w.Set(box, 0, []byte{byte(i), 0, 0, 0}); err != nil {
				t.Fatal(err)
			}
		})
		n.advance(step)
		linked(t, n.peers[1], victim)
	}
}

// Several senders to one member share that member's inbound budget: two attackers relay to
// member 2 at their limits; it receives at most its inbound budget, the rest is counted.
func TestAttackRelayInboundBudget(t *testing.T) {
	n, h, box, attacker, apps := relayRoom(t, 2)
	slowLinks(n, 1, 1<<20)
	const steps = 40 // 2 s
	attackOne(t, n, box, attacker, 2, steps)
	attackOne(t, n, box, 3, 2, steps)
	elapsed := (2 * steps * 50 * time.Millisecond).Seconds()
	got := 0
	for _, from := range []PeerIndex{3, attacker} {
		got += apps[2].bytes[from] + apps[2].msgs[from]*netmsg.RelayOverhead
	}
	if limit := DefaultRecvRelayBurst + int(elapsed*DefaultRecvRelayRate); got > limit || got == 0 {
		t.Errorf("member 2 received %d relayed bytes in %.1fs, want some and at most its inbound budget %d", got, elapsed, limit)
	}
	st := h.publish()
	if st.RefusedBy[RefusedRelayInbound] == 0 {
		t.Error("copies over the recipient's budget were not counted (relay_inbound)")
	}
	linked(t, h, 2, 3, attacker)
	h.flushUpdates()
	n.pump()
	converge(t, h, n.peers[2], n.peers[3])
}

// A member whose link is slower than its inbound relay budget loses relayed messages once its
// reliable queue holds the relay backlog, and keeps its link and the host's updates.
func TestRelayBacklogKeepsSlowMember(t *testing.T) {
	n, h, box, attacker, apps := relayRoom(t, 1)
	// An eighth of the inbound budget: without the backlog, the budget's relays alone pass the
	// high-water mark in ten seconds.
	slowLinks(n, 1, 16<<10)
	attackOne(t, n, box, attacker, 2, 200)
	st := h.publish()
	if st.RefusedBy[RefusedRelayBacklog] == 0 {
		t.Error("copies past the relay backlog were not counted (relay_backlog)")
	}
	if apps[2].msgs[attacker] == 0 {
		t.Error("member 2 received nothing relayed")
	}
	if st.Offenders != 0 {
		t.Errorf("host Offenders = %d, want 0", st.Offenders)
	}
	h.flushUpdates()
	n.pump()
	converge(t, h, n.peers[2])
	if v, _ := value(n.peers[2].w, box, 1100); v != 199 {
		t.Errorf("member 2 has the box at %d, want 199", v)
	}
}

// A relayed message over MaxMessage is refused at the host (a strike), and reaches no one.
func TestRelayOversizedRefused(t *testing.T) {
	n, h, _, attacker, apps := relayRoom(t, 1)
	frame := netmsg.AppendRelay(nil, &netmsg.Relay{Peer: uint64(Everyone), AppType: 200, Data: make([]byte, MaxMessage+1)})
	n.send(attacker, 1, link.Reliable, frame)
	if st := h.publish(); st.RefusedBy[RefusedApplication] != 1 {
		t.Errorf("host RefusedBy[application_size] = %d, want 1", st.RefusedBy[RefusedApplication])
	}
	if apps[2].msgs[attacker] != 0 || apps[1].msgs[attacker] != 0 {
		t.Error("an oversized relay was delivered")
	}
}

// The relay budgets default when unset, and a burst is never below one largest relayed message
// (else no such message could ever pass).
func TestRelayBudgetDefaults(t *testing.T) {
	base := Config{App: &stepApp{table: stepSchemas()}, Server: "http://127.0.0.1:1", Room: "r"}
	cfg, err := base.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RelayRate != DefaultRelayRate || cfg.RelayBurst != DefaultRelayBurst || cfg.RecvRelayRate != DefaultRecvRelayRate ||
		cfg.RecvRelayBurst != DefaultRecvRelayBurst || cfg.RelayBacklog != DefaultRelayBacklog {
		t.Errorf("defaults %d/%d %d/%d %d", cfg.RelayRate, cfg.RelayBurst, cfg.RecvRelayRate, cfg.RecvRelayBurst, cfg.RelayBacklog)
	}
	base.RelayBurst, base.RecvRelayBurst = 1, 1
	if cfg, _ = base.withDefaults(); cfg.RelayBurst != maxRelayFrame || cfg.RecvRelayBurst != maxRelayFrame {
		t.Errorf("bursts %d, %d below one largest relay %d", cfg.RelayBurst, cfg.RecvRelayBurst, maxRelayFrame)
	}
}
