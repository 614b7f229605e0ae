// @ts-check
// The pure parts of a world of regions (docs/protocol.md §11): the directory's shape, which region
// a position lies in and which regions a player sees from its own, the merge of the avatars that
// several regions hold into one per player, and the queue of a player's inputs that a border
// crossing replays to the new region. No network and no clock here: worldclient.js drives these
// with room clients, and web/test/regions.test.js checks them.
//
// Positions are world millimetres (int32, x right, y down); region (x, y) covers
// [x·regionSize, (x+1)·regionSize) × [y·regionSize, (y+1)·regionSize).

/**
 * A region of the directory: its grid cell, its room, the cluster node that hosts it ('' on a
 * single server or while unplaced) and whether a host runs it now.
 * @typedef {object} RegionEntry
 * @property {number} x
 * @property {number} y
 * @property {string} room
 * @property {string} node
 * @property {boolean} loaded
 */

/**
 * The directory of world W (GET /api/worlds/{W}): the grid, the region size in mm, the view
 * distance in regions, and the regions it lists (every region, or only the loaded ones).
 * @typedef {object} Directory
 * @property {string} world
 * @property {number} cols
 * @property {number} rows
 * @property {number} regionSize
 * @property {number} view
 * @property {RegionEntry[]} regions
 */

/** @typedef {{x: number, y: number}} Cell */

/** The largest grid side the client accepts from a directory (a bound on what it allocates). */
export const MAX_GRID = 1024;
/** The largest view distance the client follows: (2·4+1)² = 81 rooms at most. */
export const MAX_VIEW = 4;

/**
 * The room of region (x, y) of world: "W.x.y" (signaling admits any printable name up to 128 bytes).
 * @param {string} world
 * @param {number} x
 * @param {number} y
 */
export function roomName(world, x, y) {
  return `${world}.${x}.${y}`;
}

/**
 * The region a room of world names, or null for another world's room or a malformed name.
 * @param {string} world
 * @param {string} room
 * @returns {Cell | null}
 */
export function parseRoomName(world, room) {
  if (!room.startsWith(world + '.')) return null;
  const m = /^(\d{1,6})\.(\d{1,6})$/.exec(room.slice(world.length + 1));
  if (!m) return null;
  return { x: Number(m[1]), y: Number(m[2]) };
}

/**
 * A key for a region, for maps: "x,y".
 * @param {Cell} c
 */
export const cellKey = (c) => `${c.x},${c.y}`;

/**
 * Checks and normalises a directory answer: positive integer grid within MAX_GRID, a positive
 * region size whose world still fits int32 millimetres, a view within [0, MAX_VIEW] (default 1),
 * and regions inside the grid with string rooms (a missing room is W.x.y). Throws a TypeError
 * naming the field at fault.
 * @param {unknown} v
 * @returns {Directory}
 */
export function parseDirectory(v) {
  if (!v || typeof v !== 'object') throw new TypeError('directory: not an object');
  const d = /** @type {Record<string, unknown>} */ (v);
  /**
   * @param {string} name
   * @param {number} lo
   * @param {number} hi
   * @param {number} [dflt]
   */
  const int = (name, lo, hi, dflt) => {
    const x = d[name] === undefined ? dflt : d[name];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < lo || x > hi) throw new TypeError(`directory: ${name} is ${JSON.stringify(x)}, want an integer in [${lo}, ${hi}]`);
    return x;
  };
  if (typeof d.world !== 'string' || d.world === '') throw new TypeError('directory: world is not a name');
  const world = d.world;
  const cols = int('cols', 1, MAX_GRID);
  const rows = int('rows', 1, MAX_GRID);
  const regionSize = int('regionSize', 1, 0x7fffffff);
  if (cols * regionSize > 0x7fffffff || rows * regionSize > 0x7fffffff) throw new TypeError('directory: the world does not fit int32 millimetres');
  const view = int('view', 0, MAX_VIEW, 1);
  const list = d.regions === undefined || d.regions === null ? [] : d.regions;
  if (!Array.isArray(list)) throw new TypeError('directory: regions is not a list');
  /** @type {RegionEntry[]} */
  const regions = [];
  for (const r of list) {
    if (!r || typeof r !== 'object') throw new TypeError('directory: a region is not an object');
    const { x, y, room, node, loaded } = /** @type {Record<string, unknown>} */ (r);
    if (typeof x !== 'number' || typeof y !== 'number' || !Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= cols || y >= rows) {
      throw new TypeError(`directory: region ${JSON.stringify(x)},${JSON.stringify(y)} is outside the grid`);
    }
    regions.push({
      x, y,
      room: typeof room === 'string' && room ? room : roomName(world, x, y),
      node: typeof node === 'string' ? node : '',
      loaded: loaded === true,
    });
  }
  return { world, cols, rows, regionSize, view, regions };
}

/**
 * The region position p lies in, or null outside the world.
 * @param {{cols: number, rows: number, regionSize: number}} g
 * @param {{x: number, y: number}} p world millimetres
 * @returns {Cell | null}
 */
export function regionAt(g, p) {
  const x = Math.floor(p.x / g.regionSize);
  const y = Math.floor(p.y / g.regionSize);
  if (!(x >= 0 && y >= 0 && x < g.cols && y < g.rows)) return null;
  return { x, y };
}

/**
 * The regions within view distance of region c (Chebyshev distance ≤ view, clipped to the grid),
 * c first, then by distance, then row-major: the rooms a player resident in c follows.
 * @param {{cols: number, rows: number}} g
 * @param {Cell} c
 * @param {number} view
 * @returns {Cell[]}
 */
export function regionsInView(g, c, view) {
  view = Math.max(0, Math.min(MAX_VIEW, Math.floor(view)));
  /** @type {(Cell & {d: number})[]} */
  const out = [];
  for (let y = Math.max(0, c.y - view); y <= Math.min(g.rows - 1, c.y + view); y++) {
    for (let x = Math.max(0, c.x - view); x <= Math.min(g.cols - 1, c.x + view); x++) {
      out.push({ x, y, d: Math.max(Math.abs(x - c.x), Math.abs(y - c.y)) });
    }
  }
  out.sort((a, b) => a.d - b.d || a.y - b.y || a.x - b.x);
  return out.map(({ x, y }) => ({ x, y }));
}

/**
 * The world millimetres of region c's corner (its local origin).
 * @param {{regionSize: number}} g
 * @param {Cell} c
 */
export function regionOrigin(g, c) {
  return { x: c.x * g.regionSize, y: c.y * g.regionSize };
}

/**
 * Which rooms to join and leave to follow resident region c: `join` are the cells in view that
 * `followed` (cell keys) lacks, `leave` the followed ones out of view.
 * @param {{cols: number, rows: number}} g
 * @param {Cell} c
 * @param {number} view
 * @param {Iterable<string>} followed
 * @returns {{want: Cell[], join: Cell[], leave: string[]}}
 */
export function followPlan(g, c, view, followed) {
  const want = regionsInView(g, c, view);
  const have = new Set(followed);
  const wantKeys = new Set(want.map(cellKey));
  return {
    want,
    join: want.filter((w) => !have.has(cellKey(w))),
    leave: [...have].filter((k) => !wantKeys.has(k)),
  };
}

/** The world's application messages (docs/protocol.md §11 "World messages"). */
export const MSG_RESIDENT = 250;
export const MSG_ACK = 251;
/** The TRNP Action type of a player's input: seq u32 LE | the app's data. */
export const ACTION_INPUT = 0x7f000001;
/** The most inputs a client keeps unacknowledged; one more is refused locally. */
export const MAX_PENDING_INPUTS = 256;
/** The largest app data of an input (MaxAction − 4). */
export const MAX_INPUT_DATA = (4 << 10) - 4;

/**
 * A `resident` message: the player is resident in region (x, y) with avatar generation gen, and its
 * inputs up to ack are applied. null for a malformed payload.
 * @param {Uint8Array} b
 * @returns {{x: number, y: number, gen: number, ack: number} | null}
 */
export function parseResident(b) {
  if (b.length !== 12) return null;
  const dv = new DataView(b.buffer, b.byteOffset, b.length);
  return { x: dv.getUint16(0, true), y: dv.getUint16(2, true), gen: dv.getUint32(4, true), ack: dv.getUint32(8, true) };
}

/**
 * Encodes a `resident` message (for tests and tools).
 * @param {{x: number, y: number, gen: number, ack: number}} m
 */
export function encodeResident(m) {
  const b = new Uint8Array(12);
  const dv = new DataView(b.buffer);
  dv.setUint16(0, m.x, true);
  dv.setUint16(2, m.y, true);
  dv.setUint32(4, m.gen >>> 0, true);
  dv.setUint32(8, m.ack >>> 0, true);
  return b;
}

/** How long the resident region's host may say nothing of the player before the silence rule (residentRule). */
export const RESIDENT_SILENCE_MS = 5000;

/**
 * What a world client does with a `resident` word (docs/protocol.md §11 "World messages" and
 * "Residence silence"; the same rule as Go world.residentRule, shared as the vectors of
 * testdata/world/resident_rule.json). The client is resident in `res` (null: nowhere yet, gen 0)
 * with generation `gen` and inputs acknowledged up to `ack`; `hinted`: it followed a generation-0
 * word already; `silent`: the resident region's host has said nothing of the player (no word
 * naming it at gen or newer, no ack) for RESIDENT_SILENCE_MS. The host of region `fromKey` names
 * region `to` with m.gen and m.ack.
 *
 * A word is taken only with a newer generation (the same one naming the resident region: its ack)
 * from the named region's own host (it holds the avatar) or the resident region's (a handover's
 * source, a restarted host that no longer holds the player); a third region's host read the
 * residence record: its region is followed (redirect), and its own host says the rest. An older
 * word was true before the newest one taken, never after: dropped. Generation 0 (a host that knows
 * no generation): followed once, before the player is resident. Only the named region's own host
 * renumbers the inputs (its ack below the client's: the world forgot the sequence).
 *
 * Silent: the generation held may be newer than any host's (a whole cluster's restart lost or
 * rewrote the record), and dropping every word would strand the player for ever; a word dropped
 * by the rule above is then taken from the named region's own host whatever its generation, and
 * followed from anyone else. While the resident host speaks, an older host never takes the player.
 * @param {{res: Cell | null, gen: number, ack: number, hinted: boolean, silent: boolean}} st
 * @param {string} fromKey the cell key of the region whose host said it
 * @param {Cell} to
 * @param {{gen: number, ack: number}} m
 * @returns {{word: 'drop' | 'hint' | 'redirect' | 'ack' | 'take', renumber: boolean}}
 */
export function residentRule(st, fromKey, to, m) {
  const toKey = cellKey(to);
  const resKey = st.res ? cellKey(st.res) : '';
  const own = fromKey === toKey;
  const heard = residentRuleHeard(st, resKey, fromKey, toKey, m);
  if (heard.word !== 'drop' || !st.silent || st.gen === 0) return heard;
  if (own && m.gen > 0) return { word: 'take', renumber: m.ack < st.ack };
  return { word: 'redirect', renumber: false };
}

/**
 * residentRule while the resident region's host speaks.
 * @param {{gen: number, ack: number, hinted: boolean}} st
 * @param {string} resKey
 * @param {string} fromKey
 * @param {string} toKey
 * @param {{gen: number, ack: number}} m
 * @returns {{word: 'drop' | 'hint' | 'redirect' | 'ack' | 'take', renumber: boolean}}
 */
function residentRuleHeard(st, resKey, fromKey, toKey, m) {
  if (m.gen === 0) return { word: st.gen === 0 && !st.hinted ? 'hint' : 'drop', renumber: false };
  if (m.gen < st.gen || (m.gen === st.gen && toKey !== resKey)) return { word: 'drop', renumber: false };
  const renumber = fromKey === toKey && m.ack < st.ack;
  if (m.gen === st.gen) return { word: 'ack', renumber };
  if (fromKey !== toKey && fromKey !== resKey) return { word: 'redirect', renumber: false };
  return { word: 'take', renumber };
}

/**
 * An `ack` message's sequence number, or null for a malformed payload.
 * @param {Uint8Array} b
 */
export function parseAck(b) {
  if (b.length !== 4) return null;
  return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
}

/**
 * An input Action's data: seq u32 LE, then the app's data.
 * @param {number} seq
 * @param {Uint8Array} data
 */
export function encodeInput(seq, data) {
  const b = new Uint8Array(4 + data.length);
  new DataView(b.buffer).setUint32(0, seq >>> 0, true);
  b.set(data, 4);
  return b;
}

/**
 * An avatar's handover generation: its creation data, a u32 LE (0 when it is not one).
 * @param {Uint8Array | undefined} creation
 */
export function generationOf(creation) {
  if (!creation || creation.length !== 4) return 0;
  return new DataView(creation.buffer, creation.byteOffset, 4).getUint32(0, true);
}

/**
 * One region's copy of an avatar, as the merge sees it: the room that holds it and the entity, the
 * player it belongs to (its `owner` property) and its handover generation (one more at each
 * handover: the copy of the region the player is resident in has the highest).
 * @template T
 * @typedef {object} AvatarCopy
 * @property {string} room
 * @property {number} entity
 * @property {string} owner
 * @property {number} gen
 * @property {T} [value]
 */

/**
 * Merges the avatar copies of several regions into one per owner: the copy with the highest
 * generation — the region the player is resident in, which holds its copy before the source of a
 * handover lets go of its own — and for equal generations (which honest hosts never produce) the
 * one of the lowest room name. Copies without an owner are kept each on its own. The result is
 * sorted by owner.
 * @template T
 * @param {Iterable<AvatarCopy<T>>} copies
 * @returns {AvatarCopy<T>[]}
 */
export function mergeAvatars(copies) {
  /** @type {Map<string, AvatarCopy<T>>} */
  const best = new Map();
  for (const c of copies) {
    const key = c.owner || `\u0000${c.room}#${c.entity}`;
    const cur = best.get(key);
    if (!cur || c.gen > cur.gen || (c.gen === cur.gen && (c.room < cur.room || (c.room === cur.room && c.entity < cur.entity)))) best.set(key, c);
  }
  return [...best.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]);
}

/**
 * ReplayQueue keeps a player's inputs until the region it is resident in acknowledges them, so
 * that after a handover the rest can be sent again to the new region: push() numbers an input
 * (1, 2, …), ack(seq) drops it and every earlier one, above(seq) lists the ones after seq, oldest
 * first. It holds at most max inputs: one more is refused (push returns 0) — the host has not
 * acknowledged anything for that long, and the player's intent must not pile up.
 * @template T
 */
export class ReplayQueue {
  /** @param {number} [max] */
  constructor(max = MAX_PENDING_INPUTS) {
    this.max = Math.max(1, max);
    /** @type {{seq: number, input: T}[]} */
    this.q = [];
    this.next = 1;
    this.acked = 0;
    this.refused = 0;
  }

  /**
   * Queues input and returns its sequence number, or 0 when the queue is full.
   * @param {T} input
   */
  push(input) {
    if (this.q.length >= this.max) {
      this.refused++;
      return 0;
    }
    const seq = this.next++;
    this.q.push({ seq, input });
    return seq;
  }

  /**
   * Acknowledges every input up to seq; an old seq changes nothing, one past the last input
   * acknowledges what there is (a host never acknowledges inputs it was not sent).
   * @param {number} seq
   */
  ack(seq) {
    if (seq <= this.acked) return;
    this.acked = Math.min(seq, this.next - 1);
    let i = 0;
    while (i < this.q.length && this.q[i].seq <= this.acked) i++;
    if (i > 0) this.q.splice(0, i);
  }

  /**
   * Continues the numbering after seq when a host has applied inputs up to seq that this queue
   * never numbered: the player's earlier client (a tab before its reload) sent them, and the host
   * applies only the next number. The inputs this queue sent (up to sent) are taken as applied —
   * never twice —, the ones it did not are numbered again from seq + 1, in order. Returns whether
   * anything changed.
   * @param {number} seq
   * @param {number} [sent]
   */
  rebase(seq, sent = 0) {
    if (seq < this.next) return false;
    this.q = this.q.filter((it) => it.seq > sent);
    this.renumber(seq);
    return true;
  }

  /**
   * Numbers every waiting input anew from seq + 1, in order, when the host forgot the sequence
   * (the world restarted and restored the player from its saved data, acknowledging less than it
   * had): what it had not acknowledged, it may not have applied.
   * @param {number} seq
   */
  renumber(seq) {
    this.acked = seq;
    this.next = seq + 1;
    for (const it of this.q) it.seq = this.next++;
  }

  /**
   * The unacknowledged inputs after seq, oldest first.
   * @param {number} seq
   */
  above(seq) { return this.q.filter((it) => it.seq > seq); }

  /** The unacknowledged inputs, oldest first. */
  pending() { return this.q.slice(); }

  get size() { return this.q.length; }
}
