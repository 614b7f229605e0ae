// @ts-check
// The host role (peer/host.go): rebuilds authority from the replica when it takes over, syncs
// each member with a snapshot of what its digest lacks, admits members' writes, handles lock RPCs,
// and lets go of members that left. Re-stamping and corrections are in restamp.js, the commands
// and relays it sends after each step in hostcommands.js (see loop.js mixin).

import * as netmsg from './netmsg.js';
import { Type } from './netmsg.js';
import * as hostsnapshot from './hostsnapshot.js';
import { RELIABLE, UNRELIABLE, RELIABLE_HIGH_WATER, UNRELIABLE_DROP_THRESHOLD } from './rtc.js';
import { AuthorityTable, KIND_HOST, KIND_AVATAR, KIND_LOCK } from './authority.js';
import { Ev, FIRST_SYSTEM_RPC, RPC_LOCK_REQUEST, RPC_RELINQUISH, RPC_APPEND, EVERYONE, MAX_MESSAGE, MAX_ACTION } from './world.js';
import { deliverAction } from './member.js';
import { CLOSE_SCHEMA_MISMATCH } from './links.js';
import { hex16 } from './status.js';
import { now, mixin, mixinBase } from './loop.js';
import { HostRestamp, MAX_STAMP_SKEW } from './restamp.js';
import { HostCommands } from './hostcommands.js';
import * as crdt from './crdt.js';
import { admitWorld } from './worldlimits.js';
import { mergeCheckpoint } from './restore.js';

const utf8 = new TextEncoder();
const utf8Lossy = new TextDecoder('utf-8');

/**
 * Makes an identity fit TRNP's peer id (≤ 256 bytes of UTF-8): signaling admits "user/device" of
 * up to 257 bytes, so cut at a character boundary (Go's wirePeerID).
 * @param {unknown} id
 * @returns {string}
 */
export function wirePeerID(id) {
  let b = utf8.encode(String(id ?? ''));
  if (b.length <= netmsg.MAX_PEER_ID_LEN) return utf8Lossy.decode(b);
  let n = netmsg.MAX_PEER_ID_LEN;
  while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
  b = b.subarray(0, n);
  return utf8Lossy.decode(b);
}

/**
 * @param {Uint8Array} b
 */
function u32le(b) {
  return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
}

/**
 * A member's skew budget and strikes, kept across its links (Go's conduct; restamp.js conductOf).
 * @typedef {{budget: number, budgetAt: number | null, strikes: number, strikeAt: number | null, used: number}} Conduct
 */

/** What the host keeps about one member, for as long as its link lasts (Go's hostMember). */
export class HostMember {
  /**
   * @param {import('./links.js').Remote} r
   * @param {Conduct} conduct the member's skew budget and strikes, shared with its earlier links
   */
  constructor(r, conduct) {
    this.r = r;
    this.helloed = false;
    this.snapshotSent = false;
    // acceptRelayed: the member's next CRDT batch answers its sync snapshot and may carry host
    // entities it received from the previous host.
    this.acceptRelayed = false;
    // avatarAfterAnswer: a survivor (acceptRelayed) whose avatar waits for its answer to the sync
    // snapshot, which may bring back the avatar an earlier host gave it that this host never knew
    // (windowAvatarOK); a fresh one is spawned only if it does not (settleAvatar).
    this.avatarAfterAnswer = false;
    // answered: the member has answered its sync snapshot (its corrections, if it had any, are
    // merged), so this host holds its latest writes.
    this.answered = false;
    // snapClock, snapAt: the host's clock when it last sent this member a snapshot, and when
    // (staleDigest).
    this.snapClock = 0;
    this.snapAt = 0;
    /** What signaling says of the member, set by its Hello. @type {import('./peer.js').MemberInfo | null} */
    this.info = null;
    this.dirty = new Map(); // entity → property mask
    // heldTerm: the term of the state the member's greeting says it holds (0: none).
    this.heldTerm = 0;
    // buckets: the bucket count of the member's first digest; later digests must keep it.
    this.buckets = 0;
    // The member's skew budget (stampOK) and strikes (strike); refused: this link dropped for them.
    this.conduct = conduct;
    this.refused = false;
    // The member's application traffic still allowed (appAllowed) as of appAt.
    this.appBudget = 0;
    /** @type {number | null} */
    this.appAt = null;
    // relayOut: the bytes the member may still have relayed, every copy counted; relayIn: the
    // relayed bytes the host may still forward to it (forwardRelay).
    this.relayOut = newByteBudget();
    this.relayIn = newByteBudget();
  }
}

/** @typedef {{bytes: number, at: number | null}} ByteBudget a token bucket of bytes */

/** @returns {ByteBudget} */
function newByteBudget() {
  return { bytes: 0, at: null };
}

/**
 * Spends n bytes of b, refilled at rate a second up to burst since it was last used (Go's
 * byteBudget.take); false: b holds fewer than n and nothing is spent.
 * @param {ByteBudget} b
 * @param {number} t now, in ms
 * @param {number} rate
 * @param {number} burst
 * @param {number} n
 */
function takeBytes(b, t, rate, burst, n) {
  if (b.at === null) b.bytes = burst;
  else if (t > b.at) b.bytes = Math.min(burst, b.bytes + (t - b.at) / 1000 * rate);
  b.at = t;
  if (b.bytes < n) return false;
  b.bytes -= n;
  return true;
}

/**
 * A member's application traffic through the host (messages, Actions, append requests, RPCs,
 * one unit each), per second and in a burst (Go's appRate, appBurst). Beyond it the input is
 * dropped and counted, not held against the member.
 */
export const APP_RATE = 200;
export const APP_BURST = 400;
/**
 * Relayed application messages (docs/protocol.md §2.8, §5; Go's host_relay.go): a member's relay
 * bytes, each copy counted (a message to EVERYONE in a room of N costs N−1 copies), a second's
 * worth and at once; the relayed bytes forwarded to one member from all senders together; and
 * the backlog: a relayed reliable copy is dropped while the member's reliable channel holds more
 * than RELAY_BACKLOG bytes (an unreliable one past half the unreliable drop threshold), so that
 * relayed traffic never takes a link to the high-water mark that closes it. Each drop is counted
 * (status().refusedBy), none is a strike. Peer options relayRate, relayBurst, recvRelayRate,
 * recvRelayBurst and relayBacklog override them.
 */
export const RELAY_RATE = 256 * 1024;
export const RELAY_BURST = 512 * 1024;
export const RECV_RELAY_RATE = 128 * 1024;
export const RECV_RELAY_BURST = 256 * 1024;
export const RELAY_BACKLOG = RELIABLE_HIGH_WATER / 4;
/** The largest relayed message on the wire: no burst is below it. */
const MAX_RELAY_FRAME = MAX_MESSAGE + netmsg.RELAY_OVERHEAD;
// How long a host ignores a member's digests computed before its last snapshot arrived (a member
// that refused that snapshot is answered again after it); as the Go host's maxSnapshotWait.
export const MAX_SNAPSHOT_WAIT_MS = 10000;
/** The members whose world account a host keeps (Go's maxWorldAccounts). */
const MAX_WORLD_ACCOUNTS = 4096;

/** @type {new () => HostRestamp & HostCommands & import('./hostcommands.js').CommandQueues} */
const HostMethods = mixinBase();

/** The host role of a Peer: created when the peer becomes host, stopped when it steps down. */
export class HostRole extends HostMethods {
  /**
   * @param {import('./peer.js').Peer} p
   */
  constructor(p) {
    super();
    this.p = p;
    this.w = p.w;
    this.mems = new Map(); // peer index → HostMember, one per member link
    /** @type {Map<string, Conduct>} skew budgets and strikes by identity and by peer index, across links */
    this.conducts = new Map();
    // The authority records: start() restores them from the replica.
    this.auth = new AuthorityTable(p.w.self);
    this.clearCommands();
    this.changed = new Float64Array(p.opts.buckets).fill(-Infinity); // per bucket: when it last changed here
    this.rejectLog = 0;
    this.refuseLog = 0;
    this.lost = new Map(); // entity → {peer, at}: who last lost its authority, and when
    this.reassert = new Set();
    /** @type {Set<bigint>} keys of rejected corrections this host lacks: restamp deletes them (rejectedAbsent) */
    this.absent = new Set();
    /** @type {Map<bigint, {before: number, after: number}>} keys restamp rewrote, until their author writes again */
    this.restamped = new Map();
    this.own = null; // the host's bucket digests, recomputed after a change
    this.ownStale = true;
    /** @type {Map<string, number>} bytes each member's writes added to the world, by identity (charge) */
    this.worldUse = new Map();
    // The survivors' correction window (restamp.js startWindow): set when the peer takes over.
    this.tookOver = 0;
    /** @type {Map<number, number>} earlier terms signaling recorded the members synced in, at takeover */
    this.survivors = new Map();
    /** @type {Set<number>} the members in the room at takeover */
    this.present = new Set();
    /** @type {Set<number>} the entities live at takeover */
    this.heldAtStart = new Set();
  }

  /** Becomes the host: rebuild authority from the replica, let go of members that are gone, resume. */
  start() {
    const p = this.p;
    const w = this.w;
    const t = now();
    w.isHost = true;
    w.heldTerm = w.term;
    w.sink = this;
    if (p.opts.restore && !p.restored) {
      // A kept room's checkpoint, once, before the authority records are rebuilt (they adopt its
      // records) and before the game's hostStart (which sees the restored world, not an empty one).
      p.restored = true;
      try {
        const n = mergeCheckpoint(w, p.opts.restore);
        p.log('info', 'room restored', { messages: n, entities: w.size, clock: w.clock });
      } catch (err) {
        p.log('error', 'checkpoint not merged', { err: err instanceof Error ? err.message : String(err) });
      }
    }
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
    this.startWindow();
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
    this.mems.clear();
  }

  /**
   * The state of the member at the other end of r, made fresh for a new link.
   * @param {import('./links.js').Remote} r
   */
  memberOf(r) {
    let hm = this.mems.get(r.idx);
    if (!hm || hm.r !== r) {
      hm = new HostMember(r, this.conductOf(r.idx));
      this.mems.set(r.idx, hm);
    }
    return hm;
  }

  /**
   * Drops the state kept for r's member (its link is gone or replaced).
   * @param {import('./links.js').Remote} r
   */
  forget(r) {
    const hm = this.mems.get(r.idx);
    if (hm && hm.r === r) this.mems.delete(r.idx);
  }

  /**
   * @param {import('./peer.js').MemberInfo} info
   */
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

  /**
   * Despawns the member's avatars and returns its locks to the host.
   * @param {number} idx
   */
  memberLeft(idx) {
    const p = this.p;
    const w = this.w;
    const r = p.remotes.get(idx);
    if (r) {
      p.remotes.delete(idx);
      r.close();
    }
    this.mems.delete(idx);
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
   * @param {number} idx
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

  /**
   * Takes member idx, unlisted by signaling, as gone once it has been silent on its link for a while.
   * It asks first: any peer answers a Ping with a Pong, and a sleeping Go member (docs/protocol.md §5,
   * "Idle members") sends nothing of its own for up to its report keepalive (as Go's
   * hostRole.confirmGone).
   * @param {number} idx
   */
  confirmGone(idx) {
    const p = this.p;
    const silence = 2 * Math.max(p.opts.digestMs, p.opts.reportMs);
    const asked = p.remotes.get(idx);
    let pongs = 0;
    if (asked && asked.ready) {
      pongs = asked.pongs;
      p.send(asked, RELIABLE, netmsg.encode({ type: Type.Ping, nonce: 0n, sendTime: p.monotonic() }));
    }
    p.after(silence, () => {
      if (p.host !== this || p.members.has(idx)) return; // resumed
      const r = p.remotes.get(idx);
      if (!r) return; // its link closed: linkClosed took it as gone, or signaling is down
      if (r.ready && (r !== asked || r.pongs !== pongs || now() - r.lastHeard < silence)) {
        this.confirmGone(idx);
        return;
      }
      p.log('info', 'member gone: not in the room and silent', { member: idx });
      this.memberLeft(idx);
    });
  }

  /**
   * A member that signaling no longer lists, and whose link is now gone too, has left.
   * @param {import('./links.js').Remote} r
   */
  linkClosed(r) {
    const p = this.p;
    this.forget(r);
    if (!p.members.has(r.idx) && p.sig && p.signalingState === 'connected' && r.ready) this.memberLeft(r.idx);
  }

  /**
   * @param {number} t
   */
  tick(t) {
    for (const x of this.auth.expire(t)) {
      this.p.log('info', 'lock expired', { entity: x.entity, holder: x.from });
      this.authorityLost(x.entity, x.from);
      this.w.writeAuthority(x.entity, { kind: KIND_HOST, peer: 0 });
    }
  }

  /**
   * Processes one message from member r.
   * @param {import('./links.js').Remote} r
   * @param {import('./netmsg.js').Msg} m
   */
  handle(r, m, ch = RELIABLE) {
    const p = this.p;
    const w = this.w;
    this.auth.touch(r.idx, now());
    const hm = this.memberOf(r);
    if (hm.refused) {
      p.count.dropped++;
      return;
    }
    this.handleMessage(r, hm, m, ch);
    if (hm.refused) throw new Error('member dropped for refused inputs');
  }

  /**
   * @param {import('./links.js').Remote} r
   * @param {HostMember} hm
   * @param {import('./netmsg.js').Msg} m
   * @param {number} ch
   */
  handleMessage(r, hm, m, ch) {
    const p = this.p;
    const w = this.w;
    switch (m.type) {
      case Type.Hello: {
        if (m.schemaFingerprint !== w.schemas.fingerprint) {
          // The reason names both tables, so that the member's error can (as Go's host says it).
          const reason = `schema table ${hex16(m.schemaFingerprint)} differs from the host's ${hex16(w.schemas.fingerprint)}`;
          p.send(r, RELIABLE, netmsg.encode({ type: Type.Close, code: CLOSE_SCHEMA_MISMATCH, reason }));
          p.log('warn', 'member runs another schema table; refused', { member: r.idx, reason });
          return;
        }
        if (Number(m.peerIndex) !== r.idx) throw new Error('hello from the wrong peer index');
        hm.helloed = true;
        hm.heldTerm = Number(m.term);
        const mem = p.members.get(r.idx);
        hm.info = { index: r.idx, id: mem ? mem.peerId : '', kind: mem ? mem.kind : '' };
        break;
      }
      case Type.Digest:
        if (!hm.helloed) throw new Error('digest before hello');
        if (hm.buckets === 0) hm.buckets = m.digests.length;
        else if (m.digests.length !== hm.buckets) {
          // Alternating bucket counts would defeat the quiet period and the digest cache.
          this.refuse(hm, `digest of ${m.digests.length} buckets after ${hm.buckets}`);
          return;
        }
        // Computed before the last snapshot arrived: it neither answers the sync snapshot nor says
        // what the snapshot repaired (staleDigest).
        if (hm.snapshotSent && this.staleDigest(hm, m)) break;
        if (hm.snapshotSent) {
          // A member sends its next digest after its corrections, on the same ordered channel:
          // its answer to the sync snapshot is in, and the window in which its corrections may
          // carry host entities closes (as Go's).
          hm.answered = true;
          hm.acceptRelayed = false;
          this.settleAvatar(hm);
        }
        this.answerDigest(hm, m);
        break;
      case Type.PeerCommands:
        for (const rpc of m.rpcs) this.rpc(r, rpc);
        break;
      case Type.EntityUpdates:
      case Type.PackedUpdates: // the same updates, packed (a Go peer's)
      case Type.RunUpdates: // the same updates, in runs (a Go peer's)
        if (!hm.snapshotSent) return;
        if (m.time <= 0xffffffffn && !this.stampOK(hm, m.time)) {
          this.refuse(hm, `updates stamped ${m.time}, more than ${MAX_STAMP_SKEW} above the host's clock ${w.clock}`);
          return;
        }
        p.applyUpdates(m, r.idx, (e) => this.admit(r, e, m.time), (cm, origin) => this.mergeWrite(cm, origin));
        break;
      case Type.CrdtBatch:
        this.corrections(hm, m);
        break;
      case Type.Relay:
        this.relayMessage(hm, m, ch);
        break;
      case Type.Ack:
        // A member asks for deltas (docs/protocol.md §2.10): a browser host sends whole values.
        break;
      case Type.Actions:
        if (!hm.snapshotSent) return;
        for (const a of m.actions) {
          if (!this.appAllowed(hm)) return;
          if (a.data.length > MAX_ACTION) {
            this.refuse(hm, `action of ${a.data.length} bytes, more than ${MAX_ACTION}`);
            continue;
          }
          deliverAction(p, r.idx, a);
        }
        break;
      default:
        if (m.type >= netmsg.FIRST_APPLICATION) {
          this.appMessage(hm, m.type, m.body);
          break;
        }
        p.count.dropped++;
    }
  }

  /**
   * Charges hm one unit of application traffic; false: over budget, dropped and counted.
   * @param {HostMember} hm
   */
  appAllowed(hm) {
    const t = now();
    hm.appBudget = hm.appAt === null ? APP_BURST : Math.min(APP_BURST, hm.appBudget + (t - hm.appAt) / 1000 * APP_RATE);
    hm.appAt = t;
    if (hm.appBudget < 1) {
      this.p.count.dropped++;
      return false;
    }
    hm.appBudget--;
    return true;
  }

  /**
   * An application message from member hm to the host.
   * @param {HostMember} hm
   * @param {number} type
   * @param {Uint8Array} data
   */
  appMessage(hm, type, data) {
    if (!hm.snapshotSent || !this.appAllowed(hm)) return;
    if (data.length > MAX_MESSAGE) {
      this.refuse(hm, `application message of ${data.length} bytes, more than ${MAX_MESSAGE}`);
      return;
    }
    this.toApp(hm.r.idx, type, data);
  }

  /**
   * Hands an application message from peer from to the host's app.
   * @param {number} from
   * @param {number} type
   * @param {Uint8Array} data
   */
  toApp(from, type, data) {
    if (this.p.app.message) this.p.app.message(this.w, from, type, data);
  }

  /**
   * Forwards a member's message to its destination as the app's allowRelay allows: one to the
   * host is delivered here, one to EVERYONE here and to every other member.
   * @param {HostMember} hm
   * @param {import('./netmsg.js').Msg} m
   * @param {number} ch
   */
  relayMessage(hm, m, ch) {
    if (!hm.snapshotSent || !this.appAllowed(hm)) return;
    const p = this.p;
    const from = hm.r.idx;
    const to = Number(m.peer);
    if (m.data.length > MAX_MESSAGE) {
      this.refuse(hm, `relayed message of ${m.data.length} bytes, more than ${MAX_MESSAGE}`);
      return;
    }
    if (to === this.w.self) {
      this.toApp(from, m.appType, m.data);
      return;
    }
    const dest = this.mems.get(to);
    if (to === from || (to !== EVERYONE && !(dest && dest.snapshotSent))) {
      p.count.dropped++; // the destination left, or never was
      return;
    }
    if (p.app.allowRelay && !p.app.allowRelay(this.w, from, to, m.appType)) {
      p.count.dropped++;
      return;
    }
    if (to === EVERYONE) this.toApp(from, m.appType, m.data);
    this.forwardRelay(hm, to, netmsg.encode({ type: Type.Relay, peer: BigInt(from), appType: m.appType, data: m.data }), ch);
  }

  /**
   * Forwards frame, a Relay from member hm to (a member, or EVERYONE), to every synced member it
   * is for, within the relay budgets (Go's relayer.forwardRelay).
   * @param {HostMember} hm
   * @param {number} to
   * @param {Uint8Array} frame
   * @param {number} ch
   */
  forwardRelay(hm, to, frame, ch) {
    const o = this.p.opts;
    const from = hm.r.idx;
    const dests = [];
    for (const [idx, dm] of this.mems) if (dm.snapshotSent && idx !== from && (to === EVERYONE || to === idx)) dests.push(dm);
    const t = now();
    if (!takeBytes(hm.relayOut, t, o.relayRate, Math.max(o.relayBurst, MAX_RELAY_FRAME), frame.length * dests.length)) {
      this.noteRefused(from, 'relay_budget', `relay of ${frame.length} bytes to ${dests.length} members over the sender's budget (${o.relayRate} B/s)`);
      return;
    }
    for (const dm of dests) {
      if (!takeBytes(dm.relayIn, t, o.recvRelayRate, Math.max(o.recvRelayBurst, MAX_RELAY_FRAME), frame.length)) {
        this.noteRefused(from, 'relay_inbound', `relay of ${frame.length} bytes to member ${dm.r.idx} over its inbound budget (${o.recvRelayRate} B/s)`);
        continue;
      }
      if (ch === RELIABLE) this.msgs.push({ to: dm.r.idx, except: from, frame, relayed: true });
      else this.sendRelayed(dm.r.idx, from, ch, frame);
    }
  }

  /**
   * Sends a relayed copy from member from to member to now, unless to's channel ch holds more
   * than its relay backlog: then the copy is dropped and counted.
   * @param {number} to
   * @param {number} from
   * @param {number} ch
   * @param {Uint8Array} frame
   */
  sendRelayed(to, from, ch, frame) {
    const dm = this.mems.get(to);
    if (!dm || !dm.snapshotSent) return;
    const limit = ch === RELIABLE ? this.p.opts.relayBacklog : UNRELIABLE_DROP_THRESHOLD / 2;
    const buffered = dm.r.link ? dm.r.link.buffered(ch) : 0;
    if (buffered > limit) {
      this.noteRefused(from, 'relay_backlog', `relay to member ${to}, whose queue on channel ${ch} holds ${buffered} bytes (relay backlog ${limit})`);
      return;
    }
    this.p.send(dm.r, ch, frame);
  }

  /**
   * Sends frame to member to (or every synced member but except): reliable frames after this
   * step's commands, unreliable ones at once.
   * @param {number} to
   * @param {number} except
   * @param {Uint8Array} frame
   * @param {number} ch
   */
  deliver(to, except, frame, ch) {
    if (ch === RELIABLE) {
      this.msgs.push({ to, except, frame });
      return;
    }
    this.sendTo(to, except, ch, frame);
  }

  /**
   * Sends frame now to member to (or every synced member but except) on ch.
   * @param {number} to
   * @param {number} except
   * @param {number} ch
   * @param {Uint8Array} frame
   */
  sendTo(to, except, ch, frame) {
    for (const [idx, hm] of this.mems) {
      if (hm.snapshotSent && idx !== except && (to === EVERYONE || to === idx)) this.p.send(hm.r, ch, frame);
    }
  }

  /**
   * The host's own application message.
   * @param {number} to
   * @param {number} type
   * @param {Uint8Array} data
   * @param {boolean} reliable
   */
  sendMessage(to, type, data, reliable) {
    const dest = this.mems.get(to);
    if (to !== EVERYONE && !(dest && dest.snapshotSent)) throw new Error(`peer: no member ${to} in the room`);
    this.deliver(to, 0, netmsg.encode({ type, body: data }), reliable ? RELIABLE : UNRELIABLE);
  }

  /**
   * The host's own Action, to every member with the step's commands.
   * @param {number} type
   * @param {Uint8Array} data
   */
  sendAction(type, data) {
    this.actions.push({ type, data: data.slice() });
  }

  /**
   * Hands host entity e to member to (World.grant).
   * @param {number} e
   * @param {number} to
   */
  grant(e, to) {
    if (to === this.w.self) {
      this.revoke(e);
      return;
    }
    if (!this.p.members.has(to)) throw new Error(`peer: no member ${to} in the room`);
    const t = this.auth.grant(to, e, now());
    if (t.from !== t.to) {
      this.authorityLost(e, t.from);
      this.w.writeAuthority(e, { kind: KIND_LOCK, peer: to });
    }
  }

  /**
   * Gives a granted or locked entity back to the host (World.revoke).
   * @param {number} e
   */
  revoke(e) {
    const rec = this.w.authorityRecord(e);
    if (rec.kind === KIND_HOST) return;
    if (rec.kind !== KIND_LOCK) throw new Error(`peer: ${e} is peer ${rec.peer}'s avatar`);
    this.auth.relinquish(rec.peer, e);
    this.authorityLost(e, rec.peer);
    this.w.writeAuthority(e, { kind: KIND_HOST, peer: 0 });
  }

  /**
   * Admits a member's append request: to an entity it writes, or as the app's allowAppend says.
   * @param {import('./links.js').Remote} r
   * @param {Uint8Array} data
   */
  appendRequested(r, data) {
    const p = this.p;
    const w = this.w;
    if (data.length < 8) {
      p.count.dropped++;
      return;
    }
    const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const e = dv.getUint32(0, true);
    const c = dv.getUint32(4, true);
    const value = data.subarray(8);
    try {
      w.checkAppend(e, c, value);
    } catch {
      p.count.dropped++;
      return;
    }
    let allowed = true;
    try { this.auth.admitWrite(r.idx, e); } catch { allowed = false; }
    if (!allowed && p.app.allowAppend) allowed = p.app.allowAppend(w, r.idx, e, c, value);
    if (!allowed) {
      p.count.rejected++;
      return;
    }
    const hm = this.memberOf(r);
    /** @type {import('./crdt.js').Message} */
    const m = { type: crdt.MessageType.AppendValue, entity: e, component: c, timestamp: 0, networkId: 0, data: value };
    const refusal = this.admitGrowth(hm, m);
    if (refusal) {
      this.refuse(hm, 'append: ' + refusal.message, refusal.reason);
      return;
    }
    const before = w.r.bytes;
    w.append(e, c, value);
    this.charge(hm, before);
  }

  /**
   * Checks a write of member hm against the world's bounds (worldlimits.js admitWorld) with the
   * bytes its writes added so far (Go's gate.admitGrowth).
   * @param {HostMember} hm
   * @param {import('./crdt.js').Message} m
   */
  admitGrowth(hm, m) {
    return admitWorld(this.w.r, this.w.limits, this.worldUse.get(this.worldKey(hm.r.idx)) || 0, m);
  }

  /**
   * Adds to hm's account what its write changed the world's size by since before (Go's
   * gate.charge): never below zero; at most MAX_WORLD_ACCOUNTS accounts, the smallest going.
   * @param {HostMember} hm
   * @param {number} before
   */
  charge(hm, before) {
    const d = this.w.r.bytes - before;
    if (d === 0) return;
    const k = this.worldKey(hm.r.idx);
    if (!this.worldUse.has(k) && this.worldUse.size >= MAX_WORLD_ACCOUNTS) {
      let least = '';
      let lv = Infinity;
      for (const [key, v] of this.worldUse) if (v < lv) { least = key; lv = v; }
      this.worldUse.delete(least);
    }
    this.worldUse.set(k, Math.max(0, (this.worldUse.get(k) || 0) + d));
  }

  /**
   * The key of the world account of the member linked as idx: its identity, else its index.
   * @param {number} idx
   */
  worldKey(idx) {
    const mem = this.p.members.get(idx);
    return mem && mem.peerId ? `id ${mem.peerId}` : `#${idx}`;
  }

  /**
   * Whether a member's digest was computed before the last snapshot this host sent it arrived:
   * its clock is below the snapshot's (applying a snapshot raises the member's clock to the
   * host's). Answering it would queue the same buckets again behind the snapshot on its way
   * (docs/protocol.md §5, "anti-entropy"); for up to MAX_SNAPSHOT_WAIT_MS after that snapshot.
   * @param {HostMember} hm
   * @param {import('./netmsg.js').Msg} dig
   */
  staleDigest(hm, dig) {
    return now() - hm.snapAt < MAX_SNAPSHOT_WAIT_MS && dig.clock < hm.snapClock;
  }

  /**
   * Compares a member's bucket digests with the host's; answers with a HostSnapshot of what differs.
   * @param {HostMember} hm
   * @param {import('./netmsg.js').Msg} dig
   */
  answerDigest(hm, dig) {
    const info = hm.info;
    if (!info) throw new Error('digest before hello'); // never: a Digest needs helloed, which Hello sets with info
    const r = hm.r;
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
      if (hm.snapshotSent && n === this.changed.length && t - this.changed[b] < p.opts.quietMs) continue;
      differ.push(b);
    }
    const first = !hm.snapshotSent;
    if (!first && differ.length === 0) return;
    this.sendSnapshot(r, hostsnapshot.Cover.only(n, differ));
    hm.snapClock = w.clock;
    hm.snapAt = t;
    if (first) {
      hm.snapshotSent = true;
      // Relayed corrections only from a member that held an earlier host's state, as signaling
      // recorded it (its greeting alone opens nothing).
      hm.acceptRelayed = this.survivorWindow(hm);
      // A survivor's avatar waits for its answer, which may bring back the one an earlier host
      // gave it (windowAvatarOK).
      hm.avatarAfterAnswer = hm.acceptRelayed && info.kind !== 'host';
      hm.dirty = new Map();
      this.entered.push({ peerIndex: BigInt(r.idx), peerId: wirePeerID(info.id) });
      if (!hm.avatarAfterAnswer && info.kind !== 'host' && w.avatarOf(r.idx) === undefined) this.spawnAvatar(info);
      p.log('info', 'member synced by snapshot', { member: r.idx, buckets: differ.length });
    }
  }

  /**
   * @param {import('./links.js').Remote} r
   * @param {import('./hostsnapshot.js').Cover} [cover]
   */
  sendSnapshot(r, cover) {
    const p = this.p;
    const w = this.w;
    const peers = [];
    for (const m of p.members.values()) peers.push({ peerIndex: BigInt(m.peerIndex), peerId: wirePeerID(m.peerId) });
    const snap = hostsnapshot.build(w.r, w.schemas, {
      term: BigInt(w.term), localPeerIndex: BigInt(r.idx), hostPeerIndex: BigInt(w.self), peers, cover,
    });
    p.send(r, RELIABLE, netmsg.encode(snap)); // build's fields, type HostSnapshot among them
  }

  /**
   * @param {import('./links.js').Remote} r
   * @param {{type: number, data: Uint8Array}} rpc
   */
  rpc(r, rpc) {
    const p = this.p;
    const w = this.w;
    const hm = this.memberOf(r);
    if (rpc.type < FIRST_SYSTEM_RPC) {
      if (this.appAllowed(hm)) p.app.rpc(w, r.idx, rpc.type, rpc.data);
      return;
    }
    if (rpc.type === RPC_APPEND) {
      if (this.appAllowed(hm)) this.appendRequested(r, rpc.data);
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
        if (t.from !== t.to) {
          this.authorityLost(e, t.from);
          w.writeAuthority(e, { kind: KIND_LOCK, peer: r.idx });
        }
        break;
      }
      case RPC_RELINQUISH:
        try {
          this.auth.relinquish(r.idx, e);
          this.authorityLost(e, r.idx);
          w.writeAuthority(e, { kind: KIND_HOST, peer: 0 });
        } catch { /* not its lock */ }
        break;
      default:
        p.count.dropped++;
    }
  }
}

mixin(HostRole, HostRestamp, HostCommands);
