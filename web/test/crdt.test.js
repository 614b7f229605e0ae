// The ADR-117 replica against the @dcl/ecs differential vectors, the Go cross-language vectors
// (testdata/crdt/hashes.json), hand-made rules and randomized inputs; the set hash (fnv.js) against
// BigInt references and the incremental hash and digests against a from-scratch sum.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as crdt from '../static/js/crdt.js';
import { ProtocolError } from '../static/js/netmsg.js';
import { fnv1a64, FNV_OFFSET, fmix64, elementHash, elementHashAdd, u64Add, u64Sub, u64Array, u64Value } from '../static/js/fnv.js';
import { readJSON, fromHex, toHex, hex16, Rng } from './helpers.js';

const { MessageType: MT, Replica } = crdt;
const dcl = readJSON('crdt/testdata/dcl/vectors.json');
const cross = readJSON('testdata/crdt/hashes.json');

const ORDERS = 24;
const M64 = (1n << 64n) - 1n;

/** BigInt reference of MurmurHash3 fmix64. */
function refFmix64(x) {
  x &= M64;
  x ^= x >> 33n;
  x = (x * 0xff51afd7ed558ccdn) & M64;
  x ^= x >> 33n;
  x = (x * 0xc4ceb9fe1a85ec53n) & M64;
  x ^= x >> 33n;
  return x;
}

/** BigInt reference of FNV-1a 64, one BigInt step per byte. */
function refFnv(bytes) {
  let h = FNV_OFFSET;
  for (const x of bytes) h = ((h ^ BigInt(x)) * 0x100000001b3n) & M64;
  return h;
}

/**
 * The set hash of a canonical stream computed from scratch, the definition of docs/protocol.md
 * §3: the sum mod 2⁶⁴ of elementHash over its messages (elementHash is checked against the BigInt
 * reference by its own test).
 */
function setHash(stream) {
  let sum = 0n;
  for (let off = 0; off < stream.length;) {
    const { n } = crdt.decodeMessage(stream, off);
    sum = (sum + elementHash(stream, off, off + n)) & M64;
    off += n;
  }
  return sum;
}

/** Delivers msgs into a new replica in a random order, some twice, some stray duplicates. */
function deliver(rng, msgs, cfg) {
  const r = new Replica(cfg);
  const order = rng.shuffle([...msgs.keys()]);
  for (const i of order) {
    for (let k = 1 + rng.int(2); k > 0; k--) r.merge(msgs[i]);
    if (rng.int(5) === 0) r.merge(msgs[rng.int(msgs.length)]);
  }
  return r;
}

function protocolError(fn) {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ProtocolError, `want ProtocolError, got ${err && err.stack}`);
    return err;
  }
  assert.fail('no error');
}

test('fnv1a64 matches known values', () => {
  assert.equal(fnv1a64(new Uint8Array(0)), FNV_OFFSET);
  assert.equal(fnv1a64(new TextEncoder().encode('a')), 0xaf63dc4c8601ec8cn);
  assert.equal(fnv1a64(new TextEncoder().encode('foobar')), 0x85944171f73967e8n);
  // Continuing a hash equals hashing the concatenation.
  const rng = new Rng(1);
  const a = rng.bytes(100);
  const b = rng.bytes(57);
  const ab = new Uint8Array(157);
  ab.set(a);
  ab.set(b, 100);
  assert.equal(fnv1a64(b, fnv1a64(a)), fnv1a64(ab));
  // Against a BigInt reference on random input.
  let h = FNV_OFFSET;
  for (const x of ab) h = ((h ^ BigInt(x)) * 0x100000001b3n) & 0xffffffffffffffffn;
  assert.equal(fnv1a64(ab), h);
  const all = new Uint8Array(256).map((_, i) => i);
  h = FNV_OFFSET;
  for (const x of all) h = ((h ^ BigInt(x)) * 0x100000001b3n) & 0xffffffffffffffffn;
  assert.equal(fnv1a64(all), h);
});

test('@dcl/ecs vector messages decode and re-encode exactly', async (t) => {
  assert.ok(dcl.messages.length > 20);
  for (const v of dcl.messages) {
    await t.test(v.name, () => {
      const wire = fromHex(v.hex);
      const { m, n } = crdt.decodeMessage(wire);
      assert.equal(n, wire.length);
      assert.equal(m.type, v.type);
      assert.equal(m.entity, v.entity);
      assert.equal(m.component, v.component);
      assert.equal(m.timestamp, v.timestamp);
      assert.equal(m.networkId, v.networkId);
      assert.equal(m.data === null ? null : toHex(m.data), v.data);
      const want = wire.slice();
      if (m.type === MT.DeleteEntityNetwork && want[0] === 12) want[0] = 16; // the legacy length is read, never written
      assert.equal(toHex(crdt.encodeMessage(m)), toHex(want));
      assert.equal(crdt.messageSize(m), want.length);
    });
  }
});

test(`@dcl/ecs scenarios converge to their state in ${ORDERS} orders with duplicates`, async (t) => {
  assert.ok(dcl.scenarios.length > 20);
  for (const sc of dcl.scenarios) {
    await t.test(sc.name, () => {
      const msgs = sc.messages.map((h) => {
        const wire = fromHex(h);
        const { m, n } = crdt.decodeMessage(wire);
        assert.equal(n, wire.length);
        return m;
      });
      const rng = new Rng(sc.seed * 7919 + 1);
      let hash;
      for (let k = 0; k < ORDERS; k++) {
        const r = deliver(rng, msgs);
        assert.deepEqual(r.stateJSON(), sc.state, `order ${k}`);
        if (k === 0) hash = r.hash();
        else assert.equal(r.hash(), hash, `order ${k}: hash differs`);
      }
      const stream = fromHex(sc.messages.join(''));
      const r = new Replica();
      r.mergeStream(stream);
      assert.equal(r.hash(), hash, 'mergeStream of the scenario');
    });
  }
});

test('cross-language vectors: Go and JS compute identical state, hash, digests, corrections', async (t) => {
  const byName = new Map(dcl.scenarios.map((s) => [s.name, s]));
  let dclCases = 0;
  for (const c of cross.cases) {
    await t.test(c.name, () => {
      let stream;
      if (c.source === 'dcl') {
        const sc = byName.get(c.name);
        assert.ok(sc, `no @dcl/ecs scenario named ${c.name}`);
        stream = fromHex(sc.messages.join(''));
        dclCases++;
      } else {
        assert.equal(c.source, 'random');
        stream = fromHex(c.messages);
      }
      const r = new Replica();
      r.mergeStream(stream);
      assert.equal(r.clock, c.clock, 'clock');
      const state = r.appendState();
      assert.equal(toHex(state), c.state, 'appendState');
      assert.equal(hex16(r.hash()), c.hash, 'hash');
      assert.equal(r.hash(), setHash(state));
      const d256 = r.bucketDigests(256);
      assert.equal(d256.length, 256);
      for (let b = 0; b < 256; b++) {
        // Go omits the buckets whose digest is 0 (empty ones).
        assert.equal(hex16(d256[b]), c.digests256[String(b)] ?? '0000000000000000', `bucket ${b}`);
      }
      assert.equal(d256.reduce((a, x) => (a + x) & M64, 0n), r.hash(), 'the digests add up to the hash');
      assert.deepEqual([...r.bucketDigests(7)].map(hex16), c.digests7);
      assert.equal(toHex(r.bucketState(5, 7)), c.bucket5of7);
      assert.deepEqual(r.stateJSON(), c.stateJSON);
      assert.equal(r.bucketDigests(1)[0], r.hash());
      if (c.source === 'random') {
        const msgs = [...crdt.readStream(stream)];
        const corr = [];
        for (const m of msgs) corr.push(r.appendCorrection(m));
        assert.equal(corr.map(toHex).join(''), c.corrections ?? '', 'corrections');
        const rng = new Rng(c.messages.length);
        for (let k = 0; k < 6; k++) assert.equal(toHex(deliver(rng, msgs).appendState()), c.state, `order ${k}`);
      }
      // The canonical stream rebuilds the same replica.
      const again = new Replica();
      again.mergeStream(state);
      assert.equal(toHex(again.appendState()), c.state);
    });
  }
  assert.equal(dclCases, dcl.scenarios.length, 'every @dcl/ecs scenario has a Go hash');
});

test('state hash golden (docs/protocol.md §3)', () => {
  const r = new Replica();
  r.merge({ type: MT.DeleteEntity, entity: 513 });
  r.merge({ type: MT.PutComponent, entity: 512, component: 1, timestamp: 1, data: Uint8Array.of(1) });
  r.merge({ type: MT.DeleteComponent, entity: 512, component: 2, timestamp: 2 });
  r.merge({ type: MT.AppendValue, entity: 512, component: 3, timestamp: 3, data: Uint8Array.of(0xff) });
  assert.equal(
    toHex(r.appendState()),
    '0c0000000300000001020000' +
      '19000000010000000002000001000000010000000100000001' +
      '1400000002000000000200000200000002000000' +
      '190000000400000000020000030000000300000001000000ff',
  );
  // Element hashes of the four messages, then their sum (crdt.TestHashGolden).
  const state = r.appendState();
  const elems = [];
  for (let off = 0; off < state.length;) {
    const { n } = crdt.decodeMessage(state, off);
    elems.push(elementHash(state, off, off + n));
    off += n;
  }
  assert.deepEqual(elems, [0x7ce2255786bcb4f3n, 0x5d5e04077e1061cdn, 0xbf557037860aff7dn, 0x80880e599274f22an]);
  assert.equal(r.hash(), 0x1a1da7f01d4d0867n);
  assert.deepEqual([...r.bucketDigests(2)], [(0x1a1da7f01d4d0867n - 0x7ce2255786bcb4f3n) & M64, 0x7ce2255786bcb4f3n]);
  assert.deepEqual([...r.bucketDigests(1)], [0x1a1da7f01d4d0867n]);
  assert.equal(new Replica().hash(), 0n);
  assert.deepEqual([...new Replica().bucketDigests(3)], [0n, 0n, 0n]);
  // The returned digests are the caller's: changing them changes nothing in the replica.
  const d = r.bucketDigests(2);
  d[0] = 5n;
  assert.equal(r.bucketDigests(2)[0], (0x1a1da7f01d4d0867n - 0x7ce2255786bcb4f3n) & M64);
  // Deleting everything of 512 leaves the DELETE_ENTITY of 513 and its 512 v0 counterpart.
  r.deleteEntity(512);
  const del512 = elementHash(crdt.encodeMessage({ type: MT.DeleteEntity, entity: 512 }));
  assert.equal(r.hash(), (0x7ce2255786bcb4f3n + del512) & M64);
  assert.deepEqual([...r.bucketDigests(2)], [del512, 0x7ce2255786bcb4f3n]);
});

test('fmix64 and the element hash match BigInt references', () => {
  for (const x of [0n, 1n, M64, 1n << 63n, 0xffffffffn, 1n << 32n, 0xff51afd7ed558ccdn, 0xc4ceb9fe1a85ec53n]) {
    assert.equal(fmix64(x), refFmix64(x), hex16(x));
  }
  const rng = new Rng(99);
  for (let i = 0; i < 20000; i++) {
    // Random words, sometimes with long runs of 0 or 1 bits (carries across the 16-bit limbs).
    let hi = rng.next();
    let lo = rng.next();
    if (rng.int(4) === 0) lo = rng.int(2) ? lo | 0xffff0000 : lo & 0xffff;
    if (rng.int(4) === 0) hi = rng.int(2) ? 0xffffffff : 0;
    const x = (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
    assert.equal(fmix64(x), refFmix64(x), hex16(x));
  }
  assert.equal(fmix64(-1n), refFmix64(M64), 'taken mod 2^64');
  for (let i = 0; i < 300; i++) {
    const b = rng.bytes(rng.int(70));
    const start = rng.int(b.length + 1);
    const end = start + rng.int(b.length - start + 1);
    const want = refFmix64(refFnv(b.subarray(start, end)));
    assert.equal(elementHash(b, start, end), want);
    // elementHashAdd accumulates mod 2^64 into a (high, low) pair.
    const acc = new Uint32Array(4);
    const base = (BigInt(rng.next()) << 32n) | BigInt(rng.next());
    acc[2] = Number(base >> 32n);
    acc[3] = Number(base & 0xffffffffn);
    elementHashAdd(acc, 1, b, start, end);
    assert.equal(u64Value(acc, 1), (base + want) & M64);
    assert.equal(u64Value(acc, 0), 0n, 'the other pair is untouched');
  }
});

test('u64 pair sums carry and borrow between the halves', () => {
  const rng = new Rng(5);
  const pick = () => {
    switch (rng.int(4)) {
      case 0:
        return M64 - BigInt(rng.int(3));
      case 1:
        return BigInt(rng.int(3)) + (BigInt(rng.int(2)) << 32n) + (rng.int(2) ? 0xffffffffn : 0n);
      default:
        return (BigInt(rng.next()) << 32n) | BigInt(rng.next());
    }
  };
  const set = (p, i, x) => {
    p[2 * i] = Number(x >> 32n);
    p[2 * i + 1] = Number(x & 0xffffffffn);
  };
  for (let i = 0; i < 2000; i++) {
    const a = pick();
    const b = pick();
    const p = new Uint32Array(4);
    set(p, 0, a);
    set(p, 1, b);
    u64Add(p, 0, p, 1);
    assert.equal(u64Value(p, 0), (a + b) & M64);
    set(p, 0, a);
    u64Sub(p, 0, p, 1);
    assert.equal(u64Value(p, 0), (a - b) & M64);
  }
  const p = new Uint32Array([0x01234567, 0x89abcdef, 0xffffffff, 0]);
  assert.deepEqual([...u64Array(p, 2)], [0x0123456789abcdefn, 0xffffffff00000000n]);
});

test('decoder errors follow Go (code and offset of the message)', async (t) => {
  const u32s = (...xs) => {
    const b = new Uint8Array(4 * xs.length);
    const dv = new DataView(b.buffer);
    xs.forEach((x, i) => dv.setUint32(4 * i, x, true));
    return b;
  };
  const cases = [
    ['short header', Uint8Array.of(1, 2, 3), 'truncated'],
    ['too large', u32s((16 << 20) + 1, 1), 'too_large'],
    ['length 0 of unknown type', u32s(0, 99), 'bad_length'],
    ['length 7', u32s(7, 1), 'bad_length'],
    ['past the end', u32s(24, 1, 0, 0), 'truncated'],
    ['put below its header', u32s(20, 1, 0, 0, 0), 'bad_length'],
    ['put dataLen past the end', u32s(24, 1, 0, 0, 0, 5), 'truncated'],
    ['put dataLen disagrees', [...u32s(28, 1, 0, 0, 0, 2), 0, 0, 0, 0], 'bad_length'],
    ['delete component length 24', u32s(24, 2, 0, 0, 0, 0), 'bad_length'],
    ['delete entity length 16', u32s(16, 3, 0, 0), 'bad_length'],
    ['legacy delete entity network cut', u32s(12, 7, 5), 'truncated'],
    ['delete entity network length 20', u32s(20, 7, 5, 6, 0), 'bad_length'],
    ['delete component network 20', u32s(20, 6, 0, 0, 0), 'bad_length'],
  ];
  for (const [name, bytes, code] of cases) {
    await t.test(name, () => {
      const b = Uint8Array.from(bytes);
      assert.equal(protocolError(() => crdt.decodeMessage(b)).code, code);
      // In a stream after a valid message, the offset is the bad message's start.
      const good = crdt.encodeMessage({ type: MT.DeleteEntity, entity: 5 });
      const s = new Uint8Array(good.length + b.length);
      s.set(good);
      s.set(b, good.length);
      const seen = [];
      const err = protocolError(() => {
        for (const m of crdt.readStream(s)) seen.push(m);
      });
      assert.equal(err.code, code);
      assert.equal(err.offset, 12);
      assert.equal(seen.length, 1);
      const r = new Replica();
      const e2 = protocolError(() => r.mergeStream(s));
      assert.equal(e2.offset, 12);
      assert.equal(e2.applied, 1);
      assert.equal(r.deletedVersion(5), 0, 'messages before the fault stay merged');
    });
  }
  await t.test('legacy length and unknown types are read and skipped', () => {
    const legacy = u32s(12, 7, 0x10005, 9);
    assert.deepEqual(crdt.decodeMessage(legacy), {
      m: { type: 7, entity: 0x10005, component: 0, timestamp: 0, networkId: 9, data: null },
      n: 16,
    });
    const unknown = Uint8Array.from([...u32s(10, 42), 0xaa, 0xbb]);
    const { m, n } = crdt.decodeMessage(unknown);
    assert.equal(n, 10);
    assert.equal(toHex(m.data), 'aabb');
    assert.equal(toHex(crdt.encodeMessage(m)), toHex(unknown));
    const skipped = [];
    const msgs = [...crdt.readStream(Uint8Array.from([...unknown, ...legacy]), { onUnknown: (x, at) => skipped.push([x.type, at]) })];
    assert.deepEqual(skipped, [[42, 0]]);
    assert.equal(msgs.length, 1);
    assert.equal(msgs[0].networkId, 9);
    const r = new Replica({ maxMessageSize: 9 });
    assert.equal(protocolError(() => r.mergeStream(unknown)).code, 'too_large');
  });
});

test('merge rules', () => {
  const put = (entity, component, timestamp, data) => ({ type: MT.PutComponent, entity, component, timestamp, data: Uint8Array.from(data) });
  const del = (entity, component, timestamp) => ({ type: MT.DeleteComponent, entity, component, timestamp });
  const r = new Replica();
  assert.equal(r.merge(put(512, 1, 5, [1])), 'applied');
  assert.equal(r.merge(put(512, 1, 5, [1])), 'nochange');
  assert.equal(r.merge(put(512, 1, 4, [9])), 'outdated');
  assert.equal(r.merge(put(512, 1, 5, [0])), 'outdated', 'smaller byte');
  assert.equal(r.merge(put(512, 1, 5, [0, 0])), 'applied', 'longer wins');
  assert.equal(r.merge(put(512, 1, 5, [])), 'outdated');
  assert.equal(r.merge(del(512, 1, 5)), 'outdated', 'a tombstone is less than any bytes');
  assert.equal(r.merge(del(512, 1, 6)), 'applied');
  assert.equal(r.merge(put(512, 1, 6, [])), 'applied', 'empty bytes beat a tombstone');
  assert.deepEqual(r.get(512, 1), { data: new Uint8Array(0), ts: 6, deleted: false });
  assert.equal(r.clock, 6);
  // Corrections.
  assert.equal(toHex(r.appendCorrection(put(512, 1, 1, [7]))), toHex(crdt.encodeMessage(put(512, 1, 6, []))));
  assert.equal(r.appendCorrection(put(512, 9, 1, [7])).length, 0);
  // Versions: a message for version 1 deletes version 0 and its data.
  assert.equal(r.merge(put(0x10000 + 512, 2, 1, [3])), 'applied');
  assert.equal(r.get(512, 1), undefined);
  assert.equal(r.deletedVersion(512), 0);
  assert.equal(r.entityDeleted(512), true);
  assert.equal(r.merge(put(512, 1, 99, [1])), 'ignored');
  assert.equal(toHex(r.appendCorrection(put(512, 1, 99, [1]))), toHex(crdt.encodeMessage({ type: MT.DeleteEntity, entity: 512 })));
  assert.equal(r.merge({ type: MT.DeleteEntity, entity: 512 }), 'nochange');
  assert.equal(r.appendCorrection({ type: MT.DeleteEntity, entity: 512 }).length, 0);
  assert.equal(r.merge({ type: MT.DeleteEntityNetwork, entity: 0x20000 + 512, networkId: 3 }), 'applied');
  assert.equal(r.liveEntities, 0);
  assert.equal(r.size, 0);
  assert.equal(r.merge({ type: 99, entity: 1 }), 'invalid');
  // Append sets: distinct values, highest timestamp, retention.
  const a = new Replica({ appendRetention: 3 });
  const app = (ts, v) => a.merge({ type: MT.AppendValue, entity: 600, component: 7, timestamp: ts, data: Uint8Array.of(v) });
  assert.equal(app(1, 1), 'applied');
  assert.equal(app(1, 1), 'nochange');
  assert.equal(app(0, 1), 'nochange');
  assert.equal(app(2, 1), 'applied');
  assert.equal(app(1, 2), 'applied');
  assert.equal(app(1, 3), 'applied');
  assert.equal(app(0, 9), 'nochange', 'below the least of a full set');
  assert.equal(app(5, 0), 'applied');
  const seen = [];
  a.rangeAppend((x) => seen.push([x.timestamp, x.data[0]]));
  assert.deepEqual(seen, [[1, 3], [2, 1], [5, 0]]);
  assert.deepEqual(a.stateJSON().append, [{ entity: 600, component: 7, values: ['00', '01', '03'] }]);
});

test('writeAt replaces a same-stamp entry (Go WriteAt)', () => {
  const r = new Replica();
  assert.equal(r.writeAt(512, 1024, 10, Uint8Array.of(9)), 'applied');
  assert.equal(r.writeAt(512, 1024, 10, Uint8Array.of(1)), 'applied', 'a later write in the batch wins whatever the value');
  assert.deepEqual(r.get(512, 1024).data, Uint8Array.of(1));
  assert.equal(r.writeAt(512, 1024, 10, Uint8Array.of(1)), 'nochange');
  assert.equal(r.writeAt(512, 1024, 10, null, true), 'applied');
  assert.equal(r.get(512, 1024).deleted, true);
  assert.equal(r.writeAt(512, 1024, 9, Uint8Array.of(5)), 'outdated');
  assert.equal(r.writeAt(512, 1024, 11, Uint8Array.of(0)), 'applied');
  assert.equal(r.clock, 11);
  r.deleteEntity(512);
  assert.equal(r.writeAt(512, 1024, 20, Uint8Array.of(0)), 'ignored');
  assert.equal(r.clock, 20);
});

test('local writes tick the clock and saturate', () => {
  const r = new Replica();
  const m = r.put(512, 1, Uint8Array.of(1));
  assert.equal(m.timestamp, 1);
  assert.equal(r.deleteComponent(512, 2).timestamp, 2);
  assert.equal(r.appendValue(512, 3, Uint8Array.of(4)).timestamp, 3);
  assert.equal(r.deleteEntity(513).timestamp, 0);
  assert.equal(r.clock, 3);
  r.observeClock(0xfffffffe);
  assert.equal(r.put(512, 1, Uint8Array.of(2)).timestamp, 0xffffffff);
  assert.equal(r.put(512, 1, Uint8Array.of(3)).timestamp, 0xffffffff, 'saturates');
  assert.deepEqual(r.get(512, 1).data, Uint8Array.of(3), 'then wins ties only');
  r.observeClock(5);
  assert.equal(r.clock, 0xffffffff);
  // Broadcast messages rebuild the same state elsewhere.
  const s = new Replica();
  const other = new Replica();
  for (const msg of [s.put(700, 1, Uint8Array.of(1)), s.appendValue(700, 2, Uint8Array.of(2)), s.deleteComponent(700, 3), s.deleteEntity(701)]) {
    other.mergeStream(crdt.encodeMessage(msg));
  }
  assert.equal(other.hash(), s.hash());
});

test('encodeMessage rejects values that are not u32', () => {
  assert.throws(() => crdt.encodeMessage({ type: 1, entity: -1, component: 0, timestamp: 0, data: null }), RangeError);
  assert.throws(() => crdt.encodeMessage({ type: 1, entity: 2 ** 32, component: 0, timestamp: 0, data: null }), RangeError);
  assert.throws(() => crdt.encodeMessage({ type: 1, entity: 1, component: 0, timestamp: 0, data: [1] }), TypeError);
  assert.equal(crdt.entityOf(512, 3), 3 * 65536 + 512);
  assert.equal(crdt.entityNumber(0xffff0200), 512);
  assert.equal(crdt.entityVersion(0xffff0200), 0xffff);
});

function randomMessage(rng) {
  const entity = crdt.entityOf([0, 1, 512, 513, 700][rng.int(5)], rng.int(8) === 0 ? 1 + rng.int(2) : 0);
  const component = [1, 2, 1024][rng.int(3)];
  const timestamp = rng.int(6);
  const data = rng.bytes(rng.int(3)).map((x) => x % 3);
  switch (rng.int(8)) {
    case 0:
      return { type: MT.DeleteComponent, entity, component, timestamp, networkId: 0, data: null };
    case 1:
      return { type: MT.DeleteEntity, entity, component: 0, timestamp: 0, networkId: 0, data: null };
    case 2:
    case 3:
      return { type: MT.AppendValue, entity, component, timestamp, networkId: 0, data };
    case 4:
      return { type: MT.PutComponentNetwork, entity, component, timestamp, networkId: rng.next(), data };
    default:
      return { type: MT.PutComponent, entity, component, timestamp, networkId: 0, data };
  }
}

test('property: merge is order- and duplicate-independent; digests split the hash', () => {
  const rng = new Rng(42);
  for (let round = 0; round < 150; round++) {
    const msgs = Array.from({ length: 5 + rng.int(60) }, () => randomMessage(rng));
    const cfg = { appendRetention: 1 + rng.int(4) };
    const ref = deliver(rng, msgs, cfg);
    const state = toHex(ref.appendState());
    for (let k = 0; k < 4; k++) assert.equal(toHex(deliver(rng, msgs, cfg).appendState()), state, `round ${round}`);
    const buckets = 1 + rng.int(9);
    const digests = ref.bucketDigests(buckets);
    const parts = [];
    for (let b = 0; b < buckets; b++) {
      const bs = ref.bucketState(b, buckets);
      assert.equal(digests[b], setHash(bs));
      parts.push(bs);
    }
    assert.equal(ref.hash(), setHash(ref.appendState()));
    // Every canonical message lands in exactly one bucket.
    assert.equal(parts.reduce((n, p) => n + p.length, 0), ref.appendState().length);
    assert.equal(ref.bucketState(buckets, buckets).length, 0);
  }
});

/** Compares hash() and bucketDigests(buckets) with the from-scratch sums of the export. */
function checkSums(r, step, buckets) {
  const hash = r.hash();
  assert.equal(hash, setHash(r.appendState()), `step ${step}: hash`);
  const d = r.bucketDigests(buckets);
  let total = 0n;
  for (let b = 0; b < buckets; b++) {
    assert.equal(d[b], setHash(r.bucketState(b, buckets)), `step ${step}: digest ${b} of ${buckets}`);
    total = (total + d[b]) & M64;
  }
  assert.equal(total, hash, `step ${step}: the digests of ${buckets} buckets add up to the hash`);
}

test('the incremental hash and digests equal the from-scratch sums after every kind of change', () => {
  // As crdt.TestHashIncremental: values, tombstones, append values and evictions, explicit and
  // implicit deletions, writeAt replacing at its own stamp, local writes; checked after every
  // change, after 5 and after 50.
  for (const every of [1, 5, 50]) {
    const rng = new Rng(11 + every);
    const r = new Replica({ appendRetention: 3 });
    // Most checks reuse one bucket count (the kept digests move with each change); some switch.
    const usual = 7;
    for (let step = 0; step < 1500; step++) {
      const m = randomMessage(rng);
      // Spread the numbers over several pages and buckets, up to the last page. Versions follow the
      // deleted version, so that deleted numbers come back to life: mostly the next live version,
      // sometimes a deleted one (ignored) or one above (an implicit deletion).
      const n = crdt.entityNumber(m.entity) + [0, 300, 600, 64800][rng.int(4)];
      const dv = r.deletedVersion(n);
      const live = dv === undefined ? 0 : dv + 1;
      const k = rng.int(10);
      m.entity = crdt.entityOf(n, k === 0 ? Math.max(0, live - 1) : k === 1 ? live + 1 : live);
      // Local writes tick the clock: keep the timestamps near it, so that merges win, tie and lose.
      m.timestamp = Math.max(0, r.clock - 2 + rng.int(4));
      switch (rng.int(12)) {
        case 0:
        case 1: {
          if (m.type === MT.PutComponent || m.type === MT.PutComponentNetwork || m.type === MT.DeleteComponent) {
            // Often at the entry's own stamp: writeAt replaces it whatever the values.
            const cur = r.get(m.entity, m.component);
            const ts = cur !== undefined && rng.int(2) === 0 ? cur.ts : m.timestamp;
            r.writeAt(m.entity, m.component, ts, m.data, m.type === MT.DeleteComponent);
          } else r.merge(m);
          break;
        }
        case 2:
          r.put(m.entity, m.component, m.data ?? new Uint8Array(0));
          break;
        case 3:
          r.appendValue(m.entity, m.component, m.data ?? Uint8Array.of(1));
          break;
        case 4:
          if (rng.int(4) === 0) r.deleteEntity(m.entity);
          else r.deleteComponent(m.entity, m.component);
          break;
        default:
          r.merge(m);
      }
      if (step % every === 0) {
        checkSums(r, step, step % (every * 10) === 0 ? [1, 2, 256][rng.int(3)] : usual);
      }
    }
    checkSums(r, -1, usual);
    checkSums(r, -1, 256);
    assert.ok(r.liveEntities >= 8 && r.size >= 16, `a state worth hashing: ${r.liveEntities} entities, ${r.size} entries`);
    // A replica built from the export hashes the same, though its sums were built in another order.
    const cp = new Replica({ appendRetention: 3 });
    cp.mergeStream(r.appendState());
    assert.equal(cp.hash(), r.hash());
    assert.deepEqual([...cp.bucketDigests(256)], [...r.bucketDigests(256)]);
  }
});

test('fuzz: decoders and mergeStream only ever raise ProtocolError', () => {
  const rng = new Rng(7);
  const corpus = [...dcl.messages.map((v) => fromHex(v.hex)), ...dcl.scenarios.slice(0, 10).map((s) => fromHex(s.messages.join('')))];
  for (let i = 0; i < 6000; i++) {
    let input;
    if (rng.int(3) === 0) {
      input = rng.bytes(rng.int(80));
      if (input.length >= 8) {
        input[4] = 1 + rng.int(9);
        input[5] = input[6] = input[7] = 0;
        if (rng.int(2)) input[1] = input[2] = input[3] = 0;
      }
    } else {
      input = corpus[rng.int(corpus.length)].slice();
      for (let k = 1 + rng.int(3); k > 0 && input.length; k--) input[rng.int(input.length)] ^= 1 << rng.int(8);
      if (rng.int(3) === 0) input = input.subarray(0, rng.int(input.length + 1));
    }
    const r = new Replica();
    for (const fn of [() => crdt.decodeMessage(input), () => [...crdt.readStream(input)], () => r.mergeStream(input)]) {
      try {
        fn();
      } catch (err) {
        if (!(err instanceof ProtocolError)) assert.fail(`input ${toHex(input)}: ${err.stack}`);
        assert.ok(err.offset >= 0 && err.offset <= input.length);
      }
    }
    // Whatever merged re-exports to a stream that rebuilds the same state.
    const again = new Replica();
    again.mergeStream(r.appendState());
    assert.equal(again.hash(), r.hash());
  }
});
