// The world's bounds in JS (worldlimits.js; Go's peer/world_limits.go): the replica's size and
// growth (crdt.js bytes, growth, appendSets) against its canonical stream, and the admission rule
// over the vectors Go's TestWorldLimitsVectors runs (testdata/peer/world_limits.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Replica, MessageType as MT } from '../static/js/crdt.js';
import { admitWorld, worldLimits, DEFAULT_WORLD_LIMITS } from '../static/js/worldlimits.js';
import { readJSON, Rng } from './helpers.js';

const vectors = readJSON('testdata/peer/world_limits.json');

test('bytes is the canonical stream\'s length, and a merge never adds more than growth said', () => {
  const pool = [new Uint8Array(0), new Uint8Array([1]), new Uint8Array([2, 3]), new Uint8Array([255, 255, 255])];
  for (let seed = 1; seed <= 30; seed++) {
    const rng = new Rng(seed);
    const r = new Replica({ appendRetention: 3 });
    for (let i = 0; i < 300; i++) {
      const version = rng.int(10) < 7 ? 0 : 1 + rng.int(3);
      const entity = version * 65536 + 512 + rng.int(5);
      const types = [MT.PutComponent, MT.PutComponent, MT.DeleteComponent, MT.AppendValue, MT.AppendValue, MT.DeleteEntity];
      const type = types[rng.int(types.length)];
      const m = { type, entity, component: 1 + rng.int(3), timestamp: rng.int(7), networkId: 0, data: type === MT.DeleteComponent || type === MT.DeleteEntity ? null : pool[rng.int(pool.length)] };
      const before = r.bytes;
      const g = r.growth(m);
      if (rng.int(15) === 0) r.forget(entity & 0xffff);
      else {
        r.merge(m);
        assert.ok(r.bytes - before <= g, `seed ${seed} step ${i}: grew ${r.bytes - before}, growth ${g}`);
      }
      assert.equal(r.bytes, r.appendState().length, `seed ${seed} step ${i}`);
    }
  }
});

test('worldLimits fills the defaults', () => {
  assert.deepEqual(worldLimits(), { ...DEFAULT_WORLD_LIMITS });
  assert.deepEqual(worldLimits({ appendSets: 3, roomBytes: 0 }), { ...DEFAULT_WORLD_LIMITS, appendSets: 3 });
});

test('admitWorld over the shared vectors (testdata/peer/world_limits.json)', () => {
  const l = worldLimits(vectors.limits);
  const r = new Replica();
  /** @type {Map<number, number>} */
  const used = new Map();
  vectors.steps.forEach((st, i) => {
    const n = i + 1;
    const type = { append: MT.AppendValue, put: MT.PutComponent, delete: MT.DeleteComponent }[st.op];
    assert.ok(type !== undefined, `step ${n}: op ${st.op}`);
    const data = type === MT.DeleteComponent ? null : new Uint8Array(st.len).fill(n & 0xff);
    const m = { type, entity: st.entity, component: st.component, timestamp: n, networkId: 0, data };
    const refusal = admitWorld(r, l, used.get(st.member) || 0, m);
    if (!refusal) {
      const before = r.bytes;
      r.merge(m);
      used.set(st.member, Math.max(0, (used.get(st.member) || 0) + r.bytes - before));
    }
    assert.equal(refusal ? refusal.reason : '', st.want, `step ${n} (${st.op} by ${st.member}): ${refusal && refusal.message}`);
    assert.equal(r.bytes, st.size, `step ${n}: size`);
  });
  for (const [k, want] of Object.entries(vectors.used)) assert.equal(used.get(Number(k)), want, `member ${k}'s account`);
});
