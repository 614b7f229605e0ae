// @ts-check
// FNV-1a 64 and the set hash Concord builds on it (docs/protocol.md §3 "State hash"). Schema
// tables are fingerprinted with plain FNV-1a 64; the replica state hash and the bucket digests are
// sums modulo 2⁶⁴ of element hashes, one per canonical message: fmix64(FNV-1a 64(message bytes)).
//
// No BigInt is touched per byte or per message: a 64-bit value is kept as two 32-bit halves in a
// Uint32Array, the pair at (2i, 2i + 1) holding (high, low) words. FNV multiplies by its prime as
// h × 0x100000001b3 = h × 0x1b3 + (h << 40), both parts exact in doubles. fmix64 multiplies two
// 64-bit values modulo 2⁶⁴: low × low needs its full 64-bit product, taken in 16-bit limbs whose
// partial products are exact doubles; the cross terms only reach the high word, where Math.imul's
// low 32 bits are all that count. Sums and differences carry or borrow between the halves.

/** FNV-1a 64 offset basis, 0xcbf29ce484222325: the hash of no bytes. */
export const FNV_OFFSET = 0xcbf29ce484222325n;

/** FNV-1a 64 prime, 0x100000001b3. */
export const FNV_PRIME = 0x100000001b3n;

const OFFSET_HI = 0xcbf29ce4; // FNV_OFFSET as halves
const OFFSET_LO = 0x84222325;
const TWO32 = 4294967296;

// MurmurHash3 fmix64 multipliers 0xff51afd7ed558ccd and 0xc4ceb9fe1a85ec53, as halves.
const M1_HI = 0xff51afd7;
const M1_LO = 0xed558ccd;
const M2_HI = 0xc4ceb9fe;
const M2_LO = 0x1a85ec53;

// The result of the pair helpers below (two numbers cannot be returned without an allocation).
let rHi = 0;
let rLo = 0;

/**
 * FNV-1a 64 of bytes[start:end) continued from (hi, lo); the result in (rHi, rLo).
 * @param {number} hi
 * @param {number} lo
 * @param {Uint8Array} bytes
 * @param {number} start
 * @param {number} end
 */
function fnvRun(hi, lo, bytes, start, end) {
  for (let k = start; k < end; k++) {
    lo = (lo ^ bytes[k]) >>> 0;
    const t = lo * 0x1b3; // < 2^41: exact
    const carry = (t / TWO32) | 0; // t / 2^32 < 512: truncation is floor
    hi = (hi * 0x1b3 + carry + (lo << 8)) >>> 0; // lo << 8: the low word's share of h << 40
    lo = t >>> 0;
  }
  rHi = hi;
  rLo = lo;
}

/**
 * (hi, lo) × (mHi, mLo) mod 2⁶⁴; the result in (rHi, rLo).
 * @param {number} hi
 * @param {number} lo
 * @param {number} mHi
 * @param {number} mLo
 */
function mul64(hi, lo, mHi, mLo) {
  const a0 = lo & 0xffff;
  const a1 = lo >>> 16;
  const b0 = mLo & 0xffff;
  const b1 = mLo >>> 16;
  const p00 = a0 * b0; // each partial product < 2^32: exact
  const mid = a1 * b0 + a0 * b1 + (p00 >>> 16); // < 2^34: exact
  const carry = a1 * b1 + Math.floor(mid / 65536); // the high word of lo × mLo (before mod 2^32)
  rHi = (carry + Math.imul(hi, mLo) + Math.imul(lo, mHi)) >>> 0;
  rLo = Math.imul(lo, mLo) >>> 0;
}

/**
 * MurmurHash3 fmix64 of (hi, lo); the result in (rHi, rLo). x >> 33 is hi >>> 1 in the low word.
 * @param {number} hi
 * @param {number} lo
 */
function fmixRun(hi, lo) {
  lo = (lo ^ (hi >>> 1)) >>> 0;
  mul64(hi, lo, M1_HI, M1_LO);
  hi = rHi;
  lo = (rLo ^ (hi >>> 1)) >>> 0;
  mul64(hi, lo, M2_HI, M2_LO);
  hi = rHi;
  rLo = (rLo ^ (hi >>> 1)) >>> 0;
}

/**
 * Returns the 64-bit pair i of a state array (a running hash, a sum) as a BigInt.
 * @param {Uint32Array} state
 * @param {number} i
 * @returns {bigint}
 */
export function u64Value(state, i) {
  return (BigInt(state[2 * i]) << 32n) | BigInt(state[2 * i + 1]);
}

/**
 * Splits a BigInt (taken mod 2⁶⁴) into (rHi, rLo).
 * @param {bigint} x
 */
function splitBig(x) {
  x = BigInt.asUintN(64, x);
  rHi = Number(x >> 32n);
  rLo = Number(x & 0xffffffffn);
}

/**
 * FNV-1a 64 of bytes, continuing from h (the offset basis by default).
 * @param {Uint8Array} bytes
 * @param {bigint} [h]
 * @returns {bigint}
 */
export function fnv1a64(bytes, h = FNV_OFFSET) {
  splitBig(h);
  fnvRun(rHi, rLo, bytes, 0, bytes.length);
  return (BigInt(rHi) << 32n) | BigInt(rLo);
}

/**
 * MurmurHash3's 64-bit finalizer: x ^= x >> 33; x *= 0xff51afd7ed558ccd; x ^= x >> 33;
 * x *= 0xc4ceb9fe1a85ec53; x ^= x >> 33 (mod 2⁶⁴). FNV-1a leaves its low bits a near-linear
 * function of the input, which a sum of hashes would keep; the finalizer mixes every bit into
 * every bit. This BigInt form is for tests and tools; the replica uses elementHashAdd.
 * @param {bigint} x taken mod 2⁶⁴
 * @returns {bigint}
 */
export function fmix64(x) {
  splitBig(x);
  fmixRun(rHi, rLo);
  return (BigInt(rHi) << 32n) | BigInt(rLo);
}

/**
 * Adds the element hash of bytes[start:end), fmix64(FNV-1a 64(bytes)), to pair i of sums
 * (mod 2⁶⁴). bytes[start:end) must be exactly one canonical message as the replica's export
 * writes it. Costs no allocation.
 * @param {Uint32Array} sums pairs of (high, low) words
 * @param {number} i which pair
 * @param {Uint8Array} bytes
 * @param {number} [start]
 * @param {number} [end]
 */
export function elementHashAdd(sums, i, bytes, start = 0, end = bytes.length) {
  fnvRun(OFFSET_HI, OFFSET_LO, bytes, start, end);
  fmixRun(rHi, rLo);
  addRun(sums, 2 * i, rHi, rLo);
}

/**
 * The element hash of one canonical message: fmix64(FNV-1a 64(bytes[start:end))).
 * @param {Uint8Array} bytes
 * @param {number} [start]
 * @param {number} [end]
 * @returns {bigint}
 */
export function elementHash(bytes, start = 0, end = bytes.length) {
  fnvRun(OFFSET_HI, OFFSET_LO, bytes, start, end);
  fmixRun(rHi, rLo);
  return (BigInt(rHi) << 32n) | BigInt(rLo);
}

/**
 * dst[k:k+2] += (hi, lo) mod 2⁶⁴.
 * @param {Uint32Array} dst
 * @param {number} k
 * @param {number} hi
 * @param {number} lo
 */
function addRun(dst, k, hi, lo) {
  const l = dst[k + 1] + lo; // < 2^33: exact
  const carry = l >= TWO32 ? 1 : 0;
  dst[k + 1] = l; // a Uint32Array store keeps l mod 2^32
  dst[k] = dst[k] + hi + carry;
}

/**
 * Adds pair j of src to pair i of dst, modulo 2⁶⁴.
 * @param {Uint32Array} dst
 * @param {number} i
 * @param {Uint32Array} src
 * @param {number} j
 */
export function u64Add(dst, i, src, j) {
  addRun(dst, 2 * i, src[2 * j], src[2 * j + 1]);
}

/**
 * Subtracts pair j of src from pair i of dst, modulo 2⁶⁴.
 * @param {Uint32Array} dst
 * @param {number} i
 * @param {Uint32Array} src
 * @param {number} j
 */
export function u64Sub(dst, i, src, j) {
  const l = dst[2 * i + 1] - src[2 * j + 1];
  const borrow = l < 0 ? 1 : 0;
  dst[2 * i + 1] = l; // stores l mod 2^32 (ToUint32 wraps negatives)
  dst[2 * i] = dst[2 * i] - src[2 * j] - borrow;
}

/**
 * Reports whether pair i of state is zero.
 * @param {Uint32Array} state
 * @param {number} i
 * @returns {boolean}
 */
export function u64IsZero(state, i) {
  return state[2 * i] === 0 && state[2 * i + 1] === 0;
}

// Whether a BigUint64Array stores its low word first in memory (every current browser and node).
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Returns the first n pairs of state as a new BigUint64Array, built through a 32-bit view of its
 * buffer rather than one BigInt per value.
 * @param {Uint32Array} state pairs of (high, low) words
 * @param {number} n
 * @returns {BigUint64Array}
 */
export function u64Array(state, n) {
  const out = new BigUint64Array(n);
  const w = new Uint32Array(out.buffer);
  const hi = LITTLE_ENDIAN ? 1 : 0;
  for (let i = 0; i < n; i++) {
    w[2 * i + hi] = state[2 * i];
    w[2 * i + 1 - hi] = state[2 * i + 1];
  }
  return out;
}
