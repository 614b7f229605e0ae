// @ts-check
// Who may write which entity of a room — a port of the Go package authority as the browser peer
// uses it: the record codec (authority/record.go), the host's Table (authority/table.go) and a
// peer's Fence over host messages (authority/fence.go). Like the Go package it owns no timers and
// reads no clock: time comes in as `now` (milliseconds) from the caller.
//
// A rejection is an AuthorityError: drop that one operation and keep the peer.

/** Authority record kinds (authority.Kind). */
export const KIND_HOST = 0;
export const KIND_AVATAR = 1;
export const KIND_LOCK = 2;

/** The encoded size of a record (authority.RecordSize). */
export const RECORD_SIZE = 9;

/**
 * Entity numbers (the low 16 bits) Concord keeps for itself; number 0 is the room's own state.
 * Reserved entities are written only by the host (authority.ReservedNumbers).
 */
export const RESERVED_NUMBERS = 512;

/** A holder silent for longer than this loses its locks (authority.Config's default). */
export const LOCK_TIMEOUT_MS = 3000;
/** The most locks one peer may hold (authority.Config's default). */
export const MAX_LOCKS_PER_PEER = 16;

/**
 * Who may write an entity: kind (KIND_HOST, KIND_AVATAR or KIND_LOCK) and, but for the host,
 * the peer index that holds it.
 * @typedef {{kind: number, peer: number}} AuthorityRecord
 */

/**
 * The record of every host-owned entity.
 * @type {Readonly<AuthorityRecord>}
 */
export const HOST_RECORD = Object.freeze({ kind: KIND_HOST, peer: 0 });

/**
 * Why an operation was rejected (authority.RejectCode). The fence's three are the ones a peer
 * meets: a host message from an older term, from a newer one, or from a peer that is not the host.
 */
export const Reject = Object.freeze({
  NotAuthority: 'not_authority',
  LockHeld: 'lock_held',
  TooManyLocks: 'too_many_locks',
  NotLockable: 'not_lockable',
  UnknownKind: 'unknown_kind',
  StaleTerm: 'stale_term',
  FutureTerm: 'future_term',
  NotHost: 'not_host',
});

/** One rejected operation (authority.RejectError): code, the peer, and the entity or the term. */
export class AuthorityError extends Error {
  /**
   * @param {string} code
   * @param {string} op
   * @param {number} peer
   * @param {number} e
   */
  constructor(code, op, peer, e, term = 0) {
    super(op === 'host message'
      ? `authority: host message from peer ${peer} at term ${term} rejected: ${code}`
      : `authority: ${code}: ${op} by peer ${peer} on entity ${e}`);
    this.code = code;
    this.op = op;
    this.peer = peer;
    this.entity = e;
    this.term = term;
  }
}

/**
 * Encodes an authority record {kind, peer}: kind u8 | peer u64 LE (authority.AppendRecord).
 * @param {AuthorityRecord} rec
 */
export function encodeRecord(rec) {
  const b = new Uint8Array(RECORD_SIZE);
  b[0] = rec.kind;
  new DataView(b.buffer).setBigUint64(1, BigInt(rec.peer || 0), true);
  return b;
}

/**
 * Decodes an authority record; null when missing or malformed (authority.ConsumeRecord).
 * @param {Uint8Array | null | undefined} b
 */
export function decodeRecord(b) {
  if (!b || b.length < RECORD_SIZE) return null;
  const kind = b[0];
  const peer = Number(new DataView(b.buffer, b.byteOffset, RECORD_SIZE).getBigUint64(1, true));
  if (kind === KIND_HOST) return peer === 0 ? { kind, peer: 0 } : null;
  if (kind === KIND_AVATAR || kind === KIND_LOCK) return { kind, peer };
  return null;
}

/** @param {number} e */
const reserved = (e) => (e & 0xffff) < RESERVED_NUMBERS;

/**
 * Fence tells, on a peer, whether a host message comes from the host of the current term
 * (authority.Fence). Signaling announces every (term, host) pair; the peer feeds them to observe
 * and checks each host message with accept. A new Fence knows no host and accepts nothing.
 */
export class Fence {
  constructor() {
    this.term = 0;
    this.host = 0;
  }

  /**
   * Adopts host as the host of term if term is newer than the current one, and reports whether
   * it did. Older or equal terms, and term 0, are ignored.
   * @param {number} term
   * @param {number} host
   */
  observe(term, host) {
    if (term <= this.term) return false;
    this.term = term;
    this.host = host;
    return true;
  }

  /**
   * Adopts signaling's announcement of host (0: "no host") for term, and reports whether the
   * fence moved (authority.Fence.Announce). Signaling's latest word wins: a newer term, and a host
   * named in the fence's own term when the fence holds "no host" or another host (a restarted
   * server that waited for its host announces it in the term it first announced without one; a
   * room whose term saturated at 2^53-1 changes host within it). "No host" in the fence's own term
   * is a server waiting for the host the fence holds to resume, and is ignored, as are older terms
   * and term 0. The rules are shared with Go as vectors: testdata/peer/fencing.json.
   * @param {number} term
   * @param {number} host
   */
  announce(term, host) {
    if (term !== 0 && term === this.term && host !== 0 && host !== this.host) {
      this.host = host;
      return true;
    }
    return this.observe(term, host);
  }

  /**
   * Returns null if a host message stamped with term came from the host of the current term, and
   * otherwise an AuthorityError whose code is StaleTerm (term older: drop the message),
   * FutureTerm (term newer than any announced) or NotHost (the sender is not the current host, or
   * there is no host: none known yet, or signaling announced "no host").
   * @param {number} term
   * @param {number} sender
   */
  accept(term, sender) {
    let code;
    if (term < this.term) code = Reject.StaleTerm;
    else if (term > this.term) code = Reject.FutureTerm;
    else if (this.host === 0 || sender !== this.host) code = Reject.NotHost;
    else return null;
    return new AuthorityError(code, 'host message', sender, 0, term);
  }
}

/**
 * The authority of every entity on the host (authority.Table): host-owned by default, an avatar,
 * or locked by a peer; the lock timers; the admission of writes and migration corrections.
 */
export class AuthorityTable {
  /**
   * @param {number} host
   */
  constructor(host) {
    this.host = host;
    this.records = new Map(); // entity → {kind, peer}; absent = host-owned
    this.holders = new Map(); // peer → {lastHeard, locks: []}
  }

  /**
   * @param {number} e
   */
  author(e) {
    const r = this.records.get(e);
    return r ? r.peer : this.host;
  }

  /**
   * @param {number} peer
   * @param {number} e
   */
  admitWrite(peer, e) {
    if (this.author(e) !== peer) throw new AuthorityError(Reject.NotAuthority, 'write', peer, e);
  }

  /**
   * @param {number} peer
   * @param {number} e
   * @param {boolean} relayed
   */
  admitCorrection(peer, e, relayed) {
    const r = this.records.get(e);
    if ((r && r.peer === peer) || (!r && (relayed || peer === this.host))) return;
    throw new AuthorityError(Reject.NotAuthority, 'correction', peer, e);
  }

  /**
   * @param {number} e
   * @param {number} owner
   */
  setAvatar(e, owner) {
    if (reserved(e)) throw new AuthorityError(Reject.NotLockable, 'set-avatar', owner, e);
    const r = this.records.get(e);
    if (r) {
      if (r.kind === KIND_LOCK) throw new AuthorityError(Reject.LockHeld, 'set-avatar', owner, e);
      if (r.peer !== owner) throw new AuthorityError(Reject.NotAuthority, 'set-avatar', owner, e);
      return { entity: e, from: owner, to: owner };
    }
    this.records.set(e, { kind: KIND_AVATAR, peer: owner });
    return { entity: e, from: this.host, to: owner };
  }

  /**
   * @param {number} e
   */
  despawn(e) {
    const r = this.records.get(e);
    if (r) this.release(e, r);
  }

  /**
   * @param {number} peer
   */
  leave(peer) {
    const released = [];
    const h = this.holders.get(peer);
    if (h) {
      for (const e of h.locks) {
        this.records.delete(e);
        released.push({ entity: e, from: peer, to: this.host });
      }
      this.holders.delete(peer);
    }
    const avatars = [];
    for (const [e, r] of this.records) {
      if (r.kind === KIND_AVATAR && r.peer === peer) {
        this.records.delete(e);
        avatars.push(e);
      }
    }
    avatars.sort((a, b) => a - b);
    released.sort((a, b) => a.entity - b.entity);
    return { avatars, released };
  }

  /**
   * @param {number} peer
   * @param {number} e
   * @param {number} now
   */
  requestLock(peer, e, now) {
    if (peer === this.host || reserved(e)) throw new AuthorityError(Reject.NotLockable, 'lock', peer, e);
    let from = this.host;
    const r = this.records.get(e);
    if (r) {
      if (r.kind === KIND_AVATAR) throw new AuthorityError(Reject.NotLockable, 'lock', peer, e);
      if (r.peer === peer) {
        this.heard(this.holders.get(peer), now);
        return { entity: e, from: peer, to: peer };
      }
      if (this.live(r.peer, now)) throw new AuthorityError(Reject.LockHeld, 'lock', peer, e);
      from = r.peer;
    }
    const h = this.holders.get(peer);
    if (h && h.locks.length >= MAX_LOCKS_PER_PEER) throw new AuthorityError(Reject.TooManyLocks, 'lock', peer, e);
    if (r) this.release(e, r);
    this.lock(peer, e, now);
    return { entity: e, from, to: peer };
  }

  /**
   * The host's own transfer of host entity e to peer (Go's Table.Grant): taken from a live holder,
   * not bounded by MAX_LOCKS_PER_PEER; refused (not_lockable) for the host itself, reserved
   * entities and avatars.
   * @param {number} peer
   * @param {number} e
   * @param {number} now
   */
  grant(peer, e, now) {
    if (peer === this.host || reserved(e)) throw new AuthorityError(Reject.NotLockable, 'grant', peer, e);
    let from = this.host;
    const r = this.records.get(e);
    if (r) {
      if (r.kind === KIND_AVATAR) throw new AuthorityError(Reject.NotLockable, 'grant', peer, e);
      if (r.peer === peer) {
        this.heard(this.holders.get(peer), now);
        return { entity: e, from: peer, to: peer };
      }
      from = r.peer;
      this.release(e, r);
    }
    this.lock(peer, e, now);
    return { entity: e, from, to: peer };
  }

  /**
   * @param {number} peer
   * @param {number} e
   */
  relinquish(peer, e) {
    const r = this.records.get(e);
    if (!r || r.kind !== KIND_LOCK || r.peer !== peer) throw new AuthorityError(Reject.NotAuthority, 'relinquish', peer, e);
    this.release(e, r);
    return { entity: e, from: peer, to: this.host };
  }

  /**
   * @param {number} peer
   * @param {number} now
   */
  touch(peer, now) {
    const h = this.holders.get(peer);
    if (h) this.heard(h, now);
  }

  /**
   * @param {number} now
   */
  expire(now) {
    const out = [];
    for (const [p, h] of this.holders) {
      if (now - h.lastHeard <= LOCK_TIMEOUT_MS) continue;
      for (const e of h.locks) {
        this.records.delete(e);
        out.push({ entity: e, from: p, to: this.host });
      }
      this.holders.delete(p);
    }
    return out.sort((a, b) => a.entity - b.entity);
  }

  /**
   * @param {number} e
   * @param {AuthorityRecord} r
   * @param {number} now
   */
  restore(e, r, now) {
    if (r.kind !== KIND_HOST && r.kind !== KIND_AVATAR && r.kind !== KIND_LOCK) throw new AuthorityError(Reject.UnknownKind, 'restore', r.peer, e);
    const hostOwned = r.kind === KIND_HOST || (r.kind === KIND_LOCK && r.peer === this.host);
    if (!hostOwned && reserved(e)) throw new AuthorityError(Reject.NotLockable, 'restore', r.peer, e);
    const old = this.records.get(e);
    if (old) this.release(e, old);
    if (hostOwned) return;
    if (r.kind === KIND_LOCK) this.lock(r.peer, e, now);
    else this.records.set(e, { kind: KIND_AVATAR, peer: r.peer });
  }

  /**
   * @param {{lastHeard: number, locks: number[]}} h
   * @param {number} now
   */
  heard(h, now) { if (h && now > h.lastHeard) h.lastHeard = now; }

  /**
   * @param {number} peer
   * @param {number} now
   */
  live(peer, now) {
    const h = this.holders.get(peer);
    return !!h && now - h.lastHeard <= LOCK_TIMEOUT_MS;
  }

  /**
   * @param {number} peer
   * @param {number} e
   * @param {number} now
   */
  lock(peer, e, now) {
    this.records.set(e, { kind: KIND_LOCK, peer });
    let h = this.holders.get(peer);
    if (!h) {
      h = { lastHeard: now, locks: [] };
      this.holders.set(peer, h);
    }
    this.heard(h, now);
    h.locks.push(e);
  }

  /**
   * @param {number} e
   * @param {AuthorityRecord} r
   */
  release(e, r) {
    this.records.delete(e);
    if (r.kind !== KIND_LOCK) return;
    const h = this.holders.get(r.peer);
    if (!h) return;
    const i = h.locks.indexOf(e);
    if (i >= 0) h.locks.splice(i, 1);
    if (h.locks.length === 0) this.holders.delete(r.peer);
  }
}
