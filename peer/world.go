package peer

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
)

// PeerIndex identifies a member of a room; the signaling server assigns it. Every package of a
// peer uses this one type (authority.PeerIndex, signaling.PeerIndex).
type PeerIndex = authority.PeerIndex

// Term numbers the successive hosts of a room (authority.Term, signaling.Term).
type Term = authority.Term

// Entity is an ADR-117 entity id (number | version<<16); TRNP carries it as the networkId
// (crdt.Entity, authority.EntityID).
type Entity = crdt.Entity

// FirstSpawnNumber is the lowest entity number the host allocates; numbers below it are reserved
// (0 is the room itself).
const FirstSpawnNumber = authority.ReservedNumbers

// RoomEntity is the entity that holds room-wide host state (scores, rules).
const RoomEntity Entity = 0

type entityInfo struct {
	schema   *schema.Schema
	creation []byte
	auth     authority.Record
}

// changeSink is told of every change the world accepts; the role turns them into traffic.
// origin is 0 for a local write, the sender's peer index for a merged remote message.
type changeSink interface {
	propChanged(e Entity, prop int, origin PeerIndex)
	spawned(e Entity, origin PeerIndex)
	despawned(e Entity, origin PeerIndex)
	authorityChanged(e Entity, rec authority.Record, origin PeerIndex)
	// otherChanged reports a change TRNP cannot express (a tombstone, a component outside any
	// schema, an append value); the host relays such changes as CRDT messages.
	otherChanged(m *crdt.Message, origin PeerIndex)
	// sendRPC sends an RPC to the host (a member's; app: an application RPC, below
	// FirstSystemRPC), broadcastRPC to every member (the host's); the other role answers
	// ErrNotHost.
	sendRPC(typ uint32, data []byte, app bool) error
	broadcastRPC(typ uint32, data []byte) error
	// sendMessage sends an application message (World.SendMessage has checked it), sendAction
	// an Action; requestAppend asks the host to append (members); grant and revoke change an
	// entity's authority (host).
	sendMessage(to PeerIndex, typ uint8, data []byte, reliable bool) error
	sendAction(typ uint32, data []byte) error
	requestAppend(e Entity, c crdt.ComponentID, value []byte) error
	grant(e Entity, to PeerIndex) error
	revoke(e Entity) error
}

// World is the replicated world as one peer sees it: the ADR-117 replica and the index its
// schemas give it. Games read and write it from App callbacks, which all run on the peer's loop
// goroutine; a World must not be used from any other goroutine.
type World struct {
	r       *crdt.Replica
	schemas *schema.Table

	self, host PeerIndex
	term       Term
	isHost     bool
	// heldTerm is the term of the last host whose state this replica holds: the term it hosted
	// or merged a sync snapshot in; 0 before any. A member's Hello carries it, and only a member
	// that held an earlier term's state may relay that state's host entities to a new host.
	heldTerm Term

	ents     map[Entity]*entityInfo
	byNumber numberIndex
	stamp    crdt.Timestamp // the open batch's timestamp, 0 when none is open
	next     uint16         // host: next entity number to try
	// restored is the entities a merged checkpoint held (MergeCheckpoint), nil before one.
	restored map[Entity]bool

	sink   changeSink
	events []Event
	buf    []byte
	// avatarHint remembers where AvatarOf last found each peer's avatar: a hint, checked on every
	// use, so no path that changes authority has to maintain it (a bot asks every tick, and a scan
	// of a 512-member room every tick of every bot was O(members²)).
	avatarHint map[PeerIndex]Entity
	// limits bound the append sets and the world's size (world_limits.go).
	limits WorldLimits
}

func newWorld(schemas *schema.Table, cfg crdt.Config) *World {
	return &World{
		r:       crdt.New(cfg),
		schemas: schemas,
		ents:    make(map[Entity]*entityInfo),
		next:    FirstSpawnNumber,
		sink:    nopSink{},
		limits:  WorldLimits{}.withDefaults(),
	}
}

// Self is this peer's index.
func (w *World) Self() PeerIndex { return w.self }

// Host is the current host's index.
func (w *World) Host() PeerIndex { return w.host }

// Term is the current host term.
func (w *World) Term() Term { return w.term }

// IsHost reports whether this peer is the host and runs the authoritative simulation.
func (w *World) IsHost() bool { return w.isHost }

// Replica gives read access to the underlying CRDT replica (for tools and tests).
func (w *World) Replica() *crdt.Replica { return w.r }

// Schemas is the schema table the world runs.
func (w *World) Schemas() *schema.Table { return w.schemas }

// Len is the number of live entities with a schema.
func (w *World) Len() int { return len(w.ents) }

// Entities returns every live entity with a schema, in ascending order (EntitiesOf filters by
// schema).
func (w *World) Entities() []Entity {
	out := make([]Entity, 0, len(w.ents))
	for e := range w.ents {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// EntitiesOf returns the live entities of schema id in ascending order.
func (w *World) EntitiesOf(id schema.ID) []Entity {
	var out []Entity
	for e, in := range w.ents {
		if in.schema.ID == id {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// Exists reports whether e is a live entity with a schema.
func (w *World) Exists(e Entity) bool { return w.ents[e] != nil }

// SchemaOf returns the schema of a live entity.
func (w *World) SchemaOf(e Entity) (*schema.Schema, bool) {
	in := w.ents[e]
	if in == nil {
		return nil, false
	}
	return in.schema, true
}

// Creation returns the creation data of a live entity. It must not be modified.
func (w *World) Creation(e Entity) []byte {
	if in := w.ents[e]; in != nil {
		return in.creation
	}
	return nil
}

// Get returns property prop of entity e. The slice aliases the replica: valid until the world
// next changes; copy it to keep it.
func (w *World) Get(e Entity, prop int) ([]byte, bool) {
	in := w.ents[e]
	if in == nil || prop < 0 || prop >= len(in.schema.Properties) {
		return nil, false
	}
	data, _, ok, deleted := w.r.Get(e, in.schema.Properties[prop].Component)
	if !ok || deleted {
		return nil, false
	}
	return data, true
}

// Authority returns who writes e: the peer index of the avatar owner or lock holder, or the
// host's index for host-owned entities.
func (w *World) Authority(e Entity) PeerIndex {
	in := w.ents[e]
	if in == nil || in.auth.Kind == authority.KindHost {
		return w.host
	}
	return in.auth.Peer
}

// AuthorityRecord returns the authority record of e.
func (w *World) AuthorityRecord(e Entity) authority.Record {
	if in := w.ents[e]; in != nil {
		return in.auth
	}
	return authority.Record{}
}

// AvatarOf returns the avatar of member p.
func (w *World) AvatarOf(p PeerIndex) (Entity, bool) {
	if e, ok := w.avatarHint[p]; ok {
		if in := w.ents[e]; in != nil && in.auth.Kind == authority.KindAvatar && in.auth.Peer == p {
			return e, true
		}
		delete(w.avatarHint, p)
	}
	for e, in := range w.ents {
		if in.auth.Kind == authority.KindAvatar && in.auth.Peer == p {
			if w.avatarHint == nil || len(w.avatarHint) > 2*len(w.ents)+64 {
				// Peers that left keep stale hints until asked about; start over now and then.
				w.avatarHint = make(map[PeerIndex]Entity)
			}
			w.avatarHint[p] = e
			return e, true
		}
	}
	return 0, false
}

// CanWrite reports whether this peer may write e now: the host writes host-owned entities; a
// member writes its avatar and the entities it holds a lock on.
func (w *World) CanWrite(e Entity) bool {
	in := w.ents[e]
	if in == nil {
		return false
	}
	if in.auth.Kind == authority.KindHost {
		return w.isHost
	}
	return in.auth.Peer == w.self
}

// writable returns e's index entry if this peer may write its property prop now.
func (w *World) writable(e Entity, prop int) (*entityInfo, error) {
	in := w.ents[e]
	if in == nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEntity, e)
	}
	if prop < 0 || prop >= len(in.schema.Properties) {
		return nil, fmt.Errorf("%w: %s has no property %d", ErrNoProperty, in.schema.Name, prop)
	}
	if !w.CanWrite(e) {
		return nil, fmt.Errorf("%w: %v is written by peer %d", ErrNoAuthority, e, w.Authority(e))
	}
	return in, nil
}

// Set writes property prop of e. It fails without authority or with a value of the wrong size.
func (w *World) Set(e Entity, prop int, value []byte) error {
	in, err := w.writable(e, prop)
	if err != nil {
		return err
	}
	if err := in.schema.CheckValue(prop, value); err != nil {
		return err
	}
	c := in.schema.Properties[prop].Component
	// Writing the value the property has is no write, and takes no stamp. Once the batch has its
	// stamp, WriteChanged tests and writes in one lookup of the replica's table.
	var res crdt.Outcome
	if w.stamp != 0 {
		res = w.r.WriteChanged(e, c, w.stamp, value)
	} else if cur, _, ok, deleted := w.r.Get(e, c); ok && !deleted && bytes.Equal(cur, value) {
		return nil
	} else {
		res = w.r.WriteAt(e, c, w.batchStamp(), value, false)
	}
	if res == crdt.Applied {
		w.sink.propChanged(e, prop, 0)
	}
	return nil
}

// Spawn creates an entity of schema id (host only) with the given creation data and property
// values (a nil value leaves that property unset) and returns it.
func (w *World) Spawn(id schema.ID, creation []byte, values ...[]byte) (Entity, error) {
	if !w.isHost {
		return 0, ErrNotHost
	}
	e, ok := w.allocate()
	if !ok {
		return 0, ErrWorldFull
	}
	return e, w.spawnAt(e, id, creation, values, authority.Record{})
}

// SpawnRoom creates the room entity (number 0) with schema id, for room-wide host state. It fails
// if the room entity exists.
func (w *World) SpawnRoom(id schema.ID, creation []byte, values ...[]byte) error {
	if !w.isHost {
		return ErrNotHost
	}
	if w.Exists(RoomEntity) {
		return fmt.Errorf("%w: the room entity exists", ErrExists)
	}
	return w.spawnAt(RoomEntity, id, creation, values, authority.Record{})
}

func (w *World) spawnAt(e Entity, id schema.ID, creation []byte, values [][]byte, auth authority.Record) error {
	s, ok := w.schemas.Lookup(id)
	if !ok {
		return fmt.Errorf("%w %d", schema.ErrUnknownSchema, id)
	}
	if len(values) > len(s.Properties) {
		return fmt.Errorf("%w: %d values for %d properties of %s", ErrNoProperty, len(values), len(s.Properties), s.Name)
	}
	for i, v := range values {
		if v != nil {
			if err := s.CheckValue(i, v); err != nil {
				return err
			}
		}
	}
	ts := w.batchStamp()
	w.buf = schema.AppendMeta(w.buf[:0], id, creation)
	w.r.WriteAt(e, schema.ComponentMeta, ts, w.buf, false)
	w.ents[e] = &entityInfo{schema: s, creation: bytes.Clone(creation), auth: auth}
	w.byNumber.set(e)
	for i, v := range values {
		if v != nil {
			w.r.WriteAt(e, s.Properties[i].Component, ts, v, false)
		}
	}
	if auth.Kind != authority.KindHost {
		w.writeAuthority(e, auth)
	}
	w.events = append(w.events, Event{Kind: EventSpawned, Entity: e})
	w.sink.spawned(e, 0)
	return nil
}

// Despawn deletes entity e (host only).
func (w *World) Despawn(e Entity) error {
	if !w.isHost {
		return ErrNotHost
	}
	if !w.Exists(e) {
		return fmt.Errorf("%w: %v", ErrNoEntity, e)
	}
	m := w.r.DeleteEntity(e)
	w.observe(&m, 0)
	return nil
}

// allocate finds a free entity id: the next number never used, or a deleted number with its next
// version. Deleted-entity versions guard reuse (ADR-117).
func (w *World) allocate() (Entity, bool) {
	for range 1 << 16 {
		n := w.next
		w.next++
		if w.next == 0 {
			w.next = FirstSpawnNumber
		}
		if n < FirstSpawnNumber {
			continue
		}
		if _, live := w.byNumber.get(n); live {
			continue
		}
		var ver uint16
		if dv, ok := w.r.DeletedVersion(n); ok {
			if dv == 0xffff {
				continue
			}
			ver = dv + 1
		}
		e := crdt.NewEntity(n, ver)
		if _, _, ok, _ := w.r.Get(e, schema.ComponentMeta); ok {
			continue
		}
		return e, true
	}
	return 0, false
}

// writeAuthority stores e's authority record in the replica (so that it survives migration).
func (w *World) writeAuthority(e Entity, rec authority.Record) {
	in := w.ents[e]
	if in == nil {
		return
	}
	in.auth = rec
	w.buf = authority.AppendRecord(w.buf[:0], rec)
	w.r.WriteAt(e, schema.ComponentAuthority, w.batchStamp(), w.buf, false)
	w.sink.authorityChanged(e, rec, 0)
}

// batchStamp returns the timestamp of the open write batch, opening one above the clock. At
// 2³²−1 it saturates rather than wrap to 0 (a wrapped stamp would lose to every write there is);
// the peers' stamp bounds (docs/protocol.md §5, "Limits") keep an honest room far below it.
func (w *World) batchStamp() crdt.Timestamp {
	if w.stamp == 0 {
		w.stamp = w.r.Clock()
		if w.stamp < math.MaxUint32 {
			w.stamp++
		}
		w.r.ObserveClock(w.stamp)
	}
	return w.stamp
}

// setRole makes the world the host's (isHost) or a member's, and sink the role told of changes.
func (w *World) setRole(isHost bool, sink changeSink) {
	w.isHost, w.sink = isHost, sink
}

// closeBatch ends the open write batch; the next local write takes a new timestamp.
func (w *World) closeBatch() { w.stamp = 0 }

// mergeRemote merges a message from peer origin and keeps the index up to date.
func (w *World) mergeRemote(m *crdt.Message, origin PeerIndex) crdt.Outcome {
	o := w.r.Merge(m)
	if o == crdt.Applied {
		w.observe(m, origin)
	}
	return o
}

// mergeRemoteWrite is mergeRemote without its outcome.
func (w *World) mergeRemoteWrite(m *crdt.Message, origin PeerIndex) { w.mergeRemote(m, origin) }

// observe updates the index after m was applied to the replica.
func (w *World) observe(m *crdt.Message, origin PeerIndex) {
	e := m.Entity
	// Any message for version v of a number deletes its lower versions: drop them from the index.
	// An indexed e is its number's entry in byNumber (index, spawn): the lookup is only needed
	// for an entity not indexed, which spares it for every value of a snapshot's entities.
	indexed := w.ents[e]
	if indexed == nil {
		if old, ok := w.byNumber.get(e.Number()); ok && old != e && w.r.EntityDeleted(old) {
			w.forget(old, origin)
		}
	}
	switch m.Type {
	case crdt.DeleteEntity, crdt.DeleteEntityNetwork:
		if w.ents[e] != nil {
			w.forget(e, origin)
		}
		return
	case crdt.AppendValue:
		if w.ents[e] != nil {
			w.events = append(w.events, Event{Kind: EventAppended, Entity: e, Component: m.Component, Peer: origin})
		}
		w.sink.otherChanged(m, origin)
		return
	}
	deleted := m.Type == crdt.DeleteComponent || m.Type == crdt.DeleteComponentNetwork
	switch m.Component {
	case schema.ComponentMeta:
		if deleted {
			if w.ents[e] != nil {
				w.forget(e, origin)
			}
			w.sink.otherChanged(m, origin)
			return
		}
		w.index(e, m.Data, origin)
		return
	case schema.ComponentAuthority:
		in := w.ents[e]
		var rec authority.Record
		if !deleted {
			if _, err := authority.ConsumeRecord(m.Data, &rec); err != nil {
				rec = authority.Record{}
			}
		}
		if in != nil {
			in.auth = rec
			w.events = append(w.events, Event{Kind: EventAuthority, Entity: e, Peer: w.Authority(e)})
		}
		w.sink.authorityChanged(e, rec, origin)
		return
	}
	if in := indexed; in != nil {
		if i, ok := in.schema.Index(m.Component); ok {
			if deleted {
				// TRNP's updates carry values only: a deleted property travels as a CRDT message.
				w.events = append(w.events, Event{Kind: EventUnset, Entity: e, Props: 1 << i})
				w.sink.otherChanged(m, origin)
				return
			}
			w.events = append(w.events, Event{Kind: EventUpdated, Entity: e, Props: 1 << i})
			w.sink.propChanged(e, i, origin)
			return
		}
	}
	w.sink.otherChanged(m, origin)
}

// index (re)reads e's meta and authority components after its meta changed to data (a merge
// that applied: data is what the replica now holds).
func (w *World) index(e Entity, data []byte, origin PeerIndex) {
	id, creation, ok := schema.ParseMeta(data)
	s, known := w.schemas.Lookup(id)
	if !ok || !known {
		// An entity of a schema we do not run: keep it in the replica, not in the index.
		return
	}
	in := w.ents[e]
	fresh := in == nil
	if fresh {
		in = &entityInfo{}
		w.ents[e] = in
		w.byNumber.set(e)
	}
	in.schema, in.creation = s, bytes.Clone(creation)
	if a, _, ok, del := w.r.Get(e, schema.ComponentAuthority); ok && !del {
		_, _ = authority.ConsumeRecord(a, &in.auth)
	}
	if fresh {
		w.events = append(w.events, Event{Kind: EventSpawned, Entity: e})
		w.sink.spawned(e, origin)
	}
}

// evict drops entity number n from the replica and the index without deleting it: the host no
// longer sends it to this member (InterestPolicy).
func (w *World) evict(n uint16) {
	if e, ok := w.byNumber.get(n); ok {
		delete(w.ents, e)
		w.byNumber.del(n)
		w.events = append(w.events, Event{Kind: EventLeftInterest, Entity: e})
		w.sink.despawned(e, w.host)
	}
	w.r.Forget(n)
}

func (w *World) forget(e Entity, origin PeerIndex) {
	delete(w.ents, e)
	if cur, ok := w.byNumber.get(e.Number()); ok && cur == e {
		w.byNumber.del(e.Number())
	}
	w.events = append(w.events, Event{Kind: EventDespawned, Entity: e})
	w.sink.despawned(e, origin)
}

type nopSink struct{}

func (nopSink) propChanged(Entity, int, PeerIndex)                   {}
func (nopSink) spawned(Entity, PeerIndex)                            {}
func (nopSink) despawned(Entity, PeerIndex)                          {}
func (nopSink) authorityChanged(Entity, authority.Record, PeerIndex) {}
func (nopSink) otherChanged(*crdt.Message, PeerIndex)                {}
func (nopSink) sendRPC(uint32, []byte, bool) error                   { return ErrNotHost }
func (nopSink) broadcastRPC(uint32, []byte) error                    { return ErrNotHost }
func (nopSink) sendMessage(PeerIndex, uint8, []byte, bool) error     { return ErrClosed }
func (nopSink) sendAction(uint32, []byte) error                      { return ErrClosed }
func (nopSink) requestAppend(Entity, crdt.ComponentID, []byte) error { return ErrClosed }
func (nopSink) grant(Entity, PeerIndex) error                        { return ErrNotHost }
func (nopSink) revoke(Entity) error                                  { return ErrNotHost }
