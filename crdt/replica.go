package crdt

import (
	"bytes"
	"math"
	"slices"
)

// DefaultAppendRetention is how many values an append set keeps when Config.AppendRetention is zero.
const DefaultAppendRetention = 128

// shrinkThreshold: a stored value buffer larger than this is released when a much smaller value
// replaces it, so one huge write does not pin memory for the life of the key.
const shrinkThreshold = 64 << 10

// Config configures a Replica. The zero value works.
type Config struct {
	// AppendRetention is how many values each append set keeps: the greatest by (timestamp,
	// then value as the LWW tie-break orders values). If zero or negative, 128.
	AppendRetention int
	// MaxMessageSize caps the length of each message MergeStream decodes. If zero or negative,
	// DefaultMaxMessageSize (16 MiB).
	MaxMessageSize int
}

// numTable maps entity numbers to the records of their live versions, in pages of 256 numbers
// allocated on first use (as Replica.del): a lookup is two loads, where a map hashed every value
// a snapshot merged, and a world of dense numbers takes less memory than the map did.
type numTable struct {
	pages [256]*[256]*numRec
	n     int // records held
}

func (t *numTable) get(n uint16) *numRec {
	if p := t.pages[n>>8]; p != nil {
		return p[n&0xff]
	}
	return nil
}

// set stores rec, not nil, for n, which holds none.
func (t *numTable) set(n uint16, rec *numRec) {
	p := t.pages[n>>8]
	if p == nil {
		p = new([256]*numRec)
		t.pages[n>>8] = p
	}
	p[n&0xff] = rec
	t.n++
}

// remove drops n's record, which it holds; an emptied page is kept for the numbers to come.
func (t *numTable) remove(n uint16) {
	t.pages[n>>8][n&0xff] = nil
	t.n--
}

// numRec indexes the live entity of one entity number. A message for version v of a number
// deletes every lower version, so at most one version of a number holds entries at a time.
type numRec struct {
	version uint16
	lww     []ComponentID // ascending
	app     []ComponentID // ascending
	// small holds lww while it fits: most entities have a handful of components, and a
	// snapshot's 10,000 entities would otherwise grow 10,000 slices step by step.
	small [4]ComponentID
}

// Replica is one ADR-117 replica: the LWW map, the deleted-entity set, the append sets and a
// Lamport clock. It is not safe for concurrent use; one goroutine at a time owns it. The zero
// Replica is an empty replica with the default Config.
type Replica struct {
	clock     Timestamp
	retention int
	maxMsg    int

	lww  lwwTable
	app  map[uint64]*appendSet
	nums numTable
	// appBytes is the size of the append values as APPEND_VALUE messages (Size).
	appBytes int
	// del holds, per entity number, the highest deleted version + 1 (0: none), in pages of
	// 256 numbers allocated on first use.
	del      [256]*[256]uint32
	nDeleted int

	// Sorted views for canonical iteration, rebuilt only after the key set changed.
	lwwOrder   []int32 // slot indexes of lww, ascending by key
	lwwOrderOK bool
	appOrder   []uint64 // append keys, ascending
	appOrderOK bool

	scratch []byte // one encoded message while hashing

	// changes counts modifications of the state (not of the clock), see Changes.
	changes uint64
	// pageChanges is, per page of 256 entity numbers, changes after the last modification of a
	// number in it (PageChanges): what a cache of one page's share of the state checks.
	pageChanges [256]uint64

	// The set hash (digest.go): per entity number, the sum of its messages' element hashes, in
	// pages of 256 numbers allocated on first use; their total; and the numbers changed since.
	sums   [256]*[256]uint64
	total  uint64
	dirty  [1024]uint64
	nDirty int // bits set in dirty
}

// New returns an empty replica.
func New(cfg Config) *Replica {
	r := &Replica{
		retention: cfg.AppendRetention,
		maxMsg:    cfg.MaxMessageSize,
		app:       make(map[uint64]*appendSet),
	}
	if r.retention <= 0 {
		r.retention = DefaultAppendRetention
	}
	if r.maxMsg <= 0 {
		r.maxMsg = DefaultMaxMessageSize
	}
	return r
}

func lwwKey(e Entity, c ComponentID) uint64 { return uint64(e)<<32 | uint64(c) }

func keyEntity(k uint64) Entity         { return Entity(k >> 32) }
func keyComponent(k uint64) ComponentID { return ComponentID(k) }

// Changes counts the modifications of the replica's state since it was created: two calls that
// return the same count bracket an unchanged state (the clock aside), so a caller may cache
// anything derived from the state (a hash, digests) under it. Note that a merge can change the
// state without reporting Applied: a message for version v of an entity number deletes the
// lower versions of that number whatever happens to the message itself.
func (r *Replica) Changes() uint64 { return r.changes }

// PageChanges is what Changes returned right after the last modification of an entity number in
// page p (the numbers p<<8 … p<<8|0xff), 0 if none: anything derived from those numbers' state
// when Changes returned c is still exact while PageChanges(p) ≤ c. A host's snapshot cache keeps
// each page's encoding under it (hostsnapshot.Cache), so a burst of joiners and a world that
// changes in a few pages share the work of the rest.
func (r *Replica) PageChanges(p uint8) uint64 { return r.pageChanges[p] }

// Clock returns the Lamport clock: the highest timestamp written or observed.
func (r *Replica) Clock() Timestamp { return r.clock }

// ObserveClock raises the clock to ts if it is lower. The session layer calls it when it learns
// of timestamps by other means (after a migration, the new host's clock must exceed everything
// any survivor has seen).
func (r *Replica) ObserveClock(ts Timestamp) {
	if ts > r.clock {
		r.clock = ts
	}
}

// tick advances the clock for a local write. It saturates at math.MaxUint32 rather than wrap
// (a wrapped stamp would lose to everything); at that point new writes only win ties.
func (r *Replica) tick() Timestamp {
	if r.clock < math.MaxUint32 {
		r.clock++
	}
	return r.clock
}

// Merge applies one message under the rules of ADR-117 as Concord defines them (see doc.go)
// and reports the outcome. The clock observes the message's timestamp whatever the outcome.
// The _NETWORK types are merged as their local counterparts on m.Entity; NetworkID is not part
// of the state. m.Data is copied; m may be reused after the call.
// Merging into an existing key does not allocate.
func (r *Replica) Merge(m *Message) Outcome {
	switch m.Type {
	case PutComponent, PutComponentNetwork:
		if m.Timestamp > r.clock {
			r.clock = m.Timestamp
		}
		return r.mergeLWW(m.Entity, m.Component, m.Timestamp, m.Data, slotValue)
	case DeleteComponent, DeleteComponentNetwork:
		if m.Timestamp > r.clock {
			r.clock = m.Timestamp
		}
		return r.mergeLWW(m.Entity, m.Component, m.Timestamp, nil, slotTomb)
	case AppendValue:
		if m.Timestamp > r.clock {
			r.clock = m.Timestamp
		}
		return r.mergeAppend(m.Entity, m.Component, m.Timestamp, m.Data)
	case DeleteEntity, DeleteEntityNetwork:
		return r.mergeDeleteEntity(m.Entity)
	}
	return Invalid
}

// deletedStored returns the highest deleted version of number n plus one, or 0.
func (r *Replica) deletedStored(n uint16) uint32 {
	if p := r.del[n>>8]; p != nil {
		return p[n&0xff]
	}
	return 0
}

// admit reports whether a message for e is live (its version is above the deleted version of
// its number) and applies the implicit deletion of every lower version of the number.
func (r *Replica) admit(e Entity) bool {
	n, v := e.Number(), uint32(e.Version())
	stored := r.deletedStored(n)
	if stored > v {
		return false // deleted version ≥ v
	}
	if v > 0 && stored < v {
		r.raiseDeleted(n, uint16(v-1))
	}
	return true
}

// raiseDeleted records version ver of number n as deleted (it must exceed the recorded one)
// and removes the entries of every version ≤ ver of n.
func (r *Replica) raiseDeleted(n, ver uint16) {
	r.changed(n)
	p := r.del[n>>8]
	if p == nil {
		p = new([256]uint32)
		r.del[n>>8] = p
	}
	if p[n&0xff] == 0 {
		r.nDeleted++
	}
	p[n&0xff] = uint32(ver) + 1
	if rec := r.nums.get(n); rec != nil && rec.version <= ver {
		r.dropLive(n, rec)
	}
}

// dropLive removes every entry and append value of number n's live version rec.
func (r *Replica) dropLive(n uint16, rec *numRec) {
	e := NewEntity(n, rec.version)
	for _, c := range rec.lww {
		r.lww.remove(lwwKey(e, c))
	}
	for _, c := range rec.app {
		k := lwwKey(e, c)
		for _, v := range r.app[k].vals {
			r.appBytes -= putHeader + len(v.data)
		}
		delete(r.app, k)
	}
	if len(rec.lww) > 0 {
		r.lwwOrderOK = false
	}
	if len(rec.app) > 0 {
		r.appOrderOK = false
	}
	r.nums.remove(n)
}

func (r *Replica) mergeDeleteEntity(e Entity) Outcome {
	if r.deletedStored(e.Number()) > uint32(e.Version()) {
		return NoChange
	}
	r.raiseDeleted(e.Number(), e.Version())
	return Applied
}

// index records that entity e has a new lww (app=false) or append (app=true) key.
func (r *Replica) index(e Entity, c ComponentID, app bool) {
	rec := r.nums.get(e.Number())
	if rec == nil {
		rec = &numRec{version: e.Version()}
		rec.lww = rec.small[:0]
		r.nums.set(e.Number(), rec)
	}
	// rec.version == e.Version() here: admit removed lower versions, and a higher live
	// version would have made admit refuse e.
	// The component lists stay sorted: an entity has a handful of components, and hashing
	// and RangeEntity read them in order.
	if app {
		i, _ := slices.BinarySearch(rec.app, c)
		rec.app = slices.Insert(rec.app, i, c)
		r.appOrderOK = false
	} else {
		i, _ := slices.BinarySearch(rec.lww, c)
		rec.lww = slices.Insert(rec.lww, i, c)
		r.lwwOrderOK = false
	}
}

// compareStored compares the stored value of s with an incoming one under the tie-break for
// equal timestamps: a tombstone is less than any bytes (even empty), then the longer value is
// greater, then unsigned bytes left to right.
func compareStored(t *lwwTable, s *lwwSlot, data []byte, state uint8) int {
	stored := s.state()
	if stored == slotTomb || state == slotTomb {
		switch {
		case stored == state:
			return 0
		case stored == slotTomb:
			return -1
		}
		return 1
	}
	sd := *t.data(s)
	if len(sd) != len(data) {
		if len(sd) > len(data) {
			return 1
		}
		return -1
	}
	return bytes.Compare(sd, data)
}

func (r *Replica) mergeLWW(e Entity, c ComponentID, ts Timestamp, data []byte, state uint8) Outcome {
	if !r.admit(e) {
		return Ignored
	}
	key := lwwKey(e, c)
	s := r.lww.find(key)
	if s == nil {
		s = r.lww.insert(key)
		r.index(e, c, false)
	} else {
		if ts < s.ts {
			return Outdated
		}
		if ts == s.ts {
			switch cmp := compareStored(&r.lww, s, data, state); {
			case cmp == 0:
				return NoChange
			case cmp > 0:
				return Outdated
			}
		}
	}
	s.ts = ts
	r.lww.set(s, data, state)
	r.changed(e.Number())
	return Applied
}

// Put writes a component value locally with the next clock tick and returns the PUT_COMPONENT
// message to broadcast. Its Data aliases the replica's copy: valid until the next call that
// modifies the replica. An empty data is a valid value. If e is a deleted entity version the
// write is ignored (as it will be everywhere); check EntityDeleted first.
func (r *Replica) Put(e Entity, c ComponentID, data []byte) Message {
	ts := r.tick()
	m := Message{Type: PutComponent, Entity: e, Component: c, Timestamp: ts, Data: data}
	if r.mergeLWW(e, c, ts, data, slotValue) == Applied {
		m.Data = *r.lww.data(r.lww.find(lwwKey(e, c)))
	}
	return m
}

// DeleteComponent deletes a component locally with the next clock tick and returns the
// DELETE_COMPONENT message to broadcast.
func (r *Replica) DeleteComponent(e Entity, c ComponentID) Message {
	ts := r.tick()
	r.mergeLWW(e, c, ts, nil, slotTomb)
	return Message{Type: DeleteComponent, Entity: e, Component: c, Timestamp: ts}
}

// DeleteEntity deletes entity version e (and every lower version of its number) locally and
// returns the DELETE_ENTITY message to broadcast. The message carries no timestamp, so the
// clock does not tick.
func (r *Replica) DeleteEntity(e Entity) Message {
	r.mergeDeleteEntity(e)
	return Message{Type: DeleteEntity, Entity: e}
}

// AppendValue adds a value to the append set of (e, c) with the next clock tick and returns the
// APPEND_VALUE message to broadcast. Its Data aliases the replica's copy when the value was
// stored: valid until the next call that modifies the replica.
func (r *Replica) AppendValue(e Entity, c ComponentID, data []byte) Message {
	ts := r.tick()
	m := Message{Type: AppendValue, Entity: e, Component: c, Timestamp: ts, Data: data}
	if r.mergeAppend(e, c, ts, data) == Applied {
		if set := r.app[lwwKey(e, c)]; set != nil {
			if i := set.find(data); i >= 0 {
				m.Data = set.vals[i].data
			}
		}
	}
	return m
}

// Get returns the LWW entry of (e, c). ok reports whether an entry exists; deleted whether
// that entry is a tombstone (data is then nil). data aliases the replica's storage: valid until
// the next call that modifies the replica. Nothing is stored for a deleted entity version.
func (r *Replica) Get(e Entity, c ComponentID) (data []byte, ts Timestamp, ok bool, deleted bool) {
	s := r.lww.find(lwwKey(e, c))
	if s == nil {
		return nil, 0, false, false
	}
	if s.ref&refTomb != 0 {
		return nil, s.ts, true, true
	}
	return *r.lww.data(s), s.ts, true, false
}

// EntityDeleted reports whether entity version e is in the deleted set (its version is at most
// the highest deleted version of its number).
func (r *Replica) EntityDeleted(e Entity) bool {
	return r.deletedStored(e.Number()) > uint32(e.Version())
}

// DeletedVersion returns the highest deleted version of an entity number, implicit deletions
// included, and whether there is one.
func (r *Replica) DeletedVersion(number uint16) (uint16, bool) {
	s := r.deletedStored(number)
	if s == 0 {
		return 0, false
	}
	return uint16(s - 1), true
}

// Size returns the size of the state as a canonical ADR-117 message stream: len(AppendState(nil)),
// the bytes of a checkpoint or of a full snapshot's hostState, kept as the state changes.
func (r *Replica) Size() int {
	return r.lww.bytes + r.appBytes + r.nDeleted*deleteEntitySize
}

// Growth returns at most how many bytes merging m would add to Size: what a bound on the state's
// size checks before it admits m. It never changes the replica.
func (r *Replica) Growth(m *Message) int {
	g := 0
	if v := m.Entity.Version(); v > 0 && r.deletedStored(m.Entity.Number()) == 0 {
		g = deleteEntitySize // version v deletes the lower versions of its number: a new deleted number
	}
	return g + r.growth(m)
}

func (r *Replica) growth(m *Message) int {
	switch m.Type {
	case PutComponent, PutComponentNetwork, DeleteComponent, DeleteComponentNetwork:
		put := m.Type == PutComponent || m.Type == PutComponentNetwork
		data, ts, ok, deleted := r.Get(m.Entity, m.Component)
		switch {
		case ok && m.Timestamp < ts:
			return 0 // outdated: the stored entry stays
		case !ok && put:
			return putHeader + len(m.Data)
		case !ok:
			return deleteCompSize
		case put && deleted:
			return putHeader + len(m.Data) - deleteCompSize
		case put:
			return max(0, len(m.Data)-len(data))
		}
		return 0
	case AppendValue:
		return putHeader + len(m.Data)
	case DeleteEntity, DeleteEntityNetwork:
		if m.Entity.Version() == 0 && r.deletedStored(m.Entity.Number()) == 0 {
			return deleteEntitySize // a higher version was counted by Growth
		}
	}
	return 0
}

// AppendSets returns how many append sets entity e holds, and whether one of them is c's.
func (r *Replica) AppendSets(e Entity, c ComponentID) (n int, has bool) {
	rec := r.nums.get(e.Number())
	if rec == nil || rec.version != e.Version() {
		return 0, false
	}
	_, has = slices.BinarySearch(rec.app, c)
	return len(rec.app), has
}

// Len returns the number of LWW entries, values and tombstones alike.
func (r *Replica) Len() int { return r.lww.n }

// LiveEntities returns the number of entities with at least one entry (an LWW value or
// tombstone, or an append set). Deleted entities hold none.
func (r *Replica) LiveEntities() int { return r.nums.n }

// DeletedNumbers returns the number of entity numbers with a deleted version.
func (r *Replica) DeletedNumbers() int { return r.nDeleted }

// Reserve makes room for entities more entity numbers (a hint no longer needed: numbers are
// indexed in pages) and values more LWW values, so that
// merging a state of that size (a member's first snapshot) does not grow the tables step by step
// on the way. A hint only: merging more still works.
func (r *Replica) Reserve(entities, values int) {
	if values > 0 {
		r.lww.reserve(values)
	}
}
