// The WebRTC link's selected-pair report (docs/protocol.md §4 "report": link) read from a fake
// RTCPeerConnection's getStats; no browser and no network are used.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Link } from '../static/js/rtc.js';

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
