// @ts-check
// A world client (docs/protocol.md §11 "Worlds"): a player in a world of regions instead of one
// room. It reads the world's directory, joins the room of the region it is resident in and the
// rooms of the regions within view distance (one room client, a Peer, per region; it asks the
// server to load a region before it joins its room, so that it is never elected a region's
// host), and shows one merged view of the entities of every followed region, each marked with its
// region and whether this player's inputs reach it, with one avatar per player (merged by the
// avatar's `owner`: the copy with the highest handover generation, which is the one of the region
// the player is resident in while a handover has two regions hold it).
//
// Where the player is resident is the region hosts' decision, never the client's: a host tells a
// member with the `resident` message, and a handover makes the destination say so (and the
// source name the destination). The client then emits `crossing`, sends the destination the
// inputs it has not acknowledged, joins the rooms that came into view and, after a grace, leaves
// those out of view. Inputs are TRNP Actions numbered by seq; the resident host acknowledges them,
// and the client keeps the rest (regions.js ReplayQueue), so that none is lost across a handover
// and none applied twice (the host drops a seq it has applied).
//
// The pure parts (region math, the merge, the queue, the message codecs) are regions.js.

import { Peer } from './peer.js';
import { Ev } from './world.js';
import { randomDevice } from './signaling.js';
import { now } from './loop.js';
import {
  parseDirectory, followPlan, cellKey, mergeAvatars, ReplayQueue, generationOf, parseResident, parseAck,
  encodeInput, roomName, residentRule, MSG_RESIDENT, MSG_ACK, ACTION_INPUT, MAX_INPUT_DATA, RESIDENT_SILENCE_MS,
} from './regions.js';

/** @typedef {import('./regions.js').Cell} Cell */
/** @typedef {import('./regions.js').Directory} Directory */
/** @typedef {import('./world.js').World} World */

/** How long a region out of view stays followed (walking along a border does not churn joins). */
export const LEAVE_GRACE_MS = 2000;
/**
 * An input unacknowledged this long is sent again from the host's ack + 1 (docs/protocol.md §11:
 * an Action sent before the host admitted the member is dropped, and so is every one after it).
 */
export const RESEND_MS = 500;
/** How often, and how many times, the client asks the server to load a region whose host went away. */
export const RELOAD_EVERY_MS = 1000;
export const RELOAD_TRIES = 60;
/** How long a region whose load or join failed waits before the client tries it again. */
export const RETRY_MS = 3000;
/** How long a redirected client follows the region it was redirected to without a word of its host. */
export const REDIRECT_MS = 15000;

/**
 * What a room client must offer the world client (a Peer does).
 * @typedef {object} RoomPeer
 * @property {() => Promise<unknown>} run
 * @property {() => void} stop
 * @property {World} world
 * @property {string} peerId
 * @property {<T>(fn: (w: World) => T) => T | undefined} do
 * @property {(fn: (ev: import('./world.js').WorldEvent) => void) => () => boolean} onEvent
 * @property {() => import('./status.js').PeerStatusInfo} status
 */

/**
 * What a WorldClient is made with. world names the world; schemas is its schema table (every
 * region runs the same); avatar names the avatar's schema id and the index of its `owner`
 * property. base is the HTTP origin of the directory (default: the page's), url the signaling
 * endpoint(s) as for a Peer; user; device (default: one random device for all the rooms, so that
 * the player is one "user/device" in every region); token or tokenProvider (called per room).
 * start is the region whose room the client joins first (default: the middle of the world): its
 * host tells the client where it is resident. makePeer and load replace the Peer and the load
 * request (tests).
 * @typedef {object} WorldClientOptions
 * @property {string} world
 * @property {import('./schema.js').SchemaTable} schemas
 * @property {{schema: number, owner: number}} avatar
 * @property {string} [base]
 * @property {string | string[]} [url]
 * @property {string} [user]
 * @property {string} [device]
 * @property {string} [token]
 * @property {import('./peer.js').TokenProvider} [tokenProvider]
 * @property {'browser' | 'bot'} [kind]
 * @property {Cell} [start]
 * @property {number} [view] overrides the directory's view distance (at most regions.js MAX_VIEW)
 * @property {number} [pollMs] how often the client sends waiting inputs and retries (default 50)
 * @property {number} [leaveGraceMs] default LEAVE_GRACE_MS
 * @property {number} [resendMs] default RESEND_MS
 * @property {number} [retryMs] default RETRY_MS
 * @property {number} [redirectMs] default REDIRECT_MS
 * @property {number} [residentSilenceMs] default regions.js RESIDENT_SILENCE_MS (docs/protocol.md §11 "Residence silence")
 * @property {() => number} [now] the clock of the residence silence, ms (default loop.js now)
 * @property {number} [reloadEveryMs] default RELOAD_EVERY_MS
 * @property {typeof fetch} [fetch]
 * @property {import('./peer.js').LogFunc} [log]
 * @property {(opts: import('./peer.js').PeerOptions) => RoomPeer} [makePeer]
 * @property {(c: Cell) => Promise<void>} [load]
 * @property {Partial<import('./peer.js').PeerOptions>} [peerOptions] passed to every Peer
 */

/**
 * One followed region: its cell, room, role, room client, and its join's state.
 * @typedef {object} FollowedRegion
 * @property {Cell} cell
 * @property {string} key
 * @property {string} room
 * @property {'resident' | 'watcher'} role
 * @property {RoomPeer | null} peer
 * @property {'loading' | 'joining' | 'joined' | 'failed'} state
 * @property {string} error
 * @property {number} failedAt
 */

/**
 * An entity of the merged view: its region, entity id, schema id, and whether this player's
 * inputs reach it (it lies in the region the player is resident in).
 * @typedef {object} WorldEntity
 * @property {FollowedRegion} region
 * @property {World} world
 * @property {number} entity
 * @property {number} schema
 * @property {boolean} writable
 */

/**
 * What a WorldClient tells its listeners: a border crossing (from the old resident region to the
 * new one, with the number of inputs sent again to it), the regions it began and stopped
 * following, or a region it could not join.
 * @typedef {{kind: 'crossing', from: Cell | null, to: Cell, replayed: number}
 *   | {kind: 'follow', join: Cell[], leave: Cell[]}
 *   | {kind: 'error', region: Cell, error: string}} WorldClientEvent
 */

/**
 * Reads world W's directory (GET {base}/api/worlds/{W}) and checks its shape (regions.js
 * parseDirectory). credential (a join token or the admin key) goes as a bearer token.
 * @param {string} world
 * @param {{base?: string, fetch?: typeof fetch, credential?: string}} [opts]
 * @returns {Promise<Directory>}
 */
export async function fetchDirectory(world, opts = {}) {
  const f = opts.fetch || fetch;
  const res = await f(`${opts.base || ''}/api/worlds/${encodeURIComponent(world)}`, { cache: 'no-store', headers: bearer(opts.credential) });
  if (!res.ok) throw new Error(`GET /api/worlds/${world}: HTTP ${res.status}${res.status === 404 ? ' (no such world: is the server run with --world?)' : ''}`);
  return parseDirectory(await res.json());
}

/**
 * Asks the server to load region c of world (POST {base}/api/worlds/{W}/load?x=&y=): it answers
 * once the region's host hosts its room.
 * @param {string} world
 * @param {Cell} c
 * @param {{base?: string, fetch?: typeof fetch, credential?: string}} [opts]
 */
export async function loadRegion(world, c, opts = {}) {
  const f = opts.fetch || fetch;
  const res = await f(`${opts.base || ''}/api/worlds/${encodeURIComponent(world)}/load?x=${c.x}&y=${c.y}`, { method: 'POST', cache: 'no-store', headers: bearer(opts.credential) });
  if (!res.ok) throw new Error(`POST /api/worlds/${world}/load?x=${c.x}&y=${c.y}: HTTP ${res.status} ${(await res.text()).trim()}`);
}

/**
 * @param {string | undefined} credential
 * @returns {Record<string, string>}
 */
function bearer(credential) {
  return credential ? { Authorization: `Bearer ${credential}` } : {};
}

const dec = new TextDecoder();

/**
 * WorldClient: a player in a world of regions (see the file comment).
 */
export class WorldClient {
  /** @param {WorldClientOptions} opts */
  constructor(opts) {
    this.opts = opts;
    this.world = opts.world;
    this.device = opts.device || randomDevice();
    /** @type {Directory | null} */
    this.dir = null;
    /** @type {Map<string, FollowedRegion>} followed regions by cell key */
    this.regions = new Map();
    /** @type {Map<string, ReturnType<typeof setTimeout>>} regions out of view, left when their grace ends */
    this.leaving = new Map();
    /** @type {Cell | null} the region this player is resident in, as its hosts said */
    this.resident = null;
    /** The avatar generation of the newest `resident` message taken. */
    this.gen = 0;
    /** @type {{key: string, until: number} | null} a region a third host says the player is resident in, followed until its own host says so */
    this.redirect = null;
    /** A generation-0 word was followed already (residentRule's hint: once). */
    this.hinted = false;
    /**
     * The last word of the resident region's host that it holds the player (its `resident` at
     * this.gen or newer, its ack): the silence of residentRule counts from it.
     */
    this.heardAt = 0;
    /** @type {Map<string, {r: FollowedRegion, m: {x: number, y: number, gen: number, ack: number}}>} each region's latest word dropped since, heard again once the silence passes the bound */
    this.held = new Map();
    /** The last time the client joined a region's room again to be placed anew. */
    this.rejoinedAt = 0;
    /** "user/device" as the rooms know this player (the first room's peerId once joined). */
    this.self = opts.user ? `${opts.user}/${this.device}` : '';
    /** @type {ReplayQueue<{data: Uint8Array, sentAt: number}>} inputs not acknowledged yet */
    this.queue = new ReplayQueue();
    /** The last seq sent to the resident region's host. */
    this.sentUpTo = 0;
    this.crossings = 0;
    /** @type {Set<(ev: WorldClientEvent) => void>} */
    this.listeners = new Set();
    /** @type {ReturnType<typeof setInterval> | null} */
    this.timer = null;
    this.stopped = false;
    /** @type {(() => void) | null} */
    this.onResidentOnce = null;
    /** Settles when a host first says where this player is resident. @type {Promise<Cell>} */
    this.ready = new Promise((resolve) => {
      this.onResidentOnce = () => { if (this.resident) resolve(this.resident); };
    });
    /** @type {Set<string>} regions whose load is asked again (reload) */
    this.reloading = new Set();
    /** Regions loaded again after their host went away. */
    this.reloads = 0;
    /** @type {Map<FollowedRegion, Promise<void>>} loads and joins under way */
    this.joins = new Map();
    /** @type {import('./peer.js').LogFunc} */
    this.log = opts.log || (() => {});
  }

  /**
   * Calls fn for every client event ('crossing', 'follow', 'error'); returns a function that
   * stops it.
   * @param {(ev: WorldClientEvent) => void} fn
   */
  on(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  /** @param {WorldClientEvent} ev */
  emit(ev) { for (const l of this.listeners) l(ev); }

  /**
   * Reads the directory and joins the start region's room; resolves once joined (this.ready
   * settles when its host has said where the player is resident).
   */
  async start() {
    const o = this.opts;
    this.dir = await fetchDirectory(this.world, { base: o.base, fetch: o.fetch, credential: o.token });
    const d = this.dir;
    let start = { x: Math.floor(d.cols / 2), y: Math.floor(d.rows / 2) };
    if (o.start && o.start.x >= 0 && o.start.y >= 0 && o.start.x < d.cols && o.start.y < d.rows) start = o.start;
    const r = this.follow(start);
    await this.settle(r);
    if (r.state !== 'joined') throw new Error(`world: cannot join ${r.room}: ${r.error}`);
    this.timer = setInterval(() => this.poll(), o.pollMs || 50);
  }

  /** The view distance followed. */
  get view() {
    const d = this.dir;
    if (!d) return 0;
    return this.opts.view === undefined ? d.view : this.opts.view;
  }

  /**
   * Starts following region c: loads it, then joins its room.
   * @param {Cell} c
   * @returns {FollowedRegion}
   */
  follow(c) {
    const key = cellKey(c);
    const d = /** @type {Directory} */ (this.dir);
    const entry = d.regions.find((e) => e.x === c.x && e.y === c.y);
    /** @type {FollowedRegion} */
    const r = {
      cell: { x: c.x, y: c.y }, key, room: entry ? entry.room : roomName(this.world, c.x, c.y),
      role: this.resident && cellKey(this.resident) === key ? 'resident' : 'watcher',
      peer: null, state: 'loading', error: '', failedAt: 0,
    };
    this.regions.set(key, r);
    this.joins.set(r, this.enter(r));
    return r;
  }

  /**
   * Waits until region r's load and join have settled.
   * @param {FollowedRegion} r
   */
  async settle(r) {
    const p = this.joins.get(r);
    if (p) await p;
  }

  /**
   * The credential of region r's load request: on a server with a secret a load takes a join
   * token of one of the world's region rooms (docs/security.md §12), so r's own token when the
   * client has a tokenProvider, else its token.
   * @param {FollowedRegion} r
   * @returns {Promise<string | undefined>}
   */
  async credential(r) {
    const o = this.opts;
    if (o.token || !o.tokenProvider) return o.token;
    return await o.tokenProvider({ room: r.room, user: o.user || '', device: this.device, resume: false });
  }

  /**
   * Loads region r and joins its room (a step of follow; failures mark r failed, and poll tries
   * it again after RETRY_MS).
   * @param {FollowedRegion} r
   */
  async enter(r) {
    const o = this.opts;
    try {
      if (o.load) await o.load(r.cell);
      else await loadRegion(this.world, r.cell, { base: o.base, fetch: o.fetch, credential: await this.credential(r) });
      if (this.stopped || this.regions.get(r.key) !== r) return;
      r.state = 'joining';
      const peer = this.makePeer(r);
      r.peer = peer;
      await peer.run();
      if (this.stopped || this.regions.get(r.key) !== r) {
        peer.stop();
        return;
      }
      r.state = 'joined';
      if (peer.peerId) this.self = peer.peerId;
    } catch (err) {
      if (r.peer) r.peer.stop();
      r.peer = null;
      r.state = 'failed';
      r.failedAt = now();
      r.error = err instanceof Error ? err.message : String(err);
      this.log('warn', 'cannot follow a region', { room: r.room, err: r.error });
      this.emit({ kind: 'error', region: r.cell, error: r.error });
    } finally {
      this.joins.delete(r);
    }
  }

  /**
   * The room client of region r: a Peer whose app hosts nothing (the region's host is the
   * world's) and hears the world messages of the region's host.
   * @param {FollowedRegion} r
   * @returns {RoomPeer}
   */
  makePeer(r) {
    const o = this.opts;
    const schemas = o.schemas;
    const log = o.log;
    /** @type {import('./peer.js').PeerOptions} */
    const popts = {
      ...(o.peerOptions || {}),
      room: r.room, url: o.url, user: o.user, device: this.device, kind: o.kind || 'browser',
      token: o.token, tokenProvider: o.tokenProvider,
      log: log ? (level, msg, fields) => log(level, `${r.room}: ${msg}`, fields) : undefined,
      app: {
        schemas: () => schemas, hostStart() {}, spawnAvatar: () => undefined, tick() {}, rpc() {},
        message: (w, from, type, data) => {
          if (from === w.host && this.regions.get(r.key) === r) this.hostMessage(r, type, data);
        },
        // The region's host went away (the server restarted, its node failed): the room keeps its
        // members, and a load brings a region host back, which takes the room over.
        onEvent: (w, ev) => {
          if (ev.kind === Ev.Migrating || (ev.kind === Ev.HostChanged && w.isHost)) this.reload(r);
        },
      },
    };
    return o.makePeer ? o.makePeer(popts) : new Peer(popts);
  }

  /**
   * Asks the server to load region r again, every RELOAD_EVERY_MS until it answers (at most
   * RELOAD_TRIES times), once at a time per region.
   * @param {FollowedRegion} r
   */
  reload(r) {
    if (this.reloading.has(r.key) || this.stopped) return;
    this.reloading.add(r.key);
    const o = this.opts;
    const every = o.reloadEveryMs ?? RELOAD_EVERY_MS;
    this.log('info', 'region host gone; loading the region again', { room: r.room });
    const attempt = async () => {
      for (let i = 0; i < RELOAD_TRIES && !this.stopped && this.regions.get(r.key) === r; i++) {
        try {
          if (o.load) await o.load(r.cell);
          else await loadRegion(this.world, r.cell, { base: o.base, fetch: o.fetch, credential: await this.credential(r) });
          this.reloads++;
          return;
        } catch {
          await new Promise((res) => setTimeout(res, every));
        }
      }
    };
    attempt().finally(() => this.reloading.delete(r.key));
  }

  /**
   * A world message from region r's host.
   * @param {FollowedRegion} r
   * @param {number} type
   * @param {Uint8Array} data
   */
  hostMessage(r, type, data) {
    if (type === MSG_ACK) {
      const seq = parseAck(data);
      if (seq !== null && this.resident && cellKey(this.resident) === r.key) {
        this.heardAt = this.clock(); // only a host that holds the player acknowledges its inputs
        this.takeAck(seq);
      }
      return;
    }
    if (type !== MSG_RESIDENT) return;
    const m = parseResident(data);
    if (!m || !this.dir || m.x >= this.dir.cols || m.y >= this.dir.rows) return;
    this.residentSaid(r, m);
  }

  /**
   * A region host says the player is resident in (m.x, m.y) with generation m.gen and inputs up to
   * m.ack applied; regions.js residentRule decides what it is (the rule Go's client shares, with
   * its vectors). A word newer by generation is taken from the named region's own host (it holds
   * the avatar) or the resident region's (a handover's source, a restarted host that no longer
   * holds it); a third region's host read the residence record, which a claim writes before the
   * destination takes the avatar (and puts back if it does not), so that region is only followed
   * (a redirect, kept REDIRECT_MS), and its own host says the rest. An older word — the source's
   * periodic message overtaken by the destination's, a redirect read before the player moved on —
   * was true before the newest word taken and never after: dropped, but held, since the
   * generation the client holds may be newer than any host's (a whole cluster's restart lost the
   * record): once the resident region's host has said nothing of the player for
   * RESIDENT_SILENCE_MS, the held words are heard again under the silence rule (poll), which takes
   * the named region's own host's word whatever its generation (docs/protocol.md §11 "Residence
   * silence"). Only the named region's own host renumbers the inputs.
   * @param {FollowedRegion} r the region whose host said it
   * @param {{x: number, y: number, gen: number, ack: number}} m
   */
  residentSaid(r, m) {
    const to = { x: m.x, y: m.y };
    const toKey = cellKey(to);
    const curKey = this.resident ? cellKey(this.resident) : '';
    const t = this.clock();
    const silent = this.gen > 0 && t - this.heardAt >= this.silenceMs;
    const { word, renumber } = residentRule({ res: this.resident, gen: this.gen, ack: this.queue.acked, hinted: this.hinted, silent }, r.key, to, m);
    switch (word) {
      case 'drop':
        if (this.gen > 0) this.held.set(r.key, { r, m });
        return;
      case 'hint':
        this.hinted = true;
        this.followCell(to);
        return;
      case 'redirect':
        this.redirect = { key: toKey, until: now() + (this.opts.redirectMs ?? REDIRECT_MS) };
        if (this.resident) this.refollow();
        else this.followCell(to);
        return;
      case 'ack':
        if (r.key === curKey) this.heardAt = t;
        this.residentAck(r, renumber, m.ack);
        this.flush();
        return;
    }
    this.redirect = null;
    const from = this.resident;
    this.resident = to;
    this.gen = m.gen;
    this.heardAt = t;
    this.held.clear(); // older than what was just taken, or said of a residence that ended
    // What the destination has applied is what the source handed over: everything above it
    // goes to the destination.
    this.residentAck(r, renumber, m.ack);
    this.sentUpTo = this.queue.acked;
    const crossed = !from || curKey !== toKey;
    if (from && crossed) this.crossings++;
    this.refollow();
    const replayed = this.queue.size;
    this.flush();
    if (from && crossed) this.log('info', 'crossed a border', { from: curKey, to: toKey, replayed });
    if (crossed) this.emit({ kind: 'crossing', from, to, replayed });
    if (this.onResidentOnce) {
      this.onResidentOnce();
      this.onResidentOnce = null;
    }
  }

  /** The residence silence bound (residentRule). */
  get silenceMs() { return this.opts.residentSilenceMs ?? RESIDENT_SILENCE_MS; }

  /** The clock of the residence silence (opts.now, default loop.js now). */
  clock() { return this.opts.now ? this.opts.now() : now(); }

  /**
   * Follows region c unless it is followed already (a hint or a redirect before the player is
   * resident anywhere: refollow follows the view of a resident region only).
   * @param {Cell} c
   */
  followCell(c) {
    if (this.stopped || this.regions.has(cellKey(c))) return;
    this.follow(c);
    this.emit({ kind: 'follow', join: [{ x: c.x, y: c.y }], leave: [] });
  }

  /**
   * The ack of a `resident` word region r's host said: renumber (residentRule: its own host
   * acknowledges less than the client had, the world forgot the sequence) numbers the waiting
   * inputs from it, as the host applies only ack + 1; any other is only an acknowledgement (a
   * handover's source repeating itself may carry an older one: that is only old).
   * @param {FollowedRegion} r
   * @param {boolean} renumber
   * @param {number} ack
   */
  residentAck(r, renumber, ack) {
    if (renumber) {
      this.queue.renumber(ack);
      this.sentUpTo = ack;
      this.log('info', 'the world forgot the input sequence; numbering anew', { room: r.room, ack });
      return;
    }
    this.takeAck(ack);
  }

  /**
   * The resident region's host has said nothing of the player for silenceMs: the words dropped
   * meanwhile are heard again (residentRule's silence takes the holder's word whatever its
   * generation) and, at twice the bound, the region the player is said to be in is joined again,
   * so that its host hears the player arrive and places it anew (an arrival reads the record).
   */
  checkSilence() {
    if (!this.resident) return;
    const t = this.clock();
    const ms = this.silenceMs;
    if (t - this.heardAt < ms) return;
    const again = [...this.held.values()];
    this.held.clear();
    for (const { r, m } of again) if (this.regions.get(r.key) === r) this.residentSaid(r, m);
    if (t - this.heardAt < 2 * ms || t - this.rejoinedAt < 2 * ms) return;
    this.rejoinedAt = t;
    const rd = this.redirect && now() < this.redirect.until ? this.redirect.key : '';
    const key = rd || cellKey(this.resident);
    const [x, y] = key.split(',').map(Number);
    this.log('info', 'the resident region\'s host is silent; joining its room again to be placed', { region: key });
    this.rejoin({ x, y });
  }

  /**
   * Leaves region c's room and joins it again.
   * @param {Cell} c
   */
  rejoin(c) {
    const key = cellKey(c);
    const old = this.regions.get(key);
    if (old && (old.state === 'loading' || old.state === 'joining')) return; // a join under way places it
    if (old && old.peer) old.peer.stop();
    this.regions.delete(key);
    const t = this.leaving.get(key);
    if (t !== undefined) {
      clearTimeout(t);
      this.leaving.delete(key);
    }
    this.follow(c);
  }

  /**
   * Takes a host's acknowledgement: drops the inputs up to ack, or, when the host has applied more
   * than this client ever numbered (the player's tab reloaded while its avatar stayed resident),
   * numbers the waiting inputs after it, so that the host applies them (it applies only ack + 1).
   * @param {number} ack
   */
  takeAck(ack) {
    if (this.queue.rebase(ack, this.sentUpTo)) this.sentUpTo = ack;
    else this.queue.ack(ack);
  }

  /**
   * Follows the regions in view of the resident region: joins the new ones now, and leaves the
   * ones out of view after LEAVE_GRACE_MS unless they come back into view.
   */
  refollow() {
    const d = this.dir;
    if (!d || !this.resident || this.stopped) return;
    const plan = followPlan(d, this.resident, this.view, this.regions.keys());
    const rd = this.redirect && now() < this.redirect.until ? this.redirect.key : '';
    if (rd) {
      plan.leave = plan.leave.filter((k) => k !== rd);
      if (!this.regions.has(rd) && !plan.join.some((c) => cellKey(c) === rd)) {
        const [x, y] = rd.split(',').map(Number);
        plan.want.push({ x, y });
        plan.join.push({ x, y });
      }
    }
    for (const c of plan.want) {
      const t = this.leaving.get(cellKey(c));
      if (t !== undefined) {
        clearTimeout(t);
        this.leaving.delete(cellKey(c));
      }
    }
    for (const k of plan.leave) {
      if (this.leaving.has(k)) continue;
      this.leaving.set(k, setTimeout(() => {
        this.leaving.delete(k);
        const r = this.regions.get(k);
        if (!r || this.stopped) return;
        if (r.peer) r.peer.stop();
        this.regions.delete(k);
        this.emit({ kind: 'follow', join: [], leave: [r.cell] });
      }, this.opts.leaveGraceMs ?? LEAVE_GRACE_MS));
    }
    for (const c of plan.join) this.follow(c);
    const rk = cellKey(this.resident);
    for (const r of this.regions.values()) r.role = r.key === rk ? 'resident' : 'watcher';
    if (plan.join.length) this.emit({ kind: 'follow', join: plan.join, leave: [] });
  }

  /**
   * Queues one input of this player (the app's data: for tiles, a walk, a placed or a removed
   * block) and sends it to the resident region's host. Returns its seq, or 0 when the client holds
   * MAX_PENDING_INPUTS unacknowledged inputs already (refused locally).
   * @param {Uint8Array} data
   */
  input(data) {
    if (data.length > MAX_INPUT_DATA) throw new RangeError(`world: input of ${data.length} bytes, limit ${MAX_INPUT_DATA}`);
    const seq = this.queue.push({ data: data.slice(), sentAt: 0 });
    if (seq) this.flush();
    return seq;
  }

  /**
   * Sends the resident region's host every queued input above sentUpTo, while its link is up.
   */
  flush() {
    if (!this.resident) return;
    const r = this.regions.get(cellKey(this.resident));
    if (!r || r.state !== 'joined' || !r.peer || !r.peer.status().synced) return;
    const peer = r.peer;
    const t = now();
    for (const it of this.queue.above(this.sentUpTo)) {
      let ok = false;
      peer.do((w) => {
        try {
          w.sendAction(ACTION_INPUT, encodeInput(it.seq, it.input.data));
          ok = true;
        } catch {
          // No link to the host right now: the input waits for the next flush.
        }
      });
      if (!ok) return;
      it.input.sentAt = t;
      this.sentUpTo = it.seq;
    }
  }

  /** Sends what waits, sends again what went unacknowledged, and retries failed regions. */
  poll() {
    if (this.stopped) return;
    this.checkSilence();
    const first = this.queue.pending()[0];
    if (first && first.input.sentAt > 0 && now() - first.input.sentAt > (this.opts.resendMs ?? RESEND_MS)) {
      this.sentUpTo = this.queue.acked; // the host drops what it applied already
    }
    this.flush();
    for (const r of this.regions.values()) {
      if (r.state === 'failed' && now() - r.failedAt > (this.opts.retryMs ?? RETRY_MS) && !this.leaving.has(r.key)) {
        r.state = 'loading';
        this.joins.set(r, this.enter(r));
      }
    }
  }

  /**
   * The owner string of avatar e in w ('' when unset).
   * @param {World} w
   * @param {number} e
   */
  ownerOf(w, e) {
    const b = w.get(e, this.opts.avatar.owner);
    return b ? dec.decode(b) : '';
  }

  /**
   * The merged view: every entity of every joined region, with one avatar per player (the copy
   * with the highest generation).
   * @returns {WorldEntity[]}
   */
  entities() {
    const rk = this.resident ? cellKey(this.resident) : '';
    /** @type {WorldEntity[]} */
    const out = [];
    /** @type {import('./regions.js').AvatarCopy<WorldEntity>[]} */
    const copies = [];
    for (const r of this.regions.values()) {
      if (r.state !== 'joined' || !r.peer) continue;
      const w = r.peer.world;
      for (const e of w.entities()) {
        const s = w.schemaOf(e);
        if (!s) continue;
        const we = { region: r, world: w, entity: e, schema: s.id, writable: r.key === rk };
        if (s.id !== this.opts.avatar.schema) out.push(we);
        else copies.push({ room: r.room, entity: e, owner: this.ownerOf(w, e), gen: generationOf(w.creation(e)), value: we });
      }
    }
    for (const c of mergeAvatars(copies)) out.push(/** @type {WorldEntity} */ (c.value));
    return out;
  }

  /**
   * The merged avatars with their owners and generations, one per player.
   * @returns {(WorldEntity & {owner: string, gen: number, mine: boolean})[]}
   */
  avatars() {
    const id = this.opts.avatar.schema;
    return this.entities().filter((e) => e.schema === id).map((e) => {
      const owner = this.ownerOf(e.world, e.entity);
      return { ...e, owner, gen: generationOf(e.world.creation(e.entity)), mine: owner !== '' && owner === this.self };
    });
  }

  /** This player's avatar in the merged view, or undefined before it appears. */
  me() { return this.avatars().find((a) => a.mine); }

  /** Leaves every room. */
  stop() {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const t of this.leaving.values()) clearTimeout(t);
    this.leaving.clear();
    for (const r of this.regions.values()) if (r.peer) r.peer.stop();
    this.regions.clear();
  }
}
