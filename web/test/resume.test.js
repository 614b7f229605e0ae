// Signaling outage and resume in the browser client (docs/protocol.md §5 "Session: signaling
// outage and resume"): the resume claim on the wire, refusals, the redial backoff, and a peer that
// loses its server, redials, and is host again in its own term. A fake WebSocket stands in for
// the server; no network is used.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SignalingClient, SignalingError, redialWait, nextRedialDelay, REDIAL } from '../static/js/signaling.js';
import { Peer } from '../static/js/peer.js';
import { Game, schemas } from '../static/js/arena.js';
import { FakeServer, joined, until } from './fakeserver.js';

test('the join carries the resume claim; another index is refused for good', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => joined(9, 1, 9);
  const claim = { peerIndex: 3, term: 2, host: 1, synced: true, room: 'r', token: 'tok' };
  const c = new SignalingClient({ url: 'ws://x/ws', room: 'r', user: 'u', device: 'd', resume: claim, WebSocketImpl: srv.WebSocket });
  await assert.rejects(c.connect(), (err) => err instanceof SignalingError && err.code === 'resume_ignored' && err.permanent);
  assert.deepEqual(srv.joins[0].resume, claim);
});

test('refusals are permanent, outages are not', async () => {
  const tests = [
    { code: 'index_taken', permanent: true },
    { code: 'resume_token_invalid', permanent: true },
    { code: 'resume_term_invalid', permanent: true },
    { code: 'resume_room_mismatch', permanent: true },
    { code: 'token_expired', permanent: true },
    { code: 'room_full', permanent: false },
    { code: 'server_closing', permanent: false },
  ];
  for (const tt of tests) {
    const srv = new FakeServer();
    srv.onJoin = () => ({ v: 1, type: 'error', code: tt.code, message: 'no' });
    const c = new SignalingClient({ url: 'ws://x/ws', room: 'r', user: 'u', resume: { peerIndex: 2 }, WebSocketImpl: srv.WebSocket });
    await assert.rejects(c.connect(), (err) => err.code === tt.code && err.permanent === tt.permanent, tt.code);
  }
  assert.equal(new SignalingError('network', 'down').permanent, false);
});

test('redial waits grow from min to max with jitter', () => {
  let delay = REDIAL.min;
  const seen = [];
  for (let i = 0; i < 8; i++) {
    for (const r of [0, 0.5, 0.999999]) {
      const w = redialWait(delay, () => r);
      assert.ok(w >= delay / 2 && w <= delay, `wait ${w} for delay ${delay}`);
    }
    seen.push(delay);
    delay = nextRedialDelay(delay);
  }
  assert.deepEqual(seen, [100, 200, 400, 800, 1000, 1000, 1000, 1000]);
});

test('a host that loses signaling redials and is host again in its own term', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => joined(1, 4, 1, 'tok-1');
  let hostStarts = 0;
  const game = new Game();
  const app = {
    schemas: () => schemas(),
    hostStart: (w) => { hostStarts++; game.hostStart(w); },
    spawnAvatar: (w, info) => game.spawnAvatar(w, info),
    tick: () => {},
    rpc: () => {},
  };
  const logs = [];
  const p = new Peer({
    url: 'ws://x/ws', room: 'r', user: 'u', device: 'd', app, WebSocket: srv.WebSocket,
    redialMinMs: 10, redialMaxMs: 40, resumeSettleMs: 20, reportMs: 20,
    log: (level, msg) => logs.push(`${level} ${msg}`),
  });
  try {
    await p.run();
    await until('host', () => p.status().isHost);
    const before = p.status();
    assert.equal(before.term, 4);

    // The server dies; redials fail while it is down.
    srv.down = true;
    for (const s of srv.live()) s.crash();
    await until('signaling lost', () => p.status().signaling === 'closed');
    await until('a few redials', () => srv.sockets.length >= 4);
    assert.equal(srv.joins.length, 1, 'no join reached a server that is down');
    assert.ok(p.status().isHost, 'the host plays on without signaling');

    // A new server takes the claim.
    srv.onJoin = (m) => (m.resume && m.resume.peerIndex === 1 ? joined(1, 4, 1, 'tok-1') : joined(7, 1, 7));
    srv.down = false;
    await until('resumed', () => p.status().signaling === 'connected' && p.status().resumes === 1);
    const claim = srv.joins[1].resume;
    assert.deepEqual(claim, { peerIndex: 1, term: 4, host: 1, synced: true, room: 'r', token: 'tok-1' });
    const after = p.status();
    assert.equal(after.self, 1);
    assert.equal(after.term, 4);
    assert.ok(after.isHost);
    assert.ok(after.entities > 0);
    assert.equal(after.entities, before.entities, 'nothing spawned or lost across the resume');
    assert.equal(hostStarts, 1, 'no second hostStart: no migration');

    // A server that refuses the claim: the peer stops redialing and plays on.
    srv.onJoin = () => ({ v: 1, type: 'error', code: 'index_taken', message: 'taken' });
    for (const s of srv.live()) s.crash();
    await until('refused', () => p.status().signaling === 'refused');
    const joins = srv.joins.length;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(srv.joins.length, joins, 'no redial after a refusal');
    assert.match(p.status().resumeRefused, /index_taken/);
    assert.ok(p.status().isHost);
    assert.ok(logs.some((l) => l.startsWith('error signaling refused')));
  } finally {
    p.stop();
  }
});

test('a resume claim carries the token of the latest host message (it vouches for that term)', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => joined(1, 4, 1, 'tok-4');
  const game = new Game();
  const app = { schemas: () => schemas(), hostStart: (w) => game.hostStart(w), spawnAvatar: (w, info) => game.spawnAvatar(w, info), tick: () => {}, rpc: () => {} };
  const p = new Peer({
    url: 'ws://x/ws', room: 'r', user: 'u', device: 'd', app, WebSocket: srv.WebSocket,
    redialMinMs: 10, redialMaxMs: 40, resumeSettleMs: 20, reportMs: 20, log: () => {},
  });
  try {
    await p.run();
    await until('host', () => p.status().isHost);
    // The same member is elected again in a higher term: the server sends a fresh token with it.
    srv.live()[0].onmessage({ data: JSON.stringify({ v: 1, type: 'host', term: 5, host: 1, resumeToken: 'tok-5' }) });
    await until('term 5', () => p.status().term === 5);
    srv.onJoin = () => joined(1, 5, 1, 'tok-5b');
    for (const s of srv.live()) s.crash();
    await until('resumed', () => p.status().signaling === 'connected' && p.status().resumes === 1);
    assert.equal(srv.joins[1].resume.term, 5);
    assert.equal(srv.joins[1].resume.token, 'tok-5', 'the claim carries the newest token, not the one of joined');
  } finally {
    p.stop();
  }
});

test('the join asks for batches; a batched message is several events, in order', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => joined(4, 1, 1);
  const events = [];
  const c = new SignalingClient({ url: 'ws://x/ws', room: 'r', user: 'u', device: 'd', onEvent: (ev) => events.push(ev), WebSocketImpl: srv.WebSocket });
  await c.connect();
  assert.equal(srv.joins[0].batch, true);
  const member = (i) => ({ v: 1, type: 'member-joined', member: { peerIndex: i, peerId: `b${i}/d`, kind: 'bot', power: 0, mayHost: true, synced: false } });
  const batch = [member(5), member(6), { v: 1, type: 'member-left', peerIndex: 5 }].map((m) => JSON.stringify(m)).join('\n');
  srv.live()[0].onmessage({ data: batch });
  srv.live()[0].onmessage({ data: JSON.stringify(member(7)) });
  assert.deepEqual(events.map((e) => e.type), ['member-joined', 'member-joined', 'member-left', 'member-joined']);
  assert.deepEqual(events.map((e) => e.member?.peerIndex ?? e.peerIndex), [5, 6, 5, 7]);
});
