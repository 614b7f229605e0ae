package peer

import (
	"testing"
	"time"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt/schema"
)

// Rule "correction window", an avatar the new host never knew: a survivor relays its own avatar
// (its authority record names it) that this host, restored from an older checkpoint, lacks. The
// record is refused (a member never hands itself an entity), and this host re-asserts its own
// state of the entity over it, so the survivor converges instead of sending it again at every
// digest (seen in the cluster lab: one room's bot apart from its host for minutes, refused again
// and again).
func TestRuleRelayedOwnAvatarRefusedAndConverged(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	const old = Entity(600) // member 3's avatar under the previous host
	m := n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.heldTerm = 1
		ts := w.r.Clock() + 10
		w.r.WriteAt(old, schema.ComponentMeta, ts, schema.AppendMeta(nil, stepSchemaAvatar, nil), false)
		w.r.WriteAt(old, schema.ComponentAuthority, ts, authority.AppendRecord(nil, authority.Record{Kind: authority.KindAvatar, Peer: 3}), false)
		w.r.WriteAt(old, avatarPos, ts, []byte{7, 0, 0, 0}, false)
	})
	if rec := h.w.AuthorityRecord(old); rec.Kind != authority.KindHost {
		t.Fatalf("the host adopted the record %+v its sender handed itself", rec)
	}
	for range 5 {
		h.flushUpdates()
		n.advance(2 * time.Second)
	}
	if got, want := m.w.r.Hash(), h.w.r.Hash(); got != want {
		t.Fatalf("member %x, host %x: the survivor stays apart", got, want)
	}
	if refused := h.publish().Refused; refused != 1 {
		t.Errorf("the host refused %d inputs, want the one record (not again at every digest)", refused)
	}
}
