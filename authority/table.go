package authority

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"
)

// Defaults of Config.
const (
	DefaultLockTimeout     = 3 * time.Second
	DefaultMaxLocksPerPeer = 16
)

// Config tunes a Table. The zero value works.
type Config struct {
	// LockTimeout is how long a lock holder may stay silent before its locks
	// return to the host: Expire releases them, and RequestLock lets another
	// peer take them over. If zero or negative, DefaultLockTimeout (3 s) is
	// used: long enough to ride out a few lost packets or a stalled browser
	// tab, short enough that a crashed peer does not freeze an object for long.
	LockTimeout time.Duration
	// MaxLocksPerPeer bounds the locks one peer may hold at once, so that one
	// peer cannot take the world from the host. If zero or negative,
	// DefaultMaxLocksPerPeer (16) is used.
	MaxLocksPerPeer int
}

// Transfer reports that the author of Entity changed from From to To. The host
// broadcasts it as a TRNP AuthorityTransfer{networkId: Entity, newAuthorIndex:
// To}, and puts the entity's new Record as its authority component.
type Transfer struct {
	Entity EntityID
	From   PeerIndex
	To     PeerIndex
}

// Table holds the authority of every entity of a room, as seen by one host.
// An entity the table holds no record for is host-owned: the host spawns
// everything, so that is the default. Create it with New.
type Table struct {
	cfg     Config
	host    PeerIndex
	records map[EntityID]Record   // avatars and locks; absent means host-owned
	holders map[PeerIndex]*holder // the peers holding at least one lock
}

// holder is a peer holding locks.
type holder struct {
	lastHeard time.Time  // when the peer was last heard from
	locks     []EntityID // the entities it holds, never empty
}

// heard advances h's clock to now; a late, older time never rewinds it.
func (h *holder) heard(now time.Time) {
	if now.After(h.lastHeard) {
		h.lastHeard = now
	}
}

// New returns an empty table whose entities all belong to host.
func New(host PeerIndex, cfg Config) *Table {
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	if cfg.MaxLocksPerPeer <= 0 {
		cfg.MaxLocksPerPeer = DefaultMaxLocksPerPeer
	}
	return &Table{
		cfg:     cfg,
		host:    host,
		records: make(map[EntityID]Record),
		holders: make(map[PeerIndex]*holder),
	}
}

// Host returns the host the table was made for.
func (t *Table) Host() PeerIndex { return t.host }

// Record returns the authority of e; the zero Record (host) if the table holds
// none.
func (t *Table) Record(e EntityID) Record { return t.records[e] }

// Author returns the one peer that may write e.
func (t *Table) Author(e EntityID) PeerIndex {
	if r, ok := t.records[e]; ok {
		return r.Peer
	}
	return t.host
}

// All yields every avatar and lock record in ascending entity order; the
// host-owned entities, which have no record, are not yielded. It is the
// table's snapshot: Restore each pair into a new table to rebuild it. Records
// removed during the iteration are skipped.
func (t *Table) All() iter.Seq2[EntityID, Record] {
	return func(yield func(EntityID, Record) bool) {
		for _, e := range slices.Sorted(maps.Keys(t.records)) {
			r, ok := t.records[e]
			if ok && !yield(e, r) {
				return
			}
		}
	}
}

// AdmitWrite returns nil if peer may write e: its avatar, a lock it holds, or,
// for the host, any entity that is not client-owned. Otherwise it returns a
// *RejectError with code NotAuthority: drop the write. It does not allocate
// when it admits.
func (t *Table) AdmitWrite(peer PeerIndex, e EntityID) error {
	if t.Author(e) == peer {
		return nil
	}
	return reject(NotAuthority, OpWrite, peer, e)
}

// AdmitCorrection returns nil if the new host may merge peer's migration
// correction for e (a CRDT entry where peer's replica wins over the new host's
// snapshot). docs/design.md §4: the new host admits a peer's corrections for its own
// avatar and the entities it holds a lock on, and for host entities only what
// the peer received from the old host. The caller decides the last part and
// says so with relayed; relayed never admits another peer's avatar or lock,
// whose owner sends its own corrections. Otherwise it returns a *RejectError
// with code NotAuthority: drop that correction.
func (t *Table) AdmitCorrection(peer PeerIndex, e EntityID, relayed bool) error {
	r, owned := t.records[e]
	if owned && r.Peer == peer || !owned && (relayed || peer == t.host) {
		return nil
	}
	return reject(NotAuthority, OpCorrection, peer, e)
}

// SetAvatar makes e the avatar of owner, who alone writes it from now on. The
// host spawns avatars, so e is normally new (host-owned); assigning e to its
// owner again is a no-op whose Transfer has From == To. It is rejected with
// NotLockable if e is reserved, LockHeld if a peer holds a lock on e, and
// NotAuthority if e is another peer's avatar.
func (t *Table) SetAvatar(e EntityID, owner PeerIndex) (Transfer, error) {
	if reserved(e) {
		return Transfer{}, reject(NotLockable, OpSetAvatar, owner, e)
	}
	if r, owned := t.records[e]; owned {
		switch {
		case r.Kind == KindLock:
			return Transfer{}, reject(LockHeld, OpSetAvatar, owner, e)
		case r.Peer != owner:
			return Transfer{}, reject(NotAuthority, OpSetAvatar, owner, e)
		}
		return Transfer{Entity: e, From: owner, To: owner}, nil
	}
	t.records[e] = Record{Kind: KindAvatar, Peer: owner}
	return Transfer{Entity: e, From: t.host, To: owner}, nil
}

// Despawn forgets e. A lock on it no longer counts against its holder.
func (t *Table) Despawn(e EntityID) {
	if r, ok := t.records[e]; ok {
		t.release(e, r)
	}
}

// Leave handles a member leaving the room. It returns the member's avatars,
// which are host-owned from now on and which the caller despawns, and the
// Transfers of the locks it held back to the host, in ascending entity order.
func (t *Table) Leave(peer PeerIndex) (avatars []EntityID, released []Transfer) {
	if h := t.holders[peer]; h != nil {
		for _, e := range h.locks {
			delete(t.records, e)
			released = append(released, Transfer{Entity: e, From: peer, To: t.host})
		}
		delete(t.holders, peer)
	}
	for e, r := range t.records {
		if r.Kind == KindAvatar && r.Peer == peer {
			delete(t.records, e)
			avatars = append(avatars, e)
		}
	}
	slices.Sort(avatars)
	sortTransfers(released)
	return avatars, released
}

// RequestLock gives peer a temporary lock on the host entity e, so that peer
// writes it until it relinquishes it or goes silent. The request counts as
// hearing from peer. A repeated request by the holder refreshes the lock and
// returns a Transfer with From == To, which needs no broadcast. A lock whose
// holder has been silent longer than Config.LockTimeout is taken over. It is
// rejected with NotLockable (peer is the host, e is reserved or an avatar),
// LockHeld (a live peer holds e) or TooManyLocks.
func (t *Table) RequestLock(peer PeerIndex, e EntityID, now time.Time) (Transfer, error) {
	if peer == t.host || reserved(e) {
		return Transfer{}, reject(NotLockable, OpLock, peer, e)
	}
	from := t.host
	r, owned := t.records[e]
	if owned {
		switch {
		case r.Kind == KindAvatar:
			return Transfer{}, reject(NotLockable, OpLock, peer, e)
		case r.Peer == peer:
			t.holders[peer].heard(now)
			return Transfer{Entity: e, From: peer, To: peer}, nil
		case t.live(r.Peer, now):
			return Transfer{}, reject(LockHeld, OpLock, peer, e)
		}
		from = r.Peer
	}
	if h := t.holders[peer]; h != nil && len(h.locks) >= t.cfg.MaxLocksPerPeer {
		return Transfer{}, reject(TooManyLocks, OpLock, peer, e)
	}
	if owned {
		t.release(e, r)
	}
	t.lock(peer, e, now)
	return Transfer{Entity: e, From: from, To: peer}, nil
}

// Grant is the host's own transfer of the host entity e to peer: peer writes it, as a lock
// holder does, until the host revokes it (Relinquish on the holder's behalf), peer relinquishes it
// or goes silent longer than Config.LockTimeout. Unlike RequestLock it takes e from a live holder
// and is not bounded by Config.MaxLocksPerPeer: the host decides. It is rejected with
// NotLockable when peer is the host, e is reserved or e is an avatar.
func (t *Table) Grant(peer PeerIndex, e EntityID, now time.Time) (Transfer, error) {
	if peer == t.host || reserved(e) {
		return Transfer{}, reject(NotLockable, OpGrant, peer, e)
	}
	from := t.host
	if r, owned := t.records[e]; owned {
		switch {
		case r.Kind == KindAvatar:
			return Transfer{}, reject(NotLockable, OpGrant, peer, e)
		case r.Peer == peer:
			t.holders[peer].heard(now)
			return Transfer{Entity: e, From: peer, To: peer}, nil
		}
		from = r.Peer
		t.release(e, r)
	}
	t.lock(peer, e, now)
	return Transfer{Entity: e, From: from, To: peer}, nil
}

// Relinquish gives peer's lock on e back to the host. Anyone but the holder is
// rejected with NotAuthority; the host may relinquish on a holder's behalf by
// passing the holder as peer.
func (t *Table) Relinquish(peer PeerIndex, e EntityID) (Transfer, error) {
	r, owned := t.records[e]
	if !owned || r.Kind != KindLock || r.Peer != peer {
		return Transfer{}, reject(NotAuthority, OpRelinquish, peer, e)
	}
	t.release(e, r)
	return Transfer{Entity: e, From: peer, To: t.host}, nil
}

// Touch records that peer was heard from at now; call it for every message.
// It keeps peer's locks alive. It does not allocate.
func (t *Table) Touch(peer PeerIndex, now time.Time) {
	if h := t.holders[peer]; h != nil {
		h.heard(now)
	}
}

// Expire returns to the host every lock whose holder has been silent longer
// than Config.LockTimeout at now, and returns their Transfers in ascending
// entity order (nil, without allocating, if none expired).
func (t *Table) Expire(now time.Time) []Transfer {
	var out []Transfer
	for p, h := range t.holders {
		if !t.silent(h, now) {
			continue
		}
		for _, e := range h.locks {
			delete(t.records, e)
			out = append(out, Transfer{Entity: e, From: p, To: t.host})
		}
		delete(t.holders, p)
	}
	sortTransfers(out)
	return out
}

// Restore sets e's record to r, as read back from the replica's authority
// component: a new host rebuilds its table this way after a migration, with
// now as the time every lock holder was last heard from (each gets a full
// LockTimeout to speak up). A lock held by the table's own host becomes host
// ownership. Config.MaxLocksPerPeer is not enforced: the old host granted the
// locks. It fails with ErrUnknownKind for an invalid r, and with a
// *RejectError (NotLockable) for an avatar or lock on a reserved entity; the
// table is then unchanged.
func (t *Table) Restore(e EntityID, r Record, now time.Time) error {
	switch r.Kind {
	case KindHost, KindAvatar, KindLock:
	default:
		return fmt.Errorf("%w: %d for entity %d", ErrUnknownKind, uint8(r.Kind), e)
	}
	hostOwned := r.Kind == KindHost || r.Kind == KindLock && r.Peer == t.host
	if !hostOwned && reserved(e) {
		return reject(NotLockable, OpRestore, r.Peer, e)
	}
	if old, ok := t.records[e]; ok {
		t.release(e, old)
	}
	switch {
	case hostOwned:
	case r.Kind == KindLock:
		t.lock(r.Peer, e, now)
	default:
		t.records[e] = Record{Kind: KindAvatar, Peer: r.Peer}
	}
	return nil
}

// live reports whether peer holds locks and was heard from recently enough.
func (t *Table) live(peer PeerIndex, now time.Time) bool {
	h := t.holders[peer]
	return h != nil && !t.silent(h, now)
}

// silent reports whether h has been silent longer than the lock timeout.
func (t *Table) silent(h *holder, now time.Time) bool {
	return now.Sub(h.lastHeard) > t.cfg.LockTimeout
}

// lock records that peer holds e, which must have no record.
func (t *Table) lock(peer PeerIndex, e EntityID, now time.Time) {
	t.records[e] = Record{Kind: KindLock, Peer: peer}
	h := t.holders[peer]
	if h == nil {
		h = &holder{lastHeard: now}
		t.holders[peer] = h
	}
	h.heard(now)
	h.locks = append(h.locks, e)
}

// release deletes e's record r, and the lock it stands for.
func (t *Table) release(e EntityID, r Record) {
	delete(t.records, e)
	if r.Kind != KindLock {
		return
	}
	h := t.holders[r.Peer]
	if i := slices.Index(h.locks, e); i >= 0 {
		h.locks = slices.Delete(h.locks, i, i+1)
	}
	if len(h.locks) == 0 {
		delete(t.holders, r.Peer)
	}
}

func sortTransfers(s []Transfer) {
	slices.SortFunc(s, func(a, b Transfer) int { return cmp.Compare(a.Entity, b.Entity) })
}
