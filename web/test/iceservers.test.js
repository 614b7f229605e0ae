// Fresh TURN credentials over signaling (docs/protocol.md §4 "ice-servers"): the client keeps them
// for the links it makes next, and live links take them for their next ICE gathering. A fake
// WebSocket stands in for the server; no network is used.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SignalingClient } from '../static/js/signaling.js';
import { Link } from '../static/js/rtc.js';
import { Peer } from '../static/js/peer.js';
import { FakeServer, joined, until } from './fakeserver.js';

test('ice-servers replaces joined.iceServers and reaches onEvent', async () => {
  const srv = new FakeServer();
  const first = [{ urls: ['turn:203.0.113.7:3478?transport=udp'], username: '100:u/d/r', credential: 'a' }];
  const fresh = [{ urls: ['turn:203.0.113.7:3478?transport=udp'], username: '400:u/d/r', credential: 'b' }];
  srv.onJoin = () => ({ ...joined(1, 1, 1), iceServers: first });
  const events = [];
  const c = new SignalingClient({ url: 'ws://x/ws', room: 'r', user: 'u', device: 'd', WebSocketImpl: srv.WebSocket, onEvent: (ev) => events.push(ev) });
  const j = await c.connect();
  assert.deepEqual(j.iceServers, first);
  srv.live()[0].onmessage({ data: JSON.stringify({ v: 1, type: 'ice-servers', iceServers: fresh }) });
  await until('the ice-servers event', () => events.length === 1);
  assert.equal(events[0].type, 'ice-servers');
  assert.deepEqual(c.joined.iceServers, fresh);
});

test('setICEServers hands a live connection the fresh servers, keeping the rest of its configuration', () => {
  let config = { iceServers: [{ urls: ['stun:a'] }], iceTransportPolicy: 'relay' };
  const l = { dead: false, pc: { getConfiguration: () => config, setConfiguration: (c) => { config = c; } } };
  const fresh = [{ urls: ['turn:b'], username: 'u', credential: 'p' }];
  Link.prototype.setICEServers.call(l, fresh);
  assert.deepEqual(config, { iceServers: fresh, iceTransportPolicy: 'relay' });
  // A connection that refuses the change keeps its servers, and nothing throws.
  const refusing = { dead: false, pc: { getConfiguration: () => config, setConfiguration: () => { throw new Error('InvalidModificationError'); } } };
  Link.prototype.setICEServers.call(refusing, [{ urls: ['turn:c'] }]);
  assert.deepEqual(config.iceServers, fresh);
});

test('a peer hands ice-servers to every live link', () => {
  const got = [];
  const link = (name) => ({ setICEServers: (servers) => got.push([name, servers]) });
  const fake = { remotes: new Map([[2, { link: link('a') }], [3, { link: link('b') }], [4, { link: null }]]) };
  const fresh = [{ urls: ['turn:b'], username: 'u', credential: 'p' }];
  Peer.prototype.handleSignaling.call(fake, { type: 'ice-servers', iceServers: fresh });
  assert.deepEqual(got, [['a', fresh], ['b', fresh]]);
});
