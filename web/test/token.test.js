// Join tokens in the browser client: the fixed token and the tokenProvider on the wire, the
// provider called again on every rejoin, and a refused join surfaced with its code and reason
// (and not mistaken for a lost connection to redial). A fake server stands in; no network.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SignalingClient, SignalingError, explain, fetchRooms } from '../static/js/signaling.js';
import { Peer } from '../static/js/peer.js';
import { Game } from '../static/js/arena.js';
import { FakeServer, joined, until } from './fakeserver.js';

/** A peer of the arena game on srv, quick to redial. */
function newPeer(srv, opts = {}) {
  const logs = [];
  const p = new Peer({
    url: 'ws://x/ws', room: 'r', user: 'u', device: 'd', app: new Game(), WebSocket: srv.WebSocket,
    redialMinMs: 10, redialMaxMs: 40, resumeSettleMs: 20, reportMs: 20,
    log: (level, msg, fields) => logs.push(`${level} ${msg} ${JSON.stringify(fields || {})}`),
    ...opts,
  });
  return { p, logs };
}

const refuse = (code, message = code) => ({ v: 1, type: 'error', code, message });

test('a fixed token rides on the join', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => joined(1, 1, 1);
  const c = new SignalingClient({ url: 'ws://x/ws', room: 'r', user: '', device: '', token: 'jwt-1', WebSocketImpl: srv.WebSocket });
  await c.connect();
  c.close();
  assert.equal(srv.joins[0].token, 'jwt-1');
  assert.ok(!('device' in srv.joins[0]), 'an empty device is left to the server');
});

test('tokenProvider is called for the join and again for every rejoin', async () => {
  const srv = new FakeServer();
  srv.onJoin = (m) => (m.token && m.token.startsWith('jwt-') ? joined(1, 4, 1, 'resume-1') : refuse('token_required'));
  const calls = [];
  const { p } = newPeer(srv, {
    token: 'ignored',
    tokenProvider: async (info) => { calls.push(info); return `jwt-${calls.length}`; },
  });
  try {
    await p.run();
    assert.deepEqual(calls, [{ room: 'r', user: 'u', device: 'd', resume: false }]);
    assert.equal(srv.joins[0].token, 'jwt-1', 'the provider wins over a fixed token');

    for (const s of srv.live()) s.crash();
    await until('resumed', () => p.status().signaling === 'connected' && p.status().resumes === 1);
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[1], { room: 'r', user: 'u', device: 'd', resume: true });
    assert.equal(srv.joins[1].token, 'jwt-2', 'the rejoin carries a fresh token');
    assert.equal(srv.joins[1].resume.token, 'resume-1', 'and the resume claim its own resume token');
  } finally {
    p.stop();
  }
});

test('a refused join rejects run() with its code and reason, and nothing redials', async () => {
  for (const code of ['token_required', 'token_expired', 'wrong_room', 'token_invalid', 'token_mismatch']) {
    const srv = new FakeServer();
    srv.onJoin = () => refuse(code, `signaling: ${code} for the test`);
    const { p, logs } = newPeer(srv);
    const err = await p.run().then(() => null, (e) => e);
    assert.ok(err instanceof SignalingError, `${code}: ${err}`);
    assert.equal(err.code, code);
    assert.equal(err.reason, explain(code));
    assert.notEqual(err.reason, code, `${code} has words`);
    assert.ok(err.permanent);
    assert.match(err.message, new RegExp(code));
    assert.equal(await p.done, err, 'done settles with the refusal');
    const st = p.status();
    assert.equal(st.state, 'failed');
    assert.match(st.error, new RegExp(code));
    // The refusal's close frame must not pass for an outage: no redial, no resume claim.
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(srv.sockets.length, 1, `${code}: no socket after the refusal`);
    assert.equal(st.resumeRefused, '');
    assert.ok(!logs.some((l) => /redial|resume/.test(l)), `${code}: ${logs.join('\n')}`);
  }
});

test('token_required reads as such, not as a resume without peerIndex', async () => {
  // The shape of the bug the bundled page had against CONCORD_SECRET: the refusal's close frame
  // after connect() failed made the peer redial with a claim for peer 0.
  const srv = new FakeServer();
  srv.onJoin = (m) => (m.resume ? refuse('bad_message', 'signaling: bad message: resume without peerIndex') : refuse('token_required'));
  const { p } = newPeer(srv);
  await assert.rejects(p.run(), (err) => err.code === 'token_required' && err.reason === 'a token is required to join this room');
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(srv.joins.length, 1);
  assert.match(p.status().error, /token_required/);
  assert.doesNotMatch(p.status().error + p.status().resumeRefused, /peerIndex/);
});

test('a refused client reports no close event after connect() rejected', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => refuse('token_required');
  const events = [];
  const c = new SignalingClient({ url: 'ws://x/ws', room: 'r', user: 'u', onEvent: (ev) => events.push(ev), WebSocketImpl: srv.WebSocket });
  await assert.rejects(c.connect(), (err) => err.code === 'token_required');
  await until('the socket closed', () => c.closed);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(events, [], 'a "closed" event would make a peer redial a session it never had');
});

test('a close frame without an error message still tells the code', async () => {
  const srv = new FakeServer();
  srv.onJoin = () => null;
  const c = new SignalingClient({ url: 'ws://x/ws', room: 'r', user: 'u', WebSocketImpl: srv.WebSocket });
  const pending = c.connect();
  await until('the join', () => srv.joins.length === 1);
  srv.sockets[0].close(1008, 'token_expired');
  await assert.rejects(pending, (err) => err instanceof SignalingError && err.code === 'token_expired' && err.permanent);
});

test('a failing or misbehaving tokenProvider fails the join before it is sent', async () => {
  for (const provider of [async () => { throw new Error('backend down'); }, async () => 42]) {
    const srv = new FakeServer();
    srv.onJoin = () => joined(1, 1, 1);
    const { p } = newPeer(srv, { tokenProvider: provider });
    const err = await p.run().then(() => null, (e) => e);
    assert.ok(err instanceof SignalingError);
    assert.equal(err.code, 'token_provider');
    assert.ok(!err.permanent, 'a rejoin may try the provider again');
    assert.equal(srv.sockets.length, 0, 'no socket opened');
    assert.equal(p.status().state, 'failed');
  }
});

test('explain returns an unknown code as it is', () => {
  assert.equal(explain('no_such_code'), 'no_such_code');
  assert.equal(new SignalingError('wrong_room', 'x').reason, 'the token is for another room');
});

test('fetchRooms sends the credential as a bearer and tells a refusal from an outage', async () => {
  /** @type {{url: string, init: any}[]} */
  const calls = [];
  const server = (/** @type {number} */ status, /** @type {string} */ body) => async (url, init) => {
    calls.push({ url, init });
    return new Response(body, { status });
  };
  const rooms = [{ room: 'arena', host: 1, term: 2, members: [] }];
  assert.deepEqual(await fetchRooms({ base: 'http://x', credential: 'tok', fetch: server(200, JSON.stringify(rooms)) }), rooms);
  assert.equal(calls[0].url, 'http://x/api/rooms');
  assert.equal(calls[0].init.headers.Authorization, 'Bearer tok');
  await fetchRooms({ fetch: server(200, '[]') });
  assert.equal(calls[1].init.headers.Authorization, undefined, 'no credential, no header');

  const reason = 'token_required: this server has a secret: send a join token (its room only) or the admin key';
  await assert.rejects(fetchRooms({ fetch: server(401, reason) }), (err) => {
    assert.ok(err instanceof SignalingError);
    assert.equal(err.code, 'token_required');
    assert.match(err.message, /admin key/);
    return true;
  });
  await assert.rejects(fetchRooms({ fetch: server(503, 'no') }), (err) => err instanceof SignalingError && err.code === 'unavailable');
  await assert.rejects(fetchRooms({ fetch: server(200, '{}') }), (err) => err instanceof SignalingError && err.code === 'unavailable');
  await assert.rejects(fetchRooms({ fetch: async () => { throw new TypeError('connection refused'); } }),
    (err) => err instanceof SignalingError && err.code === 'unavailable' && /connection refused/.test(err.message));
});
