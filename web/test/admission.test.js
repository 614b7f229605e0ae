// The browser host's admission rules over the vectors Go's TestAdmissionVectors runs
// (testdata/peer/admission.json; docs/protocol.md §5, "Session: steady state" and "Session:
// limits"): authority.js AuthorityTable, and the HostRole methods (restamp.js, host.js) that
// decide stamps, strikes, application traffic and the limits of a correction, each called on a
// host whose state the vector gives.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { AuthorityTable, KIND_HOST, KIND_AVATAR, KIND_LOCK, encodeRecord } from '../static/js/authority.js';
import { HostRole, HostMember } from '../static/js/host.js';
import { Replica, MessageType as MT } from '../static/js/crdt.js';
import { readJSON, fromHex } from './helpers.js';

const vectors = readJSON('testdata/peer/admission.json');
const HOST = 1;
const MEMBER = 2;

/** @param {{kind: string | number, peer: number}} r */
function recordOf(r) {
  const kinds = { host: KIND_HOST, avatar: KIND_AVATAR, lock: KIND_LOCK };
  return { kind: typeof r.kind === 'number' ? r.kind : kinds[r.kind], peer: r.peer };
}

/** Runs fn; returns the code it was refused with, or ''. */
function refusal(fn) {
  try {
    fn();
    return '';
  } catch (err) {
    if (!err.code) throw err;
    return err.code;
  }
}

/** @param {{entity: number, from: number}[]} trs */
const releasedOf = (trs) => trs.map((t) => [t.entity, t.from]);

/** Member MEMBER as it first links, with a fresh conduct. */
function newMember() {
  return new HostMember(/** @type {any} */ ({ idx: MEMBER }), { budget: 0, budgetAt: null, strikes: 0, strikeAt: null, used: 0 });
}

/** A clock the test moves: performance.now, which loop.js now() reads. */
function mockClock(t) {
  const clock = { t: 0 };
  mock.method(performance, 'now', () => clock.t);
  t.after(() => mock.restoreAll());
  return clock;
}

/** A host (HostRole's own methods on the state they read) with the world of a vector. */
function vectorHost(clock = 0) {
  const count = { offenders: 0, dropped: 0, refused: 0, refusedBy: {} };
  const host = Object.create(HostRole.prototype);
  Object.assign(host, {
    p: { count, log() {}, send() {}, members: new Map() },
    w: { clock, self: HOST, byNumber: new Map(), ents: new Map(), r: new Replica(), authorityRecord(e) { const i = this.ents.get(e); return i ? i.auth : { kind: KIND_HOST, peer: 0 }; },
      avatarOf(p) { for (const [e, i] of this.ents) if (i.auth.kind === KIND_AVATAR && i.auth.peer === p) return e; return undefined; } },
    refuseLog: 0,
    heldAtStart: new Set(),
    present: new Set(),
    survivors: new Map(),
  });
  return host;
}

test('the authority table gives the outcomes of the shared vectors', () => {
  for (const c of vectors.authority) {
    const tab = new AuthorityTable(HOST);
    c.steps.forEach((s, i) => {
      const where = `${c.name} (${c.why}), step ${i + 1}: ${s.do} by ${s.peer} on ${s.entity}`;
      let tr = null;
      let got = '';
      switch (s.do) {
        case 'write': got = refusal(() => tab.admitWrite(s.peer, s.entity)); break;
        case 'correct': got = refusal(() => tab.admitCorrection(s.peer, s.entity, s.relayed)); break;
        case 'lock': got = refusal(() => { tr = tab.requestLock(s.peer, s.entity, s.at); }); break;
        case 'grant': got = refusal(() => { tr = tab.grant(s.peer, s.entity, s.at); }); break;
        case 'relinquish': got = refusal(() => { tr = tab.relinquish(s.peer, s.entity); }); break;
        case 'avatar': got = refusal(() => { tr = tab.setAvatar(s.entity, s.peer); }); break;
        case 'restore': got = refusal(() => tab.restore(s.entity, recordOf(s), s.at)); break;
        case 'touch': tab.touch(s.peer, s.at); break;
        case 'despawn': tab.despawn(s.entity); break;
        case 'expire': assert.deepEqual(releasedOf(tab.expire(s.at)), s.released, where); break;
        case 'leave': {
          const { avatars, released } = tab.leave(s.peer);
          assert.deepEqual([avatars, releasedOf(released)], [s.avatars, s.released], where);
          break;
        }
        default: assert.fail(`${where}: unknown step`);
      }
      assert.equal(got, s.want ?? '', where);
      if (tr && got === '') assert.deepEqual(tr, { entity: s.entity, from: s.from, to: s.to }, where);
    });
  }
});

test('the skew budget gives the outcomes of the shared vectors', (t) => {
  const clock = mockClock(t);
  for (const c of vectors.stamps) {
    const host = vectorHost(c.clock);
    const hm = newMember();
    c.steps.forEach((s, i) => {
      clock.t = s.at;
      assert.equal(host.stampOK(hm, BigInt(s.ts)), s.want, `${c.name} (${c.why}), step ${i + 1}: stamp ${s.ts} at ${s.at} ms`);
    });
  }
});

test('strikes give the outcomes of the shared vectors', (t) => {
  const clock = mockClock(t);
  for (const c of vectors.strikes) {
    const host = vectorHost();
    const hm = newMember();
    c.steps.forEach((s, i) => {
      clock.t = s.at;
      for (let k = 0; k < s.n; k++) host.strike(hm, 'vector');
      assert.equal(hm.refused, s.dropped, `${c.name} (${c.why}), step ${i + 1}`);
    });
  }
});

test('the application budget gives the outcomes of the shared vectors', (t) => {
  const clock = mockClock(t);
  for (const c of vectors.app) {
    const host = vectorHost();
    const hm = newMember();
    c.steps.forEach((s, i) => {
      clock.t = s.at;
      let allowed = 0;
      for (let k = 0; k < s.n; k++) if (host.appAllowed(hm)) allowed++;
      assert.equal(allowed, s.allowed, `${c.name} (${c.why}), step ${i + 1}`);
    });
  }
});

test('the limits of a correction give the outcomes of the shared vectors', (t) => {
  mockClock(t);
  const types = { put: MT.PutComponent, put_network: MT.PutComponentNetwork, delete_entity: MT.DeleteEntity, delete_entity_network: MT.DeleteEntityNetwork };
  const id = (number, version) => (version * 65536 + number) >>> 0;
  for (const c of vectors.corrections) {
    const host = vectorHost(10000);
    const w = host.w;
    for (const l of c.live || []) {
      const e = id(l.entity, l.version);
      w.byNumber.set(l.entity, e);
      w.ents.set(e, { auth: l.record ? recordOf(l.record) : { kind: KIND_HOST, peer: 0 } });
    }
    for (const d of c.deleted || []) w.r.merge({ type: MT.DeleteEntity, entity: id(d.entity, d.version), component: 0, timestamp: 0, networkId: 0, data: null });
    for (const [n, v] of c.heldAtStart || []) host.heldAtStart.add(id(n, v));
    for (const idx of c.earlier || []) host.present.add(idx);
    const msg = c.message;
    assert.ok(types[msg.type] !== undefined, `${c.name}: message type ${msg.type}`);
    let data = null;
    if (msg.record) data = encodeRecord(recordOf(msg.record));
    else if (msg.data) data = fromHex(msg.data);
    const m = { type: types[msg.type], entity: id(msg.entity, msg.version), component: msg.component || 0, timestamp: msg.ts || 0, networkId: 0, data };
    const hm = newMember();
    hm.avatarAfterAnswer = !!c.waiting;
    const got = host.admitCorrection(hm, m, !!c.relayed, !!c.lacked);
    assert.equal(got ? got.why : '', c.want, `${c.name} (${c.why}): ${got && got.reason}`);
  }
});
