// Shared helpers of the node tests: hex, golden-vector loading, a seeded PRNG.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Repository root (web/test/../..). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Reads a JSON file relative to the repository root. */
export function readJSON(rel) {
  return JSON.parse(readFileSync(path.join(ROOT, rel), 'utf8'));
}

/** Lists the files of a directory relative to the repository root. */
export function listDir(rel) {
  return readdirSync(path.join(ROOT, rel)).sort();
}

/** Decodes lowercase or uppercase hex into bytes; throws on malformed hex. */
export function fromHex(h) {
  if (h.length % 2 !== 0 || /[^0-9a-fA-F]/.test(h)) throw new Error(`bad hex ${h.slice(0, 20)}`);
  const b = new Uint8Array(h.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(h.substr(2 * i, 2), 16);
  return b;
}

/** Encodes bytes as lowercase hex. */
export function toHex(b) {
  let s = '';
  for (let i = 0; i < b.length; i++) s += (b[i] < 16 ? '0' : '') + b[i].toString(16);
  return s;
}

/** Formats a u64 BigInt as 16 lowercase hex digits. */
export function hex16(v) {
  return v.toString(16).padStart(16, '0');
}

/**
 * A seeded PRNG (splitmix32 → mulberry-style): next() returns a u32, int(n) an integer in [0, n).
 */
export class Rng {
  constructor(seed) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }

  next() {
    let z = (this.s = (this.s + 0x9e3779b9) >>> 0);
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  }

  int(n) {
    return this.next() % n;
  }

  bytes(n) {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = this.next() & 0xff;
    return b;
  }

  shuffle(a) {
    for (let i = a.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  }
}
