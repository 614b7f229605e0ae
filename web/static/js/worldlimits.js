// @ts-check
// The world's bounds beyond properties (Go's peer/world_limits.go; docs/protocol.md §5,
// "Limits"; docs/security.md §5, "Append sets and world size"): the append sets one entity
// carries, the bytes one member's writes add to the world, and the world's size, below the
// checkpoint cap so that a room can always be checkpointed and a joiner takes its snapshot in
// seconds. Sizes are Replica.bytes: the world as an ADR-117 message stream.

import { MessageType as T } from './crdt.js';

/**
 * @typedef {object} WorldLimits
 * @property {number} appendSets append sets one entity may carry (default 16)
 * @property {number} memberBytes bytes one member's append requests and corrections may add (default 1 MiB)
 * @property {number} roomBytes the world's size past which no member's growing write nor append is admitted (default 6 MiB)
 */

/** @type {Readonly<WorldLimits>} */
export const DEFAULT_WORLD_LIMITS = Object.freeze({ appendSets: 16, memberBytes: 1 << 20, roomBytes: 6 << 20 });

/**
 * limits with every missing or non-positive field at its default.
 * @param {Partial<WorldLimits>} [limits]
 * @returns {WorldLimits}
 */
export function worldLimits(limits = {}) {
  /** @param {number | undefined} v @param {number} def */
  const pos = (v, def) => (v !== undefined && v > 0 ? v : def);
  return {
    appendSets: pos(limits.appendSets, DEFAULT_WORLD_LIMITS.appendSets),
    memberBytes: pos(limits.memberBytes, DEFAULT_WORLD_LIMITS.memberBytes),
    roomBytes: pos(limits.roomBytes, DEFAULT_WORLD_LIMITS.roomBytes),
  };
}

/**
 * A refusal: the reason label (as Go's peer.Refusal) and what to say.
 * @typedef {{reason: string, message: string}} WorldRefusal
 */

/**
 * Checks m against the append sets of its entity and the room's size (Go's appendBounds).
 * @param {import('./crdt.js').Replica} r
 * @param {WorldLimits} l
 * @param {import('./crdt.js').Message} m
 * @returns {WorldRefusal | null}
 */
export function appendBounds(r, l, m) {
  if (m.type === T.AppendValue) {
    const { n, has } = r.appendSets(m.entity, m.component);
    if (!has && n >= l.appendSets) return { reason: 'append_sets', message: `entity ${m.entity >>> 0} carries ${n} append sets, the limit` };
  }
  const g = r.growth(m);
  if (g > 0 && r.bytes + g > l.roomBytes) {
    return { reason: 'world_bytes', message: `world of ${r.bytes} bytes, ${g} more would pass the room's ${l.roomBytes}` };
  }
  return null;
}

/**
 * The admission rule of a member's write m that may grow the world r, whose writer's earlier
 * writes added used bytes (Go's admitWorld; testdata/peer/world_limits.json): the append sets of
 * its entity, then the room's size, then the member's budget. A write that does not grow the
 * world passes whatever the accounts say.
 * @param {import('./crdt.js').Replica} r
 * @param {WorldLimits} l
 * @param {number} used
 * @param {import('./crdt.js').Message} m
 * @returns {WorldRefusal | null}
 */
export function admitWorld(r, l, used, m) {
  const b = appendBounds(r, l, m);
  if (b) return b;
  const g = r.growth(m);
  if (g > 0 && used + g > l.memberBytes) {
    return { reason: 'member_world_bytes', message: `member's writes added ${used} bytes to the world, ${g} more would pass its ${l.memberBytes}` };
  }
  return null;
}
