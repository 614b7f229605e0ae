// @ts-check
// What the host sends after each step (peer/host.go flushCommands and the change sink): spawns,
// despawns, authority transfers and RPCs as Stamp + HostCommands, membership changes, and the CRDT
// changes TRNP cannot carry as a CrdtBatch; and which members each accepted change is owed to.
// These are methods of HostRole (see loop.js mixin).

import * as netmsg from './netmsg.js';
import { Type } from './netmsg.js';
import * as crdt from './crdt.js';
import * as hostsnapshot from './hostsnapshot.js';
import { COMPONENT_AUTHORITY } from './schema.js';
import { RELIABLE } from './rtc.js';
import { KIND_HOST } from './authority.js';
import { entityNumber } from './crdt.js';
import { now } from './loop.js';
import { entryMessage } from './restamp.js';

/**
 * The queues of what a step produced, which clearCommands (called by HostRole's constructor)
 * sets and empties. Declared for HostRole: a property only methods set would type as optional.
 * @typedef {object} CommandQueues
 * @property {number[]} spawns
 * @property {number[]} despawns
 * @property {{networkId: bigint, newAuthorIndex: bigint}[]} transfers
 * @property {{type: number, data: Uint8Array}[]} rpcs
 * @property {{type: number, data: Uint8Array}[]} actions
 * @property {{to: number, except: number, frame: Uint8Array, relayed?: boolean}[]} msgs reliable application messages,
 *   after the commands; relayed: a member's message to member to (its sender is except), which
 *   the host drops rather than send past to's relay backlog
 * @property {{peerIndex: bigint, peerId: string}[]} entered
 * @property {number[]} exited
 * @property {import('./crdt.js').Message[]} relay CRDT messages TRNP cannot carry
 */

/** HostRole's command and change-sink methods. */
export class HostCommands {
  /**
   * Sends the step's spawns, despawns, transfers, RPCs, membership changes and relayed CRDT messages.
   * @this {import('./host.js').HostRole}
   */
  flushCommands() {
    this.restamp();
    if (this.spawns.length + this.despawns.length + this.transfers.length + this.rpcs.length + this.actions.length + this.entered.length + this.exited.length + this.relay.length + this.msgs.length === 0) return;
    const p = this.p;
    const w = this.w;
    const parts = [];
    if (this.spawns.length + this.despawns.length + this.transfers.length + this.rpcs.length + this.actions.length > 0) {
      const stamp = w.stamp || w.clock;
      parts.push(netmsg.encode({ type: Type.Stamp, time: BigInt(stamp) }));
      const spawns = [];
      for (const e of this.spawns) {
        const info = w.ents.get(e);
        if (!info) continue;
        let mask = 0;
        /** @type {Uint8Array[]} the values the mask names, by property */
        const vals = [];
        info.schema.properties.forEach((prop, i) => {
          const v = w.r.get(e, prop.component);
          if (v && !v.deleted) {
            mask |= 1 << i;
            vals[i] = v.data;
          }
        });
        const updateData = hostsnapshot.appendSpawnUpdate(info.schema, mask >>> 0, (i) => vals[i]);
        spawns.push({ networkId: BigInt(e), schemaId: info.schema.id, creationData: info.creation, updateData });
      }
      parts.push(netmsg.encode({
        type: Type.HostCommands, spawns,
        despawns: this.despawns.map((e) => ({ networkId: BigInt(e) })),
        authorityTransfers: this.transfers,
        rpcs: this.rpcs, actions: this.actions,
      }));
    }
    for (const pi of this.entered) parts.push(netmsg.encode({ type: Type.PeerEntered, peer: pi }));
    for (const idx of this.exited) parts.push(netmsg.encode({ type: Type.PeerExited, peerIndex: BigInt(idx) }));
    if (this.relay.length > 0) {
      parts.push(netmsg.encode({ type: Type.CrdtBatch, term: BigInt(w.term), messages: netmsg.concat(...this.relay.map((m) => crdt.encodeMessage(m))) }));
    }
    const buf = netmsg.concat(...parts);
    if (buf.length > 0) for (const hm of this.mems.values()) if (hm.snapshotSent) p.send(hm.r, RELIABLE, buf);
    // Reliable application messages go after the commands of their step, never before them.
    for (const q of this.msgs) {
      if (q.relayed) this.sendRelayed(q.to, q.except, RELIABLE, q.frame);
      else this.sendTo(q.to, q.except, RELIABLE, q.frame);
    }
    this.clearCommands();
  }

  /**
   * Empties the queues of what the step produced (flushCommands sends them).
   * @this {import('./host.js').HostRole}
   */
  clearCommands() {
    /** @type {CommandQueues['spawns']} */
    this.spawns = [];
    /** @type {CommandQueues['despawns']} */
    this.despawns = [];
    /** @type {CommandQueues['transfers']} */
    this.transfers = [];
    /** @type {CommandQueues['rpcs']} */
    this.rpcs = [];
    /** @type {CommandQueues['actions']} */
    this.actions = [];
    /** @type {CommandQueues['msgs']} reliable application messages, after the commands */
    this.msgs = [];
    /** @type {CommandQueues['entered']} */
    this.entered = [];
    /** @type {CommandQueues['exited']} */
    this.exited = [];
    /** @type {CommandQueues['relay']} */
    this.relay = [];
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {number} e
   */
  touch(e) {
    this.ownStale = true;
    const n = this.changed.length;
    if (n > 0) this.changed[entityNumber(e) % n] = now();
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {number} e
   * @param {number} prop
   * @param {number} origin
   */
  propChanged(e, prop, origin) {
    this.touch(e);
    for (const [idx, hm] of this.mems) {
      if (hm.snapshotSent && idx !== origin) hm.dirty.set(e, (hm.dirty.get(e) || 0) | (1 << prop));
    }
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {number} e
   * @param {number} origin
   */
  spawned(e, origin) {
    this.touch(e);
    if (origin === 0) {
      this.spawns.push(e);
      return;
    }
    this.relayEntity(e);
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {number} e
   */
  despawned(e) {
    this.touch(e);
    this.auth.despawn(e);
    for (const hm of this.mems.values()) hm.dirty.delete(e);
    this.despawns.push(e);
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {number} e
   * @param {import('./authority.js').AuthorityRecord} rec
   * @param {number} origin
   */
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

  /**
   * @this {import('./host.js').HostRole}
   * @param {import('./crdt.js').Message} m
   */
  otherChanged(m) {
    this.touch(m.entity);
    this.relay.push(m.data && m.data.slice ? { ...m, data: m.data.slice() } : { ...m });
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {number} e
   */
  relayEntity(e) {
    this.w.r.range((en) => {
      if ((en.entity >>> 0) === e) this.relay.push(entryMessage(en.entity, en.component, en.timestamp, en.data ? en.data.slice() : en.data, en.deleted));
      return (en.entity >>> 0) <= e;
    });
  }

  /**
   * @this {import('./host.js').HostRole}
   * @param {number} e
   * @param {number} c
   */
  relayKey(e, c) {
    const v = this.w.r.get(e, c);
    if (v) this.relay.push(entryMessage(e, c, v.ts, v.data ? v.data.slice() : v.data, v.deleted));
  }
}
