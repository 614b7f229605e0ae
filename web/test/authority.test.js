// authority.js Fence: the cases of Go's TestAdmission "message" rows and TestFenceZero
// (authority/table_test.go), so that the browser member fences exactly as a Go one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Fence, Reject, AuthorityError } from '../static/js/authority.js';

const HOST = 1;
const ALICE = 2;
const TERM = 5;

test('fence: host messages seen by a peer whose fence is at (term 5, host)', () => {
  const tests = [
    { name: 'host/term-5', peer: HOST, term: 5, want: null },
    { name: 'host/term-4', peer: HOST, term: 4, want: Reject.StaleTerm },
    { name: 'host/term-0', peer: HOST, term: 0, want: Reject.StaleTerm },
    { name: 'host/term-6', peer: HOST, term: 6, want: Reject.FutureTerm },
    { name: 'alice/term-5', peer: ALICE, term: 5, want: Reject.NotHost },
    { name: 'alice/term-4', peer: ALICE, term: 4, want: Reject.StaleTerm },
    { name: 'alice/term-6', peer: ALICE, term: 6, want: Reject.FutureTerm },
    { name: 'alice/term-6/observed', peer: ALICE, term: 6, want: null, prep: (f) => f.observe(6, ALICE) },
    { name: 'host/term-5/after-term-6', peer: HOST, term: 5, want: Reject.StaleTerm, prep: (f) => f.observe(6, ALICE) },
    { name: 'host/term-6/alice-elected', peer: HOST, term: 6, want: Reject.NotHost, prep: (f) => f.observe(6, ALICE) },
    { name: 'host/term-5/older-observe-ignored', peer: HOST, term: 5, want: null, prep: (f) => { f.observe(3, ALICE); f.observe(5, ALICE); } },
  ];
  for (const tc of tests) {
    const f = new Fence();
    assert.ok(f.observe(TERM, HOST), 'a fresh fence takes term 5');
    if (tc.prep) tc.prep(f);
    const err = f.accept(tc.term, tc.peer);
    if (tc.want === null) {
      assert.equal(err, null, tc.name);
      continue;
    }
    assert.ok(err instanceof AuthorityError, tc.name);
    assert.equal(err.code, tc.want, tc.name);
    assert.equal(err.peer, tc.peer, tc.name);
    assert.equal(err.term, tc.term, tc.name);
    assert.equal(err.op, 'host message', tc.name);
  }
});

test('fence: a fresh fence accepts nothing; observe takes newer terms only', () => {
  const f = new Fence();
  assert.notEqual(f.accept(0, 0), null, 'a fresh fence accepted peer 0 at term 0');
  assert.equal(f.accept(1, 0).code, Reject.FutureTerm);
  assert.equal(f.observe(0, 7), false, 'observed term 0');
  assert.equal(f.observe(2, 7), true);
  assert.deepEqual([f.term, f.host], [2, 7]);
  assert.equal(f.observe(2, 8), false, 'a second host for term 2 was adopted');
  assert.equal(f.host, 7);
  assert.equal(f.accept(2, 7), null);
  assert.match(f.accept(1, 7).message, /host message from peer 7 at term 1 rejected: stale_term/);
});
