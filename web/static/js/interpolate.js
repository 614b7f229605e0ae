// @ts-check
// Snapshot interpolation for remote entities: draw what the host said a little while ago, between
// the two values that bracket that moment, instead of jumping to each update as it lands.
//
// The host sends EntityUpdates every tick (50 ms by default) over an unreliable channel, so values
// arrive in steps and with jitter; one lost datagram is a longer step. Rendering at `now - delay`
// (the delay a little over one update interval plus the jitter) almost always has a newer value to
// move towards, which is how Source, Overwatch and most browser games render other players. Your
// own avatar is not interpolated: draw it from the world directly, it is your latest write.
//
// Times are the receiver's clock (performance.now() in a page): the host's writes carry no wall
// time, and the delay only has to cover the spacing of arrivals, which the receiver sees.
//
//   const interp = new Interpolator({ delay: 100 });
//   // every frame, for every remote entity:
//   interp.push(e, now, [x, y]);           // records the value when it changed
//   const [rx, ry] = interp.at(e, now) ?? [x, y];
//   interp.retain(seen);                   // forget entities that are gone

/**
 * @typedef {object} InterpolatorOptions
 * @property {number} [delay] how far behind the newest value to render, in ms (default 100: two
 *   50 ms host ticks; raise it on lossy links).
 * @property {number} [maxExtrapolate] how far past the newest value to extrapolate along the last
 *   velocity when no newer value has come, in ms (default 50; 0 holds the last value).
 * @property {number} [snapDistance] a step at least this long in any coordinate is a teleport: it is
 *   drawn at once, not slid across (default Infinity: never).
 * @property {number} [maxSamples] values kept per entity (default 16; at least 2).
 */

/** Defaults of {@link InterpolatorOptions}. */
export const INTERPOLATION_DEFAULTS = Object.freeze({
  delay: 100, maxExtrapolate: 50, snapDistance: Infinity, maxSamples: 16,
});

/**
 * One received value: t in ms, v its coordinates.
 * @typedef {{t: number, v: number[]}} Sample
 */

/**
 * Keeps a short history of each remote entity's coordinates and answers where to draw it.
 * @template K the key of an entity (an entity number, a string, …)
 */
export class Interpolator {
  /** @param {InterpolatorOptions} [opts] */
  constructor(opts = {}) {
    const o = { ...INTERPOLATION_DEFAULTS, ...opts };
    if (!(o.delay >= 0) || !(o.maxExtrapolate >= 0) || !(o.snapDistance > 0) || !(o.maxSamples >= 2)) {
      throw new RangeError(`Interpolator: bad options ${JSON.stringify(opts)}`);
    }
    this.delay = o.delay;
    this.maxExtrapolate = o.maxExtrapolate;
    this.snapDistance = o.snapDistance;
    this.maxSamples = Math.floor(o.maxSamples);
    /** @type {Map<K, Sample[]>} */
    this.tracks = new Map();
  }

  /**
   * Records v as key's value at time t, if it differs from the last recorded one (call it every
   * frame with what the world holds; unchanged values are not samples). Times must not go back.
   * A teleport (a step of snapDistance or more) clears the history, so the entity is drawn there
   * at once.
   * @param {K} key
   * @param {number} t
   * @param {number[]} v
   */
  push(key, t, v) {
    let s = this.tracks.get(key);
    if (!s) {
      this.tracks.set(key, [{ t, v: [...v] }]);
      return;
    }
    const last = s[s.length - 1];
    if (sameValue(last.v, v)) return;
    if (t < last.t) t = last.t;
    if (maxStep(last.v, v) >= this.snapDistance) {
      s.length = 0;
    } else if (t - last.t > this.delay) {
      // The first movement after a rest (or after a gap longer than the delay): slide from the
      // resting value over one delay starting now; measured from when the old value came, the
      // entity would jump most of the way at once.
      s.splice(0, s.length - 1);
      last.t = t - this.delay;
    }
    s.push({ t, v: [...v] });
    if (s.length > this.maxSamples) s.splice(0, s.length - this.maxSamples);
  }

  /**
   * Where to draw key at time now: its value at now - delay, linear between the two samples around
   * that moment; before the first sample, the first; after the last, the last extrapolated by at
   * most maxExtrapolate ms. Undefined for a key never pushed.
   * @param {K} key
   * @param {number} now
   * @returns {number[] | undefined}
   */
  at(key, now) {
    const s = this.tracks.get(key);
    if (!s || s.length === 0) return undefined;
    const t = now - this.delay;
    if (t <= s[0].t || s.length === 1) return [...s[0].v];
    const last = s[s.length - 1];
    if (t >= last.t) {
      const prev = s[s.length - 2];
      const ahead = Math.min(t - last.t, this.maxExtrapolate);
      if (ahead <= 0 || last.t === prev.t) return [...last.v];
      return lerp(prev.v, last.v, 1 + ahead / (last.t - prev.t));
    }
    // Find the first sample newer than t (the history is short: a linear scan from the end).
    let i = s.length - 1;
    while (s[i - 1].t > t) i--;
    const a = s[i - 1];
    const b = s[i];
    // Samples older than the one before t are no longer needed.
    if (i > 1) s.splice(0, i - 1);
    return lerp(a.v, b.v, b.t === a.t ? 1 : (t - a.t) / (b.t - a.t));
  }

  /**
   * Forgets every key not in keep (entities that were despawned or left the view).
   * @param {Set<K>} keep
   */
  retain(keep) {
    for (const k of this.tracks.keys()) {
      if (!keep.has(k)) this.tracks.delete(k);
    }
  }

  /** Forgets everything (after a migration or a reconnect, say). */
  clear() {
    this.tracks.clear();
  }
}

/**
 * @param {number[]} a
 * @param {number[]} b
 * @param {number} f
 * @returns {number[]}
 */
function lerp(a, b, f) {
  const out = new Array(b.length);
  for (let i = 0; i < b.length; i++) {
    const from = i < a.length ? a[i] : b[i];
    out[i] = from + (b[i] - from) * f;
  }
  return out;
}

/**
 * @param {number[]} a
 * @param {number[]} b
 */
function sameValue(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return false;
  }
  return true;
}

/**
 * The longest step in any coordinate (Infinity when the dimensions differ).
 * @param {number[]} a
 * @param {number[]} b
 */
function maxStep(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(b[i] - a[i]));
  return m;
}
