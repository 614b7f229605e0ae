package peer

import (
	"testing"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
)

// TestAvatarOfFollowsAuthority: AvatarOf's hint never outlives the authority it remembered.
func TestAvatarOfFollowsAuthority(t *testing.T) {
	w := newWorld(stepSchemas(), crdt.Config{})
	avatar := func(p PeerIndex) authority.Record {
		return authority.Record{Kind: authority.KindAvatar, Peer: authority.PeerIndex(p)}
	}
	w.ents[10] = &entityInfo{auth: avatar(2)}
	w.ents[11] = &entityInfo{auth: avatar(3)}
	if e, ok := w.AvatarOf(2); !ok || e != 10 {
		t.Fatalf("AvatarOf(2) = %d, %v; want 10", e, ok)
	}
	// The avatar of 2 becomes someone else's entity, and 2 gets another one.
	w.ents[10].auth = avatar(4)
	w.ents[12] = &entityInfo{auth: avatar(2)}
	if e, ok := w.AvatarOf(2); !ok || e != 12 {
		t.Fatalf("after the change AvatarOf(2) = %d, %v; want 12", e, ok)
	}
	if e, ok := w.AvatarOf(4); !ok || e != 10 {
		t.Fatalf("AvatarOf(4) = %d, %v; want 10", e, ok)
	}
	delete(w.ents, 12)
	if e, ok := w.AvatarOf(2); ok {
		t.Fatalf("after the despawn AvatarOf(2) = %d; want none", e)
	}
	// Hints of peers asked about once stay bounded.
	for p := PeerIndex(100); p < 10000; p++ {
		w.ents[Entity(p)] = &entityInfo{auth: avatar(p)}
		w.AvatarOf(p)
		delete(w.ents, Entity(p))
	}
	if n := len(w.avatarHint); n > 2*len(w.ents)+65 {
		t.Fatalf("%d hints for %d entities", n, len(w.ents))
	}
}
