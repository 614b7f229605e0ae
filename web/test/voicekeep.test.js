// VoiceKeeper (docs/protocol.md §10 "A forwarder failing"): a voice session re-opened when its
// forwarder fails, over the node list, with bounded backoff, against a fake client and fake timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { VoiceKeeper, voiceBases } from '../static/js/voicekeep.js';

/** Fake timers: run() fires the due ones in order. */
function clock() {
  let now = 0;
  /** @type {{at: number, fn: () => void, id: number}[]} */
  let q = [];
  let ids = 0;
  return {
    setTimeout: (/** @type {() => void} */ fn, /** @type {number} */ ms) => {
      const t = { at: now + ms, fn, id: ++ids };
      q.push(t);
      return t.id;
    },
    clearTimeout: (/** @type {unknown} */ id) => { q = q.filter((t) => t.id !== id); },
    /** @param {number} ms */
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        q.sort((a, b) => a.at - b.at);
        const t = q[0];
        if (!t || t.at > end) break;
        q.shift();
        now = t.at;
        t.fn();
        await new Promise((r) => setImmediate(r));
      }
      now = end;
    },
    pending: () => q.length,
  };
}

class FakePC {
  constructor() {
    this.connectionState = 'connected';
    /** @type {(() => void)[]} */
    this.listeners = [];
  }
  /** @param {string} _type @param {() => void} fn */
  addEventListener(_type, fn) { this.listeners.push(fn); }
  /** @param {string} s */
  set(s) { this.connectionState = s; for (const fn of this.listeners) fn(); }
}

/** A fake VoiceClient: join() answers from the script by URL. */
function fakeClient(/** @type {(url: string) => number} */ status) {
  const c = {
    /** @type {{url?: string, onClose?: (reason: string) => void}} */
    opts: { url: '' },
    state: 'idle',
    /** @type {FakePC | null} */
    pc: null,
    /** @type {string[]} */
    joins: [],
    leaves: 0,
    async join() {
      const url = c.opts.url || '';
      c.joins.push(url);
      const s = status(url);
      if (s !== 201) {
        c.state = 'closed';
        throw Object.assign(new Error(`voice: ${s}`), { status: s });
      }
      c.pc = new FakePC();
      c.state = 'live';
    },
    /** @param {string} reason */
    end(reason) {
      if (c.state !== 'live') return;
      c.state = 'closed';
      c.pc = null;
      if (c.opts.onClose) c.opts.onClose(reason);
    },
    async leave() { c.leaves++; c.end('left'); },
  };
  return c;
}

test('a failed forwarder: the keeper re-joins through the next node, with backoff', async () => {
  const clk = clock();
  let dead = '';
  const c = fakeClient((url) => (url === dead ? 0 : 201));
  /** @type {string[]} */
  const states = [];
  const k = new VoiceKeeper(c, { urls: ['http://a', 'http://b'], graceMs: 500, setTimeout: clk.setTimeout, clearTimeout: clk.clearTimeout,
    onState: (s) => states.push(s) });
  await k.start();
  assert.deepEqual(c.joins, ['http://a']);
  assert.equal(k.sessions, 1);
  dead = 'http://a';
  c.end('bye: node stopping'); // the forwarder's bye (or the channel closing, or failed)
  await clk.advance(0);
  assert.deepEqual(c.joins, ['http://a', 'http://a']); // the same node first: an edge may have survived
  await clk.advance(249);
  assert.equal(c.joins.length, 2);
  await clk.advance(1); // 250 ms later: the next node
  assert.deepEqual(c.joins, ['http://a', 'http://a', 'http://b']);
  assert.equal(k.sessions, 2);
  assert.equal(c.state, 'live');
  assert.deepEqual(states, ['live', 'retrying', 'retrying', 'live']);
});

test('disconnected beyond the grace ends the session and re-joins; a reconnect within it does not', async () => {
  const clk = clock();
  const c = fakeClient(() => 201);
  const k = new VoiceKeeper(c, { urls: [''], graceMs: 500, setTimeout: clk.setTimeout, clearTimeout: clk.clearTimeout });
  await k.start();
  const pc = /** @type {FakePC} */ (c.pc);
  pc.set('disconnected');
  await clk.advance(400);
  pc.set('connected');
  await clk.advance(1000);
  assert.equal(k.sessions, 1);
  pc.set('disconnected');
  await clk.advance(500);
  assert.equal(k.sessions, 2);
  assert.notEqual(c.pc, pc);
});

test('the keeper gives up after maxAttempts failures in a row, and at once on 401/403/400', async () => {
  const clk = clock();
  const c = fakeClient(() => 503);
  /** @type {string[]} */
  const states = [];
  const k = new VoiceKeeper(c, { urls: ['x', 'y'], maxAttempts: 4, backoffMaxMs: 1000, setTimeout: clk.setTimeout, clearTimeout: clk.clearTimeout,
    onState: (s) => states.push(s) });
  await k.start();
  await clk.advance(60_000);
  assert.deepEqual(c.joins, ['x', 'y', 'x', 'y']);
  assert.equal(states.at(-1), 'gave-up');
  assert.equal(clk.pending(), 0);

  const d = fakeClient(() => 403);
  const k2 = new VoiceKeeper(d, { urls: ['x', 'y'], setTimeout: clk.setTimeout, clearTimeout: clk.clearTimeout });
  await k2.start();
  await clk.advance(60_000);
  assert.equal(d.joins.length, 1);
});

test('leaving stops the keeper: no re-join, the page is told once', async () => {
  const clk = clock();
  const c = fakeClient(() => 201);
  /** @type {string[]} */
  const closes = [];
  c.opts.onClose = (r) => closes.push(r);
  const k = new VoiceKeeper(c, { urls: ['x'], setTimeout: clk.setTimeout, clearTimeout: clk.clearTimeout });
  await k.start();
  await k.stop();
  await clk.advance(60_000);
  assert.equal(c.joins.length, 1);
  assert.deepEqual(closes, ['left']);
  assert.equal(c.leaves, 1);
});

test('a session the caller opened is kept; the wait before each rejoin is reported; replaced is final', async () => {
  const clk = clock();
  let up = true;
  const c = fakeClient(() => (up ? 201 : 503));
  c.opts.url = 'http://b';
  await c.join(); // the page joined (trying the microphone) before handing the client over
  /** @type {[string, string, number][]} */
  const states = [];
  const k = new VoiceKeeper(c, { urls: ['http://a', 'http://b'], setTimeout: clk.setTimeout, clearTimeout: clk.clearTimeout,
    onState: (s, d, ms) => states.push([s, d, ms]) });
  k.kept();
  assert.deepEqual(states, [['live', 'http://b', 0]]);
  up = false;
  c.end('connection failed');
  await clk.advance(0);
  assert.deepEqual(c.joins, ['http://b', 'http://b']); // the node that served it first
  assert.deepEqual(states.slice(1), [['retrying', 'connection failed', 0], ['retrying', 'Error: voice: 503', 250]]);
  up = true;
  await clk.advance(250);
  assert.deepEqual(c.joins.at(-1), 'http://a');
  assert.equal(k.sessions, 2);
  c.end('replaced'); // another tab of this member took voice over: do not take it back
  await clk.advance(60_000);
  assert.equal(c.joins.length, 3);
  assert.deepEqual(states.at(-1), ['gave-up', 'replaced', 0]);
  assert.equal(clk.pending(), 0);
});

test('voiceBases: the signaling node list as forwarder bases', () => {
  assert.deepEqual(voiceBases(['']), ['']);
  assert.deepEqual(voiceBases(['ws://a:7880/ws', 'wss://b/ws', 'ws://c/concord/ws']), ['http://a:7880', 'https://b', 'http://c/concord']);
});
