// @ts-check
// Builds a TRNP HostSnapshot from a replica and applies one into a replica, byte for byte as the
// Go package hostsnapshot (the reference; cross-checked by testdata/hostsnapshot/vectors.json).
//
// A snapshot carries the world in two parts. The spawns carry every entity with a schema: schema
// id, creation data and the values of its live properties (update data = the schema's mask, then
// the values). hostState carries everything else: the timestamp of every spawned value, the
// deleted entities, tombstones, append values, components outside any schema, the host's clock
// and term, and the schema fingerprint. A snapshot may cover only some buckets (entity number %
// bucket count). apply never replaces a replica: it merges and returns the corrections, every
// entry of the covered buckets where the receiver's replica wins.
//
// hostState (version 1, little-endian):
//   version u8 | term u64 | clock u32 | fingerprint u64 | bucketCount u16 |
//   cover [ceil(bucketCount/8)]u8 | stampCount u32 | stamps [stampCount]u32 |
//   streamLength u32 | stream (ADR-117 messages)
// stamps hold, for each spawn in order, the timestamp of its meta component and then of each
// property present in its update data, in property order.

import { ProtocolError, Type, maskWidth } from './netmsg.js';
import { MessageType as MT, readStream, compareValues } from './crdt.js';
import { COMPONENT_META, parseMeta, appendMeta } from './schema.js';

/** The hostState layout version this module writes and reads. */
export const VERSION = 1;
/** The bucket count of a default Cover. */
export const DEFAULT_BUCKETS = 256;
/** The most buckets a snapshot may declare. */
export const MAX_BUCKETS = 4096;

const FIXED = 1 + 8 + 4 + 8 + 2;

/**
 * A snapshot that cannot be applied. code is host_state (malformed hostState: drop the peer),
 * schema_mismatch (the host runs another schema table: leave with a clear error) or spawn (a
 * spawn that does not match its schema: drop the peer). offset is −1.
 */
export class SnapshotError extends ProtocolError {
  /**
   * @param {'host_state'|'schema_mismatch'|'spawn'} code
   * @param {string} detail
   */
  constructor(code, detail) {
    super(code, -1, `hostsnapshot: ${code}: ${detail}`, Type.HostSnapshot);
    this.name = 'SnapshotError';
  }
}

/**
 * The set of buckets a snapshot carries, out of a bucket count: an entity belongs to bucket
 * number % count. Immutable.
 */
export class Cover {
  /**
   * @param {number} count bucket count; ≤ 0 means DEFAULT_BUCKETS
   * @param {Uint8Array|null} some bitmap (bit b = bucket b), or null for every bucket
   */
  constructor(count = 0, some = null) {
    /** @type {number} */
    this.count = count > 0 ? count : DEFAULT_BUCKETS;
    /** @type {Uint8Array|null} */
    this.some = some;
    Object.freeze(this);
  }

  /**
   * Covers every bucket out of count (≤ 0: DEFAULT_BUCKETS).
   * @param {number} [count]
   * @returns {Cover}
   */
  static all(count = 0) {
    return new Cover(count, null);
  }

  /**
   * Covers the listed buckets out of count (≤ 0: DEFAULT_BUCKETS); others are ignored.
   * @param {number} count
   * @param {Iterable<number>} buckets
   * @returns {Cover}
   */
  static only(count, buckets = []) {
    const c = count > 0 ? count : DEFAULT_BUCKETS;
    const some = new Uint8Array(Math.ceil(c / 8));
    for (const b of buckets) {
      if (Number.isInteger(b) && b >= 0 && b < c) some[b >> 3] |= 1 << (b & 7);
    }
    return new Cover(c, some);
  }

  /**
   * Whether bucket b is covered.
   * @param {number} b
   * @returns {boolean}
   */
  has(b) {
    if (!(b >= 0 && b < this.count)) return false;
    return this.some === null || (this.some[b >> 3] & (1 << (b & 7))) !== 0;
  }

  /**
   * Whether entity number n falls in a covered bucket.
   * @param {number} n
   * @returns {boolean}
   */
  number(n) {
    return this.has(n % this.count);
  }

  /** Number of covered buckets. */
  get len() {
    if (this.some === null) return this.count;
    let n = 0;
    for (let b = 0; b < this.count; b++) if (this.has(b)) n++;
    return n;
  }

  /** Whether every bucket is covered. */
  get isAll() {
    return this.len === this.count;
  }

  /** The cover bitmap as hostState carries it. @returns {Uint8Array} */
  bitmap() {
    const out = new Uint8Array(Math.ceil(this.count / 8));
    for (let b = 0; b < this.count; b++) if (this.has(b)) out[b >> 3] |= 1 << (b & 7);
    return out;
  }
}

/** @typedef {{entity: number, component: number, timestamp: number} & import('./crdt.js').LWWEntryData} Entry */

/** A growable little-endian byte buffer. */
class Buf {
  constructor(cap = 1024) {
    this.b = new Uint8Array(cap);
    this.dv = new DataView(this.b.buffer);
    this.len = 0;
  }

  /**
   * @param {number} n
   */
  grow(n) {
    if (this.len + n <= this.b.length) return;
    const nb = new Uint8Array(Math.max(2 * this.b.length, this.len + n));
    nb.set(this.b.subarray(0, this.len));
    this.b = nb;
    this.dv = new DataView(nb.buffer);
  }

  /**
   * @param {number} v
   */
  u8(v) {
    this.grow(1);
    this.b[this.len++] = v;
  }

  /**
   * @param {number} v
   */
  u16(v) {
    this.grow(2);
    this.dv.setUint16(this.len, v, true);
    this.len += 2;
  }

  /**
   * @param {number} v
   */
  u32(v) {
    this.grow(4);
    this.dv.setUint32(this.len, v, true);
    this.len += 4;
  }

  /**
   * @param {bigint} v
   */
  u64(v) {
    this.grow(8);
    this.dv.setBigUint64(this.len, v, true);
    this.len += 8;
  }

  /**
   * @param {Uint8Array} x
   */
  bytes(x) {
    this.grow(x.length);
    this.b.set(x, this.len);
    this.len += x.length;
  }

  /**
   * Writes one ADR-117 message of type 1, 2, 3 or 4.
   * @param {number} type
   * @param {number} entity
   * @param {number} component
   * @param {number} ts
   * @param {Uint8Array | null} data
   */
  msg(type, entity, component, ts, data) {
    if (type === MT.DeleteEntity) {
      this.u32(12);
      this.u32(type);
      this.u32(entity);
      return;
    }
    const n = data ? data.length : 0;
    this.u32(type === MT.DeleteComponent ? 20 : 24 + n);
    this.u32(type);
    this.u32(entity);
    this.u32(component);
    this.u32(ts);
    if (type !== MT.DeleteComponent) {
      this.u32(n);
      if (n && data) this.bytes(data);
    }
  }

  result() {
    return this.b.slice(0, this.len);
  }
}

/**
 * @param {number} n
 */
function maskBytes(n) {
  return maskWidth(n) / 8;
}

/**
 * @param {Buf} buf
 * @param {number} n
 * @param {number} mask
 */
function writeMask(buf, n, mask) {
  const w = maskBytes(n);
  if (w === 1) buf.u8(mask & 0xff);
  else if (w === 2) buf.u16(mask & 0xffff);
  else buf.u32(mask >>> 0);
}

/**
 * @param {number} mask
 * @param {number} i
 */
function hasBit(mask, i) {
  return Math.floor(mask / 2 ** i) % 2 === 1;
}

/**
 * Calls fn(i, v) for each property value a spawn's update data carries (the schema's mask, then
 * the values; the layout of HostSnapshot and HostCommands spawns). Values alias updateData.
 * Malformed data throws a SnapshotError (spawn) having called fn for nothing.
 * @param {import('./schema.js').Schema} schema
 * @param {Uint8Array} updateData
 * @param {(i: number, v: Uint8Array) => void} fn
 */
export function spawnValues(schema, updateData, fn) {
  const n = schema.properties.length;
  const w = maskBytes(n);
  if (updateData.length < w) throw new SnapshotError('spawn', 'update data shorter than its mask');
  let mask;
  if (w === 1) mask = updateData[0];
  else if (w === 2) mask = updateData[0] | (updateData[1] << 8);
  else mask = (updateData[0] | (updateData[1] << 8) | (updateData[2] << 16) | (updateData[3] << 24)) >>> 0;
  try {
    schema.consumeValues(updateData.subarray(w), mask, fn);
  } catch (err) {
    if (err instanceof ProtocolError) throw new SnapshotError('spawn', err.message);
    throw err;
  }
}

/**
 * Returns the update data of a spawn: the mask in the schema's width, then the values it names in
 * property order. value(i) returns property i's value, already checked against the schema.
 * @param {import('./schema.js').Schema} schema
 * @param {number} mask
 * @param {(i: number) => Uint8Array} value
 * @returns {Uint8Array}
 */
export function appendSpawnUpdate(schema, mask, value) {
  const buf = new Buf(64);
  writeMask(buf, schema.properties.length, mask);
  buf.bytes(schema.encodeValues(mask, value));
  return buf.result();
}

/**
 * @param {bigint | number} v
 * @param {string} what
 * @returns {bigint}
 */
function toU64(v, what) {
  const x = typeof v === 'bigint' ? v : Number.isSafeInteger(v) && v >= 0 ? BigInt(v) : -1n;
  if (x < 0n || x > 0xffffffffffffffffn) throw new RangeError(`hostsnapshot: ${what} ${v} is not a u64`);
  return x;
}

/**
 * Builds a HostSnapshot of a replica (it does not modify the replica): the message fields
 * {type: 0, hostTime, localPeerIndex, hostPeerIndex, peers, spawns, hostState}, ready for
 * netmsg.encode, byte-identical to what Go's Build produces. A cover of more than MAX_BUCKETS
 * buckets is widened to every bucket.
 * @param {import('./crdt.js').Replica} replica
 * @param {import('./schema.js').SchemaTable} table
 * @param {{term?: bigint|number, localPeerIndex?: bigint|number, hostPeerIndex?: bigint|number,
 *   peers?: {peerIndex: bigint, peerId: string}[], cover?: Cover}} [opts]
 * @returns {{type: number, hostTime: bigint, localPeerIndex: bigint, hostPeerIndex: bigint,
 *   peers: object[], spawns: object[], hostState: Uint8Array}}
 */
export function build(replica, table, opts = {}) {
  let cover = opts.cover ?? Cover.all();
  if (cover.count > MAX_BUCKETS) cover = Cover.all();
  const stream = new Buf(1024);
  /** @type {{networkId: bigint, schemaId: number, creationData: Uint8Array, updateData: Uint8Array}[]} */
  const spawns = [];
  /** @type {number[]} */
  const stamps = [];

  replica.rangeDeleted((number, version) => {
    if (cover.number(number)) stream.msg(MT.DeleteEntity, version * 65536 + number, 0, 0, null);
  });

  /** @param {Entry} en */
  const streamEntry = (en) => {
    if (en.deleted) stream.msg(MT.DeleteComponent, en.entity, en.component, en.timestamp, null);
    else stream.msg(MT.PutComponent, en.entity, en.component, en.timestamp, en.data);
  };

  // flush turns the entries of one entity into a spawn plus stream messages.
  /** @param {Entry[]} entries */
  const flush = (entries) => {
    if (entries.length === 0 || !cover.number(entries[0].entity & 0xffff)) return;
    let s;
    let metaTs = 0;
    /** @type {Uint8Array} */
    let creation = new Uint8Array(0);
    for (const en of entries) {
      if (en.component === COMPONENT_META && !en.deleted) {
        const pm = parseMeta(en.data);
        if (pm) {
          s = table.lookup(pm.id);
          metaTs = en.timestamp;
          creation = pm.creation;
        }
      }
    }
    if (!s) {
      for (const en of entries) streamEntry(en);
      return;
    }
    let mask = 0;
    /** @type {{timestamp: number, data: Uint8Array}[]} */
    const vals = [];
    for (const en of entries) {
      if (en.component === COMPONENT_META) continue;
      const i = s.index(en.component);
      if (i < 0 || en.deleted || !s.isValidValue(i, en.data)) {
        streamEntry(en);
        continue;
      }
      mask += 2 ** i;
      vals[i] = en;
    }
    const update = new Buf(64);
    writeMask(update, s.properties.length, mask);
    stamps.push(metaTs);
    for (let i = 0; i < s.properties.length; i++) {
      if (!hasBit(mask, i)) continue;
      const v = vals[i].data;
      if (s.prefixed(i)) update.u16(v.length);
      update.bytes(v);
      stamps.push(vals[i].timestamp);
    }
    spawns.push({
      networkId: BigInt(entries[0].entity),
      schemaId: s.id,
      creationData: creation.slice(),
      updateData: update.result(),
    });
  };

  /** @type {Entry[]} */
  let entries = [];
  replica.range((en) => {
    if (entries.length > 0 && entries[0].entity !== en.entity) {
      flush(entries);
      entries = [];
    }
    entries.push(en);
  });
  flush(entries);

  replica.rangeAppend((a) => {
    if (cover.number(a.entity & 0xffff)) stream.msg(MT.AppendValue, a.entity, a.component, a.timestamp, a.data);
  });

  const h = new Buf(FIXED + 16 + 4 * stamps.length + stream.len);
  h.u8(VERSION);
  h.u64(toU64(opts.term ?? 0n, 'term'));
  h.u32(replica.clock);
  h.u64(table.fingerprint);
  h.u16(cover.count);
  h.bytes(cover.bitmap());
  h.u32(stamps.length);
  for (const ts of stamps) h.u32(ts);
  h.u32(stream.len);
  h.bytes(stream.b.subarray(0, stream.len));

  return {
    type: Type.HostSnapshot,
    hostTime: BigInt(replica.clock),
    localPeerIndex: toU64(opts.localPeerIndex ?? 0n, 'localPeerIndex'),
    hostPeerIndex: toU64(opts.hostPeerIndex ?? 0n, 'hostPeerIndex'),
    peers: (opts.peers ?? []).map((p) => ({ peerIndex: p.peerIndex, peerId: p.peerId })),
    spawns,
    hostState: h.result(),
  };
}

/**
 * What a snapshot carries, read without merging it (Go's hostsnapshot.Inspect): the clock it
 * claims, the highest stamp of any value in it, its values (spawned values and stream messages)
 * and bytes (host state, spawn data, peer ids). Throws a SnapshotError (host_state) where apply
 * would on the host state, and the stream's error on a malformed stream.
 * @param {{spawns: {creationData: Uint8Array, updateData: Uint8Array}[], peers?: {peerId: string}[], hostState: Uint8Array}} snapshot
 * @returns {{clock: number, maxStamp: number, values: number, bytes: number}}
 */
export function inspect(snapshot) {
  const h = readHostState(snapshot.hostState);
  let maxStamp = 0;
  for (const ts of h.stamps) maxStamp = Math.max(maxStamp, ts);
  let bytes = snapshot.hostState.length;
  for (const sp of snapshot.spawns) bytes += sp.creationData.length + sp.updateData.length;
  for (const pi of snapshot.peers ?? []) bytes += new TextEncoder().encode(pi.peerId).length;
  let values = h.stamps.length;
  for (const m of readStream(h.stream)) {
    values++;
    maxStamp = Math.max(maxStamp, m.timestamp || 0);
  }
  return { clock: h.clock, maxStamp, values, bytes };
}

/**
 * Parses a hostState blob: {version, term, clock, fingerprint, cover, stamps, stream}; stamps is
 * a Uint32Array copy, stream aliases hostState. Throws a SnapshotError (host_state) when it is
 * malformed. (The stream itself is checked by apply.)
 * @param {Uint8Array} hostState
 * @returns {{version: number, term: bigint, clock: number, fingerprint: bigint, cover: Cover, stamps: Uint32Array, stream: Uint8Array}}
 */
export function readHostState(hostState) {
  const b = hostState;
  if (b.length < FIXED) throw new SnapshotError('host_state', `${b.length} bytes`);
  if (b[0] !== VERSION) throw new SnapshotError('host_state', `version ${b[0]}, want ${VERSION}`);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const term = dv.getBigUint64(1, true);
  const clock = dv.getUint32(9, true);
  const fingerprint = dv.getBigUint64(13, true);
  const count = dv.getUint16(21, true);
  if (count < 1 || count > MAX_BUCKETS) throw new SnapshotError('host_state', `bucket count ${count}`);
  let o = FIXED;
  const nb = Math.ceil(count / 8);
  if (b.length - o < nb + 4) throw new SnapshotError('host_state', 'cover truncated');
  const cover = new Cover(count, b.slice(o, o + nb));
  o += nb;
  const ns = dv.getUint32(o, true);
  o += 4;
  if (ns * 4 + 4 > b.length - o) throw new SnapshotError('host_state', `${ns} stamps in ${b.length - o} bytes`);
  const stamps = new Uint32Array(ns);
  for (let i = 0; i < ns; i++) stamps[i] = dv.getUint32(o + 4 * i, true);
  o += 4 * ns;
  const nm = dv.getUint32(o, true);
  o += 4;
  if (nm !== b.length - o) throw new SnapshotError('host_state', `stream length ${nm}, ${b.length - o} bytes left`);
  return { version: b[0], term, clock, fingerprint, cover, stamps, stream: b.subarray(o) };
}

/**
 * @param {import('./schema.js').SchemaTable} table
 * @param {{networkId: bigint, schemaId: number}} sp
 */
function spawnSchema(table, sp) {
  if (sp.networkId >> 32n !== 0n) throw new SnapshotError('spawn', `network id ${sp.networkId} has upper 32 bits set`);
  const s = table.lookup(sp.schemaId);
  if (!s) throw new SnapshotError('spawn', `entity ${sp.networkId}: unknown schema ${sp.schemaId}`);
  return s;
}

/**
 * @param {Uint8Array} b
 */
function hexOf(b) {
  let s = '';
  for (let i = 0; i < b.length; i++) s += (b[i] < 16 ? '0' : '') + b[i].toString(16);
  return s;
}

/**
 * Merges a decoded HostSnapshot (netmsg fields) into a replica through merge (default
 * replica.merge; a caller may pass one that also keeps indexes of its own), raises the replica's
 * clock to the host's, and returns what the snapshot said and the corrections: every entry of the
 * covered buckets where the replica wins over the snapshot, as an ADR-117 stream (the bytes
 * Go's Apply appends). The whole snapshot is validated before anything is merged: a SnapshotError
 * (host_state, schema_mismatch or spawn) means nothing was merged.
 * @param {import('./crdt.js').Replica} replica
 * @param {import('./schema.js').SchemaTable} table
 * @param {{spawns: {networkId: bigint, schemaId: number, creationData: Uint8Array, updateData: Uint8Array}[], hostState: Uint8Array}} snapshot
 * @param {(m: import('./crdt.js').Message) => string} [merge]
 * @returns {{info: {term: bigint, clock: number, fingerprint: bigint, cover: Cover, spawns: number}, corrections: Uint8Array}}
 */
export function apply(replica, table, snapshot, merge = (m) => replica.merge(m)) {
  const h = readHostState(snapshot.hostState);
  if (h.fingerprint !== table.fingerprint) {
    throw new SnapshotError('schema_mismatch', `host ${h.fingerprint.toString(16)}, ours ${table.fingerprint.toString(16)}`);
  }
  const spawns = snapshot.spawns ?? [];
  const info = { term: h.term, clock: h.clock, fingerprint: h.fingerprint, cover: h.cover, spawns: spawns.length };

  // Validate: every spawn parses against its schema, stamps add up, the stream is well formed.
  let need = 0;
  for (const sp of spawns) {
    const s = spawnSchema(table, sp);
    let n = 0;
    spawnValues(s, sp.updateData, () => n++);
    need += 1 + n;
  }
  if (need !== h.stamps.length) throw new SnapshotError('host_state', `${h.stamps.length} stamps for ${need} values`);
  let streamMsgs;
  try {
    streamMsgs = [...readStream(h.stream)];
  } catch (err) {
    if (err instanceof ProtocolError) throw new SnapshotError('host_state', err.message);
    throw err;
  }

  // What the snapshot carried, to find afterwards where the replica differs. The stream is
  // merged last, so its record of a key wins over a spawn's.
  const spawned = new Map();
  const streamed = new Map();
  const seenDeleted = new Map();
  const seenAppend = new Set();
  /**
   * @param {import('./crdt.js').Message} m
   * @param {Map<string, {ts: number, data: Uint8Array | null}>} recs
   */
  const put = (m, recs) => {
    merge(m);
    const k = `${m.entity}:${m.component}`;
    switch (m.type) {
      case MT.PutComponent:
      case MT.PutComponentNetwork:
        recs.set(k, { ts: m.timestamp, data: m.data ?? new Uint8Array(0) });
        break;
      case MT.DeleteComponent:
      case MT.DeleteComponentNetwork:
        recs.set(k, { ts: m.timestamp, data: null });
        break;
      case MT.DeleteEntity:
      case MT.DeleteEntityNetwork: {
        const n = m.entity & 0xffff;
        const v = m.entity >>> 16;
        const seen = seenDeleted.get(n);
        if (seen === undefined || seen < v) seenDeleted.set(n, v);
        break;
      }
      case MT.AppendValue:
        seenAppend.add(`${m.entity}:${m.component}:${m.timestamp}:${hexOf(m.data ?? new Uint8Array(0))}`);
        break;
      default:
        break;
    }
  };

  let si = 0;
  for (const sp of spawns) {
    const s = spawnSchema(table, sp); // validated above: does not throw
    const e = Number(sp.networkId);
    put({ type: MT.PutComponent, entity: e, component: COMPONENT_META, timestamp: h.stamps[si++], networkId: 0, data: appendMeta(null, s.id, sp.creationData) }, spawned);
    spawnValues(s, sp.updateData, (i, v) => {
      put({ type: MT.PutComponent, entity: e, component: s.properties[i].component, timestamp: h.stamps[si++], networkId: 0, data: v }, spawned);
    });
  }
  for (const m of streamMsgs) put(m, streamed);
  replica.observeClock(h.clock);

  const cover = h.cover;
  const out = new Buf(256);
  replica.rangeDeleted((number, version) => {
    if (!cover.number(number)) return;
    const seen = seenDeleted.get(number);
    if (seen === undefined || seen < version) out.msg(MT.DeleteEntity, version * 65536 + number, 0, 0, null);
  });
  replica.range((en) => {
    if (!cover.number(en.entity & 0xffff)) return;
    const k = `${en.entity}:${en.component}`;
    const sv = streamed.get(k) ?? spawned.get(k);
    if (sv !== undefined && sv.ts === en.timestamp && compareValues(sv.data, en.data) === 0) return;
    if (en.deleted) out.msg(MT.DeleteComponent, en.entity, en.component, en.timestamp, null);
    else out.msg(MT.PutComponent, en.entity, en.component, en.timestamp, en.data);
  });
  replica.rangeAppend((a) => {
    if (!cover.number(a.entity & 0xffff)) return;
    if (!seenAppend.has(`${a.entity}:${a.component}:${a.timestamp}:${hexOf(a.data)}`)) {
      out.msg(MT.AppendValue, a.entity, a.component, a.timestamp, a.data);
    }
  });
  return { info, corrections: out.result() };
}
