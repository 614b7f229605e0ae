// The interpolation helper: values drawn between the samples around now - delay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Interpolator, INTERPOLATION_DEFAULTS } from '../static/js/interpolate.js';

/**
 * @param {number[] | undefined} got
 * @param {number[]} want
 */
function near(got, want, eps = 1e-9) {
  assert.ok(got, 'no value');
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) <= eps, `got ${got}, want ${want}`);
}

test('renders delay ms behind, linear between the samples around that moment', () => {
  const ip = new Interpolator({ delay: 100, maxExtrapolate: 0 });
  // An entity moving 10 units per 50 ms tick, sampled as the updates land.
  for (let i = 0; i <= 10; i++) ip.push('a', 1000 + 50 * i, [10 * i, -10 * i]);
  near(ip.at('a', 1300), [40, -40]); // t = 1200: sample 4 exactly
  near(ip.at('a', 1325), [45, -45]); // halfway between samples 4 and 5
  near(ip.at('a', 1349), [49.8, -49.8]);
  near(ip.at('a', 1500), [80, -80]);
  // Past the newest sample with maxExtrapolate 0: hold it.
  near(ip.at('a', 1700), [100, -100]);
  // Before the first sample: the first.
  const early = new Interpolator({ delay: 100 });
  early.push('b', 1000, [1]);
  early.push('b', 1050, [2]);
  near(early.at('b', 1020), [1]);
  assert.equal(early.at('nobody', 1000), undefined);
});

test('a lost update is bridged, not stepped over', () => {
  const ip = new Interpolator({ delay: 100 });
  ip.push('a', 0, [0]);
  ip.push('a', 50, [10]);
  // The update at 100 is lost; the one at 150 lands.
  ip.push('a', 150, [30]);
  near(ip.at('a', 200), [20]); // t = 100, between 50 → 10 and 150 → 30
});

test('extrapolates at most maxExtrapolate ms along the last velocity, then holds', () => {
  const ip = new Interpolator({ delay: 100, maxExtrapolate: 50 });
  ip.push('a', 0, [0]);
  ip.push('a', 50, [10]);
  near(ip.at('a', 170), [14]); // t = 70: 20 ms past the last sample at 0.2/ms
  near(ip.at('a', 400), [20]); // capped at 50 ms
});

test('values that do not change are not samples; a move after a rest slides over one delay', () => {
  const ip = new Interpolator({ delay: 100, maxExtrapolate: 0 });
  ip.push('a', 0, [5, 5]);
  for (let t = 16; t < 5000; t += 16) ip.push('a', t, [5, 5]);
  assert.equal(ip.tracks.get('a')?.length, 1);
  ip.push('a', 5000, [15, 5]);
  near(ip.at('a', 5000), [5, 5]); // starts from where it rested
  near(ip.at('a', 5050), [10, 5]); // halfway through the delay
  near(ip.at('a', 5100), [15, 5]);
});

test('a teleport is drawn at once', () => {
  const ip = new Interpolator({ delay: 100, snapDistance: 500 });
  ip.push('a', 0, [0]);
  ip.push('a', 50, [10]);
  ip.push('a', 100, [9000]);
  near(ip.at('a', 110), [9000]);
});

test('history is bounded, times never go back, retain forgets the gone', () => {
  const ip = new Interpolator({ delay: 100, maxSamples: 4 });
  for (let i = 0; i < 100; i++) ip.push(i % 3, i * 10, [i]);
  for (const s of ip.tracks.values()) assert.ok(s.length <= 4);
  ip.push(0, 5, [12345]); // an earlier time is taken as the last one's
  const s0 = ip.tracks.get(0) ?? [];
  assert.ok(s0[s0.length - 1].t >= s0[s0.length - 2].t);
  ip.retain(new Set([1]));
  assert.deepEqual([...ip.tracks.keys()], [1]);
  ip.clear();
  assert.equal(ip.tracks.size, 0);
});

test('bad options are refused; defaults documented', () => {
  assert.throws(() => new Interpolator({ delay: -1 }), RangeError);
  assert.throws(() => new Interpolator({ maxSamples: 1 }), RangeError);
  assert.throws(() => new Interpolator({ snapDistance: 0 }), RangeError);
  assert.equal(INTERPOLATION_DEFAULTS.delay, 100);
  assert.equal(new Interpolator().maxSamples, 16);
});
