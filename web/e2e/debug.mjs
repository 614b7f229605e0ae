// Test-only hooks for the end-to-end tests, never part of the shipped page: run.mjs injects this
// module into a page that has joined (page.addScriptTag with type module), where it imports the
// page's own modules from /js/ (the same module instances the page runs) and adds to
// window.concord:
//
//   debug              hooks that read the world or make this page a misbehaving member
//   addMemoryMember(u) another member in this page, linked to the host in memory, with its own hooks
//   extras             the members addMemoryMember made: {peer, debug, status()}
//
// Each forging hook returns true when its message went out on the link to the host.

import { Peer } from '/js/peer.js';
import { randomDevice } from '/js/signaling.js';
import * as netmsg from '/js/netmsg.js';
import * as crdt from '/js/crdt.js';
import * as hostsnapshot from '/js/hostsnapshot.js';
import { RELIABLE, UNRELIABLE } from '/js/rtc.js';
import { Game, AVATAR_POS, BOX_POS, parseVec, encodeVec } from '/js/arena.js';

function debugHooks(peer) {
  const w = peer.world;
  const hostLink = () => (peer.member && peer.member.hostLink && peer.member.hostLink.ready ? peer.member.hostLink : null);
  const sendRaw = (ch, bytes) => {
    const r = hostLink();
    return !!r && r.link.send(ch === 'unreliable' || ch === UNRELIABLE ? UNRELIABLE : RELIABLE, bytes);
  };
  return {
    sendRaw,
    boxPos: (e) => parseVec(w.get(e, BOX_POS)),
    avatarPos: (e) => parseVec(w.get(e, AVATAR_POS)),
    /** Moves this member's avatar to pos at once (its own write: the avatar is its authority). */
    teleport: (pos) => peer.do((ww) => {
      const me = ww.avatarOf(ww.self);
      if (me === undefined) return false;
      ww.set(me, AVATAR_POS, encodeVec(pos));
      return true;
    }),
    requestLock: (e) => peer.do((ww) => ww.requestLock(e)),
    silence: () => peer.silence(),
    /** A HostSnapshot, as if this member were the host, that puts box e at pos. */
    forgeSnapshot(e, pos) {
      const snap = hostsnapshot.build(w.r, w.schemas, {
        term: BigInt(w.term), localPeerIndex: BigInt(w.host), hostPeerIndex: BigInt(w.self), peers: [],
        cover: hostsnapshot.Cover.all(peer.opts.buckets),
      });
      for (const sp of snap.spawns) {
        if (Number(sp.networkId) === e) {
          const u = sp.updateData.slice();
          u.set(encodeVec(pos), 1); // after the u8 mask: the box's position
          sp.updateData = u;
        }
      }
      snap.hostTime = BigInt(w.clock + 1000);
      return sendRaw(RELIABLE, netmsg.encode({ type: netmsg.Type.HostSnapshot, ...snap }));
    },
    /**
     * A write without authority: this member writes box e's position into its own replica (stamped
     * above everything it has seen) and sends it to the host as an EntityUpdates.
     */
    forgeUpdate(e, pos) {
      const ts = w.clock + 1;
      const v = encodeVec(pos);
      w.r.writeAt(e, w.schemaOf(e).properties[BOX_POS].component, ts, v, false);
      const u = { networkId: BigInt(e), maskBits: 8, mask: 1 << BOX_POS, data: v };
      return sendRaw(UNRELIABLE, netmsg.encode({ type: netmsg.Type.EntityUpdates, time: BigInt(ts), updates: [u] }));
    },
    /** A CRDT correction for a host entity outside the sync window: the host must refuse it. */
    forgeCorrection(e, pos) {
      const ts = w.clock + 1;
      const m = { type: crdt.MessageType.PutComponent, entity: e, component: w.schemaOf(e).properties[BOX_POS].component, timestamp: ts, data: encodeVec(pos) };
      w.r.writeAt(m.entity, m.component, ts, m.data, false);
      return sendRaw(RELIABLE, netmsg.encode({ type: netmsg.Type.CrdtBatch, term: BigInt(w.term), messages: crdt.encodeMessage(m) }));
    },
  };
}

const c = window.concord;
c.debug = debugHooks(c.peer);
c.extras = {};
/**
 * Adds another member to the room from this page, linked to the host without WebRTC (an in-page
 * MemoryLink; the host must be this page's peer or another page-local peer). For tests of a
 * browser host: the extra member misbehaves through its own hooks.
 */
c.addMemoryMember = async (user) => {
  const p = new Peer({
    room: c.peer.opts.room, user, device: randomDevice(), kind: 'browser', app: new Game(), memory: true,
    log: (level, msg, fields) => console.info(`concord[${user}]: ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}`),
  });
  await p.run();
  window.addEventListener('pagehide', () => p.stop());
  c.extras[user] = { peer: p, debug: debugHooks(p), status: () => p.status() };
  return p.status();
};
