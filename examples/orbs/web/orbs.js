// @ts-check
// The orbs game in the browser: the same schema table as examples/orbs/orbs.go, and the same rules,
// so that this page can take over as host if the Go host goes away. Click the field to walk there.
import { Peer, SchemaTable, EVERYONE } from '/concord/js/index.js';

export const SCHEMA_ORB = 1;
export const SCHEMA_PLAYER = 2;
export const SCHEMA_SCORE = 3;
export const ORB_POS = 0;
export const PLAYER_POS = 0;
export const PLAYER_NAME = 1;
export const SCORE_PLAYER = 0;
export const SCORE_POINTS = 1;
export const WIDTH = 1000;
export const HEIGHT = 600;
export const REACH = 30;
/** The host's message to a player that took an orb: its points (u32 LE). */
export const MSG_SCORED = 200;
/** The host's message to everyone: member (u32 LE) cheers. */
export const MSG_CHEER = 201;
/** A player's Action to the host: cheer. */
export const ACTION_CHEER = 1;
const SPEED = 300;
const ORBS = 5;

// Must match orbs.go property for property: the room refuses a table with another fingerprint.
export const schemas = new SchemaTable([
  { id: SCHEMA_ORB, name: 'orb', properties: [{ name: 'pos', component: 1024, size: 4 }] },
  { id: SCHEMA_PLAYER, name: 'player', properties: [
    { name: 'pos', component: 1025, size: 4 },
    { name: 'name', component: 1026, size: 0 },
  ] },
  { id: SCHEMA_SCORE, name: 'score', properties: [
    { name: 'player', component: 1027, size: 4 },
    { name: 'points', component: 1028, size: 4 },
  ] },
]);

/** @typedef {{x: number, y: number}} Pos */
/** @typedef {import('/concord/js/index.js').World} World */

/** @param {Pos} p */
export function encodePos(p) {
  const b = new Uint8Array(4);
  const dv = new DataView(b.buffer);
  dv.setUint16(0, Math.min(Math.max(Math.round(p.x), 0), WIDTH), true);
  dv.setUint16(2, Math.min(Math.max(Math.round(p.y), 0), HEIGHT), true);
  return b;
}

/** @param {Uint8Array | undefined} b @returns {Pos} */
export function decodePos(b) {
  if (!b || b.length !== 4) return { x: 0, y: 0 };
  const dv = new DataView(b.buffer, b.byteOffset, 4);
  return { x: dv.getUint16(0, true), y: dv.getUint16(2, true) };
}

/** @param {number} v */
const u32 = (v) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v >>> 0, true); return b; };
/** @param {Uint8Array | undefined} b */
const readU32 = (b) => (b && b.length === 4 ? new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true) : 0);
/** @param {Pos} a @param {Pos} b */
const dist2 = (a, b) => (a.x - b.x) ** 2 + (a.y - b.y) ** 2;

/** orbs.go's spot: a position picked by a seed, in uint32 arithmetic. @param {number} seed */
function spot(seed) {
  seed >>>= 0;
  seed = (seed ^ (seed << 13)) >>> 0;
  seed = (seed ^ (seed >>> 17)) >>> 0;
  seed = (seed ^ (seed << 5)) >>> 0;
  return { x: 40 + (seed % (WIDTH - 80)), y: 40 + (Math.floor(seed / WIDTH) % (HEIGHT - 80)) };
}

/** @param {World} w @param {number} p */
export function scoreOf(w, p) {
  for (const sc of w.entitiesOf(SCHEMA_SCORE)) if (readU32(w.get(sc, SCORE_PLAYER)) === p) return sc;
  return 0;
}

/** @param {World} w @param {number} p */
export const points = (w, p) => { const sc = scoreOf(w, p); return sc ? readU32(w.get(sc, SCORE_POINTS)) : 0; };

/** The App: the host's rules (as in Go) and, on a member, walking toward the last click. */
export class Orbs {
  constructor() {
    /** @type {Pos | null} */
    this.target = null;
    /** @type {{from: number, type: number, value: number}[]} the application messages heard, newest last */
    this.heard = [];
  }

  /**
   * An application message: MSG_SCORED (our points) or MSG_CHEER (who cheers).
   * @param {World} w @param {number} from @param {number} type @param {Uint8Array} data
   */
  message(w, from, type, data) {
    this.heard.push({ from, type, value: readU32(data) });
    if (this.heard.length > 32) this.heard.shift();
  }

  /**
   * An Action, on the host: a player cheers, everyone hears who.
   * @param {World} w @param {number} from @param {number} type
   */
  action(w, from, type) {
    if (w.isHost && type === ACTION_CHEER) w.sendMessage(EVERYONE, MSG_CHEER, u32(from));
  }

  schemas() { return schemas; }

  /** @param {World} w */
  hostStart(w) {
    for (let i = w.entitiesOf(SCHEMA_ORB).length; i < ORBS; i++) w.spawn(SCHEMA_ORB, new Uint8Array(0), encodePos(spot(Math.imul(i, 7919) + 1)));
  }

  /** @param {World} w @param {{index: number, id: string}} m */
  spawnAvatar(w, m) {
    const name = new TextEncoder().encode(m.id.split('/')[0]).subarray(0, 64);
    const e = w.spawn(SCHEMA_PLAYER, new Uint8Array(0), encodePos({ x: 50 + ((m.index * 97) % (WIDTH - 100)), y: HEIGHT / 2 }), name);
    if (!scoreOf(w, m.index)) w.spawn(SCHEMA_SCORE, new Uint8Array(0), u32(m.index), u32(0));
    return e;
  }

  rpc() {}

  /** @param {World} w @param {number} dtMs */
  tick(w, dtMs) {
    const self = w.avatarOf(w.self);
    if (self && this.target) {
      const at = decodePos(w.get(self, PLAYER_POS));
      const step = Math.floor(SPEED * Math.min(dtMs, 1000) / 1000);
      /** @param {number} d */
      const clamp = (d) => Math.min(Math.max(d, -step), step);
      const next = { x: at.x + clamp(this.target.x - at.x), y: at.y + clamp(this.target.y - at.y) };
      if (next.x !== at.x || next.y !== at.y) w.set(self, PLAYER_POS, encodePos(next));
    }
    if (!w.isHost) return;
    for (const pl of w.entitiesOf(SCHEMA_PLAYER)) {
      const at = decodePos(w.get(pl, PLAYER_POS));
      for (const orb of w.entitiesOf(SCHEMA_ORB)) {
        if (dist2(at, decodePos(w.get(orb, ORB_POS))) > REACH * REACH) continue;
        const sc = scoreOf(w, w.authority(pl));
        if (!sc) continue;
        const p = readU32(w.get(sc, SCORE_POINTS)) + 1;
        w.set(sc, SCORE_POINTS, u32(p));
        w.set(orb, ORB_POS, encodePos(spot(Math.imul(orb & 0xffff, 31) + Math.imul(p, 7919))));
        const who = w.authority(pl);
        if (who !== w.self) w.sendMessage(who, MSG_SCORED, u32(p));
      }
    }
  }
}
