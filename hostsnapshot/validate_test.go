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

// smallWorld is a host with spawns of every mask width, a stream and appends, and a receiver
// that already holds state, so that "nothing merged" is visible in its hash and clock.
func smallWorld(t testing.TB) (host, recv *crdt.Replica) {
	t.Helper()
	host = richWorld(t, 51)
	recv = crdt.New(crdt.Config{})
	put(t, recv, crdt.NewEntity(512, 0), compUnknown, 3, []byte("mine"))
	delEntity(t, recv, crdt.NewEntity(999, 1))
	return host, recv
}

// hostStateLayout returns the offsets of a hostState's variable parts.
func hostStateLayout(t testing.TB, hs []byte) (stampCountAt, streamLenAt int) {
	t.Helper()
	nb := (int(le.Uint16(hs[21:])) + 7) / 8
	stampCountAt = hostStateFixed + nb
	ns := int(le.Uint32(hs[stampCountAt:]))
	streamLenAt = stampCountAt + 4 + 4*ns
	if int(le.Uint32(hs[streamLenAt:])) != len(hs)-streamLenAt-4 {
		t.Fatal("layout helper disagrees with the hostState")
	}
	return stampCountAt, streamLenAt
}

// requireRejected applies s to a copy of recv and requires err to match want while the replica,
// its clock and the corrections buffer stay untouched and merge is never called.
func requireRejected(t *testing.T, recv *crdt.Replica, tab *schema.Table, s *netmsg.HostSnapshot, want ...error) {
	t.Helper()
	r := clone(t, recv)
	hash, clock := r.Hash(), r.Clock()
	calls := 0
	prefix := []byte("keep")
	_, corr, err := Apply(r, tab, s, countingMerge(r, &calls), prefix)
	if err == nil {
		t.Fatal("Apply accepted a malformed snapshot")
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Fatalf("Apply error %v does not wrap %v", err, w)
		}
	}
	if calls != 0 || r.Hash() != hash || r.Clock() != clock {
		t.Fatalf("Apply merged %d messages before failing (%v)", calls, err)
	}
	if string(corr) != "keep" {
		t.Fatalf("corrections %q changed on error", corr)
	}
}

func TestApplySchemaMismatch(t *testing.T) {
	host, recv := smallWorld(t)
	s := decode(t, encode(t, host, testTable, Options{}))
	other := schema.MustTable(schema.Schema{ID: 1, Name: "player", Properties: []schema.Property{{Name: "pos", Component: 1100, Size: 16}}})
	requireRejected(t, recv, other, s, ErrSchemaMismatch)
	// Info still says what the host runs, so the caller can report it.
	_, _, err := Apply(crdt.New(crdt.Config{}), other, s, func(*crdt.Message) crdt.Outcome { return crdt.NoChange }, nil)
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Fatal(err)
	}
	info, _, _ := Apply(crdt.New(crdt.Config{}), other, s, func(*crdt.Message) crdt.Outcome { return crdt.NoChange }, nil)
	if info.Fingerprint != testTable.Fingerprint() {
		t.Fatalf("info fingerprint %016x, want the host's %016x", info.Fingerprint, testTable.Fingerprint())
	}
}

func TestApplyMalformedHostState(t *testing.T) {
	host, recv := smallWorld(t)
	s := decode(t, encode(t, host, testTable, Options{Cover: Only(256, 0, 1, 2, 3, 64, 65, 83, 84, 255)}))
	valid := bytes.Clone(s.HostState)
	stampCountAt, streamLenAt := hostStateLayout(t, valid)
	if le.Uint32(valid[stampCountAt:]) == 0 || le.Uint32(valid[streamLenAt:]) == 0 {
		t.Fatal("the snapshot has no stamps or no stream")
	}
	with := func(edit func(hs []byte) []byte) *netmsg.HostSnapshot {
		c := *s
		c.HostState = edit(bytes.Clone(valid))
		return &c
	}
	setU32 := func(at int, v uint32) func([]byte) []byte {
		return func(hs []byte) []byte { le.PutUint32(hs[at:], v); return hs }
	}
	// replaceStream swaps the stream for b and fixes its length, so only the stream is bad.
	replaceStream := func(b []byte) func([]byte) []byte {
		return func(hs []byte) []byte {
			hs = le.AppendUint32(hs[:streamLenAt], uint32(len(b)))
			return append(hs, b...)
		}
	}
	put := crdt.AppendMessage(nil, &crdt.Message{Type: crdt.PutComponent, Entity: 512, Component: 7, Timestamp: 1, Data: []byte("ok")})
	badLen := bytes.Clone(put)
	le.PutUint32(badLen[20:], 3) // dataLen disagrees with the length
	short := []byte{7, 0, 0, 0, 1, 0, 0, 0}
	tests := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"version 0", func(hs []byte) []byte { hs[0] = 0; return hs }},
		{"version 2", func(hs []byte) []byte { hs[0] = Version + 1; return hs }},
		{"bucket count 0", func(hs []byte) []byte { le.PutUint16(hs[21:], 0); return hs }},
		{"bucket count above MaxBuckets", func(hs []byte) []byte { le.PutUint16(hs[21:], MaxBuckets+1); return hs }},
		{"bucket count 65535", func(hs []byte) []byte { le.PutUint16(hs[21:], 65535); return hs }},
		{"stamp count max", setU32(stampCountAt, ^uint32(0))},
		{"stamp count past the end", setU32(stampCountAt, uint32(len(valid)/4))},
		{"stamp count one more", setU32(stampCountAt, le.Uint32(valid[stampCountAt:])+1)},
		{"stamp count one less", setU32(stampCountAt, le.Uint32(valid[stampCountAt:])-1)},
		{"stream length one more", setU32(streamLenAt, le.Uint32(valid[streamLenAt:])+1)},
		{"stream length one less", setU32(streamLenAt, le.Uint32(valid[streamLenAt:])-1)},
		{"stream length max", setU32(streamLenAt, ^uint32(0))},
		{"trailing byte", func(hs []byte) []byte { return append(hs, 0) }},
		{"stream message length below header", replaceStream(append(bytes.Clone(put), short...))},
		{"stream message data length mismatch", replaceStream(append(bytes.Clone(put), badLen...))},
		{"stream truncated message", replaceStream(append(bytes.Clone(put), put[:len(put)-1]...))},
		{"stream message too large", replaceStream([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireRejected(t, recv, testTable, with(tc.edit), ErrHostState)
		})
	}
	t.Run("every truncation", func(t *testing.T) {
		for n := range len(valid) {
			c := *s
			c.HostState = valid[:n]
			requireRejected(t, recv, testTable, &c, ErrHostState)
		}
	})
	t.Run("an unknown stream message type is skipped", func(t *testing.T) {
		// Unknown ADR-117 types are skipped by every reader; they do not make a snapshot invalid.
		unknown := []byte{12, 0, 0, 0, 99, 0, 0, 0, 1, 2, 3, 4}
		c := with(replaceStream(append(bytes.Clone(put), unknown...)))
		r := clone(t, recv)
		if _, _, err := Apply(r, testTable, c, r.Merge, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, ok, _ := r.Get(512, 7); !ok {
			t.Fatal("the known message next to the unknown one was not merged")
		}
	})
}

func TestApplyMalformedSpawn(t *testing.T) {
	host, recv := smallWorld(t)
	s := decode(t, encode(t, host, testTable, Options{}))
	// The edited spawn is the last one, so that a merge-as-you-go Apply would have merged others.
	last := len(s.Spawns) - 1
	bySchema := func(id schema.ID) int {
		for i := len(s.Spawns) - 1; i >= 0; i-- {
			if s.Spawns[i].SchemaID == uint32(id) {
				return i
			}
		}
		t.Fatalf("no spawn of schema %d", id)
		return 0
	}
	door := bySchema(2) // one fixed byte, u8 mask
	p17 := bySchema(4)  // u32 mask
	player := bySchema(1)
	with := func(i int, edit func(sp *netmsg.Spawn)) *netmsg.HostSnapshot {
		c := *s
		c.Spawns = slices.Clone(s.Spawns)
		sp := c.Spawns[i]
		sp.UpdateData = bytes.Clone(sp.UpdateData)
		edit(&sp)
		c.Spawns[i] = sp
		if i != len(c.Spawns)-1 { // move it to the end
			c.Spawns = append(slices.Delete(c.Spawns, i, i+1), sp)
		}
		return &c
	}
	tests := []struct {
		name string
		s    *netmsg.HostSnapshot
		want []error
	}{
		{"unknown schema", with(last, func(sp *netmsg.Spawn) { sp.SchemaID = 99 }), []error{ErrSpawn, schema.ErrUnknownSchema}},
		{"network id upper bits", with(last, func(sp *netmsg.Spawn) { sp.NetworkID |= 1 << 32 }), []error{ErrSpawn}},
		{"network id top bit", with(last, func(sp *netmsg.Spawn) { sp.NetworkID |= 1 << 63 }), []error{ErrSpawn}},
		{"empty update data", with(door, func(sp *netmsg.Spawn) { sp.UpdateData = nil }), []error{ErrSpawn}},
		{"u32 mask cut", with(p17, func(sp *netmsg.Spawn) { sp.UpdateData = sp.UpdateData[:3] }), []error{ErrSpawn}},
		{"mask out of range", with(door, func(sp *netmsg.Spawn) { sp.UpdateData[0] |= 2 }), []error{ErrSpawn, schema.ErrMaskOutOfRange}},
		{"u32 mask out of range", with(p17, func(sp *netmsg.Spawn) { sp.UpdateData[3] |= 0x80 }), []error{ErrSpawn, schema.ErrMaskOutOfRange}},
		{"short values", with(player, func(sp *netmsg.Spawn) { sp.UpdateData = sp.UpdateData[:len(sp.UpdateData)-1] }), []error{ErrSpawn, schema.ErrShortData}},
		{"trailing value bytes", with(player, func(sp *netmsg.Spawn) { sp.UpdateData = append(sp.UpdateData, 0) }), []error{ErrSpawn, schema.ErrTrailingData}},
		{"spawn missing (stamps do not add up)", func() *netmsg.HostSnapshot {
			c := *s
			c.Spawns = s.Spawns[:last]
			return &c
		}(), []error{ErrHostState}},
		{"mask bit cleared (stamps do not add up)", with(door, func(sp *netmsg.Spawn) { sp.UpdateData = []byte{0} }), []error{ErrHostState}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireRejected(t, recv, testTable, tc.s, tc.want...)
		})
	}
}
