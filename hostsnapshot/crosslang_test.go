package hostsnapshot_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/hostsnapshot"
	"github.com/concordrtc/concord/internal/testkit/golden"
	"github.com/concordrtc/concord/netmsg"
)

// crossPath holds the snapshots Go builds and the corrections Go's Apply returns, which the
// JavaScript module (web/static/js/hostsnapshot.js, tested by web/test/hostsnapshot.test.js) must
// reproduce byte for byte.
var crossPath = filepath.Join("..", "testdata", "hostsnapshot", "vectors.json")

// crossProps returns n properties on components base.. with fixed sizes 1–5 and every third
// property variable.
func crossProps(n int, base crdt.ComponentID) []schema.Property {
	ps := make([]schema.Property, n)
	for i := range ps {
		size := i%5 + 1
		if i%3 == 1 {
			size = 0
		}
		ps[i] = schema.Property{Name: fmt.Sprintf("p%d", i), Component: base + crdt.ComponentID(i), Size: size}
	}
	return ps
}

// crossTable has schemas of every mask width, a variable property, and a schema whose property
// order is not its component order.
var crossTable = schema.MustTable(
	schema.Schema{ID: 1, Name: "avatar", Properties: []schema.Property{
		{Name: "pos", Component: 1100, Size: 8}, {Name: "color", Component: 1101, Size: 4}, {Name: "name", Component: 1102},
	}},
	schema.Schema{ID: 2, Name: "nine", Properties: crossProps(9, 2000)},
	schema.Schema{ID: 3, Name: "seventeen", Properties: crossProps(17, 3000)},
	schema.Schema{ID: 4, Name: "room", Properties: []schema.Property{{Name: "score", Component: 1300, Size: 4}}},
	schema.Schema{ID: 5, Name: "backwards", Properties: []schema.Property{
		{Name: "c", Component: 1502, Size: 2}, {Name: "a", Component: 1500}, {Name: "b", Component: 1501, Size: 1},
	}},
)

const (
	compLog     crdt.ComponentID = 1900 // append values
	compUnknown crdt.ComponentID = 1901 // a component outside any schema
)

// world writes random entities into r: spawned entities of every schema with partial masks,
// tombstoned and wrong-size properties, authority and unknown components, unknown and short
// metas, deleted metas, deleted entities and versions, append values and room state.
type world struct {
	rng *rand.Rand
	r   *crdt.Replica
}

func (w *world) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(w.rng.Uint32())
	}
	return b
}

func (w *world) put(e crdt.Entity, c crdt.ComponentID, ts crdt.Timestamp, data []byte) {
	w.r.Merge(&crdt.Message{Type: crdt.PutComponent, Entity: e, Component: c, Timestamp: ts, Data: data})
}

func (w *world) ts() crdt.Timestamp { return crdt.Timestamp(1 + w.rng.IntN(200)) }

func (w *world) value(s *schema.Schema, i int) []byte {
	n := s.Properties[i].Size
	if n == 0 {
		n = w.rng.IntN(7)
	}
	return w.bytes(n)
}

// entity writes one entity of number n.
func (w *world) entity(n uint16) {
	e := crdt.NewEntity(n, uint16(w.rng.IntN(2)))
	ids := crossTable.IDs()
	s, _ := crossTable.Lookup(ids[w.rng.IntN(len(ids))])
	switch k := w.rng.IntN(30); {
	case k == 0: // no meta
		w.put(e, 1100, w.ts(), w.bytes(8))
		return
	case k == 1: // an unknown schema
		w.put(e, schema.ComponentMeta, w.ts(), schema.AppendMeta(nil, 99, w.bytes(2)))
		w.put(e, 1100, w.ts(), w.bytes(8))
		return
	case k == 2: // a meta too short
		w.put(e, schema.ComponentMeta, w.ts(), []byte{1, 0})
		return
	case k == 3: // a deleted meta
		w.r.Merge(&crdt.Message{Type: crdt.DeleteComponent, Entity: e, Component: schema.ComponentMeta, Timestamp: w.ts()})
		w.put(e, s.Properties[0].Component, w.ts(), w.value(s, 0))
		return
	}
	w.put(e, schema.ComponentMeta, w.ts(), schema.AppendMeta(nil, s.ID, w.bytes(w.rng.IntN(4))))
	for i, p := range s.Properties {
		switch k := w.rng.IntN(20); {
		case k < 13:
			w.put(e, p.Component, w.ts(), w.value(s, i))
		case k == 13:
			w.r.Merge(&crdt.Message{Type: crdt.DeleteComponent, Entity: e, Component: p.Component, Timestamp: w.ts()})
		case k == 14 && p.Size > 0:
			w.put(e, p.Component, w.ts(), w.bytes(p.Size+1)) // wrong size: travels in the stream
		}
	}
	if w.rng.IntN(4) == 0 {
		w.put(e, schema.ComponentAuthority, w.ts(), w.bytes(9))
	}
	if w.rng.IntN(6) == 0 {
		w.put(e, compUnknown, w.ts(), w.bytes(3))
	}
	if w.rng.IntN(5) == 0 {
		for range 1 + w.rng.IntN(3) {
			w.r.Merge(&crdt.Message{Type: crdt.AppendValue, Entity: e, Component: compLog, Timestamp: w.ts(), Data: w.bytes(1 + w.rng.IntN(3))})
		}
	}
}

func newWorld(seed uint64) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, 0x736e6170)), r: crdt.New(crdt.Config{})}
	for i := range 64 {
		w.entity(uint16(512 + i*37))
	}
	w.entity(0)
	w.entity(5)
	w.entity(65535)
	w.put(crdt.NewEntity(0, 0), compUnknown, w.ts(), []byte("room state"))
	for _, n := range []uint16{700, 701, 702} {
		w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(n, uint16(w.rng.IntN(3)))})
	}
	return w
}

func clone(r *crdt.Replica) *crdt.Replica {
	c := crdt.New(crdt.Config{})
	if _, err := c.MergeStream(r.AppendState(nil)); err != nil {
		panic(err)
	}
	c.ObserveClock(r.Clock())
	return c
}

// diverge changes some of what r holds and adds some more: newer and older values, new
// entities, deleted entities, append values.
func diverge(r *crdt.Replica, seed uint64) {
	w := &world{rng: rand.New(rand.NewPCG(seed, 0x64697665)), r: r}
	var entries []crdt.Entry
	r.Range(func(e crdt.Entry) bool {
		if w.rng.IntN(6) == 0 {
			entries = append(entries, crdt.Entry{Entity: e.Entity, Component: e.Component, Timestamp: e.Timestamp, Data: bytes.Clone(e.Data), Deleted: e.Deleted})
		}
		return true
	})
	for _, e := range entries {
		ts := e.Timestamp + crdt.Timestamp(1+w.rng.IntN(3))
		data := e.Data
		if len(data) > 0 && w.rng.IntN(2) == 0 {
			data = bytes.Clone(data)
			data[0]++
		}
		w.put(e.Entity, e.Component, ts, data)
	}
	for i := range 12 {
		w.entity(uint16(30000 + i*101))
	}
	for i := range 3 {
		w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(uint16(512+(i*7+3)*37), 1)})
	}
	w.r.Merge(&crdt.Message{Type: crdt.AppendValue, Entity: crdt.NewEntity(0, 0), Component: compLog, Timestamp: 3, Data: []byte("mine")})
	r.ObserveClock(r.Clock() + 17)
}

type jPeer struct {
	PeerIndex string `json:"peerIndex"`
	PeerID    string `json:"peerId"`
}

type jCover struct {
	Count   int   `json:"count"`
	Buckets []int `json:"buckets"` // nil: every bucket
}

type jOptions struct {
	Term           string  `json:"term"`
	LocalPeerIndex string  `json:"localPeerIndex"`
	HostPeerIndex  string  `json:"hostPeerIndex"`
	Peers          []jPeer `json:"peers"`
	Cover          jCover  `json:"cover"`
}

type jReplica struct {
	State string `json:"state"` // AppendState hex
	Clock uint32 `json:"clock"`
	Hash  string `json:"hash"`
}

type jBuild struct {
	Name     string   `json:"name"`
	Replica  string   `json:"replica"`
	Options  jOptions `json:"options"`
	Snapshot string   `json:"snapshot"` // the HostSnapshot message, hex
}

type jInfo struct {
	Term         string `json:"term"`
	Clock        uint32 `json:"clock"`
	Fingerprint  string `json:"fingerprint"`
	CoverCount   int    `json:"coverCount"`
	CoverBuckets int    `json:"coverBuckets"`
	Spawns       int    `json:"spawns"`
}

type jApply struct {
	Name        string `json:"name"`
	Build       string `json:"build"`
	Receiver    string `json:"receiver"`
	Info        jInfo  `json:"info"`
	Corrections string `json:"corrections"`
	After       jAfter `json:"after"`
}

// jAfter is the receiver after Apply: its clock and state hash.
type jAfter struct {
	Clock uint32 `json:"clock"`
	Hash  string `json:"hash"`
}

type jError struct {
	Name     string `json:"name"`
	Snapshot string `json:"snapshot"`
	Receiver string `json:"receiver"`
	Error    string `json:"error"` // host_state, schema_mismatch or spawn
}

type jSchema struct {
	ID         uint32 `json:"id"`
	Name       string `json:"name"`
	Properties []struct {
		Name      string `json:"name"`
		Component uint32 `json:"component"`
		Size      int    `json:"size"`
	} `json:"properties"`
}

type jFile struct {
	Note        string              `json:"note"`
	Schemas     []jSchema           `json:"schemas"`
	Fingerprint string              `json:"fingerprint"`
	Replicas    map[string]jReplica `json:"replicas"`
	Builds      []jBuild            `json:"builds"`
	Crafted     []jBuild            `json:"crafted"`
	Applies     []jApply            `json:"applies"`
	Errors      []jError            `json:"errors"`
}

func replicaJSON(r *crdt.Replica) jReplica {
	return jReplica{State: hex.EncodeToString(r.AppendState(nil)), Clock: uint32(r.Clock()), Hash: fmt.Sprintf("%016x", r.Hash())}
}

func (o jOptions) options() hostsnapshot.Options {
	u := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			panic(err)
		}
		return v
	}
	opts := hostsnapshot.Options{Term: u(o.Term), LocalPeerIndex: u(o.LocalPeerIndex), HostPeerIndex: u(o.HostPeerIndex)}
	for _, p := range o.Peers {
		opts.Peers = append(opts.Peers, netmsg.PeerInfo{PeerIndex: u(p.PeerIndex), PeerID: p.PeerID})
	}
	if o.Cover.Buckets == nil {
		opts.Cover = hostsnapshot.All(o.Cover.Count)
	} else {
		opts.Cover = hostsnapshot.Only(o.Cover.Count, o.Cover.Buckets...)
	}
	return opts
}

// hostStateOffsets returns the offsets of the cover, the stamp count and the stream length
// inside a hostState.
func hostStateOffsets(h []byte) (cover, stampCount, streamLen int) {
	count := int(binary.LittleEndian.Uint16(h[21:]))
	cover = 23
	stampCount = cover + (count+7)/8
	n := int(binary.LittleEndian.Uint32(h[stampCount:]))
	streamLen = stampCount + 4 + 4*n
	return cover, stampCount, streamLen
}

func errorClass(err error) string {
	switch {
	case errors.Is(err, hostsnapshot.ErrHostState):
		return "host_state"
	case errors.Is(err, hostsnapshot.ErrSchemaMismatch):
		return "schema_mismatch"
	case errors.Is(err, hostsnapshot.ErrSpawn):
		return "spawn"
	}
	panic(fmt.Sprintf("unclassified error %v", err))
}

func buildCrossFile() (*jFile, error) {
	f := &jFile{
		Note: "Written by `go test ./hostsnapshot -run TestCrossLanguageVectors -update` (hostsnapshot/crosslang_test.go); " +
			"checked by that test and by web/test/hostsnapshot.test.js. Replicas are canonical ADR-117 streams (AppendState) " +
			"plus their clock; snapshots are whole HostSnapshot messages; u64 values are decimal strings.",
		Fingerprint: fmt.Sprintf("%016x", crossTable.Fingerprint()),
		Replicas:    map[string]jReplica{},
	}
	for _, id := range crossTable.IDs() {
		s, _ := crossTable.Lookup(id)
		js := jSchema{ID: uint32(s.ID), Name: s.Name}
		for _, p := range s.Properties {
			js.Properties = append(js.Properties, struct {
				Name      string `json:"name"`
				Component uint32 `json:"component"`
				Size      int    `json:"size"`
			}{p.Name, uint32(p.Component), p.Size})
		}
		f.Schemas = append(f.Schemas, js)
	}

	base := newWorld(1)
	host := clone(base.r)
	diverge(host, 2)
	host.ObserveClock(host.Clock() + 1000) // the host's clock is above every stamp
	receiver := clone(base.r)
	diverge(receiver, 3)
	// Deletions of one number at different versions on both sides: the higher one must win and
	// be corrected.
	for i, v := range []uint16{0, 2} {
		host.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(40000+uint16(i), v)})
		receiver.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(40000+uint16(i), 2-v)})
	}
	replicas := map[string]*crdt.Replica{
		"empty":    crdt.New(crdt.Config{}),
		"host":     host,
		"receiver": receiver,
	}
	for name, r := range replicas {
		f.Replicas[name] = replicaJSON(r)
	}

	peers := []jPeer{{"1", "@host:example.org"}, {"2", "@zoë:例え.org"}, {"18446744073709551615", ""}}
	opts := func(term string, cover jCover) jOptions {
		return jOptions{Term: term, LocalPeerIndex: "2", HostPeerIndex: "1", Peers: peers, Cover: cover}
	}
	builds := []jBuild{
		{Name: "full", Replica: "host", Options: opts("7", jCover{Count: 256})},
		{Name: "partial", Replica: "host", Options: opts("8", jCover{Count: 16, Buckets: []int{0, 3, 5, 15, 16, -1}})},
		{Name: "one bucket", Replica: "host", Options: opts("9", jCover{Count: 1})},
		{Name: "widened", Replica: "host", Options: opts("10", jCover{Count: 5000, Buckets: []int{1, 2}})},
		{Name: "nothing covered", Replica: "host", Options: opts("11", jCover{Count: 256, Buckets: []int{}})},
		{Name: "empty world", Replica: "empty", Options: jOptions{Term: "0", LocalPeerIndex: "0", HostPeerIndex: "0", Peers: []jPeer{}, Cover: jCover{Count: 0}}},
		{Name: "receiver as host", Replica: "receiver", Options: opts("18446744073709551615", jCover{Count: 64, Buckets: []int{0, 1, 2, 3, 40, 63}})},
	}
	snaps := map[string]*netmsg.HostSnapshot{}
	for i := range builds {
		b := &builds[i]
		var s netmsg.HostSnapshot
		hostsnapshot.Build(&s, replicas[b.Replica], crossTable, b.Options.options())
		wire := netmsg.AppendHostSnapshot(nil, &s)
		b.Snapshot = hex.EncodeToString(wire)
		var back netmsg.HostSnapshot
		if _, err := netmsg.ConsumeHostSnapshot(wire, &back); err != nil {
			return nil, err
		}
		snaps[b.Name] = &back
	}
	f.Builds = builds

	// Crafted snapshots that Build never writes but Apply must handle as Go does: a stream that
	// repeats a spawned key (the stream's record wins when computing corrections) and deletions
	// of one number at falling versions (the highest counts).
	craft := func(name, from string, extra []crdt.Message) {
		src := snaps[from]
		s := *src
		s.HostState = bytes.Clone(src.HostState)
		_, _, streamAt := hostStateOffsets(s.HostState)
		n := binary.LittleEndian.Uint32(s.HostState[streamAt:])
		for i := range extra {
			before := len(s.HostState)
			s.HostState = crdt.AppendMessage(s.HostState, &extra[i])
			n += uint32(len(s.HostState) - before)
		}
		binary.LittleEndian.PutUint32(s.HostState[streamAt:], n)
		wire := netmsg.AppendHostSnapshot(nil, &s)
		f.Crafted = append(f.Crafted, jBuild{Name: name, Snapshot: hex.EncodeToString(wire)})
		var back netmsg.HostSnapshot
		if _, err := netmsg.ConsumeHostSnapshot(wire, &back); err != nil {
			panic(err)
		}
		snaps[name] = &back
	}
	sp := snaps["full"].Spawns[0]
	craft("stream repeats a spawned key", "full", []crdt.Message{
		{Type: crdt.PutComponent, Entity: crdt.Entity(sp.NetworkID), Component: schema.ComponentMeta, Timestamp: 1, Data: []byte("x")},
	})
	craft("deletions at falling versions", "full", []crdt.Message{
		{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(40001, 3)},
		{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(40001, 1)},
		{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(40000, 1)},
	})

	applies := []struct{ build, receiver string }{
		{"full", "empty"}, {"full", "receiver"}, {"partial", "receiver"}, {"one bucket", "receiver"},
		{"widened", "receiver"}, {"nothing covered", "receiver"}, {"empty world", "receiver"},
		{"receiver as host", "host"}, {"partial", "empty"},
		{"stream repeats a spawned key", "empty"}, {"deletions at falling versions", "receiver"},
	}
	for _, a := range applies {
		r := clone(replicas[a.receiver])
		info, corr, err := hostsnapshot.Apply(r, crossTable, snaps[a.build], r.Merge, nil)
		if err != nil {
			return nil, fmt.Errorf("apply %s to %s: %w", a.build, a.receiver, err)
		}
		f.Applies = append(f.Applies, jApply{
			Name: a.build + " into " + a.receiver, Build: a.build, Receiver: a.receiver,
			Info: jInfo{
				Term: strconv.FormatUint(info.Term, 10), Clock: uint32(info.Clock), Fingerprint: fmt.Sprintf("%016x", info.Fingerprint),
				CoverCount: info.Cover.Count(), CoverBuckets: info.Cover.Len(), Spawns: info.Spawns,
			},
			Corrections: hex.EncodeToString(corr),
			After:       jAfter{Clock: uint32(r.Clock()), Hash: fmt.Sprintf("%016x", r.Hash())},
		})
	}

	// Malformed snapshots, each a mutation of "partial", with the error class Go's Apply returns.
	full := snaps["partial"]
	mutate := func(name string, fn func(s *netmsg.HostSnapshot)) error {
		s := *full
		s.Peers = append([]netmsg.PeerInfo(nil), full.Peers...)
		s.Spawns = append([]netmsg.Spawn(nil), full.Spawns...)
		s.HostState = bytes.Clone(full.HostState)
		fn(&s)
		r := clone(receiver)
		before := r.Hash()
		_, _, err := hostsnapshot.Apply(r, crossTable, &s, r.Merge, nil)
		if err == nil {
			return fmt.Errorf("mutation %q: Apply accepted it", name)
		}
		if r.Hash() != before {
			return fmt.Errorf("mutation %q: Apply merged something before failing", name)
		}
		f.Errors = append(f.Errors, jError{Name: name, Snapshot: hex.EncodeToString(netmsg.AppendHostSnapshot(nil, &s)), Receiver: "receiver", Error: errorClass(err)})
		return nil
	}
	_, stampAt, streamAt := hostStateOffsets(full.HostState)
	muts := []struct {
		name string
		fn   func(s *netmsg.HostSnapshot)
	}{
		{"version 2", func(s *netmsg.HostSnapshot) { s.HostState[0] = 2 }},
		{"host state cut to 22 bytes", func(s *netmsg.HostSnapshot) { s.HostState = s.HostState[:22] }},
		{"empty host state", func(s *netmsg.HostSnapshot) { s.HostState = nil }},
		{"bucket count 0", func(s *netmsg.HostSnapshot) { binary.LittleEndian.PutUint16(s.HostState[21:], 0) }},
		{"bucket count 4097", func(s *netmsg.HostSnapshot) { binary.LittleEndian.PutUint16(s.HostState[21:], 4097) }},
		{"cover truncated", func(s *netmsg.HostSnapshot) { s.HostState = s.HostState[:23+2+3] }},
		{"fingerprint differs", func(s *netmsg.HostSnapshot) { s.HostState[13] ^= 1 }},
		{"fingerprint differs and version bad", func(s *netmsg.HostSnapshot) { s.HostState[13] ^= 1; s.HostState[0] = 0 }},
		{"stamp count too large", func(s *netmsg.HostSnapshot) {
			binary.LittleEndian.PutUint32(s.HostState[stampAt:], 0xffffffff)
		}},
		{"one stamp missing", func(s *netmsg.HostSnapshot) {
			n := binary.LittleEndian.Uint32(s.HostState[stampAt:])
			binary.LittleEndian.PutUint32(s.HostState[stampAt:], n-1)
			s.HostState = append(s.HostState[:stampAt+4+4*int(n-1)], s.HostState[stampAt+4+4*int(n):]...)
		}},
		{"stream length off by one", func(s *netmsg.HostSnapshot) {
			n := binary.LittleEndian.Uint32(s.HostState[streamAt:])
			binary.LittleEndian.PutUint32(s.HostState[streamAt:], n+1)
		}},
		{"stream with a malformed message", func(s *netmsg.HostSnapshot) {
			n := binary.LittleEndian.Uint32(s.HostState[streamAt:])
			binary.LittleEndian.PutUint32(s.HostState[streamAt:], n+8)
			s.HostState = append(s.HostState, 4, 0, 0, 0, 1, 0, 0, 0)
		}},
		{"unknown schema", func(s *netmsg.HostSnapshot) { s.Spawns[3].SchemaID = 99 }},
		{"network id above 32 bits", func(s *netmsg.HostSnapshot) { s.Spawns[5].NetworkID |= 1 << 32 }},
		{"update data cut", func(s *netmsg.HostSnapshot) {
			u := s.Spawns[7].UpdateData
			s.Spawns[7].UpdateData = u[:len(u)-1]
		}},
		{"update data empty", func(s *netmsg.HostSnapshot) { s.Spawns[0].UpdateData = nil }},
		{"update data with a trailing byte", func(s *netmsg.HostSnapshot) {
			s.Spawns[2].UpdateData = append(bytes.Clone(s.Spawns[2].UpdateData), 0)
		}},
		{"mask past the schema", func(s *netmsg.HostSnapshot) {
			u := bytes.Clone(s.Spawns[1].UpdateData)
			u[0] |= 0x80 // every schema here has fewer than 8 properties in its first mask byte, or 9/17
			s.Spawns[1].UpdateData = u
		}},
		{"one spawn fewer", func(s *netmsg.HostSnapshot) { s.Spawns = s.Spawns[1:] }},
	}
	for _, m := range muts {
		if err := mutate(m.name, m.fn); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// TestCrossLanguageVectors writes (with -update) or checks testdata/hostsnapshot/vectors.json:
// replicas, the snapshots Go builds of them (full and partial covers), what Go's Apply returns for
// a receiver (info, corrections, the merged replica) and the error class of malformed snapshots.
func TestCrossLanguageVectors(t *testing.T) {
	f, err := buildCrossFile()
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if golden.Check(t, crossPath, got, "go test ./hostsnapshot -run TestCrossLanguageVectors -update") {
		return
	}
	// The vectors must exercise what they claim: corrections flow both ways, partial covers
	// carry less, and every error class appears.
	classes := map[string]bool{}
	for _, e := range f.Errors {
		classes[e.Error] = true
	}
	if !classes["host_state"] || !classes["schema_mismatch"] || !classes["spawn"] {
		t.Fatalf("error classes %v", classes)
	}
	for _, a := range f.Applies {
		if a.Build == "full" && a.Receiver == "receiver" && a.Corrections == "" {
			t.Fatal("a divergent receiver returned no corrections")
		}
	}
}
