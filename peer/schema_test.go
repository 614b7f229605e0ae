package peer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// otherSchemas is an app that runs another schema table than the arena's.
type otherSchemas struct {
	peer.App
	table *schema.Table
}

func (a otherSchemas) Schemas() *schema.Table { return a.table }

// TestSchemaMismatchEndsRun: a member whose schema table differs from the host's does not
// reconnect forever; Run returns ErrSchemaMismatch naming both tables.
func TestSchemaMismatchEndsRun(t *testing.T) {
	r := newRoom(t, map[signaling.RoomID]signaling.RoomConfig{"arena": {PinnedHosts: []signaling.Identity{"host"}}})
	r.joinHost(arena.New(arena.Config{}))
	other := schema.MustTable(schema.Schema{ID: 77, Name: "other", Properties: []schema.Property{{Name: "x", Component: 7000, Size: 4}}})
	r.join("bot", signaling.KindBot, otherSchemas{App: arena.New(arena.Config{}), table: other})
	var err error
	select {
	case err = <-r.errs:
	case <-time.After(20 * time.Second):
		t.Fatal("Run of the mismatched member did not return")
	}
	if !errors.Is(err, peer.ErrSchemaMismatch) {
		t.Fatalf("Run = %v, want ErrSchemaMismatch", err)
	}
	for _, fp := range []uint64{arena.Schemas().Fingerprint(), other.Fingerprint()} {
		if !strings.Contains(err.Error(), fmt.Sprintf("%016x", fp)) {
			t.Errorf("error %q does not name schema table %016x", err, fp)
		}
	}
}
