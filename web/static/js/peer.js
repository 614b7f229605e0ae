// A participant of a room — a port of the Go package peer: a signaling client, links to other
// members, and the host or member role over a World. The session protocol is docs/protocol.md §5;
// the modules follow the Go code step by step so that a browser and Go peers can be each other's
// host. One concept per module: this one (the peer and its loop), links.js, updates.js,
// resume.js, status.js, member.js, host.js (with restamp.js and hostcommands.js).
//
// The page has one thread, so the Go loop becomes "steps": every event (a link message, a
// signaling message, a timer) runs as one step, after which the host sends the commands the step
// produced, the app hears the step's events, and the write batch closes (one Lamport stamp per step).

import { REDIAL } from './signaling.js';
import { World, Ev, nopSink, FIRST_SYSTEM_RPC } from './world.js';
import { Fence } from './authority.js';
import { now, mixin } from './loop.js';
import { PeerLinks } from './links.js';
import { PeerUpdates } from './updates.js';
import { PeerResume } from './resume.js';
import { PeerStatus } from './status.js';
import { MemberRole } from './member.js';
import { HostRole } from './host.js';

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
  // Signaling redial waits (docs/protocol.md §5 "Session: signaling outage and resume").
  redialMinMs: REDIAL.min,
  redialMaxMs: REDIAL.max,
  // After a resume, how long the host gives members to resume before it takes the absent ones as gone.
  resumeSettleMs: 3000,
});

/**
 * Peer joins a room and plays the member or the host role. Options: url (signaling websocket),
 * room, user, device, kind ('browser'), token, app (the game: schemas(), hostStart(w),
 * spawnAvatar(w, info), tick(w, dtMs), rpc(w, from, type, data), onEvent?(w, ev)), log, and the
 * intervals of DEFAULTS.
 */
export class Peer {
  constructor(opts) {
    this.opts = { ...DEFAULTS, ...opts };
    this.app = opts.app;
    this.log = opts.log || ((level, msg, fields) => console[{ warn: 'warn', error: 'error', debug: 'debug' }[level] || 'log'](`concord: ${msg}`, fields || ''));
    this.w = new World(this.app.schemas());
    this.w.peer = this;
    this.sig = null;
    this.members = new Map(); // peer index → signaling member
    this.remotes = new Map(); // host: one per member; member: the host
    this.session = 0;
    this.host = null;
    this.member = null;
    this.depth = 0;
    this.timers = [];
    this.pending = new Set(); // after()'s timeouts, cleared by stop()
    this.stopped = false;
    this.count = { bytesIn: 0, bytesOut: 0, rejected: 0, rejectedRace: 0, fenced: 0, dropped: 0 };
    this.signalingState = 'connecting';
    this.resumeToken = '';
    this.held = false; // the replica has held the room's state (synced or hosted)
    this.resumes = 0;
    this.resumeRefused = '';
    this.peerId = '';
    this.listeners = new Set();
    // Tells host messages of the current host from stale or premature ones (member.admit).
    this.fence = new Fence();
    // The error that ended the session (a schema mismatch), or null.
    this.error = null;
    /** Settles when the session ends: with null after stop(), with the error after a fatal one. */
    this.done = new Promise((resolve) => { this.finish = resolve; });
  }

  get world() { return this.w; }

  /** Joins the room; resolves once joined (the session then runs until stop()). */
  async run() {
    this.sig = this.signalingClient(null);
    const j = await this.sig.connect();
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
    this.every(this.opts.networkMs, () => this.flushUpdates());
    this.every(this.opts.reportMs, () => this.report());
    this.every(this.opts.digestMs, () => { if (this.member) this.member.sendDigest(); });
    return j;
  }

  every(ms, fn) {
    this.timers.push(setInterval(() => this.step(fn), ms));
  }

  /** after runs fn as a step once ms have passed, unless the peer stops first. */
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
   */
  fail(err) {
    if (this.stopped) return;
    this.error = err;
    this.log('error', 'session ended', { err: err.message });
    this.stop();
  }

  /** Runs fn as one loop step (see the file comment). Nested steps run inline. */
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
    const w = this.w;
    if (this.app.onEvent) {
      for (let i = 0; i < w.events.length; i++) this.app.onEvent(w, w.events[i]);
    }
    for (const l of this.listeners) for (const ev of w.events) l(ev);
    w.events.length = 0;
    w.closeBatch();
  }

  /** Calls fn(event) for every world event (for the page). */
  onEvent(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  /** Runs fn(world) as a step (page input, tools). */
  do(fn) {
    let out;
    this.step(() => { out = fn(this.w); });
    return out;
  }

  handleSignaling(ev) {
    switch (ev.type) {
      case 'member-joined':
        this.members.set(ev.member.peerIndex, ev.member);
        break;
      case 'member-synced': {
        const m = this.members.get(ev.peerIndex);
        if (m) m.synced = true;
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
      case 'signal':
        this.handleSignal(ev.from, ev.payload);
        break;
      case 'error':
        this.log('warn', 'signaling error', { code: ev.code, message: ev.message });
        break;
      case 'closed':
        // Links stay up: the room keeps playing without signaling; the peer redials and
        // resumes its index, unless its identity joined elsewhere (which it would only fight).
        this.signalingState = 'closed';
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
   */
  setHost(term, host) {
    const w = this.w;
    if (term < w.term) return;
    if (term === w.term && (host === w.host || (host === 0 && w.host !== 0))) return;
    const prevHost = w.host;
    w.term = term;
    w.host = host;
    // The fence follows signaling's newest word. A host named in the term this peer knew without
    // one is that word too, though not a newer term: the fence starts over with it.
    if (!this.fence.observe(term, host)) {
      this.fence = new Fence();
      this.fence.observe(term, host);
    }
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
    this.host.stop();
    this.host = null;
    this.w.isHost = false;
    this.w.sink = nopSink;
  }

  setSynced() {
    if (this.sig && !this.sig.closed) this.sig.synced();
  }

  systemRPC(type, e) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, e >>> 0, true);
    return this.rpcToHost(type, b);
  }

  sendRPC(type, data) {
    if (type >= FIRST_SYSTEM_RPC) throw new Error('peer: RPC types from 0xffffff00 are Concord\'s');
    return this.rpcToHost(type, data);
  }

  rpcToHost(type, data) {
    if (!this.member) throw new Error('peer: not a member (the host handles its own RPCs)');
    return this.member.sendRPC(type, data);
  }
}

mixin(Peer, PeerLinks, PeerUpdates, PeerResume, PeerStatus);
