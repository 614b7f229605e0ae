// Failover between the nodes of a cluster in the browser client (docs/guide.md "Cluster"): the
// server list, the round robin of redials, and a host whose node dies resuming on the next node.
// Fake WebSockets stand in for the nodes; no network is used.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parseServers, nextServer, MAX_SERVERS } from '../static/js/signaling.js';
import { Peer } from '../static/js/peer.js';
import { Game, schemas } from '../static/js/arena.js';
import { FakeServer, joined, until } from './fakeserver.js';

test('a server list becomes websocket endpoints, as the Go client reads it', () => {
  assert.deepEqual(parseServers('http://10.0.0.1:7880, https://b.example/base/,ws://c:1/ws'),
    ['ws://10.0.0.1:7880/ws', 'wss://b.example/base/ws', 'ws://c:1/ws']);
  assert.deepEqual(parseServers(['ws://a/ws']), ['ws://a/ws']);
  for (const bad of ['http://a,', ' ', 'ftp://a', 'not a url', Array(MAX_SERVERS + 1).fill('ws://a').join(',')]) {
    assert.throws(() => parseServers(bad), TypeError, bad);
  }
});

test('redials go round the list from the node just lost', () => {
  assert.deepEqual([1, 2, 3, 4].map((a) => nextServer(0, a, 3)), [1, 2, 0, 1]);
  assert.deepEqual([1, 2, 3].map((a) => nextServer(2, a, 3)), [0, 1, 2]);
  assert.deepEqual([1, 2].map((a) => nextServer(0, a, 1)), [0, 0]);
});

/** Nodes a, b, c: fake servers behind one WebSocket class that routes by host. */
function cluster() {
  const nodes = { a: new FakeServer(), b: new FakeServer(), c: new FakeServer() };
  const WebSocket = class {
    static OPEN = 1;
    constructor(url) {
      const node = nodes[new URL(url).hostname];
      return new node.WebSocket(url);
    }
  };
  return { nodes, WebSocket };
}

test('the first join skips a dead node; a host whose node dies resumes on the next one', async () => {
  const { nodes, WebSocket } = cluster();
  nodes.a.down = true;
  for (const n of Object.values(nodes)) n.onJoin = () => joined(1, 4, 1, 'tok-1');
  const game = new Game();
  let hostStarts = 0;
  const app = {
    schemas: () => schemas(), hostStart: (w) => { hostStarts++; game.hostStart(w); },
    spawnAvatar: (w, info) => game.spawnAvatar(w, info), tick: () => {}, rpc: () => {},
  };
  const p = new Peer({
    url: 'http://a:7880,http://b:7880,http://c:7880', room: 'r', user: 'u', device: 'd', app, WebSocket,
    redialMinMs: 10, redialMaxMs: 40, resumeSettleMs: 20, reportMs: 20, log: () => {},
  });
  try {
    await p.run();
    assert.equal(p.status().server, 'ws://b:7880/ws', 'joined through the first node that answers');
    assert.equal(nodes.a.joins.length, 0);
    await until('host', () => p.status().isHost);
    const before = p.status();

    // b dies for good: the next node of the list, c, takes the claim.
    nodes.b.down = true;
    for (const s of nodes.b.live()) s.crash();
    await until('resumed on c', () => p.status().signaling === 'connected' && p.status().resumes === 1);
    assert.equal(p.status().server, 'ws://c:7880/ws');
    assert.equal(nodes.b.joins.length, 1, 'no join reached the dead node');
    assert.deepEqual(nodes.c.joins[0].resume, { peerIndex: 1, term: 4, host: 1, synced: true, room: 'r', token: 'tok-1' });
    const after = p.status();
    assert.equal(after.self, before.self);
    assert.equal(after.term, before.term);
    assert.ok(after.isHost);
    assert.equal(after.entities, before.entities, 'nothing spawned or lost across the failover');
    assert.equal(hostStarts, 1, 'no migration');

    // c dies too while a is back: the redial wraps round to a.
    nodes.a.down = false;
    nodes.c.down = true;
    for (const s of nodes.c.live()) s.crash();
    await until('resumed on a', () => p.status().signaling === 'connected' && p.status().resumes === 2);
    assert.equal(p.status().server, 'ws://a:7880/ws');
  } finally {
    p.stop();
  }
});
