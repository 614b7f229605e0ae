package migrationcheck

import (
	"strings"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/peer"
)

func TestCheck(t *testing.T) {
	box, avatar := crdt.NewEntity(600, 0), crdt.NewEntity(601, 0)
	rec := NewView()
	rec.Keys[Key{box, 1200}] = 10
	rec.Keys[Key{avatar, 1100}] = 7
	rec.Deleted[700] = 2
	rec.Live[box], rec.Live[avatar] = true, true
	noVanish := func(peer.Entity) bool { return false }

	good := NewView()
	good.Absorb(rec)
	good.Keys[Key{box, 1200}] = 12
	if v := Check(rec, good, noVanish); len(v) != 0 {
		t.Fatalf("a dominating view violates: %v", v)
	}
	for name, tc := range map[string]struct {
		mutate func(*View)
		want   string
	}{
		"older timestamp":    {func(v *View) { v.Keys[Key{box, 1200}] = 9 }, "a survivor held 10"},
		"key lost":           {func(v *View) { delete(v.Keys, Key{avatar, 1100}) }, "lost"},
		"deletion forgotten": {func(v *View) { v.Deleted[700] = 1 }, "forgotten"},
		"entity vanished":    {func(v *View) { delete(v.Live, avatar) }, "vanished"},
		"entity deleted": {func(v *View) {
			delete(v.Keys, Key{avatar, 1100})
			v.Deleted[601] = 0
		}, "was deleted"},
	} {
		t.Run(name, func(t *testing.T) {
			conv := NewView()
			conv.Absorb(good)
			tc.mutate(conv)
			v := Check(rec, conv, noVanish)
			if len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), tc.want) {
				t.Fatalf("violations %q, want one mentioning %q", v, tc.want)
			}
		})
	}
	// The avatar of a member that left may vanish, and only it.
	conv := NewView()
	conv.Absorb(good)
	delete(conv.Keys, Key{avatar, 1100})
	delete(conv.Live, avatar)
	conv.Deleted[601] = 0
	if v := Check(rec, conv, func(e peer.Entity) bool { return e == avatar }); len(v) != 0 {
		t.Fatalf("an excused vanishing avatar violates: %v", v)
	}
}
