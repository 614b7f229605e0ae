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
