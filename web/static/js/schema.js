// @ts-check
// Schemas give TRNP's schemaId its meaning, exactly as the Go package crdt/schema: a schema is an
// ordered list of properties, each stored as one CRDT component with a stable id. Values travel in
// update data as the properties named by a bitmask, in property order: a fixed-size property as
// exactly size bytes, a variable-size one (size 0) as a u16 little-endian length and the bytes.
// The table fingerprint (FNV-1a 64, as Go computes it) lets a peer with another table fail fast.

import { ProtocolError } from './netmsg.js';
import { fnv1a64 } from './fnv.js';

/** Most properties a schema may have (a u32 bitmask). */
export const MAX_PROPERTIES = 32;
/** Largest property value in bytes, fixed or variable. */
export const MAX_VALUE_SIZE = 1 << 12;
/** Lowest component id a schema property may use; ids below belong to Concord. */
export const FIRST_APP_COMPONENT = 1024;
/** Component holding an entity's schema id (u32 LE) followed by its creation data. */
export const COMPONENT_META = 1;
/** Component holding an entity's authority record (kind u8 + peer u64). */
export const COMPONENT_AUTHORITY = 2;

/**
 * A schema table that cannot be registered (code invalid_schema, Go's ErrInvalidSchema) or a local
 * value that does not fit its property (code value_size, from checkValue).
 */
export class SchemaError extends Error {
  /**
   * @param {string} message
   * @param {string} [code]
   */
  constructor(message, code = 'invalid_schema') {
    super(message);
    this.name = 'SchemaError';
    /** @type {string} */
    this.code = code;
  }
}

/**
 * @param {unknown} v
 * @returns {v is number}
 */
function isU32(v) {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
}

/**
 * Decoding failures of update data (Go's ErrMaskOutOfRange, ErrValueSize, ErrShortData,
 * ErrTrailingData): codes mask_out_of_range, value_size, short_data, trailing_data. The update
 * is well framed but does not fit its schema: drop it, do not close the peer.
 */
/**
 * @param {string} code
 * @param {number} offset
 * @param {string} detail
 */
function valueError(code, offset, detail) {
  return new ProtocolError(code, offset, `schema: ${code}: ${detail}`);
}

/**
 * How a game declares a schema: an id (u32), a name, and its properties, each stored in its own
 * component (≥ FIRST_APP_COMPONENT) with a fixed size in bytes (1..MAX_VALUE_SIZE) or 0 for a
 * variable one (at most MAX_VALUE_SIZE bytes).
 * @typedef {{id: number, name?: string, properties: {name?: string, component: number, size?: number}[]}} SchemaSpec
 */

/**
 * One schema: {id, name, properties: [{name, component, size}]}, size 0 meaning variable.
 * Immutable; obtain it from SchemaTable.lookup.
 */
export class Schema {

  /** @param {SchemaSpec} s */
  constructor(s) {
    /** @type {number} */
    this.id = s.id;
    /** @type {string} */
    this.name = s.name ?? '';
    /** @type {ReadonlyArray<{name: string, component: number, size: number}>} */
    this.properties = Object.freeze(s.properties.map((p) => Object.freeze({ name: p.name ?? '', component: p.component, size: p.size ?? 0 })));
    const n = this.properties.length;
    /** Mask naming every property (a u32 as an unsigned number). */
    this.fullMask = n === 32 ? 0xffffffff : 2 ** n - 1;
    Object.freeze(this);
  }

  /**
   * Returns the index of the property stored in component c, or −1.
   * @param {number} component
   * @returns {number}
   */
  index(component) {
    return this.properties.findIndex((p) => p.component === component);
  }

  /**
   * Reports whether v is a valid value for property i: exactly size bytes for a fixed property,
   * at most MAX_VALUE_SIZE for a variable one.
   * @param {number} i
   * @param {Uint8Array} v
   * @returns {boolean}
   */
  isValidValue(i, v) {
    const p = this.properties[i];
    if (p === undefined || !(v instanceof Uint8Array)) return false;
    return p.size > 0 ? v.length === p.size : v.length <= MAX_VALUE_SIZE;
  }

  /**
   * Checks that v is a valid value for property i (see isValidValue), as Go's CheckValue: returns
   * true, or throws a SchemaError (code value_size) naming the property.
   * @param {number} i
   * @param {Uint8Array} v
   * @returns {true}
   */
  checkValue(i, v) {
    if (this.isValidValue(i, v)) return true;
    const p = this.properties[i];
    const got = v instanceof Uint8Array ? `${v.length} bytes` : typeof v;
    if (p === undefined) throw new SchemaError(`schema: value_size: ${this.name} has no property ${i}`, 'value_size');
    throw new SchemaError(`schema: value_size: ${this.name}.${p.name} wants ${p.size > 0 ? p.size : `at most ${MAX_VALUE_SIZE}`} bytes, got ${got}`, 'value_size');
  }

  /**
   * Returns the wire size of value v of property i.
   * @param {number} i
   * @param {Uint8Array} v
   * @returns {number}
   */
  valueSize(i, v) {
    return this.properties[i].size === 0 ? 2 + v.length : v.length;
  }

  /**
   * Returns the wire form of value v of property i (a u16 length first for a variable property),
   * appended to dst when given: appendValue(i, v) or appendValue(dst, i, v) (Go's form). The
   * caller has checked v with checkValue.
   * @overload
   * @param {number} i
   * @param {Uint8Array} v
   * @returns {Uint8Array}
   */
  /**
   * @overload
   * @param {Uint8Array | null} dst
   * @param {number} i
   * @param {Uint8Array} v
   * @returns {Uint8Array}
   */
  /**
   * @param {Uint8Array|null|number} dst
   * @param {number|Uint8Array} iv
   * @param {Uint8Array} [vv]
   * @returns {Uint8Array}
   */
  appendValue(dst, iv, vv) {
    if (typeof dst === 'number') return this.appendValue(null, dst, /** @type {Uint8Array} */ (iv));
    const i = /** @type {number} */ (iv);
    const v = /** @type {Uint8Array} */ (vv);
    const d = dst ?? new Uint8Array(0);
    const out = new Uint8Array(d.length + this.valueSize(i, v));
    out.set(d);
    let o = d.length;
    if (this.properties[i].size === 0) {
      out[o] = v.length & 0xff;
      out[o + 1] = v.length >>> 8;
      o += 2;
    }
    out.set(v, o);
    return out;
  }

  /**
   * Encodes the values named by mask, in property order (the data of an Update). value(i)
   * returns property i's value, already checked with checkValue.
   * @param {number} mask
   * @param {(i: number) => Uint8Array} value
   * @returns {Uint8Array}
   */
  encodeValues(mask, value) {
    /** @type {[number, Uint8Array][]} */
    const vals = [];
    let size = 0;
    for (let i = 0; i < this.properties.length; i++) {
      if (Math.floor(mask / 2 ** i) % 2 === 1) {
        const v = value(i);
        vals.push([i, v]);
        size += this.valueSize(i, v);
      }
    }
    const out = new Uint8Array(size);
    let o = 0;
    for (const [i, v] of vals) {
      if (this.properties[i].size === 0) {
        out[o] = v.length & 0xff;
        out[o + 1] = v.length >>> 8;
        o += 2;
      }
      out.set(v, o);
      o += v.length;
    }
    return out;
  }

  /**
   * Walks update data holding the properties named by mask, in property order, calling fn(i, v)
   * for each (v aliases data). It validates everything first: on malformed data it throws a
   * ProtocolError (mask_out_of_range, value_size, short_data or trailing_data; offset in data)
   * having called fn for nothing.
   * @param {Uint8Array} data
   * @param {number} mask
   * @param {(i: number, v: Uint8Array) => void} fn
   */
  consumeValues(data, mask, fn) {
    if (!isU32(mask) || Math.floor(mask / (this.fullMask + 1)) !== 0) {
      throw valueError('mask_out_of_range', 0, `mask ${mask}, ${this.name} has ${this.properties.length} properties`);
    }
    this.#walk(data, mask, null);
    this.#walk(data, mask, fn);
  }

  /**
   * @param {Uint8Array} data
   * @param {number} mask
   * @param {((i: number, v: Uint8Array) => void) | null} fn
   */
  #walk(data, mask, fn) {
    let off = 0;
    for (let i = 0; i < this.properties.length; i++) {
      if (Math.floor(mask / 2 ** i) % 2 !== 1) continue;
      const p = this.properties[i];
      let n = p.size;
      if (n === 0) {
        if (data.length - off < 2) throw valueError('short_data', off, `${this.name}.${p.name} length at offset ${off}`);
        n = data[off] | (data[off + 1] << 8);
        if (n > MAX_VALUE_SIZE) throw valueError('value_size', off, `${this.name}.${p.name} has ${n} bytes`);
        off += 2;
      }
      if (data.length - off < n) {
        throw valueError('short_data', off, `${this.name}.${p.name} needs ${n} bytes at offset ${off}, ${data.length - off} left`);
      }
      if (fn) fn(i, data.subarray(off, off + n));
      off += n;
    }
    if (off !== data.length) throw valueError('trailing_data', off, `${data.length - off} bytes`);
  }
}

/**
 * The set of schemas a peer runs, registered with explicit ids and validated as Go's NewTable
 * does (SchemaError otherwise): unique u32 ids, 1–32 properties, component ids ≥ 1024 and unique
 * within a schema, sizes 0–4096. Immutable.
 */
export class SchemaTable {
  /** @type {Map<number, Schema>} */
  #schemas;

  /** @param {SchemaSpec[]} schemas */
  constructor(schemas = []) {
    /** @type {Map<number, Schema>} */
    this.#schemas = new Map();
    for (const s of schemas) {
      if (!isU32(s.id)) throw new SchemaError(`schema: invalid schema: id ${s.id} is not a u32`);
      if (this.#schemas.has(s.id)) throw new SchemaError(`schema: invalid schema: duplicate id ${s.id}`);
      const props = s.properties ?? [];
      if (props.length === 0 || props.length > MAX_PROPERTIES) {
        throw new SchemaError(`schema: invalid schema: ${s.name} has ${props.length} properties (want 1..${MAX_PROPERTIES})`);
      }
      const seen = new Set();
      for (const p of props) {
        if (!isU32(p.component) || p.component < FIRST_APP_COMPONENT) {
          throw new SchemaError(`schema: invalid schema: ${s.name}.${p.name} uses component ${p.component}, below ${FIRST_APP_COMPONENT} (reserved for Concord)`);
        }
        if (seen.has(p.component)) throw new SchemaError(`schema: invalid schema: ${s.name} uses component ${p.component} twice`);
        seen.add(p.component);
        const size = p.size ?? 0;
        if (!Number.isInteger(size) || size < 0 || size > MAX_VALUE_SIZE) {
          throw new SchemaError(`schema: invalid schema: ${s.name}.${p.name} has size ${size}`);
        }
      }
      this.#schemas.set(s.id, new Schema(s));
    }
    /** Registered schema ids, ascending. @type {ReadonlyArray<number>} */
    this.ids = Object.freeze([...this.#schemas.keys()].sort((a, b) => a - b));
    /** FNV-1a 64 of the canonical description (see computeFingerprint). @type {bigint} */
    this.fingerprint = this.computeFingerprint();
    Object.freeze(this);
  }

  /**
   * Returns the schema with the given id, or undefined.
   * @param {number} id
   * @returns {Schema|undefined}
   */
  lookup(id) {
    return this.#schemas.get(id);
  }

  /**
   * FNV-1a 64 over, for every schema by ascending id: id u32, property count u32, then per
   * property component u32 and size u32 (little-endian). Names do not count.
   * @returns {bigint}
   */
  computeFingerprint() {
    const schemas = [...this.#schemas.values()].sort((a, b) => a.id - b.id); // in the order of ids
    let n = 0;
    for (const s of schemas) n += 8 + 8 * s.properties.length;
    const b = new Uint8Array(n);
    const dv = new DataView(b.buffer);
    let o = 0;
    for (const s of schemas) {
      dv.setUint32(o, s.id, true);
      dv.setUint32(o + 4, s.properties.length, true);
      o += 8;
      for (const p of s.properties) {
        dv.setUint32(o, p.component, true);
        dv.setUint32(o + 4, p.size, true);
        o += 8;
      }
    }
    return fnv1a64(b);
  }
}

/**
 * Returns the value of the meta component, schema id (u32 LE) then creation data, appended to dst
 * when given: appendMeta(id, creation) or appendMeta(dst, id, creation) (Go's form).
 * @overload
 * @param {number} id
 * @param {Uint8Array | null} [creation]
 * @returns {Uint8Array}
 */
/**
 * @overload
 * @param {Uint8Array | null} dst
 * @param {number} id
 * @param {Uint8Array | null} [creation]
 * @returns {Uint8Array}
 */
/**
 * @param {Uint8Array|null|number} dst
 * @param {number|Uint8Array|null} [idc]
 * @param {Uint8Array|null} [cc]
 * @returns {Uint8Array}
 */
export function appendMeta(dst, idc, cc) {
  if (typeof dst === 'number') return appendMeta(null, dst, /** @type {Uint8Array | null} */ (idc));
  const id = /** @type {number} */ (idc);
  const d = dst ?? new Uint8Array(0);
  const c = cc ?? new Uint8Array(0);
  const out = new Uint8Array(d.length + 4 + c.length);
  out.set(d);
  new DataView(out.buffer).setUint32(d.length, id, true);
  out.set(c, d.length + 4);
  return out;
}

/**
 * Splits a meta component value into {id, creation} (creation aliases v), or returns null when v
 * is shorter than 4 bytes.
 * @param {Uint8Array} v
 * @returns {{id: number, creation: Uint8Array}|null}
 */
export function parseMeta(v) {
  if (!v || v.length < 4) return null;
  const id = (v[0] | (v[1] << 8) | (v[2] << 16) | (v[3] << 24)) >>> 0;
  return { id, creation: v.subarray(4) };
}
