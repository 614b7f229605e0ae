// The tiles page's drawing (tilesview.js) and inputs (tiles.js), without a browser: the scene of a
// world client holds one player per owner across regions and every block, the overlay marks each
// region's role and node, the camera stays in the world, and draw() paints what the scene holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { World } from '../static/js/world.js';
import { scene, camera, draw } from '../static/js/tilesview.js';
import * as tiles from '../static/js/tiles.js';
import { parseDirectory, cellKey } from '../static/js/regions.js';

const enc = new TextEncoder();
const u32 = (/** @type {number} */ v) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, true); return b; };
const i32 = (/** @type {number} */ v) => { const b = new Uint8Array(4); new DataView(b.buffer).setInt32(0, v, true); return b; };

const dir = parseDirectory({
  world: 'tiles', cols: 8, rows: 8, regionSize: 16000, view: 1,
  regions: Array.from({ length: 64 }, (_, i) => ({ x: i % 8, y: Math.floor(i / 8), room: `tiles.${i % 8}.${Math.floor(i / 8)}`, node: i % 2 ? 'b' : 'a', loaded: i < 20 })),
});

/** A host-side world of one region (spawns need isHost). */
function regionWorld() {
  const w = new World(tiles.schemas());
  w.isHost = true;
  return w;
}

/** @param {World} w @param {string} owner @param {number} gen @param {{x: number, y: number}} pos */
function player(w, owner, gen, pos) {
  const e = w.spawn(tiles.SCHEMA_PLAYER, u32(gen), tiles.encodeXY(pos), tiles.encodeXY({ x: 0, y: 0 }), new Uint8Array([10, 20, 30, 255]), enc.encode(owner.split('/')[0]), enc.encode(owner));
  w.closeBatch();
  return e;
}

/** A stand-in WorldClient over fixed region worlds, as tilesview reads one. */
function fakeClient(/** @type {Record<string, World>} */ worlds, /** @type {{x: number, y: number}} */ resident) {
  const regions = new Map();
  for (const [room, w] of Object.entries(worlds)) {
    const [, x, y] = room.split('.').map(Number);
    const key = cellKey({ x, y });
    regions.set(key, { cell: { x, y }, key, room, role: 'watcher', state: 'joined', peer: { world: w } });
  }
  return /** @type {any} */ ({
    self: 'ann/t1', resident, regions,
    entities() {
      const out = [];
      const best = new Map();
      for (const r of regions.values()) {
        const w = r.peer.world;
        for (const e of w.entities()) {
          const s = w.schemaOf(e);
          const we = { region: r, world: w, entity: e, schema: s.id, writable: r.key === cellKey(resident) };
          if (s.id !== tiles.SCHEMA_PLAYER) { out.push(we); continue; }
          const owner = new TextDecoder().decode(w.get(e, tiles.PLAYER_OWNER));
          const gen = new DataView(w.creation(e).buffer).getUint32(0, true);
          const cur = best.get(owner);
          if (!cur || gen > cur.gen) best.set(owner, { gen, we });
        }
      }
      for (const b of best.values()) out.push(b.we);
      return out;
    },
  });
}

test('scene: one player per owner across regions, the blocks, and the overlay roles', () => {
  const a = regionWorld();
  const b = regionWorld();
  player(a, 'ann/t1', 1, { x: 63900, y: 50000 });
  player(b, 'ann/t1', 2, { x: 64100, y: 50000 });
  player(b, 'bob/t2', 1, { x: 70000, y: 52000 });
  a.spawn(tiles.SCHEMA_BLOCK, new Uint8Array(0), i32(50), i32(51), new Uint8Array([3]));
  b.spawn(tiles.SCHEMA_BLOCK, new Uint8Array(0), i32(-1), i32(66), new Uint8Array([7]));
  const c = fakeClient({ 'tiles.3.3': a, 'tiles.4.3': b }, { x: 4, y: 3 });
  const s = scene(c, dir);
  assert.deepEqual(s.players.map((p) => [p.owner, p.room, p.gen, p.mine]).sort(), [['ann/t1', 'tiles.4.3', 2, true], ['bob/t2', 'tiles.4.3', 1, false]]);
  assert.deepEqual(s.me?.pos, { x: 64100, y: 50000 });
  assert.equal(s.me?.name, 'ann');
  assert.deepEqual(s.blocks.map((x) => [x.x, x.y, x.kind, x.writable]).sort(), [[-1, 66, 7, true], [50, 51, 3, false]]);
  const role = (/** @type {string} */ room) => s.regions.find((r) => r.room === room)?.role;
  assert.equal(role('tiles.4.3'), 'resident');
  assert.equal(role('tiles.3.3'), 'watching');
  assert.equal(role('tiles.0.0'), '');
  assert.equal(s.regions.length, 64);
});

test('camera: (2·view+1) regions around the player, inside the world', () => {
  assert.deepEqual(camera(dir, { x: 64000, y: 64000 }, 960, 1), { x0: 40000, y0: 40000, side: 48000, scale: 0.02 });
  assert.deepEqual(camera(dir, { x: 100, y: 100 }, 960, 1), { x0: 0, y0: 0, side: 48000, scale: 0.02 });
  assert.deepEqual(camera(dir, { x: 127999, y: 127999 }, 960, 1), { x0: 80000, y0: 80000, side: 48000, scale: 0.02 });
  assert.equal(camera(dir, null, 800, 9).side, 128000); // never wider than the world
});

test('draw: paints the blocks, the players and the region labels of the scene', () => {
  const a = regionWorld();
  player(a, 'ann/t1', 1, { x: 56000, y: 56000 });
  player(a, 'bob/t2', 1, { x: 58000, y: 56000 });
  a.spawn(tiles.SCHEMA_BLOCK, new Uint8Array(0), i32(55), i32(55), new Uint8Array([2]));
  const c = fakeClient({ 'tiles.3.3': a }, { x: 3, y: 3 });
  const s = scene(c, dir);
  /** @type {{op: string, args: any[], fill?: any}[]} */
  const calls = [];
  const ctx = new Proxy({ fillStyle: '', strokeStyle: '' }, {
    get(t, k) {
      if (k in t) return /** @type {any} */ (t)[k];
      return (/** @type {any[]} */ ...args) => { calls.push({ op: String(k), args, fill: t.fillStyle }); };
    },
    set(t, k, v) { /** @type {any} */ (t)[k] = v; return true; },
  });
  const cam = camera(dir, s.me ? s.me.pos : null, 960, 1);
  draw(/** @type {any} */ (ctx), s, cam, 960);
  const texts = calls.filter((x) => x.op === 'fillText').map((x) => x.args[0]);
  assert.ok(texts.includes('ann (you)'), texts.join('|'));
  assert.ok(texts.includes('bob'));
  assert.ok(texts.some((t) => t.startsWith('tiles.3.3 · ') && t.endsWith('· resident')), texts.join('|'));
  assert.ok(texts.includes('tiles.3.2 · node b'), texts.join('|'));
  assert.ok(texts.includes('tiles.4.3 · not loaded'), texts.join('|'));
  assert.equal(calls.filter((x) => x.op === 'arc').length, 2);
  // The block on tile (55, 55): 1000 mm at 0.02 px/mm from the camera's corner.
  const block = calls.find((x) => x.op === 'fillRect' && x.fill === '#5b8c3a');
  assert.ok(block, 'block drawn');
  assert.deepEqual(block.args.map((v) => Math.round(v)), [Math.round((55000 - cam.x0) * cam.scale) + 1, Math.round((55000 - cam.y0) * cam.scale) + 1, 18, 18]);
});

test('tiles inputs and codecs: walk clamps, place and remove carry the tile, positions round-trip', () => {
  assert.deepEqual([...tiles.walkInput({ x: 9000, y: -3000 })], [1, 0xa0, 0x0f, 0x48, 0xf4]);
  assert.deepEqual([...tiles.placeInput(-2, 17, 5)], [2, 0xfe, 0xff, 0xff, 0xff, 17, 0, 0, 0, 5]);
  assert.deepEqual([...tiles.removeInput(3, 4)], [3, 3, 0, 0, 0, 4, 0, 0, 0]);
  for (const p of [{ x: 0, y: 0 }, { x: 127999, y: -5 }, { x: -2147483648, y: 2147483647 }]) assert.deepEqual(tiles.parseXY(tiles.encodeXY(p)), p);
  assert.equal(tiles.parseXY(new Uint8Array([1])), null);
  assert.equal(tiles.parseXY(undefined), null);
  assert.deepEqual(tiles.keysVelocity({ up: true, down: false, left: true, right: false }), { x: -3000, y: -3000 });
  assert.deepEqual(tiles.tileAt({ x: 15999, y: 16000 }), { x: 15, y: 16 });
  assert.ok(tiles.inReach({ x: 5500, y: 5500 }, { x: 8, y: 2 }));
  assert.ok(!tiles.inReach({ x: 5500, y: 5500 }, { x: 9, y: 5 }));
  assert.equal(tiles.schemas().lookup(tiles.SCHEMA_PLAYER)?.properties.length, 5);
});
