// @ts-check
// Chat and cursors, hosted by a browser tab: the first tab in the room hosts it, and when it
// leaves another tab takes over with the chat log intact (it is part of the replicated world).
//
// State:
//   member (one per tab, its avatar, written by that tab): cursor, name
//   room   (the room entity):                            the log, an ADR-117 append set (LOG)
// A tab appends its line to the room's log itself; the host's allowAppend admits it only under
// the sender's own name, so no tab can speak as someone else. "typing…" is not state: it is an
// application message (MSG_TYPING) every tab sends to everyone, and forgets after TYPING_MS.
import { SchemaTable, ROOM_ENTITY, EVERYONE } from '/concord/js/index.js';

export const SCHEMA_MEMBER = 1;
export const SCHEMA_ROOM = 2;
export const MEMBER_CURSOR = 0;
export const MEMBER_NAME = 1;
/** The room entity's append set of lines. */
export const LOG = 2000;
/** Application message: 1 = this tab is typing, 0 = it stopped. */
export const MSG_TYPING = 200;
export const TYPING_MS = 3000;
export const MAX_TEXT = 200; // bytes of one line's text

export const schemas = new SchemaTable([
  { id: SCHEMA_MEMBER, name: 'member', properties: [
    { name: 'cursor', component: 1024, size: 4 },
    { name: 'name', component: 1025, size: 0 },
  ] },
  { id: SCHEMA_ROOM, name: 'room', properties: [{ name: 'title', component: 1027, size: 0 }] },
]);

/** @typedef {import('/concord/js/index.js').World} World */
/** @typedef {{from: string, text: string, id: string}} Line */

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
 * One line of the log, or null for a value that is not one.
 * @param {Uint8Array} v
 * @returns {Line | null}
 */
function parseLine(v) {
  try {
    const l = JSON.parse(dec.decode(v));
    return l && typeof l.from === 'string' && typeof l.text === 'string' && typeof l.id === 'string' ? l : null;
  } catch {
    return null;
  }
}

/**
 * The log, oldest first: the append set keeps the newest 128 lines, in Lamport order.
 * @param {World} w
 * @returns {Line[]}
 */
export function readLog(w) {
  /** @type {Line[]} */
  const out = [];
  for (const v of w.values(ROOM_ENTITY, LOG)) {
    const l = parseLine(v);
    if (l) out.push(l);
  }
  return out;
}

/** @param {string} s @param {number} max bytes */
function clip(s, max) {
  let b = enc.encode(s);
  if (b.length <= max) return s;
  b = b.subarray(0, max);
  return dec.decode(b).replace(/\uFFFD$/, ''); // a cut character decodes as U+FFFD
}

/** The name member p's avatar carries (the host gave it), or '' if it has none. @param {World} w @param {number} p */
function nameOf(w, p) {
  const av = w.avatarOf(p);
  return av === undefined ? '' : dec.decode(w.get(av, MEMBER_NAME) || new Uint8Array(0));
}

/** The App every tab runs. */
export class Chat {
  constructor() {
    /** @type {Map<number, number>} peer index → when its "typing" ends (performance.now()) */
    this.typing = new Map();
  }

  schemas() { return schemas; }

  /** @param {World} w */
  hostStart(w) {
    if (!w.exists(ROOM_ENTITY)) w.spawnRoom(SCHEMA_ROOM, new Uint8Array(0), enc.encode('chat'));
  }

  /** @param {World} w @param {{index: number, id: string}} m */
  spawnAvatar(w, m) {
    const name = enc.encode(clip(m.id.split('/')[0], 32));
    return w.spawn(SCHEMA_MEMBER, new Uint8Array(0), encodeCursor(500, 500), name);
  }

  tick() {}

  rpc() {}

  /**
   * Host: a member may append a line to the room's log under its own name only.
   * @param {World} w @param {number} from @param {number} e @param {number} c @param {Uint8Array} value
   */
  allowAppend(w, from, e, c, value) {
    const l = parseLine(value);
    return e === ROOM_ENTITY && c === LOG && l !== null && l.from === nameOf(w, from) && enc.encode(l.text).length <= MAX_TEXT;
  }

  /**
   * "typing…" from another tab (through the host, with its index).
   * @param {World} w @param {number} from @param {number} type @param {Uint8Array} data
   */
  message(w, from, type, data) {
    if (type !== MSG_TYPING) return;
    if (data[0] === 1) this.typing.set(from, performance.now() + TYPING_MS);
    else this.typing.delete(from);
  }

  /** The names of the other tabs typing now. @param {World} w */
  typingNames(w) {
    const t = performance.now();
    const names = [];
    for (const [p, until] of this.typing) {
      if (until < t || p === w.self) this.typing.delete(p);
      else names.push(nameOf(w, p) || `#${p}`);
    }
    return names;
  }

  /**
   * Tells every other tab that this one is typing (or stopped).
   * @param {import('/concord/js/index.js').Peer} peer @param {boolean} on
   */
  setTyping(peer, on) {
    return peer.do((w) => { w.sendMessage(EVERYONE, MSG_TYPING, new Uint8Array([on ? 1 : 0])); return true; });
  }

  /**
   * Says text: appends a line to the room's log under this tab's name.
   * @param {import('/concord/js/index.js').Peer} peer @param {string} text
   */
  say(peer, text) {
    text = clip(text.trim(), MAX_TEXT);
    if (!text) return;
    peer.do((w) => {
      const line = { from: nameOf(w, w.self), text, id: Math.random().toString(36).slice(2, 10) };
      w.append(ROOM_ENTITY, LOG, enc.encode(JSON.stringify(line)));
    });
  }
}
