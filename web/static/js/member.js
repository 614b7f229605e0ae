// @ts-check
// The member role (peer/member.go): follows the host of the current term over one link, greets it
// with Hello and Digest, merges its snapshots, commands, updates and CRDT batches, and sends only
// its own writes.

import * as netmsg from './netmsg.js';
import { Type } from './netmsg.js';
import * as crdt from './crdt.js';
import * as hostsnapshot from './hostsnapshot.js';
import { COMPONENT_META, COMPONENT_AUTHORITY, appendMeta, deltaCapable } from './schema.js';
import { RELIABLE, UNRELIABLE } from './rtc.js';
import { ACK_MS, DeltaRx, putRing, rebuild } from './delta.js';
import { KIND_HOST, KIND_AVATAR, KIND_LOCK, encodeRecord, AuthorityError, Reject } from './authority.js';
import { schemaMismatch } from './links.js';
import { hex16 } from './status.js';
import { now } from './loop.js';
import { Ev, FIRST_SPAWN_NUMBER, MAX_VERSION_AHEAD, knownVersion } from './world.js';

/** How long a member waits for its link to the host to open before making it again. */
const CONNECT_TIMEOUT_MS = 5000;
/**
 * Adaptive anti-entropy (docs/protocol.md §5, Go's memberRole.sendDigest): while the replica is
 * unchanged, the pause between digests doubles up to this many digest intervals (32 s at 1 s).
 */
export const DIGEST_MAX_GAP = 32;
const U32_MAX = 0xffffffff;
/**
 * How far above a synced member's clock it takes its host's stamps (Go's maxHostSkew): an honest
 * host is ahead by the ticks since the member last heard it; one beyond would freeze every later
 * host.
 */
export const MAX_HOST_SKEW = 1 << 16;
/**
 * What a member takes in a host's snapshot, its first from a new host included (Go's
 * memberRole.snapshotBounds; docs/protocol.md §5, "Limits"); beyond, the snapshot is refused
 * whole. A member that holds a replica allows the snapshot's clock MAX_HOST_SKEW above its own
 * plus SYNC_CLOCK_RATE a second since it last heard a host; one that holds nothing, up to
 * MAX_FRESH_CLOCK (2²⁸ of headroom kept).
 */
export const MAX_SNAPSHOT_BYTES = 32 << 20;
export const MAX_SNAPSHOT_VALUES = 1 << 21;
export const SYNC_CLOCK_RATE = 1 << 12;
export const MAX_FRESH_CLOCK = 0xffffffff - 2 ** 28;
const { PutComponent, DeleteEntity } = crdt.MessageType;

export class MemberRole {
  /**
   * @param {import('./peer.js').Peer} p
   */
  constructor(p) {
    this.p = p;
    this.w = p.w;
    this.hostLink = null;
    this.synced = false;
    this.wasSynced = false;
    this.dirty = new Map();
    /** @type {DeltaRx | null} what this member received as DeltaUpdates on its host link */
    this.delta = null;
    /** @type {import('./crdt.js').Message[]} this member's own CRDT messages not yet sent (flushPending) */
    this.pending = [];
    this.refusals = 0; // host messages refused, for the log
    this.refusedLog = 0; // host inputs refused by the limits, for the log
    // heardAt: when this member last heard a host (a message past the fence); refusedSync: the
    // host link whose sync snapshot it refused (snapshotBounds).
    /** @type {number | null} */
    this.heardAt = null;
    /** @type {import('./links.js').Remote | null} */
    this.refusedSync = null;
    // Adaptive anti-entropy: the replica hash at the last digest, the digest intervals since it,
    // and how many to wait while the replica stays unchanged.
    /** @type {bigint | null} */
    this.digestHash = null;
    this.digestWaited = 0;
    this.digestGap = 1;
    p.w.sink = this;
    p.w.isHost = false;
  }

  /**
   * Connects to a new host. The replica is kept: the new host's snapshot is merged into it.
   * @param {number} host
   */
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
        const hint = r.link && 'pairHint' in r.link ? r.link.pairHint() : '';
        if (hint) p.linkHint = hint;
        p.log('warn', 'link to host not up in time; retrying', { host, hint });
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

  /**
   * Merges a DeltaUpdates from the host (Go's memberRole.applyDeltas): every value whole or
   * rebuilt from the value an earlier datagram carried. A value whose baseline this member does
   * not hold is dropped (count.deltaMissed), an update it cannot read is dropped whole; either
   * way the datagram is not acknowledged.
   * @param {import('./netmsg.js').Msg} m
   */
  applyDeltas(m) {
    const p = this.p;
    const w = this.w;
    if (m.time > 0xffffffffn || m.seq === 0n) {
      p.count.dropped++;
      return;
    }
    if (!this.delta || this.delta.link !== this.hostLink) this.delta = new DeltaRx(this.hostLink);
    const x = this.delta;
    x.received(m.seq);
    const ts = Number(m.time);
    for (const u of m.updates) {
      const e = Number(u.networkId & 0xffffffffn);
      const info = u.networkId >> 32n === 0n ? w.ents.get(e) : undefined;
      if (!info || !netmsg.checkMask(u, info.schema.properties.length)) {
        p.count.dropped++; // not spawned here yet (the unreliable channel overtook it), or bad
        x.spoil(m.seq);
        continue;
      }
      const s = info.schema;
      const de = x.rings(e, s.properties.length);
      let vals;
      try {
        vals = rebuild(s, de, u, m.seq);
      } catch {
        p.count.dropped++;
        x.spoil(m.seq);
        continue;
      }
      for (const { i, v, delta } of vals) {
        if (v === null) {
          p.count.deltaMissed++;
          x.spoil(m.seq);
          continue;
        }
        if (delta) p.count.deltas++;
        if (deltaCapable(s.properties[i])) putRing(de.rings[i], m.seq, v);
        w.mergeRemote({ type: PutComponent, entity: e, component: s.properties[i].component, timestamp: ts, data: v }, w.host);
      }
    }
  }

  /** Sends the host an Ack of the DeltaUpdates that arrived since the last one, if any. */
  sendAck() {
    const x = this.delta;
    if (!x || x.link !== this.hostLink || !this.hostLink || !this.hostLink.ready) return;
    // At most every ACK_MS (each costs the host a datagram to read and a SACK to send).
    const t = now();
    if (t - x.ackAt < ACK_MS - this.p.opts.networkMs / 2) return;
    const a = x.pendingAck();
    if (!a) return;
    x.ackAt = t;
    this.p.send(this.hostLink, UNRELIABLE, netmsg.encode({ type: Type.Ack, ...a }));
  }

  /** Greets the host and sends the digests it answers with a snapshot. */
  linkReady() {
    const w = this.w;
    const hello = netmsg.encode({ type: Type.Hello, term: BigInt(w.heldTerm), peerIndex: BigInt(w.self), schemaFingerprint: w.schemas.fingerprint });
    // Ask for deltas against acknowledged values (docs/protocol.md §2.10; a host that does not
    // know them drops the Ack).
    const ask = this.p.opts.noDeltas ? new Uint8Array(0) : netmsg.encode({ type: Type.Ack, highest: 0n, received: 0n });
    this.p.send(this.hostLink, RELIABLE, netmsg.concat(hello, ask, this.digest()));
  }

  digest() {
    const w = this.w;
    this.digestHash = w.r.hash();
    this.digestWaited = 0;
    return netmsg.encode({ type: Type.Digest, term: BigInt(w.term), clock: w.clock, digests: w.r.bucketDigests(this.p.opts.buckets) });
  }

  /**
   * Runs every digestMs. A digest goes out when the replica changed since the last one (it may
   * differ from the host's), else only after digestGap intervals, which doubles after each such
   * digest up to DIGEST_MAX_GAP (an unchanged replica still digests now and then, in case a host
   * update was lost).
   */
  sendDigest() {
    if (!this.synced || !this.hostLink || !this.hostLink.ready) return;
    if (this.w.r.hash() !== this.digestHash) {
      this.digestGap = 1;
    } else if (++this.digestWaited >= this.digestGap) {
      this.digestGap = Math.min(2 * this.digestGap, DIGEST_MAX_GAP);
    } else {
      return;
    }
    this.p.send(this.hostLink, RELIABLE, this.digest());
  }

  ping() {
    if (!this.hostLink || !this.hostLink.ready) return;
    this.p.send(this.hostLink, RELIABLE, netmsg.encode({ type: Type.Ping, nonce: BigInt(this.w.clock), sendTime: this.p.monotonic() }));
  }

  hostLinkClosed() {
    if (!this.hostLink) return; // called only for the host link
    const host = this.hostLink.idx;
    this.hostLink = null;
    this.retry(host);
  }

  /**
   * @param {number} host
   */
  retry(host) {
    const p = this.p;
    p.after(500, () => {
      if (p.member === this && !this.hostLink && p.w.host === host) this.follow(host);
    });
  }

  /**
   * Whether the host messages heard on link r may be merged (Go's memberRole.fenced): the fence
   * must accept r's term (the term in which r became the link to the host) from r's peer, and r
   * must be the link this member holds to the host. Every refusal is counted (status().fenced).
   * @param {import('./links.js').Remote} r
   */
  admit(r) {
    const p = this.p;
    let err = p.fence.accept(r.term, r.idx);
    if (!err && r !== this.hostLink) err = new AuthorityError(Reject.NotHost, 'host message', r.idx, 0, r.term);
    if (!err) return true;
    p.count.fenced++;
    if (this.refusals++ < 10) p.log('info', 'host message fenced', { remote: r.idx, err: err.message });
    return false;
  }

  /**
   * Processes one message heard on link r, once the fence admits it.
   * @param {import('./links.js').Remote} r
   * @param {import('./netmsg.js').Msg} m
   * @param {bigint} stamp
   */
  handle(r, m, stamp) {
    const p = this.p;
    const w = this.w;
    if (!this.admit(r)) return;
    try {
      this.handleAdmitted(r, m, stamp);
    } finally {
      this.heardAt = now(); // after the limits judged the message
    }
  }

  /**
   * @param {import('./links.js').Remote} r
   * @param {import('./netmsg.js').Msg} m
   * @param {bigint} stamp
   */
  handleAdmitted(r, m, stamp) {
    const p = this.p;
    const w = this.w;
    if (this.refusedSync === r && m.type !== Type.HostSnapshot) {
      // This host's sync snapshot was refused: nothing it says builds on it.
      p.count.dropped++;
      return;
    }
    switch (m.type) {
      case Type.HostSnapshot: {
        if (Number(m.hostPeerIndex) !== w.host || Number(m.localPeerIndex) !== w.self) {
          p.count.fenced++;
          return;
        }
        const reason = this.snapshotBounds(/** @type {any} */ (m));
        if (reason) {
          // Refused whole, merged nowhere, unanswered: a member that refused its sync snapshot
          // stays unsynced with this host, and takes nothing else from it, until another host.
          this.refused(reason);
          if (!this.synced) this.refusedSync = r;
          return;
        }
        this.refusedSync = null;
        // A member that holds a replica judges the snapshot's deletions as a host's later input.
        const judge = this.holdsReplica();
        const merge = (/** @type {import('./crdt.js').Message} */ cm) => {
          if (judge && (cm.type === DeleteEntity || cm.type === crdt.MessageType.DeleteEntityNetwork) && !this.hostMessageOK(cm)) return crdt.Outcome.Ignored;
          return w.mergeRemote(cm, w.host);
        };
        let info;
        let corrections;
        try {
          ({ info, corrections } = hostsnapshot.apply(w.r, w.schemas, /** @type {any} */ (m), merge));
        } catch (err) {
          if (err.code !== 'schema_mismatch') throw err;
          const fp = hostsnapshot.readHostState(m.hostState).fingerprint;
          p.fail(schemaMismatch(w.schemas.fingerprint, r.idx, `sent a snapshot of schema table ${hex16(fp)}`));
          return;
        }
        if (Number(info.term) !== w.term) p.count.fenced++;
        else w.heldTerm = w.term;
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
      case Type.PackedUpdates: // the same updates, packed (a Go peer's)
      case Type.RunUpdates: // the same updates, in runs (a Go peer's)
        if (!this.hostStampOK(m.time)) return;
        p.applyUpdates(m, w.host, () => true);
        break;
      case Type.CrdtBatch:
        if (Number(m.term) !== w.term) {
          p.count.fenced++;
          return;
        }
        for (const cm of crdt.readStream(m.messages)) {
          if (this.hostMessageOK(cm)) w.mergeRemote(cm, w.host);
        }
        break;
      case Type.Relay:
        this.appMessage(Number(m.peer), m.appType, m.data);
        break;
      case Type.Forget:
        // Entities that left this member's interest (a Go host's InterestPolicy): dropped, not deleted.
        for (const id of m.networkIds) {
          if (id >> 32n === 0n) {
            w.evict(Number(id) & 0xffff);
            if (this.delta) this.delta.forget(Number(id) & 0xffff);
          }
        }
        break;
      case Type.DeltaUpdates:
        if (!this.hostStampOK(m.time)) return;
        this.applyDeltas(m);
        break;
      default:
        if (m.type >= netmsg.FIRST_APPLICATION) {
          this.appMessage(w.host, m.type, m.body);
          break;
        }
        p.count.dropped++;
    }
  }

  /**
   * Hands an application message from peer from to the app.
   * @param {number} from
   * @param {number} type
   * @param {Uint8Array} data
   */
  appMessage(from, type, data) {
    if (this.p.app.message) this.p.app.message(this.w, from, type, data);
    else this.p.count.dropped++;
  }

  /**
   * Merges a HostCommands stamped with the host's Lamport time.
   * @param {import('./netmsg.js').Msg} hc
   * @param {bigint} stamp
   */
  applyCommands(hc, stamp) {
    const p = this.p;
    const w = this.w;
    if (stamp > BigInt(U32_MAX)) {
      p.count.dropped++;
      return;
    }
    if (!this.hostStampOK(stamp)) return;
    const ts = Number(stamp);
    const spawned = new Set();
    for (const sp of hc.spawns) {
      const s = w.schemas.lookup(sp.schemaId);
      if (!s || sp.networkId >> 32n !== 0n) {
        p.count.dropped++;
        continue;
      }
      const e = Number(sp.networkId);
      /** @type {[number, Uint8Array][]} */
      const vals = [];
      try {
        hostsnapshot.spawnValues(s, sp.updateData, (i, v) => vals.push([i, v]));
      } catch {
        p.count.dropped++;
        continue;
      }
      w.mergeRemote({ type: PutComponent, entity: e, component: COMPONENT_META, timestamp: ts, data: appendMeta(s.id, sp.creationData) }, w.host);
      for (const [i, v] of vals) {
        w.mergeRemote({ type: PutComponent, entity: e, component: s.properties[i].component, timestamp: ts, data: v }, w.host);
      }
      spawned.add(e);
    }
    for (const d of hc.despawns) {
      if (d.networkId >> 32n !== 0n) continue;
      /** @type {import('./crdt.js').Message} */
      const cm = { type: DeleteEntity, entity: Number(d.networkId), component: 0, timestamp: 0, data: null };
      if (this.hostMessageOK(cm)) w.mergeRemote(cm, w.host);
    }
    for (const t of hc.authorityTransfers) {
      if (t.networkId >> 32n !== 0n) continue;
      const e = Number(t.networkId);
      const to = Number(t.newAuthorIndex);
      // TRNP's transfer names only the new author; the kind follows from context.
      let rec = { kind: KIND_LOCK, peer: to };
      if (spawned.has(e)) rec = { kind: KIND_AVATAR, peer: to };
      else if (to === w.host) rec = { kind: KIND_HOST, peer: 0 };
      w.mergeRemote({ type: PutComponent, entity: e, component: COMPONENT_AUTHORITY, timestamp: ts, data: encodeRecord(rec) }, w.host);
    }
    for (const rpc of hc.rpcs) p.app.rpc(w, w.host, rpc.type, rpc.data);
    for (const a of hc.actions) deliverAction(p, w.host, a);
  }

  /** Whether the member has a clock to judge a host by: synced, or holding a previous host's state. */
  holdsReplica() {
    return this.synced || this.w.clock > 0;
  }

  /**
   * The highest stamp a member that holds a replica takes from a host (Go's hostClockLimit): its
   * clock plus MAX_HOST_SKEW, plus SYNC_CLOCK_RATE a second since it last heard a host.
   */
  hostClockLimit() {
    let limit = this.w.clock + MAX_HOST_SKEW;
    if (this.heardAt !== null) limit += Math.floor(Math.max(0, now() - this.heardAt) / 1000 * SYNC_CLOCK_RATE);
    return limit;
  }

  /**
   * Why a host snapshot is beyond what this member takes, or '' (Go's memberRole.snapshotBounds).
   * @param {{spawns: {creationData: Uint8Array, updateData: Uint8Array}[], peers?: {peerId: string}[], hostState: Uint8Array}} snap
   */
  snapshotBounds(snap) {
    let st;
    try {
      st = hostsnapshot.inspect(snap);
    } catch {
      return ''; // apply refuses it as malformed
    }
    if (st.bytes > MAX_SNAPSHOT_BYTES) return `snapshot of ${st.bytes} bytes, more than ${MAX_SNAPSHOT_BYTES}`;
    if (st.values > MAX_SNAPSHOT_VALUES) return `snapshot of ${st.values} values, more than ${MAX_SNAPSHOT_VALUES}`;
    if (st.maxStamp > st.clock) return `snapshot stamps a value ${st.maxStamp}, above its own clock ${st.clock}`;
    if (!this.holdsReplica()) {
      return st.clock > MAX_FRESH_CLOCK ? `snapshot clock ${st.clock} leaves less than ${2 ** 28} of the wire clock` : '';
    }
    const limit = this.hostClockLimit();
    return st.clock > limit ? `snapshot clock ${st.clock} more than ${limit - this.w.clock} above this member's clock ${this.w.clock}` : '';
  }

  /**
   * Whether the member takes a host stamp (Go's memberRole.hostStampOK): any while it holds
   * nothing to judge by; at most MAX_HOST_SKEW above its clock when synced, hostClockLimit while
   * it syncs. A refusal is counted and logged.
   * @param {bigint | number} stamp
   */
  hostStampOK(stamp) {
    if (!this.holdsReplica()) return true;
    const limit = this.synced ? this.w.clock + MAX_HOST_SKEW : this.hostClockLimit();
    if (BigInt(stamp) <= BigInt(limit)) return true;
    this.refused(`host stamp ${stamp} more than ${limit - this.w.clock} above this member's clock ${this.w.clock}`);
    return false;
  }

  /**
   * hostStampOK for a host's CRDT message; refuses the deletion of a reserved number or of a
   * number far above any version this member knows (Go's memberRole.hostMessageOK).
   * @param {import('./crdt.js').Message} cm
   */
  hostMessageOK(cm) {
    if (cm.type === DeleteEntity || cm.type === crdt.MessageType.DeleteEntityNetwork) {
      const num = cm.entity & 0xffff;
      const ver = cm.entity >>> 16;
      if (num < FIRST_SPAWN_NUMBER && (cm.entity >>> 0) !== 0) {
        this.refused(`host deletes reserved entity ${cm.entity >>> 0}`);
        return false;
      }
      if (!this.holdsReplica()) return true;
      if (ver > knownVersion(this.w, num) + MAX_VERSION_AHEAD) {
        this.refused(`host deletes ${cm.entity >>> 0}, far above any version of its number known here`);
        return false;
      }
      return true;
    }
    return this.hostStampOK(cm.timestamp);
  }

  /** @param {string} reason */
  refused(reason) {
    const p = this.p;
    p.count.refused++;
    if (++this.refusedLog <= 10 || this.refusedLog % 1000 === 0) p.log('warn', 'host input refused: ' + reason, { host: this.w.host, count: this.refusedLog });
  }

  /**
   * @param {number} type
   * @param {Uint8Array} data
   */
  sendRPC(type, data) {
    if (!this.hostLink || !this.hostLink.ready) throw new Error('peer: no link to the host');
    this.p.send(this.hostLink, RELIABLE, netmsg.encode({ type: Type.PeerCommands, rpcs: [{ type, data }] }));
  }

  // change sink: a member sends only its own writes.
  /**
   * @param {number} e
   * @param {number} prop
   * @param {number} origin
   */
  propChanged(e, prop, origin) {
    if (origin === 0) this.dirty.set(e, (this.dirty.get(e) || 0) | (1 << prop));
  }

  spawned() {}

  /**
   * @param {number} e
   */
  despawned(e) { this.dirty.delete(e); }

  authorityChanged() {}

  /**
   * Queues this member's own changes that updates cannot carry (a deleted property) for the host.
   * @param {import('./crdt.js').Message} m
   * @param {number} origin
   */
  otherChanged(m, origin) {
    if (origin === 0 && this.synced) this.pending.push(m.data ? { ...m, data: m.data.slice() } : { ...m });
  }

  /**
   * Sends the queued CRDT messages to the host, stamped with the term; after the member's answer
   * to its sync snapshot (synced), so they never take its place. Unsent ones (no link) are left to
   * the digest exchange.
   */
  flushPending() {
    if (this.pending.length === 0) return;
    if (this.synced && this.hostLink && this.hostLink.ready) {
      const messages = netmsg.concat(...this.pending.map((cm) => crdt.encodeMessage(cm)));
      this.p.send(this.hostLink, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: BigInt(this.w.term), messages }));
    }
    this.pending = [];
  }

  /**
   * @param {number} to
   * @param {number} type
   * @param {Uint8Array} data
   * @param {boolean} reliable
   */
  sendMessage(to, type, data, reliable) {
    if (!this.hostLink || !this.hostLink.ready) throw new Error('peer: no link to the host');
    const msg = to === this.w.host ? { type, body: data } : { type: Type.Relay, peer: BigInt(to), appType: type, data };
    this.p.send(this.hostLink, reliable ? RELIABLE : UNRELIABLE, netmsg.encode(msg));
  }

  /**
   * @param {number} type
   * @param {Uint8Array} data
   */
  sendAction(type, data) {
    if (!this.hostLink || !this.hostLink.ready) throw new Error('peer: no link to the host');
    this.p.send(this.hostLink, RELIABLE, netmsg.encode({ type: Type.Actions, actions: [{ type, data }] }));
  }
}

/**
 * Gives a TRNP Action to the app's action hook, or to rpc when it has none.
 * @param {import('./peer.js').Peer} p
 * @param {number} from
 * @param {{type: number, data: Uint8Array}} a
 */
export function deliverAction(p, from, a) {
  if (p.app.action) p.app.action(p.w, from, a.type, a.data);
  else p.app.rpc(p.w, from, a.type, a.data);
}
