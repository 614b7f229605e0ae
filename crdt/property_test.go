package crdt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
)

var dataPool = []string{"", "\x00", "\x01", "\x7f", "\x80", "\xff", "\x00\x00", "\x01\x00", "\xff\xff", "abc", "abd", "ab"}

// randomMessage draws a message over a small key space, so that equal stamps, version races and
// deletions all happen often.
func randomMessage(rng *rand.Rand) Message {
	version := uint16(0)
	switch x := rng.IntN(20); {
	case x >= 19:
		version = 3
	case x >= 17:
		version = 2
	case x >= 12:
		version = 1
	}
	m := Message{
		Entity:    NewEntity(uint16(512+rng.IntN(5)), version),
		Component: ComponentID(1 + rng.IntN(3)),
		Timestamp: Timestamp(rng.IntN(7)),
	}
	switch x := rng.IntN(100); {
	case x < 40:
		m.Type = PutComponent
	case x < 50:
		m.Type = PutComponentNetwork
		m.NetworkID = rng.Uint32()
	case x < 62:
		m.Type = DeleteComponent
	case x < 66:
		m.Type = DeleteComponentNetwork
	case x < 90:
		m.Type = AppendValue
	case x < 96:
		m.Type, m.Component, m.Timestamp = DeleteEntity, 0, 0
	default:
		m.Type, m.Component, m.Timestamp = DeleteEntityNetwork, 0, 0
	}
	if m.Type.HasData() {
		m.Data = []byte(dataPool[rng.IntN(len(dataPool))])
	}
	return m
}

// actorMessages simulates actors writing through their own replicas (Lamport stamps, spawns of
// new versions, despawns) and syncing now and then, and returns every message they produced.
func actorMessages(rng *rand.Rand, actors, steps int) []Message {
	rs := make([]*Replica, actors)
	for i := range rs {
		rs[i] = New(Config{AppendRetention: 4})
	}
	var out []Message
	for range steps {
		a := rs[rng.IntN(actors)]
		n := uint16(512 + rng.IntN(4))
		v, deleted := a.DeletedVersion(n)
		e := NewEntity(n, 0)
		if deleted {
			e = NewEntity(n, v+1)
		}
		c := ComponentID(1 + rng.IntN(3))
		var m Message
		switch x := rng.IntN(100); {
		case x < 50:
			m = a.Put(e, c, []byte(dataPool[rng.IntN(len(dataPool))]))
		case x < 65:
			m = a.DeleteComponent(e, c)
		case x < 85:
			m = a.AppendValue(e, c, []byte(dataPool[rng.IntN(len(dataPool))]))
		case x < 92:
			m = a.DeleteEntity(e)
		default:
			// Sync: merge a random slice of everything produced so far.
			for _, i := range rng.Perm(len(out))[:len(out)/2] {
				a.Merge(&out[i])
			}
			continue
		}
		m.Data = slices.Clone(m.Data)
		out = append(out, m)
	}
	return out
}

// referenceJSON computes the converged state of a message set declaratively, independently of
// Replica: the deleted version per number is the maximum over every message (DELETE_ENTITY of v:
// v; anything else for v > 0: v-1); an LWW key's value is the greatest (timestamp, value) over
// its messages; an append set is the greatest `retention` distinct values by (highest timestamp,
// value); keys of deleted versions are left out.
func referenceJSON(t testing.TB, msgs []Message, retention int) string {
	t.Helper()
	deleted := map[uint16]int{}
	raise := func(n uint16, v int) {
		if d, ok := deleted[n]; !ok || v > d {
			deleted[n] = v
		}
	}
	for _, m := range msgs {
		v := int(m.Entity.Version())
		if m.Type == DeleteEntity || m.Type == DeleteEntityNetwork {
			raise(m.Entity.Number(), v)
		} else if v > 0 {
			raise(m.Entity.Number(), v-1)
		}
	}
	live := func(e Entity) bool {
		d, ok := deleted[e.Number()]
		return !ok || int(e.Version()) > d
	}
	type lwwV struct {
		ts   Timestamp
		tomb bool
		data []byte
	}
	greater := func(a, b lwwV) bool { // a > b
		if a.ts != b.ts {
			return a.ts > b.ts
		}
		if a.tomb || b.tomb {
			return !a.tomb && b.tomb
		}
		if len(a.data) != len(b.data) {
			return len(a.data) > len(b.data)
		}
		return bytes.Compare(a.data, b.data) > 0
	}
	lww := map[uint64]lwwV{}
	app := map[uint64]map[string]Timestamp{}
	for _, m := range msgs {
		if !live(m.Entity) {
			continue
		}
		k := lwwKey(m.Entity, m.Component)
		switch m.Type {
		case PutComponent, PutComponentNetwork, DeleteComponent, DeleteComponentNetwork:
			v := lwwV{ts: m.Timestamp, tomb: m.Type == DeleteComponent || m.Type == DeleteComponentNetwork, data: m.Data}
			if old, ok := lww[k]; !ok || greater(v, old) {
				lww[k] = v
			}
		case AppendValue:
			if app[k] == nil {
				app[k] = map[string]Timestamp{}
			}
			if ts, ok := app[k][string(m.Data)]; !ok || m.Timestamp > ts {
				app[k][string(m.Data)] = m.Timestamp
			}
		}
	}
	st := StateJSON{LWW: []LWWJSON{}, DeletedEntities: []DeletedJSON{}, Append: []AppendJSON{}}
	for _, k := range slices.Sorted(mapKeys(lww)) {
		v := lww[k]
		row := LWWJSON{Entity: uint32(k >> 32), Component: uint32(k), Timestamp: uint32(v.ts), Deleted: v.tomb}
		if !v.tomb {
			h := hex.EncodeToString(v.data)
			row.Data = &h
		}
		st.LWW = append(st.LWW, row)
	}
	for _, n := range slices.Sorted(mapKeys(deleted)) {
		st.DeletedEntities = append(st.DeletedEntities, DeletedJSON{Number: n, Version: uint16(deleted[n])})
	}
	for _, k := range slices.Sorted(mapKeys(app)) {
		type tv struct {
			ts Timestamp
			v  string
		}
		var vals []tv
		for v, ts := range app[k] {
			vals = append(vals, tv{ts, v})
		}
		slices.SortFunc(vals, func(a, b tv) int { // descending
			if lessVal(a.ts, []byte(a.v), b.ts, []byte(b.v)) {
				return 1
			}
			return -1
		})
		if len(vals) > retention {
			vals = vals[:retention]
		}
		a := AppendJSON{Entity: uint32(k >> 32), Component: uint32(k), Values: []string{}}
		for _, v := range vals {
			a.Values = append(a.Values, hex.EncodeToString([]byte(v.v)))
		}
		slices.Sort(a.Values)
		st.Append = append(st.Append, a)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// deliver merges msgs into a fresh replica in a random order with random duplicates.
func deliver(rng *rand.Rand, msgs []Message, cfg Config) *Replica {
	r := New(cfg)
	for _, i := range rng.Perm(len(msgs)) {
		for range 1 + rng.IntN(2) {
			r.Merge(&msgs[i])
		}
		if rng.IntN(5) == 0 {
			r.Merge(&msgs[rng.IntN(len(msgs))])
		}
	}
	return r
}

func messageSets(seed uint64) (string, []Message) {
	rng := rand.New(rand.NewPCG(seed, 99))
	if seed%2 == 0 {
		msgs := make([]Message, 20+rng.IntN(80))
		for i := range msgs {
			msgs[i] = randomMessage(rng)
		}
		return "random", msgs
	}
	return "actors", actorMessages(rng, 2+rng.IntN(4), 30+rng.IntN(100))
}

// TestConvergence: any permutation and duplication of a message set yields the identical
// StateJSON and Hash, equal to the declarative reference state.
func TestConvergence(t *testing.T) {
	cfg := Config{AppendRetention: 4}
	for seed := range uint64(60) {
		kind, msgs := messageSets(seed)
		want := referenceJSON(t, msgs, cfg.AppendRetention)
		rng := rand.New(rand.NewPCG(seed, 1))
		var wantHash uint64
		for k := range 12 {
			r := deliver(rng, msgs, cfg)
			if got := stateString(t, r); got != want {
				t.Fatalf("seed %d (%s) order %d:\n got %s\nwant %s", seed, kind, k, got, want)
			}
			if k == 0 {
				wantHash = r.Hash()
			} else if r.Hash() != wantHash {
				t.Fatalf("seed %d order %d: hash differs", seed, k)
			}
		}
		// The same set as one wire stream.
		var stream []byte
		for _, i := range rng.Perm(len(msgs)) {
			stream = AppendMessage(stream, &msgs[i])
		}
		r := New(cfg)
		if _, err := r.MergeStream(stream); err != nil {
			t.Fatal(err)
		}
		if r.Hash() != wantHash {
			t.Fatalf("seed %d: MergeStream hash differs", seed)
		}
	}
}

// join merges the exports of two replicas into a fresh one: the state-based merge.
func join(t testing.TB, cfg Config, rs ...*Replica) *Replica {
	t.Helper()
	out := New(cfg)
	for _, r := range rs {
		if _, err := out.MergeStream(r.AppendState(nil)); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func sameState(t testing.TB, what string, a, b *Replica) {
	t.Helper()
	if a.Hash() != b.Hash() || !bytes.Equal(a.AppendState(nil), b.AppendState(nil)) {
		t.Fatalf("%s:\n%s\n%s", what, stateString(t, a), stateString(t, b))
	}
}

// TestMergeLaws checks that merging replica states is commutative, associative and idempotent,
// and that the state-based merge equals delivering the union of the messages.
func TestMergeLaws(t *testing.T) {
	cfg := Config{AppendRetention: 3}
	for seed := range uint64(60) {
		_, msgs := messageSets(seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		var parts [3][]Message
		for _, m := range msgs {
			for p := range parts {
				if rng.IntN(2) == 0 {
					parts[p] = append(parts[p], m)
				}
			}
		}
		a, b, c := deliver(rng, parts[0], cfg), deliver(rng, parts[1], cfg), deliver(rng, parts[2], cfg)
		sameState(t, "commutative", join(t, cfg, a, b), join(t, cfg, b, a))
		sameState(t, "associative", join(t, cfg, join(t, cfg, a, b), c), join(t, cfg, a, join(t, cfg, b, c)))
		sameState(t, "idempotent", join(t, cfg, a, a), a)
		union := deliver(rng, append(append(slices.Clone(parts[0]), parts[1]...), parts[2]...), cfg)
		sameState(t, "join equals union", join(t, cfg, a, b, c), union)
		// In place: a replica merging another's export.
		before := join(t, cfg, a)
		if _, err := a.MergeStream(b.AppendState(nil)); err != nil {
			t.Fatal(err)
		}
		sameState(t, "in-place merge", a, join(t, cfg, before, b))
	}
}
