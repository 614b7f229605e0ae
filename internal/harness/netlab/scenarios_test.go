package netlab_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/harness/netlab"
)

// arenaEntities is what every replica of the arena holds: the room entity, 8 boxes and one
// avatar per member that is not a dedicated host.
func arenaEntities(avatars int) int { return 1 + 8 + avatars }

// TestLab2HostAcrossNATs is the lab's scenario 2 (doc.go), with exactly those
// flags: `concord host` behind symmetric NAT A and `concord bot -n 4` behind symmetric NAT B can
// only meet through the server's embedded TURN relay; they do, every link says relay, all five
// replicas converge to one hash under the host's first term, and the host stays host.
func TestLab2HostAcrossNATs(t *testing.T) {
	lab := netlab.Get(t)
	bin := concord(t)
	serve(t, lab, "--dedicated-host=false")
	begin := time.Now()
	start(t, lab.A.NS, "host", bin, "host", "--server", serverURL, "--room", "arena")
	term := waitHost(t, "host")
	start(t, lab.B.NS, "bots", bin, "bot", "--server", serverURL, "--room", "arena", "-n", "4", "--move-for", "8s")
	r := converged(t, 5, arenaEntities(4), 60*time.Second, func(r *room) error {
		if r.Term != term || r.hostMember().Kind != "host" {
			return fmt.Errorf("the host changed (term %d, first %d)", r.Term, term)
		}
		return allRelayed(r)
	})
	// /metrics tells the operator the same: four members on relayed pairs, live allocations, and
	// bytes through the relay.
	relayed := 0.0
	for labels, v := range metrics(t, "concord_members_by_candidate") {
		if strings.Contains(labels, `"relay"`) {
			relayed += v
		}
	}
	allocs, bytes := metric(t, "concord_turn_allocations"), 0.0
	for _, v := range metrics(t, "concord_turn_relayed_bytes_total") {
		bytes += v
	}
	if relayed != 4 || allocs < 1 || bytes == 0 {
		t.Errorf("/metrics: %v members on relayed pairs (want 4), %v TURN allocations, %v relayed bytes", relayed, allocs, bytes)
	}
	t.Logf("host behind NAT A, 4 bots behind NAT B: converged through the relay in %v (bots moved 8 s); /metrics: %v members relayed, %v allocations, %.0f bytes relayed: %v",
		time.Since(begin).Round(time.Millisecond), relayed, allocs, bytes, r)
}

// TestLab4UDPBlocked is scenario 4: a bot in home C, whose router drops all UDP, reaches the host
// through the TURN server over TCP, and syncs: a `concord host` on the public side, then the
// server's own dedicated host (which the relay reaches on the server's own address).
func TestLab4UDPBlocked(t *testing.T) {
	lab := netlab.Get(t)
	bin := concord(t)
	for _, dedicated := range []bool{false, true} {
		name := "public concord host"
		if dedicated {
			name = "dedicated host"
		}
		t.Run(name, func(t *testing.T) {
			serve(t, lab, fmt.Sprintf("--dedicated-host=%v", dedicated))
			if !dedicated {
				start(t, lab.Public, "host", bin, "host", "--server", serverURL, "--room", "arena")
			}
			waitHost(t, "host")
			begin := time.Now()
			start(t, lab.C.NS, "bot", bin, "bot", "--server", serverURL, "--room", "arena", "-n", "1", "--move-for", "2s")
			r := converged(t, 2, arenaEntities(1), 45*time.Second, func(r *room) error {
				for _, m := range r.Members {
					// UDP cannot leave home C: its end of the pair can only be a relay reached over TCP.
					if m.PeerIndex != r.Host && (m.Link == nil || m.Link.Local != "relay") {
						return fmt.Errorf("the bot's link is %v, want a local relay", m.Link)
					}
				}
				return nil
			})
			t.Logf("bot behind a UDP-dropping NAT synced with the %s through TURN over TCP in %v: %v", name, time.Since(begin).Round(time.Millisecond), r)
		})
	}
}
