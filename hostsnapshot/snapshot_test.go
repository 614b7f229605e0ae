package hostsnapshot

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// expectedSpawns counts the live entities of r whose meta names a schema of tab.
func expectedSpawns(r *crdt.Replica, tab *schema.Table) int {
	n := 0
	r.Range(func(e crdt.Entry) bool {
		if e.Component == schema.ComponentMeta && !e.Deleted {
			if id, _, ok := schema.ParseMeta(e.Data); ok {
				if _, ok := tab.Lookup(id); ok {
					n++
				}
			}
		}
		return true
	})
	return n
}

func TestRoundTripIntoEmptyReplica(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		src := richWorld(t, seed)
		if src.DeletedNumbers() < 4 || src.LiveEntities() < 120 {
			t.Fatalf("world too small: %d deleted numbers, %d live entities", src.DeletedNumbers(), src.LiveEntities())
		}
		hash := src.Hash()
		o := Options{
			Term: 7, LocalPeerIndex: 3, HostPeerIndex: 1,
			Peers: []netmsg.PeerInfo{{PeerIndex: 1, PeerID: "host"}, {PeerIndex: 3, PeerID: "me"}},
		}
		wire := encode(t, src, testTable, o)
		if src.Hash() != hash {
			t.Fatal("Build modified the replica")
		}
		s := decode(t, wire)
		if s.HostTime != uint64(src.Clock()) || s.LocalPeerIndex != 3 || s.HostPeerIndex != 1 || len(s.Peers) != 2 || s.Peers[1].PeerID != "me" {
			t.Fatalf("header: time %d local %d host %d peers %v", s.HostTime, s.LocalPeerIndex, s.HostPeerIndex, s.Peers)
		}
		if want := expectedSpawns(src, testTable); len(s.Spawns) != want {
			t.Fatalf("%d spawns, want %d", len(s.Spawns), want)
		}
		for _, sp := range s.Spawns {
			if sp.NetworkID>>32 != 0 {
				t.Fatalf("spawn network id %#x has upper bits", sp.NetworkID)
			}
		}

		dst := crdt.New(crdt.Config{})
		calls := 0
		info, corr, err := Apply(dst, testTable, s, countingMerge(dst, &calls), nil)
		if err != nil {
			t.Fatalf("seed %d: Apply: %v", seed, err)
		}
		requireSameState(t, dst, src)
		if len(corr) != 0 {
			t.Fatalf("seed %d: an empty receiver sent %d correction messages: %v", seed, len(messages(t, corr)), messages(t, corr)[:1])
		}
		if dst.Clock() != src.Clock() {
			t.Fatalf("receiver clock %d, want the host's %d", dst.Clock(), src.Clock())
		}
		if info.Term != 7 || info.Clock != src.Clock() || info.Fingerprint != testTable.Fingerprint() ||
			!info.Cover.IsAll() || info.Cover.Count() != DefaultBuckets || info.Spawns != len(s.Spawns) {
			t.Fatalf("info %+v", info)
		}
		if calls == 0 {
			t.Fatal("merge was never called")
		}
	}
}

// TestRoundTripHostOnlyDeletions checks a world with nothing but deleted entities and a replica
// with nothing at all.
func TestRoundTripEdgeWorlds(t *testing.T) {
	only := crdt.New(crdt.Config{})
	delEntity(t, only, crdt.NewEntity(512, 4))
	delEntity(t, only, crdt.NewEntity(0, 0))
	room := crdt.New(crdt.Config{})
	put(t, room, 0, compRoom, 3, nil) // an empty value on entity 0
	tomb(t, room, 0, compUnknown, 4)
	for name, src := range map[string]*crdt.Replica{"empty": crdt.New(crdt.Config{}), "deletions only": only, "room only": room} {
		t.Run(name, func(t *testing.T) {
			s := decode(t, encode(t, src, testTable, Options{}))
			if len(s.Spawns) != 0 {
				t.Fatalf("%d spawns", len(s.Spawns))
			}
			dst := crdt.New(crdt.Config{})
			_, corr, err := Apply(dst, testTable, s, dst.Merge, nil)
			if err != nil {
				t.Fatal(err)
			}
			requireSameState(t, dst, src)
			if len(corr) != 0 {
				t.Fatalf("corrections %x", corr)
			}
		})
	}
}

// TestBuildReusesSnapshot checks that Build overwrites a used HostSnapshot completely.
func TestBuildReusesSnapshot(t *testing.T) {
	big, small := richWorld(t, 4), crdt.New(crdt.Config{})
	put(t, small, crdt.NewEntity(512, 0), compUnknown, 1, []byte("x"))
	var s netmsg.HostSnapshot
	Build(&s, big, testTable, Options{Peers: []netmsg.PeerInfo{{PeerIndex: 1, PeerID: "a"}, {PeerIndex: 2, PeerID: "b"}}})
	Build(&s, small, testTable, Options{Peers: []netmsg.PeerInfo{{PeerIndex: 9, PeerID: "c"}}})
	if len(s.Spawns) != 0 || len(s.Peers) != 1 || s.Peers[0].PeerIndex != 9 || s.HostTime != 1 {
		t.Fatalf("reused snapshot kept old content: %d spawns, peers %v, time %d", len(s.Spawns), s.Peers, s.HostTime)
	}
	want := encode(t, small, testTable, Options{Peers: s.Peers})
	if got := netmsg.AppendHostSnapshot(nil, &s); !bytes.Equal(got, want) {
		t.Fatal("a reused snapshot encodes differently from a fresh one")
	}
}

// TestSpawnLayout pins how a spawn carries an entity: meta as schema id and creation data, and
// the update data as mask and values exactly as an Update would carry them.
func TestSpawnLayout(t *testing.T) {
	r := crdt.New(crdt.Config{})
	e := crdt.NewEntity(513, 2)
	put(t, r, e, schema.ComponentMeta, 10, schema.AppendMeta(nil, 1, []byte("cd")))
	put(t, r, e, 1100, 11, bytes.Repeat([]byte{0xaa}, 12))
	put(t, r, e, 1102, 12, []byte{1, 2, 3, 4})
	tomb(t, r, e, 1101, 13)
	s := decode(t, encode(t, r, testTable, Options{}))
	if len(s.Spawns) != 1 {
		t.Fatalf("%d spawns", len(s.Spawns))
	}
	sp := s.Spawns[0]
	want := append([]byte{0b101}, bytes.Repeat([]byte{0xaa}, 12)...)
	want = append(want, 1, 2, 3, 4)
	if sp.NetworkID != uint64(e) || sp.SchemaID != 1 || string(sp.CreationData) != "cd" || !bytes.Equal(sp.UpdateData, want) {
		t.Fatalf("spawn %+v, want update data %x", sp, want)
	}
	h, err := parseHostState(s.HostState)
	if err != nil {
		t.Fatal(err)
	}
	// Stamps: meta, then each property present, in property order.
	stamps := []uint32{le.Uint32(h.stamps), le.Uint32(h.stamps[4:]), le.Uint32(h.stamps[8:])}
	if len(h.stamps) != 12 || stamps[0] != 10 || stamps[1] != 11 || stamps[2] != 12 {
		t.Fatalf("stamps %v (%d bytes)", stamps, len(h.stamps))
	}
	// The stream: the implicit deletion of version 1 (version 2 is live), then the tombstone.
	ms := messages(t, h.stream)
	if len(ms) != 2 || ms[0].Type != crdt.DeleteEntity || ms[0].Entity != crdt.NewEntity(513, 1) ||
		ms[1].Type != crdt.DeleteComponent || ms[1].Component != 1101 || ms[1].Timestamp != 13 {
		t.Fatalf("stream %+v, want the implicit deletion and the tombstone", ms)
	}
}

func TestSpawnUpdateHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, id := range testTable.IDs() {
		s := lookup(t, testTable, id)
		w, _ := netmsg.MaskWidth(len(s.Properties))
		for range 20 {
			mask := rng.Uint32() & s.FullMask()
			vals := make([][]byte, len(s.Properties))
			for i := range vals {
				vals[i] = randValue(rng, s, i, 0)
			}
			data := AppendSpawnUpdate(nil, s, mask, func(i int) []byte { return vals[i] })
			// The update data of a spawn is an Update's mask and data.
			u := netmsg.Update{Width: w, Mask: mask, Data: data[w.Bytes():]}
			if err := u.CheckMask(len(s.Properties)); err != nil {
				t.Fatal(err)
			}
			var got uint32
			if err := SpawnValues(s, data, func(i int, v []byte) {
				got |= 1 << i
				if !bytes.Equal(v, vals[i]) {
					t.Fatalf("property %d = %x, want %x", i, v, vals[i])
				}
			}); err != nil {
				t.Fatalf("schema %d mask %#x: %v", id, mask, err)
			}
			if got != mask {
				t.Fatalf("values for %#x, want %#x", got, mask)
			}
		}
	}
}

// TestNoValueTravelsTwice makes every property value, creation data, unknown component value
// and append value unique and finds each exactly once in the encoded snapshot.
func TestNoValueTravelsTwice(t *testing.T) {
	const n = 400
	rng := rand.New(rand.NewPCG(11, 12))
	r := crdt.New(crdt.Config{})
	s := lookup(t, testTable, 6)
	ts := crdt.Timestamp(1)
	var values [][]byte
	for k := range n {
		e := crdt.NewEntity(uint16(512+k), uint16(k%3))
		creation := randBytes(rng, 10)
		put(t, r, e, schema.ComponentMeta, ts, schema.AppendMeta(nil, s.ID, creation))
		values = append(values, creation)
		for i, p := range s.Properties {
			v := randValue(rng, s, i, 8)
			put(t, r, e, p.Component, ts+1+crdt.Timestamp(i), v)
			values = append(values, v)
			_ = p
		}
		if k%5 == 0 {
			v := randBytes(rng, 14)
			put(t, r, e, compUnknown, ts, v)
			values = append(values, v)
		}
		if k%7 == 0 {
			v := randBytes(rng, 9)
			appendVal(t, r, e, compLog, ts, v)
			values = append(values, v)
		}
		ts += 4
	}
	wire := encode(t, r, testTable, Options{})
	for _, v := range values {
		if c := bytes.Count(wire, v); c != 1 {
			t.Fatalf("value %x appears %d times in the snapshot", v, c)
		}
	}
	// The per-value overhead of a spawn is its stamp (4 bytes) and, for a variable value, its
	// length (2 bytes): far below the 24-byte PUT_COMPONENT header it would take in a stream.
	if state := len(r.AppendState(nil)); len(wire) >= state*3/4 {
		t.Fatalf("snapshot %d bytes, state stream %d bytes: spawns save too little", len(wire), state)
	}
}

// divergedPair returns a host and a receiver that share a world and then diverge in every way
// a migration meets: newer and older values on both sides, equal stamps with different values,
// keys, entities, deletions and appends only one side has, and a reused number on each side.
func divergedPair(t testing.TB, seed uint64) (host, recv *crdt.Replica) {
	t.Helper()
	base := richWorld(t, seed)
	host, recv = clone(t, base), clone(t, base)
	rng := rand.New(rand.NewPCG(seed, 77))
	c := base.Clock()
	player := lookup(t, testTable, 1)
	var live []crdt.Entity
	base.Range(func(e crdt.Entry) bool {
		if e.Component == 1100 && !e.Deleted && len(e.Data) == 12 && e.Entity.Number() >= 512 {
			live = append(live, e.Entity)
		}
		return true
	})
	if len(live) < 12 {
		t.Fatalf("only %d live players", len(live))
	}
	// Receiver newer on some keys, host newer on others.
	put(t, recv, live[0], 1100, c+5, randBytes(rng, 12))
	put(t, host, live[0], 1102, c+6, randBytes(rng, 4))
	put(t, host, live[1], 1100, c+7, randBytes(rng, 12))
	put(t, recv, live[1], 1102, c+8, randBytes(rng, 4))
	tomb(t, recv, live[2], 1101, c+9)
	tomb(t, host, live[3], 1101, c+9)
	// Equal stamps, different values: the tie-break decides, both ways.
	put(t, host, live[4], 1100, c+10, bytes.Repeat([]byte{1}, 12))
	put(t, recv, live[4], 1100, c+10, bytes.Repeat([]byte{2}, 12))
	put(t, host, live[5], 1100, c+10, bytes.Repeat([]byte{4}, 12))
	put(t, recv, live[5], 1100, c+10, bytes.Repeat([]byte{3}, 12))
	put(t, host, live[6], compUnknown, c+11, []byte("longer"))
	tomb(t, recv, live[6], compUnknown, c+11)
	// Keys only one side has, on shared and on new entities.
	put(t, recv, live[7], compUnknown, c+12, []byte("recv only"))
	put(t, recv, live[7], schema.ComponentAuthority, c+12, []byte("auth"))
	put(t, host, live[8], compUnknown, c+12, []byte("host only"))
	spawn(t, recv, rng, crdt.NewEntity(900, 0), player, player.FullMask(), c+13, 0)
	spawn(t, host, rng, crdt.NewEntity(901, 0), player, 1, c+13, 0)
	put(t, recv, crdt.NewEntity(902, 0), compUnknown, c+14, []byte("no meta"))
	// Deletions only one side has; a number reused with a higher version on each side.
	delEntity(t, recv, live[9])
	delEntity(t, host, live[10])
	delEntity(t, recv, crdt.NewEntity(950, 3))
	spawn(t, recv, rng, crdt.NewEntity(live[11].Number(), live[11].Version()+1), player, 5, c+15, 0)
	spawn(t, host, rng, crdt.NewEntity(851, 4), player, 3, c+15, 0)
	// Appends only one side has, and one both have at different stamps.
	appendVal(t, recv, 0, compLog, c+16, []byte("recv said"))
	appendVal(t, host, 0, compLog, c+16, []byte("host said"))
	appendVal(t, recv, crdt.NewEntity(800, 0), compLog, c+17, []byte("a")) // "a" exists at a lower stamp
	appendVal(t, recv, live[7], compLog, c+18, []byte("new set"))
	recv.ObserveClock(c + 50)
	return host, recv
}

// join returns the state both replicas converge to: a replica that merged both exports.
func join(t testing.TB, a, b *crdt.Replica) *crdt.Replica {
	t.Helper()
	j := crdt.New(crdt.Config{})
	for _, r := range []*crdt.Replica{a, b} {
		if _, err := j.MergeStream(r.AppendState(nil)); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

func TestApplyMergesAndCorrects(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		host, recv := divergedPair(t, seed)
		want := join(t, host, recv)
		if want.Hash() == host.Hash() || want.Hash() == recv.Hash() {
			t.Fatal("the pair did not diverge both ways")
		}
		hostClock, recvClock := host.Clock(), recv.Clock()
		s := decode(t, encode(t, host, testTable, Options{Term: 2}))

		_, corr, err := Apply(recv, testTable, s, recv.Merge, nil)
		if err != nil {
			t.Fatal(err)
		}
		requireSameState(t, recv, want)
		if recv.Clock() != max(hostClock, recvClock) {
			t.Fatalf("receiver clock %d, want %d", recv.Clock(), max(hostClock, recvClock))
		}
		if len(corr) == 0 {
			t.Fatal("no corrections although the receiver holds newer state")
		}
		// The corrections are the receiver's winning entries: every one is a real difference.
		for _, m := range messages(t, corr) {
			if o := clone(t, host).Merge(&m); o != crdt.Applied {
				t.Fatalf("correction %v %v/%d changes nothing on the host (%v)", m.Type, m.Entity, m.Component, o)
			}
		}
		// Merged into the host, the corrections make it equal to the receiver.
		if _, err := host.MergeStream(corr); err != nil {
			t.Fatal(err)
		}
		requireSameState(t, host, recv)

		// Applying the same snapshot again changes nothing and yields the same corrections.
		hash := recv.Hash()
		_, corr2, err := Apply(recv, testTable, s, recv.Merge, make([]byte, 0, 8))
		if err != nil {
			t.Fatal(err)
		}
		if recv.Hash() != hash {
			t.Fatal("a second Apply changed the receiver")
		}
		if !bytes.Equal(corr, corr2) {
			t.Fatalf("a second Apply gave other corrections: %d vs %d bytes", len(corr2), len(corr))
		}
	}
}

// TestApplyAppendsCorrections checks that Apply appends to the corrections buffer it is given.
func TestApplyAppendsCorrections(t *testing.T) {
	host, recv := divergedPair(t, 5)
	s := decode(t, encode(t, host, testTable, Options{}))
	prefix := []byte("prefix")
	_, corr, err := Apply(clone(t, recv), testTable, s, func(m *crdt.Message) crdt.Outcome { return crdt.NoChange }, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(corr, prefix) || len(corr) == len(prefix) {
		t.Fatalf("corrections %q do not extend the buffer", corr[:min(len(corr), 10)])
	}
}

// TestApplyCorrectionsWhenReceiverAhead: a receiver that holds everything the host has and
// more sends exactly its surplus, and nothing when it holds the same.
func TestApplyReceiverSuperset(t *testing.T) {
	host := richWorld(t, 6)
	recv := clone(t, host)
	put(t, recv, 0, compUnknown, recv.Clock()+1, []byte("extra"))
	s := decode(t, encode(t, host, testTable, Options{}))
	_, corr, err := Apply(recv, testTable, s, recv.Merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(t, corr)
	if len(ms) != 1 || ms[0].Component != compUnknown || string(ms[0].Data) != "extra" {
		t.Fatalf("corrections %+v, want the one extra entry", ms)
	}
	same := clone(t, host)
	_, corr, err = Apply(same, testTable, s, same.Merge, nil)
	if err != nil || len(corr) != 0 {
		t.Fatalf("equal replica: %v, %d correction bytes", err, len(corr))
	}
}

// rebuildHostState replaces the stamps and the stream of a hostState, keeping its header.
func rebuildHostState(t testing.TB, hs, stamps, stream []byte) []byte {
	t.Helper()
	stampCountAt, _ := hostStateLayout(t, hs)
	out := bytes.Clone(hs[:stampCountAt])
	out = le.AppendUint32(out, uint32(len(stamps)/4))
	out = append(out, stamps...)
	out = le.AppendUint32(out, uint32(len(stream)))
	return append(out, stream...)
}

// reversed returns s with its spawns (and their stamps) and its stream messages in reverse
// order: the same content, in no key order at all.
func reversed(t testing.TB, s *netmsg.HostSnapshot) *netmsg.HostSnapshot {
	t.Helper()
	h, err := parseHostState(s.HostState)
	if err != nil {
		t.Fatal(err)
	}
	var groups [][]byte
	st := h.stamps
	for _, sp := range s.Spawns {
		n := 1
		if err := SpawnValues(lookup(t, testTable, schema.ID(sp.SchemaID)), sp.UpdateData, func(int, []byte) { n++ }); err != nil {
			t.Fatal(err)
		}
		groups, st = append(groups, st[:4*n]), st[4*n:]
	}
	slices.Reverse(groups)
	ms := messages(t, h.stream)
	slices.Reverse(ms)
	var stream []byte
	for i := range ms {
		stream = crdt.AppendMessage(stream, &ms[i])
	}
	c := *s
	c.Spawns = slices.Clone(s.Spawns)
	slices.Reverse(c.Spawns)
	c.HostState = rebuildHostState(t, s.HostState, bytes.Join(groups, nil), stream)
	return &c
}

// TestApplyUnsortedSnapshot: a snapshot in no particular order (not as Build writes it) merges
// to the same state and yields the same corrections.
func TestApplyUnsortedSnapshot(t *testing.T) {
	host, recv := divergedPair(t, 8)
	s := decode(t, encode(t, host, testTable, Options{}))
	rs := reversed(t, s)
	if rs.Spawns[0].NetworkID == s.Spawns[0].NetworkID {
		t.Fatal("reversed snapshot not reversed")
	}
	empty := crdt.New(crdt.Config{})
	_, corr, err := Apply(empty, testTable, rs, empty.Merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	requireSameState(t, empty, host)
	if len(corr) != 0 {
		t.Fatalf("%d correction bytes from an empty receiver", len(corr))
	}
	r1, r2 := clone(t, recv), clone(t, recv)
	_, want, err := Apply(r1, testTable, s, r1.Merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := Apply(r2, testTable, rs, r2.Merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	requireSameState(t, r2, r1)
	if !bytes.Equal(got, want) {
		t.Fatalf("corrections differ: %d bytes, want %d", len(got), len(want))
	}
}

// TestApplyRepeatedKeys: when a snapshot carries a key twice, the value it carried last is the
// one the receiver's entry is compared with.
func TestApplyRepeatedKeys(t *testing.T) {
	host := tinyHost(t)
	s := decode(t, encode(t, host, testTable, Options{}))
	h, err := parseHostState(s.HostState)
	if err != nil {
		t.Fatal(err)
	}
	e := crdt.NewEntity(513, 1)
	spawned := bytes.Repeat([]byte{7}, 12) // tinyHost's value of 1100, at stamp 4
	with := func(extra ...crdt.Message) *netmsg.HostSnapshot {
		stream := bytes.Clone(h.stream)
		for i := range extra {
			stream = crdt.AppendMessage(stream, &extra[i])
		}
		c := *s
		c.HostState = rebuildHostState(t, s.HostState, h.stamps, stream)
		return &c
	}
	tests := []struct {
		name  string
		s     *netmsg.HostSnapshot
		wantC []crdt.Message
	}{
		{"stream repeats the spawned value", with(crdt.Message{Type: crdt.PutComponent, Entity: e, Component: 1100, Timestamp: 4, Data: spawned}), nil},
		{"stream repeats a stream value", with(crdt.Message{Type: crdt.PutComponent, Entity: 0, Component: compRoom, Timestamp: 8, Data: []byte("room")}), nil},
		{"stream carries an older value last", with(crdt.Message{Type: crdt.PutComponent, Entity: e, Component: 1100, Timestamp: 2, Data: []byte("old")}),
			[]crdt.Message{{Type: crdt.PutComponent, Entity: e, Component: 1100, Timestamp: 4, Data: spawned}}},
		{"stream carries an older tombstone last", with(crdt.Message{Type: crdt.DeleteComponent, Entity: 0, Component: compRoom, Timestamp: 1}),
			[]crdt.Message{{Type: crdt.PutComponent, Entity: 0, Component: compRoom, Timestamp: 8, Data: []byte("room")}}},
		{"stream carries a newer value last", with(crdt.Message{Type: crdt.PutComponent, Entity: e, Component: 1100, Timestamp: 9, Data: []byte("new")}), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := crdt.New(crdt.Config{})
			_, corr, err := Apply(r, testTable, tc.s, r.Merge, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := messages(t, corr)
			if len(got) != len(tc.wantC) {
				t.Fatalf("corrections %+v, want %+v", got, tc.wantC)
			}
			for i := range got {
				g, w := got[i], tc.wantC[i]
				if g.Type != w.Type || g.Entity != w.Entity || g.Component != w.Component || g.Timestamp != w.Timestamp || !bytes.Equal(g.Data, w.Data) {
					t.Fatalf("correction %+v, want %+v", g, w)
				}
			}
		})
	}
}

// TestBuildCoverBeyondMaxBuckets: a cover the hostState cannot express is widened to a full
// snapshot, which every receiver accepts.
func TestBuildCoverBeyondMaxBuckets(t *testing.T) {
	src := richWorld(t, 9)
	for _, count := range []int{MaxBuckets, MaxBuckets + 1, 1 << 16, 1<<16 + 5} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			s := decode(t, encode(t, src, testTable, Options{Cover: Only(count, 0, 512, 851)}))
			dst := crdt.New(crdt.Config{})
			info, _, err := Apply(dst, testTable, s, dst.Merge, nil)
			if err != nil {
				t.Fatal(err)
			}
			if count <= MaxBuckets {
				if info.Cover.Count() != count || info.Cover.Len() != 3 {
					t.Fatalf("cover %v", info.Cover)
				}
				return
			}
			if !info.Cover.IsAll() {
				t.Fatalf("cover %v, want every bucket", info.Cover)
			}
			requireSameState(t, dst, src)
		})
	}
}
