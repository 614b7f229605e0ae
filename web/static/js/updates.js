// @ts-check
// EntityUpdates (peer/updates.go): the dirty properties a peer sends unreliably at the network
// rate, packed one EntityUpdates per timestamp into datagrams, and the merge of the ones it hears.
// These are methods of Peer (see loop.js mixin).

import * as netmsg from './netmsg.js';
import { MAX_DATAGRAM } from './netmsg.js';
import { MessageType } from './crdt.js';
import { UNRELIABLE } from './rtc.js';

const U32_MAX = 0xffffffff;

/**
 * @param {number} m
 */
function trailingZeros(m) {
  return 31 - Math.clz32(m & -m);
}

/** Peer's EntityUpdates methods. */
export class PeerUpdates {
  /** @this {import('./peer.js').Peer} */
  flushUpdates() {
    if (this.host) {
      for (const hm of this.host.mems.values()) if (hm.snapshotSent) this.sendUpdates(hm.r, hm.dirty);
      return;
    }
    if (this.member && this.member.synced && this.member.hostLink) {
      this.sendUpdates(this.member.hostLink, this.member.dirty);
      this.member.sendAck();
    }
  }

  /**
   * Turns dirty (entity → property mask) into ≤ MAX_DATAGRAM-byte datagrams, one EntityUpdates per
   * timestamp (a relayed value keeps its author's stamp), and clears what it sent.
   * @this {import('./peer.js').Peer}
   * @param {import('./links.js').Remote} r
   * @param {Map<number, number>} dirty
   */
  sendUpdates(r, dirty) {
    if (dirty.size === 0 || !r.ready) return;
    const w = this.w;
    // One item per (entity, timestamp): its properties (mask) and their encoded values, in
    // ascending property order.
    /** @type {{ts: number, e: number, mask: number, s: import('./schema.js').Schema, parts: Uint8Array[]}[]} */
    const items = [];
    for (const [e, mask] of dirty) {
      const info = w.ents.get(e);
      if (!info) {
        dirty.delete(e);
        continue;
      }
      const s = info.schema;
      const start = items.length;
      for (let m = mask; m !== 0; m &= m - 1) {
        const i = trailingZeros(m);
        const v = w.r.get(e, s.properties[i].component);
        if (!v || v.deleted) continue;
        const ts = Number(v.ts);
        let j = start;
        while (j < items.length && items[j].ts !== ts) j++;
        if (j === items.length) items.push({ ts, e, mask: 0, s, parts: [] });
        items[j].mask |= 1 << i;
        items[j].parts.push(s.appendValue(i, v.data));
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
      const s = it.s;
      const u = { networkId: BigInt(it.e), maskBits: netmsg.maskWidth(s.properties.length), mask: it.mask >>> 0, data: netmsg.concat(...it.parts) };
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

  /**
   * @this {import('./peer.js').Peer}
   * @param {Map<number, number>} dirty
   * @param {number} e
   * @param {number} mask
   */
  clearDirty(dirty, e, mask) {
    const left = (dirty.get(e) || 0) & ~mask;
    if (left === 0) dirty.delete(e);
    else dirty.set(e, left);
  }

  /**
   * Merges an EntityUpdates message from origin with merge (default: the world's mergeRemote);
   * admit decides, per entity, whether origin may write it.
   * @this {import('./peer.js').Peer}
   * @param {import('./netmsg.js').Msg} eu
   * @param {number} origin
   * @param {(e: number) => boolean} admit
   * @param {(m: import('./crdt.js').Message, origin: number) => string | void} [merge]
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
      /** @type {[number, Uint8Array][]} */
      const vals = [];
      try {
        s.consumeValues(u.data, u.mask, (i, v) => vals.push([i, v]));
      } catch {
        this.count.dropped++;
        continue;
      }
      for (const [i, v] of vals) {
        merge({ type: MessageType.PutComponent, entity: e, component: s.properties[i].component, timestamp: ts, data: v }, origin);
      }
    }
  }
}
