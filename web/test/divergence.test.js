// divergence.js: what the inspector calls diverged. Replicas in play differ between reports; only
// a difference at rest, or at the same clock in successive polls, is divergence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DivergenceTracker, Verdict, REST_POLLS } from '../static/js/divergence.js';

const HOST = 1;
const M = 2;

/** One /api/rooms answer: a room whose host and member report {clock, hash} at term 1 (or term). */
function poll(host, member, { synced = true, term = 1 } = {}) {
  return [{
    room: 'arena', term: 1, host: HOST,
    members: [
      { peerIndex: HOST, peerId: 'h/1', kind: 'host', synced: true, replica: { term: 1, clock: host.clock, entities: 9, hash: host.hash } },
      { peerIndex: M, peerId: 'm/2', kind: 'browser', synced, replica: member && { term, clock: member.clock, entities: 9, hash: member.hash } },
    ],
  }];
}

const verdict = (tr, rooms) => tr.update(rooms).get('arena').get(M);

test('replicas that differ while the room moves are settling, never diverged', () => {
  const tr = new DivergenceTracker();
  for (let i = 0; i < 20; i++) {
    // The host is ahead by a few writes each poll; the member trails it with another hash.
    const v = verdict(tr, poll({ clock: 100 + 20 * i, hash: `h${i}` }, { clock: 95 + 20 * i, hash: `m${i}` }));
    assert.equal(v, Verdict.Settling, `poll ${i}`);
  }
});

test('a member that moves alone (its avatar) while the host rests is settling', () => {
  const tr = new DivergenceTracker();
  for (let i = 0; i < 10; i++) {
    assert.equal(verdict(tr, poll({ clock: 100, hash: 'h' }, { clock: 101 + i, hash: `m${i}` })), Verdict.Settling, `poll ${i}`);
  }
});

test('replicas that differ at rest are diverged once both have rested', () => {
  const tr = new DivergenceTracker();
  const got = [];
  for (let i = 0; i < REST_POLLS + 1; i++) got.push(verdict(tr, poll({ clock: 100, hash: 'h' }, { clock: 90, hash: 'm' })));
  assert.deepEqual(got, [...Array(REST_POLLS - 1).fill(Verdict.Settling), Verdict.Diverged, Verdict.Diverged]);
  // Repaired (anti-entropy): equal again.
  assert.equal(verdict(tr, poll({ clock: 100, hash: 'h' }, { clock: 100, hash: 'h' })), Verdict.Equal);
});

test('hashes at the same clock that differ in two successive polls are diverged', () => {
  const tr = new DivergenceTracker({ restPolls: 100 });
  assert.equal(verdict(tr, poll({ clock: 50, hash: 'h1' }, { clock: 50, hash: 'm1' })), Verdict.Settling, 'once may be a race of the two reports');
  assert.equal(verdict(tr, poll({ clock: 60, hash: 'h2' }, { clock: 60, hash: 'm2' })), Verdict.Diverged);
  // A poll at different clocks starts the count again.
  assert.equal(verdict(tr, poll({ clock: 70, hash: 'h3' }, { clock: 65, hash: 'm3' })), Verdict.Settling);
  assert.equal(verdict(tr, poll({ clock: 80, hash: 'h4' }, { clock: 80, hash: 'm4' })), Verdict.Settling);
});

test('equal hashes are equal; an unsynced member or another term is not compared', () => {
  const tr = new DivergenceTracker();
  assert.equal(verdict(tr, poll({ clock: 5, hash: 'h' }, { clock: 5, hash: 'h' })), Verdict.Equal);
  for (let i = 0; i < REST_POLLS + 1; i++) {
    assert.equal(verdict(tr, poll({ clock: 5, hash: 'h' }, { clock: 1, hash: 'x' }, { synced: false })), Verdict.NotCompared);
  }
  for (let i = 0; i < REST_POLLS + 1; i++) {
    assert.equal(verdict(tr, poll({ clock: 5, hash: 'h' }, { clock: 1, hash: 'x' }, { term: 2 })), Verdict.NotCompared);
  }
  assert.equal(verdict(tr, poll({ clock: 5, hash: 'h' }, null)), Verdict.NotCompared);
  const v = new DivergenceTracker().update(poll({ clock: 5, hash: 'h' }, { clock: 5, hash: 'h' })).get('arena');
  assert.equal(v.get(HOST), Verdict.Equal);
});
