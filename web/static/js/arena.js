// @ts-check
// The arena demo world, ported from internal/demo/arena/arena.go: the same schemas, component ids,
// fixed-point millimetre maths and physics constants, so that a browser host and a Go host run the
// same game. Instead of the Go bot's script, the local player drives its avatar with the keyboard
// and grabs boxes with the mouse.
//
// Positions and velocities are integer millimetres (per second): a position quantized to 1 mm over
// [−32768, 32767] (2 bytes a coordinate), a velocity as two zigzag varints, as in Go.
// hypot is Go's algorithm (max·sqrt(1+(min/max)²)) so that both compute the same pushes; Math.pow
// may differ from Go's math.Pow in the last bit, which only matters for a host's own physics,
// never for convergence (members take the host's values).

import { SchemaTable, quantized, appendQuantized, consumeQuantized, appendVarint, consumeVarint } from './schema.js';
import { ROOM_ENTITY } from './world.js';

export const SCHEMA_AVATAR = 1;
export const SCHEMA_BOX = 2;
export const SCHEMA_ROOM = 3;

export const AVATAR_POS = 0;
export const AVATAR_COLOR = 1;
export const AVATAR_NAME = 2;
export const BOX_POS = 0;
export const BOX_VEL = 1;
export const ROOM_SCORE = 0;
export const ROOM_GOALS = 1;

export const WIDTH = 20000;
export const HEIGHT = 12000;
export const GOAL_X = 19000;
export const BOX_RADIUS = 400;
export const AVATAR_RADIUS = 350;
const FRICTION_PER_SECOND = 0.25;
const REST_SPEED = 30;
const PUSH_SPEED = 2500;
export const AVATAR_SPEED = 3000;

/** A position: x, y in whole millimetres over [−32768, 32767], 2 bytes each (Go's arena.PosEncoding). */
export const POS_ENCODING = quantized(2, -32768, 32767, 1);
/** A velocity: vx, vy in mm/s as zigzag varints (Go's arena.VelEncoding). */
export const VEL_ENCODING = /** @type {const} */ ({ kind: 'varint', count: 2 });

/** @type {import('./schema.js').SchemaSpec[]} */
export const SCHEMAS = [
  { id: SCHEMA_AVATAR, name: 'avatar', properties: [
    { name: 'pos', component: 1100, encoding: POS_ENCODING },
    { name: 'color', component: 1101, size: 4 },
    { name: 'name', component: 1102, size: 0 },
  ] },
  { id: SCHEMA_BOX, name: 'box', properties: [
    { name: 'pos', component: 1200, encoding: POS_ENCODING },
    { name: 'vel', component: 1201, encoding: VEL_ENCODING },
  ] },
  { id: SCHEMA_ROOM, name: 'room', properties: [
    { name: 'score', component: 1300, size: 4 },
    { name: 'goals', component: 1301, size: 4 },
  ] },
];

/** @typedef {import('./world.js').World} World */
/** @typedef {{x: number, y: number}} Vec */

/** @type {SchemaTable | null} */
let tableCache = null;
/** The arena's schema table (the same fingerprint as arena.Schemas() in Go). */
export function schemas() {
  if (!tableCache) tableCache = new SchemaTable(SCHEMAS);
  return tableCache;
}

/**
 * Encodes position v with POS_ENCODING (each coordinate clamped to its range).
 * @param {Vec} v
 * @returns {Uint8Array}
 */
export function encodeVec(v) {
  return appendQuantized(appendQuantized(null, POS_ENCODING, v.x | 0), POS_ENCODING, v.y | 0);
}

/**
 * Decodes a position; a missing value or one that is not a position is the zero vector.
 * @param {Uint8Array | undefined} b
 * @returns {Vec}
 */
export function parseVec(b) {
  if (!b) return { x: 0, y: 0 };
  try {
    const [x, o] = consumeQuantized(b, 0, POS_ENCODING);
    const [y, end] = consumeQuantized(b, o, POS_ENCODING);
    return end === b.length ? { x, y } : { x: 0, y: 0 };
  } catch {
    return { x: 0, y: 0 };
  }
}

/**
 * Encodes velocity v with VEL_ENCODING.
 * @param {Vec} v
 * @returns {Uint8Array}
 */
export function encodeVel(v) {
  return appendVarint(appendVarint(null, v.x | 0), v.y | 0);
}

/**
 * Decodes a velocity; a missing value or one that is not a velocity is the zero vector.
 * @param {Uint8Array | undefined} b
 * @returns {Vec}
 */
export function parseVel(b) {
  if (!b) return { x: 0, y: 0 };
  try {
    const [x, o] = consumeVarint(b, 0);
    const [y, end] = consumeVarint(b, o);
    if (end !== b.length || BigInt.asIntN(32, x) !== x || BigInt.asIntN(32, y) !== y) return { x: 0, y: 0 };
    return { x: Number(x), y: Number(y) };
  } catch {
    return { x: 0, y: 0 };
  }
}

/**
 * Decodes a u32; a missing value or one of the wrong size is 0.
 * @param {Uint8Array | undefined} b
 */
export function u32(b) {
  if (!b || b.length !== 4) return 0;
  return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
}

/**
 * @param {number} v
 */
export function encodeU32(v) {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, true);
  return b;
}

/**
 * Go's math.Hypot on amd64: max·sqrt(1+(min/max)²).
 * @param {number} p
 * @param {number} q
 */
export function hypot(p, q) {
  p = Math.abs(p);
  q = Math.abs(q);
  if (p === Infinity || q === Infinity) return Infinity;
  if (Number.isNaN(p) || Number.isNaN(q)) return NaN;
  if (p < q) [p, q] = [q, p];
  if (p === 0) return 0;
  q = q / p;
  return p * Math.sqrt(1 + q * q);
}

/** Go's int32(f) for the values the arena produces: truncation toward zero. */
/** @param {number} f */
const i32 = (f) => Math.trunc(f) | 0;
/**
 * @param {number} v
 * @param {number} lo
 * @param {number} hi
 */
const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * @param {World} w
 * @param {number} e
 */
export function avatarName(w, e) {
  const b = w.get(e, AVATAR_NAME);
  return b ? dec.decode(b) : '';
}

/**
 * Game is the arena as a peer app (the same hooks as peer.App in Go): schemas, hostStart,
 * spawnAvatar, tick, rpc. The local player's input arrives through setKeys and the pointer methods.
 */
export class Game {
  constructor({ boxes = 8 } = {}) {
    this.boxes = boxes;
    this.keys = { up: false, down: false, left: false, right: false };
    this.holding = 0; // the box the local player holds (or is asking for)
    this.heldFor = 0; // ms since the lock was asked for
    this.pointer = null; // {x, y} in mm while the mouse button is down
    this.grabOffset = { x: 0, y: 0 };
    this.pendingRelease = 0; // a box let go of before its lock was granted
    this.pendingFor = 0;
    /**
     * Each avatar's position at the host's previous physics step: only an avatar that moved since
     * pushes boxes, so a crowd standing still leaves the world at rest (as Go's Game.seen).
     * @type {Map<number, Vec>}
     */
    this.seen = new Map();
  }

  schemas() { return schemas(); }

  /**
   * Spawns the room and the boxes in a new room; after a migration the world is kept.
   * @param {World} w
   */
  hostStart(w) {
    if (!w.exists(ROOM_ENTITY)) w.spawnRoom(SCHEMA_ROOM, new Uint8Array(0), encodeU32(0), encodeU32(0));
    if (w.entitiesOf(SCHEMA_BOX).length > 0) return;
    for (let i = 0; i < this.boxes; i++) {
      const pos = { x: 3000 + (i % 4) * 3500, y: 3000 + (Math.floor(i / 4) % 3) * 3000 };
      w.spawn(SCHEMA_BOX, new Uint8Array(0), encodeVec(pos), encodeVel({ x: 0, y: 0 }));
    }
  }

  /**
   * Gives every member an avatar at a spot of its own (same formula as Go, int32 arithmetic).
   * @param {World} w
   * @param {import('./peer.js').MemberInfo} info
   */
  spawnAvatar(w, info) {
    const i = Number(info.index) | 0;
    const pos = { x: 1000 + ((i * 1700) % (WIDTH - 2000)), y: 1000 + ((i * 1100) % (HEIGHT - 2000)) };
    const color = new Uint8Array([(60 + ((i * 97) % 180)) & 255, (60 + ((i * 57) % 180)) & 255, (60 + ((i * 31) % 180)) & 255, 255]);
    let name = enc.encode(info.id || '');
    if (name.length > 64) name = name.subarray(0, 64);
    return w.spawn(SCHEMA_AVATAR, new Uint8Array(0), encodeVec(pos), color, name);
  }

  rpc() {}

  /**
   * Runs the local input everywhere and the physics on the host. dtMs is the tick's length.
   * @param {World} w
   * @param {number} dtMs
   */
  tick(w, dtMs) {
    if (!(dtMs > 0) || dtMs > 1000) dtMs = 50;
    this.input(w, dtMs);
    if (w.isHost) this.physics(w, dtMs);
  }

  /**
   * @param {Partial<Record<string, boolean>>} keys
   */
  setKeys(keys) { Object.assign(this.keys, keys); }

  /**
   * The mouse went down at pos (mm): grab the box under it, if any.
   * @param {World} w
   * @param {Vec} pos
   */
  pointerDown(w, pos) {
    this.pointer = pos;
    let best = 0;
    let bestD = BOX_RADIUS * 1.3;
    for (const e of w.entitiesOf(SCHEMA_BOX)) {
      const p = parseVec(w.get(e, BOX_POS));
      const d = hypot(p.x - pos.x, p.y - pos.y);
      if (d < bestD) { best = e; bestD = d; }
    }
    if (!best) return false;
    const p = parseVec(w.get(best, BOX_POS));
    this.grabOffset = { x: p.x - pos.x, y: p.y - pos.y };
    if (!w.isHost) {
      if (w.authority(best) !== w.host) return false; // someone else holds it
      try { w.requestLock(best); } catch { return false; }
    }
    this.holding = best;
    this.heldFor = 0;
    return true;
  }

  /**
   * @param {Vec} pos
   */
  pointerMove(pos) { if (this.pointer) this.pointer = pos; }

  /**
   * The mouse went up: let go of the box.
   * @param {World} w
   */
  pointerUp(w) {
    this.pointer = null;
    if (!this.holding) return;
    const e = this.holding;
    this.holding = 0;
    if (w.isHost || !w.exists(e)) return;
    if (w.authority(e) === w.self) {
      this.release(w, e);
    } else {
      // The grant is still on its way: hand it back when it arrives (a lock is never kept unused).
      this.pendingRelease = e;
      this.pendingFor = 0;
    }
  }

  /**
   * @param {World} w
   * @param {number} e
   */
  release(w, e) {
    w.set(e, BOX_VEL, encodeVel({ x: 0, y: 0 }));
    try { w.relinquish(e); } catch { /* the host is gone; the next host takes the lock back */ }
  }

  /**
   * @param {World} w
   * @param {number} dtMs
   */
  input(w, dtMs) {
    const me = w.avatarOf(w.self);
    if (me === undefined || !w.canWrite(me)) return;
    const k = this.keys;
    let dx = (k.right ? 1 : 0) - (k.left ? 1 : 0);
    let dy = (k.down ? 1 : 0) - (k.up ? 1 : 0);
    if (dx !== 0 || dy !== 0) {
      const pos = parseVec(w.get(me, AVATAR_POS));
      const step = AVATAR_SPEED * dtMs / 1000;
      const d = hypot(dx, dy);
      pos.x = clamp(pos.x + i32(dx / d * step), AVATAR_RADIUS, WIDTH - AVATAR_RADIUS);
      pos.y = clamp(pos.y + i32(dy / d * step), AVATAR_RADIUS, HEIGHT - AVATAR_RADIUS);
      w.set(me, AVATAR_POS, encodeVec(pos));
    }
    if (this.pendingRelease && !w.isHost) {
      const p = this.pendingRelease;
      this.pendingFor += dtMs;
      if (w.exists(p) && w.authority(p) === w.self) {
        this.release(w, p);
        this.pendingRelease = 0;
      } else if (this.pendingFor > 2000) {
        this.pendingRelease = 0;
      }
    }
    if (!this.holding) return;
    const e = this.holding;
    if (!w.exists(e)) { this.holding = 0; return; }
    if (!w.canWrite(e)) {
      this.heldFor += dtMs;
      if (this.heldFor > 1000) { // no grant yet: give up, and hand it back if it still comes
        this.pendingRelease = w.isHost ? 0 : e;
        this.pendingFor = 0;
        this.holding = 0;
      }
      return;
    }
    if (this.pointer) {
      const p = {
        x: clamp(this.pointer.x + this.grabOffset.x, BOX_RADIUS, WIDTH - BOX_RADIUS),
        y: clamp(this.pointer.y + this.grabOffset.y, BOX_RADIUS, HEIGHT - BOX_RADIUS),
      };
      w.set(e, BOX_POS, encodeVec(p));
      w.set(e, BOX_VEL, encodeVel({ x: 0, y: 0 }));
    }
  }

  /**
   * Moves free boxes, pushes boxes that moving avatars walk into, and scores goals (host only). An
   * avatar standing still pushes nothing: a room where nobody moves comes to rest.
   * @param {World} w
   * @param {number} dtMs
   */
  physics(w, dtMs) {
    const sec = dtMs / 1000;
    const keep = Math.pow(FRICTION_PER_SECOND, sec);
    /** @type {Vec[]} */
    const moving = [];
    /** @type {Map<number, Vec>} */
    const seen = new Map();
    for (const a of w.entitiesOf(SCHEMA_AVATAR)) {
      const apos = parseVec(w.get(a, AVATAR_POS));
      seen.set(a, apos);
      const last = this.seen.get(a);
      if (last && (last.x !== apos.x || last.y !== apos.y)) moving.push(apos);
    }
    this.seen = seen;
    for (const b of w.entitiesOf(SCHEMA_BOX)) {
      if (!w.canWrite(b) || b === this.holding) continue; // a member (or this host's player) holds it
      let pos = parseVec(w.get(b, BOX_POS));
      let vel = parseVel(w.get(b, BOX_VEL));
      for (const apos of moving) {
        const dx = (pos.x - apos.x) | 0;
        const dy = (pos.y - apos.y) | 0;
        const d = hypot(dx, dy);
        if (d < BOX_RADIUS + AVATAR_RADIUS && d > 0) vel = { x: i32(dx / d * PUSH_SPEED), y: i32(dy / d * PUSH_SPEED) };
      }
      if (vel.x === 0 && vel.y === 0) continue;
      pos.x = (pos.x + i32(vel.x * sec)) | 0;
      pos.y = (pos.y + i32(vel.y * sec)) | 0;
      vel = { x: i32(vel.x * keep), y: i32(vel.y * keep) };
      if (pos.x < BOX_RADIUS || pos.x > WIDTH - BOX_RADIUS) {
        vel.x = 0;
        pos.x = clamp(pos.x, BOX_RADIUS, WIDTH - BOX_RADIUS);
      }
      if (pos.y < BOX_RADIUS || pos.y > HEIGHT - BOX_RADIUS) {
        vel.y = 0;
        pos.y = clamp(pos.y, BOX_RADIUS, HEIGHT - BOX_RADIUS);
      }
      if (hypot(vel.x, vel.y) < REST_SPEED) vel = { x: 0, y: 0 };
      if (pos.x > GOAL_X) {
        this.score(w);
        pos = { x: WIDTH / 2, y: HEIGHT / 2 };
        vel = { x: 0, y: 0 };
      }
      w.set(b, BOX_POS, encodeVec(pos));
      w.set(b, BOX_VEL, encodeVel(vel));
    }
  }

  /**
   * @param {World} w
   */
  score(w) {
    const s = u32(w.get(ROOM_ENTITY, ROOM_SCORE));
    const n = u32(w.get(ROOM_ENTITY, ROOM_GOALS));
    w.set(ROOM_ENTITY, ROOM_SCORE, encodeU32(s + 10));
    w.set(ROOM_ENTITY, ROOM_GOALS, encodeU32(n + 1));
  }
}
