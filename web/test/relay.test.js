// The browser host's relay budgets (host.js forwardRelay; Go's peer/host_relay.go and
// TestAttackRelayToEveryone): one member at its message limit relays the largest reliable
// message to EVERYONE; each member's link carries 1 MiB/s. Before the budgets the host forwarded
// 3.2 MB/s to every member and closed each link as one that cannot keep up.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { Peer } from '../static/js/peer.js';
import { Game, SCHEMA_BOX, BOX_POS, encodeVec } from '../static/js/arena.js';
import { EVERYONE, MAX_MESSAGE } from '../static/js/world.js';
import * as netmsg from '../static/js/netmsg.js';
import { Type } from '../static/js/netmsg.js';
import { RELIABLE, RELIABLE_HIGH_WATER } from '../static/js/rtc.js';
import { APP_RATE, RECV_RELAY_RATE, RECV_RELAY_BURST, RELAY_RATE, RELAY_BURST } from '../static/js/host.js';

const HOST = 1;
const TERM = 1;

/**
 * A link whose reliable channel drains at rate bytes a second of the test's clock; a reliable
 * send that finds more than RELIABLE_HIGH_WATER buffered kills it, as rtc.js's Link does.
 */
class SlowLink {
  /**
   * @param {() => number} clock
   * @param {number} rate
   */
  constructor(clock, rate) {
    this.clock = clock;
    this.rate = rate;
    this.queued = 0;
    this.at = clock();
    this.dead = false;
    this.reason = '';
    this.relayed = new Map(); // sender → bytes of Relay messages received
    this.updates = 0; // unreliable payloads received
    this.reasm = new netmsg.Reassembler();
  }

  buffered(ch) {
    if (ch !== RELIABLE) return 0;
    const t = this.clock();
    this.queued = Math.max(0, this.queued - (t - this.at) / 1000 * this.rate);
    this.at = t;
    return this.queued;
  }

  send(ch, bytes) {
    if (this.dead) return false;
    if (ch !== RELIABLE) {
      this.updates++;
      return true;
    }
    if (this.buffered(ch) > RELIABLE_HIGH_WATER) {
      this.dead = true;
      this.reason = 'remote cannot keep up';
      return false;
    }
    this.queued += bytes.length;
    this.count(bytes);
    return true;
  }

  /** Counts the Relay messages of a reliable payload, reassembling fragmented ones. */
  count(bytes) {
    for (const m of netmsg.readMessages(bytes)) {
      if (m.type === Type.Fragment) {
        const whole = this.reasm.push(/** @type {any} */ (m));
        if (whole) this.count(whole);
        continue;
      }
      if (m.type !== Type.Relay) continue;
      const from = Number(m.peer);
      this.relayed.set(from, (this.relayed.get(from) || 0) + m.data.length + netmsg.RELAY_OVERHEAD);
    }
  }

  close() { this.dead = true; }
}

/** A browser host with synced members 2..n+1 on SlowLinks of rate bytes a second. */
function relayRoom(n, rate, clock) {
  const p = new Peer({ app: new Game({ boxes: 1 }), kind: 'host', log: () => {} });
  p.w.self = HOST;
  p.members.set(HOST, { peerIndex: HOST, peerId: 'host/device', kind: 'host' });
  const idxs = [];
  for (let i = 0; i < n; i++) {
    idxs.push(2 + i);
    p.members.set(2 + i, { peerIndex: 2 + i, peerId: `user${2 + i}/device`, kind: 'bot' });
  }
  p.step(() => p.setHost(TERM, HOST));
  const room = { p, remotes: new Map(), links: new Map() };
  for (const idx of idxs) {
    const r = p.connect(idx, 1, false, true);
    const link = new SlowLink(clock, rate);
    r.link = link;
    r.ready = true;
    room.remotes.set(idx, r);
    room.links.set(idx, link);
    const hello = netmsg.encode({ type: Type.Hello, term: BigInt(TERM), peerIndex: BigInt(idx), schemaFingerprint: p.w.schemas.fingerprint });
    const digest = netmsg.encode({ type: Type.Digest, term: BigInt(TERM), clock: 0, digests: new BigUint64Array(p.opts.buckets) });
    p.step(() => p.linkMessage(r, RELIABLE, netmsg.concat(hello, digest)));
    p.step(() => p.linkMessage(r, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: BigInt(TERM), messages: new Uint8Array(0) })));
    assert.ok(p.host.memberOf(r).answered, `member ${idx} synced`);
    link.queued = 0; // its sync snapshot has left
  }
  return room;
}

test('a relay to everyone at the message limit closes no honest member; the excess is dropped and counted', (t) => {
  let clock = 1000;
  mock.method(performance, 'now', () => clock);
  t.after(() => mock.restoreAll());
  const honest = [2, 3, 4, 5, 6, 7];
  const attacker = 8;
  const room = relayRoom(honest.length + 1, 1 << 20, () => clock);
  const { p } = room;
  const box = p.w.entitiesOf(SCHEMA_BOX)[0];
  const flood = netmsg.encode({ type: Type.Relay, peer: BigInt(EVERYONE), appType: 200, data: new Uint8Array(MAX_MESSAGE) });
  const chat = netmsg.encode({ type: Type.Relay, peer: BigInt(EVERYONE), appType: 201, data: new TextEncoder().encode('hello') });
  const steps = 60; // 50 ms each: 3 s
  for (let i = 0; i < steps; i++) {
    for (let k = 0; k < APP_RATE / 20; k++) p.step(() => p.linkMessage(room.remotes.get(attacker), RELIABLE, flood));
    if (i % 20 === 0) p.step(() => p.linkMessage(room.remotes.get(2), RELIABLE, chat));
    p.step(() => p.w.set(box, BOX_POS, encodeVec({ x: i, y: 0 })));
    p.step(() => p.flushUpdates());
    clock += 50;
    for (const idx of honest) assert.ok(p.remotes.get(idx) && !room.links.get(idx).dead, `member ${idx} still linked at step ${i}`);
  }
  assert.ok(p.remotes.get(attacker), 'the attacker is over its budget, not an offender');
  const elapsed = steps * 50 / 1000;
  for (const idx of honest) {
    const link = room.links.get(idx);
    const got = link.relayed.get(attacker) || 0;
    assert.ok(got > 0, `member ${idx} got some of the attacker's messages`);
    assert.ok(got <= RECV_RELAY_BURST + elapsed * RECV_RELAY_RATE, `member ${idx} got ${got} relayed bytes, over its inbound budget`);
    assert.ok(got <= (RELAY_BURST + elapsed * RELAY_RATE) / honest.length, `member ${idx} got ${got} relayed bytes, over its share of the sender's budget`);
    if (idx !== 2) assert.equal(link.relayed.get(2), 3 * (5 + netmsg.RELAY_OVERHEAD), `member ${idx} got member 2's three chat lines`);
    assert.ok(link.updates >= steps, `member ${idx} kept receiving the host's updates`);
  }
  const st = p.status();
  assert.ok(st.refusedBy.relay_budget > 0, 'the excess is counted (relay_budget)');
  assert.equal(st.offenders, 0);
});

test('senders to one member share its inbound budget, and a slow member loses relays, not its link', (t) => {
  let clock = 1000;
  mock.method(performance, 'now', () => clock);
  t.after(() => mock.restoreAll());
  // Member 2's link carries 16 KiB/s, an eighth of its inbound budget: without the backlog the
  // relays alone take it past the high-water mark within ten seconds.
  const room = relayRoom(3, 16 << 10, () => clock);
  const { p } = room;
  const flood = netmsg.encode({ type: Type.Relay, peer: 2n, appType: 200, data: new Uint8Array(MAX_MESSAGE) });
  const steps = 200;
  for (let i = 0; i < steps; i++) {
    for (const from of [3, 4]) {
      for (let k = 0; k < APP_RATE / 20; k++) p.step(() => p.linkMessage(room.remotes.get(from), RELIABLE, flood));
    }
    p.step(() => p.flushUpdates());
    clock += 50;
    assert.ok(p.remotes.get(2) && !room.links.get(2).dead, `member 2 still linked at step ${i}`);
  }
  const link = room.links.get(2);
  const got = (link.relayed.get(3) || 0) + (link.relayed.get(4) || 0);
  assert.ok(got > 0 && got <= RECV_RELAY_BURST + steps * 50 / 1000 * RECV_RELAY_RATE, `member 2 got ${got} relayed bytes`);
  const st = p.status();
  assert.ok(st.refusedBy.relay_inbound > 0, 'copies over the inbound budget are counted (relay_inbound)');
  assert.ok(st.refusedBy.relay_backlog > 0, 'copies past the backlog are counted (relay_backlog)');
  assert.equal(st.offenders, 0);
});
