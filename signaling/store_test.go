package signaling

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
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

// gatedStore is a Store whose calls for one room block until released, and whose saves may fail
// a given number of times first: a JetStream that stalls or errors.
type gatedStore struct {
	memStore
	stuck   RoomID
	release chan struct{}
	entered chan struct{} // receives once per blocked call

	mu        sync.Mutex
	failSaves int // saves that fail before one succeeds
	attempts  int
}

func (s *gatedStore) LoadRoom(id RoomID) (RoomCounters, error) {
	if id == s.stuck {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.memStore.LoadRoom(id)
}

func (s *gatedStore) SaveRoom(id RoomID, c RoomCounters) error {
	s.mu.Lock()
	s.attempts++
	fail := s.failSaves > 0
	if fail {
		s.failSaves--
	}
	s.mu.Unlock()
	if fail {
		return errors.New("nats: timeout")
	}
	return s.memStore.SaveRoom(id, c)
}

// TestStoreStalledRoomDoesNotBlockHub: while the store does not answer for one room, joins to
// other rooms and GET /api/rooms go on; the stalled join completes once the store answers.
func TestStoreStalledRoomDoesNotBlockHub(t *testing.T) {
	st := &gatedStore{memStore: memStore{rooms: map[RoomID]RoomCounters{"stuck": {LastIndex: 70, Term: 4}}},
		stuck: "stuck", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	e := newEnv(t, Config{Store: st, StoreTimeout: time.Minute})
	type result struct {
		j   Joined
		err error
	}
	stalled := make(chan result, 1)
	go func() {
		c, err := e.dialErr(JoinOptions{Room: "stuck", User: "a"}, e.clientConfig())
		if err != nil {
			stalled <- result{err: err}
			return
		}
		stalled <- result{j: next[Joined](t, c)}
	}()
	<-st.entered // the load of "stuck" is under way and will not answer
	for i := range 3 {
		_, j := e.joined(JoinOptions{Room: RoomID(fmt.Sprint("free", i)), User: "b"})
		if j.Self != 1 || j.Term != 1 {
			t.Fatalf("join to a free room: index %d term %d", j.Self, j.Term)
		}
	}
	if n := len(e.rooms()); n != 4 {
		t.Fatalf("GET /api/rooms lists %d rooms while one loads, want 4", n)
	}
	select {
	case r := <-stalled:
		t.Fatalf("the join to the stalled room finished before its counters loaded: %+v", r)
	default:
	}
	close(st.release)
	r := <-stalled
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.j.Self <= 70 || r.j.Term <= 4 {
		t.Fatalf("the stalled room's join: index %d term %d, the store had index 70 term 4", r.j.Self, r.j.Term)
	}
}

// TestStoreLoadTimeout: a room whose counters do not load within StoreTimeout refuses its joins
// with server_busy (the server could otherwise issue an index or a term twice) and counts it.
func TestStoreLoadTimeout(t *testing.T) {
	st := &gatedStore{memStore: memStore{rooms: map[RoomID]RoomCounters{}}, stuck: "stuck",
		release: make(chan struct{}), entered: make(chan struct{}, 1)}
	e := newEnv(t, Config{Store: st, StoreTimeout: 200 * time.Millisecond})
	defer close(st.release) // before the server's Close, which waits for the call
	_, err := e.dialErr(JoinOptions{Room: "stuck", User: "a"}, e.clientConfig())
	if !errors.Is(err, ErrServerBusy) {
		t.Fatalf("join to a room whose store does not answer: %v, want server_busy", err)
	}
	if n := e.srv.Stats().StoreErrors; n != 1 {
		t.Fatalf("StoreErrors %d, want 1", n)
	}
	if n := len(e.rooms()); n != 0 {
		t.Fatalf("%d rooms open after the failed load, want 0", n)
	}
}

// TestStoreTermAnnouncedOnlyOnceSaved: a save that fails is retried, and no member hears of the
// new term (nor of its own index) until the store holds it.
func TestStoreTermAnnouncedOnlyOnceSaved(t *testing.T) {
	st := &gatedStore{memStore: memStore{rooms: map[RoomID]RoomCounters{}}, failSaves: 2}
	e := newEnv(t, Config{Store: st})
	_, j := e.joined(JoinOptions{Room: "r", User: "a"})
	st.mu.Lock()
	attempts := st.attempts
	st.mu.Unlock()
	saved, _ := st.memStore.LoadRoom("r")
	if attempts != 3 || saved.Term < j.Term || saved.LastIndex < j.Self {
		t.Fatalf("joined at index %d term %d after %d save attempts; the store holds %+v", j.Self, j.Term, attempts, saved)
	}
	if n := e.srv.Stats().StoreErrors; n != 2 {
		t.Fatalf("StoreErrors %d, want 2", n)
	}
}

// slowStore is a Store whose saves wait for the test: the first save of a room is under way while
// the test makes more joins.
type slowStore struct {
	memStore
	entered chan struct{} // receives once per save (the first 16)
	release chan struct{} // a save returns when it receives, or once it is closed
}

func (s *slowStore) SaveRoom(id RoomID, c RoomCounters) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.memStore.SaveRoom(id, c)
}

// TestStoreJoinDuringSave: members that join while the room's counters are being saved (their
// index within what that save covers) hear of the room once it is confirmed; their frames are not
// held behind a save that never starts.
func TestStoreJoinDuringSave(t *testing.T) {
	st := &slowStore{memStore: memStore{rooms: map[RoomID]RoomCounters{}}, entered: make(chan struct{}, 16), release: make(chan struct{}, 1)}
	e := newEnv(t, Config{Store: st})
	// The clients close first (their cleanups come later): the saves of the elections their leaving
	// makes go through, and the server's Close, which waits for them, returns.
	t.Cleanup(func() { close(st.release) })
	type result struct {
		j   Joined
		err error
	}
	joins := make(chan result, 2)
	join := func(user string) {
		c, err := e.dialErr(JoinOptions{Room: "r", User: user}, e.clientConfig())
		if err != nil {
			joins <- result{err: err}
			return
		}
		joins <- result{j: next[Joined](t, c)}
	}
	go join("a")
	<-st.entered // a's index and term are being saved
	go join("b") // b's index is within the save's reserve: nothing more to save
	checkFor(t, waitTimeout, func() error {
		if r := e.rooms(); len(r) != 1 || len(r[0].Members) != 2 {
			return fmt.Errorf("rooms %+v", r)
		}
		return nil
	})
	st.release <- struct{}{}
	for range 2 {
		if r := <-joins; r.err != nil || r.j.Self == 0 {
			t.Fatalf("join: %+v", r)
		}
	}
	select {
	case <-st.entered:
		t.Fatal("a second save, for counters the first covered")
	default:
	}
}
