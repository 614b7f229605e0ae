// Schema tables and value encoding against the Go vectors (testdata/schema).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as sc from '../static/js/schema.js';
import { ProtocolError } from '../static/js/netmsg.js';
import { fnv1a64 } from '../static/js/fnv.js';
import { readJSON, fromHex, toHex, hex16, Rng } from './helpers.js';

const arena = readJSON('testdata/schema/arena.json');
const tables = readJSON('testdata/schema/tables.json');
const encodings = readJSON('testdata/schema/encodings.json');

test('arena fingerprint equals Go', () => {
  const t = new sc.SchemaTable(arena.schemas);
  assert.equal(hex16(t.fingerprint), arena.fingerprint);
  assert.deepEqual([...t.ids], [1, 2, 3]);
  const avatar = t.lookup(1);
  assert.equal(avatar.name, 'avatar');
  assert.equal(avatar.index(1102), 2);
  assert.equal(avatar.index(1200), -1);
  assert.equal(t.lookup(4), undefined);
});

test('edge-case tables fingerprint as in Go', () => {
  assert.ok(tables.tables.length >= 4);
  const byName = new Map();
  for (const jt of tables.tables) {
    // Registration order must not matter: ids are sorted.
    const t = new sc.SchemaTable([...jt.schemas].reverse());
    assert.equal(hex16(t.fingerprint), jt.fingerprint, jt.name);
    byName.set(jt.name, t);
  }
  assert.equal(byName.get('empty').fingerprint, 0xcbf29ce484222325n);
  const edges = byName.get('edges');
  assert.equal(edges.lookup(32).fullMask, 0xffffffff);
  assert.equal(edges.lookup(9).fullMask, 0x1ff);
});

test('consumeValues matches Go on valid and malformed data', () => {
  const byName = new Map(tables.tables.map((x) => [x.name, new sc.SchemaTable(x.schemas)]));
  assert.ok(tables.values.length > 40);
  assert.ok(tables.values.some((v) => v.table === 'encoded' && v.error === 'bad_value'));
  for (const v of tables.values) {
    const s = byName.get(v.table).lookup(v.schema);
    const data = fromHex(v.data);
    const got = [];
    const what = `schema ${v.schema} mask ${v.mask} data ${v.data.slice(0, 40)}`;
    if (v.error) {
      try {
        s.consumeValues(data, v.mask, (i, b) => got.push([i, toHex(b)]));
        assert.fail(`no error: ${what}`);
      } catch (err) {
        assert.ok(err instanceof ProtocolError, err.stack);
        assert.equal(err.code, v.error, what);
      }
      assert.deepEqual(got, [], 'fn is called for nothing on malformed data');
    } else {
      s.consumeValues(data, v.mask, (i, b) => got.push([i, toHex(b)]));
      assert.deepEqual(got, v.values, what);
      // encodeValues and appendValue rebuild the same data.
      const vals = new Map(got.map(([i, h]) => [i, fromHex(h)]));
      assert.equal(toHex(s.encodeValues(v.mask, (i) => vals.get(i))), v.data);
      let d = null;
      for (const [i, b] of vals) d = s.appendValue(d, i, b);
      assert.equal(toHex(d ?? new Uint8Array(0)), v.data);
    }
  }
});

test('table validation follows Go', () => {
  const ok = (id) => ({ id, name: 'ok', properties: [{ name: 'a', component: 1024, size: 1 }] });
  const bad = [
    [ok(7), ok(7)],
    [{ id: 1, name: 'none', properties: [] }],
    [{ id: 1, properties: Array.from({ length: 33 }, (_, i) => ({ component: 1024 + i, size: 1 })) }],
    [{ id: 1, properties: [{ component: 1023, size: 1 }] }],
    [{ id: 1, properties: [{ component: sc.COMPONENT_META, size: 1 }] }],
    [{ id: 1, properties: [{ component: 2000, size: 1 }, { component: 2000, size: 0 }] }],
    [{ id: 1, properties: [{ component: 2000, size: -1 }] }],
    [{ id: 1, properties: [{ component: 2000, size: 4097 }] }],
    [{ id: -1, properties: [{ component: 2000, size: 1 }] }],
    [ok(1), { id: 2 }],
  ];
  for (const schemas of bad) {
    assert.throws(() => new sc.SchemaTable(schemas), (err) => err instanceof sc.SchemaError && err.code === 'invalid_schema');
  }
  assert.equal(new sc.SchemaTable([ok(0), ok(1)]).ids.length, 2);
  assert.equal(new sc.SchemaTable([{ id: 1, properties: [{ component: 2000, size: 4096 }] }]).lookup(1).properties[0].size, 4096);
});

test('checkValue, meta helpers', () => {
  const t = new sc.SchemaTable(arena.schemas);
  const avatar = t.lookup(1);
  assert.equal(avatar.isValidValue(0, new Uint8Array(4)), true); // pos: two quantized 2-byte coordinates
  assert.equal(avatar.isValidValue(0, new Uint8Array(8)), false);
  assert.equal(avatar.isValidValue(0, new Uint8Array(7)), false);
  assert.equal(avatar.isValidValue(2, new Uint8Array(4096)), true);
  assert.equal(avatar.isValidValue(2, new Uint8Array(4097)), false);
  assert.equal(avatar.isValidValue(3, new Uint8Array(1)), false);
  assert.equal(avatar.isValidValue(0, [0, 0, 0, 0, 0, 0, 0, 0]), false);
  assert.equal(avatar.checkValue(0, new Uint8Array(4)), true);
  for (const [i, v] of [[0, new Uint8Array(7)], [2, new Uint8Array(4097)], [3, new Uint8Array(1)], [1, 'abcd']]) {
    assert.throws(() => avatar.checkValue(i, v), (err) => err instanceof sc.SchemaError && err.code === 'value_size');
  }
  // Both the Go form (dst, i, v) and the short form (i, v).
  assert.equal(toHex(avatar.appendValue(2, Uint8Array.of(7, 8))), '02000708');
  assert.equal(toHex(avatar.appendValue(Uint8Array.of(1), 2, Uint8Array.of(7))), '01010007');
  assert.equal(toHex(avatar.appendValue(null, 1, Uint8Array.of(1, 2, 3, 4))), '01020304');
  assert.equal(toHex(sc.appendMeta(2, Uint8Array.of(5))), '0200000005');
  assert.equal(avatar.valueSize(2, new Uint8Array(3)), 5);
  const meta = sc.appendMeta(null, 0xfffffffe, Uint8Array.of(1, 2));
  assert.equal(toHex(meta), 'feffffff0102');
  assert.deepEqual(sc.parseMeta(meta), { id: 0xfffffffe, creation: Uint8Array.of(1, 2) });
  assert.equal(sc.parseMeta(Uint8Array.of(1, 2, 3)), null);
  assert.equal(toHex(sc.appendMeta(Uint8Array.of(9), 1, null)), '0901000000');
  assert.equal(sc.COMPONENT_META, 1);
  assert.equal(sc.COMPONENT_AUTHORITY, 2);
  assert.throws(() => avatar.consumeValues(new Uint8Array(0), 8, () => {}), ProtocolError);
});

test('fuzz: consumeValues only ever raises ProtocolError', () => {
  const t = new sc.SchemaTable(tables.tables.find((x) => x.name === 'edges').schemas);
  const rng = new Rng(11);
  const ids = [...t.ids];
  for (let i = 0; i < 5000; i++) {
    const s = t.lookup(ids[rng.int(ids.length)]);
    const data = rng.bytes(rng.int(40));
    const mask = rng.int(4) === 0 ? rng.next() : rng.next() % (s.fullMask + 1);
    let calls = 0;
    try {
      s.consumeValues(data, mask, () => calls++);
    } catch (err) {
      assert.ok(err instanceof ProtocolError, err.stack);
      assert.equal(calls, 0);
    }
  }
});

test('the browser arena table (static/js/arena.js) has the Go arena fingerprint', async () => {
  const arenaModule = await import('../static/js/arena.js');
  assert.equal(hex16(arenaModule.schemas().fingerprint), arena.fingerprint);
});

// float64 bits (16 hex digits) ↔ number.
const bitsView = new DataView(new ArrayBuffer(8));
/** @param {string} h */
function num(h) {
  bitsView.setBigUint64(0, BigInt('0x' + h));
  return bitsView.getFloat64(0);
}
/** @param {number} v */
function bits(v) {
  bitsView.setFloat64(0, v);
  return bitsView.getBigUint64(0).toString(16).padStart(16, '0');
}
/** @param {number} v  NaN as the one pattern Go's vectors use for a decoded NaN. */
const decodedBits = (v) => (Number.isNaN(v) ? bits(NaN) : bits(v));

test('quantized encoding matches Go byte for byte', () => {
  assert.ok(encodings.quantized.length >= 5);
  for (const q of encodings.quantized) {
    const t = new sc.SchemaTable([{ id: 1, properties: [{ component: 1024, encoding: q.encoding }] }]);
    const e = t.lookup(1).properties[0].encoding;
    assert.equal(sc.encodingWidth(e), q.width);
    assert.equal(String(sc.quantizedSteps(e)), q.steps);
    for (const c of q.cases) {
      const what = `${JSON.stringify(q.encoding)} v ${c.v}`;
      const b = sc.appendQuantized(null, e, num(c.v));
      assert.equal(toHex(b), c.hex, what);
      const [d, next] = sc.consumeQuantized(Uint8Array.of(0xee, ...b, 0xee), 1, e);
      assert.equal(next, 1 + q.width);
      assert.equal(decodedBits(d), c.decoded === bits(NaN) ? bits(NaN) : c.decoded, what);
      assert.equal(toHex(sc.appendQuantized(Uint8Array.of(9), e, d)), '09' + c.hex);
    }
  }
});

test('float16 matches Go: every encode vector and every one of the 65536 decodes', () => {
  assert.ok(encodings.float16.length > 100);
  for (const c of encodings.float16) {
    const b = sc.appendFloat16(null, num(c.v));
    assert.equal(toHex(b), c.hex, `v ${c.v}`);
    const [d, next] = sc.consumeFloat16(b, 0);
    assert.equal(next, 2);
    assert.equal(Number.isNaN(d) ? 'nan' : bits(d), Number.isNaN(num(c.decoded)) ? 'nan' : c.decoded);
  }
  // FNV-1a 64 over (accepted u8, float64 bits u64 LE) for every h, as Go's float16DecodeAll.
  const all = new Uint8Array(9 * 65536);
  const dv = new DataView(all.buffer);
  for (let h = 0; h < 65536; h++) {
    try {
      const [v] = sc.consumeFloat16(Uint8Array.of(h & 0xff, h >>> 8));
      all[9 * h] = 1;
      dv.setBigUint64(9 * h + 1, Number.isNaN(v) ? 0x7ff8000000000000n : BigInt('0x' + bits(v)), true);
      if (!Number.isNaN(v)) assert.equal(sc.float16Bits(v), h);
    } catch (err) {
      assert.ok(err instanceof ProtocolError && err.code === 'bad_value', String(err));
    }
  }
  assert.equal(hex16(fnv1a64(all)), encodings.float16DecodeAll);
  assert.equal(sc.float16Bits(-0), 0x8000);
  assert.equal(sc.float16Bits(NaN), 0x7e00);
});

test('varints match Go byte for byte', () => {
  for (const c of encodings.uvarint) {
    assert.equal(toHex(sc.appendUvarint(null, BigInt(c.v))), c.hex, c.v);
    if (Number.isSafeInteger(Number(c.v)) && BigInt(Number(c.v)) === BigInt(c.v)) assert.equal(toHex(sc.appendUvarint(null, Number(c.v))), c.hex);
    const b = fromHex(c.hex);
    assert.deepEqual(sc.consumeUvarint(Uint8Array.of(...b, 0x80), 0), [BigInt(c.v), b.length]);
  }
  for (const c of encodings.varint) {
    assert.equal(toHex(sc.appendVarint(null, BigInt(c.v))), c.hex, c.v);
    if (Number.isSafeInteger(Number(c.v)) && BigInt(Number(c.v)) === BigInt(c.v)) assert.equal(toHex(sc.appendVarint(null, Number(c.v))), c.hex);
    assert.deepEqual(sc.consumeVarint(fromHex(c.hex), 0), [BigInt(c.v), fromHex(c.hex).length]);
  }
  assert.throws(() => sc.appendUvarint(null, -1), RangeError);
  assert.throws(() => sc.appendVarint(null, 1n << 63n), RangeError);
});

test('decoders refuse what Go refuses, with the same codes', () => {
  assert.ok(encodings.invalid.length > 20);
  for (const c of encodings.invalid) {
    const b = fromHex(c.hex);
    const decode = {
      quantized: () => sc.consumeQuantized(b, 0, /** @type {any} */ ({ count: 1, ...c.encoding })),
      float16: () => sc.consumeFloat16(b, 0),
      uvarint: () => sc.consumeUvarint(b, 0),
      varint: () => sc.consumeVarint(b, 0),
    }[c.kind];
    assert.throws(decode, (err) => err instanceof ProtocolError && err.code === c.error, `${c.kind} ${c.hex}`);
  }
});

test('encoded properties: sizes, validation, checkValue', () => {
  const enc = new sc.SchemaTable(tables.tables.find((x) => x.name === 'encoded').schemas).lookup(1);
  assert.deepEqual(enc.properties.map((p) => p.size), [6, 1, 6, 0, 0, 0, 2]);
  assert.equal(enc.prefixed(3), true);
  assert.equal(enc.prefixed(4), false);
  assert.equal(enc.valueSize(4, Uint8Array.of(0xac, 2)), 2);
  assert.equal(enc.checkValue(5, Uint8Array.of(1, 2)), true);
  for (const [i, v, code] of [[0, '0000000100', 'value_size'], [0, '000000010008', 'bad_value'], [2, '007e017e0000', 'bad_value'],
    [4, '', 'value_size'], [4, '80', 'value_size'], [4, '0101', 'value_size'], [4, '8000', 'bad_value'], [5, '01', 'value_size']]) {
    assert.equal(enc.isValidValue(i, fromHex(v)), false, v);
    assert.throws(() => enc.checkValue(i, fromHex(v)), (err) => err instanceof sc.SchemaError && err.code === code, `${i} ${v}`);
  }
  const bad = [
    { kind: 'packed' }, { kind: 'float16', step: 1 }, { kind: 'uvarint', count: -1 }, { kind: 'float16', count: 65 },
    { kind: 'quantized', min: 1, max: 1, step: 1 }, { kind: 'quantized', min: 0, max: 1, step: 0 },
    { kind: 'quantized', min: NaN, max: 1, step: 1 }, { kind: 'quantized', min: 0, max: Infinity, step: 1 },
    { kind: 'quantized', min: 0, max: 1, step: 3 }, { kind: 'quantized', min: 0, max: 2 ** 53, step: 1 },
  ];
  for (const encoding of bad) {
    assert.throws(() => new sc.SchemaTable([{ id: 1, properties: [{ component: 1024, encoding: /** @type {any} */ (encoding) }] }]),
      (err) => err instanceof sc.SchemaError && err.code === 'invalid_schema', JSON.stringify(encoding));
  }
  assert.throws(() => new sc.SchemaTable([{ id: 1, properties: [{ component: 1024, size: 4, encoding: { kind: 'quantized', count: 2, min: 0, max: 255, step: 1 } }] }]), sc.SchemaError);
  assert.equal(new sc.SchemaTable([{ id: 1, properties: [{ component: 1024, size: 2, encoding: { kind: 'quantized', count: 2, min: 0, max: 255, step: 1 } }] }]).lookup(1).properties[0].size, 2);
});

test('fuzz: every decoder only raises ProtocolError and re-encodes what it accepts', () => {
  const rng = new Rng(13);
  const qs = encodings.quantized.map((q) => new sc.SchemaTable([{ id: 1, properties: [{ component: 1024, encoding: q.encoding }] }]).lookup(1).properties[0].encoding);
  const enc = new sc.SchemaTable(tables.tables.find((x) => x.name === 'encoded').schemas).lookup(1);
  for (let k = 0; k < 20000; k++) {
    const b = rng.bytes(rng.int(12));
    const e = qs[rng.int(qs.length)];
    const cases = [
      [() => sc.consumeQuantized(b, 0, e), (v) => sc.appendQuantized(null, e, v)],
      [() => sc.consumeFloat16(b, 0), (v) => sc.appendFloat16(null, v)],
      [() => sc.consumeUvarint(b, 0), (v) => sc.appendUvarint(null, v)],
      [() => sc.consumeVarint(b, 0), (v) => sc.appendVarint(null, v)],
    ];
    for (const [decode, encode] of cases) {
      let r;
      try {
        r = decode();
      } catch (err) {
        assert.ok(err instanceof ProtocolError && (err.code === 'short_data' || err.code === 'bad_value'), String(err));
        continue;
      }
      assert.equal(toHex(encode(r[0])), toHex(b.subarray(0, r[1])));
    }
    let calls = 0;
    try {
      enc.consumeValues(b, rng.int(128), () => calls++);
    } catch (err) {
      assert.ok(err instanceof ProtocolError, String(err));
      assert.equal(calls, 0);
    }
  }
});

const deltas = readJSON('testdata/schema/deltas.json');

test('deltas: every vector encodes and applies as in Go', () => {
  assert.ok(deltas.properties.length >= 8);
  for (const jp of deltas.properties) {
    const t = new sc.SchemaTable([{ id: 1, properties: [jp.property] }]);
    const p = t.lookup(1).properties[0];
    assert.ok(sc.deltaCapable(p), jp.property.name);
    for (const c of jp.cases) {
      const base = fromHex(c.base);
      const v = fromHex(c.value);
      assert.equal(toHex(sc.appendDelta(p, base, v)), c.delta, `${jp.property.name} ${c.base} → ${c.value}`);
      const [got, next] = sc.applyDelta(p, base, fromHex('ee' + c.delta), 1);
      assert.equal(toHex(got), c.value, `${jp.property.name} apply ${c.delta}`);
      assert.equal(next, 1 + c.delta.length / 2);
    }
    for (const c of jp.invalid) {
      assert.throws(() => sc.applyDelta(p, fromHex(c.base), fromHex(c.delta)), (err) => err instanceof ProtocolError && err.code === c.error,
        `${jp.property.name} ${c.delta} → ${c.error}`);
    }
  }
});

test('deltas: variable raw properties and raw of other sizes are not delta-capable', () => {
  const t = new sc.SchemaTable([{ id: 1, properties: [{ component: 1024, size: 0 }, { component: 1025, size: 3 }, { component: 1026, size: 8 }] }]);
  const ps = t.lookup(1).properties;
  assert.deepEqual(ps.map((p) => sc.deltaCapable(p)), [false, false, true]);
});
