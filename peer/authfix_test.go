package peer

import (
	"testing"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt/schema"
)

// Rule "correction window", a record the new host refuses: a survivor relays a lock naming
// itself on an entity that this host, restored from an older checkpoint, lacks (a lock of the
// previous host's goes back to this host; only a survivor's own avatar comes back,
// TestSurvivorAvatarComesBack). The record is refused (a member never hands itself a lock), and
// this host re-asserts its own state of the entity over it, so the survivor converges instead of
// sending it again at every digest (seen in the cluster lab: one room's bot apart from its host
// for minutes, refused again and again).
func TestRuleRelayedOwnLockRefusedAndConverged(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	const old = Entity(600) // an entity member 3 held a lock on under the previous host
	m := n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.heldTerm = 1
		ts := w.r.Clock() + 10
		w.r.WriteAt(old, schema.ComponentMeta, ts, schema.AppendMeta(nil, stepSchemaAvatar, nil), false)
		w.r.WriteAt(old, schema.ComponentAuthority, ts, authority.AppendRecord(nil, authority.Record{Kind: authority.KindLock, Peer: 3}), false)
		w.r.WriteAt(old, avatarPos, ts, []byte{7, 0, 0, 0}, false)
	})
	if rec := h.w.AuthorityRecord(old); rec.Kind != authority.KindHost {
		t.Fatalf("the host adopted the record %+v its sender handed itself", rec)
	}
	n.converge(h, m, 5)
	if refused := h.publish().Refused; refused != 1 {
		t.Errorf("the host refused %d inputs, want the one record (not again at every digest)", refused)
	}
}
