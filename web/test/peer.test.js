// The browser host role (peer.js HostRole) after a rejected write, driven directly with no
// network: a Peer made host by setHost, two members whose links only record what the host sends,
// and encoded TRNP messages fed through the peer's link handler. It mirrors Go's
// TestOwnerWriteAfterRestamp (peer/e2e_test.go) and restamper.restamp/mergeWrite (peer/host_restamp.go):
// a forged write to a member's avatar makes the host re-stamp the avatar above the forgery; the
// owner's next write, stamped below the re-stamp but after the value re-stamped, must still win.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Peer } from '../static/js/peer.js';
import { Game, SCHEMA_AVATAR, SCHEMA_BOX, AVATAR_POS, BOX_POS, encodeVec, parseVec } from '../static/js/arena.js';
import { RPC_LOCK_REQUEST, RPC_RELINQUISH } from '../static/js/world.js';
import * as netmsg from '../static/js/netmsg.js';
import { Type } from '../static/js/netmsg.js';
import * as crdt from '../static/js/crdt.js';
import { RELIABLE, UNRELIABLE } from '../static/js/rtc.js';
import { MAX_STAMP_SKEW, MAX_STRIKES, MAX_CONDUCTS, CLOSE_REFUSED, windowOpen, windowCeiling, windowDeletionOK, windowRecordOK, windowAvatarOK } from '../static/js/restamp.js';
import { readJSON } from './helpers.js';
import { HOST_REASSEMBLY_LIMIT, REASSEMBLY_TIMEOUT_MS } from '../static/js/links.js';
import { COMPONENT_AUTHORITY, COMPONENT_META, appendMeta } from '../static/js/schema.js';
import { KIND_AVATAR, KIND_HOST, KIND_LOCK, encodeRecord } from '../static/js/authority.js';

const HOST = 1;
const OWNER = 2;
const MALLORY = 3;
const TERM = 1;
const POS = 1100; // the avatar's pos component (arena.js SCHEMAS)

/** A link that records what the host sends to one member. */
class RecordingLink {
  constructor() {
    this.sent = [];
    this.dead = false;
  }

  send(ch, bytes) {
    this.sent.push({ ch, bytes: bytes.slice() });
    return true;
  }

  close() { this.dead = true; }

  /** The messages sent since the last take, decoded, with the channel each came on. */
  take() {
    const out = [];
    for (const { ch, bytes } of this.sent) for (const m of netmsg.readMessages(bytes)) out.push({ ch, m });
    this.sent = [];
    return out;
  }
}

/**
 * A browser peer hosting term 1 of a room with two synced members, OWNER and MALLORY (bots, so
 * each got an avatar). Warnings other than rejected writes fail the test. held: per member, the
 * term of the state its greeting says it holds (default: the room's term, nothing earlier).
 * recorded: per member, the term signaling recorded it synced in (its member record's
 * syncedTerm); default: its held term, as for a real survivor of that term. takeover: the host
 * took over holding the world its app made (the previous host's entities), before any member synced.
 */
function newRoom({ answered = [OWNER, MALLORY], opts = {}, term = TERM, held = {}, recorded = held, warn = false, boxes = 1, takeover = false } = {}) {
  const warnings = [];
  const log = (level, msg, fields) => {
    if (level === 'warn' && msg !== 'write rejected' && !warn) warnings.push(`${msg} ${JSON.stringify(fields)}`);
  };
  const p = new Peer({ app: new Game({ boxes }), kind: 'host', log, ...opts });
  p.w.self = HOST;
  for (const [idx, kind] of [[HOST, 'host'], [OWNER, 'bot'], [MALLORY, 'bot']]) {
    p.members.set(idx, { peerIndex: idx, peerId: `user${idx}/device`, kind, syncedTerm: recorded[idx] ?? 0 });
  }
  p.step(() => p.setHost(term, HOST));
  assert.ok(p.host, 'the peer hosts');
  if (takeover) p.host.startWindow();
  const room = { p, warnings, term, remotes: new Map(), links: new Map() };
  for (const idx of [OWNER, MALLORY]) {
    // connect() as the answerer of an in-page link makes the Remote and starts nothing; the
    // recording link then stands in for the MemoryLink.
    const r = p.connect(idx, 1, false, true);
    const link = new RecordingLink();
    r.link = link;
    r.ready = true;
    room.remotes.set(idx, r);
    room.links.set(idx, link);
    const hello = netmsg.encode({ type: Type.Hello, term: BigInt(held[idx] ?? term), peerIndex: BigInt(idx), schemaFingerprint: p.w.schemas.fingerprint });
    const digest = netmsg.encode({ type: Type.Digest, term: BigInt(term), clock: 0, digests: new BigUint64Array(p.opts.buckets) });
    deliver(room, idx, RELIABLE, netmsg.concat(hello, digest));
    assert.ok(p.host.memberOf(r).snapshotSent, `member ${idx} got its sync snapshot`);
    if (!answered.includes(idx)) continue; // its window for the previous host's state stays open
    // Its answer to the snapshot (no corrections): the host now holds its latest writes.
    deliver(room, idx, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: BigInt(term), messages: new Uint8Array(0) }));
    assert.ok(p.host.memberOf(r).answered, `member ${idx} answered its snapshot`);
  }
  room.avatar = p.w.avatarOf(OWNER);
  assert.notEqual(room.avatar, undefined, 'the owner has an avatar');
  assert.equal(p.w.schemaOf(room.avatar).id, SCHEMA_AVATAR);
  // A survivor that has not answered its sync snapshot waits for its avatar (its answer may
  // bring back the one an earlier host gave it).
  const waits = p.host.memberOf(room.remotes.get(MALLORY)).avatarAfterAnswer;
  assert.equal(p.w.avatarOf(MALLORY) !== undefined, !waits, waits ? 'mallory waits for its avatar' : 'mallory has an avatar');
  drain(room);
  return room;
}

/** Runs one loop step in which member idx's link delivers payload (as rtc.js's onMessage does). */
function deliver(room, idx, ch, payload) {
  const r = room.remotes.get(idx);
  room.p.step(() => room.p.linkMessage(r, ch, payload));
  assert.equal(room.p.remotes.get(idx), r, `member ${idx}'s link is still up`);
  assert.deepEqual(room.warnings, [], 'no warnings but rejected writes');
}

/** Sends, as member idx, an EntityUpdates moving entity e to pos, stamped ts. */
function move(room, idx, e, ts, pos) {
  const u = { networkId: BigInt(e), maskBits: netmsg.maskWidth(3), mask: 1 << AVATAR_POS, data: encodeVec(pos) };
  deliver(room, idx, UNRELIABLE, netmsg.encode({ type: Type.EntityUpdates, time: BigInt(ts), updates: [u] }));
}

/** What the host has queued for the member at the other end of r: entity → property mask. */
function dirtyOf(room, r) {
  return room.p.host.memberOf(r).dirty;
}

/** Flushes the host's updates and clears every member's dirty set and recorded traffic. */
function drain(room) {
  room.p.step(() => room.p.flushUpdates());
  for (const link of room.links.values()) link.take();
  for (const r of room.remotes.values()) assert.equal(dirtyOf(room, r).size, 0, `member ${r.idx} has nothing queued`);
}

/** The host's entry of the avatar's pos: {pos, ts}. */
function avatarPos(room) {
  const v = room.p.w.r.get(room.avatar, POS);
  assert.ok(v && !v.deleted, 'the avatar has a position');
  return { pos: parseVec(v.data), ts: v.ts };
}

/** What the host remembers of its re-stamp of the avatar's pos, or undefined. */
function restampedPos(room) {
  return room.p.host.restamped.get((BigInt(room.avatar) << 32n) | BigInt(POS));
}

/** The CRDT messages for the avatar's pos in the CrdtBatches among msgs (from RecordingLink.take). */
function relayedPos(msgs, room) {
  const out = [];
  for (const { ch, m } of msgs) {
    if (m.type !== Type.CrdtBatch) continue;
    assert.equal(ch, RELIABLE);
    for (const cm of crdt.readStream(m.messages)) {
      if (cm.entity === room.avatar && cm.component === POS) out.push(cm);
    }
  }
  return out;
}

/** The avatar's pos updates (time and position) in the EntityUpdates among msgs. */
function updatedPos(msgs, room) {
  const out = [];
  for (const { ch, m } of msgs) {
    if (m.type !== Type.EntityUpdates) continue;
    assert.equal(ch, UNRELIABLE);
    for (const u of m.updates) {
      if (u.networkId === BigInt(room.avatar) && (u.mask & (1 << AVATAR_POS)) !== 0) {
        out.push({ ts: Number(m.time), pos: parseVec(u.data.subarray(0, 4)) });
      }
    }
  }
  return out;
}

/**
 * Mallory forges a move of the owner's avatar 1000 stamps ahead: rejected, and re-stamped above
 * it in the same step. Returns the stamps: before (the owner's last write), forged, after.
 */
function forge(room, forged) {
  const start = avatarPos(room);
  const rejected = room.p.count.rejected;
  move(room, MALLORY, room.avatar, forged, { x: 1, y: 1 });
  assert.equal(room.p.count.rejected, rejected + 1, 'the forgery is rejected');
  const now = avatarPos(room);
  assert.deepEqual(now.pos, start.pos, 'the forgery did not move the avatar');
  assert.ok(now.ts > forged, `re-stamped at ${now.ts}, above the forgery ${forged}`);
  // Every member is told of the re-stamp, as a CRDT message.
  for (const [idx, link] of room.links) {
    const relayed = relayedPos(link.take(), room);
    assert.equal(relayed.length, 1, `member ${idx} hears of the re-stamp`);
    assert.equal(relayed[0].timestamp, now.ts);
  }
  return now.ts;
}

/**
 * The owner's write at ts wins: the host holds moved under a stamp of its own above the re-stamp
 * `after`, and sends that value and stamp to every member, the owner included.
 */
function assertOwnerWins(room, ts, moved, after) {
  move(room, OWNER, room.avatar, ts, moved);
  const now = avatarPos(room);
  assert.deepEqual(now.pos, moved, 'the owner\'s write is kept');
  assert.ok(now.ts > after, `rewritten at ${now.ts}, above the re-stamp ${after}`);
  // The record now stands for the owner's write: its next writes of the burst are newer still.
  assert.deepEqual(restampedPos(room), { before: ts, after: now.ts }, 'the record follows the owner\'s write');
  for (const [idx, r] of room.remotes) {
    assert.equal(dirtyOf(room, r).get(room.avatar) & (1 << AVATAR_POS), 1 << AVATAR_POS, `queued for member ${idx}`);
  }
  room.p.step(() => room.p.flushUpdates());
  for (const [idx, link] of room.links) {
    assert.deepEqual(updatedPos(link.take(), room), [{ ts: now.ts, pos: moved }], `member ${idx} is sent the owner's write`);
  }
  return now.ts;
}

/** A write at ts by member idx that must lose: nothing changes and nothing is sent. */
function assertLoses(room, idx, ts, pos, want) {
  const keep = restampedPos(room);
  move(room, idx, room.avatar, ts, pos);
  assert.deepEqual(avatarPos(room), want, `the write stamped ${ts} by ${idx} is not kept`);
  assert.deepEqual(restampedPos(room), keep, 'the re-stamp record is unchanged');
  for (const [i, r] of room.remotes) assert.equal(dirtyOf(room, r).has(room.avatar), false, `nothing queued for member ${i}`);
  room.p.step(() => room.p.flushUpdates());
  for (const [i, link] of room.links) assert.deepEqual(link.take(), [], `nothing sent to member ${i}`);
}

test('owner write stamped below the re-stamp but after its last write wins', () => {
  const room = newRoom();
  const { pos: start, ts: before } = avatarPos(room);
  const after = forge(room, before + 1000);
  assert.deepEqual(restampedPos(room), { before, after }, 'the re-stamp remembers the owner\'s stamp');
  assert.deepEqual(avatarPos(room), { pos: start, ts: after });
  assertOwnerWins(room, before + 1, { x: 4321, y: 1234 }, after);
  assert.deepEqual(room.warnings, []);
});

test('a browser host takes a Go member\'s RunUpdates as EntityUpdates', () => {
  const room = newRoom();
  const { ts } = avatarPos(room);
  const pos = { x: 77, y: 88 };
  const u = { networkId: BigInt(room.avatar), maskBits: netmsg.maskWidth(3), mask: 1 << AVATAR_POS, data: encodeVec(pos) };
  deliver(room, OWNER, UNRELIABLE, netmsg.encode({ type: Type.RunUpdates, time: BigInt(ts + 1), updates: [u] }));
  assert.deepEqual(avatarPos(room), { pos, ts: ts + 1 });
});

test('a burst of owner writes below the re-stamp keeps its last one', () => {
  const room = newRoom();
  const { ts: before } = avatarPos(room);
  const after = forge(room, before + 1000);
  // The owner moves three times before it hears of any host stamp: each move wins in turn.
  const won1 = assertOwnerWins(room, before + 1, { x: 1111, y: 2222 }, after);
  const won2 = assertOwnerWins(room, before + 2, { x: 3333, y: 4444 }, won1);
  const won3 = assertOwnerWins(room, before + 3, { x: 4321, y: 1234 }, won2);
  // A reordered datagram of the burst arrives last: it is older than the kept write and loses.
  assertLoses(room, OWNER, before + 2, { x: 3333, y: 4444 }, { pos: { x: 4321, y: 1234 }, ts: won3 });
  assert.deepEqual(room.warnings, []);
});

test('a late write, stamped at or below the value re-stamped, stays outdated', () => {
  const room = newRoom();
  const { pos: start, ts: before } = avatarPos(room);
  const after = forge(room, before + 1000);
  const held = { pos: start, ts: after };
  // Datagrams the owner sent before its last write (or that write itself, again) arrive late.
  assertLoses(room, OWNER, before, { x: 7, y: 7 }, held);
  assertLoses(room, OWNER, before - 1, { x: 8, y: 8 }, held);
  // The late writes did not use up the make-up: the owner's next write still wins.
  const won = assertOwnerWins(room, before + 1, { x: 4321, y: 1234 }, after);
  // After it, a datagram older than the kept write loses by plain last-writer-wins.
  assertLoses(room, OWNER, before, { x: 9, y: 9 }, { pos: { x: 4321, y: 1234 }, ts: won });
});

test('a second re-stamp of an unchanged key keeps the owner\'s stamp as before', () => {
  const room = newRoom();
  const { pos: start, ts: before } = avatarPos(room);
  const after1 = forge(room, before + 1000);
  const after2 = forge(room, after1 + 1000);
  assert.ok(after2 > after1);
  assert.deepEqual(restampedPos(room), { before, after: after2 }, 'before is still the owner\'s stamp');
  assert.deepEqual(avatarPos(room), { pos: start, ts: after2 });
  // A write between the first re-stamp and the owner's stamp is still late.
  assertLoses(room, OWNER, before, { x: 7, y: 7 }, { pos: start, ts: after2 });
  // Stamped below both re-stamps (but after the owner's last write): it wins.
  assertOwnerWins(room, before + 1, { x: 4321, y: 1234 }, after2);
});

test('a forged write by a member that is not the author stays rejected', () => {
  const room = newRoom();
  const { pos: start, ts: before } = avatarPos(room);
  const after = forge(room, before + 1000);
  const rk = restampedPos(room);
  const held = { pos: start, ts: after };
  // In the re-stamp's window, mallory writes with the stamp the owner's next write would carry.
  for (const ts of [before + 1, after - 1, after + 1]) {
    const rejected = room.p.count.rejected;
    move(room, MALLORY, room.avatar, ts, { x: 666, y: 666 });
    assert.equal(room.p.count.rejected, rejected + 1, `mallory's write at ${ts} is rejected`);
    // A rejection re-stamps again (same value, higher stamp); the value never changes.
    const now = avatarPos(room);
    assert.deepEqual(now.pos, start, `mallory's write at ${ts} did not move the avatar`);
    assert.ok(now.ts > held.ts, `re-stamped again at ${now.ts}, above ${held.ts}`);
    held.ts = now.ts;
    assert.deepEqual(restampedPos(room), { before: rk.before, after: now.ts });
    for (const [i, link] of room.links) {
      for (const m of relayedPos(link.take(), room)) assert.deepEqual(parseVec(m.data), start, `member ${i} is sent the held value`);
    }
    for (const r of room.remotes.values()) assert.equal(dirtyOf(room, r).has(room.avatar), false);
  }
  // The owner's own write is still the one that wins.
  assertOwnerWins(room, before + 1, { x: 4321, y: 1234 }, held.ts);
});

test('once the owner has written above the re-stamp, an older write of its loses', () => {
  const room = newRoom();
  const { ts: before } = avatarPos(room);
  const after = forge(room, before + 1000);
  // The owner has heard of the re-stamp: its write is above it and wins as any newer write.
  const newer = { x: 5000, y: 5000 };
  move(room, OWNER, room.avatar, after + 1, newer);
  assert.deepEqual(avatarPos(room), { pos: newer, ts: after + 1 });
  drain(room);
  // A datagram it sent before, reordered, arrives now: it must not bury the newer value.
  move(room, OWNER, room.avatar, before + 1, { x: 4321, y: 1234 });
  assert.deepEqual(avatarPos(room), { pos: newer, ts: after + 1 }, 'the newer write is kept');
  assert.equal(restampedPos(room), undefined, 'nothing is left to make up for');
  for (const [i, r] of room.remotes) assert.equal(dirtyOf(room, r).has(room.avatar), false, `nothing queued for member ${i}`);
});

/** Sends, as member idx, a CrdtBatch deleting entity e. */
function deleteBatch(room, idx, e) {
  const m = { type: crdt.MessageType.DeleteEntity, entity: e, component: 0, timestamp: 0, networkId: 0, data: null };
  deliver(room, idx, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: BigInt(room.term), messages: crdt.encodeMessage(m) }));
}

test('a deletion in a member\'s first batch is admitted whoever owns the entity, and its owner gets a new avatar', () => {
  // Mallory held the state of term 1 and has not answered its sync snapshot of term 2: its first
  // batch carries what the previous host sent it, and the previous host deleted the owner's avatar.
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 } });
  room.p.host.startWindow(); // as if the host had taken over holding the avatar: the previous host's
  const old = room.avatar;
  deleteBatch(room, MALLORY, old);
  assert.equal(room.p.w.r.entityDeleted(old), true, 'the deletion is merged');
  const fresh = room.p.w.avatarOf(OWNER);
  assert.notEqual(fresh, undefined, 'the owner has an avatar again');
  assert.notEqual(fresh, old);
  assert.equal(room.p.w.schemaOf(fresh).id, SCHEMA_AVATAR);
});

test('a deletion after a member\'s first batch is refused when the member does not own the entity', () => {
  const room = newRoom();
  const rejected = room.p.count.rejected;
  deleteBatch(room, MALLORY, room.avatar);
  assert.equal(room.p.w.r.entityDeleted(room.avatar), false, 'the owner\'s avatar lives');
  assert.equal(room.p.count.rejected, rejected + 1);
});

/** Waits for cond with a deadline, letting the peer's timers run. */
async function until(what, cond, ms = 2000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`not reached in ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a member that leaves signaling but stays heard on its link keeps its avatar; a silent one loses it', async () => {
  const room = newRoom({ opts: { digestMs: 20, reportMs: 20 } }); // silence allowance 40 ms
  const { p } = room;
  const mallorys = p.w.avatarOf(MALLORY);
  p.step(() => p.handleSignaling({ type: 'member-left', peerIndex: OWNER }));
  p.step(() => p.handleSignaling({ type: 'member-left', peerIndex: MALLORY }));
  assert.ok(p.w.exists(room.avatar) && p.w.exists(mallorys), 'nobody despawned on signaling\'s word alone');
  // The owner keeps talking (pings, as a member does every report); mallory falls silent.
  const ping = netmsg.encode({ type: Type.Ping, nonce: 1n, sendTime: 0 });
  const talk = setInterval(() => deliver(room, OWNER, RELIABLE, ping), 10);
  try {
    await until('the silent member despawned', () => !p.w.exists(mallorys));
    const end = Date.now() + 200;
    await until('200 ms more', () => Date.now() > end, 1000);
    assert.ok(p.w.exists(room.avatar), 'the member still heard keeps its avatar');
    // It resumes its index: listed again, it stays for good.
    p.step(() => p.handleSignaling({ type: 'member-joined', member: { peerIndex: OWNER, peerId: 'user2/device', kind: 'bot' } }));
  } finally {
    clearInterval(talk);
  }
  const end = Date.now() + 200;
  await until('200 ms of silence after the resume', () => Date.now() > end, 1000);
  assert.ok(p.w.exists(room.avatar), 'a resumed member is not swept for its silence');
});

test('a member that leaves signaling is asked: one that only answers the host\'s pings keeps its avatar, a mute one loses it', async () => {
  // A sleeping Go member (docs/protocol.md §5, "Idle members") sends nothing of its own for up to
  // its report keepalive; it answers pings, as any peer does.
  const room = newRoom({ opts: { digestMs: 20, reportMs: 20 } }); // silence allowance 40 ms
  const { p } = room;
  const mallorys = p.w.avatarOf(MALLORY);
  const ownerLink = room.links.get(OWNER);
  p.step(() => p.handleSignaling({ type: 'member-left', peerIndex: OWNER }));
  p.step(() => p.handleSignaling({ type: 'member-left', peerIndex: MALLORY }));
  let asked = 0;
  const answer = setInterval(() => {
    for (const { m } of ownerLink.take()) {
      if (m.type !== Type.Ping) continue;
      asked++;
      deliver(room, OWNER, RELIABLE, netmsg.encode({ type: Type.Pong, nonce: m.nonce, echoTime: m.sendTime }));
    }
  }, 5);
  try {
    await until('the mute member despawned', () => !p.w.exists(mallorys));
    const end = Date.now() + 200;
    await until('200 ms more', () => Date.now() > end, 1000);
    assert.ok(asked > 0, 'the host pinged the member signaling dropped');
    assert.ok(p.w.exists(room.avatar), 'the member that answers keeps its avatar');
  } finally {
    clearInterval(answer);
  }
});

/** Sends, as member idx, a system RPC (lock request or relinquish) for entity e. */
function systemRPC(room, idx, type, e) {
  const data = new Uint8Array(4);
  new DataView(data.buffer).setUint32(0, e, true);
  deliver(room, idx, RELIABLE, netmsg.encode({ type: Type.PeerCommands, rpcs: [{ type, data }] }));
}

test('a write just after its writer lost the authority is an expected race: counted, not warned', () => {
  const room = newRoom();
  const { p } = room;
  const warned = [];
  const log = p.log;
  p.log = (level, msg, fields) => {
    if (level === 'warn' && msg === 'write rejected') warned.push(fields.member);
    log(level, msg, fields);
  };
  const [box] = p.w.entitiesOf(SCHEMA_BOX);
  const moveBox = (idx, pos) => {
    const u = { networkId: BigInt(box), maskBits: netmsg.maskWidth(2), mask: 1 << BOX_POS, data: encodeVec(pos) };
    deliver(room, idx, UNRELIABLE, netmsg.encode({ type: Type.EntityUpdates, time: BigInt(p.w.clock + 1), updates: [u] }));
  };
  systemRPC(room, OWNER, RPC_LOCK_REQUEST, box);
  assert.equal(p.w.authority(box), OWNER, 'the owner holds the lock');
  moveBox(OWNER, { x: 5000, y: 5000 });
  assert.equal(p.count.rejected, 0, 'the holder writes the box');
  systemRPC(room, OWNER, RPC_RELINQUISH, box);
  assert.equal(p.w.authority(box), HOST, 'the lock is back with the host');
  // The owner's next datagram left before it heard of the transfer.
  moveBox(OWNER, { x: 5100, y: 5000 });
  assert.deepEqual([p.count.rejected, p.count.rejectedRace], [1, 1]);
  assert.deepEqual(warned, [], 'a race is not warned of');
  // Mallory never held the box: a real rejection.
  moveBox(MALLORY, { x: 100, y: 100 });
  assert.deepEqual([p.count.rejected, p.count.rejectedRace], [2, 1]);
  assert.deepEqual(warned, [MALLORY]);
  assert.deepEqual(parseVec(p.w.get(box, BOX_POS)), { x: 5000, y: 5000 }, 'the box stays where its holder left it');
  assert.equal(p.status().rejectedRace, 1);
});

// Attacks on the host's admission paths (docs/security.md §2, docs/protocol.md §5 "Session: limits") (Go: peer/attack_test.go).

/** Delivers payload from member idx without deliver's assertions (the link may be dropped). */
function hostile(room, idx, ch, payload) {
  const r = room.remotes.get(idx);
  room.p.step(() => room.p.linkMessage(r, ch, payload));
}

/** An EntityUpdates from member idx moving entity e, stamped ts (a bigint). */
function forgedMove(e, ts) {
  const u = { networkId: BigInt(e), maskBits: netmsg.maskWidth(3), mask: 1 << AVATAR_POS, data: encodeVec({ x: 9, y: 9 }) };
  return netmsg.encode({ type: Type.EntityUpdates, time: ts, updates: [u] });
}

test('a world at a saturated clock stamps its next batch at 2³²−1, never 0', () => {
  const room = newRoom();
  const w = room.p.w;
  w.closeBatch();
  w.r.observeClock(0xffffffff);
  assert.equal(w.batchStamp(), 0xffffffff);
});

test('a member\'s stamp beyond the skew bound is refused and the host\'s clock does not follow', () => {
  const room = newRoom({ warn: true });
  const clock = room.p.w.clock;
  const own = room.p.w.avatarOf(MALLORY);
  hostile(room, MALLORY, UNRELIABLE, forgedMove(own, 0xffffffffn));
  hostile(room, MALLORY, UNRELIABLE, forgedMove(room.avatar, BigInt(clock + (1 << 20) - 1)));
  assert.ok(room.p.w.clock <= clock + MAX_STAMP_SKEW, `host clock ${clock} → ${room.p.w.clock}`);
  assert.equal(room.p.count.refused, 2);
  assert.notDeepEqual(parseVec(room.p.w.r.get(own, POS).data), { x: 9, y: 9 }, 'the write stamped 2³²−1 is not taken');
  // Within the bound, the owner's write is taken.
  move(room, OWNER, room.avatar, room.p.w.clock + 2, { x: 7, y: 7 });
  assert.deepEqual(avatarPos(room).pos, { x: 7, y: 7 });
});

test('a member that keeps sending forged writes is dropped, its re-stamps bounded', () => {
  const room = newRoom({ warn: true });
  const r = room.remotes.get(MALLORY);
  for (let i = 0; i < 10 * MAX_STRIKES && room.p.remotes.get(MALLORY) === r; i++) {
    hostile(room, MALLORY, UNRELIABLE, forgedMove(room.avatar, BigInt(room.p.w.clock + 1)));
  }
  assert.notEqual(room.p.remotes.get(MALLORY), r, 'the attacker\'s link is closed');
  assert.equal(room.p.count.offenders, 1);
  // Strikes drain one a second of real time: a write or two more may pass.
  assert.ok(room.p.count.rejected <= MAX_STRIKES + 2, `${room.p.count.rejected} rejected writes re-stamped`);
  const close = room.links.get(MALLORY).take().find(({ m }) => m.type === Type.Close);
  assert.ok(close && close.m.code === CLOSE_REFUSED, 'the attacker was told why');
});

/** Makes member idx link anew (session `session`), greet and sync; returns its new Remote. */
function relink(room, idx, session) {
  const p = room.p;
  const r = p.connect(idx, session, false, true);
  const link = new RecordingLink();
  r.link = link;
  r.ready = true;
  room.remotes.set(idx, r);
  room.links.set(idx, link);
  const hello = netmsg.encode({ type: Type.Hello, term: BigInt(room.term), peerIndex: BigInt(idx), schemaFingerprint: p.w.schemas.fingerprint });
  const digest = netmsg.encode({ type: Type.Digest, term: BigInt(room.term), clock: 0, digests: new BigUint64Array(p.opts.buckets) });
  hostile(room, idx, RELIABLE, netmsg.concat(hello, digest));
  assert.ok(p.host.memberOf(r).snapshotSent, `member ${idx} synced on its new link`);
  return r;
}

test('a member that reconnects between offences keeps its strikes and its skew budget', () => {
  // Offences until the link is closed, relinking after every `every` (0: never).
  const offences = (every) => {
    const room = newRoom({ warn: true });
    const own = room.p.w.avatarOf(MALLORY);
    let session = 1;
    for (let i = 1; i <= 4 * MAX_STRIKES; i++) {
      const r = room.remotes.get(MALLORY);
      hostile(room, MALLORY, UNRELIABLE, forgedMove(own, 0xffffffffn));
      if (room.p.remotes.get(MALLORY) !== r) return i;
      if (every > 0 && i % every === 0) relink(room, MALLORY, ++session);
    }
    return Infinity;
  };
  const stays = offences(0);
  assert.ok(stays <= MAX_STRIKES + 1, `one that stays is dropped after ${stays} offences`);
  for (const every of [1, 5]) {
    const got = offences(every);
    // Strikes drain one a second of real time: a test step may let one more through.
    assert.ok(Math.abs(got - stays) <= 1, `relinking every ${every}: dropped after ${got} offences, one that stays after ${stays}`);
  }

  const room = newRoom({ warn: true });
  const own = room.p.w.avatarOf(MALLORY);
  hostile(room, MALLORY, UNRELIABLE, forgedMove(own, BigInt(room.p.w.clock + MAX_STAMP_SKEW - 1)));
  assert.equal(room.p.count.refused, 0, 'a stamp within the bound is taken');
  relink(room, MALLORY, 2);
  const clock = room.p.w.clock;
  hostile(room, MALLORY, UNRELIABLE, forgedMove(own, BigInt(clock + MAX_STAMP_SKEW - 1)));
  assert.equal(room.p.count.refused, 1, 'the new link has no fresh skew budget');
  assert.ok(room.p.w.clock < clock + MAX_STAMP_SKEW / 2, `host clock ${clock} → ${room.p.w.clock}`);
});

test('the host keeps at most MAX_CONDUCTS records of members\' conduct', () => {
  const room = newRoom({ warn: true });
  for (let i = 0; i < 2 * MAX_CONDUCTS; i++) room.p.host.conductOf(1000 + i);
  assert.ok(room.p.host.conducts.size <= MAX_CONDUCTS, `${room.p.host.conducts.size} records`);
});

test('a fresh joiner\'s first batch carries no deletion, no authority to itself, nothing far ahead', () => {
  const room = newRoom({ answered: [OWNER], warn: true });
  deleteBatch(room, MALLORY, room.avatar);
  assert.equal(room.p.w.r.entityDeleted(room.avatar), false, 'the owner\'s avatar lives');
});

test('a member claiming an earlier term cannot hand itself an entity nor delete numbers at 0xffff', () => {
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 }, warn: true });
  const box = room.p.w.entitiesOf(SCHEMA_BOX)[0];
  const msgs = [
    { type: crdt.MessageType.PutComponent, entity: box, component: COMPONENT_AUTHORITY, timestamp: room.p.w.clock + 1, networkId: 0, data: encodeRecord({ kind: KIND_LOCK, peer: MALLORY }) },
  ];
  for (let n = 700; n < 800; n++) msgs.push({ type: crdt.MessageType.DeleteEntity, entity: (0xffff << 16 | n) >>> 0, component: 0, timestamp: 0, networkId: 0, data: null });
  msgs.push({ type: crdt.MessageType.DeleteEntity, entity: (0xffff << 16 | 1) >>> 0, component: 0, timestamp: 0, networkId: 0, data: null });
  const bytes = netmsg.concat(...msgs.map((m) => crdt.encodeMessage(m)));
  hostile(room, MALLORY, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: 2n, messages: bytes }));
  assert.equal(room.p.w.authorityRecord(box).kind, KIND_HOST, 'the box is still the host\'s');
  for (let n = 700; n < 800; n++) assert.equal(room.p.w.r.deletedVersion(n), undefined, `number ${n} not deleted`);
  assert.equal(room.p.w.r.deletedVersion(1), undefined, 'reserved number not deleted');
  assert.ok(room.p.count.refused > 0);
});

// The lying survivor (docs/security.md §2, the correction window; Go: peer/survivor_test.go).

const SCORE = 1300; // the room entity's score component (arena.js SCHEMAS)

/** A CrdtBatch of messages from member idx in the room's term. */
function batchOf(room, msgs) {
  return netmsg.encode({ type: Type.CrdtBatch, term: BigInt(room.term), messages: netmsg.concat(...msgs.map((m) => crdt.encodeMessage(m))) });
}

/** What the lying survivor sends: boxes deleted, the rest handed to peer to, the score written, stamped ts. */
function liarMessages(room, boxes, to, ts) {
  const msgs = [];
  for (const e of boxes.slice(0, 2)) msgs.push({ type: crdt.MessageType.DeleteEntity, entity: e, component: 0, timestamp: 0, networkId: 0, data: null });
  for (const e of boxes.slice(2)) {
    msgs.push({ type: crdt.MessageType.PutComponent, entity: e, component: COMPONENT_AUTHORITY, timestamp: ts, networkId: 0, data: encodeRecord({ kind: KIND_LOCK, peer: to }) });
  }
  const score = new Uint8Array(4);
  new DataView(score.buffer).setUint32(0, 2147483677, true);
  msgs.push({ type: crdt.MessageType.PutComponent, entity: 0, component: SCORE, timestamp: ts, networkId: 0, data: score });
  return msgs;
}

function scoreOf(room) {
  const v = room.p.w.r.get(0, SCORE);
  return v ? new DataView(v.data.buffer, v.data.byteOffset, 4).getUint32(0, true) : -1;
}

for (const [what, recorded] of [['never recorded', {}], ['recorded in the host\'s own term (its resume token\'s, after a restart)', { [MALLORY]: 2 }]]) test(`a greeting naming an earlier term that signaling ${what} opens no window`, () => {
  // Mallory joined the room at term 2 and says it holds term 1's state: no record says so.
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 }, recorded, warn: true, boxes: 8, takeover: true });
  const p = room.p;
  assert.equal(p.status().refused, 1, 'the claim is counted');
  const boxes = p.w.entitiesOf(SCHEMA_BOX);
  assert.equal(boxes.length, 8);
  const score = scoreOf(room);
  hostile(room, MALLORY, RELIABLE, batchOf(room, liarMessages(room, boxes, OWNER, p.w.clock + 10)));
  for (const e of boxes) {
    assert.equal(p.w.exists(e), true, `box ${e} lives`);
    assert.equal(p.w.authorityRecord(e).kind, KIND_HOST, `box ${e} is still the host's`);
  }
  assert.equal(scoreOf(room), score, 'the score is the host\'s');
  // The honest member keeps playing.
  const { ts } = avatarPos(room);
  move(room, OWNER, room.avatar, ts + 1, { x: 4321, y: 1234 });
  assert.deepEqual(avatarPos(room).pos, { x: 4321, y: 1234 });
});

test('a survivor recorded by signaling relays what it could have seen, and nothing beyond', () => {
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 }, warn: true, boxes: 8, takeover: true });
  const p = room.p;
  const h = p.host;
  assert.equal(p.status().refused, 0, 'the recorded survivor\'s window opens');
  const boxes = p.w.entitiesOf(SCHEMA_BOX);
  const score = scoreOf(room);
  // Since the takeover: an accomplice joined, the host spawned a box, its clock moved on.
  const ACCOMPLICE = 9;
  p.members.set(ACCOMPLICE, { peerIndex: ACCOMPLICE, peerId: 'user9/device', kind: 'bot', syncedTerm: 0 });
  let late = 0;
  p.do((w) => { late = w.spawn(SCHEMA_BOX, new Uint8Array(0)); });
  p.w.r.observeClock(h.tookOver + 2 * MAX_STAMP_SKEW);
  const above = h.tookOver + MAX_STAMP_SKEW + 100; // above the window's ceiling, within the skew of the clock now
  const msgs = liarMessages(room, boxes, ACCOMPLICE, above);
  msgs.push({ type: crdt.MessageType.DeleteEntity, entity: late, component: 0, timestamp: 0, networkId: 0, data: null });
  // What the previous host really sent it: another member's lock on a box.
  msgs.splice(2, 1, { type: crdt.MessageType.PutComponent, entity: boxes[2], component: COMPONENT_AUTHORITY, timestamp: h.tookOver + 5, networkId: 0, data: encodeRecord({ kind: KIND_LOCK, peer: OWNER }) });
  const refused = p.status().refused;
  hostile(room, MALLORY, RELIABLE, batchOf(room, msgs));
  assert.equal(p.w.exists(late), true, 'the box spawned after the takeover lives');
  assert.equal(scoreOf(room), score, 'a score stamped above the window\'s ceiling is refused');
  for (const e of boxes.slice(3)) assert.equal(p.w.authorityRecord(e).kind, KIND_HOST, `box ${e} not handed to the accomplice`);
  assert.deepEqual(p.w.authorityRecord(boxes[2]), { kind: KIND_LOCK, peer: OWNER }, 'the relayed lock of a member of the earlier term is admitted');
  for (const e of boxes.slice(0, 2)) assert.equal(p.w.exists(e), false, `the relayed deletion of box ${e}, held at the takeover, is admitted`);
  // 5 records to the accomplice, the score, the late deletion.
  assert.equal(p.status().refused - refused, 7);
});

// Go: peer/relayed_entity_test.go TestRuleRelayedEntityAdmittedWhole.
test('a survivor\'s relayed entity the host never saw is admitted whole, by the authority the batch found', () => {
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 }, warn: true, takeover: true });
  const p = room.p;
  const h = p.host;
  // An avatar of the owner that the previous host spawned after this host stopped hearing it.
  const avatar = 900;
  const ts = h.tookOver + 5;
  const pos = encodeVec({ x: 7, y: 0 });
  const msgs = [
    { type: crdt.MessageType.PutComponent, entity: avatar, component: COMPONENT_META, timestamp: ts, networkId: 0, data: appendMeta(SCHEMA_AVATAR) },
    { type: crdt.MessageType.PutComponent, entity: avatar, component: COMPONENT_AUTHORITY, timestamp: ts, networkId: 0, data: encodeRecord({ kind: KIND_AVATAR, peer: OWNER }) },
    { type: crdt.MessageType.PutComponent, entity: avatar, component: POS, timestamp: ts, networkId: 0, data: pos },
  ];
  const rejected = p.count.rejected;
  hostile(room, MALLORY, RELIABLE, batchOf(room, msgs));
  for (const c of [COMPONENT_META, COMPONENT_AUTHORITY, POS]) assert.ok(p.w.r.get(avatar, c), `the host holds component ${c} of the relayed avatar`);
  assert.deepEqual(p.w.r.get(avatar, POS).data, pos, 'the relayed position, not a re-stamp of nothing');
  assert.equal(p.count.rejected - rejected, 0, 'no key of the relayed entity is rejected');
});

// Go: peer/survivor_avatar_test.go TestSurvivorAvatarComesBack.
test('a survivor\'s avatar the new host never knew comes back with its answer, and only one', () => {
  // Mallory synced with term 1's host, which spawned its avatar after the world this host took
  // over with: its answer brings the avatar back, with where it last put it.
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 }, warn: true, takeover: true });
  const p = room.p;
  const h = p.host;
  assert.equal(p.w.avatarOf(MALLORY), undefined, 'its avatar waits for its answer');
  const [avatar, second, locked] = [900, 901, 902];
  const ts = h.tookOver + 5;
  const pos = encodeVec({ x: 7, y: 3 });
  const put = (e, c, data) => ({ type: crdt.MessageType.PutComponent, entity: e, component: c, timestamp: ts, networkId: 0, data });
  const msgs = [
    put(avatar, COMPONENT_META, appendMeta(SCHEMA_AVATAR)),
    put(avatar, COMPONENT_AUTHORITY, encodeRecord({ kind: KIND_AVATAR, peer: MALLORY })),
    put(avatar, POS, pos),
    put(second, COMPONENT_META, appendMeta(SCHEMA_AVATAR)),
    put(second, COMPONENT_AUTHORITY, encodeRecord({ kind: KIND_AVATAR, peer: MALLORY })),
    put(locked, COMPONENT_META, appendMeta(SCHEMA_AVATAR)),
    put(locked, COMPONENT_AUTHORITY, encodeRecord({ kind: KIND_LOCK, peer: MALLORY })),
  ];
  hostile(room, MALLORY, RELIABLE, batchOf(room, msgs));
  assert.equal(p.w.avatarOf(MALLORY), avatar, 'its avatar is the one its answer brought back');
  assert.deepEqual(p.w.r.get(avatar, POS).data, pos, 'where it last put it');
  const mine = [...p.w.ents.keys()].filter((e) => { const a = p.w.authorityRecord(e); return a.kind === KIND_AVATAR && a.peer === MALLORY; });
  assert.deepEqual(mine, [avatar], 'one avatar a member');
  assert.equal(p.w.authorityRecord(locked).kind, KIND_HOST, 'a lock naming its sender goes back to the host');
  assert.equal(p.status().refusedBy.correction, 2, 'the second avatar and the lock are refused');
});

test('a survivor whose answer brings no avatar gets a fresh one', () => {
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 }, warn: true, takeover: true });
  assert.equal(room.p.w.avatarOf(MALLORY), undefined, 'its avatar waits for its answer');
  hostile(room, MALLORY, RELIABLE, batchOf(room, []));
  const fresh = room.p.w.avatarOf(MALLORY);
  assert.notEqual(fresh, undefined, 'a fresh avatar once its answer is merged');
  assert.equal(room.p.w.schemaOf(fresh).id, SCHEMA_AVATAR);
});

// Go: peer/survivor_avatar_test.go TestSurvivorDigestClosesWindow.
test('a survivor\'s digest after its sync snapshot closes its window and ends its wait for an avatar', () => {
  const room = newRoom({ answered: [OWNER], term: 2, held: { [MALLORY]: 1 }, warn: true, boxes: 2, takeover: true });
  const p = room.p;
  const hm = p.host.memberOf(room.remotes.get(MALLORY));
  assert.equal(hm.acceptRelayed, true, 'test setup: the recorded survivor\'s window is open');
  // Its next digest, computed after the snapshot arrived, without a batch before it.
  hostile(room, MALLORY, RELIABLE, netmsg.encode({ type: Type.Digest, term: BigInt(room.term), clock: hm.snapClock, digests: new BigUint64Array(p.opts.buckets) }));
  assert.equal(hm.acceptRelayed, false, 'the window is closed');
  assert.notEqual(p.w.avatarOf(MALLORY), undefined, 'it has an avatar');
  // A deletion of a box the host held at the takeover, which the window would have admitted.
  const [box] = p.w.entitiesOf(SCHEMA_BOX);
  hostile(room, MALLORY, RELIABLE, netmsg.encode({ type: Type.CrdtBatch, term: BigInt(room.term), messages: crdt.encodeMessage({ type: crdt.MessageType.DeleteEntity, entity: box, component: 0, timestamp: 0, networkId: 0, data: null }) }));
  assert.equal(p.w.exists(box), true, 'the box lives: the deletion came after the window');
});

// Go: peer/restamp_absent_test.go TestRuleRestampKeyHostLacks.
test('a rejected correction to a key the host lacks is deleted above it, so the member converges', () => {
  const room = newRoom({ warn: true });
  const p = room.p;
  const box = p.w.entitiesOf(SCHEMA_BOX)[0];
  assert.equal(p.w.r.get(box, COMPONENT_AUTHORITY), undefined, 'test setup: the host holds no authority record for the box');
  // Mallory holds a record of the host's box that the host never saw, stamped above its clock.
  const written = p.w.clock + 10;
  const rec = { type: crdt.MessageType.PutComponent, entity: box, component: COMPONENT_AUTHORITY, timestamp: written, networkId: 0, data: encodeRecord({ kind: KIND_HOST, peer: 0 }) };
  const rejected = p.count.rejected;
  hostile(room, MALLORY, RELIABLE, batchOf(room, [rec]));
  assert.equal(p.count.rejected - rejected, 1, 'the correction is rejected');
  const v = p.w.r.get(box, COMPONENT_AUTHORITY);
  assert.ok(v && v.deleted && v.ts > written, `the host deleted the key above the member's write (${JSON.stringify(v && { deleted: v.deleted, ts: v.ts })}, written ${written})`);
  const relayed = room.links.get(MALLORY).take().filter(({ m }) => m.type === Type.CrdtBatch).flatMap(({ m }) => [...crdt.readStream(m.messages)]);
  assert.ok(relayed.some((m) => m.entity === box && m.component === COMPONENT_AUTHORITY && m.type === crdt.MessageType.DeleteComponent && m.timestamp > written), 'the deletion is relayed to the member');
});

test('a refused authority record (one handing the entity to its sender) is deleted above it too', () => {
  const room = newRoom({ warn: true });
  const p = room.p;
  const box = p.w.entitiesOf(SCHEMA_BOX)[0];
  const written = p.w.clock + 10;
  const rec = { type: crdt.MessageType.PutComponent, entity: box, component: COMPONENT_AUTHORITY, timestamp: written, networkId: 0, data: encodeRecord({ kind: KIND_LOCK, peer: MALLORY }) };
  const refused = p.status().refused;
  hostile(room, MALLORY, RELIABLE, batchOf(room, [rec]));
  assert.equal(p.status().refused - refused, 1, 'the record is refused');
  assert.equal(p.status().refusedBy.correction, 1, 'counted as a refused correction');
  const v = p.w.r.get(box, COMPONENT_AUTHORITY);
  assert.ok(v && v.deleted && v.ts > written, 'the host deleted the key above the member\'s record');
  assert.equal(p.w.authorityRecord(box).kind, KIND_HOST, 'the box is still the host\'s');
});

test('member-synced carries the term signaling recorded; a later one moves the record, an older one does not', () => {
  const room = newRoom({ warn: true });
  const p = room.p;
  p.step(() => p.handleSignaling({ type: 'member-synced', peerIndex: OWNER, term: 3 }));
  assert.equal(p.members.get(OWNER).syncedTerm, 3);
  p.step(() => p.handleSignaling({ type: 'member-synced', peerIndex: OWNER, term: 2 }));
  assert.equal(p.members.get(OWNER).syncedTerm, 3);
  p.step(() => p.handleSignaling({ type: 'member-synced', peerIndex: OWNER }));
  assert.equal(p.members.get(OWNER).syncedTerm, 3, 'an older server sends no term');
  assert.equal(p.members.get(OWNER).synced, true);
});

test('the window\'s rules give the outcomes of the shared vectors', () => {
  const v = readJSON('testdata/peer/survivor_window.json');
  for (const c of v.open) assert.equal(windowOpen(c.hello, c.recorded, c.term), c.open, c.why);
  for (const c of v.stamp) assert.equal(c.stamp <= windowCeiling(c.tookOver), c.ok, c.why);
  for (const c of v.deletion) assert.equal(windowDeletionOK(c.live, c.heldAtStart, c.version), c.ok, c.why);
  for (const c of v.record) assert.equal(windowRecordOK(c.peer, c.self, c.earlier), c.ok, c.why);
  assert.ok(v.avatar.length > 0, 'the avatar section is empty');
  const kinds = { host: KIND_HOST, avatar: KIND_AVATAR, lock: KIND_LOCK };
  for (const c of v.avatar) assert.equal(windowAvatarOK(kinds[c.kind], c.relayed, c.lacked, c.avatarless), c.ok, c.why);
});

test('digests keep the bucket count of a member\'s first', () => {
  const room = newRoom({ warn: true });
  for (const n of [1, 2, 3]) {
    hostile(room, OWNER, RELIABLE, netmsg.encode({ type: Type.Digest, term: BigInt(TERM), clock: 0, digests: new BigUint64Array(n) }));
  }
  assert.equal(room.p.count.refused, 3);
  assert.equal(room.links.get(OWNER).take().filter(({ m }) => m.type === Type.HostSnapshot).length, 0, 'no snapshot answered');
});

test('a repeated greeting while the sync snapshot is on its way is not an answer and gets no snapshot', () => {
  const room = newRoom({ answered: [] });
  const r = room.remotes.get(OWNER);
  const hm = room.p.host.memberOf(r);
  assert.ok(hm.snapClock > 0, 'the sync snapshot carried the host clock');
  // The member heard nothing for a second and greets again, with a digest of its empty replica.
  const hello = netmsg.encode({ type: Type.Hello, term: BigInt(TERM), peerIndex: BigInt(OWNER), schemaFingerprint: room.p.w.schemas.fingerprint });
  const stale = netmsg.encode({ type: Type.Digest, term: BigInt(TERM), clock: 0, digests: new BigUint64Array(room.p.opts.buckets) });
  deliver(room, OWNER, RELIABLE, netmsg.concat(hello, stale));
  assert.equal(hm.answered, false, 'a digest computed before the snapshot arrived does not answer it');
  assert.equal(room.links.get(OWNER).take().filter(({ m }) => m.type === Type.HostSnapshot).length, 0, 'no second snapshot');
  // A digest stamped at the snapshot's clock or above was computed after it: the member's answer.
  const fresh = netmsg.encode({ type: Type.Digest, term: BigInt(TERM), clock: hm.snapClock, digests: new BigUint64Array(room.p.opts.buckets) });
  deliver(room, OWNER, RELIABLE, fresh);
  assert.equal(hm.answered, true);
});

test('a host takes no fragmented payload above its limit from a member, and expires an unfinished one', () => {
  const room = newRoom({ warn: true });
  const big = netmsg.encode({ type: Type.Fragment, messageId: 1, totalLength: HOST_REASSEMBLY_LIMIT + 1, offset: 0, chunk: new Uint8Array(100) });
  const r = room.remotes.get(MALLORY);
  hostile(room, MALLORY, RELIABLE, big);
  assert.notEqual(room.p.remotes.get(MALLORY), r, 'the link is closed');
  const o = room.remotes.get(OWNER);
  hostile(room, OWNER, RELIABLE, netmsg.encode({ type: Type.Fragment, messageId: 1, totalLength: 1 << 20, offset: 0, chunk: new Uint8Array(100) }));
  assert.ok(o.reasm.inProgress, 'the fragment is taken');
  const refused = room.p.count.refused;
  room.p.step(() => room.p.expireReassembly(o.reasmAt + REASSEMBLY_TIMEOUT_MS + 1));
  assert.notEqual(room.p.remotes.get(OWNER), o, 'the link with an unfinished payload is closed');
  assert.equal(o.reasm.buffered, 0);
  assert.equal(room.p.count.refused, refused + 1);
});
