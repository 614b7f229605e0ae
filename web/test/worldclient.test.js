// The world client (worldclient.js) against fake region rooms: it loads and joins the start region,
// follows the view its host names, sends numbered inputs to the resident region only, crosses a
// border when the destination's host says so (one avatar per player throughout, the inputs the
// source did not apply replayed to the destination, none twice), ignores a stale word of the
// source, and leaves the regions out of view after the grace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { World } from '../static/js/world.js';
import { WorldClient, LEAVE_GRACE_MS } from '../static/js/worldclient.js';
import { encodeResident, MSG_RESIDENT, MSG_ACK, ACTION_INPUT, cellKey, MAX_PENDING_INPUTS } from '../static/js/regions.js';
import * as tiles from '../static/js/tiles.js';
import { until } from './fakeserver.js';

const enc = new TextEncoder();
const u32 = (/** @type {number} */ v) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, true); return b; };

/** A region room as the client sees it: a World the test fills as its host would, and what the client sent. */
class FakeRoom {
  constructor(opts) {
    this.opts = opts;
    this.room = opts.room;
    this.w = new World(opts.app.schemas());
    this.w.self = 2;
    this.w.host = 1;
    this.peerId = `${opts.user}/${opts.device}`;
    /** @type {{seq: number, data: number[]}[]} */
    this.inputs = [];
    this.stopped = false;
    this.synced = true;
    this.listeners = new Set();
    this.w.peer = /** @type {any} */ ({
      sendAction: (type, data) => {
        if (!this.synced) throw new Error('no link');
        assert.equal(type, ACTION_INPUT);
        this.inputs.push({ seq: new DataView(data.buffer, data.byteOffset).getUint32(0, true), data: [...data.subarray(4)] });
      },
    });
  }

  get world() { return this.w; }
  async run() { return {}; }
  stop() { this.stopped = true; }
  do(fn) { return fn(this.w); }
  onEvent(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }
  status() { return /** @type {any} */ ({ synced: this.synced }); }

  /** The host sends world message type with data. */
  hostSays(type, data) { this.opts.app.message(this.w, this.w.host, type, data); }

  /** The host spawns owner's avatar with generation gen at pos; returns it. */
  spawnAvatar(owner, gen, pos) {
    this.w.isHost = true;
    const e = this.w.spawn(tiles.SCHEMA_PLAYER, u32(gen), tiles.encodeXY(pos), tiles.encodeXY({ x: 0, y: 0 }), new Uint8Array(4), enc.encode(owner), enc.encode(owner));
    this.w.isHost = false;
    this.w.closeBatch();
    return e;
  }

  despawn(e) {
    this.w.isHost = true;
    this.w.despawn(e);
    this.w.isHost = false;
    this.w.closeBatch();
  }
}

function setup(t, extra = {}) {
  /** @type {Map<string, FakeRoom>} */
  const rooms = new Map();
  const loads = [];
  let failLoads = extra.failLoads || new Set();
  const fetchDir = async (url) => {
    assert.equal(url, '/api/worlds/tiles');
    return { ok: true, status: 200, json: async () => ({ world: 'tiles', cols: 8, rows: 8, regionSize: 16000, view: 1, regions: [] }) };
  };
  const c = new WorldClient({
    world: 'tiles', schemas: tiles.schemas(), avatar: { schema: tiles.SCHEMA_PLAYER, owner: tiles.PLAYER_OWNER },
    user: 'ann', device: 'tab-1', start: { x: 3, y: 3 }, pollMs: 5,
    fetch: /** @type {any} */ (fetchDir),
    load: async (cell) => {
      loads.push(cellKey(cell));
      if (failLoads.has(cellKey(cell))) {
        failLoads.delete(cellKey(cell));
        throw new Error('HTTP 503 load timed out');
      }
    },
    ...(extra.opts || {}),
    makePeer: (opts) => {
      const r = new FakeRoom(opts);
      rooms.set(opts.room, r);
      return /** @type {any} */ (r);
    },
  });
  t.after(() => c.stop());
  return { c, rooms, loads };
}

test('WorldClient: follows the view of its resident region, sends inputs there only, crosses a border with its inputs', async (t) => {
  const { c, rooms, loads } = setup(t);
  /** @type {any[]} */
  const events = [];
  c.on((ev) => events.push(ev));
  await c.start();
  assert.deepEqual(loads, ['3,3']);
  assert.deepEqual([...rooms.keys()], ['tiles.3.3']);
  assert.equal(c.self, 'ann/tab-1');
  // Nothing is resident before a host says so: an input waits.
  assert.equal(c.input(tiles.walkInput({ x: 3000, y: 0 })), 1);
  assert.deepEqual(rooms.get('tiles.3.3').inputs, []);

  // The start region's host: ann is resident here, generation 1, nothing applied yet.
  const src = rooms.get('tiles.3.3');
  const a1 = src.spawnAvatar('ann/tab-1', 1, { x: 55000, y: 50000 });
  src.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 0 }));
  assert.deepEqual(await c.ready, { x: 3, y: 3 });
  await until('the view joined', () => [...c.regions.values()].filter((r) => r.state === 'joined').length === 9);
  assert.deepEqual(new Set(loads), new Set(['2,2', '3,2', '4,2', '2,3', '3,3', '4,3', '2,4', '3,4', '4,4']));
  assert.equal(c.regions.get('3,3').role, 'resident');
  assert.equal(c.regions.get('4,3').role, 'watcher');
  assert.deepEqual(src.inputs.map((i) => i.seq), [1]);
  src.hostSays(MSG_ACK, u32(1));
  assert.equal(c.queue.size, 0);

  // Two more inputs; the source applies the first and hands the avatar over to (4, 3).
  c.input(tiles.walkInput({ x: 3000, y: 100 }));
  c.input(tiles.placeInput(65, 50, 3));
  assert.deepEqual(src.inputs.map((i) => i.seq), [1, 2, 3]);
  for (const r of rooms.values()) if (r !== src) assert.deepEqual(r.inputs, [], `${r.room} got an input`);
  const dst = rooms.get('tiles.4.3');
  const a2 = dst.spawnAvatar('ann/tab-1', 2, { x: 64010, y: 50000 });
  // Both regions hold ann now: the merged view shows the destination's copy only.
  let me = c.avatars().filter((a) => a.owner === 'ann/tab-1');
  assert.equal(me.length, 1);
  assert.equal(me[0].region.room, 'tiles.4.3');
  assert.equal(me[0].gen, 2);
  assert.equal(me[0].entity, a2);
  // The source's periodic word, sent before the handover, arrives late: nothing changes.
  src.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 2 }));
  assert.deepEqual(c.resident, { x: 3, y: 3 });
  // The destination's word: resident in (4, 3), inputs up to 2 applied (handed over).
  dst.hostSays(MSG_RESIDENT, encodeResident({ x: 4, y: 3, gen: 2, ack: 2 }));
  assert.deepEqual(c.resident, { x: 4, y: 3 });
  const crossing = events.find((e) => e.kind === 'crossing' && e.from);
  assert.deepEqual([crossing.from, crossing.to, crossing.replayed], [{ x: 3, y: 3 }, { x: 4, y: 3 }, 1]);
  // Input 3 (the block) went to the destination, and only it; the new inputs follow it there.
  assert.deepEqual(dst.inputs, [{ seq: 3, data: [...tiles.placeInput(65, 50, 3)] }]);
  c.input(tiles.walkInput({ x: 0, y: 0 }));
  assert.deepEqual(dst.inputs.map((i) => i.seq), [3, 4]);
  assert.deepEqual(src.inputs.map((i) => i.seq), [1, 2, 3]);
  assert.equal(c.regions.get('4,3').role, 'resident');
  assert.equal(c.regions.get('3,3').role, 'watcher');
  // The source lets go: still one avatar.
  src.despawn(a1);
  me = c.avatars().filter((a) => a.mine);
  assert.equal(me.length, 1);
  assert.equal(me[0].entity, a2);
  assert.equal(c.me()?.entity, a2);
  // The new view is joined at once; the old column is left after the grace.
  await until('(5, 3) joined', () => c.regions.get('5,3')?.state === 'joined');
  assert.ok(c.regions.has('2,3'), 'left before the grace');
  await until('(2, y) left', () => !c.regions.has('2,2') && !c.regions.has('2,3') && !c.regions.has('2,4'), LEAVE_GRACE_MS + 2000);
  assert.ok(rooms.get('tiles.2.3').stopped);
  assert.equal(c.regions.size, 9);
  assert.equal(c.crossings, 1);
});

test('WorldClient: the source naming the destination is a crossing too; older words and generation-0 words are not', async (t) => {
  const { c, rooms } = setup(t);
  await c.start();
  const src = rooms.get('tiles.3.3');
  src.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 5, ack: 0 }));
  await until('the view joined', () => [...c.regions.values()].filter((r) => r.state === 'joined').length === 9);
  c.input(tiles.walkInput({ x: 0, y: 3000 }));
  c.input(tiles.walkInput({ x: 0, y: 0 }));
  // The source tells first: resident in (3, 4) now, its inputs up to 1 handed over.
  src.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 4, gen: 6, ack: 1 }));
  assert.deepEqual(c.resident, { x: 3, y: 4 });
  assert.deepEqual(rooms.get('tiles.3.4').inputs.map((i) => i.seq), [2]);
  // A neighbour's word of an older generation does not take the player back.
  rooms.get('tiles.2.3').hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 5, ack: 1 }));
  assert.deepEqual(c.resident, { x: 3, y: 4 });
  // The new region's host told the player, while it was only watching, where it was resident
  // then (generation 0); that word, repeated after the player arrived, changes nothing.
  rooms.get('tiles.3.4').hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 0, ack: 0 }));
  assert.deepEqual(c.resident, { x: 3, y: 4 });
  // The destination's own word, generation 6 as the source said: acknowledgements only.
  rooms.get('tiles.3.4').hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 4, gen: 6, ack: 2 }));
  assert.equal(c.queue.size, 0);
  assert.equal(c.crossings, 1);
  // Only the host's messages count: a member's relayed message is ignored.
  rooms.get('tiles.3.4').opts.app.message(rooms.get('tiles.3.4').w, 7, MSG_RESIDENT, encodeResident({ x: 0, y: 0, gen: 99, ack: 0 }));
  assert.deepEqual(c.resident, { x: 3, y: 4 });
  // A malformed or out-of-world word is ignored.
  rooms.get('tiles.3.4').hostSays(MSG_RESIDENT, encodeResident({ x: 9, y: 0, gen: 100, ack: 0 }));
  rooms.get('tiles.3.4').hostSays(MSG_RESIDENT, new Uint8Array(3));
  assert.deepEqual(c.resident, { x: 3, y: 4 });
});

test('WorldClient: inputs wait while the link is down and are sent again when unacknowledged; past the bound they are refused', async (t) => {
  const { c, rooms } = setup(t);
  await c.start();
  const r = rooms.get('tiles.3.3');
  r.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 0 }));
  r.synced = false;
  c.input(tiles.walkInput({ x: 1, y: 0 }));
  c.input(tiles.walkInput({ x: 2, y: 0 }));
  assert.deepEqual(r.inputs, []);
  r.synced = true;
  await until('sent once the link is up', () => r.inputs.length === 2);
  assert.deepEqual(r.inputs.map((i) => i.seq), [1, 2]);
  r.hostSays(MSG_ACK, u32(2));
  assert.equal(c.queue.size, 0);
  // Past MAX_PENDING_INPUTS unacknowledged inputs the next is refused locally.
  for (let i = 0; i < MAX_PENDING_INPUTS; i++) assert.ok(c.input(tiles.walkInput({ x: i, y: 0 })) > 0);
  assert.equal(c.input(tiles.walkInput({ x: 0, y: 0 })), 0);
  assert.throws(() => c.input(new Uint8Array(5000)), RangeError);
});

test('WorldClient: a reloaded tab whose avatar stayed resident numbers its inputs after the host\'s ack', async (t) => {
  const { c, rooms } = setup(t);
  await c.start();
  const r = rooms.get('tiles.3.3');
  c.input(tiles.walkInput({ x: 1, y: 0 })); // before the host's word: waits
  // The host still holds the player from the tab before the reload: 17 inputs applied.
  r.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 4, ack: 17 }));
  assert.deepEqual(r.inputs.map((i) => i.seq), [18]);
  c.input(tiles.walkInput({ x: 2, y: 0 }));
  assert.deepEqual(r.inputs.map((i) => i.seq), [18, 19]);
  r.hostSays(MSG_ACK, u32(19));
  assert.equal(c.queue.size, 0);
  // The same from an ack message.
  r.hostSays(MSG_ACK, u32(30));
  c.input(tiles.walkInput({ x: 3, y: 0 }));
  assert.deepEqual(r.inputs.map((i) => i.seq), [18, 19, 31]);
});

test('WorldClient: a region that comes back into view within the grace is kept; one whose load failed is tried again', async (t) => {
  const { c, rooms, loads } = setup(t, { failLoads: new Set(['4,4']), opts: { leaveGraceMs: 300, retryMs: 100 } });
  /** @type {any[]} */
  const errors = [];
  c.on((ev) => { if (ev.kind === 'error') errors.push(ev); });
  await c.start();
  const r33 = rooms.get('tiles.3.3');
  r33.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 0 }));
  await until('(4, 4) failed', () => errors.length === 1);
  assert.deepEqual(errors[0].region, { x: 4, y: 4 });
  await until('(4, 4) joined on a second try', () => c.regions.get('4,4')?.state === 'joined');
  assert.equal(loads.filter((k) => k === '4,4').length, 2);
  const west = rooms.get('tiles.2.3');
  // Across to (4, 3) and back within the grace: (2, 3) stays followed by the same room client.
  rooms.get('tiles.4.3').hostSays(MSG_RESIDENT, encodeResident({ x: 4, y: 3, gen: 2, ack: 0 }));
  assert.ok(c.leaving.has('2,3'));
  rooms.get('tiles.3.3').hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 3, ack: 0 }));
  assert.deepEqual([...c.leaving.keys()].sort(), ['5,2', '5,3', '5,4']);
  await new Promise((r) => setTimeout(r, 400)); // past the grace the first crossing began
  assert.equal(c.regions.get('2,3')?.peer, west);
  assert.ok(!west.stopped);
  // The (5, y) column joined on the way is out of view now, and goes after the grace.
  await until('(5, y) left', () => !c.regions.has('5,3'));
  assert.ok(rooms.get('tiles.5.3').stopped);
  assert.equal(c.regions.size, 9);
});

test('WorldClient: an input unacknowledged past resendMs is sent again (the host drops a number it applied)', async (t) => {
  const { c, rooms } = setup(t, { opts: { resendMs: 100 } });
  await c.start();
  const r = rooms.get('tiles.3.3');
  r.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 0 }));
  c.input(tiles.walkInput({ x: 1, y: 0 }));
  c.input(tiles.walkInput({ x: 2, y: 0 }));
  assert.deepEqual(r.inputs.map((i) => i.seq), [1, 2]);
  r.hostSays(MSG_ACK, u32(1));
  await until('input 2 sent again', () => r.inputs.length >= 3);
  assert.deepEqual(r.inputs.slice(0, 3).map((i) => i.seq), [1, 2, 2]);
  r.hostSays(MSG_ACK, u32(2));
  const n = r.inputs.length;
  await new Promise((res) => setTimeout(res, 250));
  assert.equal(r.inputs.length, n, 'sent again after its ack');
});

test('WorldClient: when the resident host forgets the input sequence (a restart), the waiting inputs are numbered anew; a late word of a handover\'s source is not that', async (t) => {
  const { c, rooms } = setup(t);
  await c.start();
  const r = rooms.get('tiles.3.3');
  r.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 0 }));
  await until('the view joined', () => [...c.regions.values()].filter((x) => x.state === 'joined').length === 9);
  for (let i = 0; i < 4; i++) c.input(tiles.walkInput({ x: i, y: 0 }));
  r.hostSays(MSG_ACK, u32(2));
  // A handover to (4, 3) with inputs up to 2 applied; the destination applies 3.
  const dst = rooms.get('tiles.4.3');
  dst.hostSays(MSG_RESIDENT, encodeResident({ x: 4, y: 3, gen: 2, ack: 2 }));
  assert.deepEqual(dst.inputs.map((i) => i.seq), [3, 4]);
  dst.hostSays(MSG_ACK, u32(3));
  // The source repeats its word (generation 2, ack 2): only an old ack, nothing renumbered.
  r.hostSays(MSG_RESIDENT, encodeResident({ x: 4, y: 3, gen: 2, ack: 2 }));
  assert.deepEqual(c.queue.pending().map((p) => p.seq), [4]);
  // The world restarts and restores ann in (4, 3) with a fresh sequence: input 4 goes again as 1.
  dst.hostSays(MSG_RESIDENT, encodeResident({ x: 4, y: 3, gen: 2, ack: 0 }));
  assert.deepEqual(c.queue.pending().map((p) => p.seq), [1]);
  assert.deepEqual(dst.inputs.map((i) => i.seq), [3, 4, 1]);
  assert.deepEqual(dst.inputs[2].data, dst.inputs[1].data);
  c.input(tiles.walkInput({ x: 9, y: 9 }));
  assert.deepEqual(dst.inputs.map((i) => i.seq), [3, 4, 1, 2]);
  dst.hostSays(MSG_ACK, u32(1));
  // Restarted again, the player restored in another region from older saved data (a higher
  // generation, ack 0): it goes there, and its waiting input is numbered 1 there.
  const south = rooms.get('tiles.4.4');
  south.hostSays(MSG_RESIDENT, encodeResident({ x: 4, y: 4, gen: 3, ack: 0 }));
  assert.deepEqual(c.resident, { x: 4, y: 4 });
  assert.deepEqual(south.inputs.map((i) => i.seq), [1]);
  assert.deepEqual(south.inputs[0].data, [...tiles.walkInput({ x: 9, y: 9 })]);
});

test('WorldClient: after a whole cluster\'s restart a host redirects the player out of its view with the residence record\'s generation: it follows a newer one, drops an older one, and takes it from the region\'s own host or the resident region\'s only', async (t) => {
  const { c, rooms } = setup(t);
  await c.start();
  const r = rooms.get('tiles.3.3');
  r.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 4, ack: 0 }));
  await until('the view joined', () => [...c.regions.values()].filter((x) => x.state === 'joined').length === 9);
  for (let i = 0; i < 3; i++) c.input(tiles.walkInput({ x: i, y: 0 }));
  r.hostSays(MSG_ACK, u32(2));
  // The cluster restarted; the record names (7, 7) with generation 5: a neighbour's host says so.
  // The player follows (7, 7) (a generation-0 word, what a restarted host used to send, was
  // dropped, and the player stayed for ever in (3, 3), which no host held it in), and takes
  // nothing from a third host (a claim may yet be put back): its own host will say it.
  rooms.get('tiles.2.3').hostSays(MSG_RESIDENT, encodeResident({ x: 7, y: 7, gen: 5, ack: 0 }));
  assert.deepEqual(c.resident, { x: 3, y: 3 });
  assert.ok(c.regions.has('7,7'), 'the redirect\'s region is followed');
  assert.deepEqual(c.queue.pending().map((p) => p.seq), [3]);
  // An older word (a generation below the player's) is not followed.
  rooms.get('tiles.3.4').hostSays(MSG_RESIDENT, encodeResident({ x: 6, y: 0, gen: 3, ack: 0 }));
  assert.ok(!c.regions.has('6,0'));
  await until('(7, 7) joined', () => c.regions.get('7,7')?.state === 'joined');
  // (7, 7)'s own host holds the player, restored from its saved data with ack 0: resident there,
  // the waiting input numbered 1.
  const far = rooms.get('tiles.7.7');
  far.hostSays(MSG_RESIDENT, encodeResident({ x: 7, y: 7, gen: 5, ack: 0 }));
  assert.deepEqual(c.resident, { x: 7, y: 7 });
  assert.deepEqual(c.queue.pending().map((p) => p.seq), [1]);
  assert.equal(far.inputs.at(-1)?.seq, 1);
  // The resident region's host names another region with a newer generation: taken at once.
  far.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 6, ack: 0 }));
  assert.deepEqual(c.resident, { x: 3, y: 3 });
  assert.deepEqual(c.queue.pending().map((p) => p.seq), [1]);
});

test('WorldClient: a region whose host went away is loaded again until the server answers', async (t) => {
  const { c, rooms, loads } = setup(t, { opts: { reloadEveryMs: 20 } });
  await c.start();
  const r = rooms.get('tiles.3.3');
  r.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 0 }));
  const n = loads.filter((k) => k === '3,3').length;
  // The first two asks fail (the server is restarting).
  let fails = 2;
  const load = c.opts.load;
  c.opts.load = async (cell) => {
    await load(cell);
    if (fails-- > 0) throw new Error('unavailable');
  };
  r.opts.app.onEvent(r.w, { kind: 'migrating' });
  r.opts.app.onEvent(r.w, { kind: 'migrating' }); // once at a time
  await until('the region loaded again', () => c.reloads === 1);
  assert.equal(loads.filter((k) => k === '3,3').length, n + 3);
  // This tab elected host of the room (nobody else was there): the same.
  r.w.isHost = true;
  r.opts.app.onEvent(r.w, { kind: 'host-changed' });
  await until('loaded again', () => c.reloads === 2);
  // A host change to another peer is not a loss.
  r.w.isHost = false;
  r.opts.app.onEvent(r.w, { kind: 'host-changed' });
  await new Promise((res) => setTimeout(res, 60));
  assert.equal(c.reloads, 2);
});


test('WorldClient: a region\'s load request carries that region\'s join token from the tokenProvider (a server with a secret refuses a load without one)', async (t) => {
  /** @type {{url: string, auth: string | undefined}[]} */
  const posts = [];
  const fetchAll = async (url, init = {}) => {
    if (init.method === 'POST') {
      posts.push({ url, auth: init.headers && init.headers.Authorization });
      return { ok: true, status: 200, json: async () => ({}), text: async () => '' };
    }
    return { ok: true, status: 200, json: async () => ({ world: 'tiles', cols: 8, rows: 8, regionSize: 16000, view: 1, regions: [] }) };
  };
  const asked = [];
  const { c } = setup(t, {
    opts: {
      load: undefined, fetch: fetchAll,
      tokenProvider: (/** @type {{room: string, user: string, device: string}} */ j) => {
        asked.push(j);
        return `token-of-${j.room}`;
      },
    },
  });
  await c.start();
  assert.deepEqual(posts, [{ url: '/api/worlds/tiles/load?x=3&y=3', auth: 'Bearer token-of-tiles.3.3' }]);
  assert.equal(asked[0].user, 'ann');
  assert.equal(asked[0].device, 'tab-1');
});

/**
 * A client resident in (3, 3) with generation 10 (its host said so), its view joined, its
 * residence silence (5 s) on clock.ms, which the test moves.
 * @param {any} t
 */
async function residentAt10(t) {
  const clock = { ms: 0 };
  const { c, rooms } = setup(t, { opts: { now: () => clock.ms, residentSilenceMs: 5000 } });
  await c.start();
  const home = rooms.get('tiles.3.3');
  home.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 10, ack: 0 }));
  await until('the view joined', () => [...c.regions.values()].filter((r) => r.state === 'joined').length === 9);
  return { c, rooms, clock, home };
}

test('WorldClient: holding a generation newer than every host\'s (the record lost on a restart), it takes the holder\'s word once its resident host has been silent for the bound: stuck before, resident after', async (t) => {
  const { c, rooms, clock, home } = await residentAt10(t);
  c.input(tiles.walkInput({ x: 1, y: 0 }));
  home.hostSays(MSG_ACK, u32(1));
  c.input(tiles.walkInput({ x: 2, y: 0 }));
  // The world restarted and forgot the player: (3, 4)'s host placed it anew with generation 5
  // (N) while the client holds 10 (N + 5). (3, 3)'s host holds nothing and says nothing.
  const south = rooms.get('tiles.3.4');
  south.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 4, gen: 5, ack: 0 }));
  assert.deepEqual(c.resident, { x: 3, y: 3 }, 'an older word, while the resident host may speak: dropped');
  clock.ms += 4999;
  south.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 4, gen: 5, ack: 0 }));
  await until('a poll', () => true);
  assert.deepEqual(c.resident, { x: 3, y: 3 });
  assert.equal(c.gen, 10);
  // The silence passes the bound: the held word is heard again and taken from its own host.
  clock.ms += 1;
  await until('resident where the host holds it', () => c.resident?.y === 4);
  assert.equal(c.gen, 5);
  // Its waiting input is numbered anew after the host's ack 0 and sent there.
  assert.deepEqual(c.queue.pending().map((p) => p.seq), [1]);
  assert.equal(south.inputs.at(-1)?.seq, 1);
  // From now on that host is the resident one: its word at generation 5 is its ack.
  south.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 4, gen: 5, ack: 1 }));
  assert.equal(c.queue.size, 0);
});

test('WorldClient: while the resident region\'s host speaks, an older host\'s word never takes the player back, however long it goes on', async (t) => {
  const { c, rooms, clock, home } = await residentAt10(t);
  const south = rooms.get('tiles.3.4');
  for (let i = 0; i < 30; i++) {
    clock.ms += 1000;
    home.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 10, ack: 0 }));
    south.hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 4, gen: 5, ack: 0 }));
    c.poll();
    assert.deepEqual(c.resident, { x: 3, y: 3 });
    assert.equal(c.gen, 10);
  }
  assert.equal(rooms.get('tiles.3.3'), home, 'never joined again');
});

test('WorldClient: when no host speaks of the player, at twice the silence it joins its region\'s room again to be placed anew, and takes that host\'s word', async (t) => {
  const { c, rooms, clock, home } = await residentAt10(t);
  clock.ms += 9999;
  c.poll();
  assert.equal(rooms.get('tiles.3.3'), home);
  clock.ms += 1;
  await until('the room joined again', () => rooms.get('tiles.3.3') !== home && c.regions.get('3,3')?.state === 'joined');
  assert.ok(home.stopped, 'the old member left');
  // Its host hears the player arrive and places it (generation 1: the world forgot it).
  rooms.get('tiles.3.3').hostSays(MSG_RESIDENT, encodeResident({ x: 3, y: 3, gen: 1, ack: 0 }));
  assert.deepEqual(c.resident, { x: 3, y: 3 });
  assert.equal(c.gen, 1);
  // Not again at once: the next try waits twice the bound.
  const again = rooms.get('tiles.3.3');
  c.poll();
  assert.equal(rooms.get('tiles.3.3'), again);
});
