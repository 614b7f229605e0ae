// Deltas against acknowledged values, member side (Go's peer/delta.go; docs/protocol.md §2.10).
// A member asks for them with an Ack after its Hello; its host then numbers every datagram it
// sends it (DeltaUpdates.seq) and may send a delta-capable property as its difference from a
// value an earlier datagram carried, which the member acknowledged. The member keeps, per
// (entity, property), the values of the DELTA_RING highest seqs it received, and acknowledges the
// seqs it received, at most once per network interval. A browser host sends whole values only
// (PackedUpdates or EntityUpdates): it never asks for, nor sends, deltas.

import { MAX_DELTA_VALUE, applyDelta, deltaCapable } from './schema.js';

/**
 * Values kept per (entity, property): Go's deltaRxRingSize. The host builds only on its last 4,
 * so a datagram reordered behind up to 4 later ones still finds its baseline.
 */
export const DELTA_RING = 8;
/** How often at most a member sends an Ack: Go's ackInterval. */
export const ACK_MS = 100;

const M64 = (1n << 64n) - 1n;

/**
 * One rebuilt value of an update: v null when its baseline was missing.
 * @typedef {{i: number, v: Uint8Array | null, delta: boolean}} Rebuilt
 */

/** A member's delta state for one link to its host. */
export class DeltaRx {
  /** @param {unknown} link the host link this state belongs to */
  constructor(link) {
    this.link = link;
    this.highest = 0n; // the highest seq received (0: none)
    this.good = 0n; // bit i: seq highest−i received, and every value in it rebuilt and kept
    this.spoiled = 0n; // a seq whose datagram held a value this member could not rebuild or keep
    /** @type {{highest: bigint, received: bigint} | null} the Ack sent last, at ackAt (ms) */
    this.last = null;
    this.ackAt = -Infinity;
    /** @type {Map<number, {e: number, rings: ({seq: bigint, v: Uint8Array}[])[]}>} by entity number */
    this.ents = new Map();
  }

  /**
   * Marks seq s received, unless its datagram is spoiled.
   * @param {bigint} s
   */
  received(s) {
    if (s > this.highest) {
      const d = s - this.highest;
      this.good = d >= 64n ? 0n : (this.good << d) & M64;
      this.highest = s;
    }
    const d = this.highest - s;
    if (d < 64n && s !== this.spoiled) this.good |= 1n << d;
  }

  /**
   * Withdraws seq s from what the member acknowledges.
   * @param {bigint} s
   */
  spoil(s) {
    this.spoiled = s;
    if (s <= this.highest && this.highest - s < 64n) this.good &= ~(1n << (this.highest - s));
  }

  /**
   * The Ack to send (the newest good seq and the 64 before it), or null when nothing changed
   * since the last one.
   * @returns {{highest: bigint, received: bigint} | null}
   */
  pendingAck() {
    if (this.good === 0n) return null;
    let z = 0n;
    while (((this.good >> z) & 1n) === 0n) z++;
    const a = { highest: this.highest - z, received: this.good >> (z + 1n) };
    if (this.last && this.last.highest === a.highest && this.last.received === a.received) return null;
    this.last = a;
    return a;
  }

  /**
   * The rings of entity e (made, or made anew for another version of its number).
   * @param {number} e
   * @param {number} props
   */
  rings(e, props) {
    const n = e & 0xffff;
    let de = this.ents.get(n);
    if (!de || de.e !== e || de.rings.length !== props) {
      de = { e, rings: Array.from({ length: props }, () => []) };
      this.ents.set(n, de);
    }
    return de;
  }

  /** @param {number} n an entity number the member no longer follows */
  forget(n) {
    this.ents.delete(n);
  }
}

/**
 * Records v as carried by seq in ring, keeping the DELTA_RING highest seqs (values larger than
 * MAX_DELTA_VALUE are not kept).
 * @param {{seq: bigint, v: Uint8Array}[]} ring
 * @param {bigint} seq
 * @param {Uint8Array} v
 */
export function putRing(ring, seq, v) {
  if (v.length > MAX_DELTA_VALUE) return;
  const same = ring.findIndex((x) => x.seq === seq);
  if (same >= 0) {
    ring[same] = { seq, v: v.slice() };
    return;
  }
  if (ring.length < DELTA_RING) {
    ring.push({ seq, v: v.slice() });
    return;
  }
  let low = 0;
  for (let k = 1; k < ring.length; k++) if (ring[k].seq < ring[low].seq) low = k;
  if (ring[low].seq > seq) return;
  ring[low] = { seq, v: v.slice() };
}

/**
 * Reads one update of a DeltaUpdates numbered seq (Go's deltaRx.rebuild): per property in the
 * mask, a baseline distance (delta-capable properties only; 0: whole) then the whole value or its
 * difference from the value datagram seq−distance carried. Returns the values, null for one
 * whose baseline is not kept; throws (a ProtocolError) when the data does not read as the schema
 * says: drop the update.
 * @param {import('./schema.js').Schema} s
 * @param {{rings: ({seq: bigint, v: Uint8Array}[])[]}} de
 * @param {{mask: number, data: Uint8Array}} u
 * @param {bigint} seq
 * @returns {Rebuilt[]}
 */
export function rebuild(s, de, u, seq) {
  const data = u.data;
  let off = 0;
  /** @type {Rebuilt[]} */
  const out = [];
  for (let i = 0; i < s.properties.length; i++) {
    if (Math.floor(u.mask / 2 ** i) % 2 !== 1) continue;
    const p = s.properties[i];
    let ago = 0n;
    if (deltaCapable(p)) {
      const [v, next] = readUvarint(data, off);
      ago = v;
      off = next;
    }
    if (ago === 0n) {
      const [v, next] = s.consumeValue(i, data, off);
      out.push({ i, v, delta: false });
      off = next;
      continue;
    }
    const base = ago < seq ? de.rings[i].find((x) => x.seq === seq - ago) : undefined;
    if (!base) {
      for (let k = 0; k < (p.encoding ? p.encoding.count : 1); k++) off = readUvarint(data, off)[1];
      out.push({ i, v: null, delta: true });
      continue;
    }
    const [v, next] = applyDelta(p, base.v, data, off);
    out.push({ i, v, delta: true });
    off = next;
  }
  if (off !== data.length) throw new RangeError(`delta update has ${data.length - off} bytes after its values`);
  return out;
}

/**
 * A shortest-form unsigned LEB128 at b[off]: [value, next offset]; throws on anything else.
 * @param {Uint8Array} b
 * @param {number} off
 * @returns {[bigint, number]}
 */
function readUvarint(b, off) {
  let v = 0n;
  for (let i = 0; i < 10 && off + i < b.length; i++) {
    const c = b[off + i];
    if (i === 9 && c > 1) break;
    v |= BigInt(c & 0x7f) << BigInt(7 * i);
    if (c < 0x80) {
      if (c === 0 && i > 0) break;
      return [v, off + i + 1];
    }
  }
  throw new RangeError('bad varint in delta update');
}
