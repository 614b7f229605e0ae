// @ts-check
// Chat and cursors, hosted by a browser tab: the first tab in the room hosts it, and when it
// leaves another tab takes over with the chat log intact (it is part of the replicated world).
//
// State, all in components (the grow-only APPEND of ADR-117 is not in the API yet, so the log is
// a bounded list the host rewrites):
//   member (one per tab, its avatar, written by that tab): cursor, name, typing
//   log    (the room entity, written by the host only):    the last MAX_LINES lines
// A tab sends a line to the host as RPC SAY; the host appends it under the sender's name, so no
// tab can write the log or speak as someone else.
import { SchemaTable, ROOM_ENTITY } from '/concord/js/index.js';

export const SCHEMA_MEMBER = 1;
export const SCHEMA_LOG = 2;
export const MEMBER_CURSOR = 0;
export const MEMBER_NAME = 1;
export const MEMBER_TYPING = 2;
export const LOG_LINES = 0;
export const RPC_SAY = 1;
export const MAX_LINES = 20;
export const MAX_TEXT = 200; // bytes of one line's text

export const schemas = new SchemaTable([
  { id: SCHEMA_MEMBER, name: 'member', properties: [
    { name: 'cursor', component: 1024, size: 4 },
    { name: 'name', component: 1025, size: 0 },
    { name: 'typing', component: 1026, size: 1 },
  ] },
  { id: SCHEMA_LOG, name: 'log', properties: [{ name: 'lines', component: 1027, size: 0 }] },
]);

/** @typedef {import('/concord/js/index.js').World} World */
/** @typedef {{from: string, text: string}} Line */

const enc = new TextEncoder();
const dec = new TextDecoder();

/** @param {number} x @param {number} y cursor position in thousandths of the page's width/height */
export function encodeCursor(x, y) {
  const b = new Uint8Array(4);
  const dv = new DataView(b.buffer);
  dv.setUint16(0, Math.min(Math.max(Math.round(x), 0), 1000), true);
  dv.setUint16(2, Math.min(Math.max(Math.round(y), 0), 1000), true);
  return b;
}

/** @param {Uint8Array | undefined} b */
export function decodeCursor(b) {
  if (!b || b.length !== 4) return { x: 0, y: 0 };
  const dv = new DataView(b.buffer, b.byteOffset, 4);
  return { x: dv.getUint16(0, true), y: dv.getUint16(2, true) };
}

/**
 * The log as the host wrote it (JSON, at most MAX_LINES lines); anything else reads as empty.
 * @param {World} w
 * @returns {Line[]}
 */
export function readLog(w) {
  try {
    const v = JSON.parse(dec.decode(w.get(ROOM_ENTITY, LOG_LINES) || new Uint8Array(0)));
    return Array.isArray(v) ? v.filter((l) => l && typeof l.from === 'string' && typeof l.text === 'string').slice(-MAX_LINES) : [];
  } catch {
    return [];
  }
}

/** @param {string} s @param {number} max bytes */
function clip(s, max) {
  let b = enc.encode(s);
  if (b.length <= max) return s;
  b = b.subarray(0, max);
  return dec.decode(b).replace(/\uFFFD$/, ''); // a cut character decodes as U+FFFD
}

/** The App every tab runs. */
export class Chat {
  schemas() { return schemas; }

  /** @param {World} w */
  hostStart(w) {
    if (!w.exists(ROOM_ENTITY)) w.spawnRoom(SCHEMA_LOG, new Uint8Array(0), enc.encode('[]'));
  }

  /** @param {World} w @param {{index: number, id: string}} m */
  spawnAvatar(w, m) {
    const name = enc.encode(clip(m.id.split('/')[0], 32));
    return w.spawn(SCHEMA_MEMBER, new Uint8Array(0), encodeCursor(500, 500), name, new Uint8Array([0]));
  }

  tick() {}

  /**
   * The host appends a member's line under its name (the name the host gave its avatar).
   * @param {World} w @param {number} from @param {number} type @param {Uint8Array} data
   */
  rpc(w, from, type, data) {
    if (!w.isHost || type !== RPC_SAY) return;
    this.append(w, from, dec.decode(data.subarray(0, MAX_TEXT)));
  }

  /** Host only: appends text said by member `from`, keeping the last MAX_LINES lines. @param {World} w @param {number} from @param {string} text */
  append(w, from, text) {
    text = clip(text.trim(), MAX_TEXT);
    if (!text) return;
    const av = w.avatarOf(from);
    const name = av ? dec.decode(w.get(av, MEMBER_NAME) || new Uint8Array(0)) : `#${from}`;
    const lines = [...readLog(w), { from: name, text }].slice(-MAX_LINES);
    w.set(ROOM_ENTITY, LOG_LINES, enc.encode(JSON.stringify(lines)));
  }

  /**
   * Says text: the host appends it itself, a member asks the host.
   * @param {import('/concord/js/index.js').Peer} peer @param {string} text
   */
  say(peer, text) {
    peer.do((w) => {
      if (w.isHost) this.append(w, w.self, text);
      else peer.sendRPC(RPC_SAY, enc.encode(clip(text, MAX_TEXT)));
    });
  }
}
