// The WebRTC link's selected-pair report (docs/protocol.md §4 "report": link) read from a fake
// RTCPeerConnection's getStats, and its reliable backlog (flow control) over fake data channels;
// no browser and no network are used.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Link, RELIABLE, RELIABLE_HIGH_WATER, MAX_RELIABLE_BACKLOG, BACKLOG_STALL_MS } from '../static/js/rtc.js';

function fakeLink(entries) {
  const stats = new Map(entries.map((s) => [s.id, s]));
  return { dead: false, pc: { getStats: async () => stats } };
}

test('refreshPair reads the transport’s selected pair', async () => {
  const l = fakeLink([
    { id: 'T', type: 'transport', selectedCandidatePairId: 'P2' },
    { id: 'P1', type: 'candidate-pair', localCandidateId: 'L1', remoteCandidateId: 'R1', nominated: false, state: 'failed' },
    { id: 'P2', type: 'candidate-pair', localCandidateId: 'L2', remoteCandidateId: 'R2', nominated: true, state: 'succeeded' },
    { id: 'L1', type: 'local-candidate', candidateType: 'host' },
    { id: 'R1', type: 'remote-candidate', candidateType: 'host' },
    { id: 'L2', type: 'local-candidate', candidateType: 'relay' },
    { id: 'R2', type: 'remote-candidate', candidateType: 'srflx' },
  ]);
  await Link.prototype.refreshPair.call(l);
  assert.deepEqual(l.pair, { local: 'relay', remote: 'srflx' });
});

test('refreshPair falls back to the nominated succeeded pair, and leaves pair unset without one', async () => {
  const l = fakeLink([
    { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R', nominated: true, state: 'succeeded' },
    { id: 'L', type: 'local-candidate', candidateType: 'prflx' },
    { id: 'R', type: 'remote-candidate', candidateType: 'host' },
  ]);
  await Link.prototype.refreshPair.call(l);
  assert.deepEqual(l.pair, { local: 'prflx', remote: 'host' });

  const none = fakeLink([{ id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R', nominated: false, state: 'in-progress' }]);
  await Link.prototype.refreshPair.call(none);
  assert.equal(none.pair, undefined);
});

test('pairHint names the loopback-only host that a stock browser cannot pair with', async () => {
  const { pairHint, candidateAddress } = await import('../static/js/rtc.js');
  assert.equal(candidateAddress('candidate:0 1 UDP 2122252543 0b6b-4e.local 50322 typ host'), '0b6b-4e.local');
  assert.equal(candidateAddress('a=candidate:2878742611 1 udp 2130706431 127.0.0.1 57669 typ host ufrag x'), '127.0.0.1');
  assert.equal(candidateAddress('not a candidate'), '');
  // Stock Firefox against `serve --ice loopback`: mDNS names against 127.0.0.1 only.
  const h = pairHint(['0b6b-4e.local'], ['127.0.0.1', '127.0.0.1']);
  assert.match(h, /only loopback/);
  assert.match(h, /mDNS/);
  assert.match(h, /--ice local/);
  // A browser with a loopback candidate (Chromium's test flags), or a host off loopback: nothing in the way.
  assert.equal(pairHint(['127.0.0.1'], ['127.0.0.1']), '');
  assert.equal(pairHint(['0b6b-4e.local'], ['10.99.0.2']), '');
  assert.match(pairHint([], []), /neither side/);
});

/** A fake RTCDataChannel whose buffer the test drains by hand. */
class FakeChannel {
  constructor(label) {
    this.label = label;
    this.readyState = 'open';
    this.bufferedAmount = 0;
    this.sent = [];
  }
  send(b) {
    this.sent.push(b);
    this.bufferedAmount += b.byteLength;
  }
  /** The remote took n bytes: the buffer shrinks and bufferedamountlow fires below the threshold. */
  take(n) {
    this.bufferedAmount = Math.max(0, this.bufferedAmount - n);
    if (this.bufferedAmount <= this.bufferedAmountLowThreshold && this.onbufferedamountlow) this.onbufferedamountlow();
  }
  close() { this.readyState = 'closed'; }
}

class FakePeerConnection {
  createDataChannel(label) { return new FakeChannel(label); }
  close() {}
}

/** A Link over fake channels (answerer: it makes no offer). */
function fakeRTCLink(onClose) {
  const saved = globalThis.RTCPeerConnection;
  globalThis.RTCPeerConnection = FakePeerConnection;
  try {
    return new Link({ remote: 2, session: 1, offerer: false, signal: () => {}, onMessage: () => {}, onClose });
  } finally {
    globalThis.RTCPeerConnection = saved;
  }
}

test('a reliable send over the high-water mark waits in the backlog and goes, in order, as the buffer drains (a large snapshot streams)', () => {
  let closed = '';
  const l = fakeRTCLink((reason) => { closed = reason; });
  const dc = l.channels[RELIABLE];
  const frag = 16 << 10;
  const n = 4 * RELIABLE_HIGH_WATER / frag; // a 4 MiB snapshot, fragmented
  for (let i = 0; i < n; i++) {
    const b = new Uint8Array(frag);
    b[0] = i & 0xff;
    b[1] = i >> 8;
    assert.ok(l.send(RELIABLE, b), `fragment ${i} refused`);
  }
  assert.equal(closed, '', 'the link was closed for a full buffer');
  assert.ok(l.backlog.length > 0 && dc.sent.length < n, 'nothing was held back');
  for (let round = 0; l.backlog.length > 0; round++) {
    assert.ok(round < 100, 'the backlog never drained');
    dc.take(RELIABLE_HIGH_WATER);
  }
  assert.equal(dc.sent.length, n);
  dc.sent.forEach((b, i) => assert.equal(b[0] | (b[1] << 8), i, `fragment ${i} out of order`));
  assert.equal(l.stall, null);
  l.close();
});

test('a backlog that does not move for BACKLOG_STALL_MS, or past MAX_RELIABLE_BACKLOG, closes the link', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let closed = '';
  const l = fakeRTCLink((reason) => { closed = reason; });
  l.channels[RELIABLE].bufferedAmount = RELIABLE_HIGH_WATER + 1;
  assert.ok(l.send(RELIABLE, new Uint8Array(100)));
  t.mock.timers.tick(BACKLOG_STALL_MS - 1);
  assert.equal(closed, '');
  t.mock.timers.tick(2);
  assert.match(closed, /cannot keep up/);

  closed = '';
  const full = fakeRTCLink((reason) => { closed = reason; });
  full.channels[RELIABLE].bufferedAmount = RELIABLE_HIGH_WATER + 1;
  full.backlogBytes = MAX_RELIABLE_BACKLOG - 10;
  full.backlog.push(new Uint8Array(0));
  assert.equal(full.send(RELIABLE, new Uint8Array(100)), false);
  assert.match(closed, /backlog full/);
});
