// @ts-check
// The demo world `tiles` as its clients see it (docs/protocol.md §11, "The demo world tiles"):
// 8 × 8 regions of 16 × 16 tiles of 1000 mm, its schemas (the same fingerprint as the Go world's),
// the codecs of its properties, and its inputs (walk, place a block, remove one). The rules run
// on the region hosts (Go); the page only sends inputs and draws.

import { SchemaTable, appendVarint, consumeVarint } from './schema.js';

export const WORLD = 'tiles';
/** A tile's side in mm. */
export const TILE = 1000;
/** Tiles along a region's side. */
export const REGION_TILES = 16;

export const SCHEMA_PLAYER = 1;
export const SCHEMA_BLOCK = 2;
export const PLAYER_POS = 0;
export const PLAYER_VEL = 1;
export const PLAYER_COLOR = 2;
export const PLAYER_NAME = 3;
export const PLAYER_OWNER = 4;
export const BLOCK_X = 0;
export const BLOCK_Y = 1;
export const BLOCK_KIND = 2;
/** Block kinds are 1–7. */
export const BLOCK_KINDS = 7;

/** The fastest walk the hosts apply, mm/s on each axis. */
export const MAX_SPEED = 4000;
/** A walking player's speed, mm/s. */
export const WALK_SPEED = 3000;
/** How far from its player (in tiles) a block may be placed or removed. */
export const REACH_TILES = 3;

/** Inputs (the data of an input Action). */
export const INPUT_WALK = 1;
export const INPUT_PLACE = 2;
export const INPUT_REMOVE = 3;

/** A world position or velocity: x, y as zigzag varints (Go's world.PosEncoding). */
export const XY_ENCODING = /** @type {const} */ ({ kind: 'varint', count: 2 });

/** @type {import('./schema.js').SchemaSpec[]} */
export const SCHEMAS = [
  { id: SCHEMA_PLAYER, name: 'player', properties: [
    { name: 'pos', component: 2100, encoding: XY_ENCODING },
    { name: 'vel', component: 2101, encoding: XY_ENCODING },
    { name: 'color', component: 2102, size: 4 },
    { name: 'name', component: 2103, size: 0 },
    { name: 'owner', component: 2104, size: 0 },
  ] },
  { id: SCHEMA_BLOCK, name: 'block', properties: [
    { name: 'x', component: 2200, size: 4 },
    { name: 'y', component: 2201, size: 4 },
    { name: 'kind', component: 2202, size: 1 },
  ] },
];

/** @type {SchemaTable | null} */
let tableCache = null;
/** The tiles world's schema table. */
export function schemas() {
  if (!tableCache) tableCache = new SchemaTable(SCHEMAS);
  return tableCache;
}

/** @typedef {{x: number, y: number}} XY */

/**
 * Encodes a position or velocity with XY_ENCODING.
 * @param {XY} v
 */
export function encodeXY(v) {
  return appendVarint(appendVarint(null, v.x | 0), v.y | 0);
}

/**
 * Decodes a position or velocity; a missing value or one that is not one is null.
 * @param {Uint8Array | undefined} b
 * @returns {XY | null}
 */
export function parseXY(b) {
  if (!b) return null;
  try {
    const [x, o] = consumeVarint(b, 0);
    const [y, end] = consumeVarint(b, o);
    if (end !== b.length || BigInt.asIntN(32, x) !== x || BigInt.asIntN(32, y) !== y) return null;
    return { x: Number(x), y: Number(y) };
  } catch {
    return null;
  }
}

/**
 * An int32 LE property (a block's tile coordinate); 0 when missing or malformed.
 * @param {Uint8Array | undefined} b
 */
export function i32(b) {
  if (!b || b.length !== 4) return 0;
  return new DataView(b.buffer, b.byteOffset, 4).getInt32(0, true);
}

/**
 * A walk input: velocity (mm/s) clamped to ±MAX_SPEED on each axis.
 * @param {XY} v
 */
export function walkInput(v) {
  const b = new Uint8Array(5);
  const dv = new DataView(b.buffer);
  const c = (/** @type {number} */ n) => Math.max(-MAX_SPEED, Math.min(MAX_SPEED, Math.round(n)));
  b[0] = INPUT_WALK;
  dv.setInt16(1, c(v.x), true);
  dv.setInt16(3, c(v.y), true);
  return b;
}

/**
 * A place input: a block of kind (1–7) on tile (tx, ty).
 * @param {number} tx
 * @param {number} ty
 * @param {number} kind
 */
export function placeInput(tx, ty, kind) {
  const b = new Uint8Array(10);
  const dv = new DataView(b.buffer);
  b[0] = INPUT_PLACE;
  dv.setInt32(1, tx, true);
  dv.setInt32(5, ty, true);
  b[9] = kind;
  return b;
}

/**
 * A remove input: the block on tile (tx, ty).
 * @param {number} tx
 * @param {number} ty
 */
export function removeInput(tx, ty) {
  const b = new Uint8Array(9);
  const dv = new DataView(b.buffer);
  b[0] = INPUT_REMOVE;
  dv.setInt32(1, tx, true);
  dv.setInt32(5, ty, true);
  return b;
}

/**
 * The velocity the keys ask for: WALK_SPEED along each pressed axis (diagonals as fast on each
 * axis: the host clamps per axis).
 * @param {{up: boolean, down: boolean, left: boolean, right: boolean}} k
 * @returns {XY}
 */
export function keysVelocity(k) {
  return {
    x: ((k.right ? 1 : 0) - (k.left ? 1 : 0)) * WALK_SPEED,
    y: ((k.down ? 1 : 0) - (k.up ? 1 : 0)) * WALK_SPEED,
  };
}

/**
 * The tile under world position p (mm).
 * @param {XY} p
 */
export function tileAt(p) {
  return { x: Math.floor(p.x / TILE), y: Math.floor(p.y / TILE) };
}

/**
 * Whether a player at world position p may place or remove a block on tile t (within REACH_TILES
 * tiles on each axis of the tile it stands on; the host checks the same).
 * @param {XY} p
 * @param {XY} t
 */
export function inReach(p, t) {
  const at = tileAt(p);
  return Math.abs(at.x - t.x) <= REACH_TILES && Math.abs(at.y - t.y) <= REACH_TILES;
}
