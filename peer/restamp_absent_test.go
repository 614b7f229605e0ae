package peer

import (
	"testing"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt/schema"
)

// Rule "re-stamp", for a key the host does not hold: a member's rejected correction to a key of
// an entity that this host lacks altogether (the previous host wrote it after this one stopped
// hearing it, as in TestServeDedicatedHostAndEightBots when the pinned host preempts a bot) is
// deleted above the member's write. Rewriting only the entries the host holds left the key to
// the member for good: every repair snapshot drew the same correction, and the replicas never
// converged.
func TestRuleRestampKeyHostLacks(t *testing.T) {
	n, h, m, app := room12(t)
	if _, _, ok, _ := h.w.r.Get(app.box, schema.ComponentAuthority); ok {
		t.Fatal("test setup: the host holds an authority record for the box")
	}
	// room12 synced the member: its correction window is closed. It holds a record of the
	// host's box that the host never saw, stamped above the host's clock.
	written := m.w.r.Clock() + 10
	m.w.r.WriteAt(app.box, schema.ComponentAuthority, written, authority.AppendRecord(nil, authority.Record{}), false)
	n.advance(h.cfg.QuietPeriod)
	m.member.sendDigest() // the host repairs the bucket; the member answers with its record
	n.pump()
	if got := h.publish().Rejected; got != 1 {
		t.Fatalf("host Rejected = %d, want the correction rejected once", got)
	}
	_, ts, ok, deleted := m.w.r.Get(app.box, schema.ComponentAuthority)
	if !ok || !deleted || ts <= written {
		t.Fatalf("member's record: present %v deleted %v at %d; want deleted above its write at %d", ok, deleted, ts, written)
	}
	if hh, mh := h.publish().Hash, m.publish().Hash; hh != mh {
		t.Fatalf("member hash %016x, host %016x: the replicas stay apart", mh, hh)
	}
	// Converged: the next repair draws no correction.
	n.advance(h.cfg.QuietPeriod)
	m.member.sendDigest()
	n.pump()
	if got := h.publish().Rejected; got != 1 {
		t.Fatalf("host Rejected = %d after the next digest, want still 1", got)
	}
}
