// A signal signaling refused as recipient_busy is sent again by the browser peer, as Go's peer
// does (peer/resend.go, TestShedOfferSentAgain; docs/protocol.md §4 "Signal budgets"): the same
// link and session, after a jittered pause, at most MAX_RESENDS times, and never once the link is
// up. The signaling client is a recorder; the link is an in-page MemoryLink; timers are mocked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Peer } from '../static/js/peer.js';
import { Game } from '../static/js/arena.js';
import { MemoryLink } from '../static/js/rtc.js';
import { RESEND_PAUSE_MS, MAX_RESEND_PAUSE_MS, MAX_RESENDS } from '../static/js/links.js';

const SELF = 2;
const HOST = 1;
const SESSION = 7;

/** A member peer whose signals go to a recorder instead of a server. */
function newMember() {
  const p = new Peer({ app: new Game({ boxes: 1 }), kind: 'browser', log: () => {} });
  p.w.self = SELF;
  const signals = [];
  p.sig = /** @type {any} */ ({ signal: (to, pl) => { signals.push({ to, ...pl }); return true; }, close: () => {} });
  return { p, signals };
}

/** The refusal signaling sends the sender of a signal it did not relay. */
function busy(signal, session = SESSION) {
  return { v: 1, type: 'error', code: 'recipient_busy', message: 'recipient busy', peerIndex: HOST, signal, session };
}

test('an offer refused recipient_busy is sent again, the same description and session, after the pause', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { p, signals } = newMember();
  const r = p.connect(HOST, SESSION, true, true);
  await Promise.resolve(); // the MemoryLink's offer goes out in a microtask
  assert.equal(signals.length, 1);
  const offer = signals[0];
  assert.equal(offer.kind, 'offer');

  p.handleSignaling(busy('offer'));
  assert.equal(p.count.signalsShed, 1);
  assert.equal(signals.length, 1, 'sent again at once');
  t.mock.timers.tick(RESEND_PAUSE_MS * 1.5 + 1);
  assert.equal(signals.length, 2, 'not sent again after the pause');
  assert.deepEqual(signals[1], offer);
  assert.equal(p.count.signalsResent, 1);
  assert.equal(r.resends, 1);

  // A refusal of another session's signal (a link since replaced) is counted and not acted on.
  p.handleSignaling(busy('offer', SESSION + 1));
  t.mock.timers.tick(MAX_RESEND_PAUSE_MS * 2);
  assert.equal(signals.length, 2);
  assert.equal(p.count.signalsShed, 2);
  p.stop();
});

test('resends stop at MAX_RESENDS, and a link that is up sends nothing again', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { p, signals } = newMember();
  const r = p.connect(HOST, SESSION, true, true);
  await Promise.resolve();
  for (let i = 0; i < MAX_RESENDS + 3; i++) {
    p.handleSignaling(busy('offer'));
    t.mock.timers.tick(MAX_RESEND_PAUSE_MS * 1.5 + 1);
  }
  assert.equal(signals.length, 1 + MAX_RESENDS, 'resent past MAX_RESENDS, or not as often');
  assert.ok(signals.every((s) => s.kind === 'offer' && s.session === SESSION));

  const { p: p2, signals: s2 } = newMember();
  const r2 = p2.connect(HOST, SESSION, true, true);
  await Promise.resolve();
  p2.handleSignaling(busy('offer'));
  r2.ready = true; // the link came up during the pause (the remote got the offer after all)
  t.mock.timers.tick(MAX_RESEND_PAUSE_MS * 2);
  assert.equal(s2.length, 1, 'a ready link sent its offer again');
  assert.equal(p2.count.signalsResent, 0);
  p.stop();
  p2.stop();
  assert.ok(r.link && r2.link);
});

test('a link resends its description and candidates for a refused description, only its candidates for a refused candidate', () => {
  const out = [];
  const l = new MemoryLink({ remote: HOST, session: SESSION, offerer: false, signal: (pl) => out.push(pl), onMessage: () => {} });
  const answer = { kind: 'answer', sdp: 'memory:x', session: SESSION };
  const cands = [1, 2].map((i) => ({ kind: 'candidate', candidate: { candidate: `c${i}` }, session: SESSION }));
  l.signalOut(answer);
  for (const c of cands) l.signalOut(c);
  out.length = 0;

  assert.ok(l.resend('candidate'));
  assert.deepEqual(out, cands);
  out.length = 0;
  assert.ok(l.resend('answer'));
  assert.deepEqual(out, [answer, ...cands]);
  assert.equal(l.sent.length, 3, 'a resend grew what is kept');

  out.length = 0;
  l.ready = true;
  assert.equal(l.resend('answer'), false);
  assert.deepEqual(out, []);
  assert.equal(l.sent.length, 0, 'a ready link keeps its signals');
  l.close();
});
