// @ts-check
// Concord's ADR-117 replica, exactly as the Go package crdt (the reference): the @dcl/ecs 7.x
// wire codec, the merge rules that converge in every delivery order, the Lamport clock, and the
// canonical export, hash and bucket digests (equal to Go's). docs/protocol.md §3 is the
// specification.
//
// Entities, component ids and timestamps are numbers (u32). An entity is version << 16 | number.
// A message is {type, entity, component, timestamp, networkId, data}: data is a Uint8Array for
// PUT/APPEND (and the body of an unknown type), null for the others. Decoded data aliases the
// input; the replica copies what it stores. Decoders throw only ProtocolError (code truncated,
// bad_length or too_large; offset = start of the malformed message).

import { ProtocolError } from './netmsg.js';
import { elementHashAdd, u64Add, u64Array, u64IsZero, u64Sub, u64Value } from './fnv.js';

/**
 * One ADR-117 message (see the file comment). networkId is set only for the network variants.
 * @typedef {object} Message
 * @property {number} type a MessageType (or an unknown type, kept as it is)
 * @property {number} entity
 * @property {number} component
 * @property {number} timestamp
 * @property {number} [networkId]
 * @property {Uint8Array | null} data
 */

/**
 * The data of a last-writer-wins entry: a value, or a tombstone (data null).
 * @typedef {{deleted: false, data: Uint8Array} | {deleted: true, data: null}} LWWEntryData
 */

/**
 * A last-writer-wins entry as Replica.get returns it.
 * @typedef {{ts: number} & LWWEntryData} LWWEntry
 */

/** ADR-117 message types as @dcl/ecs 7.x numbers them. */
export const MessageType = Object.freeze({
  PutComponent: 1,
  DeleteComponent: 2,
  DeleteEntity: 3,
  AppendValue: 4,
  PutComponentNetwork: 5,
  DeleteComponentNetwork: 6,
  DeleteEntityNetwork: 7,
});

/** Merge outcomes, as Replica.merge returns them. */
export const Outcome = Object.freeze({
  Applied: 'applied',
  NoChange: 'nochange',
  Outdated: 'outdated',
  Ignored: 'ignored',
  Invalid: 'invalid',
});

/** Size of the length|type header of every message. */
export const HEADER_SIZE = 8;
/** Default cap of a message's length field (16 MiB). */
export const DEFAULT_MAX_MESSAGE_SIZE = 16 << 20;
/** Default number of values an append set keeps. */
export const DEFAULT_APPEND_RETENTION = 128;

const T = MessageType;
const PUT_HEADER = 24;
const PUT_NET_HEADER = 28;
const LEGACY_DEN_LENGTH = 12;
const MAX_U32 = 0xffffffff;
const EMPTY = new Uint8Array(0);
/** A hash scratch buffer larger than this is dropped after use rather than kept (as Go's). */
const SHRINK_THRESHOLD = 64 << 10;
/** Pages of per-number sums: 256 pages of 256 numbers, each a (high, low) pair. */
const SUM_PAGES = 256;

/**
 * Composes an entity id from its number and version.
 * @param {number} number u16
 * @param {number} version u16
 * @returns {number}
 */
export function entityOf(number, version) {
  return ((version & 0xffff) * 65536 + (number & 0xffff));
}

/**
 * The entity number (low 16 bits).
 * @param {number} e
 * @returns {number}
 */
export function entityNumber(e) {
  return e & 0xffff;
}

/**
 * The entity version (high 16 bits).
 * @param {number} e
 * @returns {number}
 */
export function entityVersion(e) {
  return e >>> 16;
}

/**
 * Reports whether t is one of the seven ADR-117 message types.
 * @param {number} t
 * @returns {boolean}
 */
export function isKnownMessageType(t) {
  return t >= 1 && t <= 7;
}

/**
 * Returns the number of bytes encodeMessage writes for m.
 * @param {{type: number, data?: Uint8Array|null}} m
 * @returns {number}
 */
export function messageSize(m) {
  const n = m.data ? m.data.length : 0;
  switch (m.type) {
    case T.PutComponent:
    case T.AppendValue:
      return PUT_HEADER + n;
    case T.PutComponentNetwork:
      return PUT_NET_HEADER + n;
    case T.DeleteComponent:
      return 20;
    case T.DeleteComponentNetwork:
      return 24;
    case T.DeleteEntity:
      return 12;
    case T.DeleteEntityNetwork:
      return 16;
    default:
      return HEADER_SIZE + n;
  }
}

/**
 * @param {number} v
 * @param {string} what
 * @returns {number}
 */
function checkU32(v, what) {
  if (!Number.isInteger(v) || v < 0 || v > MAX_U32) throw new RangeError(`crdt: ${what} ${v} is not a u32`);
  return v;
}

/** A growable little-endian byte buffer for messages. */
class Buf {
  constructor(cap = 256) {
    this.b = new Uint8Array(cap);
    this.dv = new DataView(this.b.buffer);
    this.len = 0;
  }

  /**
   * @param {number} n
   */
  grow(n) {
    if (this.len + n <= this.b.length) return;
    const nb = new Uint8Array(Math.max(this.b.length * 2, this.len + n));
    nb.set(this.b.subarray(0, this.len));
    this.b = nb;
    this.dv = new DataView(nb.buffer);
  }

  /**
   * Writes one message; the fields are trusted u32 values (checked by the callers).
   * @param {number} type
   * @param {number} entity
   * @param {number} component
   * @param {number} ts
   * @param {number} networkId
   * @param {Uint8Array | null} data
   */
  msg(type, entity, component, ts, networkId, data) {
    const n = data ? data.length : 0;
    let size;
    switch (type) {
      case T.PutComponent:
      case T.AppendValue:
        size = PUT_HEADER + n;
        break;
      case T.PutComponentNetwork:
        size = PUT_NET_HEADER + n;
        break;
      case T.DeleteComponent:
        size = 20;
        break;
      case T.DeleteComponentNetwork:
        size = 24;
        break;
      case T.DeleteEntity:
        size = 12;
        break;
      case T.DeleteEntityNetwork:
        size = 16;
        break;
      default:
        size = HEADER_SIZE + n;
    }
    this.grow(size);
    const dv = this.dv;
    let o = this.len;
    dv.setUint32(o, size, true);
    dv.setUint32(o + 4, type, true);
    o += 8;
    switch (type) {
      case T.PutComponent:
      case T.AppendValue:
      case T.PutComponentNetwork:
        dv.setUint32(o, entity, true);
        dv.setUint32(o + 4, component, true);
        dv.setUint32(o + 8, ts, true);
        o += 12;
        if (type === T.PutComponentNetwork) {
          dv.setUint32(o, networkId, true);
          o += 4;
        }
        dv.setUint32(o, n, true);
        o += 4;
        if (n && data) this.b.set(data, o);
        break;
      case T.DeleteComponent:
      case T.DeleteComponentNetwork:
        dv.setUint32(o, entity, true);
        dv.setUint32(o + 4, component, true);
        dv.setUint32(o + 8, ts, true);
        if (type === T.DeleteComponentNetwork) dv.setUint32(o + 12, networkId, true);
        break;
      case T.DeleteEntity:
        dv.setUint32(o, entity, true);
        break;
      case T.DeleteEntityNetwork:
        dv.setUint32(o, entity, true);
        dv.setUint32(o + 4, networkId, true);
        break;
      default:
        if (n && data) this.b.set(data, o);
    }
    this.len += size;
  }

  result() {
    return this.b.slice(0, this.len);
  }
}

/**
 * Encodes m as @dcl/ecs writes it. Only the fields of m.type are written; DELETE_ENTITY_NETWORK
 * always with length 16; an unknown type as the header followed by m.data (the inverse of what
 * decodeMessage returns for it). Throws RangeError for a field that is not a u32.
 * @param {{type: number, entity?: number, component?: number, timestamp?: number, networkId?: number, data?: Uint8Array|null}} m
 * @returns {Uint8Array}
 */
export function encodeMessage(m) {
  const data = m.data ?? null;
  if (data !== null && !(data instanceof Uint8Array)) throw new TypeError('crdt: data must be a Uint8Array');
  const b = new Buf(messageSize(m));
  b.msg(
    checkU32(m.type, 'type'),
    checkU32(m.entity ?? 0, 'entity'),
    checkU32(m.component ?? 0, 'component'),
    checkU32(m.timestamp ?? 0, 'timestamp'),
    checkU32(m.networkId ?? 0, 'networkId'),
    data,
  );
  return b.b.subarray(0, b.len);
}

/**
 * @param {string} code
 * @param {number} offset
 * @param {string} detail
 */
function streamError(code, offset, detail) {
  return new ProtocolError(code, offset, `crdt: malformed message at offset ${offset}: ${code}: ${detail}`);
}

const TYPE_NAMES = ['', 'PUT_COMPONENT', 'DELETE_COMPONENT', 'DELETE_ENTITY', 'APPEND_VALUE', 'PUT_COMPONENT_NETWORK', 'DELETE_COMPONENT_NETWORK', 'DELETE_ENTITY_NETWORK'];

/**
 * @param {number} t
 */
function typeName(t) {
  return TYPE_NAMES[t] || `MessageType(${t})`;
}

/**
 * Decodes the message at b[off]; dv views b. Returns {m, n}.
 * @param {Uint8Array} b
 * @param {DataView} dv
 * @param {number} off
 * @param {number} limit
 */
function decodeAt(b, dv, off, limit) {
  const left = b.length - off;
  if (left < HEADER_SIZE) throw streamError('truncated', off, `${left} of ${HEADER_SIZE} header bytes`);
  const length = dv.getUint32(off, true);
  const type = dv.getUint32(off + 4, true);
  if (length > limit) throw streamError('too_large', off, `length ${length} exceeds ${limit}`);
  if (length < HEADER_SIZE) throw streamError('bad_length', off, `length ${length} below the header size`);
  let size = length;
  if (type === T.DeleteEntityNetwork && length === LEGACY_DEN_LENGTH) size = 16;
  if (size > left) throw streamError('truncated', off, `${typeName(type)} needs ${size} bytes, ${left} remain`);
  let m;
  switch (type) {
    case T.PutComponent:
    case T.AppendValue:
    case T.PutComponentNetwork: {
      const hdr = type === T.PutComponentNetwork ? PUT_NET_HEADER : PUT_HEADER;
      if (size < hdr) throw streamError('bad_length', off, `${typeName(type)} length ${size} below ${hdr}`);
      const dataLen = dv.getUint32(off + hdr - 4, true);
      if (dataLen !== size - hdr) {
        if (hdr + dataLen > left) throw streamError('truncated', off, `${typeName(type)} dataLen ${dataLen} past the end`);
        throw streamError('bad_length', off, `${typeName(type)} length ${size} with dataLen ${dataLen}`);
      }
      m = {
        type,
        entity: dv.getUint32(off + 8, true),
        component: dv.getUint32(off + 12, true),
        timestamp: dv.getUint32(off + 16, true),
        networkId: type === T.PutComponentNetwork ? dv.getUint32(off + 20, true) : 0,
        data: b.subarray(off + hdr, off + size),
      };
      break;
    }
    case T.DeleteComponent:
    case T.DeleteComponentNetwork: {
      const want = type === T.DeleteComponentNetwork ? 24 : 20;
      if (size !== want) throw streamError('bad_length', off, `${typeName(type)} length ${size}, want ${want}`);
      m = {
        type,
        entity: dv.getUint32(off + 8, true),
        component: dv.getUint32(off + 12, true),
        timestamp: dv.getUint32(off + 16, true),
        networkId: type === T.DeleteComponentNetwork ? dv.getUint32(off + 20, true) : 0,
        data: null,
      };
      break;
    }
    case T.DeleteEntity:
    case T.DeleteEntityNetwork: {
      const want = type === T.DeleteEntityNetwork ? 16 : 12;
      if (size !== want) throw streamError('bad_length', off, `${typeName(type)} length ${size}, want ${want}`);
      m = {
        type,
        entity: dv.getUint32(off + 8, true),
        component: 0,
        timestamp: 0,
        networkId: type === T.DeleteEntityNetwork ? dv.getUint32(off + 12, true) : 0,
        data: null,
      };
      break;
    }
    default:
      m = { type, entity: 0, component: 0, timestamp: 0, networkId: 0, data: b.subarray(off + HEADER_SIZE, off + size) };
  }
  return { m, n: size };
}

/**
 * @param {Uint8Array} bytes
 */
function viewOf(bytes) {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('crdt: input must be a Uint8Array');
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Decodes the message at bytes[offset] with the checks of Go's ConsumeMessage: at least 8 header
 * bytes, length ≤ maxMessageSize, length ≥ 8, the message fits, and the length matches the type
 * (a legacy DELETE_ENTITY_NETWORK of length 12 is read as its 16 bytes). An unknown type is
 * returned with its body in data, so that a caller can skip it. Returns the message and its size.
 * @param {Uint8Array} bytes
 * @param {number} [offset]
 * @param {number} [maxMessageSize]
 * @returns {{m: object, n: number}}
 */
export function decodeMessage(bytes, offset = 0, maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE) {
  return decodeAt(bytes, viewOf(bytes), offset, maxMessageSize > 0 ? maxMessageSize : DEFAULT_MAX_MESSAGE_SIZE);
}

/**
 * Yields every known message of a stream of concatenated messages, skipping unknown types. A
 * malformed message throws a ProtocolError at its offset; messages before it were yielded. Every
 * step consumes at least 8 bytes, so the walk always ends.
 * @param {Uint8Array} bytes
 * @param {{maxMessageSize?: number, onUnknown?: (m: Message, offset: number) => void}} [opts]
 * @returns {Generator<Message>}
 */
export function* readStream(bytes, opts = {}) {
  const dv = viewOf(bytes);
  const limit = positiveOr(opts.maxMessageSize, DEFAULT_MAX_MESSAGE_SIZE);
  for (let off = 0; off < bytes.length;) {
    const { m, n } = decodeAt(bytes, dv, off, limit);
    const at = off;
    off += n;
    if (isKnownMessageType(m.type)) yield m;
    else if (opts.onUnknown) opts.onUnknown(m, at);
  }
}

/**
 * Compares two values under the LWW tie-break: null (a tombstone) is less than any bytes, then
 * the longer is greater, then unsigned bytes left to right.
 * @param {Uint8Array|null} a
 * @param {Uint8Array|null} b
 * @returns {number} −1, 0 or 1
 */
export function compareValues(a, b) {
  if (a === null || b === null) {
    if (a === b) return 0;
    return a === null ? -1 : 1;
  }
  if (a.length !== b.length) return a.length > b.length ? 1 : -1;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return a[i] > b[i] ? 1 : -1;
  }
  return 0;
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
 * Orders append values by (timestamp, then value as the LWW tie-break orders bytes).
 * @param {number} ats
 * @param {Uint8Array} a
 * @param {number} bts
 * @param {Uint8Array} b
 */
function lessVal(ats, a, bts, b) {
  if (ats !== bts) return ats < bts;
  return compareValues(a, b) < 0;
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
 * The live entity of one entity number: at most one version of a number holds entries.
 * lww maps component → {ts, data} (data null for a tombstone); app maps component → sorted
 * [{ts, data}]. The sorted component lists are caches, dropped when the key set changes.
 */
class NumRec {
  /**
   * @param {number} number
   * @param {number} version
   */
  constructor(number, version) {
    this.number = number;
    this.version = version;
    this.entity = version * 65536 + number;
    /** @type {Map<number, {ts: number, data: Uint8Array|null}>} */
    this.lww = new Map();
    /** @type {Map<number, {ts: number, data: Uint8Array}[]>} */
    this.app = new Map();
    /** @type {number[]|null} */
    this.lwwOrder = null;
    /** @type {number[]|null} */
    this.appOrder = null;
  }

  sortedLWW() {
    if (this.lwwOrder === null) this.lwwOrder = [...this.lww.keys()].sort((a, b) => a - b);
    return this.lwwOrder;
  }

  sortedApp() {
    if (this.appOrder === null) this.appOrder = [...this.app.keys()].sort((a, b) => a - b);
    return this.appOrder;
  }
}

/**
 * The encoded size of an LWW entry's message: PUT_COMPONENT, or DELETE_COMPONENT for a tombstone.
 * @param {Uint8Array | null} data
 */
function lwwBytes(data) {
  return data === null ? 20 : PUT_HEADER + data.length;
}

/**
 * The encoded size of a live entity's messages (its LWW entries and append values).
 * @param {NumRec} rec
 */
function recBytes(rec) {
  let n = 0;
  for (const s of rec.lww.values()) n += lwwBytes(s.data);
  for (const set of rec.app.values()) for (const v of set) n += PUT_HEADER + v.data.length;
  return n;
}

// Scratch pairs of the hash refresh (one replica refreshes at a time: JS runs one task at once).
const SUM = new Uint32Array(2);
const DELTA = new Uint32Array(2);

/**
 * The value v if it is a number above 0, else def (an option's zero value means its default).
 * @param {number | undefined} v
 * @param {number} def
 * @returns {number}
 */
function positiveOr(v, def) {
  return v !== undefined && v > 0 ? v : def;
}

/**
 * map.get(k) for a key taken from the map's own keys (a sorted key list), so always present.
 * @template K, V
 * @param {Map<K, V>} map
 * @param {K} k
 * @returns {V}
 */
function present(map, k) {
  const v = map.get(k);
  if (v === undefined) throw new Error('crdt: a listed key is missing from its map');
  return v;
}

/**
 * @param {Uint8Array | null | undefined} d
 * @returns {Uint8Array}
 */
function dataOf(d) {
  if (d === null || d === undefined) return EMPTY;
  if (!(d instanceof Uint8Array)) throw new TypeError('crdt: data must be a Uint8Array');
  return d;
}

/**
 * One ADR-117 replica: the LWW map, the deleted-entity set, the append sets and a Lamport clock,
 * with Go's merge rules (see docs/protocol.md §3). Not shared between tasks: one owner.
 */
export class Replica {
  #retention;
  #maxMessageSize;
  #clock = 0;
  /** @type {Map<number, NumRec>} entity number → live entity */
  #nums;
  /** @type {Map<number, number>} entity number → highest deleted version */
  #deleted;
  /** @type {NumRec[]|null} cached canonical order of #nums */
  #numOrder;
  /** @type {number[]|null} cached ascending keys of #deleted */
  #delOrder;
  #lwwCount;
  // The state's size as a canonical message stream (bytes), kept as it changes.
  #bytes = 0;
  // The set hash, kept incrementally as Go's crdt/digest.go keeps it: pair n & 0xff of page
  // #sums[n >> 8] is the sum of the element hashes of entity number n's canonical messages (a page
  // is created when one of its numbers first has a non-zero sum), #total the sum of them all. A state change marks its
  // number in #dirtyBits/#dirtyList; hash() and bucketDigests() recompute only those numbers.
  /** @type {(Uint32Array|undefined)[]} */
  #sums = new Array(SUM_PAGES);
  #total = new Uint32Array(2);
  /** @type {Uint32Array|null} one bit per entity number, allocated at the first change */
  #dirtyBits = null;
  /** @type {number[]} the numbers whose bit is set, each once */
  #dirtyList = [];
  /** @type {{buckets: number, sums: Uint32Array}|null} the digests of the last bucket count asked for, kept current */
  #bucketSums = null;
  /** @type {Buf|null} message scratch for the element hashes */
  #scratch = null;

  /**
   * @param {{appendRetention?: number, maxMessageSize?: number}} [cfg] appendRetention: values
   *   kept per append set (default 128); maxMessageSize: cap of each message mergeStream decodes
   *   (default 16 MiB)
   */
  constructor(cfg = {}) {
    this.#retention = positiveOr(cfg.appendRetention, DEFAULT_APPEND_RETENTION);
    this.#maxMessageSize = positiveOr(cfg.maxMessageSize, DEFAULT_MAX_MESSAGE_SIZE);
    this.#nums = new Map();
    this.#deleted = new Map();
    this.#numOrder = null;
    this.#delOrder = null;
    this.#lwwCount = 0;
  }

  /** The Lamport clock: the highest timestamp written or observed (u32). */
  get clock() {
    return this.#clock;
  }

  /**
   * Raises the clock to ts if it is lower (a new host raises it above every survivor's).
   * @param {number} ts
   */
  observeClock(ts) {
    if (ts > this.#clock) this.#clock = Math.min(ts, MAX_U32);
  }

  /** Advances the clock for a local write, saturating at 2³² − 1. */
  #tick() {
    if (this.#clock < MAX_U32) this.#clock++;
    return this.#clock;
  }

  /**
   * The highest deleted version of number n plus one, or 0.
   * @param {number} n
   */
  #deletedStored(n) {
    const v = this.#deleted.get(n);
    return v === undefined ? 0 : v + 1;
  }

  /**
   * Whether a message for e is live; applies the implicit deletion of lower versions.
   * @param {number} e
   */
  #admit(e) {
    const n = e & 0xffff;
    const v = e >>> 16;
    const stored = this.#deletedStored(n);
    if (stored > v) return false;
    if (v > 0 && stored < v) this.#raiseDeleted(n, v - 1);
    return true;
  }

  /**
   * Records version ver of number n as deleted and removes every entry of versions ≤ ver.
   * @param {number} n
   * @param {number} ver
   */
  #raiseDeleted(n, ver) {
    this.#changed(n);
    if (!this.#deleted.has(n)) {
      this.#delOrder = null;
      this.#bytes += 12;
    }
    this.#deleted.set(n, ver);
    const rec = this.#nums.get(n);
    if (rec === undefined || rec.version > ver) return;
    this.#bytes -= recBytes(rec);
    this.#lwwCount -= rec.lww.size;
    this.#nums.delete(n);
    this.#numOrder = null;
  }

  /**
   * Drops everything the replica holds of entity number n — its live version and its deleted
   * version — as if it had never heard of it (Go's Replica.Forget): nothing is left to merge or
   * to spread. A member forgets the numbers that leave its interest. Reports whether anything was
   * dropped.
   * @param {number} n
   * @returns {boolean}
   */
  forget(n) {
    let dropped = false;
    if (this.#deleted.delete(n)) {
      this.#delOrder = null;
      this.#bytes -= 12;
      dropped = true;
    }
    const rec = this.#nums.get(n);
    if (rec !== undefined) {
      this.#bytes -= recBytes(rec);
      this.#lwwCount -= rec.lww.size;
      this.#nums.delete(n);
      this.#numOrder = null;
      dropped = true;
    }
    if (dropped) this.#changed(n);
    return dropped;
  }

  /**
   * Returns the record of e, creating it (e was admitted, so no other version is live).
   * @param {number} e
   */
  #recFor(e) {
    const n = e & 0xffff;
    let rec = this.#nums.get(n);
    if (rec === undefined) {
      rec = new NumRec(n, e >>> 16);
      this.#nums.set(n, rec);
      this.#numOrder = null;
    }
    return rec;
  }

  /**
   * @param {number} e
   */
  #mergeDeleteEntity(e) {
    const n = e & 0xffff;
    const v = e >>> 16;
    if (this.#deletedStored(n) > v) return Outcome.NoChange;
    this.#raiseDeleted(n, v);
    return Outcome.Applied;
  }

  /**
   * data is null for a tombstone.
   * @param {number} e
   * @param {number} c
   * @param {number} ts
   * @param {Uint8Array | null} data
   */
  #mergeLWW(e, c, ts, data) {
    if (!this.#admit(e)) return Outcome.Ignored;
    const rec = this.#recFor(e);
    const s = rec.lww.get(c);
    if (s === undefined) {
      rec.lww.set(c, { ts, data: data === null ? null : data.slice() });
      rec.lwwOrder = null;
      this.#lwwCount++;
      this.#bytes += lwwBytes(data);
      this.#changed(e & 0xffff);
      return Outcome.Applied;
    }
    if (ts < s.ts) return Outcome.Outdated;
    if (ts === s.ts) {
      const cmp = compareValues(s.data, data);
      if (cmp === 0) return Outcome.NoChange;
      if (cmp > 0) return Outcome.Outdated;
    }
    s.ts = ts;
    this.#bytes += lwwBytes(data) - lwwBytes(s.data);
    s.data = data === null ? null : data.slice();
    this.#changed(e & 0xffff);
    return Outcome.Applied;
  }

  /**
   * @param {number} e
   * @param {number} c
   * @param {number} ts
   * @param {Uint8Array} data
   */
  #mergeAppend(e, c, ts, data) {
    if (!this.#admit(e)) return Outcome.Ignored;
    const rec = this.#recFor(e);
    let set = rec.app.get(c);
    if (set === undefined) {
      set = [];
      rec.app.set(c, set);
      rec.appOrder = null;
    }
    let buf;
    const i = set.findIndex((v) => bytesEqual(v.data, data));
    if (i >= 0) {
      if (ts <= set[i].ts) return Outcome.NoChange;
      buf = set[i].data;
      set.splice(i, 1);
    } else {
      if (set.length >= this.#retention) {
        if (lessVal(ts, data, set[0].ts, set[0].data)) return Outcome.NoChange;
        this.#bytes -= PUT_HEADER + set[0].data.length;
        set.shift();
      }
      buf = data.slice();
      this.#bytes += PUT_HEADER + buf.length;
    }
    let lo = 0;
    let hi = set.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (lessVal(set[mid].ts, set[mid].data, ts, buf)) lo = mid + 1;
      else hi = mid;
    }
    set.splice(lo, 0, { ts, data: buf });
    this.#changed(e & 0xffff);
    return Outcome.Applied;
  }

  /**
   * Merges one message under Concord's ADR-117 rules and returns the outcome: 'applied' (the
   * message won), 'nochange' (already reflected), 'outdated' (the local value wins: see
   * appendCorrection), 'ignored' (a deleted entity version) or 'invalid' (unknown type). The
   * clock observes the message's timestamp whatever the outcome. _NETWORK types merge as their
   * local counterparts; networkId is not part of the state. m.data is copied.
   * @param {{type: number, entity: number, component: number, timestamp: number, data?: Uint8Array|null}} m
   * @returns {string}
   */
  merge(m) {
    switch (m.type) {
      case T.PutComponent:
      case T.PutComponentNetwork:
        this.observeClock(m.timestamp);
        return this.#mergeLWW(m.entity, m.component, m.timestamp, dataOf(m.data));
      case T.DeleteComponent:
      case T.DeleteComponentNetwork:
        this.observeClock(m.timestamp);
        return this.#mergeLWW(m.entity, m.component, m.timestamp, null);
      case T.AppendValue:
        this.observeClock(m.timestamp);
        return this.#mergeAppend(m.entity, m.component, m.timestamp, dataOf(m.data));
      case T.DeleteEntity:
      case T.DeleteEntityNetwork:
        return this.#mergeDeleteEntity(m.entity);
      default:
        return Outcome.Invalid;
    }
  }

  /**
   * Writes a value (or, with deleted, a tombstone) at timestamp ts for a writer that stamps a
   * whole batch of writes with one timestamp (Go's WriteAt): an existing entry with the same
   * timestamp is replaced whatever the values, so the writer's later write in the batch wins.
   * The caller owns ts (took it above its clock for this batch). The clock observes ts; an entry
   * with a higher timestamp is kept ('outdated').
   * @param {number} entity
   * @param {number} component
   * @param {number} ts
   * @param {Uint8Array|null} data
   * @param {boolean} [deleted]
   * @returns {string}
   */
  writeAt(entity, component, ts, data, deleted = false) {
    this.observeClock(ts);
    const d = deleted ? null : dataOf(data);
    if (!this.#admit(entity)) return Outcome.Ignored;
    const rec = this.#nums.get(entity & 0xffff);
    const s = rec === undefined ? undefined : rec.lww.get(component);
    if (s !== undefined && s.ts === ts) {
      if (compareValues(s.data, d) === 0) return Outcome.NoChange;
      this.#bytes += lwwBytes(d) - lwwBytes(s.data);
      s.data = d === null ? null : d.slice();
      this.#changed(entity & 0xffff);
      return Outcome.Applied;
    }
    return this.#mergeLWW(entity, component, ts, d);
  }

  /**
   * Writes a component value with the next clock tick; returns the PUT_COMPONENT to broadcast.
   * A write to a deleted entity version is ignored (as it will be everywhere).
   * @param {number} entity
   * @param {number} component
   * @param {Uint8Array} data
   * @returns {Message}
   */
  put(entity, component, data) {
    const ts = this.#tick();
    const d = dataOf(data);
    this.#mergeLWW(entity, component, ts, d);
    return { type: T.PutComponent, entity, component, timestamp: ts, networkId: 0, data: d };
  }

  /**
   * Deletes a component with the next clock tick; returns the DELETE_COMPONENT to broadcast.
   * @param {number} entity
   * @param {number} component
   * @returns {Message}
   */
  deleteComponent(entity, component) {
    const ts = this.#tick();
    this.#mergeLWW(entity, component, ts, null);
    return { type: T.DeleteComponent, entity, component, timestamp: ts, networkId: 0, data: null };
  }

  /**
   * Deletes entity version e (and every lower version of its number); returns the DELETE_ENTITY
   * to broadcast. The clock does not tick (the message has no timestamp).
   * @param {number} entity
   * @returns {Message}
   */
  deleteEntity(entity) {
    this.#mergeDeleteEntity(entity);
    return { type: T.DeleteEntity, entity, component: 0, timestamp: 0, networkId: 0, data: null };
  }

  /**
   * Adds a value to the append set of (entity, component) with the next clock tick; returns the
   * APPEND_VALUE to broadcast.
   * @param {number} entity
   * @param {number} component
   * @param {Uint8Array} data
   * @returns {Message}
   */
  appendValue(entity, component, data) {
    const ts = this.#tick();
    const d = dataOf(data);
    this.#mergeAppend(entity, component, ts, d);
    return { type: T.AppendValue, entity, component, timestamp: ts, networkId: 0, data: d };
  }

  /**
   * Returns the LWW entry of (entity, component), or undefined. data is null for a tombstone
   * (deleted true) and is the replica's copy: do not modify it.
   * @param {number} entity
   * @param {number} component
   * @returns {LWWEntry | undefined}
   */
  get(entity, component) {
    const rec = this.#nums.get(entity & 0xffff);
    if (rec === undefined || rec.entity !== entity) return undefined;
    const s = rec.lww.get(component);
    if (s === undefined) return undefined;
    return s.data === null ? { data: null, ts: s.ts, deleted: true } : { data: s.data, ts: s.ts, deleted: false };
  }

  /**
   * Calls fn(data, ts) for every value of the append set of (entity, component), oldest first
   * (ascending timestamp, then value). data is the replica's copy: do not modify it.
   * @param {number} entity
   * @param {number} component
   * @param {(data: Uint8Array, ts: number) => void} fn
   */
  rangeEntityAppend(entity, component, fn) {
    const rec = this.#nums.get(entity & 0xffff);
    if (rec === undefined || rec.entity !== entity) return;
    for (const v of rec.app.get(component) ?? []) fn(v.data, v.ts);
  }

  /**
   * The state's size as a canonical ADR-117 message stream: appendState().length, the bytes of a
   * checkpoint or of a full snapshot's hostState (Go's Replica.Size), kept as the state changes.
   * @returns {number}
   */
  get bytes() {
    return this.#bytes;
  }

  /**
   * At most how many bytes merging m would add to bytes (Go's Replica.Growth): what a bound on
   * the state's size checks before it admits m. It never changes the replica.
   * @param {{type: number, entity: number, component: number, timestamp: number, data?: Uint8Array|null}} m
   * @returns {number}
   */
  growth(m) {
    const n = m.entity & 0xffff;
    const v = m.entity >>> 16;
    let g = v > 0 && this.#deletedStored(n) === 0 ? 12 : 0; // version v deletes the lower ones
    const len = m.data ? m.data.length : 0;
    switch (m.type) {
      case T.PutComponent:
      case T.PutComponentNetwork:
      case T.DeleteComponent:
      case T.DeleteComponentNetwork: {
        const put = m.type === T.PutComponent || m.type === T.PutComponentNetwork;
        const s = this.get(m.entity, m.component);
        if (s !== undefined && m.timestamp < s.ts) return g; // outdated: the stored entry stays
        if (s === undefined) return g + (put ? PUT_HEADER + len : 20);
        if (put && s.deleted) return g + PUT_HEADER + len - 20;
        if (put) return g + Math.max(0, len - (s.data ? s.data.length : 0));
        return g;
      }
      case T.AppendValue:
        return g + PUT_HEADER + len;
      case T.DeleteEntity:
      case T.DeleteEntityNetwork:
        return v === 0 && this.#deletedStored(n) === 0 ? 12 : g;
      default:
        return g;
    }
  }

  /**
   * How many append sets entity e holds, and whether one of them is c's (Go's AppendSets).
   * @param {number} entity
   * @param {number} component
   * @returns {{n: number, has: boolean}}
   */
  appendSets(entity, component) {
    const rec = this.#nums.get(entity & 0xffff);
    if (rec === undefined || rec.entity !== entity) return { n: 0, has: false };
    return { n: rec.app.size, has: rec.app.has(component) };
  }

  /**
   * Reports whether entity version e is deleted (its version is at most the highest deleted
   * version of its number).
   * @param {number} entity
   * @returns {boolean}
   */
  entityDeleted(entity) {
    return this.#deletedStored(entity & 0xffff) > entity >>> 16;
  }

  /**
   * Returns the highest deleted version of an entity number, or undefined.
   * @param {number} number
   * @returns {number|undefined}
   */
  deletedVersion(number) {
    return this.#deleted.get(number);
  }

  /** Number of LWW entries (values and tombstones). */
  get size() {
    return this.#lwwCount;
  }

  /** Number of entities holding at least one entry. */
  get liveEntities() {
    return this.#nums.size;
  }

  /** Number of entity numbers with a deleted version. */
  get deletedNumbers() {
    return this.#deleted.size;
  }

  #sortedNums() {
    if (this.#numOrder === null) this.#numOrder = [...this.#nums.values()].sort((a, b) => a.entity - b.entity);
    return this.#numOrder;
  }

  #sortedDeleted() {
    if (this.#delOrder === null) this.#delOrder = [...this.#deleted.keys()].sort((a, b) => a - b);
    return this.#delOrder;
  }

  /**
   * Calls fn({entity, component, timestamp, deleted, data}) for every LWW entry in canonical
   * order (entity as a full u32 id, then component) until fn returns false. data is null for a
   * tombstone. fn must not modify the replica.
   * @param {(e: {entity: number, component: number, timestamp: number} & LWWEntryData) => (boolean|void)} fn
   */
  range(fn) {
    for (const rec of this.#sortedNums()) {
      for (const c of rec.sortedLWW()) {
        const s = present(rec.lww, c);
        /** @type {{entity: number, component: number, timestamp: number} & LWWEntryData} */
        const e = s.data === null
          ? { entity: rec.entity, component: c, timestamp: s.ts, deleted: true, data: null }
          : { entity: rec.entity, component: c, timestamp: s.ts, deleted: false, data: s.data };
        if (fn(e) === false) return;
      }
    }
  }

  /**
   * Calls fn(number, version) for every entity number with a deleted version, ascending, with
   * its highest deleted version, until fn returns false.
   * @param {(number: number, version: number) => (boolean|void)} fn
   */
  rangeDeleted(fn) {
    for (const n of this.#sortedDeleted()) {
      if (fn(n, present(this.#deleted, n)) === false) return;
    }
  }

  /**
   * Calls fn({entity, component, timestamp, data}) for every append value: keys in canonical
   * order, values in ascending (timestamp, value) order, until fn returns false.
   * @param {(e: {entity: number, component: number, timestamp: number, data: Uint8Array}) => (boolean|void)} fn
   */
  rangeAppend(fn) {
    for (const rec of this.#sortedNums()) {
      for (const c of rec.sortedApp()) {
        for (const v of present(rec.app, c)) {
          if (fn({ entity: rec.entity, component: c, timestamp: v.ts, data: v.data }) === false) return;
        }
      }
    }
  }

  /**
   * Writes the canonical messages into buf: the whole state if bucket < 0, else only those whose
   * entity number % buckets === bucket.
   * @param {Buf} buf
   * @param {number} buckets
   * @param {number} bucket
   */
  #walk(buf, buckets, bucket) {
    const want = (/** @type {number} */ n) => bucket < 0 || n % buckets === bucket;
    for (const n of this.#sortedDeleted()) {
      if (!want(n)) continue;
      buf.msg(T.DeleteEntity, present(this.#deleted, n) * 65536 + n, 0, 0, 0, null);
    }
    const recs = this.#sortedNums();
    for (const rec of recs) {
      if (!want(rec.number)) continue;
      for (const c of rec.sortedLWW()) {
        const s = present(rec.lww, c);
        if (s.data === null) buf.msg(T.DeleteComponent, rec.entity, c, s.ts, 0, null);
        else buf.msg(T.PutComponent, rec.entity, c, s.ts, 0, s.data);
      }
    }
    for (const rec of recs) {
      if (!want(rec.number)) continue;
      for (const c of rec.sortedApp()) {
        for (const v of present(rec.app, c)) {
          buf.msg(T.AppendValue, rec.entity, c, v.ts, 0, v.data);
        }
      }
    }
  }

  /**
   * Returns the whole state as the canonical @dcl/ecs stream (EngineApi crdtGetState), byte for
   * byte as Go's AppendState: DELETE_ENTITY per deleted number, then PUT/DELETE_COMPONENT per LWW
   * entry, then APPEND_VALUE per append value, each group in ascending order.
   * @returns {Uint8Array}
   */
  appendState() {
    const buf = new Buf(1024);
    this.#walk(buf, 1, -1);
    return buf.result();
  }

  /**
   * Returns the canonical messages of one bucket (entity number % buckets === bucket), in
   * appendState order. buckets below 1 count as 1; a bucket outside [0, buckets) gives nothing.
   * @param {number} bucket
   * @param {number} buckets
   * @returns {Uint8Array}
   */
  bucketState(bucket, buckets) {
    if (!(buckets >= 1)) buckets = 1;
    if (!(bucket >= 0 && bucket < buckets)) return new Uint8Array(0);
    const buf = new Buf(256);
    this.#walk(buf, buckets, bucket);
    return buf.result();
  }

  /**
   * Marks entity number n as changed since the last hash (Go's changed).
   * @param {number} n
   */
  #changed(n) {
    let bits = this.#dirtyBits;
    if (bits === null) bits = this.#dirtyBits = new Uint32Array(65536 / 32);
    const w = n >>> 5;
    const m = 1 << (n & 31);
    if ((bits[w] & m) === 0) {
      bits[w] |= m;
      this.#dirtyList.push(n);
    }
  }

  /**
   * Writes into SUM[0..1] the sum of the element hashes of entity number n's canonical messages:
   * its DELETE_ENTITY, if a version of it is deleted, and every entry of its live version. The
   * sum does not depend on order, so the maps are walked unsorted.
   * @param {number} n
   */
  #numberSum(n) {
    SUM[0] = 0;
    SUM[1] = 0;
    let buf = this.#scratch;
    if (buf === null) buf = this.#scratch = new Buf(256);
    const v = this.#deleted.get(n);
    if (v !== undefined) {
      buf.len = 0;
      buf.msg(T.DeleteEntity, v * 65536 + n, 0, 0, 0, null);
      elementHashAdd(SUM, 0, buf.b, 0, buf.len);
    }
    const rec = this.#nums.get(n);
    if (rec !== undefined) {
      for (const [c, s] of rec.lww) {
        buf.len = 0;
        if (s.data === null) buf.msg(T.DeleteComponent, rec.entity, c, s.ts, 0, null);
        else buf.msg(T.PutComponent, rec.entity, c, s.ts, 0, s.data);
        elementHashAdd(SUM, 0, buf.b, 0, buf.len);
      }
      for (const [c, set] of rec.app) {
        for (const x of set) {
          buf.len = 0;
          buf.msg(T.AppendValue, rec.entity, c, x.ts, 0, x.data);
          elementHashAdd(SUM, 0, buf.b, 0, buf.len);
        }
      }
    }
    if (buf.b.length > SHRINK_THRESHOLD) this.#scratch = null;
  }

  /** Brings the per-number sums, the total and the kept bucket digests up to date with the state. */
  #refreshSums() {
    const list = this.#dirtyList;
    const bits = this.#dirtyBits;
    if (list.length === 0 || bits === null) return; // bits is allocated before the first number is listed
    const bs = this.#bucketSums;
    for (const n of list) {
      bits[n >>> 5] = 0;
      this.#numberSum(n);
      const pi = n >>> 8;
      let page = this.#sums[pi];
      if (page === undefined) {
        if (u64IsZero(SUM, 0)) continue;
        page = this.#sums[pi] = new Uint32Array(512);
      }
      const k = n & 0xff;
      // DELTA = new sum − old sum, added to everything that counts number n.
      DELTA[0] = SUM[0];
      DELTA[1] = SUM[1];
      u64Sub(DELTA, 0, page, k);
      page[2 * k] = SUM[0];
      page[2 * k + 1] = SUM[1];
      u64Add(this.#total, 0, DELTA, 0);
      if (bs !== null) u64Add(bs.sums, n % bs.buckets, DELTA, 0);
    }
    list.length = 0;
  }

  /**
   * The state hash, as Go's Hash: the sum modulo 2⁶⁴ of the element hashes
   * (fmix64(FNV-1a 64(message)), see fnv.js) of every message appendState() writes. Equal states
   * hash equal; the empty state hashes to 0n. Costs time in proportion to the entity numbers
   * changed since the last hash() or bucketDigests(), not to the state.
   * @returns {bigint}
   */
  hash() {
    this.#refreshSums();
    return u64Value(this.#total, 0);
  }

  /**
   * One digest per bucket, as Go's BucketDigests: digest b is the sum modulo 2⁶⁴ of the element
   * hashes of the messages of bucketState(b, buckets), 0n for an empty bucket, so the digests of
   * any bucket count add up to hash(). buckets below 1 count as 1. The digests of the last bucket
   * count asked for are kept up to date, so asking again with the same count costs the numbers
   * changed since plus the buckets; another count costs a pass over the entity numbers once. The
   * array is new on every call: the caller may keep it.
   * @param {number} buckets
   * @returns {BigUint64Array}
   */
  bucketDigests(buckets) {
    if (!(buckets >= 1)) buckets = 1;
    buckets = Math.floor(buckets);
    this.#refreshSums();
    let bs = this.#bucketSums;
    if (bs === null || bs.buckets !== buckets) {
      const sums = new Uint32Array(2 * buckets);
      for (let pi = 0; pi < SUM_PAGES; pi++) {
        const page = this.#sums[pi];
        if (page === undefined) continue;
        // Numbers pi << 8 … (pi << 8) + 255; keep the bucket running instead of dividing each number.
        let b = (pi << 8) % buckets;
        for (let k = 0; k < 256; k++) {
          if (page[2 * k] !== 0 || page[2 * k + 1] !== 0) u64Add(sums, b, page, k);
          if (++b === buckets) b = 0;
        }
      }
      bs = this.#bucketSums = { buckets, sums };
    }
    return u64Array(bs.sums, buckets);
  }

  /**
   * Returns the canonical JSON object of the state (CRDT.md), equal to Go's StateJSON:
   * {lww: [{entity, component, timestamp, deleted, data}], deletedEntities: [{number, version}],
   * append: [{entity, component, values}]}, data and values as lowercase hex.
   * @returns {{lww: object[], deletedEntities: object[], append: object[]}}
   */
  stateJSON() {
    /** @type {object[]} */
    const lww = [];
    this.range((e) => {
      lww.push({ entity: e.entity, component: e.component, timestamp: e.timestamp, deleted: e.deleted, data: e.deleted ? null : hexOf(e.data) });
    });
    /** @type {object[]} */
    const deletedEntities = [];
    this.rangeDeleted((number, version) => {
      deletedEntities.push({ number, version });
    });
    const append = [];
    for (const rec of this.#sortedNums()) {
      for (const c of rec.sortedApp()) {
        const values = present(rec.app, c).map((v) => hexOf(v.data));
        values.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        append.push({ entity: rec.entity, component: c, values });
      }
    }
    return { lww, deletedEntities, append };
  }

  /**
   * Merges every message of a stream (an appendState export, a scene file, a batch from a peer)
   * and returns how many were applied. Unknown types are skipped. A malformed message throws a
   * ProtocolError at its offset, with .applied set; the messages before it stay merged.
   * @param {Uint8Array} bytes
   * @returns {number}
   */
  mergeStream(bytes) {
    const dv = viewOf(bytes);
    let applied = 0;
    for (let off = 0; off < bytes.length;) {
      let r;
      try {
        r = decodeAt(bytes, dv, off, this.#maxMessageSize);
      } catch (err) {
        err.applied = applied;
        throw err;
      }
      off += r.n;
      if (this.merge(r.m) === Outcome.Applied) applied++;
    }
    return applied;
  }

  /**
   * Returns the corrective message for m, the reply ADR-117 prescribes when a merge did not accept
   * it: after 'outdated', the local entry for m's key as PUT_COMPONENT or DELETE_COMPONENT with its
   * timestamp; after 'ignored', the DELETE_ENTITY of the highest deleted version of m's number.
   * Empty when there is nothing to correct (no entry, an append value, m is the recorded deletion).
   * @param {{type: number, entity: number, component: number}} m
   * @returns {Uint8Array}
   */
  appendCorrection(m) {
    const buf = new Buf(64);
    if (!isKnownMessageType(m.type)) return buf.result();
    const n = m.entity & 0xffff;
    const st = this.#deletedStored(n);
    if (st > m.entity >>> 16) {
      const d = (st - 1) * 65536 + n;
      if ((m.type === T.DeleteEntity || m.type === T.DeleteEntityNetwork) && d === m.entity) return buf.result();
      buf.msg(T.DeleteEntity, d, 0, 0, 0, null);
      return buf.result();
    }
    switch (m.type) {
      case T.PutComponent:
      case T.PutComponentNetwork:
      case T.DeleteComponent:
      case T.DeleteComponentNetwork: {
        const s = this.get(m.entity, m.component);
        if (s === undefined) break;
        if (s.deleted) buf.msg(T.DeleteComponent, m.entity, m.component, s.ts, 0, null);
        else buf.msg(T.PutComponent, m.entity, m.component, s.ts, 0, s.data);
        break;
      }
      default:
        break;
    }
    return buf.result();
  }
}
