// @ts-check
// Schemas give TRNP's schemaId its meaning, exactly as the Go package crdt/schema: a schema is an
// ordered list of properties, each stored as one CRDT component with a stable id. Values travel in
// update data as the properties named by a bitmask, in property order: a fixed-size property as
// exactly size bytes, a variable-size one (size 0) as a u16 little-endian length and the bytes.
// The table fingerprint (FNV-1a 64, as Go computes it) lets a peer with another table fail fast.
//
// A property may declare a compact encoding (Go's schema.Encoding): quantized fixed-point,
// IEEE binary16, unsigned LEB128 or zigzag LEB128 varints. The replica stores the encoded bytes and
// the wire carries them unchanged; the encoding fixes the size (quantized, float16) or delimits the
// value itself (varints: no length prefix), and every received value is checked. The encoders and
// decoders below write and read exactly Go's bytes (testdata/schema/encodings.json).

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
 * A property's compact encoding, as Go's schema.Encoding: kind 'quantized' (count numbers in
 * [min, max] at resolution step), 'float16', 'uvarint' or 'varint' (zigzag); count defaults to 1.
 * @typedef {{kind: 'quantized'|'float16'|'uvarint'|'varint', count?: number, min?: number, max?: number, step?: number}} EncodingSpec
 */

/**
 * A validated encoding (count ≥ 1; min, max, step 0 unless quantized).
 * @typedef {{kind: 'quantized'|'float16'|'uvarint'|'varint', count: number, min: number, max: number, step: number}} Encoding
 */

/**
 * How a game declares a schema: an id (u32), a name, and its properties, each stored in its own
 * component (≥ FIRST_APP_COMPONENT) with a fixed size in bytes (1..MAX_VALUE_SIZE) or 0 for a
 * variable one (at most MAX_VALUE_SIZE bytes), or with an encoding (size then follows from it).
 * @typedef {{id: number, name?: string, properties: {name?: string, component: number, size?: number, encoding?: EncodingSpec | null}[]}} SchemaSpec
 */

/**
 * One property of a registered schema; encoding null for raw bytes.
 * @typedef {{name: string, component: number, size: number, encoding: Encoding | null}} Property
 */

/** Most numbers one encoded property may hold. */
export const MAX_COUNT = 64;
/** Largest quantized index round((max−min)/step): an exact integer in a double, 7 bytes at most. */
export const MAX_QUANTIZED_STEPS = 2 ** 53 - 1;
/** Longest LEB128 encoding of a 64-bit integer. */
export const MAX_VARINT_LEN = 10;
const FLOAT16_NAN = 0x7e00;
/** Kind numbers in the fingerprint (Go's schema.Kind). */
const KIND_NUMBER = { quantized: 1, float16: 2, uvarint: 3, varint: 4 };

/**
 * @param {string} code short_data or bad_value
 * @param {number} offset
 * @param {string} detail
 */
function encodingError(code, offset, detail) {
  return new ProtocolError(code, offset, `schema: ${code}: ${detail}`);
}

/**
 * Checks an encoding spec as Go's NewTable does: returns it normalised (count ≥ 1, absent fields
 * 0), or the problem as a string.
 * @param {EncodingSpec} e
 * @returns {Encoding | string}
 */
function validateEncoding(e) {
  if (e === null || typeof e !== 'object' || !Object.hasOwn(KIND_NUMBER, e.kind)) return `unknown encoding ${e?.kind}`;
  const count = e.count ?? 1;
  if (!Number.isInteger(count) || count < 0 || count > MAX_COUNT) return `count ${count} (want 1..${MAX_COUNT})`;
  const [min, max, step] = [e.min ?? 0, e.max ?? 0, e.step ?? 0];
  if (e.kind !== 'quantized') {
    if (min !== 0 || max !== 0 || step !== 0) return `${e.kind} encoding with a range`;
  } else {
    if (![min, max, step].every(Number.isFinite) || !(min < max) || !(step > 0)) {
      return `quantized range [${min}, ${max}] step ${step} (want finite, min < max, step > 0)`;
    }
    const q = (max - min) / step;
    if (!(q >= 0.5 && q <= MAX_QUANTIZED_STEPS)) return `quantized range [${min}, ${max}] step ${step} has ${q} steps`;
  }
  const out = Object.freeze({ kind: e.kind, count: Math.max(count, 1), min, max, step });
  validated.add(out);
  return out;
}

/** Encodings validateEncoding returned: the encoders and decoders need not check them again. */
const validated = new WeakSet();

/**
 * Returns e validated (as a schema property's encoding is), or the problem as a string.
 * @param {EncodingSpec} e
 * @returns {Encoding | string}
 */
function checked(e) {
  return validated.has(e) ? /** @type {Encoding} */ (e) : validateEncoding(e);
}

/**
 * A quantized encoding of count numbers over [min, max] at resolution step (Go's
 * schema.Quantized), validated: throws a SchemaError (invalid_schema) otherwise.
 * @param {number} count
 * @param {number} min
 * @param {number} max
 * @param {number} step
 * @returns {Encoding}
 */
export function quantized(count, min, max, step) {
  const e = validateEncoding({ kind: 'quantized', count, min, max, step });
  if (typeof e === 'string') throw new SchemaError(`schema: invalid schema: ${e}`);
  return e;
}

/**
 * The largest index of a quantized encoding, round((max−min)/step) (Go's Encoding.Steps).
 * @param {Encoding} e
 */
export function quantizedSteps(e) {
  return Math.round((e.max - e.min) / e.step);
}

/**
 * Bytes per number: the fewest holding quantizedSteps for a quantized encoding, 2 for float16,
 * 0 (variable) for varints (Go's Encoding.Width).
 * @param {Encoding} e
 */
export function encodingWidth(e) {
  if (e.kind === 'float16') return 2;
  if (e.kind !== 'quantized') return 0;
  let w = 1;
  for (let s = quantizedSteps(e); s >= 256; s = Math.floor(s / 256)) w++;
  return w;
}

/**
 * The index appendQuantized writes for v: v clamped to [min, max] (NaN reads as min), then
 * round((v−min)/step), at most quantizedSteps. Math.round (half up) is Go's math.Round (half away
 * from zero) on the non-negative quotient.
 * @param {Encoding} e
 * @param {number} v
 */
export function quantizeIndex(e, v) {
  if (!(v >= e.min)) v = e.min;
  else if (v > e.max) v = e.max;
  return Math.min(Math.round((v - e.min) / e.step), quantizedSteps(e));
}

/**
 * The number index i stands for, min + i·step.
 * @param {Encoding} e
 * @param {number} i
 */
export function dequantizeIndex(e, i) {
  return e.min + i * e.step;
}

/**
 * Returns dst (or nothing) followed by extra bytes written by fill(out, offset).
 * @param {Uint8Array | null | undefined} dst
 * @param {number} n
 * @param {(out: Uint8Array, o: number) => void} fill
 */
function grow(dst, n, fill) {
  const d = dst ?? new Uint8Array(0);
  const out = new Uint8Array(d.length + n);
  out.set(d);
  fill(out, d.length);
  return out;
}

/**
 * Appends one number of quantized encoding e (quantizeIndex, encodingWidth bytes LE) to dst
 * (null: to nothing) and returns the new array.
 * @param {Uint8Array | null} dst
 * @param {Encoding} e
 * @param {number} v
 * @returns {Uint8Array}
 */
export function appendQuantized(dst, e, v) {
  if (!validated.has(e)) e = quantized(e.count ?? 1, e.min ?? 0, e.max ?? 0, e.step ?? 0);
  const w = encodingWidth(e);
  let i = quantizeIndex(e, v);
  return grow(dst, w, (out, o) => {
    for (let k = 0; k < w; k++) {
      out[o + k] = i % 256;
      i = Math.floor(i / 256);
    }
  });
}

/**
 * @param {Uint8Array} b
 * @param {number} off
 * @param {number} w
 */
function uintLE(b, off, w) {
  let v = 0;
  for (let k = w - 1; k >= 0; k--) v = v * 256 + b[off + k];
  return v;
}

/**
 * Decodes one number of quantized encoding e at b[off]: returns [number, next offset]. Throws a
 * ProtocolError short_data (fewer than encodingWidth bytes) or bad_value (an index above
 * quantizedSteps, or e not a valid quantized encoding).
 * @param {Uint8Array} b
 * @param {number} off
 * @param {Encoding} e
 * @returns {[number, number]}
 */
export function consumeQuantized(b, off, e) {
  if (e?.kind !== 'quantized') throw encodingError('bad_value', off, `${e?.kind} is not a quantized encoding`);
  const ok = checked(e);
  if (typeof ok === 'string') throw encodingError('bad_value', off, ok);
  e = ok;
  const w = encodingWidth(e);
  if (b.length - off < w) throw encodingError('short_data', off, `quantized number needs ${w} bytes, ${b.length - off} left`);
  const i = uintLE(b, off, w);
  if (i > quantizedSteps(e)) throw encodingError('bad_value', off, `quantized index ${i} above ${quantizedSteps(e)}`);
  return [dequantizeIndex(e, i), off + w];
}

const f64 = new DataView(new ArrayBuffer(8));

/**
 * Rounds a non-negative number to the nearest integer, ties to even.
 * @param {number} x
 */
function roundEven(x) {
  let r = Math.floor(x);
  const d = x - r;
  if (d > 0.5 || (d === 0.5 && r % 2 === 1)) r++;
  return r;
}

/**
 * The IEEE 754 binary16 nearest to v, ties to even, as Go's Float16Bits: magnitudes from 65520 up
 * are ±Inf, below 2⁻²⁵ ±0 (sign kept), every NaN is 0x7e00. Every step is exact in doubles.
 * @param {number} v
 * @returns {number}
 */
export function float16Bits(v) {
  if (Number.isNaN(v)) return FLOAT16_NAN;
  let sign = 0;
  if (v < 0 || Object.is(v, -0)) {
    sign = 0x8000;
    v = -v;
  }
  if (v >= 65520) return sign | 0x7c00;
  if (v < 2 ** -14) return sign | roundEven(v * 2 ** 24);
  f64.setFloat64(0, v);
  const exp = ((f64.getUint32(0) >>> 20) & 0x7ff) - 1023;
  const frac = roundEven((v * 2 ** -exp - 1) * 1024);
  return sign | (((exp + 15) << 10) + frac);
}

/**
 * The number binary16 h stands for (any NaN is NaN).
 * @param {number} h
 * @returns {number}
 */
export function float16FromBits(h) {
  const exp = (h >>> 10) & 0x1f;
  const frac = h & 0x3ff;
  let v;
  if (exp === 0) v = frac * 2 ** -24;
  else if (exp === 31) {
    if (frac !== 0) return NaN;
    v = Infinity;
  } else v = (1024 + frac) * 2 ** (exp - 25);
  return h & 0x8000 ? -v : v;
}

/** @param {number} h */
function validFloat16(h) {
  return (h & 0x7c00) !== 0x7c00 || (h & 0x3ff) === 0 || h === FLOAT16_NAN;
}

/**
 * Appends float16Bits(v), 2 bytes LE.
 * @param {Uint8Array | null} dst
 * @param {number} v
 * @returns {Uint8Array}
 */
export function appendFloat16(dst, v) {
  const h = float16Bits(v);
  return grow(dst, 2, (out, o) => {
    out[o] = h & 0xff;
    out[o + 1] = h >>> 8;
  });
}

/**
 * Decodes one binary16 at b[off]: returns [number, next offset]. Throws a ProtocolError
 * short_data (fewer than 2 bytes) or bad_value (a NaN other than 0x7e00: one number, one encoding).
 * @param {Uint8Array} b
 * @param {number} off
 * @returns {[number, number]}
 */
export function consumeFloat16(b, off = 0) {
  if (b.length - off < 2) throw encodingError('short_data', off, `float16 needs 2 bytes, ${b.length - off} left`);
  const h = b[off] | (b[off + 1] << 8);
  if (!validFloat16(h)) throw encodingError('bad_value', off, `float16 NaN 0x${h.toString(16)} (only 0x7e00)`);
  return [float16FromBits(h), off + 2];
}

const U64_MAX = (1n << 64n) - 1n;

/**
 * Appends v (a safe integer or a bigint in 0..2⁶⁴−1) as unsigned LEB128.
 * @param {Uint8Array | null} dst
 * @param {number | bigint} v
 * @returns {Uint8Array}
 */
export function appendUvarint(dst, v) {
  /** @type {number[]} */
  const bytes = [];
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) {
    while (v >= 0x80) {
      bytes.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    bytes.push(v);
  } else {
    let u = BigInt(v);
    if (u < 0n || u > U64_MAX) throw new RangeError(`uvarint ${v} outside 0..2^64-1`);
    while (u >= 0x80n) {
      bytes.push(Number(u & 0x7fn) | 0x80);
      u >>= 7n;
    }
    bytes.push(Number(u));
  }
  return grow(dst, bytes.length, (out, o) => out.set(bytes, o));
}

/**
 * Length of the unsigned LEB128 at b[off], checked as Go's ConsumeUvarint: throws short_data when b
 * ends inside it, bad_value when longer than needed or above 2⁶⁴−1.
 * @param {Uint8Array} b
 * @param {number} off
 */
function uvarintLen(b, off) {
  const n = Math.min(b.length - off, MAX_VARINT_LEN);
  for (let i = 0; i < n; i++) {
    const c = b[off + i];
    if (i === MAX_VARINT_LEN - 1 && c > 1) throw encodingError('bad_value', off, 'varint above 2^64-1');
    if (c < 0x80) {
      if (c === 0 && i > 0) throw encodingError('bad_value', off, 'varint longer than needed');
      return i + 1;
    }
  }
  if (b.length - off >= MAX_VARINT_LEN) throw encodingError('bad_value', off, `varint longer than ${MAX_VARINT_LEN} bytes`);
  throw encodingError('short_data', off, `varint cut after ${b.length - off} bytes`);
}

/**
 * Decodes one unsigned LEB128 at b[off]: returns [bigint, next offset] (errors as Go's
 * ConsumeUvarint: short_data, bad_value).
 * @param {Uint8Array} b
 * @param {number} off
 * @returns {[bigint, number]}
 */
export function consumeUvarint(b, off = 0) {
  const n = uvarintLen(b, off);
  let v = 0n;
  for (let i = n - 1; i >= 0; i--) v = (v << 7n) | BigInt(b[off + i] & 0x7f);
  return [v, off + n];
}

/**
 * Appends v (a safe integer or a bigint in −2⁶³..2⁶³−1) zigzag-mapped, as unsigned LEB128.
 * @param {Uint8Array | null} dst
 * @param {number | bigint} v
 * @returns {Uint8Array}
 */
export function appendVarint(dst, v) {
  // 2|v| must stay a safe integer on the number path.
  if (typeof v === 'number' && Number.isSafeInteger(v) && Math.abs(v) <= 2 ** 52) return appendUvarint(dst, v >= 0 ? 2 * v : -2 * v - 1);
  const x = BigInt(v);
  if (x < -(1n << 63n) || x >= 1n << 63n) throw new RangeError(`varint ${v} outside int64`);
  return appendUvarint(dst, x >= 0n ? x << 1n : (-x << 1n) - 1n);
}

/**
 * Decodes one zigzag LEB128 at b[off]: returns [bigint, next offset] (errors as consumeUvarint).
 * @param {Uint8Array} b
 * @param {number} off
 * @returns {[bigint, number]}
 */
export function consumeVarint(b, off = 0) {
  const [u, next] = consumeUvarint(b, off);
  return [(u & 1n) === 0n ? u >> 1n : -(u >> 1n) - 1n, next];
}

/**
 * Length of the value of encoding e at b[off], every number in it checked (Go's Encoding.scan):
 * throws ProtocolError short_data or bad_value.
 * @param {Encoding} e
 * @param {Uint8Array} b
 * @param {number} off
 */
function scanEncoded(e, b, off) {
  const n = e.count;
  switch (e.kind) {
    case 'quantized': {
      const w = encodingWidth(e);
      if (b.length - off < n * w) throw encodingError('short_data', off, `${n} quantized numbers need ${n * w} bytes`);
      const steps = quantizedSteps(e);
      for (let k = 0; k < n; k++) {
        if (uintLE(b, off + k * w, w) > steps) throw encodingError('bad_value', off + k * w, `quantized index above ${steps}`);
      }
      return n * w;
    }
    case 'float16':
      if (b.length - off < 2 * n) throw encodingError('short_data', off, `${n} float16 need ${2 * n} bytes`);
      for (let k = 0; k < n; k++) {
        if (!validFloat16(b[off + 2 * k] | (b[off + 2 * k + 1] << 8))) throw encodingError('bad_value', off + 2 * k, 'float16 NaN other than 0x7e00');
      }
      return 2 * n;
    default: {
      let o = off;
      for (let k = 0; k < n; k++) o += uvarintLen(b, o);
      return o - off;
    }
  }
}

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
    /** @type {ReadonlyArray<Property>} */
    this.properties = Object.freeze(s.properties.map((p) => {
      const encoding = p.encoding ? /** @type {Encoding} */ (validateEncoding(p.encoding)) : null; // SchemaTable checked it
      const size = encoding ? encodingWidth(encoding) * encoding.count : p.size ?? 0;
      return Object.freeze({ name: p.name ?? '', component: p.component, size, encoding });
    }));
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
    if (p.size > 0 ? v.length !== p.size : v.length > MAX_VALUE_SIZE) return false;
    if (!p.encoding) return true;
    try {
      return scanEncoded(p.encoding, v, 0) === v.length;
    } catch {
      return false;
    }
  }

  /**
   * Reports whether property i's values carry a u16 length prefix on the wire (raw, variable).
   * @param {number} i
   */
  prefixed(i) {
    const p = this.properties[i];
    return p.size === 0 && !p.encoding;
  }

  /**
   * Checks that v is a valid value for property i (see isValidValue), as Go's CheckValue: returns
   * true, or throws a SchemaError (code value_size, or bad_value for a number its encoding never
   * writes) naming the property.
   * @param {number} i
   * @param {Uint8Array} v
   * @returns {true}
   */
  checkValue(i, v) {
    if (this.isValidValue(i, v)) return true;
    const p = this.properties[i];
    const got = v instanceof Uint8Array ? `${v.length} bytes` : typeof v;
    if (p === undefined) throw new SchemaError(`schema: value_size: ${this.name} has no property ${i}`, 'value_size');
    if (p.encoding && v instanceof Uint8Array && (p.size === 0 || v.length === p.size)) {
      let code = 'value_size';
      let detail = `holds more than its ${p.encoding.count} numbers`;
      try {
        scanEncoded(p.encoding, v, 0);
      } catch (err) {
        const e = /** @type {ProtocolError} */ (err);
        if (e.code === 'bad_value') code = 'bad_value';
        detail = e.message;
      }
      throw new SchemaError(`schema: ${code}: ${this.name}.${p.name}: ${detail}`, code);
    }
    throw new SchemaError(`schema: value_size: ${this.name}.${p.name} wants ${p.size > 0 ? p.size : `at most ${MAX_VALUE_SIZE}`} bytes, got ${got}`, 'value_size');
  }

  /**
   * Returns the wire size of value v of property i.
   * @param {number} i
   * @param {Uint8Array} v
   * @returns {number}
   */
  valueSize(i, v) {
    return this.prefixed(i) ? 2 + v.length : v.length;
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
    if (this.prefixed(i)) {
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
      if (this.prefixed(i)) {
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
   * ProtocolError (mask_out_of_range, value_size, short_data, trailing_data or bad_value; offset in data)
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
   * Reads the wire form of property i's value at data[off] (every number checked, as Go's
   * ConsumeValue): returns [value, next offset], the value aliasing data. Throws a ProtocolError
   * (short_data, value_size, bad_value).
   * @param {number} i
   * @param {Uint8Array} data
   * @param {number} off
   * @returns {[Uint8Array, number]}
   */
  consumeValue(i, data, off) {
    const p = this.properties[i];
    let n = p.size;
    if (p.encoding) {
      n = scanEncoded(p.encoding, data, off);
    } else if (n === 0) {
      if (data.length - off < 2) throw valueError('short_data', off, `${this.name}.${p.name} length at offset ${off}`);
      n = data[off] | (data[off + 1] << 8);
      if (n > MAX_VALUE_SIZE) throw valueError('value_size', off, `${this.name}.${p.name} has ${n} bytes`);
      off += 2;
    }
    if (data.length - off < n) {
      throw valueError('short_data', off, `${this.name}.${p.name} needs ${n} bytes at offset ${off}, ${data.length - off} left`);
    }
    return [data.subarray(off, off + n), off + n];
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
      // Every number of an encoded value is checked: the replica keeps only valid values.
      const [v, next] = this.consumeValue(i, data, off);
      if (fn) fn(i, v);
      off = next;
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
        if (p.encoding) {
          const e = validateEncoding(p.encoding);
          if (typeof e === 'string') throw new SchemaError(`schema: invalid schema: ${s.name}.${p.name}: ${e}`);
          const want = encodingWidth(e) * e.count;
          if ((size !== 0 && size !== want) || want > MAX_VALUE_SIZE) {
            throw new SchemaError(`schema: invalid schema: ${s.name}.${p.name} has size ${size}, its ${e.kind} encoding ${want}`);
          }
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
   * property component u32 and size u32 (little-endian). A property with an encoding has bit 31
   * set in its size word, followed by kind u32 and count u32, and for a quantized one the float64
   * bits of min, max and step (u64 LE each). Names do not count.
   * @returns {bigint}
   */
  computeFingerprint() {
    const schemas = [...this.#schemas.values()].sort((a, b) => a.id - b.id); // in the order of ids
    let n = 0;
    for (const s of schemas) {
      n += 8;
      for (const p of s.properties) n += 8 + (p.encoding ? 8 + (p.encoding.kind === 'quantized' ? 24 : 0) : 0);
    }
    const b = new Uint8Array(n);
    const dv = new DataView(b.buffer);
    let o = 0;
    for (const s of schemas) {
      dv.setUint32(o, s.id, true);
      dv.setUint32(o + 4, s.properties.length, true);
      o += 8;
      for (const p of s.properties) {
        dv.setUint32(o, p.component, true);
        const e = p.encoding;
        dv.setUint32(o + 4, e ? (p.size | 0x80000000) >>> 0 : p.size, true);
        o += 8;
        if (!e) continue;
        dv.setUint32(o, KIND_NUMBER[e.kind], true);
        dv.setUint32(o + 4, e.count, true);
        o += 8;
        if (e.kind === 'quantized') {
          dv.setFloat64(o, e.min, true);
          dv.setFloat64(o + 8, e.max, true);
          dv.setFloat64(o + 16, e.step, true);
          o += 24;
        }
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

// Deltas (Go's crdt/schema/delta.go): a numeric property's value as its difference from a
// baseline the receiver holds, one zigzag LEB128 per number, for DeltaUpdates.

/** Largest value (bytes, as stored) that serves as a baseline; larger values travel whole. */
export const MAX_DELTA_VALUE = 32;

/**
 * Reports whether p's values may travel as differences: an encoded property, or raw bytes of a
 * fixed size of 1, 2, 4 or 8 (one little-endian unsigned integer).
 * @param {Property} p
 */
export function deltaCapable(p) {
  return p.encoding !== null || p.size === 1 || p.size === 2 || p.size === 4 || p.size === 8;
}

const M64 = (1n << 64n) - 1n;

/**
 * Reads the numbers of value v of p as the integers a delta works on (quantized index, float16
 * bits, uvarint, varint as int64 bits modulo 2⁶⁴, raw integer). v must be a valid value of p.
 * @param {Property} p
 * @param {Uint8Array} v
 * @returns {bigint[]}
 */
function deltaNumbers(p, v) {
  const e = p.encoding;
  const out = [];
  if (e === null) {
    let x = 0n;
    for (let k = p.size - 1; k >= 0; k--) x = (x << 8n) | BigInt(v[k]);
    return [x];
  }
  let off = 0;
  for (let k = 0; k < e.count; k++) {
    if (e.kind === 'quantized') {
      const w = encodingWidth(e);
      out.push(BigInt(uintLE(v, off, w)));
      off += w;
    } else if (e.kind === 'float16') {
      out.push(BigInt(v[off] | (v[off + 1] << 8)));
      off += 2;
    } else {
      const [u, next] = consumeUvarint(v, off);
      off = next;
      out.push(e.kind === 'varint' ? ((u & 1n) === 0n ? u >> 1n : -(u >> 1n) - 1n) & M64 : u);
    }
  }
  return out;
}

/**
 * The difference from base to v, two valid values of the delta-capable property p, as Go's
 * AppendDelta writes it.
 * @param {Property} p
 * @param {Uint8Array} base
 * @param {Uint8Array} v
 * @returns {Uint8Array}
 */
export function appendDelta(p, base, v) {
  const b = deltaNumbers(p, base);
  const x = deltaNumbers(p, v);
  /** @type {Uint8Array} */
  let out = new Uint8Array(0);
  const bits = p.encoding === null ? 8 * p.size : 64;
  for (let k = 0; k < b.length; k++) {
    out = appendVarint(out, BigInt.asIntN(bits, x[k] - b[k]));
  }
  return out;
}

/**
 * Applies the difference at d[off] to base, a valid value of the delta-capable property p: returns
 * [value, next offset]. Throws a ProtocolError short_data (d ends inside it) or bad_value (a varint
 * Go's AppendVarint does not write, or a result outside what p holds), as Go's ApplyDelta.
 * @param {Property} p
 * @param {Uint8Array} base
 * @param {Uint8Array} d
 * @param {number} off
 * @returns {[Uint8Array, number]}
 */
export function applyDelta(p, base, d, off = 0) {
  const b = deltaNumbers(p, base);
  const e = p.encoding;
  /** @type {number[]} */
  const bytes = [];
  const le = (/** @type {bigint} */ x, /** @type {number} */ w) => {
    for (let k = 0; k < w; k++) {
      bytes.push(Number(x & 0xffn));
      x >>= 8n;
    }
  };
  for (let k = 0; k < b.length; k++) {
    const at = off;
    const [delta, next] = consumeVarint(d, off);
    off = next;
    const x = b[k] + delta;
    if (e === null) {
      const lim = 1n << BigInt(8 * p.size - 1);
      if (p.size < 8 && (delta < -lim || delta >= lim)) throw encodingError('bad_value', at, `${p.size}-byte delta ${delta} beyond ±${lim}`);
      le(BigInt.asUintN(8 * p.size, x), p.size);
    } else if (e.kind === 'quantized') {
      if (x < 0n || x > BigInt(quantizedSteps(e))) throw encodingError('bad_value', at, `quantized delta ${delta} from index ${b[k]} leaves 0..${quantizedSteps(e)}`);
      le(x, encodingWidth(e));
    } else if (e.kind === 'float16') {
      if (x < 0n || x > 0xffffn || !validFloat16(Number(x))) throw encodingError('bad_value', at, `float16 delta ${delta} from ${b[k]}`);
      le(x, 2);
    } else if (e.kind === 'uvarint') {
      for (const c of appendUvarint(null, x & M64)) bytes.push(c);
    } else {
      for (const c of appendVarint(null, BigInt.asIntN(64, x))) bytes.push(c);
    }
  }
  return [Uint8Array.from(bytes), off];
}
