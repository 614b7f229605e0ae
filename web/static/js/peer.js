// A participant of a room — a port of the Go peer (peer/peer.go, member.go, host.go, updates.go):
// a signaling client, WebRTC links to other members, and the host or member role over a World.
// The session protocol is docs/protocol.md §5; this file follows the Go code step by step
// so that a browser and Go peers can be each other's host.
//
// The page has one thread, so the Go loop becomes "steps": every event (a link message, a
// signaling message, a timer) runs as one step, after which the host sends the commands the step
// produced, the app hears the step's events, and the write batch closes (one Lamport stamp per step).

import * as netmsg from './netmsg.js';
import { Type, MAX_RELIABLE, MAX_DATAGRAM } from './netmsg.js';
import * as crdt from './crdt.js';
import * as hostsnapshot from './hostsnapshot.js';
import { COMPONENT_META, COMPONENT_AUTHORITY, appendMeta } from './schema.js';
import { SignalingClient, REDIAL, redialWait, nextRedialDelay } from './signaling.js';
import { Link, MemoryLink, isMemoryOffer, RELIABLE, UNRELIABLE } from './rtc.js';
import {
  World, AuthorityTable, Ev, nopSink, encodeRecord, entityNumber,
  PUT_COMPONENT, DELETE_COMPONENT, DELETE_ENTITY, DELETE_ENTITY_NETWORK,
  KIND_HOST, KIND_AVATAR, KIND_LOCK, FIRST_SYSTEM_RPC, RPC_LOCK_REQUEST, RPC_RELINQUISH,
} from './world.js';

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

/** How long a member waits for its link to the host to open before making it again. */
const CONNECT_TIMEOUT_MS = 5000;
/** How far above its clock the host follows a timestamp it rejected. */
const MAX_CLOCK_SKEW = 1 << 20;
/** Keys re-stamped and remembered at most; past it the memory starts over (a rejection storm). */
const MAX_RESTAMPED = 1 << 16;
/** Close code: the member runs another schema table. */
export const CLOSE_SCHEMA_MISMATCH = 1;

const U32_MAX = 0xffffffff;
const now = () => performance.now();

/** Lowercase 16-hex-digit form of a u64 BigInt (the replica hash in reports). */
export function hex16(h) {
  return BigInt.asUintN(64, BigInt(h)).toString(16).padStart(16, '0');
}

function u32le(b) {
  return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
}

function trailingZeros(m) {
  return 31 - Math.clz32(m & -m);
}

const utf8 = new TextEncoder();
const utf8Lossy = new TextDecoder('utf-8');

/**
 * Makes an identity fit TRNP's peer id (≤ 256 bytes of UTF-8): signaling admits "user/device" of
 * up to 257 bytes, so cut at a character boundary (Go's wirePeerID).
 */
export function wirePeerID(id) {
  let b = utf8.encode(String(id ?? ''));
  if (b.length <= netmsg.MAX_PEER_ID_LEN) return utf8Lossy.decode(b);
  let n = netmsg.MAX_PEER_ID_LEN;
  while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
  b = b.subarray(0, n);
  return utf8Lossy.decode(b);
}

/** A message of the ADR-117 state as a CrdtBatch/correction entry (appendEntry in Go). */
/** The key of an LWW entry, as a BigInt (entity << 32 | component). */
function entryKey(e, c) {
  return (BigInt(e >>> 0) << 32n) | BigInt(c >>> 0);
}

function entryMessage(e, c, ts, data, deleted) {
  return deleted
    ? { type: DELETE_COMPONENT, entity: e, component: c, timestamp: ts, data: null }
    : { type: PUT_COMPONENT, entity: e, component: c, timestamp: ts, data };
}

class Remote {
  constructor(peer, idx, session) {
    this.p = peer;
    this.idx = idx;
    this.session = session;
    this.link = null;
    this.ready = false;
    this.reasm = new netmsg.Reassembler();
    this.fragID = 0;
    this.lastHeard = 0;
    this.rtt = 0; // ms
    // host side
    this.helloed = false;
    this.snapshotSent = false;
    this.acceptRelayed = false;
    // answered: the member has answered its sync snapshot (its corrections, if it had any, are
    // merged), so this host holds its latest writes.
    this.answered = false;
    this.info = null;
    this.dirty = new Map(); // entity → property mask
  }

  close() {
    if (this.link) this.link.close();
  }
}

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
    this.log = opts.log || ((level, msg, fields) => console[level === 'warn' ? 'warn' : 'log'](`concord: ${msg}`, fields || ''));
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
    this.stopped = false;
    this.count = { bytesIn: 0, bytesOut: 0, rejected: 0, fenced: 0, dropped: 0 };
    this.signalingState = 'connecting';
    this.resumeToken = '';
    this.held = false; // the replica has held the room's state (synced or hosted)
    this.resumes = 0;
    this.resumeRefused = '';
    this.peerId = '';
    this.listeners = new Set();
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

  /** A signaling client for this peer, with a resume claim or none. */
  signalingClient(resume) {
    const c = new SignalingClient({
      url: this.opts.url, room: this.opts.room, user: this.opts.user, device: this.opts.device,
      kind: this.opts.kind || 'browser', token: this.opts.token, resume, WebSocketImpl: this.opts.WebSocket,
      // Only the current client's events count: a replaced one's late close is ignored.
      onEvent: (ev) => this.step(() => { if (this.sig === c) this.handleSignaling(ev); }),
    });
    return c;
  }

  /**
   * Redials signaling after an unexpected close, with the resume claim of this peer's index, term
   * and host, until it resumes, the server refuses for good, or the peer stops.
   */
  async redial() {
    const w = this.w;
    const claim = {
      peerIndex: w.self, term: w.term, host: w.host, synced: this.held, room: this.opts.room,
    };
    if (this.resumeToken) claim.token = this.resumeToken;
    let delay = this.opts.redialMinMs;
    for (let attempt = 1; !this.stopped; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, redialWait(delay)));
      if (this.stopped) return;
      const c = this.signalingClient(claim);
      try {
        const j = await c.connect();
        if (this.stopped) {
          c.close();
          return;
        }
        this.step(() => this.adopt(c, j, attempt));
        return;
      } catch (err) {
        if (err && err.permanent) {
          this.step(() => {
            this.signalingState = 'refused';
            this.resumeRefused = err.message;
            this.log('error', 'signaling refused to resume this peer; playing on without signaling, state kept', { err: err.message });
          });
          return;
        }
        delay = nextRedialDelay(delay, this.opts.redialMaxMs);
      }
    }
  }

  /** Takes a resumed signaling client and reconciles with what the server says. */
  adopt(c, j, attempts) {
    if (j.self !== this.w.self) {
      c.close();
      this.signalingState = 'refused';
      this.resumeRefused = `resumed as ${j.self}, not ${this.w.self}`;
      return;
    }
    this.sig = c;
    this.signalingState = 'connected';
    this.resumeToken = j.resumeToken || '';
    this.members.clear();
    for (const m of j.members) this.members.set(m.peerIndex, m);
    this.resumes++;
    this.log('info', 'signaling resumed', { attempts, term: j.term, host: j.host, members: j.members.length });
    const hosting = this.host;
    this.setHost(j.term, j.host);
    if (this.host && this.host === hosting) this.host.sweepLater(); // a host that just started scheduled its own
    if (this.host || (this.member && this.member.synced)) this.setSynced();
    this.report();
  }

  every(ms, fn) {
    this.timers.push(setInterval(() => this.step(fn), ms));
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
    for (const r of this.remotes.values()) r.close();
    this.remotes.clear();
    if (this.sig) this.sig.close();
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

  handleSignal(from, pl) {
    let r = this.remotes.get(from);
    const session = pl.session || 0;
    if (pl.kind === 'offer' && this.host) {
      if (r) {
        r.close();
        this.remotes.delete(from);
      }
      r = this.connect(from, session, false, isMemoryOffer(pl));
    }
    if (!r || r.session !== session) return; // a signal for no link
    r.link.handleSignal(pl);
  }

  /**
   * Makes a link to member idx: WebRTC, or an in-page MemoryLink when this peer was made with
   * opts.memory (as offerer) or the offer asks for one (as answerer).
   */
  connect(idx, session, offerer, memory = offerer && !!this.opts.memory) {
    const r = new Remote(this, idx, session);
    const LinkClass = memory ? MemoryLink : Link;
    r.link = new LinkClass({
      remote: idx, session, offerer,
      signal: (pl) => this.sig && this.sig.signal(idx, pl),
      onMessage: (ch, bytes) => this.step(() => this.linkMessage(r, ch, bytes)),
      onReady: () => this.step(() => this.linkReady(r)),
      onClose: (reason) => this.step(() => this.linkClosed(r, reason)),
      iceServers: (this.sig && this.sig.joined && this.sig.joined.iceServers) || [],
    });
    this.remotes.set(idx, r);
    return r;
  }

  linkReady(r) {
    if (this.remotes.get(r.idx) !== r) return;
    r.ready = true;
    r.lastHeard = now();
    if (this.member && r === this.member.hostLink) this.member.linkReady();
  }

  linkClosed(r, reason) {
    if (this.remotes.get(r.idx) !== r) return;
    this.log('info', 'link closed', { remote: r.idx, reason });
    this.remotes.delete(r.idx);
    if (this.host) this.host.linkClosed(r);
    if (this.member && r === this.member.hostLink) this.member.hostLinkClosed();
  }

  linkMessage(r, ch, bytes) {
    if (this.remotes.get(r.idx) !== r) return;
    r.ready = true;
    this.count.bytesIn += bytes.length;
    r.lastHeard = now();
    try {
      this.handlePayload(r, ch, bytes, 0);
    } catch (err) {
      this.log('warn', 'protocol error; closing link', { remote: r.idx, err: String(err && err.message || err) });
      this.dropRemote(r);
    }
  }

  /** Walks the messages of one payload. A thrown error ends the link. */
  handlePayload(r, ch, payload, depth) {
    if (ch === UNRELIABLE) netmsg.checkDatagram(payload);
    let stamp = 0n;
    const onUnknown = () => { this.count.dropped++; };
    for (const m of netmsg.readMessages(payload, { onUnknown })) {
      switch (m.type) {
        case Type.Fragment: {
          if (depth > 0) throw new Error('fragment inside a fragmented payload');
          const whole = r.reasm.push(m);
          if (whole) this.handlePayload(r, ch, whole, depth + 1);
          continue;
        }
        case Type.Stamp:
          stamp = m.time;
          continue;
        case Type.Ping:
          this.send(r, RELIABLE, netmsg.encode({ type: Type.Pong, nonce: m.nonce, echoTime: m.sendTime }));
          continue;
        case Type.Pong:
          r.rtt = (Number(this.monotonic() - m.echoTime)) / 1e6;
          continue;
        case Type.Close:
          this.log('warn', 'remote closed the session', { remote: r.idx, code: m.code, reason: m.reason });
          continue;
        default:
      }
      if (this.host) this.host.handle(r, m);
      else if (this.member && r === this.member.hostLink) this.member.handle(m, stamp);
      else this.count.fenced++;
    }
  }

  /** Monotonic nanoseconds as a u64 BigInt (Ping send times). */
  monotonic() {
    return BigInt(Math.round(now() * 1e6));
  }

  /** Sends a payload to r, fragmenting a reliable payload above the message limit. */
  send(r, ch, payload) {
    if (!r || !r.link || !r.ready) return;
    if (ch === RELIABLE && payload.length > MAX_RELIABLE) {
      r.fragID = (r.fragID + 1) >>> 0;
      for (const f of netmsg.fragment(payload, r.fragID, MAX_RELIABLE)) {
        if (!this.sendOne(r, ch, f)) return;
      }
      return;
    }
    this.sendOne(r, ch, payload);
  }

  sendOne(r, ch, b) {
    if (r.link.send(ch, b)) {
      this.count.bytesOut += b.length;
      return true;
    }
    if (r.link.dead) {
      this.log('warn', 'send failed; closing link', { remote: r.idx, reason: r.link.reason });
      this.dropRemote(r);
      return false;
    }
    this.count.dropped++; // dropped (channel not open yet, or unreliable over its threshold): anti-entropy heals
    return true;
  }

  dropRemote(r) {
    if (this.remotes.get(r.idx) === r) {
      this.remotes.delete(r.idx);
      if (this.host) this.host.linkClosed(r);
      if (this.member && r === this.member.hostLink) this.member.hostLinkClosed();
    }
    r.close();
  }

  report() {
    const st = this.status();
    if (this.sig && !this.sig.closed) {
      this.sig.report({ term: st.term, clock: st.clock, entities: st.entities, hash: st.hash });
    }
    if (this.member) this.member.ping();
  }

  /** after runs fn as a step once ms have passed, unless the peer stops first. */
  after(ms, fn) {
    setTimeout(() => this.step(fn), ms);
  }

  setSynced() {
    if (this.sig && !this.sig.closed) this.sig.synced();
  }

  /** A summary of the peer for the page and tools. */
  status() {
    const w = this.w;
    let rtt = 0;
    if (this.member && this.member.hostLink) rtt = this.member.hostLink.rtt;
    const synced = !!this.host || !!(this.member && this.member.synced);
    let state = 'connecting';
    if (this.stopped) state = 'left';
    else if (this.host) state = 'hosting';
    else if (this.member && this.member.synced) state = 'connected';
    else if (this.member && this.member.wasSynced) state = 'migrating';
    else if (w.host === 0 && w.self) state = 'no host';
    return {
      self: w.self, peerId: this.peerId, host: w.host, term: w.term, isHost: !!this.host, synced, state,
      signaling: this.signalingState, resumes: this.resumes, resumeRefused: this.resumeRefused,
      entities: w.size, clock: w.clock, hash: hex16(w.r.hash()),
      members: this.members.size, links: this.remotes.size, rtt,
      bytesIn: this.count.bytesIn, bytesOut: this.count.bytesOut,
      rejected: this.count.rejected, fenced: this.count.fenced, dropped: this.count.dropped,
    };
  }

  // RPCs to the host (members only).

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

  // EntityUpdates (updates.go).

  flushUpdates() {
    if (this.host) {
      for (const r of this.remotes.values()) if (r.snapshotSent) this.sendUpdates(r, r.dirty);
      return;
    }
    if (this.member && this.member.synced && this.member.hostLink) this.sendUpdates(this.member.hostLink, this.member.dirty);
  }

  /**
   * Turns dirty (entity → property mask) into ≤ 1200-byte datagrams, one EntityUpdates per
   * timestamp (a relayed value keeps its author's stamp), and clears what it sent.
   */
  sendUpdates(r, dirty) {
    if (dirty.size === 0 || !r.ready) return;
    const w = this.w;
    const items = [];
    for (const [e, mask] of dirty) {
      const info = w.ents.get(e);
      if (!info) {
        dirty.delete(e);
        continue;
      }
      const start = items.length;
      for (let m = mask; m !== 0; m &= m - 1) {
        const i = trailingZeros(m);
        const v = w.r.get(e, info.schema.properties[i].component);
        if (!v || v.deleted) continue;
        const ts = Number(v.ts);
        let j = start;
        while (j < items.length && items[j].ts !== ts) j++;
        if (j === items.length) items.push({ ts, e, mask: 0 });
        items[j].mask |= 1 << i;
      }
      if (items.length === start) dirty.delete(e);
    }
    items.sort((a, b) => (a.ts - b.ts) || (a.e - b.e));

    const wr = new netmsg.EntityUpdatesWriter(MAX_DATAGRAM);
    let open = false;
    let cur = -1;
    let sent = 0;
    const flush = () => {
      sent++;
      const ok = this.sendOne(r, UNRELIABLE, wr.bytes());
      wr.clear();
      open = false;
      return ok && sent < this.opts.maxDatagramsPerFlush;
    };
    for (const it of items) {
      const info = w.ents.get(it.e);
      const s = info.schema;
      const parts = [];
      for (let m = it.mask; m !== 0; m &= m - 1) {
        const i = trailingZeros(m);
        parts.push(s.appendValue(i, w.r.get(it.e, s.properties[i].component).data));
      }
      const u = { networkId: BigInt(it.e), maskBits: netmsg.maskWidth(s.properties.length), mask: it.mask >>> 0, data: netmsg.concat(...parts) };
      if (netmsg.sizeUpdate(u) + MAX_DATAGRAM / 64 > MAX_DATAGRAM) {
        this.log('warn', 'update larger than a datagram; dropped', { entity: it.e });
        this.clearDirty(dirty, it.e, it.mask);
        continue;
      }
      const need = netmsg.sizeUpdate(u) + (!open || it.ts !== cur ? 13 : 0);
      if (wr.length > 0 && wr.length + need > MAX_DATAGRAM) {
        if (!flush()) return;
      }
      if (!open || it.ts !== cur) {
        wr.begin(BigInt(it.ts));
        open = true;
        cur = it.ts;
      }
      wr.add(u);
      this.clearDirty(dirty, it.e, it.mask);
    }
    if (wr.length > 0) this.sendOne(r, UNRELIABLE, wr.bytes());
  }

  clearDirty(dirty, e, mask) {
    const left = (dirty.get(e) || 0) & ~mask;
    if (left === 0) dirty.delete(e);
    else dirty.set(e, left);
  }

  /**
   * Merges an EntityUpdates message from origin with merge (default: the world's mergeRemote);
   * admit decides, per entity, whether origin may write it.
   */
  applyUpdates(eu, origin, admit, merge = (m, o) => this.w.mergeRemote(m, o)) {
    if (eu.time > BigInt(U32_MAX)) {
      this.count.dropped++;
      return;
    }
    const ts = Number(eu.time);
    const w = this.w;
    for (const u of eu.updates) {
      if (u.networkId >> 32n !== 0n) {
        this.count.dropped++;
        continue;
      }
      const e = Number(u.networkId);
      const info = w.ents.get(e);
      if (!info || !netmsg.checkMask(u, info.schema.properties.length)) {
        this.count.dropped++; // not spawned here yet (the unreliable channel overtook it), or bad
        continue;
      }
      if (!admit(e)) continue;
      const s = info.schema;
      const vals = [];
      try {
        s.consumeValues(u.data, u.mask, (i, v) => vals.push([i, v]));
      } catch {
        this.count.dropped++;
        continue;
      }
      for (const [i, v] of vals) {
        merge({ type: PUT_COMPONENT, entity: e, component: s.properties[i].component, timestamp: ts, data: v }, origin);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Member role (member.go).

class MemberRole {
  constructor(p) {
    this.p = p;
    this.w = p.w;
    this.hostLink = null;
    this.synced = false;
    this.wasSynced = false;
    this.dirty = new Map();
    p.w.sink = this;
    p.w.isHost = false;
  }

  /** Connects to a new host. The replica is kept: the new host's snapshot is merged into it. */
  follow(host) {
    const p = this.p;
    if (this.hostLink) {
      p.remotes.delete(this.hostLink.idx);
      this.hostLink.close();
      this.hostLink = null;
    }
    if (this.synced) {
      this.w.events.push({ kind: Ev.Migrating, term: this.w.term, peer: host });
      this.wasSynced = true;
    }
    this.synced = false;
    p.session++;
    const r = p.connect(host, p.session, true);
    this.hostLink = r;
    // A link that is not up in time (an offer lost, ICE stuck) is dropped and made again.
    p.after(CONNECT_TIMEOUT_MS, () => {
      if (this.hostLink === r && !r.ready) {
        p.log('warn', 'link to host not up in time; retrying', { host });
        p.dropRemote(r);
      }
    });
  }

  stop() {
    if (this.hostLink) {
      this.p.remotes.delete(this.hostLink.idx);
      this.hostLink.close();
      this.hostLink = null;
    }
  }

  /** Greets the host and sends the digests it answers with a snapshot. */
  linkReady() {
    const w = this.w;
    const hello = netmsg.encode({ type: Type.Hello, term: BigInt(w.term), peerIndex: BigInt(w.self), schemaFingerprint: w.schemas.fingerprint });
    this.p.send(this.hostLink, RELIABLE, netmsg.concat(hello, this.digest()));
  }

  digest() {
    const w = this.w;
    return netmsg.encode({ type: Type.Digest, term: BigInt(w.term), clock: w.clock, digests: w.r.bucketDigests(this.p.opts.buckets) });
  }

  sendDigest() {
    if (!this.synced || !this.hostLink || !this.hostLink.ready) return;
    this.p.send(this.hostLink, RELIABLE, this.digest());
  }

  ping() {
    if (!this.hostLink || !this.hostLink.ready) return;
    this.p.send(this.hostLink, RELIABLE, netmsg.encode({ type: Type.Ping, nonce: BigInt(this.w.clock), sendTime: this.p.monotonic() }));
  }

  hostLinkClosed() {
    const host = this.hostLink.idx;
    this.hostLink = null;
    this.retry(host);
  }

  retry(host) {
    const p = this.p;
    p.after(500, () => {
      if (p.member === this && !this.hostLink && p.w.host === host) this.follow(host);
    });
  }

  /** Processes one message from the host of the current term. */
  handle(m, stamp) {
    const p = this.p;
    const w = this.w;
    switch (m.type) {
      case Type.HostSnapshot: {
        if (Number(m.hostPeerIndex) !== w.host || Number(m.localPeerIndex) !== w.self) {
          p.count.fenced++;
          return;
        }
        const { info, corrections } = hostsnapshot.apply(w.r, w.schemas, m, (cm) => w.mergeRemote(cm, w.host));
        if (Number(info.term) !== w.term) p.count.fenced++;
        // The first batch after a sync snapshot may carry host entities (values a previous host
        // sent that this host missed). This member always sends it, empty when it has nothing to
        // correct, so that the host closes that window at once.
        if (corrections.length > 0 || !this.synced) {
          p.send(this.hostLink, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: BigInt(w.term), messages: corrections }));
        }
        if (!this.synced) {
          this.synced = true;
          this.wasSynced = true;
          p.held = true;
          w.events.push({ kind: Ev.Synced, term: w.term, peer: w.host });
          p.log('info', 'synced', { entities: w.size, corrections: corrections.length });
          p.setSynced();
        }
        break;
      }
      case Type.HostCommands:
        this.applyCommands(m, stamp);
        break;
      case Type.PeerEntered:
        w.events.push({ kind: Ev.PeerEntered, peer: Number(m.peer.peerIndex) });
        break;
      case Type.PeerExited:
        w.events.push({ kind: Ev.PeerExited, peer: Number(m.peerIndex) });
        break;
      case Type.EntityUpdates:
        p.applyUpdates(m, w.host, () => true);
        break;
      case Type.CrdtBatch:
        if (Number(m.term) !== w.term) {
          p.count.fenced++;
          return;
        }
        for (const cm of crdt.readStream(m.messages)) w.mergeRemote(cm, w.host);
        break;
      default:
        p.count.dropped++;
    }
  }

  /** Merges a HostCommands stamped with the host's Lamport time. */
  applyCommands(hc, stamp) {
    const p = this.p;
    const w = this.w;
    if (stamp > BigInt(U32_MAX)) {
      p.count.dropped++;
      return;
    }
    const ts = Number(stamp);
    const spawned = new Set();
    for (const sp of hc.spawns) {
      const s = w.schemas.lookup(sp.schemaId);
      if (!s || sp.networkId >> 32n !== 0n) {
        p.count.dropped++;
        continue;
      }
      const e = Number(sp.networkId);
      const vals = [];
      try {
        hostsnapshot.spawnValues(s, sp.updateData, (i, v) => vals.push([i, v]));
      } catch {
        p.count.dropped++;
        continue;
      }
      w.mergeRemote({ type: PUT_COMPONENT, entity: e, component: COMPONENT_META, timestamp: ts, data: appendMeta(s.id, sp.creationData) }, w.host);
      for (const [i, v] of vals) {
        w.mergeRemote({ type: PUT_COMPONENT, entity: e, component: s.properties[i].component, timestamp: ts, data: v }, w.host);
      }
      spawned.add(e);
    }
    for (const d of hc.despawns) {
      if (d.networkId >> 32n === 0n) w.mergeRemote({ type: DELETE_ENTITY, entity: Number(d.networkId), component: 0, timestamp: 0, data: null }, w.host);
    }
    for (const t of hc.authorityTransfers) {
      if (t.networkId >> 32n !== 0n) continue;
      const e = Number(t.networkId);
      const to = Number(t.newAuthorIndex);
      // TRNP's transfer names only the new author; the kind follows from context.
      let rec = { kind: KIND_LOCK, peer: to };
      if (spawned.has(e)) rec = { kind: KIND_AVATAR, peer: to };
      else if (to === w.host) rec = { kind: KIND_HOST, peer: 0 };
      w.mergeRemote({ type: PUT_COMPONENT, entity: e, component: COMPONENT_AUTHORITY, timestamp: ts, data: encodeRecord(rec) }, w.host);
    }
    for (const rpc of hc.rpcs) p.app.rpc(w, w.host, rpc.type, rpc.data);
    for (const a of hc.actions) p.app.rpc(w, w.host, a.type, a.data);
  }

  sendRPC(type, data) {
    if (!this.hostLink || !this.hostLink.ready) throw new Error('peer: no link to the host');
    this.p.send(this.hostLink, RELIABLE, netmsg.encode({ type: Type.PeerCommands, rpcs: [{ type, data }] }));
  }

  // change sink: a member sends only its own writes.
  propChanged(e, prop, origin) {
    if (origin === 0) this.dirty.set(e, (this.dirty.get(e) || 0) | (1 << prop));
  }
  spawned() {}
  despawned(e) { this.dirty.delete(e); }
  authorityChanged() {}
  otherChanged() {}
}

// ---------------------------------------------------------------------------------------------
// Host role (host.go).

class HostRole {
  constructor(p) {
    this.p = p;
    this.w = p.w;
    this.auth = null;
    this.spawns = [];
    this.despawns = [];
    this.transfers = [];
    this.rpcs = [];
    this.entered = [];
    this.exited = [];
    this.relay = []; // CRDT messages TRNP cannot carry
    this.changed = new Float64Array(p.opts.buckets).fill(-Infinity); // per bucket: when it last changed here
    this.rejectLog = 0;
    this.reassert = new Set();
    /** @type {Map<bigint, {before: number, after: number}>} keys restamp rewrote, until their author writes again */
    this.restamped = new Map();
    this.own = null; // the host's bucket digests, recomputed after a change
    this.ownStale = true;
  }

  /** Becomes the host: rebuild authority from the replica, let go of members that are gone, resume. */
  start() {
    const p = this.p;
    const w = this.w;
    const t = now();
    w.isHost = true;
    w.sink = this;
    this.auth = new AuthorityTable(w.self);
    for (const [e, info] of w.ents) {
      if (info.auth.kind !== KIND_HOST) {
        try {
          this.auth.restore(e, info.auth, t);
        } catch (err) {
          p.log('warn', 'authority record not restored', { entity: e, err: err.message });
        }
      }
    }
    // Members that are gone lose their avatars and locks, but not at once: this peer may have been
    // elected by a signaling server losing its sockets one by one, whose view of the room would
    // delete the avatars of members only cut off from signaling (as Go's hostRole.start).
    this.sweepLater();
    for (const [e, info] of w.ents) {
      if (info.auth.kind === KIND_LOCK && info.auth.peer === w.self) w.writeAuthority(e, { kind: KIND_HOST, peer: 0 });
    }
    p.log('info', 'now hosting', { entities: w.size, clock: w.clock });
    p.app.hostStart(w);
    if ((p.opts.kind || 'browser') !== 'host' && w.avatarOf(w.self) === undefined) {
      this.spawnAvatar({ index: w.self, id: p.peerId, kind: p.opts.kind || 'browser' });
    }
    w.events.push({ kind: Ev.Synced, term: w.term, peer: w.self });
  }

  stop() {
    for (const r of this.p.remotes.values()) r.close();
    this.p.remotes.clear();
  }

  spawnAvatar(info) {
    const p = this.p;
    const w = this.w;
    let e;
    try {
      e = p.app.spawnAvatar(w, info);
    } catch (err) {
      p.log('warn', 'avatar not spawned', { member: info.index, err: err.message });
      return;
    }
    if (e === undefined || e === null || (e === 0 && !w.exists(e))) return;
    try {
      this.auth.setAvatar(e, info.index);
    } catch (err) {
      p.log('warn', 'avatar authority refused', { err: err.message });
      return;
    }
    w.writeAuthority(e, { kind: KIND_AVATAR, peer: info.index });
  }

  /**
   * Takes members that own avatars or locks but are not in the room (as signaling says) and have
   * no open link to this host as gone. Without signaling it does nothing.
   */
  sweepGone() {
    const p = this.p;
    if (!p.sig || p.signalingState !== 'connected') return;
    const gone = new Set();
    for (const info of this.w.ents.values()) {
      const idx = info.auth.peer;
      if (info.auth.kind === KIND_HOST || idx === this.w.self || p.members.has(idx)) continue;
      const r = p.remotes.get(idx);
      if (r && r.ready) continue;
      gone.add(idx);
    }
    for (const idx of gone) this.memberLeft(idx);
  }

  /** Runs sweepGone once members have had resumeSettleMs to resume. */
  sweepLater() {
    const p = this.p;
    p.after(p.opts.resumeSettleMs, () => { if (p.host === this) this.sweepGone(); });
  }

  /** Despawns the member's avatars and returns its locks to the host. */
  memberLeft(idx) {
    const p = this.p;
    const w = this.w;
    const r = p.remotes.get(idx);
    if (r) {
      p.remotes.delete(idx);
      r.close();
    }
    const { avatars, released } = this.auth.leave(idx);
    for (const [e, info] of w.ents) {
      if (info.auth.kind === KIND_AVATAR && info.auth.peer === idx) avatars.push(e);
    }
    for (const e of avatars) if (w.exists(e)) w.despawn(e);
    for (const t of released) w.writeAuthority(t.entity, { kind: KIND_HOST, peer: 0 });
    this.exited.push(idx);
  }

  /**
   * Signaling says member idx left the room. A member whose link to this host is still up has only
   * lost its signaling socket (it redials and resumes its index): it keeps its avatar and locks
   * while it is heard, for a deletion would be final everywhere (as Go's hostRole.signalingLeft).
   */
  signalingLeft(idx) {
    const r = this.p.remotes.get(idx);
    if (r && r.ready) {
      this.p.log('info', 'member left signaling but its link is up: kept while it is heard', { member: idx });
      this.confirmGone(idx);
      return;
    }
    this.memberLeft(idx);
  }

  /** Takes member idx, unlisted by signaling, as gone once it has been silent on its link for a while. */
  confirmGone(idx) {
    const p = this.p;
    const silence = 2 * Math.max(p.opts.digestMs, p.opts.reportMs);
    p.after(silence, () => {
      if (p.host !== this || p.members.has(idx)) return; // resumed
      const r = p.remotes.get(idx);
      if (!r) return; // its link closed: linkClosed took it as gone, or signaling is down
      if (r.ready && now() - r.lastHeard < silence) {
        this.confirmGone(idx);
        return;
      }
      p.log('info', 'member gone: not in the room and silent', { member: idx });
      this.memberLeft(idx);
    });
  }

  /** A member that signaling no longer lists, and whose link is now gone too, has left. */
  linkClosed(r) {
    const p = this.p;
    if (!p.members.has(r.idx) && p.sig && p.signalingState === 'connected' && r.ready) this.memberLeft(r.idx);
  }

  tick(t) {
    for (const x of this.auth.expire(t)) {
      this.p.log('info', 'lock expired', { entity: x.entity, holder: x.from });
      this.w.writeAuthority(x.entity, { kind: KIND_HOST, peer: 0 });
    }
  }

  /** Processes one message from member r. */
  handle(r, m) {
    const p = this.p;
    const w = this.w;
    this.auth.touch(r.idx, now());
    switch (m.type) {
      case Type.Hello: {
        if (m.schemaFingerprint !== w.schemas.fingerprint) {
          p.send(r, RELIABLE, netmsg.encode({ type: Type.Close, code: CLOSE_SCHEMA_MISMATCH, reason: 'schema table differs from the host\'s' }));
          p.log('warn', 'member runs another schema table; refused', { member: r.idx });
          return;
        }
        if (Number(m.peerIndex) !== r.idx) throw new Error('hello from the wrong peer index');
        r.helloed = true;
        const mem = p.members.get(r.idx);
        r.info = { index: r.idx, id: mem ? mem.peerId : '', kind: mem ? mem.kind : '' };
        break;
      }
      case Type.Digest:
        if (!r.helloed) throw new Error('digest before hello');
        // A member sends its next digest after its corrections, on the same ordered channel: its
        // answer to the sync snapshot is in.
        if (r.snapshotSent) r.answered = true;
        this.answerDigest(r, m);
        break;
      case Type.PeerCommands:
        for (const rpc of m.rpcs) this.rpc(r, rpc);
        break;
      case Type.EntityUpdates:
        if (!r.snapshotSent) return;
        p.applyUpdates(m, r.idx, (e) => this.admit(r, e, m.time), (cm, origin) => this.mergeWrite(cm, origin));
        break;
      case Type.CrdtBatch:
        this.corrections(r, m);
        break;
      default:
        p.count.dropped++;
    }
  }

  admit(r, e, ts) {
    try {
      this.auth.admitWrite(r.idx, e);
      return true;
    } catch (err) {
      this.rejected(r, e, ts, err);
      return false;
    }
  }

  rejected(r, e, ts, err) {
    const p = this.p;
    p.count.rejected++;
    if (this.rejectLog < 20 || this.rejectLog % 1000 === 0) {
      p.log('warn', 'write rejected', { member: r.idx, entity: e, err: err.message });
    }
    this.rejectLog++;
    const t = BigInt(ts);
    if (t > BigInt(this.w.clock) + BigInt(MAX_CLOCK_SKEW)) return;
    this.w.r.observeClock(Number(t));
    this.reassert.add(e);
  }

  /** Re-stamps every entry of the entities queued by rejected and relays them. */
  restamp() {
    if (this.reassert.size === 0) return;
    const w = this.w;
    const due = new Set();
    for (const e of this.reassert) {
      if (this.ownerPending(e)) continue; // kept for a later batch
      due.add(e);
      this.reassert.delete(e);
    }
    if (due.size === 0) return;
    const entries = [];
    w.r.range((en) => {
      if (due.has(en.entity >>> 0)) entries.push({ ...en, data: en.data ? en.data.slice() : en.data });
      return true;
    });
    if (entries.length === 0) return;
    const ts = w.batchStamp();
    this.ownStale = true;
    if (this.restamped.size > MAX_RESTAMPED) this.restamped.clear();
    for (const en of entries) {
      w.r.writeAt(en.entity, en.component, ts, en.data, en.deleted);
      const k = entryKey(en.entity, en.component);
      const prev = this.restamped.get(k);
      // Re-stamped again, unchanged since: keep its author's stamp.
      const before = prev !== undefined && prev.after === en.timestamp ? prev.before : en.timestamp;
      this.restamped.set(k, { before, after: ts });
      this.relay.push(entryMessage(en.entity, en.component, ts, en.data, en.deleted));
    }
  }

  /**
   * Merges an admitted write from a member. A re-stamp puts the host's value above a rejected
   * write, so the author's next writes, stamped by a clock that has not seen the re-stamp yet,
   * arrive below it although they are newer than the value re-stamped: such a write wins, rewritten
   * under the host's stamp (as Go's hostRole.mergeWrite).
   */
  mergeWrite(m, origin) {
    const w = this.w;
    if (w.mergeRemote(m, origin) !== 'outdated' || this.restamped.size === 0) return;
    const k = entryKey(m.entity, m.component);
    const rk = this.restamped.get(k);
    if (rk === undefined) return;
    const cur = w.r.get(m.entity, m.component);
    if (cur === undefined || cur.ts !== rk.after) {
      this.restamped.delete(k); // written since the re-stamp: nothing left to make up for
      return;
    }
    if (m.timestamp <= rk.before) return; // older than the value re-stamped (a late datagram)
    const ts = w.batchStamp();
    const deleted = m.data === null;
    if (w.r.writeAt(m.entity, m.component, ts, m.data, deleted) === 'applied') {
      // The author's next writes of the burst, stamped before it hears of ts, are newer still.
      this.restamped.set(k, { before: m.timestamp, after: ts });
      w.observe({ ...m, timestamp: ts }, w.self); // to every member, the author included
    }
  }

  /** Compares a member's bucket digests with the host's; answers with a HostSnapshot of what differs. */
  answerDigest(r, dig) {
    const p = this.p;
    const w = this.w;
    const n = dig.digests.length;
    if (this.ownStale || !this.own || this.own.length !== n) {
      // Every change marks the digests stale; between changes all members share one computation.
      this.own = w.r.bucketDigests(n);
      this.ownStale = false;
    }
    const own = this.own;
    const t = now();
    const differ = [];
    for (let b = 0; b < n; b++) {
      if (own[b] === dig.digests[b]) continue;
      if (r.snapshotSent && n === this.changed.length && t - this.changed[b] < p.opts.quietMs) continue;
      differ.push(b);
    }
    const first = !r.snapshotSent;
    if (!first && differ.length === 0) return;
    this.sendSnapshot(r, hostsnapshot.Cover.only(n, differ));
    if (first) {
      r.snapshotSent = true;
      r.acceptRelayed = true;
      r.dirty = new Map();
      this.entered.push({ peerIndex: BigInt(r.idx), peerId: wirePeerID(r.info.id) });
      if (r.info.kind !== 'host' && w.avatarOf(r.idx) === undefined) this.spawnAvatar(r.info);
      p.log('info', 'member synced by snapshot', { member: r.idx, buckets: differ.length });
    }
  }

  sendSnapshot(r, cover) {
    const p = this.p;
    const w = this.w;
    const peers = [];
    for (const m of p.members.values()) peers.push({ peerIndex: BigInt(m.peerIndex), peerId: wirePeerID(m.peerId) });
    const snap = hostsnapshot.build(w.r, w.schemas, {
      term: BigInt(w.term), localPeerIndex: BigInt(r.idx), hostPeerIndex: BigInt(w.self), peers, cover,
    });
    p.send(r, RELIABLE, netmsg.encode({ type: Type.HostSnapshot, ...snap }));
  }

  /** Merges a member's CRDT corrections that authority allows. */
  corrections(r, b) {
    const w = this.w;
    if (Number(b.term) !== w.term) {
      this.p.count.fenced++;
      return;
    }
    const relayed = r.acceptRelayed;
    r.acceptRelayed = false;
    r.answered = true;
    let orphaned = false;
    for (const m of crdt.readStream(b.messages)) {
      if (relayed && (m.type === DELETE_ENTITY || m.type === DELETE_ENTITY_NETWORK) && !w.r.entityDeleted(m.entity >>> 0)) {
        // Only a host deletes entities, and a deletion is final in every replica that holds it:
        // refusing one would leave this member apart for good (as Go's hostRole.corrections).
        w.mergeRemote(m, r.idx);
        orphaned = true;
        continue;
      }
      try {
        this.auth.admitCorrection(r.idx, m.entity >>> 0, relayed);
      } catch (err) {
        if (this.holds(m)) {
          // This host already has the value or a newer one: the member converges to it without a
          // re-stamp (which would bury any newer write of the entity's owner still on its way).
          this.p.count.rejected++;
          continue;
        }
        this.rejected(r, m.entity >>> 0, m.timestamp || 0, err);
        continue;
      }
      w.mergeRemote(m, r.idx);
    }
    if (orphaned) this.respawnAvatars();
  }

  /** Gives a new avatar to every synced member that has none (its deletion reached this host late). */
  respawnAvatars() {
    for (const r of this.p.remotes.values()) {
      if (r.snapshotSent && r.info && r.info.kind !== 'host' && this.w.avatarOf(r.idx) === undefined) this.spawnAvatar(r.info);
    }
  }

  /** Whether the replica's entry for m's key is newer than m, or the same value. */
  holds(m) {
    if (m.type !== PUT_COMPONENT && m.type !== DELETE_COMPONENT) return false;
    const v = this.w.r.get(m.entity, m.component);
    if (!v || v.ts < m.timestamp) return false;
    if (v.ts > m.timestamp) return true;
    if (m.type === DELETE_COMPONENT) return v.deleted;
    if (v.deleted || v.data.length !== m.data.length) return false;
    for (let i = 0; i < v.data.length; i++) if (v.data[i] !== m.data[i]) return false;
    return true;
  }

  /**
   * Whether e is written by another member (its avatar, or a lock it holds) whose answer to its
   * sync snapshot has not arrived yet: until it has, this host may hold an older value of the
   * owner's writes, and re-stamping now would put it above the owner's latest write.
   */
  ownerPending(e) {
    const owner = this.auth.author(e);
    if (owner === this.w.self) return false;
    if (!this.p.members.has(owner)) return false; // memberLeft returns its entities to the host
    const r = this.p.remotes.get(owner);
    return !r || !r.answered;
  }

  rpc(r, rpc) {
    const p = this.p;
    const w = this.w;
    if (rpc.type < FIRST_SYSTEM_RPC) {
      p.app.rpc(w, r.idx, rpc.type, rpc.data);
      return;
    }
    if (rpc.data.length !== 4) {
      p.count.dropped++;
      return;
    }
    const e = u32le(rpc.data);
    switch (rpc.type) {
      case RPC_LOCK_REQUEST: {
        let t;
        try {
          t = this.auth.requestLock(r.idx, e, now());
        } catch {
          return; // refused
        }
        if (t.from !== t.to) w.writeAuthority(e, { kind: KIND_LOCK, peer: r.idx });
        break;
      }
      case RPC_RELINQUISH:
        try {
          this.auth.relinquish(r.idx, e);
          w.writeAuthority(e, { kind: KIND_HOST, peer: 0 });
        } catch { /* not its lock */ }
        break;
      default:
        p.count.dropped++;
    }
  }

  /** Sends the step's spawns, despawns, transfers, RPCs, membership changes and relayed CRDT messages. */
  flushCommands() {
    this.restamp();
    if (this.spawns.length + this.despawns.length + this.transfers.length + this.rpcs.length + this.entered.length + this.exited.length + this.relay.length === 0) return;
    const p = this.p;
    const w = this.w;
    const parts = [];
    if (this.spawns.length + this.despawns.length + this.transfers.length + this.rpcs.length > 0) {
      const stamp = w.stamp || w.clock;
      parts.push(netmsg.encode({ type: Type.Stamp, time: BigInt(stamp) }));
      const spawns = [];
      for (const e of this.spawns) {
        const info = w.ents.get(e);
        if (!info) continue;
        let mask = 0;
        info.schema.properties.forEach((prop, i) => {
          const v = w.r.get(e, prop.component);
          if (v && !v.deleted) mask |= 1 << i;
        });
        const updateData = hostsnapshot.appendSpawnUpdate(info.schema, mask >>> 0, (i) => w.get(e, i));
        spawns.push({ networkId: BigInt(e), schemaId: info.schema.id, creationData: info.creation, updateData });
      }
      parts.push(netmsg.encode({
        type: Type.HostCommands, spawns,
        despawns: this.despawns.map((e) => ({ networkId: BigInt(e) })),
        authorityTransfers: this.transfers,
        rpcs: this.rpcs, actions: [],
      }));
    }
    for (const pi of this.entered) parts.push(netmsg.encode({ type: Type.PeerEntered, peer: pi }));
    for (const idx of this.exited) parts.push(netmsg.encode({ type: Type.PeerExited, peerIndex: BigInt(idx) }));
    if (this.relay.length > 0) {
      parts.push(netmsg.encode({ type: Type.CrdtBatch, term: BigInt(w.term), messages: netmsg.concat(...this.relay.map((m) => crdt.encodeMessage(m))) }));
    }
    const buf = netmsg.concat(...parts);
    for (const r of p.remotes.values()) if (r.snapshotSent) p.send(r, RELIABLE, buf);
    this.spawns = [];
    this.despawns = [];
    this.transfers = [];
    this.rpcs = [];
    this.entered = [];
    this.exited = [];
    this.relay = [];
  }

  // change sink: the host turns accepted changes into traffic.

  touch(e) {
    this.ownStale = true;
    const n = this.changed.length;
    if (n > 0) this.changed[entityNumber(e) % n] = now();
  }

  propChanged(e, prop, origin) {
    this.touch(e);
    for (const r of this.p.remotes.values()) {
      if (r.snapshotSent && r.idx !== origin) r.dirty.set(e, (r.dirty.get(e) || 0) | (1 << prop));
    }
  }

  spawned(e, origin) {
    this.touch(e);
    if (origin === 0) {
      this.spawns.push(e);
      return;
    }
    this.relayEntity(e);
  }

  despawned(e) {
    this.touch(e);
    this.auth.despawn(e);
    for (const r of this.p.remotes.values()) r.dirty.delete(e);
    this.despawns.push(e);
  }

  authorityChanged(e, rec, origin) {
    this.touch(e);
    if (origin !== 0) {
      // A correction restored a record: adopt it, and relay the exact record.
      try { this.auth.restore(e, rec, now()); } catch { /* refused */ }
      this.relayKey(e, COMPONENT_AUTHORITY);
      return;
    }
    const to = rec.kind === KIND_HOST ? this.w.self : rec.peer;
    this.transfers.push({ networkId: BigInt(e), newAuthorIndex: BigInt(to) });
  }

  otherChanged(m) {
    this.touch(m.entity);
    this.relay.push(m.data && m.data.slice ? { ...m, data: m.data.slice() } : { ...m });
  }

  relayEntity(e) {
    this.w.r.range((en) => {
      if ((en.entity >>> 0) === e) this.relay.push(entryMessage(en.entity, en.component, en.timestamp, en.data ? en.data.slice() : en.data, en.deleted));
      return (en.entity >>> 0) <= e;
    });
  }

  relayKey(e, c) {
    const v = this.w.r.get(e, c);
    if (v) this.relay.push(entryMessage(e, c, v.ts, v.data ? v.data.slice() : v.data, v.deleted));
  }
}
