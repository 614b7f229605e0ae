package peer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
)

// The survivors' correction window against testdata/peer/survivor_window.json, the cases the
// browser host checks too (web/test/survivor.test.js).
func TestSurvivorWindowVectors(t *testing.T) {
	var v struct {
		Open []struct {
			Why                   string
			Hello, Recorded, Term Term
			Open                  bool
		}
		Stamp []struct {
			Why             string
			TookOver, Stamp crdt.Timestamp
			OK              bool
		}
		Deletion []struct {
			Why           string
			Live, Version uint16
			HeldAtStart   bool
			OK            bool
		}
		Record []struct {
			Why        string
			Peer, Self PeerIndex
			Earlier    bool
			OK         bool
		}
		Avatar []struct {
			Why                         string
			Kind                        string
			Relayed, Lacked, Avatarless bool
			OK                          bool
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "testdata", "peer", "survivor_window.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Open) == 0 || len(v.Stamp) == 0 || len(v.Deletion) == 0 || len(v.Record) == 0 || len(v.Avatar) == 0 {
		t.Fatal("a section of the vectors is empty")
	}
	for _, c := range v.Open {
		if got := windowOpen(c.Hello, c.Recorded, c.Term); got != c.Open {
			t.Errorf("open %s: %v, want %v", c.Why, got, c.Open)
		}
	}
	for _, c := range v.Stamp {
		if got := c.Stamp <= windowCeiling(c.TookOver); got != c.OK {
			t.Errorf("stamp %s: %v, want %v", c.Why, got, c.OK)
		}
	}
	for _, c := range v.Deletion {
		if got := windowDeletionOK(c.Live, c.HeldAtStart, c.Version); got != c.OK {
			t.Errorf("deletion %s: %v, want %v", c.Why, got, c.OK)
		}
	}
	for _, c := range v.Record {
		if got := windowRecordOK(c.Peer, c.Self, c.Earlier); got != c.OK {
			t.Errorf("record %s: %v, want %v", c.Why, got, c.OK)
		}
	}
	kinds := map[string]authority.Kind{"host": authority.KindHost, "avatar": authority.KindAvatar, "lock": authority.KindLock}
	for _, c := range v.Avatar {
		kind, ok := kinds[c.Kind]
		if !ok {
			t.Fatalf("avatar %s: kind %q", c.Why, c.Kind)
		}
		if got := windowAvatarOK(kind, c.Relayed, c.Lacked, c.Avatarless); got != c.OK {
			t.Errorf("avatar %s: %v, want %v", c.Why, got, c.OK)
		}
	}
}
