// The pure parts of the world client (regions.js): region math, the directory's checks, the
// follow plan, the merge of avatars (one per owner, the resident region's copy preferred) and the
// replay queue.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  regionAt, regionsInView, roomName, parseRoomName, parseDirectory, followPlan, mergeAvatars,
  ReplayQueue, regionOrigin, cellKey, generationOf, parseResident, encodeResident, parseAck, encodeInput,
  MSG_RESIDENT, MSG_ACK, ACTION_INPUT, MAX_PENDING_INPUTS, residentRule,
} from '../static/js/regions.js';
import { readJSON } from './helpers.js';

const tiles = { cols: 8, rows: 8, regionSize: 16000 };

test('regionAt: the region a position lies in, borders belong to the region after them', () => {
  assert.deepEqual(regionAt(tiles, { x: 0, y: 0 }), { x: 0, y: 0 });
  assert.deepEqual(regionAt(tiles, { x: 15999, y: 15999 }), { x: 0, y: 0 });
  assert.deepEqual(regionAt(tiles, { x: 16000, y: 15999 }), { x: 1, y: 0 });
  assert.deepEqual(regionAt(tiles, { x: 16000, y: 16000 }), { x: 1, y: 1 });
  assert.deepEqual(regionAt(tiles, { x: 127999, y: 127999 }), { x: 7, y: 7 });
  assert.equal(regionAt(tiles, { x: 128000, y: 0 }), null);
  assert.equal(regionAt(tiles, { x: -1, y: 0 }), null);
  assert.equal(regionAt(tiles, { x: 0, y: -1 }), null);
  assert.equal(regionAt(tiles, { x: NaN, y: 0 }), null);
  assert.deepEqual(regionOrigin(tiles, { x: 3, y: 5 }), { x: 48000, y: 80000 });
});

test('regionsInView: the square of view distance around a region, clipped, own region first', () => {
  const mid = regionsInView(tiles, { x: 3, y: 3 }, 1);
  assert.equal(mid.length, 9);
  assert.deepEqual(mid[0], { x: 3, y: 3 });
  assert.deepEqual(new Set(mid.map(cellKey)), new Set(['2,2', '3,2', '4,2', '2,3', '3,3', '4,3', '2,4', '3,4', '4,4']));
  const corner = regionsInView(tiles, { x: 0, y: 0 }, 1);
  assert.deepEqual(corner, [{ x: 0, y: 0 }, { x: 1, y: 0 }, { x: 0, y: 1 }, { x: 1, y: 1 }]);
  assert.deepEqual(regionsInView(tiles, { x: 7, y: 7 }, 0), [{ x: 7, y: 7 }]);
  assert.equal(regionsInView(tiles, { x: 4, y: 4 }, 2).length, 25);
  // The distance is bounded whatever a directory says.
  assert.equal(regionsInView({ cols: 100, rows: 100 }, { x: 50, y: 50 }, 1000).length, 81);
  // Sorted by distance: the eight neighbours before the ring at distance 2.
  const two = regionsInView(tiles, { x: 4, y: 4 }, 2);
  for (let i = 1; i < 9; i++) assert.ok(Math.max(Math.abs(two[i].x - 4), Math.abs(two[i].y - 4)) === 1);
});

test('followPlan: join the regions that came into view, leave those out of it', () => {
  const have = regionsInView(tiles, { x: 2, y: 2 }, 1).map(cellKey);
  const p = followPlan(tiles, { x: 3, y: 2 }, 1, have);
  assert.deepEqual(p.join.map(cellKey).sort(), ['4,1', '4,2', '4,3']);
  assert.deepEqual(p.leave.sort(), ['1,1', '1,2', '1,3']);
  assert.equal(p.want.length, 9);
  const same = followPlan(tiles, { x: 2, y: 2 }, 1, have);
  assert.deepEqual([same.join, same.leave], [[], []]);
});

test('room names: W.x.y both ways', () => {
  assert.equal(roomName('tiles', 3, 7), 'tiles.3.7');
  assert.deepEqual(parseRoomName('tiles', 'tiles.3.7'), { x: 3, y: 7 });
  assert.deepEqual(parseRoomName('a.b', 'a.b.0.12'), { x: 0, y: 12 });
  for (const bad of ['tiles', 'tiles.3', 'tiles.3.7.1', 'other.3.7', 'tiles.-1.2', 'tiles.x.2', 'tilesX3.7']) {
    assert.equal(parseRoomName('tiles', bad), null, bad);
  }
});

test('parseDirectory: checks the shape and fills what may be left out', () => {
  const d = parseDirectory({
    world: 'tiles', cols: 8, rows: 8, regionSize: 16000,
    regions: [{ x: 1, y: 2, room: 'tiles.1.2', node: 'n1', loaded: true }, { x: 0, y: 0 }],
  });
  assert.equal(d.view, 1);
  assert.deepEqual(d.regions[0], { x: 1, y: 2, room: 'tiles.1.2', node: 'n1', loaded: true });
  assert.deepEqual(d.regions[1], { x: 0, y: 0, room: 'tiles.0.0', node: '', loaded: false });
  const base = { world: 'tiles', cols: 8, rows: 8, regionSize: 16000, view: 1, regions: [] };
  for (const [what, bad] of /** @type {[string, any][]} */ ([
    ['null', null],
    ['no world', { ...base, world: '' }],
    ['zero cols', { ...base, cols: 0 }],
    ['huge grid', { ...base, cols: 1 << 20 }],
    ['fractional size', { ...base, regionSize: 1.5 }],
    ['past int32', { ...base, cols: 1000, regionSize: 1 << 22 }],
    ['view too far', { ...base, view: 99 }],
    ['regions not a list', { ...base, regions: {} }],
    ['region outside', { ...base, regions: [{ x: 8, y: 0 }] }],
    ['region negative', { ...base, regions: [{ x: 0, y: -1 }] }],
  ])) {
    assert.throws(() => parseDirectory(bad), TypeError, what);
  }
});

test('mergeAvatars: one avatar per owner, the resident region\'s copy (highest generation) first', () => {
  const c = (/** @type {string} */ room, /** @type {number} */ entity, /** @type {string} */ owner, /** @type {number} */ gen) => ({ room, entity, owner, gen });
  // During a handover both regions hold ann: the destination's copy (generation + 1) wins,
  // whichever order the copies come in.
  let m = mergeAvatars([c('tiles.0.0', 600, 'ann/a', 3), c('tiles.1.0', 512, 'ann/a', 4), c('tiles.0.0', 601, 'bob/b', 1)]);
  assert.deepEqual(m.map((x) => [x.owner, x.room, x.entity]), [['ann/a', 'tiles.1.0', 512], ['bob/b', 'tiles.0.0', 601]]);
  m = mergeAvatars([c('tiles.1.0', 512, 'ann/a', 4), c('tiles.0.0', 600, 'ann/a', 3)]);
  assert.deepEqual(m.map((x) => x.room), ['tiles.1.0']);
  // Equal generations (never from honest hosts): the lowest room name, whatever the order.
  const a = mergeAvatars([c('tiles.1.0', 1, 'x', 2), c('tiles.0.1', 2, 'x', 2)]);
  const b = mergeAvatars([c('tiles.0.1', 2, 'x', 2), c('tiles.1.0', 1, 'x', 2)]);
  assert.deepEqual(a, b);
  assert.equal(a[0].room, 'tiles.0.1');
  // Copies without an owner stay apart.
  assert.equal(mergeAvatars([c('r', 1, '', 1), c('r', 2, '', 1), c('s', 1, '', 1)]).length, 3);
  // Never two for an owner, never none, and always one of the highest generation.
  for (let seed = 1; seed < 200; seed++) {
    const owners = ['a', 'b', 'c'];
    const copies = [];
    for (let i = 0; i < (seed % 7) + 1; i++) copies.push(c(`w.${i % 3}.0`, i, owners[(seed * (i + 1)) % 3], (seed * 31 + i) % 5));
    const out = mergeAvatars(copies);
    assert.deepEqual(out.map((x) => x.owner), [...new Set(copies.map((x) => x.owner))].sort());
    for (const o of out) assert.equal(o.gen, Math.max(...copies.filter((x) => x.owner === o.owner).map((x) => x.gen)), `seed ${seed}`);
  }
  assert.equal(generationOf(new Uint8Array([4, 1, 0, 0])), 260);
  assert.equal(generationOf(new Uint8Array(0)), 0);
  assert.equal(generationOf(undefined), 0);
});

test('ReplayQueue: numbers inputs, acks drop the prefix, above lists the rest in order, full refuses', () => {
  /** @type {ReplayQueue<string>} */
  const q = new ReplayQueue(4);
  assert.equal(q.push('a'), 1);
  assert.equal(q.push('b'), 2);
  assert.equal(q.push('c'), 3);
  q.ack(1);
  assert.deepEqual(q.pending().map((p) => p.input), ['b', 'c']);
  assert.deepEqual(q.above(2).map((p) => p.input), ['c']);
  q.ack(1); // again: nothing
  q.ack(0);
  assert.equal(q.size, 2);
  q.ack(99); // past what was sent: everything sent so far, not inputs still to come
  assert.equal(q.size, 0);
  assert.equal(q.push('d'), 4);
  assert.deepEqual(q.pending(), [{ seq: 4, input: 'd' }]);
  // Bounded: past max unacknowledged inputs the next is refused, and numbers stay dense.
  for (const s of ['e', 'f', 'g']) assert.ok(q.push(s) > 0);
  assert.equal(q.push('h'), 0);
  assert.equal(q.refused, 1);
  q.ack(5);
  assert.equal(q.push('i'), 8);
  assert.deepEqual(q.pending().map((p) => p.seq), [6, 7, 8]);
  assert.equal(new ReplayQueue().max, MAX_PENDING_INPUTS);
});

test('world messages: resident, ack and input payloads', () => {
  const r = { x: 7, y: 3, gen: 0x01020304, ack: 0xfffffffe };
  assert.deepEqual(parseResident(encodeResident(r)), r);
  assert.deepEqual([...encodeResident({ x: 1, y: 2, gen: 3, ack: 4 })], [1, 0, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0]);
  assert.equal(parseResident(new Uint8Array(11)), null);
  assert.equal(parseResident(new Uint8Array(13)), null);
  assert.equal(parseAck(new Uint8Array([5, 0, 0, 1])), 0x01000005);
  assert.equal(parseAck(new Uint8Array(3)), null);
  assert.deepEqual([...encodeInput(258, new Uint8Array([1, 9]))], [2, 1, 0, 0, 1, 9]);
  assert.deepEqual([MSG_RESIDENT, MSG_ACK, ACTION_INPUT], [250, 251, 0x7f000001]);
});

test('ReplayQueue.rebase: a host that applied more than this queue numbered continues the numbering', () => {
  /** @type {ReplayQueue<string>} */
  const q = new ReplayQueue();
  q.push('a');
  q.push('b');
  assert.equal(q.rebase(1), false); // within what this queue numbered: an ordinary ack's business
  assert.equal(q.rebase(40), true); // the player's earlier tab sent 1–40
  assert.deepEqual(q.pending(), [{ seq: 41, input: 'a' }, { seq: 42, input: 'b' }]);
  assert.equal(q.push('c'), 43);
  q.ack(42);
  assert.deepEqual(q.pending().map((p) => p.input), ['c']);
  assert.equal(q.rebase(43), false);
  // c (43) was never sent: numbered again after the host's 44.
  assert.equal(q.rebase(44, 42), true);
  assert.deepEqual(q.pending(), [{ seq: 45, input: 'c' }]);
  // Sent (up to 45) and the host past it: taken as applied, never sent twice.
  q.push('d');
  assert.equal(q.rebase(50, 45), true);
  assert.deepEqual(q.pending(), [{ seq: 51, input: 'd' }]);
  assert.equal(q.push('e'), 52);
});


test('residentRule: shared vectors (testdata/world/resident_rule.json), the cases Go checks too', () => {
  const v = readJSON('testdata/world/resident_rule.json');
  assert.ok(v.vectors.length > 0);
  for (const c of v.vectors) {
    const res = c.res ? { x: c.res[0], y: c.res[1] } : null;
    const got = residentRule({ res, gen: c.gen, ack: c.ack, hinted: c.hinted, silent: c.silent },
      cellKey({ x: c.from[0], y: c.from[1] }), { x: c.to[0], y: c.to[1] }, c.m);
    assert.deepEqual(got, { word: c.want, renumber: c.renumber }, c.name);
  }
});
