// The browser member role (member.js) against a browser host, driven with no network: two Peers
// whose links are in-test wires delivering on pump(), and signaling's announcements fed to
// setHost. It covers the member's fence over host messages (docs/protocol.md §5; authority.js
// Fence): a host message from an older term, or from a peer that is not the host, is refused and
// counted; one of the current host and term is merged. And a member whose schema table is not the
// host's ends its session with an error naming both tables instead of reconnecting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Peer } from '../static/js/peer.js';
import { Game, SCHEMAS, SCHEMA_BOX, BOX_POS, encodeVec, parseVec } from '../static/js/arena.js';
import { SchemaTable } from '../static/js/schema.js';
import * as sc from '../static/js/schema.js';
import * as netmsg from '../static/js/netmsg.js';
import { Type } from '../static/js/netmsg.js';
import * as crdt from '../static/js/crdt.js';
import * as hostsnapshot from '../static/js/hostsnapshot.js';
import { RELIABLE, UNRELIABLE } from '../static/js/rtc.js';
import { MAX_HOST_SKEW, MAX_FRESH_CLOCK } from '../static/js/member.js';

const HOST = 1;
const MEMBER = 2;
const OTHER = 3;

/** One end of an in-test link: what it sends waits in the room's queue for pump(). */
class Wire {
  constructor(room, to, toRemote) {
    Object.assign(this, { room, to, toRemote, dead: false });
  }

  send(ch, bytes) {
    if (this.dead) return false;
    if (!this.to) return true; // a host the test plays itself hears nothing
    this.room.queue.push({ to: this.to, r: this.toRemote(), ch, bytes: bytes.slice() });
    return true;
  }

  close() { this.dead = true; }
}

/** Delivers queued payloads, each as a step of its receiver, until none is left. */
function pump(room) {
  for (let n = 0; room.queue.length > 0; n++) {
    assert.ok(n < 1000, 'the peers keep talking');
    const { to, r, ch, bytes } = room.queue.shift();
    to.step(() => to.linkMessage(r, ch, bytes));
  }
}

function newPeer(self, kind, app = new Game({ boxes: 1 }), log = () => {}) {
  const p = new Peer({ app, kind, memory: true, log });
  p.w.self = self;
  for (const [idx, k] of [[HOST, 'host'], [MEMBER, 'bot'], [OTHER, 'bot']]) {
    p.members.set(idx, { peerIndex: idx, peerId: `user${idx}/device`, kind: k });
  }
  return p;
}

/**
 * Links the member to host (a Peer hosting, or null for a host the test plays itself) after the
 * member followed it: the member's link, and the host's Remote for the member.
 */
function link(room, host) {
  const m = room.member;
  const mr = m.member.hostLink;
  assert.ok(mr, 'the member follows a host');
  let hr = null;
  if (host) {
    hr = host.connect(MEMBER, mr.session, false, true);
    hr.link = new Wire(room, m, () => mr);
    hr.ready = true;
  }
  mr.link = new Wire(room, host, () => hr);
  mr.ready = true;
  m.step(() => m.linkReady(mr));
  if (host) pump(room);
  return mr;
}

/** A synced member of a browser host in term 1, and the host's box. */
function newRoom() {
  const room = { queue: [] };
  room.host = newPeer(HOST, 'host');
  room.host.step(() => room.host.setHost(1, HOST));
  room.member = newPeer(MEMBER, 'bot');
  room.member.step(() => room.member.setHost(1, HOST));
  room.link1 = link(room, room.host);
  assert.equal(room.member.status().state, 'connected', 'the member synced');
  [room.box] = room.member.w.entitiesOf(SCHEMA_BOX);
  assert.notEqual(room.box, undefined, 'the member sees the box');
  return room;
}

function stop(room) {
  room.host.stop();
  room.member.stop();
}

/** An EntityUpdates putting the box at pos, stamped above everything the member has seen. */
function boxUpdate(room, pos) {
  const u = { networkId: BigInt(room.box), maskBits: netmsg.maskWidth(2), mask: 1 << BOX_POS, data: encodeVec(pos) };
  return netmsg.encode({ type: Type.EntityUpdates, time: BigInt(room.member.w.clock + 10), updates: [u] });
}

/** A CrdtBatch of term putting the box at pos. */
function boxBatch(room, term, pos) {
  const m = { type: crdt.MessageType.PutComponent, entity: room.box, component: SCHEMAS[1].properties[BOX_POS].component, timestamp: room.member.w.clock + 10, data: encodeVec(pos) };
  return netmsg.encode({ type: Type.CrdtBatch, term: BigInt(term), messages: crdt.encodeMessage(m) });
}

/** Delivers payload to the member on link r; returns whether the box moved to pos and the refusals it cost. */
function deliver(room, r, ch, payload, pos) {
  const m = room.member;
  const fenced = m.status().fenced;
  m.step(() => m.linkMessage(r, ch, payload));
  const at = parseVec(m.w.get(room.box, BOX_POS));
  return { moved: at.x === pos.x && at.y === pos.y, refused: m.status().fenced - fenced };
}

test('a member refuses EntityUpdates from an older term and takes the current term\'s', () => {
  const room = newRoom();
  try {
    const m = room.member;
    // Term 1, host 1: its updates are merged.
    const p1 = { x: 1111, y: 1111 };
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, boxUpdate(room, p1), p1), { moved: true, refused: 0 });

    // Term 2 makes peer 3 host; term 3 makes peer 1 host again, over a new link.
    m.step(() => m.setHost(2, OTHER));
    const link2 = link(room, null);
    m.step(() => m.setHost(3, HOST));
    const link3 = link(room, null);
    assert.notEqual(link3, room.link1);
    assert.equal(m.status().term, 3);

    // A forged EntityUpdates on the term-1 link (the same peer, now host again): refused.
    const forged = { x: 6666, y: 6666 };
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, boxUpdate(room, forged), forged), { moved: false, refused: 1 });
    // Nor is term 2's host heard any more.
    assert.deepEqual(deliver(room, link2, UNRELIABLE, boxUpdate(room, forged), forged), { moved: false, refused: 1 });
    // The current host's update in the current term is merged.
    const p3 = { x: 3333, y: 3333 };
    assert.deepEqual(deliver(room, link3, UNRELIABLE, boxUpdate(room, p3), p3), { moved: true, refused: 0 });
  } finally {
    stop(room);
  }
});

test('a member refuses CrdtBatches and HostCommands of an older term on its host\'s link', () => {
  const room = newRoom();
  try {
    const m = room.member;
    // The same host, elected again in term 2: its link stays, and serves term 2.
    m.step(() => m.setHost(2, HOST));
    assert.equal(m.member.hostLink, room.link1, 'the link to the same host is kept');
    const stale = { x: 100, y: 100 };
    assert.deepEqual(deliver(room, room.link1, RELIABLE, boxBatch(room, 1, stale), stale), { moved: false, refused: 1 });
    const cur = { x: 200, y: 200 };
    assert.deepEqual(deliver(room, room.link1, RELIABLE, boxBatch(room, 2, cur), cur), { moved: true, refused: 0 });
    // A despawn on the host's link from before term 3, whose host is another peer: refused.
    m.step(() => m.setHost(3, OTHER));
    const despawn = netmsg.concat(
      netmsg.encode({ type: Type.Stamp, time: BigInt(m.w.clock + 10) }),
      netmsg.encode({ type: Type.HostCommands, spawns: [], despawns: [{ networkId: BigInt(room.box) }], authorityTransfers: [], rpcs: [], actions: [] }),
    );
    const fenced = m.status().fenced;
    m.step(() => m.linkMessage(room.link1, RELIABLE, despawn));
    assert.ok(m.w.exists(room.box), 'the box lives');
    assert.equal(m.status().fenced, fenced + 1);
  } finally {
    stop(room);
  }
});

test('a term newer than signaling announced is refused and does not move the member', () => {
  const room = newRoom();
  try {
    const m = room.member;
    const pos = { x: 4242, y: 4242 };
    assert.deepEqual(deliver(room, room.link1, RELIABLE, boxBatch(room, 2, pos), pos), { moved: false, refused: 1 });
    assert.equal(m.status().term, 1, 'only signaling moves the term');
    // Once signaling announces term 2 with the same host, the link serves it.
    m.step(() => m.setHost(2, HOST));
    assert.deepEqual(deliver(room, room.link1, RELIABLE, boxBatch(room, 2, pos), pos), { moved: true, refused: 0 });
  } finally {
    stop(room);
  }
});

/** An app running the arena with one more schema: another table, another fingerprint. */
function otherApp() {
  const game = new Game({ boxes: 1 });
  const table = new SchemaTable([...SCHEMAS, { id: 99, name: 'extra', properties: [{ name: 'x', component: 9900, size: 4 }] }]);
  game.schemas = () => table;
  return game;
}

test('a member with another schema table ends with an error naming both tables and retries nothing', async () => {
  const room = { queue: [] };
  const hostWarnings = [];
  room.host = newPeer(HOST, 'host', undefined, (level, msg) => { if (level === 'warn') hostWarnings.push(msg); });
  room.host.step(() => room.host.setHost(1, HOST));
  const errors = [];
  room.member = newPeer(MEMBER, 'bot', otherApp(), (level, msg, f) => { if (level === 'error') errors.push(f.err); });
  try {
    const m = room.member;
    m.step(() => m.setHost(1, HOST));
    const hostFp = room.host.w.schemas.fingerprint.toString(16).padStart(16, '0');
    const ourFp = m.w.schemas.fingerprint.toString(16).padStart(16, '0');
    assert.notEqual(hostFp, ourFp);
    link(room, room.host);
    assert.ok(hostWarnings.includes('member runs another schema table; refused'), hostWarnings.join('; '));
    const err = await m.done;
    assert.ok(err, 'the session ended with an error');
    assert.equal(err.code, 'schema_mismatch');
    assert.match(err.message, new RegExp(`this peer runs schema table ${ourFp}; the host \\(peer 1\\) refused it: schema table ${ourFp} differs from the host's ${hostFp}`));
    const st = m.status();
    assert.equal(st.state, 'failed');
    assert.equal(st.error, err.message);
    assert.deepEqual(errors, [err.message]);
    assert.equal(m.remotes.size, 0, 'no link left');
    assert.equal(m.pending.size, 0, 'no retry scheduled');
    // Signaling naming a host again changes nothing: the peer has stopped.
    m.step(() => m.setHost(2, OTHER));
    assert.equal(m.status().term, 1);
  } finally {
    stop(room);
  }
});

test('a snapshot of another schema table ends the member with both tables named', async () => {
  const room = { queue: [] };
  room.host = newPeer(HOST, 'host', otherApp());
  room.host.step(() => room.host.setHost(1, HOST));
  room.member = newPeer(MEMBER, 'bot');
  try {
    const m = room.member;
    m.step(() => m.setHost(1, HOST));
    const r = link(room, null);
    // A host that let the Hello pass: its snapshot carries its table's fingerprint.
    const h = room.host.w;
    const snap = hostsnapshot.build(h.r, h.schemas, {
      term: 1n, localPeerIndex: BigInt(MEMBER), hostPeerIndex: BigInt(HOST), peers: [], cover: hostsnapshot.Cover.all(m.opts.buckets),
    });
    m.step(() => m.linkMessage(r, RELIABLE, netmsg.encode({ type: Type.HostSnapshot, ...snap })));
    const err = await m.done;
    assert.ok(err, 'the session ended with an error');
    const hostFp = h.schemas.fingerprint.toString(16).padStart(16, '0');
    const ourFp = m.w.schemas.fingerprint.toString(16).padStart(16, '0');
    assert.match(err.message, new RegExp(`this peer runs schema table ${ourFp}; the host \\(peer 1\\) sent a snapshot of schema table ${hostFp}`));
    assert.equal(m.status().state, 'failed');
    assert.equal(m.w.size, 0, 'nothing of the snapshot was merged');
  } finally {
    stop(room);
  }
});

test('a synced member refuses its host\'s stamps far ahead and deletions far above any version (malicious host)', () => {
  const room = newRoom();
  try {
    const m = room.member;
    const clock = m.w.clock;
    const u = { networkId: BigInt(room.box), maskBits: netmsg.maskWidth(2), mask: 1 << BOX_POS, data: encodeVec({ x: 9, y: 9 }) };
    m.step(() => m.linkMessage(room.link1, UNRELIABLE, netmsg.encode({ type: Type.EntityUpdates, time: 0xffffffffn, updates: [u] })));
    const dels = [];
    for (let n = 700; n < 710; n++) dels.push(crdt.encodeMessage({ type: crdt.MessageType.DeleteEntity, entity: (0xffff << 16 | n) >>> 0, component: 0, timestamp: 0, data: null }));
    m.step(() => m.linkMessage(room.link1, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: 1n, messages: netmsg.concat(...dels) })));
    const cmds = netmsg.concat(
      netmsg.encode({ type: Type.Stamp, time: 0xffffffffn }),
      netmsg.encode({ type: Type.HostCommands, spawns: [], despawns: [], authorityTransfers: [], rpcs: [], actions: [] }),
    );
    m.step(() => m.linkMessage(room.link1, RELIABLE, cmds));
    assert.ok(m.w.clock <= clock + MAX_HOST_SKEW, `member clock ${clock} → ${m.w.clock}`);
    assert.notDeepEqual(parseVec(m.w.get(room.box, BOX_POS)), { x: 9, y: 9 }, 'the update stamped 2³²−1 is not taken');
    for (let n = 700; n < 710; n++) assert.equal(m.w.r.deletedVersion(n), undefined, `number ${n} not deleted`);
    assert.ok(m.status().refused >= 12, `refused ${m.status().refused}`);
    // The host's honest update is still taken.
    const p = { x: 1234, y: 1234 };
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, boxUpdate(room, p), p), { moved: true, refused: 0 });
  } finally {
    stop(room);
  }
});

/**
 * A member (its replica's clock raised to memberClock first) linking to a browser host whose clock
 * is hostClock: the room, once the member's greeting was answered.
 */
function syncTo(hostClock, memberClock) {
  const room = { queue: [] };
  room.host = newPeer(HOST, 'host');
  room.host.step(() => room.host.setHost(1, HOST));
  room.host.w.r.observeClock(hostClock);
  room.member = newPeer(MEMBER, 'bot');
  if (memberClock > 0) room.member.w.r.observeClock(memberClock);
  room.member.step(() => room.member.setHost(1, HOST));
  room.link1 = link(room, room.host);
  return room;
}

test('a member refuses a first snapshot whose clock is beyond its bounds, and takes nothing more from that host', () => {
  for (const [name, hostClock, memberClock] of [['a fresh joiner, a saturated host', 0xffffffff - 5, 0], ['a survivor, a host far ahead', 1 << 24, 100]]) {
    const room = syncTo(hostClock, memberClock);
    try {
      const m = room.member;
      assert.notEqual(m.status().state, 'connected', `${name}: not synced`);
      assert.equal(m.w.clock, memberClock, `${name}: the member's clock did not move`);
      assert.equal(m.status().refused, 1, `${name}: the snapshot refused`);
    } finally {
      stop(room);
    }
  }
  // Within the bounds, both sync.
  for (const [hostClock, memberClock] of [[MAX_FRESH_CLOCK, 0], [100 + MAX_HOST_SKEW, 100]]) {
    const room = syncTo(hostClock, memberClock);
    try {
      assert.equal(room.member.status().state, 'connected', `host at ${hostClock}, member at ${memberClock}: synced`);
    } finally {
      stop(room);
    }
  }
});

test('a synced member refuses whole a snapshot stamping a value above its own clock', () => {
  const room = newRoom();
  try {
    const m = room.member;
    const clock = m.w.clock;
    const h = room.host.w;
    h.r.merge({ type: crdt.MessageType.PutComponent, entity: room.box, component: SCHEMAS[1].properties[BOX_POS].component, timestamp: 0xffffffff, data: encodeVec({ x: 9, y: 9 }) });
    const snap = hostsnapshot.build(h.r, h.schemas, {
      term: 1n, localPeerIndex: BigInt(MEMBER), hostPeerIndex: BigInt(HOST), peers: [], cover: hostsnapshot.Cover.all(m.opts.buckets),
    });
    // The host state's clock (u32 at offset 9) claims less than the value's stamp.
    new DataView(snap.hostState.buffer, snap.hostState.byteOffset).setUint32(9, clock, true);
    const refused = m.status().refused;
    m.step(() => m.linkMessage(room.link1, RELIABLE, netmsg.encode({ type: Type.HostSnapshot, ...snap })));
    assert.equal(m.status().refused, refused + 1);
    assert.equal(m.w.clock, clock, 'the member\'s clock did not move');
    assert.notDeepEqual(parseVec(m.w.get(room.box, BOX_POS)), { x: 9, y: 9 }, 'nothing merged');
  } finally {
    stop(room);
  }
});

test('an idle member backs off its digests to one every DIGEST_MAX_GAP intervals; a change resets it', () => {
  const room = newRoom();
  try {
    const m = room.member;
    let digests = 0;
    const send = m.send.bind(m);
    m.send = (r, ch, bytes) => {
      if (bytes[0] === Type.Digest) digests++;
      return send(r, ch, bytes);
    };
    for (let i = 0; i < 128; i++) m.step(() => m.member.sendDigest());
    // 1, 2, 4, 8, 16, 32 intervals apart, then every 32: 9 in 128, not 128.
    assert.ok(digests >= 3 && digests <= 12, `${digests} digests in 128 idle intervals`);
    digests = 0;
    const p = { x: 4242, y: 4242 };
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, boxUpdate(room, p), p), { moved: true, refused: 0 });
    m.step(() => m.member.sendDigest());
    assert.equal(digests, 1, 'a changed replica digests at once');
  } finally {
    stop(room);
  }
});

test('a Forget drops entities from the member\'s replica without deleting them; a later snapshot brings them back', () => {
  const room = newRoom();
  try {
    const m = room.member;
    const events = [];
    m.onEvent((ev) => events.push(ev));
    const forget = netmsg.encode({ type: Type.Forget, networkIds: [BigInt(room.box)] });
    m.step(() => m.linkMessage(room.link1, RELIABLE, forget));
    assert.equal(m.w.exists(room.box), false, 'the box left the index');
    assert.equal(m.w.r.get(room.box, SCHEMAS[1].properties[BOX_POS].component), undefined, 'and the replica');
    assert.equal(m.w.r.entityDeleted(room.box), false, 'it was not deleted');
    assert.ok(events.some((ev) => ev.kind === 'left-interest' && ev.entity === room.box), 'left-interest event');
    assert.notEqual(m.w.r.hash(), room.host.w.r.hash());
    // The browser host follows no interest: the member's next digest differs, and the host's
    // snapshot brings the box back as new (no quiet period: the box's bucket changed just now).
    room.host.opts.quietMs = 0;
    m.step(() => m.member.sendDigest());
    pump(room);
    assert.equal(m.w.exists(room.box), true, 'the box is back');
    assert.equal(m.w.r.hash(), room.host.w.r.hash());
  } finally {
    stop(room);
  }
});

test('a member merges PackedUpdates (a Go host\'s updates) as it merges EntityUpdates', () => {
  const room = newRoom();
  try {
    const p = { x: 4321, y: 1234 };
    const u = { networkId: BigInt(room.box), maskBits: netmsg.maskWidth(2), mask: 1 << BOX_POS, data: encodeVec(p) };
    const packed = netmsg.encode({ type: Type.PackedUpdates, time: BigInt(room.member.w.clock + 10), updates: [u] });
    const plain = boxUpdate(room, p);
    assert.ok(packed.length < plain.length, `packed ${packed.length} bytes, plain ${plain.length}`);
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, packed, p), { moved: true, refused: 0 });
  } finally {
    stop(room);
  }
});

test('a member merges RunUpdates (a Go host\'s updates in runs) as it merges EntityUpdates', () => {
  const room = newRoom();
  try {
    const p = { x: 1234, y: 4321 };
    const u = { networkId: BigInt(room.box), maskBits: netmsg.maskWidth(2), mask: 1 << BOX_POS, data: encodeVec(p) };
    const runs = netmsg.encode({ type: Type.RunUpdates, time: BigInt(room.member.w.clock + 10), updates: [u] });
    assert.equal(runs[0], Type.RunUpdates);
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, runs, p), { moved: true, refused: 0 });
  } finally {
    stop(room);
  }
});

test('a member asks a Go host for deltas, rebuilds them from the values it acknowledged, and acks', () => {
  const room = newRoom();
  try {
    const m = room.member;
    const prop = m.w.schemas.lookup(SCHEMA_BOX).properties[BOX_POS];
    const t0 = BigInt(m.w.clock + 10);
    /** A DeltaUpdates numbered seq carrying the box's position as data (distance byte first). */
    const dgram = (seq, data) => netmsg.encode({ type: Type.DeltaUpdates, seq, time: t0 + seq, updates: [
      { networkId: BigInt(room.box), maskBits: netmsg.maskWidth(2), mask: 1 << BOX_POS, data } ] });
    const cat = (a, b) => netmsg.concat(Uint8Array.of(a), b);
    const p1 = { x: 100, y: 200 };
    const p2 = { x: 101, y: 199 };
    const p3 = { x: 120, y: 180 };
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, dgram(1n, cat(0, encodeVec(p1))), p1), { moved: true, refused: 0 });
    const d12 = sc.appendDelta(prop, encodeVec(p1), encodeVec(p2));
    assert.ok(d12.length < encodeVec(p2).length, `delta of ${d12.length} bytes`);
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, dgram(2n, cat(1, d12)), p2), { moved: true, refused: 0 });
    assert.equal(m.status().deltas, 1);
    // A difference from seq 3, never received: dropped, counted, and seq 5 is not acknowledged.
    const d = sc.appendDelta(prop, encodeVec(p2), encodeVec(p3));
    assert.deepEqual(deliver(room, room.link1, UNRELIABLE, dgram(5n, cat(2, d)), p3), { moved: false, refused: 0 });
    assert.equal(m.status().deltaMissed, 1);
    // The member's flush sends the Ack: seq 2 and seq 1 below it.
    room.queue.length = 0;
    m.step(() => m.flushUpdates());
    const acks = room.queue.filter((q) => q.ch === UNRELIABLE).map((q) => netmsg.decode(q.bytes).msg).filter((x) => x.type === Type.Ack);
    assert.deepEqual(acks.map((a) => [a.highest, a.received]), [[2n, 1n]]);
    room.queue.length = 0;
    m.step(() => m.flushUpdates());
    assert.equal(room.queue.length, 0, 'nothing new: no Ack');
  } finally {
    stop(room);
  }
});

test('the member\'s greeting asks for deltas; a browser host takes the Ack and sends whole values', () => {
  const room = { queue: [] };
  room.host = newPeer(HOST, 'host');
  room.host.step(() => room.host.setHost(1, HOST));
  room.member = newPeer(MEMBER, 'bot');
  room.member.step(() => room.member.setHost(1, HOST));
  const sent = [];
  const orig = room.member.send.bind(room.member);
  room.member.send = (r, ch, b) => { sent.push(b); return orig(r, ch, b); };
  try {
    const dropped = room.host.status().dropped;
    link(room, room.host);
    const greeting = [...netmsg.readMessages(sent[0])].map((x) => x.type);
    assert.deepEqual(greeting, [Type.Hello, Type.Ack, Type.Digest]);
    assert.equal(room.host.status().dropped, dropped, 'the browser host took the Ack quietly');
    assert.equal(room.member.status().state, 'connected');
  } finally {
    stop(room);
  }
});
