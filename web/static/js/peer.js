// @ts-check
// A participant of a room — a port of the Go package peer: a signaling client, links to other
// members, and the host or member role over a World. The session protocol is docs/protocol.md §5;
// the modules follow the Go code step by step so that a browser and Go peers can be each other's
// host. One concept per module: this one (the peer and its loop), links.js, updates.js,
// resume.js, status.js, member.js, host.js (with restamp.js and hostcommands.js).
//
// The page has one thread, so the Go loop becomes "steps": every event (a link message, a
// signaling message, a timer) runs as one step, after which the host sends the commands the step
// produced, the app hears the step's events, and the write batch closes (one Lamport stamp per step).

import { REDIAL, REMOVED_CODES, SignalingError, explain, parseServers } from './signaling.js';
import { World, Ev, nopSink, FIRST_SYSTEM_RPC } from './world.js';
import { worldLimits } from './worldlimits.js';
import { Fence } from './authority.js';
import { now, mixin, mixinBase } from './loop.js';
import { PeerLinks } from './links.js';
import { PeerUpdates } from './updates.js';
import { PeerResume } from './resume.js';
import { PeerStatus } from './status.js';
import { MemberRole } from './member.js';
import { HostRole, RELAY_RATE, RELAY_BURST, RECV_RELAY_RATE, RECV_RELAY_BURST, RELAY_BACKLOG } from './host.js';

export { CLOSE_SCHEMA_MISMATCH } from './links.js';
export { hex16 } from './status.js';
export { wirePeerID } from './host.js';

/** Defaults, as peer.Config's. */
export const DEFAULTS = Object.freeze({
  tickMs: 50,
  networkMs: 50,
  reportMs: 1000,
  digestMs: 1000,
  quietMs: 300,
  buckets: 256,
  maxDatagramsPerFlush: 64,
  // Relay budgets of a host (docs/protocol.md §5 "Session: limits"; host.js RELAY_RATE …).
  relayRate: RELAY_RATE,
  relayBurst: RELAY_BURST,
  recvRelayRate: RECV_RELAY_RATE,
  recvRelayBurst: RECV_RELAY_BURST,
  relayBacklog: RELAY_BACKLOG,
  // Signaling redial waits (docs/protocol.md §5 "Session: signaling outage and resume").
  redialMinMs: REDIAL.min,
  redialMaxMs: REDIAL.max,
  // After a resume, how long the host gives members to resume before it takes the absent ones as gone.
  resumeSettleMs: 3000,
});

/** @typedef {import('./world.js').WorldEvent} WorldEvent */
/** @typedef {import('./schema.js').SchemaTable} SchemaTable */
/** @typedef {import('./signaling.js').SignalingEvent} SignalingEvent */
/** @typedef {import('./status.js').PeerStatusInfo} PeerStatusInfo */

/**
 * A member as the host's app sees it when it spawns the member's avatar: its peer index, its
 * identity ("user/device") and its kind ('browser', 'bot' or 'host').
 * @typedef {{index: number, id: string, kind: string}} MemberInfo
 */

/**
 * The game a Peer plays. schemas() is called once, and every peer of a room must return the
 * same table (its fingerprint is checked). On the host: hostStart(w) when this peer becomes host
 * of a fresh room, spawnAvatar(w, member) for every member that joins (return the avatar entity,
 * or undefined for none), rpc(w, from, type, data) for every RPC a member sends. On every peer:
 * tick(w, dtMs) every tickMs, and onEvent(w, ev) for every world event. Optional hooks:
 * message(w, from, type, data) for application messages (World.sendMessage), action(w, from,
 * type, data) for TRNP Actions (World.sendAction; without it Actions reach rpc), and on the host
 * allowAppend(w, from, e, component, value) to let members append to sets of entities they do not
 * write, allowRelay(w, from, to, type) to filter the messages members relay to each other.
 * @typedef {object} App
 * @property {() => SchemaTable} schemas
 * @property {(w: World) => void} hostStart
 * @property {(w: World, member: MemberInfo) => number | undefined | null} spawnAvatar
 * @property {(w: World, dtMs: number) => void} tick
 * @property {(w: World, from: number, type: number, data: Uint8Array) => void} rpc
 * @property {(w: World, ev: WorldEvent) => void} [onEvent]
 * @property {(w: World, from: number, type: number, data: Uint8Array) => void} [message]
 * @property {(w: World, from: number, type: number, data: Uint8Array) => void} [action]
 * @property {(w: World, from: number, e: number, component: number, value: Uint8Array) => boolean} [allowAppend]
 * @property {(w: World, from: number, to: number, type: number) => boolean} [allowRelay]
 */

/**
 * Where a Peer logs: level is 'debug', 'info', 'warn' or 'error'.
 * @typedef {(level: string, msg: string, fields?: Record<string, unknown>) => void} LogFunc
 */

/**
 * Returns the join token for the next (re)join; resume is false for the first join.
 * @typedef {(join: {room: string, user: string, device: string, resume: boolean}) => Promise<string> | string} TokenProvider
 */

/**
 * What a Peer is made with. url is the signaling websocket (default: /ws next to the page), or
 * the nodes of a cluster as a comma-separated list or an array of URLs (parseServers): run()
 * joins through the first that answers, a redial goes to the next node on each attempt;
 * user may be empty when a token names it; device defaults to a random per-tab id; kind to
 * 'browser'. token is a fixed join token; tokenProvider, if set, is called instead on every
 * (re)join. WebSocket replaces the global WebSocket (tests, Node); memory makes in-page links
 * instead of WebRTC (tests). The intervals default to DEFAULTS.
 * @typedef {object} PeerOptions
 * @property {App} app
 * @property {string} room
 * @property {string | string[]} [url]
 * @property {string} [user]
 * @property {string} [device]
 * @property {'browser' | 'bot' | 'host'} [kind]
 * @property {string} [token]
 * @property {TokenProvider} [tokenProvider]
 * @property {LogFunc} [log]
 * @property {typeof WebSocket} [WebSocket]
 * @property {boolean} [memory]
 * @property {number} [tickMs]
 * @property {number} [networkMs]
 * @property {boolean} [noDeltas] as a member, do not ask a Go host for deltas against
 *   acknowledged values (docs/protocol.md §2.10): it then sends whole values
 * @property {number} [reportMs]
 * @property {number} [digestMs]
 * @property {number} [quietMs]
 * @property {number} [buckets]
 * @property {number} [maxDatagramsPerFlush]
 * @property {number} [relayRate] as host, bytes a second a member may have relayed, each copy counted
 * @property {number} [relayBurst] as host, bytes a member may have relayed at once
 * @property {number} [recvRelayRate] as host, relayed bytes a second forwarded to one member
 * @property {number} [recvRelayBurst] as host, relayed bytes forwarded to one member at once
 * @property {number} [relayBacklog] as host, reliable bytes buffered to a member past which relays to it are dropped
 * @property {number} [redialMinMs]
 * @property {number} [redialMaxMs]
 * @property {number} [resumeSettleMs]
 * @property {import('./restore.js').Checkpoint | null} [restore] a kept room's checkpoint (fetchCheckpoint),
 *   merged into the world the first time this peer hosts, before the game's hostStart
 *   (docs/protocol.md §6 "Kept rooms")
 * @property {Partial<import('./worldlimits.js').WorldLimits>} [worldLimits] the world's bounds
 *   (append sets per entity, bytes a member's writes add, the world's size; docs/protocol.md §5)
 */

// PeerResume's methods set sig, which would type it as theirs (never null): Peer declares it.
/** @type {new () => PeerLinks & PeerUpdates & Omit<PeerResume, 'sig'> & PeerStatus} */
const PeerMethods = mixinBase();

/**
 * Peer joins a room and plays the member or the host role. Options: url (signaling websocket),
 * room, user, device, kind ('browser'), token or tokenProvider, app (the game: schemas(),
 * hostStart(w), spawnAvatar(w, info), tick(w, dtMs), rpc(w, from, type, data), onEvent?(w, ev)),
 * log, and the intervals of DEFAULTS.
 *
 * A server with a secret admits only joins with a token (an HS256 JWT naming the room: `concord
 * token` mints one for tests). tokenProvider({room, user, device, resume}) is called for the
 * first join and for every rejoin after a signaling outage, so that a game can fetch a fresh
 * token from its backend; without it the fixed token is sent. A refused join rejects run() with
 * a SignalingError whose code says why (token_required, token_expired, wrong_room, …) and whose
 * reason says it in words; done settles with it and status().error shows it.
 */
export class Peer extends PeerMethods {
  /** @param {PeerOptions} opts */
  constructor(opts) {
    super();
    this.opts = { ...DEFAULTS, ...opts };
    this.app = opts.app;
    /** @type {LogFunc} */
    this.log = opts.log || defaultLog;
    this.w = new World(this.app.schemas());
    this.w.limits = worldLimits(opts.worldLimits);
    this.w.peer = this;
    /** The signaling client of the current connection (see resume.js). @type {import('./signaling.js').SignalingClient | null} */
    this.sig = null;
    /** The signaling endpoints of opts.url, in order; [''] means /ws next to the page. */
    this.servers = opts.url ? parseServers(opts.url) : [''];
    /** Index in servers of the node sig was dialed on. */
    this.server = 0;
    /** @type {Map<number, SignalingEvent>} peer index → signaling's member record */
    this.members = new Map();
    /** @type {Map<number, import('./links.js').Remote>} host: one per member; member: the host */
    this.remotes = new Map();
    this.session = 0;
    this.host = null;
    this.member = null;
    /** Whether opts.restore was merged (the first time this peer hosted). */
    this.restored = false;
    this.depth = 0;
    /** @type {ReturnType<typeof setInterval>[]} */
    this.timers = [];
    /** @type {Set<ReturnType<typeof setTimeout>>} after()'s timeouts, cleared by stop() */
    this.pending = new Set();
    this.stopped = false;
    // deltas: values taken as differences from acknowledged ones; deltaMissed: dropped for want
    // of their baseline (docs/protocol.md §2.10).
    this.count = { bytesIn: 0, bytesOut: 0, rejected: 0, rejectedRace: 0, refused: 0, offenders: 0, fenced: 0, dropped: 0, deltas: 0, deltaMissed: 0, signalsShed: 0, signalsResent: 0,
      /** @type {Record<string, number>} */ refusedBy: {} };
    this.signalingState = 'connecting';
    this.resumeToken = '';
    this.held = false; // the replica has held the room's state (synced or hosted)
    this.resumes = 0;
    this.resumeRefused = '';
    /** Why the last link to the host could not form a candidate pair (rtc.js pairHint), '' once one is up. */
    this.linkHint = '';
    /** The message of a kicked/banned error, which comes just before the close. */
    this.removedWhy = '';
    this.peerId = '';
    /** @type {Set<(ev: WorldEvent) => void>} */
    this.listeners = new Set();
    // Tells host messages of the current host from stale or premature ones (member.admit).
    this.fence = new Fence();
    /**
     * The error that ended the session (a refused join, a schema mismatch), or null.
     * @type {Error | null}
     */
    this.error = null;
    /** @type {(err: Error | null) => void} */
    this.finish = () => {};
    /**
     * Settles when the session ends: with null after stop(), with the error after a fatal one.
     * @type {Promise<Error | null>}
     */
    this.done = new Promise((resolve) => { this.finish = resolve; });
  }

  /** The replicated world this peer keeps. */
  get world() { return this.w; }

  /**
   * Joins the room; resolves with the server's `joined` message once joined (the session then
   * runs until stop()). A refused join rejects with a SignalingError and ends the session.
   * @returns {Promise<SignalingEvent>}
   */
  async run() {
    let j;
    try {
      j = await this.joinFirst();
    } catch (err) {
      // A refused join ends the session: done and status() tell why, as run()'s rejection does.
      this.fail(err);
      throw err;
    }
    this.signalingState = 'connected';
    this.resumeToken = j.resumeToken || '';
    this.w.self = j.self;
    this.peerId = j.peerId;
    for (const m of j.members) this.members.set(m.peerIndex, m);
    this.log('info', 'joined room', { room: j.room, self: j.self, term: j.term, host: j.host, members: j.members.length });
    this.step(() => this.setHost(j.term, j.host));
    let last = now();
    this.every(this.opts.tickMs, () => {
      const t = now();
      const dt = t - last;
      last = t;
      this.app.tick(this.w, dt);
      if (this.host) this.host.tick(t);
    });
    this.every(this.opts.networkMs, () => {
      this.flushUpdates();
      this.expireReassembly(now());
    });
    this.every(this.opts.reportMs, () => this.report());
    this.every(this.opts.digestMs, () => { if (this.member) this.member.sendDigest(); });
    return j;
  }

  /**
   * Runs fn as a step every ms, until stop() or silence().
   * @param {number} ms
   * @param {() => void} fn
   */
  every(ms, fn) {
    this.timers.push(setInterval(() => this.step(fn), ms));
  }

  /**
   * after runs fn as a step once ms have passed, unless the peer stops first.
   * @param {number} ms
   * @param {() => void} fn
   */
  after(ms, fn) {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.pending.delete(t);
      this.step(fn);
    }, ms);
    this.pending.add(t);
  }

  /**
   * Stops the timers (ticks, updates, digests, reports, pings) but keeps the links and the
   * signaling socket: the peer goes silent, as a hung tab would. For tests.
   */
  silence() {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** Leaves the room: closes every link and the signaling socket. */
  stop() {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
    for (const r of this.remotes.values()) r.close();
    this.remotes.clear();
    if (this.sig) this.sig.close();
    this.finish(this.error);
  }

  /**
   * Ends the session with err (as Go's Run returns a fatal error): nothing is retried, neither the
   * link to the host nor signaling. done settles with err; status() shows it.
   * @param {Error} err
   */
  fail(err) {
    if (this.stopped) return;
    this.error = err;
    this.log('error', 'session ended', { err: err.message });
    this.stop();
  }

  /**
   * Runs fn as one loop step (see the file comment). Nested steps run inline.
   * @param {() => void} fn
   */
  step(fn) {
    if (this.stopped) return;
    if (this.depth > 0) {
      fn();
      return;
    }
    this.depth++;
    try {
      fn();
    } catch (err) {
      this.log('warn', 'step failed', { err: String(err && err.stack || err) });
    } finally {
      try {
        this.afterEvent();
      } finally {
        this.depth--;
      }
    }
  }

  afterEvent() {
    if (this.host) this.host.flushCommands();
    if (this.member) this.member.flushPending();
    const w = this.w;
    if (this.app.onEvent) {
      for (let i = 0; i < w.events.length; i++) this.app.onEvent(w, w.events[i]);
    }
    for (const l of this.listeners) for (const ev of w.events) l(ev);
    w.events.length = 0;
    w.closeBatch();
  }

  /**
   * Calls fn(event) for every world event (for the page); returns a function that stops it.
   * @param {(ev: WorldEvent) => void} fn
   * @returns {() => boolean}
   */
  onEvent(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  /**
   * Runs fn(world) as a step (page input, tools) and returns what fn returns: writes made in it
   * share one Lamport stamp and are sent after it.
   * @template T
   * @param {(w: World) => T} fn
   * @returns {T | undefined}
   */
  do(fn) {
    let out;
    this.step(() => { out = fn(this.w); });
    return out;
  }

  /**
   * Handles one signaling event (as a step).
   * @param {SignalingEvent} ev
   */
  handleSignaling(ev) {
    switch (ev.type) {
      case 'member-joined':
        this.members.set(ev.member.peerIndex, ev.member);
        break;
      case 'member-synced': {
        const m = this.members.get(ev.peerIndex);
        if (m) {
          m.synced = true;
          // The term signaling recorded it synced in: a host opens the survivors' correction
          // window on it (restamp.js survivorWindow).
          if ((ev.term || 0) > (m.syncedTerm || 0)) m.syncedTerm = ev.term;
        }
        break;
      }
      case 'member-left':
        this.members.delete(ev.peerIndex);
        if (this.host) this.host.signalingLeft(ev.peerIndex);
        break;
      case 'host':
        // Each host message carries a fresh resume token that vouches for its term (a claim may run only a
        // few terms past the token's).
        if (ev.resumeToken) this.resumeToken = ev.resumeToken;
        this.setHost(ev.term, ev.host);
        break;
      case 'ice-servers':
        // Fresh TURN credentials: live links take them for their next ICE gathering (a restart).
        for (const r of this.remotes.values()) if (r.link) r.link.setICEServers(ev.iceServers);
        break;
      case 'signal':
        this.handleSignal(ev.from, ev.payload);
        break;
      case 'error':
        if (ev.code === 'recipient_busy') {
          this.signalShed(ev); // not relayed: sent again (links.js), no warning each time
          break;
        }
        this.log('warn', 'signaling error', { code: ev.code, message: ev.message });
        if (REMOVED_CODES.has(ev.code)) this.removedWhy = ev.message; // the close follows
        break;
      case 'closed':
        // Links stay up: the room keeps playing without signaling; the peer redials and
        // resumes its index, unless its identity joined elsewhere (which it would only fight).
        this.signalingState = 'closed';
        if (REMOVED_CODES.has(ev.reason)) {
          // A moderator removed this member: a terminal error, as Go's Run returns it. The links
          // end with the session; redialing would undo the kick.
          this.fail(new SignalingError(ev.reason, this.removedWhy || explain(ev.reason)));
          break;
        }
        if (ev.reason === 'replaced') {
          this.log('error', 'signaling connection replaced by another with this identity; not redialing', { code: ev.code });
          break;
        }
        this.log('warn', 'signaling connection closed; keeping links and redialing', { code: ev.code, reason: ev.reason });
        this.redial();
        break;
      default:
    }
  }

  /**
   * Adopts a host announcement. The same term and host again (a resumed signaling connection)
   * changes nothing; neither does "no host" in the term this peer knows a host for: a server
   * waiting for the host to resume.
   * @param {number} term
   * @param {number} host
   */
  setHost(term, host) {
    const w = this.w;
    if (term < w.term) return;
    if (term === w.term && (host === w.host || (host === 0 && w.host !== 0))) return;
    const prevHost = w.host;
    w.term = term;
    w.host = host;
    // The fence follows signaling's newest word (Fence.announce): a newer term, or a host named in
    // the term this peer knew without one or with another host.
    this.fence.announce(term, host);
    w.events.push({ kind: Ev.HostChanged, term, peer: host });
    this.log('info', 'host changed', { term, host });
    if (host === w.self) {
      if (!this.host) this.becomeHost();
    } else if (host === 0) {
      if (this.host) this.stepDown();
    } else {
      if (this.host) this.stepDown();
      if (!this.member) this.member = new MemberRole(this);
      if (prevHost !== host) this.member.follow(host);
      else if (this.member.hostLink) this.member.hostLink.term = term; // the same host, elected again
    }
  }

  becomeHost() {
    if (this.member) {
      this.member.stop();
      this.member = null;
    }
    this.held = true;
    this.host = new HostRole(this);
    this.host.start();
  }

  stepDown() {
    if (!this.host) return; // callers step down only a host
    this.host.stop();
    this.host = null;
    this.w.isHost = false;
    this.w.sink = nopSink;
  }

  setSynced() {
    if (this.sig && !this.sig.closed) this.sig.synced();
  }

  /**
   * Sends one of Concord's own RPCs about entity e to the host.
   * @param {number} type
   * @param {number} e
   */
  systemRPC(type, e) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, e >>> 0, true);
    return this.rpcToHost(type, b);
  }

  /**
   * Sends the app's RPC type (below FIRST_SYSTEM_RPC) with data to the host; members only.
   * @param {number} type
   * @param {Uint8Array} data
   */
  sendRPC(type, data) {
    if (type >= FIRST_SYSTEM_RPC) throw new Error('peer: RPC types from 0xffffff00 are Concord\'s');
    return this.rpcToHost(type, data);
  }

  /**
   * Sends an application message through this peer's role (World.sendMessage checked it).
   * @param {number} to
   * @param {number} type
   * @param {Uint8Array} data
   * @param {boolean} reliable
   */
  sendMessage(to, type, data, reliable) {
    if (this.host) return this.host.sendMessage(to, type, data, reliable);
    if (this.member) return this.member.sendMessage(to, type, data, reliable);
    throw new Error('peer: not in a room yet');
  }

  /**
   * Sends a TRNP Action through this peer's role (World.sendAction checked it).
   * @param {number} type
   * @param {Uint8Array} data
   */
  sendAction(type, data) {
    if (this.host) return this.host.sendAction(type, data);
    if (this.member) return this.member.sendAction(type, data);
    throw new Error('peer: not in a room yet');
  }

  /**
   * @param {number} type
   * @param {Uint8Array} data
   */
  rpcToHost(type, data) {
    if (!this.member) throw new Error('peer: not a member (the host handles its own RPCs)');
    return this.member.sendRPC(type, data);
  }
}

mixin(Peer, PeerLinks, PeerUpdates, PeerResume, PeerStatus);

/** @type {Record<string, 'warn' | 'error' | 'debug'>} */
const CONSOLE_LEVEL = { warn: 'warn', error: 'error', debug: 'debug' };

/** @type {LogFunc} */
function defaultLog(level, msg, fields) {
  console[CONSOLE_LEVEL[level] || 'log'](`concord: ${msg}`, fields || '');
}
