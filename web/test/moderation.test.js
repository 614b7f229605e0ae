// A moderator's kick or ban (docs/protocol.md §4 "Signaling: moderation"): the server sends an error with
// code kicked/banned and closes with 1008 and that code. The browser peer ends its session with a
// terminal SignalingError (as Go's Run returns signaling.ErrKicked) and does not redial: a client
// that rejoined by itself would undo the kick. A banned join is refused for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SignalingError, explain, moderate } from '../static/js/signaling.js';
import { Peer } from '../static/js/peer.js';
import { Game } from '../static/js/arena.js';
import { FakeServer, joined } from './fakeserver.js';

function newPeer(srv) {
  const logs = [];
  const p = new Peer({
    url: 'ws://x/ws', room: 'r', user: 'u', device: 'd', app: new Game(), WebSocket: srv.WebSocket,
    redialMinMs: 5, redialMaxMs: 10, resumeSettleMs: 20, reportMs: 20,
    log: (level, msg, fields) => logs.push(`${level} ${msg} ${JSON.stringify(fields || {})}`),
  });
  return { p, logs };
}

for (const code of ['kicked', 'banned']) {
  test(`${code}: the session ends with a terminal error and nothing redials`, async () => {
    const srv = new FakeServer();
    srv.onJoin = () => joined(1, 1, 1);
    const { p, logs } = newPeer(srv);
    await p.run();
    assert.equal(p.status().signaling, 'connected');
    const [sock] = srv.live();
    sock.onmessage({ data: JSON.stringify({ v: 1, type: 'error', code, message: `u/d ${code} from room r: griefing` }) });
    sock.close(1008, code);
    const err = await Promise.race([p.done, new Promise((r) => setTimeout(() => r(new Error('the session did not end')), 3000))]);
    assert.ok(err instanceof SignalingError, String(err));
    assert.equal(err.code, code);
    assert.match(err.message, /griefing/, 'the moderator\'s reason reaches the page');
    assert.equal(err.reason, explain(code));
    assert.ok(err.permanent);
    const st = p.status();
    assert.equal(st.state, 'failed');
    assert.match(st.error, new RegExp(code));
    // Give a redial (every 5–10 ms) the time to show itself: there must be none.
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(srv.sockets.length, 1, 'no socket after the kick');
    assert.equal(srv.joins.length, 1, 'no rejoin after the kick');
    assert.ok(!logs.some((l) => /redialing/.test(l)), logs.join('\n'));
  });
}

test('a banned join is refused for good', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => ({ v: 1, type: 'error', code: 'banned', message: 'u is banned from room r until 2030-01-01T00:00:00Z' });
  const { p } = newPeer(srv);
  const err = await p.run().then(() => null, (e) => e);
  assert.ok(err instanceof SignalingError);
  assert.equal(err.code, 'banned');
  assert.match(err.message, /until 2030/);
  assert.ok(err.permanent);
});

test('moderate() calls the moderation API with the credential and reads refusals', async () => {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    if (init.headers.Authorization !== 'Bearer adm') return new Response('forbidden: not a moderator\n', { status: 403 });
    return new Response(JSON.stringify({ kicked: ['bob/b'] }), { status: 200 });
  };
  const res = await moderate('ban', 'my room', { user: 'bob', for: '1h' }, { credential: 'adm', fetch, base: 'http://s' });
  assert.deepEqual(res.kicked, ['bob/b']);
  assert.equal(calls[0].url, 'http://s/api/rooms/my%20room/ban');
  assert.equal(calls[0].init.method, 'POST');
  assert.deepEqual(JSON.parse(calls[0].init.body), { user: 'bob', for: '1h' });
  await moderate('unban', 'r', { user: 'bob' }, { credential: 'adm', fetch });
  assert.equal(calls[1].init.method, 'DELETE');
  assert.equal(calls[1].url, '/api/rooms/r/ban');
  const err = await moderate('kick', 'r', { peerId: 'bob/b' }, { credential: 'member', fetch }).then(() => null, (e) => e);
  assert.ok(err instanceof SignalingError);
  assert.equal(err.code, 'forbidden');
});

test('banned while away: the redial meets the ban and the session ends', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => joined(1, 1, 1);
  const { p } = newPeer(srv);
  await p.run();
  srv.onJoin = () => ({ v: 1, type: 'error', code: 'banned', message: 'u is banned from room r for good' });
  for (const s of srv.live()) s.crash();
  const err = await Promise.race([p.done, new Promise((r) => setTimeout(() => r(new Error('the session did not end')), 3000))]);
  assert.ok(err instanceof SignalingError, String(err));
  assert.equal(err.code, 'banned');
  assert.equal(p.status().state, 'failed');
  const joins = srv.joins.length;
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(srv.joins.length, joins, 'no redial after the ban');
});
