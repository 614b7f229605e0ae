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

/**
 * One region's copy of an avatar, as the merge sees it: the region (cell key) and entity, the
 * player it belongs to (its `owner` property), whether the player is resident in that region (the
 * copy is the one it writes), and when this client first saw the copy (a handover shows the
 * destination's copy before the source deletes its own, so the newer copy is the destination's).
 * @template T
 * @typedef {object} AvatarCopy
 * @property {string} region
 * @property {number} entity
 * @property {string} owner
 * @property {boolean} resident
 * @property {number} seen
 * @property {T} [value]
 */

/**
 * Merges the avatar copies of several regions into one per owner: the copy of the region the
 * owner is resident in, else the newest, else (equal) the lowest region key. Copies without an
 * owner are kept each on its own (keyed by region and entity). The result is sorted by owner.
 * @template T
 * @param {Iterable<AvatarCopy<T>>} copies
 * @returns {AvatarCopy<T>[]}
 */
export function mergeAvatars(copies) {
  /** @type {Map<string, AvatarCopy<T>>} */
  const best = new Map();
  for (const c of copies) {
    const key = c.owner || `\u0000${c.region}#${c.entity}`;
    const cur = best.get(key);
    if (!cur || better(c, cur)) best.set(key, c);
  }
  return [...best.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]);
}

/**
 * @template T
 * @param {AvatarCopy<T>} a
 * @param {AvatarCopy<T>} b
 */
function better(a, b) {
  if (a.resident !== b.resident) return a.resident;
  if (a.seen !== b.seen) return a.seen > b.seen;
  return a.region < b.region;
}

/**
 * ReplayQueue keeps a player's inputs until the region that holds its avatar acknowledges them, so
 * that a border crossing can replay the rest to the new region: push() numbers an input, ack(seq)
 * drops it and every earlier one, pending() lists the rest, oldest first. It holds at most max
 * inputs: past that the oldest are dropped (counted in dropped) — a player cut off for that long
 * has its newest intent kept, not its oldest.
 * @template T
 */
export class ReplayQueue {
  /** @param {number} [max] */
  constructor(max = 256) {
    this.max = Math.max(1, max);
    /** @type {{seq: number, input: T}[]} */
    this.q = [];
    this.next = 1;
    this.acked = 0;
    this.dropped = 0;
  }

  /**
   * Queues input and returns its sequence number (1, 2, …).
   * @param {T} input
   */
  push(input) {
    const seq = this.next++;
    this.q.push({ seq, input });
    if (this.q.length > this.max) {
      const n = this.q.length - this.max;
      this.q.splice(0, n);
      this.dropped += n;
    }
    return seq;
  }

  /**
   * Acknowledges every input up to seq; an old or unknown seq changes nothing.
   * @param {number} seq
   */
  ack(seq) {
    if (seq <= this.acked) return;
    this.acked = Math.min(seq, this.next - 1);
    let i = 0;
    while (i < this.q.length && this.q[i].seq <= this.acked) i++;
    if (i > 0) this.q.splice(0, i);
  }

  /** The inputs not yet acknowledged, oldest first. */
  pending() { return this.q.slice(); }

  get size() { return this.q.length; }
}
