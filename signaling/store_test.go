package signaling

import (
	"sync"
	"testing"
)

// memStore is a Store in a map, shared by the servers of one test as a data directory would be.
type memStore struct {
	mu    sync.Mutex
	rooms map[RoomID]RoomCounters
	saves int
}

func (s *memStore) LoadRoom(id RoomID) (RoomCounters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rooms[id], nil
}

func (s *memStore) SaveRoom(id RoomID, c RoomCounters) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rooms[id] = c
	s.saves++
	return nil
}

// TestStoreCountersSurviveRestart: a server that restarts on the same Store issues neither a peer
// index nor a term of the room again.
func TestStoreCountersSurviveRestart(t *testing.T) {
	st := &memStore{rooms: map[RoomID]RoomCounters{}}
	first := newEnv(t, Config{Store: st})
	var lastIndex PeerIndex
	var lastTerm Term
	for _, u := range []string{"a", "b", "c"} {
		c, j := first.joined(JoinOptions{Room: "r", User: u})
		lastIndex, lastTerm = max(lastIndex, j.Self), max(lastTerm, j.Term)
		defer c.Close()
	}
	if st.saves != 1 {
		t.Fatalf("%d saves for 3 joins and 1 election, want 1 (StoreReserve %d ahead)", st.saves, StoreReserve)
	}
	if got := st.rooms["r"]; got.LastIndex < lastIndex+StoreReserve-3 || got.Term != lastTerm {
		t.Fatalf("saved %+v after index %d term %d", got, lastIndex, lastTerm)
	}
	_ = first.srv.Close()

	second := newEnv(t, Config{Store: st})
	_, j := second.joined(JoinOptions{Room: "r", User: "d"})
	if j.Self <= lastIndex || j.Term <= lastTerm {
		t.Fatalf("after a restart: index %d term %d, the first server issued up to index %d term %d", j.Self, j.Term, lastIndex, lastTerm)
	}
	_, o := second.joined(JoinOptions{Room: "other", User: "d"})
	if o.Self != 1 || o.Term != 1 {
		t.Fatalf("a room the store never saw starts at index %d term %d, want 1 and 1", o.Self, o.Term)
	}
}
