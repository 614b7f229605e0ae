// The browser member's fence over host messages against testdata/peer/fencing.json, the cases Go
// checks too (peer/fencing_vectors_test.go TestFencingVectors): signaling's announcements go to
// the peer's Fence (announce), host messages through MemberRole.admit on the member's host link,
// which counts every refusal. Every step of every vector is checked and each miss listed. A
// second test feeds the announcements to Peer.setHost, which filters them before the fence sees
// them, and checks that the fence still ends where the vectors say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Peer } from '../static/js/peer.js';
import { MemberRole } from '../static/js/member.js';
import { Game } from '../static/js/arena.js';
import { readJSON } from './helpers.js';

test('the member\'s fence: shared vectors (testdata/peer/fencing.json)', () => {
  const v = readJSON('testdata/peer/fencing.json');
  assert.ok(v.vectors.length > 0, 'no vectors');
  const misses = [];
  for (const c of v.vectors) {
    const p = new Peer({ app: new Game({ boxes: 0 }), kind: 'bot', log: () => {} });
    const member = new MemberRole(p);
    c.steps.forEach((s, i) => {
      const at = `${c.name} (${c.why}), step ${i + 1}`;
      let want = { term: p.fence.term, host: p.fence.host }; // a message never moves the fence
      if (s.do === 'announce') {
        p.fence.announce(s.term, s.host);
        want = s.fence;
      } else if (s.do === 'message') {
        const r = /** @type {any} */ ({ idx: s.from, term: s.term });
        member.hostLink = r;
        const fenced = p.count.fenced;
        const err = p.fence.accept(s.term, s.from);
        const got = err ? err.code : '';
        if (got !== s.want) misses.push(`${at}: message of term ${s.term} from ${s.from}: ${JSON.stringify(got)}, want ${JSON.stringify(s.want)}`);
        if (member.admit(r) !== !err || p.count.fenced - fenced !== (err ? 1 : 0)) {
          misses.push(`${at}: admit or status().fenced disagrees with accept (${JSON.stringify(got)})`);
        }
      } else {
        throw new Error(`${at}: unknown step ${s.do}`);
      }
      if (p.fence.term !== want.term || p.fence.host !== want.host) {
        misses.push(`${at}: fence (${p.fence.term}, ${p.fence.host}), want (${want.term}, ${want.host})`);
      }
    });
  }
  assert.deepEqual(misses, []);
});

test('setHost moves the fence as the shared vectors say', () => {
  const v = readJSON('testdata/peer/fencing.json');
  const misses = [];
  for (const c of v.vectors) {
    // A member in memory mode with no signaling: following a host makes a link that goes nowhere.
    const p = new Peer({ app: new Game({ boxes: 0 }), kind: 'bot', memory: true, log: () => {} });
    p.w.self = 1; // never announced: the vectors' hosts are 2 and up
    c.steps.forEach((s, i) => {
      if (s.do !== 'announce') return;
      p.step(() => p.setHost(s.term, s.host));
      if (p.fence.term !== s.fence.term || p.fence.host !== s.fence.host) {
        misses.push(`${c.name}, step ${i + 1}: setHost(${s.term}, ${s.host}) left the fence at (${p.fence.term}, ${p.fence.host}), want (${s.fence.term}, ${s.fence.host})`);
      }
    });
    p.stop();
  }
  assert.deepEqual(misses, []);
});
