package hostsnapshot

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// tinyHost is a small host world for fuzzing: spawns of three mask widths (one with a
// tombstoned and one with a missing property), an entity outside any schema, a deleted entity, a
// reused number and append values.
func tinyHost(t testing.TB) *crdt.Replica {
	r := crdt.New(crdt.Config{})
	put(t, r, crdt.NewEntity(512, 0), schema.ComponentMeta, 1, schema.AppendMeta(nil, 2, []byte("c")))
	put(t, r, crdt.NewEntity(512, 0), 1200, 2, []byte{1})
	put(t, r, crdt.NewEntity(513, 1), schema.ComponentMeta, 3, schema.AppendMeta(nil, 1, nil))
	put(t, r, crdt.NewEntity(513, 1), 1100, 4, bytes.Repeat([]byte{7}, 12))
	tomb(t, r, crdt.NewEntity(513, 1), 1101, 5)
	put(t, r, crdt.NewEntity(514, 0), schema.ComponentMeta, 6, schema.AppendMeta(nil, 3, []byte("xyz")))
	put(t, r, crdt.NewEntity(514, 0), 1301, 7, []byte("var"))
	put(t, r, crdt.NewEntity(514, 0), 1308, 7, []byte{9})
	put(t, r, 0, compRoom, 8, []byte("room"))
	put(t, r, crdt.NewEntity(515, 0), schema.ComponentAuthority, 9, []byte{2, 0, 0, 0})
	delEntity(t, r, crdt.NewEntity(516, 3))
	appendVal(t, r, 0, compLog, 10, []byte("hi"))
	r.ObserveClock(20)
	return r
}

// tinyReceiver holds state of its own that overlaps tinyHost's, so that Apply has both merges
// and corrections to make.
func tinyReceiver(t testing.TB) *crdt.Replica {
	r := crdt.New(crdt.Config{})
	put(t, r, crdt.NewEntity(512, 0), 1200, 11, []byte{0})
	put(t, r, crdt.NewEntity(513, 1), 1100, 3, bytes.Repeat([]byte{8}, 12))
	put(t, r, crdt.NewEntity(517, 0), compUnknown, 4, []byte("mine"))
	delEntity(t, r, crdt.NewEntity(514, 0))
	appendVal(t, r, 0, compLog, 12, []byte("yo"))
	return r
}

func fuzzSeeds(t testing.TB) [][]byte {
	host := tinyHost(t)
	peers := []netmsg.PeerInfo{{PeerIndex: 1, PeerID: "h"}}
	return [][]byte{
		encode(t, host, testTable, Options{Term: 1, HostPeerIndex: 1, Peers: peers}),
		encode(t, host, testTable, Options{Cover: Only(8, 0, 1)}),
		encode(t, host, testTable, Options{Cover: All(1)}),
		encode(t, crdt.New(crdt.Config{}), testTable, Options{}),
	}
}

// FuzzApply decodes fuzz bytes as a HostSnapshot and applies it into a small replica that has
// state of its own. Nothing may panic. A rejected snapshot leaves the replica exactly as it was
// (hash and clock) and the corrections buffer untouched; an accepted one applied a second time
// changes nothing and yields the same corrections.
func FuzzApply(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	recvState := tinyReceiver(f).AppendState(nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		var s netmsg.HostSnapshot
		if _, err := netmsg.ConsumeHostSnapshot(data, &s); err != nil {
			return
		}
		checkApply(t, recvState, &s)
	})
}

// FuzzApplyHostState reaches deeper than FuzzApply: the spawns are those of a valid snapshot
// (the first one's update data replaced by the fuzzer when it gives any) and the fuzz bytes are
// the hostState, so the stamps, the cover and the stream inside it are what mutates.
func FuzzApplyHostState(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		s := decode(f, b)
		f.Add(bytes.Clone(s.HostState), []byte(nil))
		if len(s.Spawns) > 0 {
			f.Add(bytes.Clone(s.HostState), bytes.Clone(s.Spawns[0].UpdateData))
		}
	}
	base := decode(f, fuzzSeeds(f)[0])
	recvState := tinyReceiver(f).AppendState(nil)
	f.Fuzz(func(t *testing.T, hostState, update []byte) {
		s := *base
		s.Spawns = slices.Clone(base.Spawns)
		s.HostState = hostState
		if len(update) > 0 {
			s.Spawns[0].UpdateData = update
		}
		checkApply(t, recvState, &s)
	})
}

// checkApply applies s into a replica holding recvState and checks what FuzzApply promises.
func checkApply(t *testing.T, recvState []byte, s *netmsg.HostSnapshot) {
	r := crdt.New(crdt.Config{})
	if _, err := r.MergeStream(recvState); err != nil {
		t.Fatal(err)
	}
	hash, clock := r.Hash(), r.Clock()
	prefix := []byte{0xee}
	st, ierr := Inspect(s)
	_, corr, err := Apply(r, testTable, s, r.Merge, prefix)
	if ierr != nil && !errors.Is(ierr, ErrHostState) {
		t.Fatalf("Inspect error %v wraps no sentinel", ierr)
	}
	if err == nil && (ierr != nil || r.Clock() < st.Clock || st.MaxStamp > r.Clock()) {
		t.Fatalf("Apply took a snapshot Inspect read as %+v (%v); clock now %d", st, ierr, r.Clock())
	}
	if err != nil {
		if !errors.Is(err, ErrHostState) && !errors.Is(err, ErrSpawn) && !errors.Is(err, ErrSchemaMismatch) {
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if r.Hash() != hash || r.Clock() != clock {
			t.Fatalf("rejected snapshot (%v) changed the replica", err)
		}
		if len(corr) != 1 || corr[0] != 0xee {
			t.Fatalf("rejected snapshot wrote corrections")
		}
		return
	}
	if !bytes.HasPrefix(corr, prefix) {
		t.Fatal("corrections lost the buffer's prefix")
	}
	var rd crdt.Reader
	var m crdt.Message
	for rd.Reset(corr[1:]); ; {
		if err := rd.Next(&m); err != nil {
			var se *crdt.StreamError
			if errors.As(err, &se) {
				t.Fatalf("corrections are not a valid stream: %v", err)
			}
			break
		}
	}
	after := r.Hash()
	_, corr2, err := Apply(r, testTable, s, r.Merge, prefix[:1:1])
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if r.Hash() != after {
		t.Fatal("a second Apply changed the replica")
	}
	if !bytes.Equal(corr, corr2) {
		t.Fatal("a second Apply gave other corrections")
	}
}

// TestFuzzSeedsApply keeps the seeds meaningful: each one is accepted and merged.
func TestFuzzSeedsApply(t *testing.T) {
	for i, seed := range fuzzSeeds(t) {
		s := decode(t, seed)
		r := tinyReceiver(t)
		before := r.Hash()
		_, _, err := Apply(r, testTable, s, r.Merge, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if i < 3 && r.Hash() == before {
			t.Fatalf("seed %d merged nothing", i)
		}
	}
}
