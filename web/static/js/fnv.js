// FNV-1a 64, as Concord hashes replica state (docs/protocol.md §3 "State hash") and schema
// tables. The 64-bit state is kept as two 32-bit halves so that hashing costs no BigInt per byte:
// h × 0x100000001b3 = h × 0x1b3 + (h << 40), and both parts are exact in doubles.

/** FNV-1a 64 offset basis, 0xcbf29ce484222325: the hash of no bytes. */
export const FNV_OFFSET = 0xcbf29ce484222325n;

/** FNV-1a 64 prime, 0x100000001b3. */
export const FNV_PRIME = 0x100000001b3n;

const OFFSET_HI = 0xcbf29ce4;
const OFFSET_LO = 0x84222325;
const TWO32 = 4294967296;

/**
 * Hashes bytes[start:end) into the running hash held in state[2i] (high 32 bits) and state[2i+1]
 * (low 32 bits). Several hashes can share one state array (one per bucket, say).
 * @param {Uint32Array} state pairs of (high, low) words
 * @param {number} i which pair
 * @param {Uint8Array} bytes
 * @param {number} [start]
 * @param {number} [end]
 */
export function fnvUpdate(state, i, bytes, start = 0, end = bytes.length) {
  let hi = state[2 * i];
  let lo = state[2 * i + 1];
  for (let k = start; k < end; k++) {
    lo = (lo ^ bytes[k]) >>> 0;
    const t = lo * 0x1b3; // < 2^41: exact
    const carry = Math.floor(t / TWO32);
    hi = (hi * 0x1b3 + carry + (lo << 8)) >>> 0; // lo << 8: the low word's share of h << 40
    lo = t >>> 0;
  }
  state[2 * i] = hi;
  state[2 * i + 1] = lo;
}

/**
 * Returns a state array of n running hashes, each at the offset basis (see fnvUpdate).
 * @param {number} n
 * @returns {Uint32Array}
 */
export function fnvStates(n) {
  const s = new Uint32Array(2 * n);
  for (let i = 0; i < n; i++) {
    s[2 * i] = OFFSET_HI;
    s[2 * i + 1] = OFFSET_LO;
  }
  return s;
}

/**
 * Returns running hash i of a state array as a BigInt.
 * @param {Uint32Array} state
 * @param {number} i
 * @returns {bigint}
 */
export function fnvValue(state, i) {
  return (BigInt(state[2 * i]) << 32n) | BigInt(state[2 * i + 1]);
}

/**
 * FNV-1a 64 of bytes, continuing from h (the offset basis by default).
 * @param {Uint8Array} bytes
 * @param {bigint} [h]
 * @returns {bigint}
 */
export function fnv1a64(bytes, h = FNV_OFFSET) {
  const s = new Uint32Array(2);
  s[0] = Number((h >> 32n) & 0xffffffffn);
  s[1] = Number(h & 0xffffffffn);
  fnvUpdate(s, 0, bytes);
  return fnvValue(s, 0);
}
