package peer

import (
	"testing"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// Rule "correction window", a survivor's own avatar: the new host restored a checkpoint older
// than the avatar the previous host spawned for a member (a node of a cluster died a second after
// the member joined, before its room's next checkpoint). The survivor's answer to its sync
// snapshot brings the avatar back, with the record naming it, and the position it last wrote;
// it is not given a fresh avatar, nor a second one. Seen in TestLab8Cluster: the record was
// refused ("handing 523.0 to its sender"), the bot got a fresh avatar at the spawn point, and its
// last write was lost.
func TestSurvivorAvatarComesBack(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1) // host of term 2, from a world without member 2's avatar
	const avatar, second, lock = Entity(600), Entity(601), Entity(602)
	m := n.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) {
		w.heldTerm = 1 // it synced with term 1's host, which spawned its avatar
		ts := w.r.Clock() + 10
		for _, e := range []Entity{avatar, second, lock} {
			w.r.WriteAt(e, schema.ComponentMeta, ts, schema.AppendMeta(nil, stepSchemaAvatar, nil), false)
		}
		w.r.WriteAt(avatar, schema.ComponentAuthority, ts, authority.AppendRecord(nil, authority.Record{Kind: authority.KindAvatar, Peer: 2}), false)
		w.r.WriteAt(avatar, avatarPos, ts, []byte{7, 0, 0, 0}, false)
		// A second avatar and a lock naming itself: one avatar a member, and a lock goes back
		// to the host.
		w.r.WriteAt(second, schema.ComponentAuthority, ts, authority.AppendRecord(nil, authority.Record{Kind: authority.KindAvatar, Peer: 2}), false)
		w.r.WriteAt(lock, schema.ComponentAuthority, ts, authority.AppendRecord(nil, authority.Record{Kind: authority.KindLock, Peer: 2}), false)
	})
	if got, ok := h.w.AvatarOf(2); !ok || got != avatar {
		t.Fatalf("host: member 2's avatar is %v (%v), want %v, the one its answer brought back", got, ok, avatar)
	}
	if v, _ := value(h.w, avatar, avatarPos); v != 7 {
		t.Errorf("host: the avatar's pos = %d, want 7, where the member last put it", v)
	}
	avatars := 0
	for e := range h.w.ents {
		if rec := h.w.AuthorityRecord(e); rec.Kind == authority.KindAvatar && rec.Peer == 2 {
			avatars++
		}
	}
	if avatars != 1 {
		t.Errorf("host: member 2 has %d avatars, want 1", avatars)
	}
	if rec := h.w.AuthorityRecord(lock); rec.Kind != authority.KindHost {
		t.Errorf("host: the lock the member named itself holder of is %+v, want the host's", rec)
	}
	if got := h.publish().RefusedBy[RefusedCorrection]; got != 2 {
		t.Errorf("refused corrections = %d, want 2 (the second avatar and the lock)", got)
	}
	n.converge(h, m, 3)
	data, _, ok, deleted := m.w.r.Get(avatar, schema.ComponentAuthority)
	var rec authority.Record
	if _, err := authority.ConsumeRecord(data, &rec); !ok || deleted || err != nil || rec != (authority.Record{Kind: authority.KindAvatar, Peer: 2}) {
		t.Errorf("member 2 holds the record %+v of its avatar (held %v, deleted %v, %v)", rec, ok, deleted, err)
	}
}

// A survivor whose answer brings no avatar of its own (its avatar was in the checkpoint, or it
// had none) gets one when the answer is merged: the wait ends with the answer.
func TestSurvivorWithoutAvatarGetsOne(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	n.joinWith(2, &stepApp{table: stepSchemas()}, 2, 1, func(w *World) { w.heldTerm = 1 })
	if _, ok := h.w.AvatarOf(2); !ok {
		t.Fatal("host: the survivor has no avatar after its answer")
	}
	if hm := h.host.synced(2); hm == nil || hm.avatarAfterAnswer {
		t.Fatalf("host: the survivor still waits for its avatar (%v)", hm)
	}
}

// A survivor's next digest after its sync snapshot is its answer too, batch or not (it sends its
// corrections first, on the same ordered channel): the window closes, and its wait for an avatar
// ends with a fresh one. The browser host had kept the window open past the digest (web/test
// "a survivor's digest after its sync snapshot closes its window and ends its wait for an avatar").
func TestSurvivorDigestClosesWindow(t *testing.T) {
	n := newStepNet(t)
	h := n.join(1, &stepApp{table: stepSchemas()}, 2, 1)
	n.join(2, &stepApp{table: stepSchemas()}, 2, 1)
	hm := h.host.synced(2)
	if av, ok := h.w.AvatarOf(2); ok {
		if err := h.w.Despawn(av); err != nil { // as if this host had never spawned it
			t.Fatal(err)
		}
	}
	// As a survivor right after its sync snapshot: its window open, its avatar waiting.
	hm.answered, hm.acceptRelayed, hm.avatarAfterAnswer = false, true, true
	in := &inbox{dig: netmsg.Digest{Term: 2, Clock: uint32(hm.snapClock), Digests: make([]uint64, hm.buckets)}}
	if err := h.host.handle(hm.link, netmsg.TypeDigest, in); err != nil {
		t.Fatal(err)
	}
	if hm.acceptRelayed || hm.avatarAfterAnswer || !hm.answered {
		t.Fatalf("after the digest: window open %v, avatar waiting %v, answered %v", hm.acceptRelayed, hm.avatarAfterAnswer, hm.answered)
	}
	if _, ok := h.w.AvatarOf(2); !ok {
		t.Error("the survivor has no avatar after its digest")
	}
}
