package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/signaling"
)

// The placement tests run the real room directory (durable.Directory) on an in-memory bucket
// (memKV) with a manual clock: leases expire when the test moves the clock, renewals and passes
// run when the test calls them, so every step is deterministic and the tests take milliseconds.

const testTTL = 6 * time.Second

// placeCluster is a test cluster: nodes sharing one bucket, one clock and one view of who is
// alive (the presence heartbeats, Node.Alive).
type placeCluster struct {
	t     *testing.T
	kv    *memKV
	clock *manualClock
	rooms []signaling.RoomID
	nodes map[string]*placeNode

	mu    sync.Mutex // guards alive and broken
	alive map[string]bool
	// broken rooms fail to start with ErrRoomBroken on the named node.
	broken map[string]signaling.RoomID
}

// placeNode is one node: its directory, its placement and the hosts placement started.
type placeNode struct {
	c    *placeCluster
	name string
	dir  *durable.Directory
	p    *Placement

	mu     sync.Mutex // guards hosts, starts
	hosts  map[signaling.RoomID]*fakeHost
	starts int
	// notYet makes the next Start of a room fail as "not yet" (a checkpoint not readable).
	notYet map[signaling.RoomID]bool
}

type fakeHost struct {
	done chan struct{}
	once sync.Once
	stop func()
}

func (h *fakeHost) Done() <-chan struct{} { return h.done }
func (h *fakeHost) Stop()                 { h.once.Do(func() { close(h.done); h.stop() }) }

func newPlaceCluster(t *testing.T, rooms int) *placeCluster {
	c := &placeCluster{t: t, kv: newMemKV(), clock: newManualClock(), nodes: map[string]*placeNode{},
		alive: map[string]bool{}, broken: map[string]signaling.RoomID{}}
	for i := range rooms {
		c.rooms = append(c.rooms, signaling.RoomID(fmt.Sprintf("room-%d", i)))
	}
	return c
}

// start starts (or restarts) a node with a fresh directory and placement, alive. configured is
// PlacementConfig.Nodes, warm-up included; warm-up is 0 unless configured > 0.
func (c *placeCluster) start(name string, configured int) *placeNode {
	c.t.Helper()
	n := &placeNode{c: c, name: name, hosts: map[signaling.RoomID]*fakeHost{}, notYet: map[signaling.RoomID]bool{}}
	log := zerolog.New(zerolog.NewTestWriter(c.t)).Level(zerolog.WarnLevel).With().Str("node", name).Logger()
	warmup := time.Nanosecond
	if configured > 0 {
		warmup = DefaultWarmup
	}
	n.p = NewPlacement(PlacementConfig{Rooms: c.rooms, Start: n.startHost, Nodes: configured, Warmup: warmup,
		Alive: c.aliveNodes, Clock: c.clock, Logger: log})
	dir, err := durable.NewDirectory(c.kv, durable.DirectoryConfig{Node: name, TTL: testTTL, Renew: -1, Now: c.clock.Now,
		Keep: n.p.Keep, Lost: func(signaling.RoomID) { n.p.Poke() }, Freed: func(signaling.RoomID) { n.p.Poke() }, Logger: log})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(dir.Close)
	n.dir = dir
	n.p.attach(dir, nil)
	n.p.started = c.clock.Now()
	c.nodes[name] = n
	c.setAlive(name, true)
	return n
}

func (c *placeCluster) setAlive(name string, alive bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alive[name] = alive
}

func (c *placeCluster) aliveNodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n, ok := range c.alive {
		if ok {
			out = append(out, n)
		}
	}
	return out
}

func (n *placeNode) startHost(_ context.Context, room signaling.RoomID) (Host, error) {
	n.c.mu.Lock()
	broken := n.c.broken[n.name] == room
	n.c.mu.Unlock()
	if broken {
		return nil, fmt.Errorf("%w: room %q: scene: byte offset 3", ErrRoomBroken, room)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notYet[room] {
		delete(n.notYet, room)
		return nil, errors.New("checkpoint not readable yet")
	}
	if n.hosts[room] != nil {
		n.c.t.Errorf("%s starts a second host of %s", n.name, room)
	}
	h := &fakeHost{done: make(chan struct{})}
	h.stop = func() {
		n.mu.Lock()
		delete(n.hosts, room)
		n.mu.Unlock()
	}
	n.hosts[room] = h
	n.starts++
	return h, nil
}

func (n *placeNode) startCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.starts
}

// hosted lists the rooms whose host runs on n, sorted.
func (n *placeNode) hosted() []signaling.RoomID {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Sorted(maps.Keys(n.hosts))
}

// settle waits until every live directory's watcher has seen every write to the bucket (the
// one asynchronous step of a directory).
func (c *placeCluster) settle(nodes ...*placeNode) {
	c.t.Helper()
	poll.Until(c.t, 5*time.Second, "the directories see the bucket", func() error {
		want := c.kv.revisions()
		for _, n := range nodes {
			got := map[string]uint64{}
			for _, l := range n.dir.Leases() {
				got[durable.RoomKey(l.Room)] = l.Revision
			}
			if !maps.Equal(got, want) {
				return fmt.Errorf("%s sees %v, the bucket holds %v", n.name, got, want)
			}
		}
		return nil
	})
}

// step moves the clock by d, then each of nodes renews its leases (its directory's renewal
// loop) and makes one placement pass, in the order given.
func (c *placeCluster) step(d time.Duration, nodes ...*placeNode) {
	c.t.Helper()
	c.clock.Advance(d)
	for _, n := range nodes {
		n.dir.RenewAll(context.Background())
	}
	for _, n := range nodes {
		c.settle(nodes...)
		n.p.pass(context.Background())
	}
	c.settle(nodes...)
}

// owners maps each room to the node whose host runs it; a room hosted twice fails the test.
func (c *placeCluster) owners() map[signaling.RoomID]string {
	c.t.Helper()
	out := map[signaling.RoomID]string{}
	for _, n := range c.nodes {
		for _, room := range n.hosted() {
			if other, ok := out[room]; ok {
				c.t.Fatalf("room %s hosted on %s and %s", room, other, n.name)
			}
			out[room] = n.name
		}
	}
	return out
}

// Two nodes spread four rooms two and two; each runs the hosts of the rooms it holds.
func TestPlacementSpreads(t *testing.T) {
	c := newPlaceCluster(t, 4)
	a, b := c.start("a", 0), c.start("b", 0)
	c.step(0, a, b)
	if len(a.hosted()) != 2 || len(b.hosted()) != 2 {
		t.Fatalf("a hosts %v, b hosts %v: want two each", a.hosted(), b.hosted())
	}
	for room, node := range c.owners() {
		if !c.nodes[node].dir.Owns(room) {
			t.Errorf("%s hosts %s without its lease", node, room)
		}
	}
}

// A node dies (no renewal, no presence): its rooms stay where they are while its leases live,
// and move to the survivor in the pass after they expire, a TTL after its last renewal.
func TestPlacementDeadNodeRoomsMove(t *testing.T) {
	c := newPlaceCluster(t, 4)
	a, b := c.start("a", 0), c.start("b", 0)
	c.step(0, a, b)
	lastRenewal := c.clock.Now()
	c.setAlive("a", false) // a is killed: it neither renews nor passes again
	for c.clock.Now().Add(testTTL / 3).Before(lastRenewal.Add(testTTL)) {
		c.step(testTTL/3, b)
		if got := b.hosted(); len(got) != 2 {
			t.Fatalf("at +%v, before a's leases expire, b hosts %v", c.clock.Now().Sub(lastRenewal), got)
		}
	}
	c.step(lastRenewal.Add(testTTL).Sub(c.clock.Now()), b) // the moment a's leases expire
	if got := b.hosted(); !slices.Equal(got, c.rooms) {
		t.Fatalf("a TTL after a's last renewal b hosts %v, want every room", got)
	}
	for _, room := range c.rooms {
		if !b.dir.Owns(room) {
			t.Errorf("b hosts %s without its lease", room)
		}
	}
}

// Leases renewed in time keep every room where it is, for many TTLs, also when a node's presence
// is not heard (its live leases count it).
func TestPlacementRenewedNothingMoves(t *testing.T) {
	c := newPlaceCluster(t, 5)
	a, b := c.start("a", 0), c.start("b", 0)
	c.step(0, a, b)
	before := c.owners()
	if len(before) != 5 {
		t.Fatalf("placed %v", before)
	}
	writes := c.kv.writeCount()
	c.setAlive("a", false) // presence lost, leases still renewed
	for range 30 {
		c.step(testTTL/3, a, b)
	}
	if after := c.owners(); !maps.Equal(after, before) {
		t.Fatalf("rooms moved: %v, then %v", before, after)
	}
	if a.startCount()+b.startCount() != 5 {
		t.Fatalf("%d host starts, want the first 5 only", a.startCount()+b.startCount())
	}
	// Only renewals were written: 5 leases, 30 rounds.
	if got := c.kv.writeCount() - writes; got != 5*30 {
		t.Fatalf("%d writes to the bucket, want %d renewals", got, 5*30)
	}
}

// Two nodes race for the same rooms (passes at the same moment, each wanting every room): each
// room ends with exactly one lease holder, and only the holder starts its host.
func TestPlacementRace(t *testing.T) {
	for round := range 20 {
		c := newPlaceCluster(t, 3)
		// Warm-up counts 1 node: each wants every room.
		a, b := c.start("a", 0), c.start("b", 0)
		c.setAlive("a", false)
		c.setAlive("b", false)
		var wg sync.WaitGroup
		for _, n := range []*placeNode{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.p.pass(context.Background())
			}()
		}
		wg.Wait()
		c.settle(a, b)
		owners := c.owners() // fails on a room hosted twice
		for _, room := range c.rooms {
			winner, hosted := owners[room]
			if !hosted {
				t.Fatalf("round %d: %s hosted nowhere", round, room)
			}
			if a.dir.Owns(room) == b.dir.Owns(room) {
				t.Fatalf("round %d: %s owned by both or neither", round, room)
			}
			if !c.nodes[winner].dir.Owns(room) {
				t.Fatalf("round %d: %s hosted on %s, the loser", round, room, winner)
			}
		}
		if n := a.startCount() + b.startCount(); n != len(c.rooms) {
			t.Fatalf("round %d: %d host starts for %d rooms", round, n, len(c.rooms))
		}
	}
}

// A node that stops gracefully stops its hosts and hands its leases back (Node.Close): the other
// node's directory sees the releases and pokes its placement, which takes the rooms at once,
// without waiting for expiry or its next interval.
func TestPlacementStopHandsOver(t *testing.T) {
	c := newPlaceCluster(t, 4)
	a, b := c.start("a", 0), c.start("b", 0)
	c.step(0, a, b)
	mine := a.hosted()
	if len(mine) != 2 {
		t.Fatalf("a hosts %v", mine)
	}
	a.p.stopAll() // Run's end: the hosts stop first (each queues its last checkpoint)
	if got := a.hosted(); len(got) != 0 {
		t.Fatalf("a still hosts %v after stopping", got)
	}
	for _, room := range mine {
		if a.p.Keep(room) {
			t.Fatalf("a keeps %s's lease for a host that stopped", room)
		}
	}
	handOver(a.dir, time.Second) // Node.Close
	c.setAlive("a", false)
	// b's directory sees the releases and pokes its placement: Run passes at once.
	poll.Until(t, 5*time.Second, "b's placement is poked", func() error {
		if len(b.p.poke) == 0 {
			return errors.New("not poked")
		}
		return nil
	})
	c.step(0, b) // the poked pass, no time later
	if got := b.hosted(); !slices.Equal(got, c.rooms) {
		t.Fatalf("right after a handed over, b hosts %v, want every room", got)
	}
}

// A node that comes back (restarted under its name after its leases expired) takes no room that
// another node placed meanwhile; the rooms stay with their hosts.
func TestPlacementReturningNodeDoesNotSteal(t *testing.T) {
	c := newPlaceCluster(t, 4)
	a, b := c.start("a", 0), c.start("b", 0)
	c.step(0, a, b)
	c.setAlive("a", false)
	a.dir.Close() // killed
	for range 4 {
		c.step(testTTL/3, b)
	}
	if got := b.hosted(); !slices.Equal(got, c.rooms) {
		t.Fatalf("b took over %v", got)
	}
	starts := b.startCount()
	a = c.start("a", 2) // back, counting both nodes while it warms up: a share of 2
	for range 10 {
		c.step(testTTL/3, a, b)
	}
	if got := a.hosted(); len(got) != 0 {
		t.Fatalf("the returning node took %v", got)
	}
	if got := b.hosted(); !slices.Equal(got, c.rooms) || b.startCount() != starts {
		t.Fatalf("b hosts %v after %d starts (had %d): rooms moved", got, b.startCount(), starts)
	}
}

// A room whose checkpoint or scene is bad on a node does not start there: its lease goes back at
// once and another node takes it; a room whose start fails for now is tried again at the next
// pass, its lease kept.
func TestPlacementBrokenAndRetried(t *testing.T) {
	c := newPlaceCluster(t, 2)
	a := c.start("a", 0)
	c.broken["a"] = "room-0"
	a.notYet["room-1"] = true
	c.step(0, a)
	if got := a.hosted(); len(got) != 0 {
		t.Fatalf("a hosts %v", got)
	}
	if a.dir.Holds("room-0") {
		t.Fatal("a kept the lease of a room it cannot open")
	}
	if !a.dir.Owns("room-1") {
		t.Fatal("a let go of a room whose start is only delayed")
	}
	c.clock.Advance(testTTL / 3)
	a.dir.RenewAll(context.Background())
	if !a.dir.Owns("room-1") {
		t.Fatal("a's renewal released the lease of a room whose host is to start at the next pass")
	}
	c.step(0, a)
	if got := a.hosted(); !slices.Equal(got, []signaling.RoomID{"room-1"}) {
		t.Fatalf("a hosts %v, want room-1 (retried) and not room-0 (broken)", got)
	}
	b := c.start("b", 0)
	c.step(testTTL/3, a, b)
	if got := b.hosted(); !slices.Equal(got, []signaling.RoomID{"room-0"}) {
		t.Fatalf("b hosts %v, want the room a could not open", got)
	}
}

// Run passes at once, again at each Interval of the clock and at each Poke, stops its hosts when
// its context ends, and a host that ended on its own starts again.
func TestPlacementRun(t *testing.T) {
	c := newPlaceCluster(t, 1)
	a := c.start("a", 0)
	a.notYet["room-0"] = true // the first pass does not start it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.p.Run(ctx)
	}()
	poll.Until(t, 5*time.Second, "the first pass acquires the room", func() error {
		if !a.dir.Owns("room-0") {
			return errors.New("not yet")
		}
		return nil
	})
	// The next pass comes with the clock: advance until it has run (Run may still be arming
	// its timer when the clock first moves).
	poll.Until(t, 5*time.Second, "a pass an interval later starts the host", func() error {
		c.clock.Advance(testTTL / 3)
		if len(a.hosted()) != 1 {
			return errors.New("not started")
		}
		return nil
	})
	a.mu.Lock()
	h := a.hosts["room-0"]
	a.mu.Unlock()
	h.Stop() // the host ends on its own
	a.p.Poke()
	poll.Until(t, 5*time.Second, "a poked pass starts it again", func() error {
		if n := a.startCount(); n != 2 || len(a.hosted()) != 1 {
			return fmt.Errorf("%d starts", n)
		}
		return nil
	})
	cancel()
	<-done
	if got := a.hosted(); len(got) != 0 || a.p.Keep("room-0") {
		t.Fatalf("after Run, a hosts %v", got)
	}
}

// A node cut off from the bucket past its leases' expiry loses its rooms to another node; its
// first renewal that reaches the bucket finds them taken, and its next pass stops their hosts.
func TestPlacementLostLeaseStopsHost(t *testing.T) {
	c := newPlaceCluster(t, 2)
	a, b := c.start("a", 0), c.start("b", 0)
	c.step(0, a, b)
	if len(a.hosted()) != 1 {
		t.Fatalf("a hosts %v", a.hosted())
	}
	c.setAlive("a", false)
	for range 3 { // a neither renews nor is heard: b takes its room at expiry
		c.step(testTTL/3, b)
	}
	if got := b.hosted(); !slices.Equal(got, c.rooms) {
		t.Fatalf("b hosts %v", got)
	}
	a.dir.RenewAll(context.Background()) // the bucket answers again: the lease is lost
	a.p.pass(context.Background())
	if got := a.hosted(); len(got) != 0 {
		t.Fatalf("a still hosts %v, whose lease b holds", got)
	}
	c.owners()
}
