// A kept room's first browser host merges the room's checkpoint before the game's hostStart
// (restore.js; Go's durable.App does the same for a Go host): the world comes back whole, the
// game spawns nothing again, the clock is raised to the stored one, and only once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Peer } from '../static/js/peer.js';
import { Game, SCHEMA_BOX, encodeVec, parseVec } from '../static/js/arena.js';
import { fetchCheckpoint, mergeCheckpoint } from '../static/js/restore.js';

const quiet = () => {};
const MOVED = { x: 1234, y: 5678 };

/** A peer of the arena made host of term at index self, with opts. */
function hostPeer(self, term, opts = {}) {
  const p = new Peer({ app: new Game({ boxes: 3 }), kind: 'browser', log: quiet, ...opts });
  p.w.self = self;
  p.members.set(self, { peerIndex: self, peerId: `tab${self}/d`, kind: 'browser', syncedTerm: 0 });
  p.step(() => p.setHost(term, self));
  assert.ok(p.host, 'the peer hosts');
  return p;
}

/** The checkpoint of a room an earlier host played: its boxes moved, its clock advanced. */
function playedRoom() {
  const p = hostPeer(1, 1);
  const boxes = p.w.entitiesOf(SCHEMA_BOX);
  assert.equal(boxes.length, 3);
  p.step(() => {
    for (const e of boxes) p.w.set(e, 0, encodeVec(MOVED));
  });
  return { data: p.w.r.appendState(), clock: p.w.clock + 1000, boxes, state: p.w.r.stateJSON() };
}

test('the first host restores the checkpoint before hostStart, once', () => {
  const room = playedRoom();
  const logs = [];
  const p = hostPeer(5, 7, { restore: { data: room.data, clock: room.clock }, log: (level, msg) => logs.push(msg) });
  assert.deepEqual(p.w.entitiesOf(SCHEMA_BOX), room.boxes, 'the boxes came back; the game spawned none');
  for (const e of room.boxes) assert.deepEqual(parseVec(p.w.get(e, 0)), MOVED);
  assert.ok(p.w.clock >= room.clock, `clock ${p.w.clock} raised to the stored ${room.clock}`);
  assert.equal(p.restored, true);
  // Stepping down and hosting again merges nothing more (it would change nothing: a box moved
  // since stays where it is).
  const e = room.boxes[0];
  p.step(() => p.w.set(e, 0, encodeVec({ x: 42, y: 42 })));
  p.step(() => p.setHost(8, 0));
  assert.equal(p.host, null, 'stepped down');
  p.step(() => p.setHost(9, 5));
  assert.ok(p.host, 'hosts again');
  assert.deepEqual(parseVec(p.w.get(e, 0)), { x: 42, y: 42 });
  assert.equal(logs.filter((m) => m === 'room restored').length, 1, 'merged once');
});

test('without restore the first host starts a new world', () => {
  const room = playedRoom();
  const p = hostPeer(5, 7);
  assert.equal(p.w.entitiesOf(SCHEMA_BOX).length, 3);
  for (const e of p.w.entitiesOf(SCHEMA_BOX)) assert.notDeepEqual(parseVec(p.w.get(e, 0)), MOVED);
  assert.ok(p.w.clock < room.clock);
});

test('a malformed checkpoint merges nothing and the room opens', () => {
  const room = playedRoom();
  const bad = room.data.slice(0, room.data.length - 3);
  const logs = [];
  const p = hostPeer(5, 7, { restore: { data: bad, clock: room.clock }, log: (level, msg) => logs.push(`${level} ${msg}`) });
  assert.ok(logs.includes('error checkpoint not merged'), logs.join('\n'));
  assert.equal(p.w.entitiesOf(SCHEMA_BOX).length, 3, 'the game spawned its world');
  assert.throws(() => mergeCheckpoint(p.w, { data: bad, clock: 0 }));
});

test('fetchCheckpoint: 200 gives the stream and clock, 204 (and an old server\'s 404) give null, other statuses throw', async () => {
  const calls = [];
  const answer = (status, body = new Uint8Array(0), clock = '') => async (url, init) => {
    calls.push({ url, auth: init.headers.Authorization });
    return new Response(status === 200 ? body : status === 204 ? null : 'x', { status, headers: clock ? { 'Concord-Clock': clock } : {} });
  };
  const c = await fetchCheckpoint('a b', { credential: 'tok', fetch: answer(200, new Uint8Array([9, 8]), '77') });
  assert.deepEqual([...c.data], [9, 8]);
  assert.equal(c.clock, 77);
  assert.equal(calls[0].url, '/api/rooms/a%20b/checkpoint');
  assert.equal(calls[0].auth, 'Bearer tok');
  assert.equal(await fetchCheckpoint('r', { fetch: answer(204) }), null);
  assert.equal(await fetchCheckpoint('r', { fetch: answer(404) }), null);
  await assert.rejects(fetchCheckpoint('r', { fetch: answer(409) }));
  await assert.rejects(fetchCheckpoint('r', { fetch: answer(503) }));
  await assert.rejects(fetchCheckpoint('r', { fetch: answer(200, new Uint8Array(0), 'x') }));
});

test('a host restored from a checkpoint allocates half the number space past its latest spawn, as Go (TestRestoredHostAllocatesPastCheckpoint): its predecessor went on allocating there after the checkpoint', () => {
  const old = hostPeer(1, 1);
  const data = old.w.r.appendState();
  const clock = old.w.clock + 10;
  /** @type {number[]} */
  const later = [];
  old.step(() => {
    for (let i = 0; i < 3; i++) later.push(old.w.spawn(SCHEMA_BOX, new Uint8Array(0), encodeVec(MOVED)));
  });
  const p = hostPeer(2, 2, { restore: { data, clock } });
  let fresh = 0;
  p.step(() => { fresh = p.w.spawn(SCHEMA_BOX, new Uint8Array(0), encodeVec(MOVED)); });
  for (const e of later) assert.notEqual(fresh & 0xffff, e & 0xffff, `the restored host spawned ${fresh}, a number its predecessor used after the checkpoint`);
  const lastBox = Math.max(...old.w.entitiesOf(SCHEMA_BOX).filter((e) => !later.includes(e)).map((e) => e & 0xffff));
  // Go's rule: from the same number on (the host's own avatar may take the first ones).
  const from = 512 + ((lastBox - 512 + 1 + Math.floor((65536 - 512) / 2)) % (65536 - 512));
  assert.ok((fresh & 0xffff) >= from && (fresh & 0xffff) < from + 8, `spawned number ${fresh & 0xffff}, want from ${from} on`);
});
