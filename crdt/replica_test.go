package crdt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func putMsg(e Entity, c ComponentID, ts Timestamp, data string) Message {
	return Message{Type: PutComponent, Entity: e, Component: c, Timestamp: ts, Data: []byte(data)}
}

func delMsg(e Entity, c ComponentID, ts Timestamp) Message {
	return Message{Type: DeleteComponent, Entity: e, Component: c, Timestamp: ts}
}

func delEntMsg(e Entity) Message { return Message{Type: DeleteEntity, Entity: e} }

func appMsg(e Entity, c ComponentID, ts Timestamp, data string) Message {
	return Message{Type: AppendValue, Entity: e, Component: c, Timestamp: ts, Data: []byte(data)}
}

func stateString(t testing.TB, r *Replica) string {
	t.Helper()
	b, err := json.Marshal(r.StateJSON())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mergeAll(r *Replica, msgs ...Message) {
	for i := range msgs {
		r.Merge(&msgs[i])
	}
}

// TestADR117Table is the add/remove table of ADR-117 (a = the value "a"; add = PUT, remove =
// DELETE_COMPONENT; A(a,t) is a value at t, R(a,t) a tombstone at t).
func TestADR117Table(t *testing.T) {
	const e, c = Entity(512), ComponentID(1)
	add := func(ts Timestamp) Message { return putMsg(e, c, ts, "a") }
	remove := func(ts Timestamp) Message { return delMsg(e, c, ts) }
	tests := []struct {
		name      string
		initial   Message
		op        Message
		outcome   Outcome
		wantTomb  bool
		wantStamp Timestamp
	}{
		{"A(a,1) add(a,0)", add(1), add(0), Outdated, false, 1},
		{"A(a,1) add(a,1)", add(1), add(1), NoChange, false, 1},
		{"A(a,1) add(a,2)", add(1), add(2), Applied, false, 2},
		{"A(a,1) remove(a,0)", add(1), remove(0), Outdated, false, 1},
		{"A(a,1) remove(a,1)", add(1), remove(1), Outdated, false, 1},
		{"A(a,1) remove(a,2)", add(1), remove(2), Applied, true, 2},
		{"R(a,1) add(a,0)", remove(1), add(0), Outdated, true, 1},
		{"R(a,1) add(a,1)", remove(1), add(1), Applied, false, 1},
		{"R(a,1) add(a,2)", remove(1), add(2), Applied, false, 2},
		{"R(a,1) remove(a,0)", remove(1), remove(0), Outdated, true, 1},
		{"R(a,1) remove(a,1)", remove(1), remove(1), NoChange, true, 1},
		{"R(a,1) remove(a,2)", remove(1), remove(2), Applied, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Config{})
			if got := r.Merge(&tc.initial); got != Applied {
				t.Fatalf("initial merge = %v", got)
			}
			if got := r.Merge(&tc.op); got != tc.outcome {
				t.Fatalf("Merge = %v, want %v", got, tc.outcome)
			}
			data, ts, ok, deleted := r.Get(e, c)
			if !ok || deleted != tc.wantTomb || ts != tc.wantStamp {
				t.Fatalf("Get = %q, %d, %v, %v; want tombstone=%v at %d", data, ts, ok, deleted, tc.wantTomb, tc.wantStamp)
			}
			if !deleted && string(data) != "a" {
				t.Fatalf("data = %q", data)
			}
			// The same pair in the other order ends in the same state.
			r2 := New(Config{})
			r2.Merge(&tc.op)
			r2.Merge(&tc.initial)
			if a, b := stateString(t, r), stateString(t, r2); a != b {
				t.Fatalf("order matters:\n%s\n%s", a, b)
			}
		})
	}
}

// TestTieBreak checks equal-timestamp resolution: deleted < empty < shorter < longer, then
// unsigned bytes; the greater wins.
func TestTieBreak(t *testing.T) {
	const e, c, ts = Entity(512), ComponentID(1), Timestamp(5)
	tomb := Message{Type: DeleteComponent, Entity: e, Component: c, Timestamp: ts}
	val := func(s string) Message { return putMsg(e, c, ts, s) }
	// Ascending order: each value loses to every later one.
	ordered := []Message{tomb, val(""), val("\x00"), val("\x01"), val("\x7f"), val("\x80"), val("\xff"),
		val("\x00\x00"), val("\x00\xff"), val("\x01\x00"), val("\xff\xff"), val("\x00\x00\x00")}
	for i := range ordered {
		for j := range ordered {
			r := New(Config{})
			r.Merge(&ordered[i])
			want := NoChange
			switch {
			case j > i:
				want = Applied
			case j < i:
				want = Outdated
			}
			if got := r.Merge(&ordered[j]); got != want {
				t.Errorf("stored #%d, incoming #%d: %v, want %v", i, j, got, want)
			}
			winner := ordered[max(i, j)]
			data, _, _, deleted := r.Get(e, c)
			if deleted != (winner.Type == DeleteComponent) || !bytes.Equal(data, winner.Data) {
				t.Errorf("stored #%d, incoming #%d: holds %q (deleted %v)", i, j, data, deleted)
			}
		}
	}
}

func TestCorrections(t *testing.T) {
	const c = ComponentID(1)
	e := NewEntity(512, 0)
	r := New(Config{})
	mergeAll(r, putMsg(e, c, 5, "local"), delMsg(e, 2, 7))
	tests := []struct {
		name    string
		in      Message
		outcome Outcome
		want    []Message // nil: no correction
	}{
		{"older put", putMsg(e, c, 4, "zzzzzzzz"), Outdated, []Message{putMsg(e, c, 5, "local")}},
		{"smaller put at equal stamp", putMsg(e, c, 5, "loca"), Outdated, []Message{putMsg(e, c, 5, "local")}},
		{"delete at equal stamp", delMsg(e, c, 5), Outdated, []Message{putMsg(e, c, 5, "local")}},
		{"network put", Message{Type: PutComponentNetwork, Entity: e, Component: c, Timestamp: 1, NetworkID: 9}, Outdated, []Message{putMsg(e, c, 5, "local")}},
		{"put over a newer tombstone", putMsg(e, 2, 6, "x"), Outdated, []Message{delMsg(e, 2, 7)}},
		{"network delete over a newer tombstone", Message{Type: DeleteComponentNetwork, Entity: e, Component: 2, Timestamp: 3}, Outdated, []Message{delMsg(e, 2, 7)}},
		{"unknown key", putMsg(e, 3, 0, ""), Applied, []Message{putMsg(e, 3, 0, "")}},
		{"append", appMsg(e, 9, 1, "v"), Applied, nil},
		{"unknown type", Message{Type: 42, Entity: e}, Invalid, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Merge(&tc.in); got != tc.outcome {
				t.Fatalf("Merge = %v, want %v", got, tc.outcome)
			}
			var want []byte
			for i := range tc.want {
				want = AppendMessage(want, &tc.want[i])
			}
			if got := r.AppendCorrection(nil, &tc.in); !bytes.Equal(got, want) {
				t.Fatalf("correction %x, want %x", got, want)
			}
		})
	}

	// Messages for deleted entity versions are Ignored and corrected with DELETE_ENTITY.
	r.Merge(&Message{Type: DeleteEntity, Entity: NewEntity(512, 3)})
	wantDel := AppendMessage(nil, &Message{Type: DeleteEntity, Entity: NewEntity(512, 3)})
	for _, m := range []Message{putMsg(NewEntity(512, 2), c, 99, "x"), delMsg(NewEntity(512, 3), c, 99), appMsg(e, c, 99, "x"), delEntMsg(NewEntity(512, 1))} {
		out := r.Merge(&m)
		if m.Type == DeleteEntity {
			if out != NoChange {
				t.Fatalf("old DELETE_ENTITY = %v, want NoChange", out)
			}
		} else if out != Ignored {
			t.Fatalf("%v for %v = %v, want Ignored", m.Type, m.Entity, out)
		}
		if got := r.AppendCorrection(nil, &m); !bytes.Equal(got, wantDel) {
			t.Fatalf("correction for %v %v = %x, want %x", m.Type, m.Entity, got, wantDel)
		}
	}
	same := delEntMsg(NewEntity(512, 3))
	if got := r.AppendCorrection([]byte{1}, &same); !bytes.Equal(got, []byte{1}) {
		t.Fatalf("correction for the recorded deletion = %x", got)
	}
}

func TestDeleteEntity(t *testing.T) {
	r := New(Config{})
	e := NewEntity(600, 2)
	other := NewEntity(601, 0)
	mergeAll(r, putMsg(e, 1, 1, "a"), delMsg(e, 2, 2), appMsg(e, 3, 3, "x"), putMsg(other, 1, 1, "b"))
	if r.Len() != 3 || r.LiveEntities() != 2 {
		t.Fatalf("Len %d LiveEntities %d", r.Len(), r.LiveEntities())
	}
	// e's number got versions 0 and 1 deleted implicitly.
	if v, ok := r.DeletedVersion(600); !ok || v != 1 {
		t.Fatalf("DeletedVersion(600) = %d, %v; want 1, true", v, ok)
	}
	if got := r.Merge(&Message{Type: DeleteEntityNetwork, Entity: e, NetworkID: 5}); got != Applied {
		t.Fatalf("DELETE_ENTITY_NETWORK = %v", got)
	}
	if !r.EntityDeleted(e) || !r.EntityDeleted(NewEntity(600, 0)) || r.EntityDeleted(NewEntity(600, 3)) || r.EntityDeleted(other) {
		t.Fatal("EntityDeleted wrong")
	}
	if _, _, ok, _ := r.Get(e, 1); ok {
		t.Fatal("data of a deleted entity kept")
	}
	if r.Len() != 1 || r.LiveEntities() != 1 || r.DeletedNumbers() != 1 {
		t.Fatalf("Len %d LiveEntities %d DeletedNumbers %d", r.Len(), r.LiveEntities(), r.DeletedNumbers())
	}
	if got := stateString(t, r); got != `{"lww":[{"entity":601,"component":1,"timestamp":1,"deleted":false,"data":"62"}],"deletedEntities":[{"number":600,"version":2}],"append":[]}` {
		t.Fatalf("state %s", got)
	}
	for _, m := range []Message{putMsg(e, 1, 100, "late"), appMsg(e, 3, 100, "late"), delMsg(NewEntity(600, 1), 1, 100)} {
		if got := r.Merge(&m); got != Ignored {
			t.Fatalf("late %v = %v, want Ignored", m.Type, got)
		}
	}
	dup := delEntMsg(e)
	if got := r.Merge(&dup); got != NoChange {
		t.Fatalf("duplicate DELETE_ENTITY = %v", got)
	}
	// A new version of the number is live again.
	next := putMsg(NewEntity(600, 3), 1, 4, "new")
	if got := r.Merge(&next); got != Applied {
		t.Fatalf("new version = %v", got)
	}
	if v, _ := r.DeletedVersion(600); v != 2 {
		t.Fatalf("DeletedVersion = %d", v)
	}
	if _, ok := r.DeletedVersion(601); ok {
		t.Fatal("601 reported deleted")
	}
	// Version 65535 deletes the number for good.
	last := delEntMsg(NewEntity(600, 0xffff))
	r.Merge(&last)
	if !r.EntityDeleted(NewEntity(600, 0xffff)) || r.LiveEntities() != 1 {
		t.Fatal("version 65535 deletion")
	}
}

// TestImplicitDeletionAllOrders delivers messages for three versions of one number in every
// order: each order must end with only the newest version's data.
func TestImplicitDeletionAllOrders(t *testing.T) {
	n := uint16(700)
	msgs := []Message{
		putMsg(NewEntity(n, 0), 1, 10, "v0"),
		appMsg(NewEntity(n, 0), 2, 11, "v0"),
		delMsg(NewEntity(n, 0), 3, 12),
		putMsg(NewEntity(n, 1), 1, 1, "v1"),
		putMsg(NewEntity(n, 2), 2, 2, "v2"),
		putMsg(NewEntity(n+1, 0), 1, 1, "other"),
	}
	want := `{"lww":[{"entity":701,"component":1,"timestamp":1,"deleted":false,"data":"6f74686572"},` +
		`{"entity":131772,"component":2,"timestamp":2,"deleted":false,"data":"7632"}],` +
		`"deletedEntities":[{"number":700,"version":1}],"append":[]}`
	var wantHash uint64
	count := 0
	permute(len(msgs), func(order []int) {
		r := New(Config{})
		for _, i := range order {
			r.Merge(&msgs[i])
		}
		if got := stateString(t, r); got != want {
			t.Fatalf("order %v: %s", order, got)
		}
		if count == 0 {
			wantHash = r.Hash()
		} else if r.Hash() != wantHash {
			t.Fatalf("order %v: hash differs", order)
		}
		if r.LiveEntities() != 2 || r.Len() != 2 {
			t.Fatalf("order %v: LiveEntities %d Len %d", order, r.LiveEntities(), r.Len())
		}
		count++
	})
	if count != 720 {
		t.Fatalf("%d orders", count)
	}
}

// permute calls fn with every permutation of 0..n-1 (Heap's algorithm).
func permute(n int, fn func([]int)) {
	a := make([]int, n)
	for i := range a {
		a[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			fn(a)
			return
		}
		for i := 0; i < k-1; i++ {
			gen(k - 1)
			if k%2 == 0 {
				a[i], a[k-1] = a[k-1], a[i]
			} else {
				a[0], a[k-1] = a[k-1], a[0]
			}
		}
		gen(k - 1)
	}
	gen(n)
}

func TestAppendSet(t *testing.T) {
	e, c := NewEntity(512, 0), ComponentID(9)
	r := New(Config{AppendRetention: 3})
	steps := []struct {
		m    Message
		want Outcome
	}{
		{appMsg(e, c, 1, "a"), Applied},
		{appMsg(e, c, 1, "a"), NoChange},   // duplicate
		{appMsg(e, c, 0, "a"), NoChange},   // same value, older stamp
		{appMsg(e, c, 2, "b"), Applied},    //
		{appMsg(e, c, 1, ""), Applied},     // empty value is a value
		{appMsg(e, c, 0, "zz"), NoChange},  // full: below the least (0 < 1)
		{appMsg(e, c, 1, "\x00"), Applied}, // (1,"\x00") > (1,""): evicts ""
		{appMsg(e, c, 5, "a"), Applied},    // raises a's stamp
	}
	for i, s := range steps {
		if got := r.Merge(&s.m); got != s.want {
			t.Fatalf("step %d: %v, want %v", i, got, s.want)
		}
	}
	var got []string
	r.RangeAppend(func(a AppendEntry) bool {
		got = append(got, string(a.Data)+"@"+string(rune('0'+a.Timestamp)))
		return true
	})
	if want := []string{"\x00@1", "b@2", "a@5"}; !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
	if s := stateString(t, r); s != `{"lww":[],"deletedEntities":[],"append":[{"entity":512,"component":9,"values":["00","61","62"]}]}` {
		t.Fatalf("state %s", s)
	}
	if r.Len() != 0 || r.LiveEntities() != 1 {
		t.Fatalf("Len %d LiveEntities %d", r.Len(), r.LiveEntities())
	}
}

// TestAppendRetentionConverges merges random append values in random orders with a small
// retention: the kept top N must be the same everywhere.
func TestAppendRetentionConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	e := NewEntity(512, 0)
	for round := range 50 {
		var msgs []Message
		for range 30 {
			v := string([]byte{byte(rng.IntN(6))}[:rng.IntN(2)])
			msgs = append(msgs, appMsg(e, ComponentID(rng.IntN(2)), Timestamp(rng.IntN(5)), v+string(rune('a'+rng.IntN(4)))))
		}
		var want string
		for k := range 10 {
			r := New(Config{AppendRetention: 4})
			for _, i := range rng.Perm(len(msgs)) {
				r.Merge(&msgs[i])
				if rng.IntN(4) == 0 {
					r.Merge(&msgs[rng.IntN(len(msgs))])
				}
			}
			got := stateString(t, r) + string(r.AppendState(nil))
			if k == 0 {
				want = got
				if ref := referenceJSON(t, msgs, 4); stateString(t, r) != ref {
					t.Fatalf("round %d: state %s\nreference %s", round, stateString(t, r), ref)
				}
			} else if got != want {
				t.Fatalf("round %d order %d differs", round, k)
			}
		}
	}
}

func TestLamportClock(t *testing.T) {
	r := New(Config{})
	e := NewEntity(512, 0)
	if r.Clock() != 0 {
		t.Fatal("clock not zero")
	}
	m := r.Put(e, 1, []byte("x"))
	if m.Timestamp != 1 || r.Clock() != 1 {
		t.Fatalf("first write at %d, clock %d", m.Timestamp, r.Clock())
	}
	// Every merge is observed, whatever the outcome.
	for _, in := range []Message{putMsg(e, 1, 10, "y"), delMsg(e, 1, 4), appMsg(e, 2, 20, "a"), putMsg(NewEntity(512, 0), 3, 15, "")} {
		r.Merge(&in)
	}
	if r.Clock() != 20 {
		t.Fatalf("clock %d, want 20", r.Clock())
	}
	r.ObserveClock(7)
	if r.Clock() != 20 {
		t.Fatal("ObserveClock lowered the clock")
	}
	r.ObserveClock(30)
	m = r.DeleteComponent(e, 1)
	if m.Timestamp != 31 || m.Type != DeleteComponent {
		t.Fatalf("delete at %d", m.Timestamp)
	}
	if _, ts, _, deleted := r.Get(e, 1); ts != 31 || !deleted {
		t.Fatal("local delete not applied")
	}
	m = r.AppendValue(e, 2, []byte("b"))
	if m.Timestamp != 32 || m.Type != AppendValue || string(m.Data) != "b" {
		t.Fatalf("append %+v", m)
	}
	// DELETE_ENTITY carries no stamp: no tick.
	m = r.DeleteEntity(NewEntity(513, 0))
	if m.Timestamp != 0 || r.Clock() != 32 || !r.EntityDeleted(NewEntity(513, 0)) {
		t.Fatalf("delete entity: %+v clock %d", m, r.Clock())
	}
	// Saturation: the clock never wraps.
	big := putMsg(e, 5, math.MaxUint32, "")
	r.Merge(&big)
	if m := r.Put(e, 6, nil); m.Timestamp != math.MaxUint32 || r.Clock() != math.MaxUint32 {
		t.Fatalf("saturated write at %d", m.Timestamp)
	}
}

func TestLocalWrites(t *testing.T) {
	r := New(Config{})
	e := NewEntity(512, 0)
	buf := []byte("hello")
	m := r.Put(e, 1, buf)
	buf[0] = 'j' // the replica copied the value
	if string(m.Data) != "hello" {
		t.Fatalf("message data %q", m.Data)
	}
	data, ts, ok, deleted := r.Get(e, 1)
	if string(data) != "hello" || ts != 1 || !ok || deleted {
		t.Fatalf("Get = %q %d %v %v", data, ts, ok, deleted)
	}
	// The returned message round-trips into another replica.
	other := New(Config{})
	if got := other.Merge(&m); got != Applied {
		t.Fatalf("remote merge %v", got)
	}
	if stateString(t, r) != stateString(t, other) {
		t.Fatal("replicas differ")
	}
	// An empty value is a value, not a deletion.
	m = r.Put(e, 2, nil)
	if _, _, ok, deleted := r.Get(e, 2); !ok || deleted || m.Type != PutComponent {
		t.Fatal("empty put")
	}
	// A write to a newer version deletes the older one.
	r.Put(NewEntity(512, 1), 1, []byte("v1"))
	if _, _, ok, _ := r.Get(e, 1); ok || !r.EntityDeleted(e) {
		t.Fatal("newer version did not delete the older")
	}
	// A write to a deleted version is ignored.
	r.Put(e, 1, []byte("zombie"))
	if _, _, ok, _ := r.Get(e, 1); ok {
		t.Fatal("write to a deleted entity applied")
	}
}

func TestRangeOrder(t *testing.T) {
	r := New(Config{})
	keys := []struct {
		e Entity
		c ComponentID
	}{{NewEntity(600, 1), 1}, {NewEntity(513, 0), 7}, {NewEntity(513, 0), 2}, {NewEntity(65535, 0), 0}, {NewEntity(512, 2), 0xffffffff}}
	for i, k := range keys {
		m := putMsg(k.e, k.c, Timestamp(i), "")
		r.Merge(&m)
	}
	d := delMsg(NewEntity(513, 0), 3, 1)
	r.Merge(&d)
	var got []uint64
	r.Range(func(e Entry) bool {
		got = append(got, lwwKey(e.Entity, e.Component))
		return true
	})
	if !slices.IsSorted(got) || len(got) != 6 {
		t.Fatalf("Range order %x", got)
	}
	n := 0
	r.Range(func(Entry) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatal("Range did not stop")
	}
	var nums []uint16
	r.RangeDeleted(func(number, version uint16) bool {
		nums = append(nums, number, version)
		return true
	})
	if !slices.Equal(nums, []uint16{512, 1, 600, 0}) {
		t.Fatalf("RangeDeleted %v", nums)
	}
}

func TestStateJSONShape(t *testing.T) {
	r := New(Config{})
	if got := stateString(t, r); got != `{"lww":[],"deletedEntities":[],"append":[]}` {
		t.Fatalf("empty state %s", got)
	}
	mergeAll(r, putMsg(513, 2934958347, 4, "\x01\x01\x01"), putMsg(512, 1, 1, ""), delMsg(512, 2, 3),
		appMsg(514, 5, 1, "\xab"), appMsg(514, 5, 9, "\x01\x02"), appMsg(514, 5, 2, "\xff"), delEntMsg(NewEntity(520, 4)))
	want := `{"lww":[{"entity":512,"component":1,"timestamp":1,"deleted":false,"data":""},` +
		`{"entity":512,"component":2,"timestamp":3,"deleted":true,"data":null},` +
		`{"entity":513,"component":2934958347,"timestamp":4,"deleted":false,"data":"010101"}],` +
		`"deletedEntities":[{"number":520,"version":4}],` +
		`"append":[{"entity":514,"component":5,"values":["0102","ab","ff"]}]}`
	if got := stateString(t, r); got != want {
		t.Fatalf("state\n%s\nwant\n%s", got, want)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	r := New(Config{})
	mergeAll(r, putMsg(513, 2, 4, "abc"), delMsg(512, 2, 3), appMsg(514, 5, 1, "x"), appMsg(514, 5, 1, "y"),
		putMsg(NewEntity(530, 3), 1, 2, "v3"), delEntMsg(NewEntity(531, 0)))
	state := r.AppendState(nil)
	if r.Hash() != setHash(t, state) {
		t.Fatal("Hash is not the set hash of AppendState")
	}
	cp := New(Config{})
	applied, err := cp.MergeStream(state)
	if err != nil || applied != 7 { // 2 deleted numbers + 3 lww + 2 append values
		t.Fatalf("MergeStream = %d, %v", applied, err)
	}
	if !bytes.Equal(cp.AppendState(nil), state) || cp.Hash() != r.Hash() || stateString(t, cp) != stateString(t, r) {
		t.Fatal("round trip differs")
	}
	if cp.Clock() != 4 {
		t.Fatalf("import did not raise the clock: %d", cp.Clock())
	}
	// Merging the export again changes nothing.
	if applied, err := cp.MergeStream(state); err != nil || applied != 0 {
		t.Fatalf("second MergeStream = %d, %v", applied, err)
	}
	if New(Config{}).Hash() != 0 {
		t.Fatal("empty hash")
	}
}

func TestBucketDigests(t *testing.T) {
	r := New(Config{})
	rng := rand.New(rand.NewPCG(7, 7))
	for range 300 {
		m := randomMessage(rng)
		r.Merge(&m)
	}
	const buckets = 7
	digests := r.BucketDigests(buckets, []uint64{42})
	if len(digests) != buckets+1 || digests[0] != 42 {
		t.Fatalf("BucketDigests appended %d", len(digests))
	}
	total := 0
	for b := range buckets {
		part := r.AppendBucketState(nil, b, buckets)
		if setHash(t, part) != digests[b+1] {
			t.Fatalf("bucket %d digest mismatch", b)
		}
		var rd Reader
		rd.Reset(part)
		var m Message
		for rd.Next(&m) == nil {
			if int(m.Entity.Number())%buckets != b {
				t.Fatalf("bucket %d holds number %d", b, m.Entity.Number())
			}
		}
		total += len(part)
		// Merging only that bucket into an empty replica reproduces the bucket.
		cp := New(Config{})
		if _, err := cp.MergeStream(part); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cp.AppendState(nil), part) {
			t.Fatalf("bucket %d does not round-trip", b)
		}
	}
	if total != len(r.AppendState(nil)) {
		t.Fatal("buckets do not partition the state")
	}
	if got := r.BucketDigests(0, nil); len(got) != 1 || got[0] != r.Hash() {
		t.Fatal("one bucket must equal Hash")
	}
	if got := r.AppendBucketState([]byte{1}, 7, 7); !bytes.Equal(got, []byte{1}) {
		t.Fatal("out-of-range bucket appended")
	}
	// One differing key changes exactly its bucket.
	cp := New(Config{})
	cp.MergeStream(r.AppendState(nil))
	m := putMsg(NewEntity(600, 0), 1, 1000, "diff")
	cp.Merge(&m)
	d2 := cp.BucketDigests(buckets, nil)
	for b := range buckets {
		if (d2[b] != digests[b+1]) != (b == 600%buckets) {
			t.Fatalf("bucket %d: changed=%v", b, d2[b] != digests[b+1])
		}
	}
}

func TestMergeExistingKeyAllocs(t *testing.T) {
	r := New(Config{})
	e := NewEntity(512, 1)
	m := Message{Type: PutComponent, Entity: e, Component: 1, Data: make([]byte, 44)}
	tomb := Message{Type: DeleteComponent, Entity: e, Component: 2}
	app := Message{Type: AppendValue, Entity: e, Component: 3, Data: []byte("v")}
	r.Merge(&m)
	r.Merge(&tomb)
	r.Merge(&app)
	wire := AppendMessage(nil, &m)
	var ts Timestamp
	if n := testing.AllocsPerRun(1000, func() {
		ts += 2
		m.Timestamp, tomb.Timestamp, app.Timestamp = ts, ts, ts
		m.Data[0] = byte(ts)
		if r.Merge(&m) != Applied || r.Merge(&tomb) != Applied || r.Merge(&app) != Applied {
			t.Fatal("not applied")
		}
		r.Merge(&m) // NoChange
		le.PutUint32(wire[16:], uint32(ts)+1)
		if _, err := r.MergeStream(wire); err != nil {
			t.Fatal(err)
		}
		r.Get(e, 1)
	}); n != 0 {
		t.Fatalf("merge into existing keys allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		r.Hash()
		r.Range(func(Entry) bool { return true })
	}); n != 0 {
		t.Fatalf("Hash/Range allocate %v times", n)
	}
}

// TestTableRemove checks the backward-shift deletion of the LWW table against a map.
func TestTableRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tab lwwTable
	ref := map[uint64]bool{}
	for i := range 20000 {
		k := uint64(rng.IntN(3000)) * 0x100000001 // clustered keys
		if rng.IntN(3) == 0 {
			tab.remove(k)
			delete(ref, k)
		} else if tab.find(k) == nil {
			tab.set(tab.insert(k), []byte{byte(k)}, slotValue)
			ref[k] = true
		}
		if i%997 == 0 {
			for k := range ref {
				if s := tab.find(k); s == nil || !bytes.Equal(*tab.data(s), []byte{byte(k)}) {
					t.Fatalf("step %d: key %x lost", i, k)
				}
			}
			if tab.n != len(ref) || len(tab.vals)-len(tab.free) != len(ref) {
				t.Fatalf("step %d: n=%d, %d values in use, want %d", i, tab.n, len(tab.vals)-len(tab.free), len(ref))
			}
		}
	}
	for k := range ref {
		if tab.remove(k); tab.find(k) != nil {
			t.Fatal("removed key found")
		}
	}
	if tab.n != 0 {
		t.Fatal("table not empty")
	}
}

func TestZeroReplica(t *testing.T) {
	var r Replica
	m := putMsg(512, 1, 1, "x")
	if r.Merge(&m) != Applied {
		t.Fatal("zero Replica merge")
	}
	a := appMsg(512, 2, 1, "y")
	if r.Merge(&a) != Applied || r.LiveEntities() != 1 {
		t.Fatal("zero Replica append")
	}
	if stateString(t, &r) == "" {
		t.Fatal("no state")
	}
}

// TestHashGolden pins the Hash definition (the sum of fmix64(FNV-1a 64) over the canonical
// messages), computed independently (in Python, from docs/protocol.md), for the JS client to check.
func TestHashGolden(t *testing.T) {
	r := New(Config{})
	// Deliberately merged out of canonical order.
	mergeAll(r, appMsg(512, 3, 3, "\xff"), delMsg(512, 2, 2), putMsg(512, 1, 1, "\x01"), delEntMsg(513))
	const wantState = "0c000000030000000102000019000000010000000002000001000000010000000100000001" +
		"14000000020000000002000002000000020000001900000004000000000200000300000003000000" +
		"01000000ff"
	if got := hex.EncodeToString(r.AppendState(nil)); got != wantState {
		t.Fatalf("AppendState %s\nwant        %s", got, wantState)
	}
	if got := r.Hash(); got != 0x1a1da7f01d4d0867 {
		t.Fatalf("Hash = %#x, want 0x1a1da7f01d4d0867", got)
	}
	// Entity 513 is bucket 1 of 2: its DELETE_ENTITY alone; 512's three messages are bucket 0.
	if got := r.BucketDigests(2, nil); got[1] != 0x7ce2255786bcb4f3 || got[0]+got[1] != r.Hash() {
		t.Fatalf("BucketDigests(2) = %#x", got)
	}
}

// TestChanges: Changes moves with every change of the state and only then, so callers may cache
// hashes and digests under it.
func TestChanges(t *testing.T) {
	r := New(Config{})
	e := NewEntity(600, 0)
	step := func(name string, want bool, fn func()) {
		t.Helper()
		before := r.Changes()
		fn()
		if moved := r.Changes() != before; moved != want {
			t.Errorf("%s: Changes moved = %v, want %v", name, moved, want)
		}
	}
	put := func(e Entity, ts Timestamp, v byte) *Message {
		return &Message{Type: PutComponent, Entity: e, Component: 1100, Timestamp: ts, Data: []byte{v}}
	}
	step("new key", true, func() { r.Merge(put(e, 5, 1)) })
	step("same message", false, func() { r.Merge(put(e, 5, 1)) })
	step("older", false, func() { r.Merge(put(e, 4, 9)) })
	step("equal ts, smaller value", false, func() { r.Merge(put(e, 5, 0)) })
	step("newer", true, func() { r.Merge(put(e, 6, 1)) })
	step("clock only", false, func() { r.ObserveClock(100) })
	step("write at a stamp", true, func() { r.WriteAt(e, 1100, 101, []byte{7}, false) })
	step("rewrite at the same stamp", true, func() { r.WriteAt(e, 1100, 101, []byte{3}, false) })
	step("append", true, func() { r.Merge(&Message{Type: AppendValue, Entity: e, Component: 7, Timestamp: 1, Data: []byte{1}}) })
	step("append again", false, func() { r.Merge(&Message{Type: AppendValue, Entity: e, Component: 7, Timestamp: 1, Data: []byte{1}}) })
	step("higher version deletes the lower", true, func() { r.Merge(put(NewEntity(600, 1), 1, 1)) })
	step("delete entity", true, func() { r.Merge(&Message{Type: DeleteEntity, Entity: NewEntity(600, 1)}) })
	step("delete entity again", false, func() { r.Merge(&Message{Type: DeleteEntity, Entity: NewEntity(600, 1)}) })
}
