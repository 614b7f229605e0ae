package hostsnapshot

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
)

// Version is the hostState layout version this package writes and reads.
const Version = 1

// hostState layout (little-endian):
//
//	version u8 | term u64 | clock u32 | fingerprint u64 | bucketCount u16 | cover [ceil(bucketCount/8)]byte |
//	stampCount u32 | stamps [stampCount]u32 | streamLength u32 | stream (ADR-117 messages)
//
// stamps hold, for each spawn in order, the timestamp of its meta component and then the timestamp of each
// property present in its update data, in property order.
const hostStateFixed = 1 + 8 + 4 + 8 + 2

var le = binary.LittleEndian

// Options say what a snapshot is for.
type Options struct {
	// Term is the host's term.
	Term uint64
	// LocalPeerIndex is the receiver's peer index; HostPeerIndex the sender's.
	LocalPeerIndex, HostPeerIndex uint64
	// Peers are the members the host knows.
	Peers []netmsg.PeerInfo
	// Cover says which buckets to carry; the zero value carries everything. A cover of more
	// than MaxBuckets buckets is widened to every bucket.
	Cover Cover
	// Keep, when set, narrows the snapshot to the entity numbers it accepts (a member's interest):
	// the receiver holds nothing else, so a number the snapshot leaves out is none of its business
	// and not a difference.
	Keep func(n uint16) bool
	// Cache, when set, keeps the encoded pages of whole-world snapshots (every bucket, no Keep)
	// from one Build to the next; the snapshot is the same with or without it.
	Cache *Cache
}

// Info is what Apply learned from a snapshot's hostState.
type Info struct {
	Term        uint64
	Clock       crdt.Timestamp
	Fingerprint uint64
	Cover       Cover
	Spawns      int
}

// Build fills dst with a snapshot of r. dst's slices are reused; its byte fields alias one buffer owned by
// dst afterwards. Build does not modify r.
func Build(dst *netmsg.HostSnapshot, r *crdt.Replica, t *schema.Table, o Options) {
	if o.Cover.Count() > MaxBuckets {
		// hostState cannot express this many buckets (Apply rejects them): carry every bucket,
		// which is always a valid snapshot.
		o.Cover = All(0)
	}
	cover := o.Cover
	if o.Keep != nil {
		cover.keep = o.Keep
	}
	b := builder{r: r, t: t, cover: cover}
	b.stream = make([]byte, 0, 1024)
	// Sized for the covered share of the replica at once, not grown by doubling through it: a
	// late join's snapshot is the whole world.
	cached := o.Cache != nil && o.Keep == nil && o.Cover.IsAll()
	if share := o.Cover.Len(); share > 0 {
		values := r.Len() * share / o.Cover.Count()
		b.arena = make([]byte, 0, r.Size()*share/o.Cover.Count()) // dst's to keep
		if cached {
			// Copied out below: the cache's scratch serves every Build.
			b.stamps = slices.Grow(o.Cache.stamps[:0], values)
			b.spawns = slices.Grow(o.Cache.spawns[:0], r.LiveEntities())
		} else {
			b.stamps = make([]crdt.Timestamp, 0, values)
			b.spawns = make([]spawnRef, 0, r.LiveEntities()*share/o.Cover.Count())
		}
	}
	del := func(number, version uint16) {
		m := crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(number, version)}
		b.stream = crdt.AppendMessage(b.stream, &m)
	}
	if cached {
		// The deletions, then the cached pages' spawns and stream, then the append values: the
		// order of the walk below, without the walk of every LWW entry.
		var tail []byte
		walkCover(r, cover, del, nil, func(a crdt.AppendEntry) {
			m := crdt.Message{Type: crdt.AppendValue, Entity: a.Entity, Component: a.Component, Timestamp: a.Timestamp, Data: a.Data}
			tail = crdt.AppendMessage(tail, &m)
		})
		o.Cache.fill(&b)
		b.stream = append(b.stream, tail...)
		defer func() { o.Cache.stamps, o.Cache.spawns = b.stamps, b.spawns }()
	} else {
		walkCover(r, cover, del, func(e crdt.Entry) {
			if len(b.entries) > 0 && b.entries[0].Entity != e.Entity {
				b.flush()
			}
			b.entries = append(b.entries, e)
		}, func(a crdt.AppendEntry) {
			if len(b.entries) > 0 {
				b.flush() // the last entity's entries, before the first append value
			}
			m := crdt.Message{Type: crdt.AppendValue, Entity: a.Entity, Component: a.Component, Timestamp: a.Timestamp, Data: a.Data}
			b.stream = crdt.AppendMessage(b.stream, &m)
		})
		b.flush()
	}

	dst.HostTime = uint64(r.Clock())
	dst.LocalPeerIndex, dst.HostPeerIndex = o.LocalPeerIndex, o.HostPeerIndex
	dst.Peers = append(dst.Peers[:0], o.Peers...)
	dst.Spawns = dst.Spawns[:0]
	for _, s := range b.spawns {
		dst.Spawns = append(dst.Spawns, netmsg.Spawn{
			NetworkID:    s.id,
			SchemaID:     s.schema,
			CreationData: b.arena[s.creation[0]:s.creation[1]:s.creation[1]],
			UpdateData:   b.arena[s.update[0]:s.update[1]:s.update[1]],
		})
	}

	h := slices.Grow(dst.HostState[:0], hostStateFixed+(o.Cover.Count()+7)/8+8+4*len(b.stamps)+len(b.stream))
	h = append(h, Version)
	h = le.AppendUint64(h, o.Term)
	h = le.AppendUint32(h, uint32(r.Clock()))
	h = le.AppendUint64(h, t.Fingerprint())
	h = le.AppendUint16(h, uint16(o.Cover.Count()))
	h = o.Cover.appendBitmap(h)
	h = le.AppendUint32(h, uint32(len(b.stamps)))
	for _, ts := range b.stamps {
		h = le.AppendUint32(h, uint32(ts))
	}
	h = le.AppendUint32(h, uint32(len(b.stream)))
	h = append(h, b.stream...)
	dst.HostState = h
}

type spawnRef struct {
	id               uint64
	schema           uint32
	creation, update [2]int
}

type builder struct {
	r       *crdt.Replica
	t       *schema.Table
	cover   Cover
	entries []crdt.Entry
	spawns  []spawnRef
	stamps  []crdt.Timestamp
	arena   []byte
	stream  []byte
	vals    [schema.MaxProperties]crdt.Entry
}

// flush turns the buffered entries of one entity into a spawn plus stream messages.
func (b *builder) flush() {
	defer func() { b.entries = b.entries[:0] }()
	if len(b.entries) == 0 || !b.cover.Number(b.entries[0].Entity.Number()) {
		return
	}
	e := b.entries[0].Entity
	var s *schema.Schema
	var meta crdt.Entry
	for _, en := range b.entries {
		if en.Component == schema.ComponentMeta && !en.Deleted {
			if id, _, ok := schema.ParseMeta(en.Data); ok {
				s, _ = b.t.Lookup(id)
				meta = en
			}
		}
	}
	if s == nil {
		for _, en := range b.entries {
			b.streamEntry(en)
		}
		return
	}
	var mask uint32
	for _, en := range b.entries {
		if en.Component == schema.ComponentMeta {
			continue
		}
		i, ok := s.Index(en.Component)
		if !ok || en.Deleted || s.CheckValue(i, en.Data) != nil {
			b.streamEntry(en)
			continue
		}
		mask |= 1 << i
		b.vals[i] = en
	}
	_, creation, _ := schema.ParseMeta(meta.Data)
	ref := spawnRef{id: uint64(e), schema: uint32(s.ID)}
	ref.creation[0] = len(b.arena)
	b.arena = append(b.arena, creation...)
	ref.creation[1] = len(b.arena)
	ref.update[0] = len(b.arena)
	b.arena = appendMask(b.arena, len(s.Properties), mask)
	b.stamps = append(b.stamps, meta.Timestamp)
	for i := range s.Properties {
		if mask&(1<<i) != 0 {
			b.arena = s.AppendValue(b.arena, i, b.vals[i].Data)
			b.stamps = append(b.stamps, b.vals[i].Timestamp)
		}
	}
	ref.update[1] = len(b.arena)
	b.spawns = append(b.spawns, ref)
}

func (b *builder) streamEntry(en crdt.Entry) {
	m := crdt.Message{Type: crdt.PutComponent, Entity: en.Entity, Component: en.Component, Timestamp: en.Timestamp, Data: en.Data}
	if en.Deleted {
		m.Type, m.Data = crdt.DeleteComponent, nil
	}
	b.stream = crdt.AppendMessage(b.stream, &m)
}

// appendMask appends mask in the width a schema of n properties uses.
func appendMask(dst []byte, n int, mask uint32) []byte {
	w, _ := netmsg.MaskWidth(n)
	switch w {
	case netmsg.Width8:
		return append(dst, byte(mask))
	case netmsg.Width16:
		return le.AppendUint16(dst, uint16(mask))
	default:
		return le.AppendUint32(dst, mask)
	}
}

// consumeMask reads a mask in the width a schema of n properties uses; data aliases b.
func consumeMask(b []byte, n int) (mask uint32, data []byte, ok bool) {
	w, _ := netmsg.MaskWidth(n)
	size := w.Bytes()
	if len(b) < size {
		return 0, nil, false
	}
	switch size {
	case 1:
		mask = uint32(b[0])
	case 2:
		mask = uint32(le.Uint16(b))
	default:
		mask = le.Uint32(b)
	}
	return mask, b[size:], true
}

// SpawnValues calls fn for each property value carried by a spawn's update data (or a HostCommands spawn,
// which uses the same layout). Values alias the spawn.
func SpawnValues(s *schema.Schema, updateData []byte, fn func(i int, v []byte)) error {
	return spawnValues(s, updateData, fn, false)
}

// walkSpawn is SpawnValues in one pass over the values (schema.Schema.WalkValues): Apply checks
// every spawn with it before it merges anything, then merges them with it.
func walkSpawn(s *schema.Schema, updateData []byte, fn func(i int, v []byte)) error {
	return spawnValues(s, updateData, fn, true)
}

func spawnValues(s *schema.Schema, updateData []byte, fn func(i int, v []byte), onePass bool) error {
	mask, data, ok := consumeMask(updateData, len(s.Properties))
	if !ok {
		return fmt.Errorf("%w: update data shorter than its mask", ErrSpawn)
	}
	var err error
	if onePass {
		err = s.WalkValues(data, mask, fn)
	} else {
		err = s.ConsumeValues(data, mask, fn)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSpawn, err)
	}
	return nil
}

// AppendSpawnUpdate appends the update data of a spawn: the mask, then the values it names.
// value(i) returns property i's value; the caller has checked every value against the schema.
func AppendSpawnUpdate(dst []byte, s *schema.Schema, mask uint32, value func(i int) []byte) []byte {
	dst = appendMask(dst, len(s.Properties), mask)
	for i := range s.Properties {
		if mask&(1<<i) != 0 {
			dst = s.AppendValue(dst, i, value(i))
		}
	}
	return dst
}

type hostState struct {
	info   Info
	stamps []byte // stampCount × u32, aliases the snapshot
	stream []byte // aliases the snapshot
}

func parseHostState(b []byte) (hostState, error) {
	var h hostState
	if len(b) < hostStateFixed {
		return h, fmt.Errorf("%w: %d bytes", ErrHostState, len(b))
	}
	if b[0] != Version {
		return h, fmt.Errorf("%w: version %d, want %d", ErrHostState, b[0], Version)
	}
	h.info.Term = le.Uint64(b[1:])
	h.info.Clock = crdt.Timestamp(le.Uint32(b[9:]))
	h.info.Fingerprint = le.Uint64(b[13:])
	count := int(le.Uint16(b[21:]))
	if count < 1 || count > MaxBuckets {
		return h, fmt.Errorf("%w: bucket count %d", ErrHostState, count)
	}
	b = b[hostStateFixed:]
	nb := (count + 7) / 8
	if len(b) < nb+4 {
		return h, fmt.Errorf("%w: cover truncated", ErrHostState)
	}
	h.info.Cover = Cover{count: count, some: bytes.Clone(b[:nb])}
	b = b[nb:]
	ns := le.Uint32(b)
	b = b[4:]
	if uint64(ns)*4+4 > uint64(len(b)) {
		return h, fmt.Errorf("%w: %d stamps in %d bytes", ErrHostState, ns, len(b))
	}
	h.stamps, b = b[:ns*4], b[ns*4:]
	nm := le.Uint32(b)
	b = b[4:]
	if uint64(nm) != uint64(len(b)) {
		return h, fmt.Errorf("%w: stream length %d, %d bytes left", ErrHostState, nm, len(b))
	}
	h.stream = b
	return h, nil
}

// lwwRec is the value a snapshot carried for one LWW key.
type lwwRec struct {
	key     uint64 // uint64(entity)<<32 | component, the order of Replica.Range
	data    []byte // aliases the snapshot (or the rebuilt meta values)
	ts      crdt.Timestamp
	deleted bool
}

// lwwRun is a list of snapshot records sorted by key, equal keys in merge order. Apply looks
// records up by walking the run alongside Replica.Range, whose keys ascend: a merge join in
// place of a hash map, since a snapshot built by Build is already in key order.
type lwwRun struct {
	recs []lwwRec
	i    int
}

func cmpRec(a, b lwwRec) int { return cmp.Compare(a.key, b.key) }

// sortFrom sorts recs[from:] (stable, so equal keys stay in merge order) unless already sorted.
func (u *lwwRun) sortFrom(from int) {
	if tail := u.recs[from:]; !slices.IsSortedFunc(tail, cmpRec) {
		slices.SortStableFunc(tail, cmpRec)
	}
}

// record appends the record of an LWW message (a put or a component's deletion).
func (u *lwwRun) record(m *crdt.Message) {
	k := uint64(m.Entity)<<32 | uint64(m.Component)
	if m.Type == crdt.DeleteComponent || m.Type == crdt.DeleteComponentNetwork {
		u.recs = append(u.recs, lwwRec{key: k, ts: m.Timestamp, deleted: true})
		return
	}
	u.recs = append(u.recs, lwwRec{key: k, ts: m.Timestamp, data: m.Data})
}

// eachValue calls fn with the LWW messages of s's spawns (of hostState h, checked whole): each
// spawn's meta, then its values in property order; after each spawn, spawnDone with the length
// spawned's records had before it. One Message serves every call (it escapes through fn, so a
// Message per value would be a heap allocation per value); the meta values are rebuilt into one
// buffer that is only ever appended to, since records keep them until the corrections are done.
func eachValue(t *schema.Table, s *netmsg.HostSnapshot, h hostState, fn func(*crdt.Message), spawnDone func(first int), spawned *lwwRun) {
	var m crdt.Message
	var metaBuf []byte
	stamps := h.stamps
	nextStamp := func() crdt.Timestamp {
		ts := crdt.Timestamp(le.Uint32(stamps))
		stamps = stamps[4:]
		return ts
	}
	for i := range s.Spawns {
		sp := &s.Spawns[i]
		sc, _ := spawnSchema(t, sp) // checked
		e := crdt.Entity(sp.NetworkID)
		start := len(metaBuf)
		metaBuf = schema.AppendMeta(metaBuf, sc.ID, sp.CreationData)
		first := len(spawned.recs)
		m = crdt.Message{Type: crdt.PutComponent, Entity: e, Component: schema.ComponentMeta, Timestamp: nextStamp(), Data: metaBuf[start:len(metaBuf):len(metaBuf)]}
		fn(&m)
		_ = walkSpawn(sc, sp.UpdateData, func(i int, v []byte) { // checked
			m = crdt.Message{Type: crdt.PutComponent, Entity: e, Component: sc.Properties[i].Component, Timestamp: nextStamp(), Data: v}
			fn(&m)
		})
		spawnDone(first)
	}
}

// find returns the last record of key k, or nil. Successive calls must ask ascending keys.
func (u *lwwRun) find(k uint64) *lwwRec {
	for u.i < len(u.recs) && u.recs[u.i].key < k {
		u.i++
	}
	var rec *lwwRec
	for u.i < len(u.recs) && u.recs[u.i].key == k {
		rec = &u.recs[u.i]
		u.i++
	}
	return rec
}

// Apply merges snapshot s into a replica through merge (which must merge into r and may keep indexes of its
// own up to date; like Replica.Merge it must not retain the message, which Apply reuses), raises r's clock to the host's, and appends to corrections every entry of the covered
// buckets where the replica wins over the snapshot, as ADR-117 messages. It validates the whole snapshot
// before merging anything: on error nothing was merged.
func Apply(r *crdt.Replica, t *schema.Table, s *netmsg.HostSnapshot, merge func(*crdt.Message) crdt.Outcome, corrections []byte) (Info, []byte, error) {
	h, err := parseHostState(s.HostState)
	if err != nil {
		return Info{}, corrections, err
	}
	if h.info.Fingerprint != t.Fingerprint() {
		return h.info, corrections, fmt.Errorf("%w: host %016x, ours %016x", ErrSchemaMismatch, h.info.Fingerprint, t.Fingerprint())
	}
	h.info.Spawns = len(s.Spawns)

	// Validate: every spawn parses against its schema, stamps add up, the stream is well formed.
	need := 0
	for i := range s.Spawns {
		sp := &s.Spawns[i]
		sc, err := spawnSchema(t, sp)
		if err != nil {
			return h.info, corrections, err
		}
		n := 0
		if err := walkSpawn(sc, sp.UpdateData, func(int, []byte) { n++ }); err != nil {
			return h.info, corrections, fmt.Errorf("entity %d: %w", sp.NetworkID, err)
		}
		need += 1 + n
	}
	if need*4 != len(h.stamps) {
		return h.info, corrections, fmt.Errorf("%w: %d stamps for %d values", ErrHostState, len(h.stamps)/4, need)
	}
	// A replica that held nothing (a member's first join) is sized for the snapshot up front.
	fresh := r.Size() == 0
	var rd crdt.Reader
	var m crdt.Message
	for rd.Reset(h.stream); ; {
		if err := rd.Next(&m); err != nil {
			if err == io.EOF {
				break
			}
			return h.info, corrections, fmt.Errorf("%w: %w", ErrHostState, err)
		}
	}

	// What the snapshot carried, to find afterwards where the replica differs: the LWW values of
	// the spawns and of the stream in two runs (each in key order when Build wrote them; the
	// stream is merged last, so its record wins when both hold a key), the deleted versions and
	// the append values.
	var spawned, streamed lwwRun
	// Into a replica that held nothing, the records are kept only if the merge turns out to
	// need them (the guard below): a member's first join does not build 40,000 of them.
	recording := !fresh
	if fresh {
		r.Reserve(len(s.Spawns), need+len(h.stream)/24)
	} else {
		spawned.recs = make([]lwwRec, 0, need)
		streamed.recs = make([]lwwRec, 0, len(h.stream)/24)
	}
	seenDeleted := map[uint16]uint16{}
	seenAppend := map[string]struct{}{}
	records := 0 // LWW records merged
	put := func(m *crdt.Message, run *lwwRun) {
		merge(m)
		switch m.Type {
		case crdt.PutComponent, crdt.PutComponentNetwork, crdt.DeleteComponent, crdt.DeleteComponentNetwork:
			records++
			if recording {
				run.record(m)
			}
		case crdt.DeleteEntity, crdt.DeleteEntityNetwork:
			if v, ok := seenDeleted[m.Entity.Number()]; !ok || v < m.Entity.Version() {
				seenDeleted[m.Entity.Number()] = m.Entity.Version()
			}
		case crdt.AppendValue:
			seenAppend[appendKey(m.Entity, m.Component, m.Timestamp, m.Data)] = struct{}{}
		}
	}
	eachValue(t, s, h, func(m *crdt.Message) { put(m, &spawned) }, func(first int) {
		if recording {
			spawned.sortFrom(first) // property order need not be component order
		}
	}, &spawned)
	for rd.Reset(h.stream); rd.Next(&m) == nil; {
		put(&m, &streamed)
	}
	// Into a replica that held nothing, where every LWW record of the snapshot made an entry of
	// its own (no key repeated, none refused, none removed by a later deletion), each entry is
	// the one record that made it: no LWW correction can come out, so the LWW walk, which sorts
	// the whole replica, is skipped (a member's first join).
	skipLWW := fresh && r.Len() == records
	if !recording && !skipLWW {
		// The records after all, read again from the snapshot (merged once already).
		recording = true
		spawned.recs = make([]lwwRec, 0, need)
		eachValue(t, s, h, func(m *crdt.Message) { spawned.record(m) }, spawned.sortFrom, &spawned)
		for rd.Reset(h.stream); rd.Next(&m) == nil; {
			if m.Type == crdt.PutComponent || m.Type == crdt.PutComponentNetwork || m.Type == crdt.DeleteComponent || m.Type == crdt.DeleteComponentNetwork {
				streamed.record(&m)
			}
		}
	}
	spawned.sortFrom(0)
	streamed.sortFrom(0)
	r.ObserveClock(h.info.Clock)

	lww := func(en crdt.Entry) {
		k := uint64(en.Entity)<<32 | uint64(en.Component)
		sv := spawned.find(k)
		if sr := streamed.find(k); sr != nil {
			sv = sr
		}
		if sv != nil && sv.ts == en.Timestamp && sv.deleted == en.Deleted && bytes.Equal(sv.data, en.Data) {
			return
		}
		c := crdt.Message{Type: crdt.PutComponent, Entity: en.Entity, Component: en.Component, Timestamp: en.Timestamp, Data: en.Data}
		if en.Deleted {
			c.Type, c.Data = crdt.DeleteComponent, nil
		}
		corrections = crdt.AppendMessage(corrections, &c)
	}
	if skipLWW {
		lww = nil
	}
	walkCover(r, h.info.Cover, func(number, version uint16) {
		if v, ok := seenDeleted[number]; !ok || v < version {
			c := crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(number, version)}
			corrections = crdt.AppendMessage(corrections, &c)
		}
	}, lww, func(a crdt.AppendEntry) {
		if _, ok := seenAppend[appendKey(a.Entity, a.Component, a.Timestamp, a.Data)]; !ok {
			c := crdt.Message{Type: crdt.AppendValue, Entity: a.Entity, Component: a.Component, Timestamp: a.Timestamp, Data: a.Data}
			corrections = crdt.AppendMessage(corrections, &c)
		}
	})
	return h.info, corrections, nil
}

func spawnSchema(t *schema.Table, sp *netmsg.Spawn) (*schema.Schema, error) {
	if sp.NetworkID>>32 != 0 {
		return nil, fmt.Errorf("%w: network id %#x has upper 32 bits set", ErrSpawn, sp.NetworkID)
	}
	sc, ok := t.Lookup(schema.ID(sp.SchemaID))
	if !ok {
		return nil, fmt.Errorf("%w: entity %d: %w %d", ErrSpawn, sp.NetworkID, schema.ErrUnknownSchema, sp.SchemaID)
	}
	return sc, nil
}

func appendKey(e crdt.Entity, c crdt.ComponentID, ts crdt.Timestamp, data []byte) string {
	var k [12]byte
	le.PutUint32(k[0:], uint32(e))
	le.PutUint32(k[4:], uint32(c))
	le.PutUint32(k[8:], uint32(ts))
	return string(k[:]) + string(data)
}
