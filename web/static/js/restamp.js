// @ts-check
// The host's answer to writes it rejects, and the corrections members send back after a sync
// snapshot (peer/host.go restamp, mergeWrite, corrections; docs/protocol.md §5 "Authority on the
// host"). These are methods of HostRole (see loop.js mixin).

import * as crdt from './crdt.js';
import { now } from './loop.js';
import * as netmsg from './netmsg.js';
import { RELIABLE } from './rtc.js';
import { COMPONENT_AUTHORITY } from './schema.js';
import { KIND_AVATAR, KIND_HOST, decodeRecord } from './authority.js';
import { FIRST_SPAWN_NUMBER, MAX_VERSION_AHEAD, knownVersion, lacks } from './world.js';

const EMPTY = new Uint8Array(0);

/**
 * How far above the host's clock a member's stamp may be (Go's maxStampSkew); a member's skew
 * budget refills at STAMP_RATE ticks a second. docs/protocol.md §5, "Limits".
 */
export const MAX_STAMP_SKEW = 1 << 12;
const STAMP_RATE = 1 << 10;
/** Bounds of one correction batch (Go's maxCorrectionMessages, maxCorrectionBytes). */
export const MAX_CORRECTION_MESSAGES = 1 << 14;
export const MAX_CORRECTION_BYTES = 4 << 20;
/** Refused inputs a member may send in a burst before its link is closed; drain one a second. */
export const MAX_STRIKES = 32;
/**
 * A member's skew budget and strikes outlive its link (Go's conduct): the host keeps them by
 * identity and by peer index, at most MAX_CONDUCTS records (the least recently used dropped
 * first), each forgotten CONDUCT_MEMORY_MS after its last use, when it forgives nothing.
 */
export const MAX_CONDUCTS = 4096;
export const CONDUCT_MEMORY_MS = MAX_STRIKES * 1000;
/** Close code of a member dropped for refused inputs (Go's CloseRefused). */
export const CLOSE_REFUSED = 2;
/** Keys re-stamped and remembered at most; past it the memory starts over (a rejection storm). */
const MAX_RESTAMPED = 1 << 16;
/**
 * How long after a member lost the authority over an entity (it handed a lock back, or the lock
 * expired) its writes to it are an expected race rather than a fault: the member keeps writing
 * until the host's transfer reaches it, one round trip later (Go's raceWindow).
 */
const RACE_WINDOW_MS = 2000;
const { PutComponent, PutComponentNetwork, DeleteComponent, DeleteEntity, DeleteEntityNetwork } = crdt.MessageType;

// The survivors' correction window (docs/protocol.md §5 "Limits"; Go's windowOpen, windowCeiling,
// windowDeletionOK, windowRecordOK, windowAvatarOK), checked against testdata/peer/survivor_window.json.

/**
 * Whether a member whose greeting names term held, and whom signaling recorded synced in term rec
 * at most (its member record's syncedTerm), may relay an earlier host's state to the host of term.
 * @param {number} held
 * @param {number} rec
 * @param {number} term
 */
export function windowOpen(held, rec, term) {
  return held !== 0 && held <= rec && rec < term;
}

/**
 * The highest stamp a correction admitted through the window may carry: the clock this host took
 * over with plus the skew bound (a survivor saw only what the previous host stamped before).
 * @param {number} tookOver
 */
export function windowCeiling(tookOver) {
  return Math.min(tookOver + MAX_STAMP_SKEW, 0xffffffff);
}

/**
 * Whether a relayed deletion at version del may take the live entity of its number, at version
 * live: only one this host held when it took over (a deletion takes every lower version).
 * @param {number} live
 * @param {boolean} heldAtStart
 * @param {number} del
 */
export function windowDeletionOK(live, heldAtStart, del) {
  return live > del || heldAtStart;
}

/**
 * Whether a relayed authority record may name peer: this host, or a member of an earlier term
 * (in the room when this host took over, or recorded synced in an earlier term).
 * @param {number} peer
 * @param {number} self
 * @param {boolean} earlier
 */
export function windowRecordOK(peer, self, earlier) {
  return peer === self || earlier;
}

/**
 * Whether an authority record of kind naming its sender may be admitted: only a survivor's
 * (relayed) avatar, for an entity this host lacked when the batch first named it, while the
 * survivor has no avatar here (its avatar waits for this answer): the avatar a previous host gave
 * it that this host never knew. Never a lock, an entity this host holds, or a second avatar.
 * @param {number} kind
 * @param {boolean} relayed
 * @param {boolean} lacked
 * @param {boolean} avatarless
 */
export function windowAvatarOK(kind, relayed, lacked, avatarless) {
  return kind === KIND_AVATAR && relayed && lacked && avatarless;
}

/**
 * The key of an LWW entry, as a BigInt (entity << 32 | component).
 * @param {number} e
 * @param {number} c
 */
function entryKey(e, c) {
  return (BigInt(e >>> 0) << 32n) | BigInt(c >>> 0);
}

/**
 * An LWW entry as a CRDT message (appendEntry in Go).
 * @param {number} e
 * @param {number} c
 * @param {number} ts
 * @param {Uint8Array | null} data
 * @param {boolean} deleted
 * @returns {import('./crdt.js').Message}
 */
export function entryMessage(e, c, ts, data, deleted) {
  return deleted
    ? { type: DeleteComponent, entity: e, component: c, timestamp: ts, data: null }
    : { type: PutComponent, entity: e, component: c, timestamp: ts, data };
}

/** HostRole's re-stamp and correction methods. */
export class HostRestamp {
  /**
   * @this {import('./host.js').HostRole}
   * @param {import('./links.js').Remote} r
   * @param {number} e
   * @param {bigint} ts
   */
  admit(r, e, ts) {
    try {
      this.auth.admitWrite(r.idx, e);
      return true;
    } catch (err) {
      this.rejected(r, e, ts, err, true);
      return false;
    }
  }

  /**
   * Notes that member from no longer writes e (a lock handed back, expired or taken over).
   * @this {import('./host.js').HostRole}
   * @param {number} e
   * @param {number} from
   */
  authorityLost(e, from) {
    if (from === this.w.self || from === 0) return;
    if (this.lost.size > MAX_RESTAMPED) this.lost.clear();
    this.lost.set(e, { peer: from, at: now() });
  }

  /**
   * Whether a rejected write of member idx to e is an expected race of normal play.
   * @this {import('./host.js').HostRole}
   * @param {number} idx
   * @param {number} e
   */
  race(idx, e) {
    const l = this.lost.get(e);
    return l !== undefined && l.peer === idx && now() - l.at < RACE_WINDOW_MS;
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {import('./links.js').Remote} r
   * @param {number} e
   * @param {bigint | number} ts
   * @param {Error} err
   * @param {boolean} [live] a live write (not a correction): a fault strikes its member
   */
  rejected(r, e, ts, err, live = false) {
    const p = this.p;
    p.count.rejected++;
    if (this.race(r.idx, e)) {
      p.count.rejectedRace++;
      p.log('debug', 'write rejected: authority just moved (expected race)', { member: r.idx, entity: e, err: err.message });
    } else {
      if (this.rejectLog < 20 || this.rejectLog % 1000 === 0) {
        p.log('warn', 'write rejected', { member: r.idx, entity: e, err: err.message });
      }
      this.rejectLog++;
      // Every live forged write costs the room a re-stamp: a member that keeps at it is dropped.
      const hm = this.mems.get(r.idx);
      if (live && hm) this.strike(hm, err.message);
    }
    const t = BigInt(ts);
    if (t > BigInt(this.w.clock) + BigInt(MAX_STAMP_SKEW)) return; // stampOK refused it before
    this.w.r.observeClock(Number(t));
    this.reassert.add(e);
  }

  /**
   * Notes a rejected correction m to a key this host does not hold at all (the previous host wrote
   * it after this one stopped hearing it): re-stamping the entity's entries would leave the key
   * to its writer for good, so restamp deletes it above the write instead (Go's
   * restamper.rejectedAbsent).
   * @this {import('./host.js').HostRole}
   * @param {import('./crdt.js').Message} m
   */
  rejectedAbsent(m) {
    const e = m.entity >>> 0;
    if (!this.reassert.has(e) || (m.type !== PutComponent && m.type !== DeleteComponent)) return; // not re-stamped, or not a component's value
    if (this.w.r.get(e, m.component)) return;
    if (this.absent.size > MAX_RESTAMPED) this.absent.clear();
    this.absent.add(entryKey(e, m.component));
  }

  /**
   * Re-stamps every entry of the entities queued by rejected and relays them; a rejected key the
   * host lacks is deleted at that stamp (rejectedAbsent).
   * @this {import('./host.js').HostRole}
   */
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
    /** @type {import('./hostsnapshot.js').Entry[]} */
    const entries = [];
    w.r.range((en) => {
      if (!due.has(en.entity >>> 0)) return true;
      if (en.deleted) entries.push({ ...en });
      else entries.push({ entity: en.entity, component: en.component, timestamp: en.timestamp, deleted: false, data: en.data.slice() });
      return true;
    });
    for (const k of this.absent) {
      const e = Number(k >> 32n);
      const c = Number(k & 0xffffffffn);
      if (!due.has(e)) continue; // kept for a later batch, with its entity
      this.absent.delete(k);
      if (!w.r.get(e, c) && w.exists(e)) entries.push({ entity: e, component: c, timestamp: 0, deleted: true, data: null });
    }
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
   * under the host's stamp (as Go's restamper.mergeWrite).
   * @this {import('./host.js').HostRole}
   * @param {import('./crdt.js').Message} m
   * @param {number} origin
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

  /**
   * Merges the CRDT corrections of member hm that authority allows.
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   * @param {import('./netmsg.js').Msg} b
   */
  corrections(hm, b) {
    if (Number(b.term) !== this.w.term) {
      this.p.count.fenced++;
      return;
    }
    const relayed = hm.acceptRelayed;
    hm.acceptRelayed = false;
    const answer = !hm.answered;
    hm.answered = true;
    try {
      this.mergeCorrections(hm, b, relayed);
    } finally {
      // Its avatar, brought back by its answer or fresh (Go's settleAvatar).
      if (answer) this.settleAvatar(hm);
    }
  }

  /**
   * The body of corrections: merges what the limits and authority admit of batch b.
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   * @param {import('./netmsg.js').Msg} b
   * @param {boolean} relayed
   */
  mergeCorrections(hm, b, relayed) {
    const r = hm.r;
    const w = this.w;
    if (b.messages.length > MAX_CORRECTION_BYTES) {
      this.refuse(hm, `corrections of ${b.messages.length} bytes, more than ${MAX_CORRECTION_BYTES}`);
      return;
    }
    let orphaned = false;
    let count = 0;
    /** @type {Map<number, {err: Error | null, windowed: boolean, lacked: boolean}>} */
    const verdict = new Map();
    for (const m of crdt.readStream(b.messages)) {
      if (++count > MAX_CORRECTION_MESSAGES) {
        this.refuse(hm, `more than ${MAX_CORRECTION_MESSAGES} corrections in one batch; the rest dropped`);
        break;
      }
      // Admission is decided per entity by the authority the batch found (Go's entityVerdict): a
      // relayed entity this host lacked brings its own record, which must not refuse the entity's
      // keys after it.
      const e = m.entity >>> 0;
      let v = verdict.get(e);
      if (!v) {
        let refusedBy = null;
        try { this.auth.admitCorrection(r.idx, e, relayed); } catch (x) { refusedBy = x; }
        // windowed: admitted only because of the window (a host entity the member relays).
        v = { err: refusedBy, windowed: relayed && refusedBy === null && !this.ownsCorrection(r.idx, e), lacked: lacks(w, e) };
        verdict.set(e, v);
      }
      const refused = this.admitCorrection(hm, m, relayed, v.lacked);
      if (refused) {
        this.refuse(hm, refused.reason, refused.why);
        if (m.component === COMPONENT_AUTHORITY && m.type !== DeleteEntity && m.type !== DeleteEntityNetwork) {
          // The member keeps the record it sent: re-assert this host's record over it, or delete
          // it, so that the member converges instead of sending it again forever (as Go's).
          this.rejected(r, m.entity >>> 0, m.timestamp || 0, new Error(refused.reason), false);
          this.rejectedAbsent(m);
        }
        continue;
      }
      if (relayed && (m.type === DeleteEntity || m.type === DeleteEntityNetwork) && !w.r.entityDeleted(m.entity >>> 0)) {
        // Only a host deletes entities, and a deletion is final in every replica that holds it:
        // refusing one would leave this member apart for good (as Go's hostRole.corrections).
        w.mergeRemote(m, r.idx);
        orphaned = true;
        continue;
      }
      let err = v.err;
      if (err === null && v.windowed && (m.timestamp || 0) > windowCeiling(this.tookOver)) {
        // A host entity admitted only through the window, stamped above what a survivor saw.
        const reason = `relayed correction of ${e} stamped ${m.timestamp}, above what the room's clock was when this host took over (${this.tookOver} + ${MAX_STAMP_SKEW})`;
        this.refuse(hm, reason, 'survivor_claim');
        err = new Error(reason);
      }
      if (err !== null) {
        if (this.holds(m)) {
          // This host already has the value or a newer one: the member converges to it without a
          // re-stamp (which would bury any newer write of the entity's owner still on its way).
          // An expected race: counted, not logged.
          this.p.count.rejected++;
          this.p.count.rejectedRace++;
          continue;
        }
        this.rejected(r, e, m.timestamp || 0, err, false);
        this.rejectedAbsent(m);
        continue;
      }
      if (!relayed) {
        // The world's bounds (worldlimits.js). Not on a survivor's first batch after a migration:
        // that relays the previous host's world, which fit it (lossless migration).
        const refusal = this.admitGrowth(hm, m);
        if (refusal) {
          this.refuse(hm, 'correction: ' + refusal.message, refusal.reason);
          continue;
        }
      }
      const before = w.r.bytes;
      w.mergeRemote(m, r.idx);
      if (!relayed) this.charge(hm, before);
    }
    if (orphaned) this.respawnAvatars();
  }

  /**
   * Checks a member's stamp against the host's clock and the member's skew budget, and charges the
   * budget for how far the stamp moves the clock (Go's gate.stampOK).
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   * @param {bigint | number} ts
   */
  stampOK(hm, ts) {
    const clock = this.w.clock;
    const t = BigInt(ts);
    if (t <= BigInt(clock)) return true;
    const d = Number(t - BigInt(clock));
    const at = now();
    const c = hm.conduct;
    c.budget = c.budgetAt === null ? MAX_STAMP_SKEW : Math.min(MAX_STAMP_SKEW, c.budget + (at - c.budgetAt) / 1000 * STAMP_RATE);
    c.budgetAt = at;
    c.used = at;
    if (d > c.budget) return false;
    c.budget -= d;
    return true;
  }

  /**
   * The skew budget and strikes of the member linked as idx (Go's gate.conductOf): the record
   * of its identity or of its index (the one with more strikes when both exist), else a new one;
   * kept under both keys.
   * @this {import('./host.js').HostRole}
   * @param {number} idx
   * @returns {import('./host.js').Conduct}
   */
  conductOf(idx) {
    const at = now();
    const keys = [`#${idx}`];
    const mem = this.p.members.get(idx);
    if (mem && mem.peerId) keys.push(`id ${mem.peerId}`);
    let c = null;
    for (const k of keys) {
      const o = this.conducts.get(k);
      if (o && at - o.used < CONDUCT_MEMORY_MS && (c === null || o.strikes > c.strikes)) c = o;
    }
    if (c === null) c = { budget: 0, budgetAt: null, strikes: 0, strikeAt: null, used: at };
    c.used = at;
    for (const k of keys) {
      this.conducts.delete(k); // re-inserted last: the Map's order is the order of use
      this.conducts.set(k, c);
    }
    for (const [k, o] of this.conducts) {
      if (this.conducts.size <= MAX_CONDUCTS && at - o.used < CONDUCT_MEMORY_MS) break;
      this.conducts.delete(k);
    }
    return c;
  }

  /**
   * Counts and logs (warn, rate-limited) an input refused for reason, and strikes its member.
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   * @param {string} reason
   * @param {string} [label] the reason's label (Go's peer.Refusal), counted in status().refusedBy
   */
  refuse(hm, reason, label = '') {
    this.noteRefused(hm.r.idx, label, reason);
    this.strike(hm, reason);
  }

  /**
   * Counts and logs (warn, rate-limited) an input of member idx refused for reason, without a
   * strike; why, when not empty, also counts it in status().refusedBy (Go's Refusal names).
   * @this {import('./host.js').HostRole}
   * @param {number} idx
   * @param {string} why
   * @param {string} reason
   */
  noteRefused(idx, why, reason) {
    const p = this.p;
    p.count.refused++;
    if (why) p.count.refusedBy[why] = (p.count.refusedBy[why] || 0) + 1;
    if (++this.refuseLog <= 10 || this.refuseLog % 1000 === 0) p.log('warn', 'input refused: ' + reason, { member: idx, count: this.refuseLog });
  }

  /**
   * Counts one offence of hm; at MAX_STRIKES in a burst its link is closed after a Close that says
   * why (Go's gate.strike), by a thrown error that ends the payload.
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   * @param {string} reason
   */
  strike(hm, reason) {
    if (hm.refused) return;
    const at = now();
    const c = hm.conduct;
    if (c.strikeAt !== null) c.strikes = Math.max(0, c.strikes - (at - c.strikeAt) / 1000);
    c.strikeAt = at;
    c.used = at;
    c.strikes = Math.min(c.strikes + 1, MAX_STRIKES);
    if (c.strikes < MAX_STRIKES) return;
    const p = this.p;
    p.count.offenders++;
    hm.refused = true;
    p.log('warn', 'member keeps sending refused inputs; closing its link: ' + reason, { member: hm.r.idx });
    p.send(hm.r, RELIABLE, netmsg.encode({ type: netmsg.Type.Close, code: CLOSE_REFUSED, reason }));
  }

  /**
   * The limits of a correction beyond authority (Go's window.admitCorrection): why and a reason
   * to refuse m (why is the label status().refusedBy counts, Go's Refusal), or null.
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   * @param {import('./crdt.js').Message} m
   * @param {boolean} relayed
   * @returns {{why: string, reason: string} | null}
   */
  admitCorrection(hm, m, relayed, lacked = false) {
    if (m.type === DeleteEntity || m.type === DeleteEntityNetwork) {
      const num = m.entity & 0xffff;
      if (num < FIRST_SPAWN_NUMBER) return { why: 'correction', reason: `deletion of reserved entity ${m.entity >>> 0}` };
      if (relayed && (m.entity >>> 16) > knownVersion(this.w, num) + MAX_VERSION_AHEAD) {
        return { why: 'correction', reason: `deletion of ${m.entity >>> 0}, far above any version of number ${num} known here` };
      }
      const live = this.w.byNumber.get(num);
      if (relayed && live !== undefined && !windowDeletionOK(live >>> 16, this.heldAtStart.has(live >>> 0), m.entity >>> 16)) {
        return { why: 'survivor_claim', reason: `relayed deletion of ${live >>> 0}, spawned by this host after it took over` };
      }
      return null;
    }
    if (!this.stampOK(hm, m.timestamp)) {
      return { why: 'stamp_skew', reason: `correction stamped ${m.timestamp}, more than ${MAX_STAMP_SKEW} above the host's clock ${this.w.clock}` };
    }
    // A PutComponentNetwork merges as a put (crdt.js): its record is a record all the same.
    if (m.component === COMPONENT_AUTHORITY && (m.type === PutComponent || m.type === PutComponentNetwork) && m.data) {
      let rec = null;
      try { rec = decodeRecord(m.data); } catch { rec = null; }
      const cur = this.w.authorityRecord(m.entity >>> 0);
      if (rec && rec.kind !== KIND_HOST && !(cur.kind === rec.kind && cur.peer === rec.peer)) {
        if (rec.peer === hm.r.idx) {
          // One avatar a member: the first record brought back ends the wait.
          const avatarless = hm.avatarAfterAnswer && this.w.avatarOf(hm.r.idx) === undefined;
          if (windowAvatarOK(rec.kind, relayed, lacked, avatarless)) return null;
          return { why: 'correction', reason: `authority record handing ${m.entity >>> 0} to its sender` };
        }
        if (relayed && !windowRecordOK(rec.peer, this.w.self, this.present.has(rec.peer) || this.survivorTerm(rec.peer) !== 0)) {
          return { why: 'survivor_claim', reason: `relayed authority record handing ${m.entity >>> 0} to member ${rec.peer}, not a member of an earlier term` };
        }
      }
    }
    return null;
  }

  /**
   * Records, as this peer takes over, the earlier terms signaling recorded the members synced in,
   * the members then in the room, the clock, and the live entities (Go's window.startWindow).
   * @this {import('./host.js').HostRole}
   */
  startWindow() {
    const w = this.w;
    this.tookOver = w.clock;
    this.survivors.clear();
    this.present.clear();
    for (const [idx, m] of this.p.members) {
      this.present.add(idx);
      const t = m.syncedTerm || 0;
      if (t !== 0 && t < w.term) this.survivors.set(idx, t);
    }
    this.heldAtStart.clear();
    for (const e of w.ents.keys()) this.heldAtStart.add(e >>> 0);
  }

  /**
   * The last term before this host's in which signaling recorded member idx synced, 0 if none.
   * @this {import('./host.js').HostRole}
   * @param {number} idx
   */
  survivorTerm(idx) {
    let rec = this.survivors.get(idx) || 0;
    const m = this.p.members.get(idx);
    const t = (m && m.syncedTerm) || 0;
    if (t < this.w.term && t > rec) rec = t;
    return rec;
  }

  /**
   * Whether hm's answer to its sync snapshot may relay host entities: its greeting's term is
   * covered by signaling's record (Go's window.survivorWindow). A greeting that claims more is
   * counted (not struck: the member may be honest, its report of syncing late) and opens nothing.
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   */
  survivorWindow(hm) {
    if (hm.heldTerm === 0 || hm.heldTerm >= this.w.term) return false;
    const rec = this.survivorTerm(hm.r.idx);
    if (windowOpen(hm.heldTerm, rec, this.w.term)) return true;
    this.noteRefused(hm.r.idx, 'survivor_claim', `greeting claims term ${hm.heldTerm}'s state, signaling recorded it synced in term ${rec} at most; no correction window`);
    return false;
  }

  /**
   * Whether member idx may correct e without the window (its avatar or lock, or it is the host).
   * @this {import('./host.js').HostRole}
   * @param {number} idx
   * @param {number} e
   */
  ownsCorrection(idx, e) {
    try {
      this.auth.admitCorrection(idx, e, false);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Ends a survivor's wait for its avatar once its answer to the sync snapshot is merged (or its
   * window closed without one): it keeps the avatar its answer brought back, or gets a fresh one
   * (Go's settleAvatar).
   * @this {import('./host.js').HostRole}
   * @param {import('./host.js').HostMember} hm
   */
  settleAvatar(hm) {
    if (!hm.avatarAfterAnswer) return;
    hm.avatarAfterAnswer = false;
    if (hm.info && hm.info.kind !== 'host' && this.w.avatarOf(hm.r.idx) === undefined) this.spawnAvatar(hm.info);
  }

  /**
   * Gives a new avatar to every synced member that has none (its deletion reached this host late).
   * @this {import('./host.js').HostRole}
   */
  respawnAvatars() {
    for (const [idx, hm] of this.mems) {
      if (hm.snapshotSent && !hm.avatarAfterAnswer && hm.info && hm.info.kind !== 'host' && this.w.avatarOf(idx) === undefined) this.spawnAvatar(hm.info);
    }
  }

  /**
   * Whether the replica's entry for m's key is newer than m, or the same value.
   * @this {import('./host.js').HostRole}
   * @param {import('./crdt.js').Message} m
   */
  holds(m) {
    if (m.type !== PutComponent && m.type !== DeleteComponent) return false;
    const v = this.w.r.get(m.entity, m.component);
    if (!v || v.ts < m.timestamp) return false;
    if (v.ts > m.timestamp) return true;
    if (m.type === DeleteComponent) return v.deleted;
    const data = m.data ?? EMPTY; // a PUT without data puts the empty value (crdt merge)
    if (v.deleted || v.data.length !== data.length) return false;
    for (let i = 0; i < v.data.length; i++) if (v.data[i] !== data[i]) return false;
    return true;
  }

  /**
   * Whether e is written by another member (its avatar, or a lock it holds) whose answer to its
   * sync snapshot has not arrived yet: until it has, this host may hold an older value of the
   * owner's writes, and re-stamping now would put it above the owner's latest write.
   * @this {import('./host.js').HostRole}
   * @param {number} e
   */
  ownerPending(e) {
    const owner = this.auth.author(e);
    if (owner === this.w.self) return false;
    if (!this.p.members.has(owner)) return false; // memberLeft returns its entities to the host
    const hm = this.mems.get(owner);
    return !hm || !hm.answered;
  }
}
