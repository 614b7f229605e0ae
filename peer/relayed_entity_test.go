package peer

import (
	"testing"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
)

// Rule "correction window", for an entity the host never saw: a member's first batch relays a
// whole entity that the previous host spawned after this host stopped hearing it (another
// member's avatar). Its keys are admitted or refused together, by the authority the batch found:
// admitting the authority record must not turn the entity's later keys in the same batch into
// "another member's avatar" and refuse them. Seen in TestServeDedicatedHostAndEightBots: the
// avatar's properties were refused, its owner (which had left the previous host before the
// spawn reached it) took the property-less avatar from this host, and the relaying member kept
// the properties, apart from everyone.
func TestRuleRelayedEntityAdmittedWhole(t *testing.T) {
	// Host 1 runs term 2; member 3 held the state of term 1's host, so its first batch is relayed.
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	n.join(2, &stepApp{table: stepSchemas()}, 2, 1)
	n.recordSynced(2, 1)       // member 2 synced with the previous host, which spawned its avatar
	const avatar = Entity(600) // a number this host never allocated
	// Member 3 holds, from the previous host, an avatar of member 2 that host 1 lacks.
	n.joinWith(3, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.heldTerm = 1
		ts := w.r.Clock() + 10
		w.r.WriteAt(avatar, schema.ComponentMeta, ts, schema.AppendMeta(nil, stepSchemaAvatar, nil), false)
		w.r.WriteAt(avatar, schema.ComponentAuthority, ts, authority.AppendRecord(nil, authority.Record{Kind: authority.KindAvatar, Peer: 2}), false)
		w.r.WriteAt(avatar, avatarPos, ts, []byte{7, 0, 0, 0}, false)
	})
	for _, c := range []crdt.ComponentID{schema.ComponentMeta, schema.ComponentAuthority, avatarPos} {
		if _, _, ok, _ := h.w.r.Get(avatar, c); !ok {
			t.Errorf("host lacks component %d of the relayed avatar", c)
		}
	}
	if got := h.publish().Rejected; got != 0 {
		t.Errorf("host Rejected = %d, want 0: the relayed entity is admitted whole", got)
	}
	h.flushUpdates() // the network interval: the host sends its members what changed
	n.pump()
	if v, _ := value(n.peers[2].w, avatar, avatarPos); v != 7 {
		t.Errorf("member 2's avatar pos = %d, want 7 relayed by the host", v)
	}
}
