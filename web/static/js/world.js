// @ts-check
// The replicated world as one peer sees it — a port of peer/world.go: the ADR-117 replica (crdt.js)
// and the index its schemas give it (live entities, their schema, creation data and authority).
//
// Writes are batched exactly as the Go World batches them: the first local write of a loop step
// opens a batch stamped clock+1, every later write of the step uses the same stamp, and the peer
// closes the batch after the step. Every change the world accepts is reported to a sink (the host
// or member role), which turns it into traffic. Everything runs on the page's single thread.

import { Replica, MessageType, entityNumber, entityOf } from './crdt.js';
import { COMPONENT_META, COMPONENT_AUTHORITY, FIRST_APP_COMPONENT, appendMeta, parseMeta } from './schema.js';
import * as netmsg from './netmsg.js';
import { worldLimits, appendBounds } from './worldlimits.js';
import { KIND_HOST, KIND_AVATAR, HOST_RECORD, RESERVED_NUMBERS, encodeRecord, decodeRecord } from './authority.js';

const { DeleteEntity, AppendValue, DeleteComponent, DeleteComponentNetwork, DeleteEntityNetwork } = MessageType;

/** Entity numbers below this are reserved (0 is the room itself). */
export const FIRST_SPAWN_NUMBER = RESERVED_NUMBERS;

/**
 * How far above the version of an entity number known here a deletion may be (Go's
 * maxVersionAhead): an honest host reuses a number a few times at most.
 */
export const MAX_VERSION_AHEAD = 4;

/**
 * The highest version of entity number n the world knows of: live, deleted, or 0 (Go's
 * World.knownVersion).
 * @param {World} w
 * @param {number} n
 */
export function knownVersion(w, n) {
  let v = 0;
  const e = w.byNumber.get(n);
  if (e !== undefined) v = e >>> 16;
  const dv = w.r.deletedVersion(n);
  if (dv !== undefined && dv > v) v = dv;
  return v;
}
/**
 * Whether w holds nothing of entity e: no live entity of its number, and no tombstone of its
 * version or a later one (Go's World.lacks).
 * @param {any} w
 * @param {number} e
 */
export function lacks(w, e) {
  if (w.byNumber.get(e & 0xffff) !== undefined) return false;
  const dv = w.r.deletedVersion(e & 0xffff);
  return dv === undefined || dv < (e >>> 16);
}
/** The entity that holds room-wide host state. */
export const ROOM_ENTITY = 0;

/** Event kinds, as peer.EventKind. */
export const Ev = Object.freeze({
  Spawned: 'spawned', Updated: 'updated', Despawned: 'despawned', Authority: 'authority',
  PeerEntered: 'peer-entered', PeerExited: 'peer-exited', HostChanged: 'host-changed',
  Migrating: 'migrating', Synced: 'synced', Appended: 'appended', Unset: 'unset',
  LeftInterest: 'left-interest',
});

/** Addresses an application message to every member of the room but its sender. */
export const EVERYONE = 0;
/** The largest reliable application message (data only). */
export const MAX_MESSAGE = 16 << 10;
/** The largest unreliable application message: one datagram with room for a relay header. */
export const MAX_UNRELIABLE_MESSAGE = netmsg.MAX_DATAGRAM - netmsg.RELAY_OVERHEAD;
/** The largest Action's data. */
export const MAX_ACTION = 4 << 10;
/** The largest value of an append set. */
export const MAX_APPEND_VALUE = 1 << 10;

/** A write the world refuses (code: no_authority, not_host, unknown_entity, …). */
/**
 * A world event, as peer.Event: kind is an Ev value; entity is set for spawned, updated,
 * despawned and authority events (props: the mask of properties an update changed); peer is the
 * member or host concerned; term the term of host events.
 * @typedef {object} WorldEvent
 * @property {string} kind
 * @property {number} [entity]
 * @property {number} [props]
 * @property {number} [component]
 * @property {number} [peer]
 * @property {number} [term]
 */

/** @typedef {import('./schema.js').Schema} Schema */
/** @typedef {import('./schema.js').SchemaTable} SchemaTable */
/** @typedef {import('./authority.js').AuthorityRecord} AuthorityRecord */
/** @typedef {import('./crdt.js').Message} Message */
/** @typedef {{schema: Schema, creation: Uint8Array, auth: AuthorityRecord}} EntityInfo */

export class WorldError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   */
  constructor(code, message) {
    super(message);
    this.name = 'WorldError';
    /** @type {string} */
    this.code = code;
  }
}

/**
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 */
function bytesEqual(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Where a World reports every change it accepts (the host or member role turns them into
 * traffic). origin is the peer index a change came from, 0 for a local write.
 * @typedef {object} ChangeSink
 * @property {(e: number, prop: number, origin: number) => void} propChanged
 * @property {(e: number, origin: number) => void} spawned
 * @property {(e: number, origin: number) => void} despawned
 * @property {(e: number, rec: import('./authority.js').AuthorityRecord, origin: number) => void} authorityChanged
 * @property {(m: import('./crdt.js').Message, origin: number) => void} otherChanged
 */

/**
 * A sink that ignores every change (a peer with no role yet).
 * @type {Readonly<ChangeSink>}
 */
export const nopSink = Object.freeze({
  propChanged() {}, spawned() {}, despawned() {}, authorityChanged() {}, otherChanged() {},
});

/**
 * World: the replica and its index. Games read it with get/entitiesOf/authority… and write it with
 * set (and, on the host, spawn/despawn).
 */
export class World {
  /** @param {SchemaTable} table */
  constructor(table) {
    this.r = new Replica();
    this.schemas = table;
    this.self = 0;
    this.host = 0;
    this.term = 0;
    // The term of the last host whose state this replica holds (hosted, or merged a sync snapshot
    // of); 0 before any. A member's Hello carries it (Go's World.heldTerm).
    this.heldTerm = 0;
    this.isHost = false;
    /** @type {Map<number, EntityInfo>} entity → its schema, creation data and authority */
    this.ents = new Map();
    /** @type {Map<number, number>} entity number → entity */
    this.byNumber = new Map();
    this.stamp = 0; // the open batch's timestamp, 0 when none is open
    this.next = FIRST_SPAWN_NUMBER;
    /** @type {ChangeSink} */
    this.sink = nopSink;
    /** @type {WorldEvent[]} the events of the current step */
    this.events = [];
    /** @type {import('./peer.js').Peer | null} set by the Peer: RPCs and locks go through it */
    this.peer = null;
    /** The world's bounds (worldlimits.js); the Peer sets them from its options. */
    this.limits = worldLimits();
  }

  /** The replica's Lamport clock. */
  get clock() { return Number(this.r.clock); }
  /** The number of live entities with a schema. */
  get size() { return this.ents.size; }

  /**
   * Live entities with a schema, ascending.
   * @returns {number[]}
   */
  entities() { return [...this.ents.keys()].sort((a, b) => a - b); }

  /**
   * Live entities of schema id, ascending.
   * @param {number} id
   * @returns {number[]}
   */
  entitiesOf(id) {
    const out = [];
    for (const [e, info] of this.ents) if (info.schema.id === id) out.push(e);
    return out.sort((a, b) => a - b);
  }

  /**
   * Whether e is a live entity with a schema.
   * @param {number} e
   * @returns {boolean}
   */
  exists(e) { return this.ents.has(e); }
  /**
   * The schema of e, or undefined.
   * @param {number} e
   * @returns {Schema | undefined}
   */
  schemaOf(e) { const i = this.ents.get(e); return i ? i.schema : undefined; }
  /**
   * The creation data e was spawned with, or undefined.
   * @param {number} e
   * @returns {Uint8Array | undefined}
   */
  creation(e) { const i = this.ents.get(e); return i ? i.creation : undefined; }

  /**
   * Property prop of e (a Uint8Array aliasing the replica: do not modify), or undefined.
   * @param {number} e
   * @param {number} prop
   * @returns {Uint8Array | undefined}
   */
  get(e, prop) {
    const info = this.ents.get(e);
    if (!info || prop < 0 || prop >= info.schema.properties.length) return undefined;
    const v = this.r.get(e, info.schema.properties[prop].component);
    if (!v || v.deleted) return undefined;
    return v.data;
  }

  /**
   * Who writes e: the avatar owner or lock holder, or the host's index for host-owned entities.
   * @param {number} e
   * @returns {number}
   */
  authority(e) {
    const info = this.ents.get(e);
    if (!info || info.auth.kind === KIND_HOST) return this.host;
    return info.auth.peer;
  }

  /**
   * e's authority record ({kind: KIND_HOST, peer: 0} for host-owned and unknown entities).
   * @param {number} e
   * @returns {AuthorityRecord}
   */
  authorityRecord(e) {
    const info = this.ents.get(e);
    return info ? info.auth : HOST_RECORD;
  }

  /**
   * The avatar of member p, or undefined.
   * @param {number} p
   * @returns {number | undefined}
   */
  avatarOf(p) {
    for (const [e, info] of this.ents) if (info.auth.kind === KIND_AVATAR && info.auth.peer === p) return e;
    return undefined;
  }

  /**
   * Whether this peer may write e now.
   * @param {number} e
   * @returns {boolean}
   */
  canWrite(e) {
    const info = this.ents.get(e);
    if (!info) return false;
    if (info.auth.kind === KIND_HOST) return this.isHost;
    return info.auth.peer === this.self;
  }

  /**
   * Writes property prop of e; throws a WorldError without authority, a SchemaError for a bad
   * value.
   * @param {number} e
   * @param {number} prop
   * @param {Uint8Array} value
   */
  set(e, prop, value) {
    const info = this.ents.get(e);
    if (!info) throw new WorldError('no_entity', `world: no entity ${e}`);
    const s = info.schema;
    if (prop < 0 || prop >= s.properties.length) throw new WorldError('no_property', `world: ${s.name} has no property ${prop}`);
    if (!this.canWrite(e)) throw new WorldError('no_authority', `world: ${e} is written by peer ${this.authority(e)}`);
    s.checkValue(prop, value);
    const cur = this.get(e, prop);
    if (cur && bytesEqual(cur, value)) return;
    if (this.r.writeAt(e, s.properties[prop].component, this.batchStamp(), value, false) === 'applied') {
      this.sink.propChanged(e, prop, 0);
    }
  }

  /**
   * Creates an entity of schema id (host only) and returns it. A null value leaves a property unset.
   * @param {number} id
   * @param {Uint8Array} creation
   * @param {...(Uint8Array | null | undefined)} values
   * @returns {number}
   */
  spawn(id, creation, ...values) {
    if (!this.isHost) throw new WorldError('not_host', 'world: only the host spawns');
    const e = this.allocate();
    if (e === undefined) throw new WorldError('full', 'world: no free entity id');
    this.spawnAt(e, id, creation, values, HOST_RECORD);
    return e;
  }

  /**
   * Creates the room entity (number 0) with schema id.
   * @param {number} id
   * @param {Uint8Array} creation
   * @param {...(Uint8Array | null | undefined)} values
   */
  spawnRoom(id, creation, ...values) {
    if (!this.isHost) throw new WorldError('not_host', 'world: only the host spawns');
    if (this.exists(ROOM_ENTITY)) throw new WorldError('exists', 'world: the room entity exists');
    this.spawnAt(ROOM_ENTITY, id, creation, values, HOST_RECORD);
  }

  /**
   * @param {number} e
   * @param {number} id
   * @param {Uint8Array} creation
   * @param {(Uint8Array | null | undefined)[]} values
   * @param {AuthorityRecord} auth
   */
  spawnAt(e, id, creation, values, auth) {
    const s = this.schemas.lookup(id);
    if (!s) throw new WorldError('unknown_schema', `world: unknown schema ${id}`);
    if (values.length > s.properties.length) throw new WorldError('no_property', `world: ${values.length} values for ${s.name}`);
    values.forEach((v, i) => { if (v != null) s.checkValue(i, v); });
    const ts = this.batchStamp();
    this.r.writeAt(e, COMPONENT_META, ts, appendMeta(id, creation), false);
    this.ents.set(e, { schema: s, creation: creation.slice(), auth });
    this.byNumber.set(entityNumber(e), e);
    values.forEach((v, i) => { if (v != null) this.r.writeAt(e, s.properties[i].component, ts, v, false); });
    if (auth.kind !== KIND_HOST) this.writeAuthority(e, auth);
    this.events.push({ kind: Ev.Spawned, entity: e });
    this.sink.spawned(e, 0);
  }

  /**
   * Deletes entity e (host only).
   * @param {number} e
   */
  despawn(e) {
    if (!this.isHost) throw new WorldError('not_host', 'world: only the host despawns');
    if (!this.exists(e)) throw new WorldError('no_entity', `world: no entity ${e}`);
    /** @type {Message} */
    const m = { type: DeleteEntity, entity: e, component: 0, timestamp: 0, data: null };
    if (this.r.merge(m) === 'applied') this.observe(m, 0);
  }

  /**
   * The highest deleted version of number n, or undefined.
   * @param {number} n
   * @returns {number | undefined}
   */
  deletedVersion(n) {
    let v;
    this.r.rangeDeleted((number, version) => {
      if (number === n) { v = version; return false; }
      return true;
    });
    return v;
  }

  /**
   * After a checkpoint was merged, moves the allocator half the number space past the number of
   * the checkpoint's latest spawn (the live entity whose meta is stamped latest): the host that
   * wrote the checkpoint went on allocating from about there, and members that lived through it
   * hold those entities; this host would allocate the same (number, version) pairs and a member
   * would take its spawn as a write to its own entity (docs/protocol.md §5 "Superseded numbers";
   * Go's World.resumeAllocation).
   */
  resumeAllocation() {
    let last = -1;
    let lastTS = -1;
    for (const e of this.ents.keys()) {
      const meta = this.r.get(e, COMPONENT_META);
      if (meta && !meta.deleted && (meta.ts > lastTS || (meta.ts === lastTS && e > last))) {
        last = e;
        lastTS = meta.ts;
      }
    }
    if (last < 0 || (last & 0xffff) < FIRST_SPAWN_NUMBER) return;
    const span = 65536 - FIRST_SPAWN_NUMBER;
    this.next = FIRST_SPAWN_NUMBER + (((last & 0xffff) - FIRST_SPAWN_NUMBER + 1 + Math.floor(span / 2)) % span);
  }

  /**
   * A free entity id: the next number never used, or a deleted number with its next version.
   * @returns {number | undefined}
   */
  allocate() {
    /** @type {Map<number, number> | null} */
    let deleted = null;
    for (let k = 0; k < 65536; k++) {
      const n = this.next;
      this.next = (this.next + 1) & 0xffff;
      if (this.next === 0) this.next = FIRST_SPAWN_NUMBER;
      if (n < FIRST_SPAWN_NUMBER || this.byNumber.has(n)) continue;
      if (!deleted) {
        const d = new Map();
        this.r.rangeDeleted((number, version) => { d.set(number, version); return true; });
        deleted = d;
      }
      let ver = 0;
      const dv = deleted.get(n);
      if (dv !== undefined) {
        if (dv === 0xffff) continue;
        ver = dv + 1;
      }
      const e = entityOf(n, ver);
      if (this.r.get(e, COMPONENT_META)) continue;
      return e;
    }
    return undefined;
  }

  /**
   * Stores e's authority record in the replica (so that it survives migration).
   * @param {number} e
   * @param {AuthorityRecord} rec
   */
  writeAuthority(e, rec) {
    const info = this.ents.get(e);
    if (!info) return;
    info.auth = { kind: rec.kind, peer: rec.peer };
    this.r.writeAt(e, COMPONENT_AUTHORITY, this.batchStamp(), encodeRecord(rec), false);
    this.sink.authorityChanged(e, info.auth, 0);
  }

  /**
   * The open write batch's timestamp, opening a batch at clock+1. At 2³²−1 it saturates rather
   * than leave u32 (as Go's World.batchStamp): the stamp bounds keep an honest room far below it.
   */
  batchStamp() {
    if (this.stamp === 0) {
      this.stamp = Math.min(this.clock + 1, 0xffffffff);
      this.r.observeClock(this.stamp);
    }
    return this.stamp;
  }

  closeBatch() { this.stamp = 0; }

  /**
   * Merges a CRDT message from peer origin and keeps the index up to date.
   * @param {Message} m
   * @param {number} origin
   * @returns {string} the merge Outcome
   */
  mergeRemote(m, origin) {
    const o = this.r.merge(m);
    if (o === 'applied') this.observe(m, origin);
    return o;
  }

  /**
   * Updates the index after m was applied to the replica.
   * @param {Message} m
   * @param {number} origin
   */
  observe(m, origin) {
    const e = m.entity >>> 0;
    const old = this.byNumber.get(entityNumber(e));
    if (old !== undefined && old !== e && this.r.entityDeleted(old)) this.forget(old, origin);
    switch (m.type) {
      case DeleteEntity:
      case DeleteEntityNetwork:
        if (this.ents.has(e)) this.forget(e, origin);
        return;
      case AppendValue:
        if (this.ents.has(e)) this.events.push({ kind: Ev.Appended, entity: e, component: m.component, peer: origin });
        this.sink.otherChanged(m, origin);
        return;
      default:
    }
    const deleted = m.type === DeleteComponent || m.type === DeleteComponentNetwork;
    if (m.component === COMPONENT_META) {
      if (deleted) {
        if (this.ents.has(e)) this.forget(e, origin);
        this.sink.otherChanged(m, origin);
        return;
      }
      this.index(e, origin);
      return;
    }
    if (m.component === COMPONENT_AUTHORITY) {
      const info = this.ents.get(e);
      const rec = (!deleted && decodeRecord(m.data)) || HOST_RECORD;
      if (info) {
        info.auth = { kind: rec.kind, peer: rec.peer };
        this.events.push({ kind: Ev.Authority, entity: e, peer: this.authority(e) });
      }
      this.sink.authorityChanged(e, rec, origin);
      return;
    }
    const info = this.ents.get(e);
    if (info) {
      const i = info.schema.index(m.component);
      if (i >= 0 && deleted) {
        // TRNP's updates carry values only: a deleted property travels as a CRDT message.
        this.events.push({ kind: Ev.Unset, entity: e, props: 1 << i });
        this.sink.otherChanged(m, origin);
        return;
      }
      if (i >= 0) {
        this.events.push({ kind: Ev.Updated, entity: e, props: 1 << i });
        this.sink.propChanged(e, i, origin);
        return;
      }
    }
    this.sink.otherChanged(m, origin);
  }

  /**
   * (Re)reads e's meta and authority components after its meta changed.
   * @param {number} e
   * @param {number} origin
   */
  index(e, origin) {
    const meta = this.r.get(e, COMPONENT_META);
    if (!meta || meta.deleted) return;
    const pm = parseMeta(meta.data);
    if (!pm) return;
    const s = this.schemas.lookup(pm.id);
    if (!s) return; // an entity of a schema we do not run: kept in the replica, not in the index
    const creation = pm.creation.slice();
    let info = this.ents.get(e);
    const fresh = !info;
    if (!info) {
      info = { schema: s, creation, auth: HOST_RECORD };
      this.ents.set(e, info);
      this.byNumber.set(entityNumber(e), e);
    }
    info.schema = s;
    info.creation = creation;
    const a = this.r.get(e, COMPONENT_AUTHORITY);
    if (a && !a.deleted) {
      const rec = decodeRecord(a.data);
      if (rec) info.auth = rec;
    }
    if (fresh) {
      this.events.push({ kind: Ev.Spawned, entity: e });
      this.sink.spawned(e, origin);
    }
  }

  /**
   * Drops entity number n from the replica and the index without deleting it: the host no longer
   * sends it to this member (its interest management).
   * @param {number} n
   */
  evict(n) {
    const e = this.byNumber.get(n);
    if (e !== undefined) {
      this.ents.delete(e);
      this.byNumber.delete(n);
      this.events.push({ kind: Ev.LeftInterest, entity: e });
      this.sink.despawned(e, this.host);
    }
    this.r.forget(n);
  }

  /**
   * @param {number} e
   * @param {number} origin
   */
  forget(e, origin) {
    this.ents.delete(e);
    if (this.byNumber.get(entityNumber(e)) === e) this.byNumber.delete(entityNumber(e));
    this.events.push({ kind: Ev.Despawned, entity: e });
    this.sink.despawned(e, origin);
  }

  // Members ask the host through the peer.
  /**
   * Asks the host for a lock on e (members).
   * @param {number} e
   */
  requestLock(e) { return this.#attached().systemRPC(RPC_LOCK_REQUEST, e); }
  /**
   * Gives back the lock on e (members).
   * @param {number} e
   */
  relinquish(e) { return this.#attached().systemRPC(RPC_RELINQUISH, e); }
  /**
   * Sends the app's RPC type with data to the host (members).
   * @param {number} type
   * @param {Uint8Array} data
   */
  sendRPC(type, data) { return this.#attached().sendRPC(type, data); }

  /**
   * Queues the app's RPC type with data to every member (host only).
   * @param {number} type
   * @param {Uint8Array} data
   */
  broadcastRPC(type, data) {
    const host = this.peer && this.peer.host;
    if (!this.isHost || !host) throw new WorldError('not_host', 'world: only the host broadcasts RPCs');
    if (type >= FIRST_SYSTEM_RPC) throw new WorldError('no_authority', 'world: RPC types from 0xffffff00 are Concord\'s');
    host.rpcs.push({ type, data: data.slice() });
  }

  /**
   * Deletes property prop of e (an ADR-117 DELETE_COMPONENT), with the authority set needs: get
   * then returns undefined until it is set again.
   * @param {number} e
   * @param {number} prop
   */
  unset(e, prop) {
    const info = this.ents.get(e);
    if (!info) throw new WorldError('no_entity', `world: no entity ${e}`);
    const s = info.schema;
    if (prop < 0 || prop >= s.properties.length) throw new WorldError('no_property', `world: ${s.name} has no property ${prop}`);
    if (!this.canWrite(e)) throw new WorldError('no_authority', `world: ${e} is written by peer ${this.authority(e)}`);
    const c = s.properties[prop].component;
    const cur = this.r.get(e, c);
    if (!cur || cur.deleted) return;
    /** @type {Message} */
    const m = { type: DeleteComponent, entity: e, component: c, timestamp: this.batchStamp(), networkId: 0, data: null };
    if (this.r.merge(m) === 'applied') this.observe(m, 0);
  }

  /**
   * Adds value to the append set (ADR-117 APPEND_VALUE) of component c of e: a grow-only set that
   * keeps the newest DEFAULT_APPEND_RETENTION values (a chat log, an input stream). c must be an
   * application component (≥ FIRST_APP_COMPONENT) that is not one of e's properties. The host
   * appends at once; a member asks the host, which admits the value when the member writes e or
   * the host app's allowAppend says so, and the value comes back with the host's relay. The
   * world's bounds apply (docs/protocol.md §5): it throws a WorldError 'world_limit' when e carries
   * as many append sets as it may and c is not one of them, or when the world (this peer's
   * replica) has grown to its size bound; the host refuses a member's append past them, and past
   * what the member's own writes may add, counting it and striking the member.
   * @param {number} e
   * @param {number} c
   * @param {Uint8Array} value
   */
  append(e, c, value) {
    this.checkAppend(e, c, value);
    /** @type {Message} */
    const probe = { type: AppendValue, entity: e, component: c, timestamp: 0, networkId: 0, data: value };
    const refusal = appendBounds(this.r, this.limits, probe);
    if (refusal) throw new WorldError('world_limit', `world: ${refusal.message} (${refusal.reason})`);
    if (!this.isHost) {
      const b = new Uint8Array(8 + value.length);
      const dv = new DataView(b.buffer);
      dv.setUint32(0, e >>> 0, true);
      dv.setUint32(4, c >>> 0, true);
      b.set(value, 8);
      this.#attached().rpcToHost(RPC_APPEND, b);
      return;
    }
    /** @type {Message} */
    const m = { type: AppendValue, entity: e, component: c, timestamp: this.batchStamp(), networkId: 0, data: value.slice() };
    if (this.r.merge(m) === 'applied') this.observe(m, 0);
  }

  /**
   * Throws unless value may join the append set of component c of e.
   * @param {number} e
   * @param {number} c
   * @param {Uint8Array} value
   */
  checkAppend(e, c, value) {
    const info = this.ents.get(e);
    if (!info) throw new WorldError('no_entity', `world: no entity ${e}`);
    if (c < FIRST_APP_COMPONENT) throw new WorldError('bad_component', `world: component ${c} is below ${FIRST_APP_COMPONENT}`);
    if (info.schema.index(c) >= 0) throw new WorldError('bad_component', `world: component ${c} is a property of ${info.schema.name}`);
    if (value.length > MAX_APPEND_VALUE) throw new WorldError('too_large', `world: value of ${value.length} bytes, limit ${MAX_APPEND_VALUE}`);
  }

  /**
   * The append set of component c of e, oldest first (ascending Lamport time, then value). The
   * arrays alias the replica: do not modify them.
   * @param {number} e
   * @param {number} c
   * @returns {Uint8Array[]}
   */
  values(e, c) {
    /** @type {Uint8Array[]} */
    const out = [];
    this.r.rangeEntityAppend(e, c, (/** @type {Uint8Array} */ v) => { out.push(v); });
    return out;
  }

  /**
   * Sends an application message of type (128–255) to peer to: the host, a member (relayed by
   * the host) or EVERYONE. Reliable messages arrive once and in order; unreliable ones may be lost
   * and must fit one datagram (MAX_UNRELIABLE_MESSAGE). The receiver's app gets it in
   * message(w, from, type, data).
   * @param {number} to
   * @param {number} type
   * @param {Uint8Array} data
   * @param {boolean} [reliable]
   */
  sendMessage(to, type, data, reliable = true) {
    if (!Number.isInteger(type) || type < netmsg.FIRST_APPLICATION || type > 255) throw new WorldError('bad_message_type', `world: application message types are 128–255, not ${type}`);
    const limit = reliable ? MAX_MESSAGE : MAX_UNRELIABLE_MESSAGE;
    if (data.length > limit) throw new WorldError('too_large', `world: message of ${data.length} bytes, limit ${limit}`);
    if (to === this.self) throw new WorldError('no_peer', `world: ${to} is this peer`);
    this.#attached().sendMessage(to, type, data, reliable);
  }

  /**
   * Sends a TRNP Action: a member's to the host app's action(w, from, type, data), the host's to
   * every member's. Reliable and ordered.
   * @param {number} type
   * @param {Uint8Array} data
   */
  sendAction(type, data) {
    if (data.length > MAX_ACTION) throw new WorldError('too_large', `world: action of ${data.length} bytes, limit ${MAX_ACTION}`);
    this.#attached().sendAction(type, data);
  }

  /**
   * Hands host entity e to member to (host only), as a lock until revoke, its relinquish, or its
   * silence; carried as a TRNP AuthorityTransfer. Avatars cannot be granted.
   * @param {number} e
   * @param {number} to
   */
  grant(e, to) {
    const host = this.peer && this.peer.host;
    if (!this.isHost || !host) throw new WorldError('not_host', 'world: only the host grants authority');
    if (!this.ents.has(e)) throw new WorldError('no_entity', `world: no entity ${e}`);
    host.grant(e, to);
  }

  /**
   * Gives a granted or locked entity back to the host (host only).
   * @param {number} e
   */
  revoke(e) {
    const host = this.peer && this.peer.host;
    if (!this.isHost || !host) throw new WorldError('not_host', 'world: only the host revokes authority');
    if (!this.ents.has(e)) throw new WorldError('no_entity', `world: no entity ${e}`);
    host.revoke(e);
  }

  /** The Peer running this world: a World is used through the Peer that made it. */
  #attached() {
    if (!this.peer) throw new Error('world: not attached to a peer');
    return this.peer;
  }
}

/** The lowest RPC type reserved for Concord. */
export const FIRST_SYSTEM_RPC = 0xffffff00;
/** Asks the host for a temporary lock on entity (u32 LE). */
export const RPC_LOCK_REQUEST = FIRST_SYSTEM_RPC + 1;
/** Hands a lock on entity (u32 LE) back to the host. */
export const RPC_RELINQUISH = FIRST_SYSTEM_RPC + 2;
/** Asks the host to append a value: entity u32 LE | component u32 LE | value. */
export const RPC_APPEND = FIRST_SYSTEM_RPC + 3;
