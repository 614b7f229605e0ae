// Schema tables and value encoding against the Go vectors (testdata/schema).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as sc from '../static/js/schema.js';
import { ProtocolError } from '../static/js/netmsg.js';
import { readJSON, fromHex, toHex, hex16, Rng } from './helpers.js';

const arena = readJSON('testdata/schema/arena.json');
const tables = readJSON('testdata/schema/tables.json');

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
  const t = new sc.SchemaTable(tables.tables.find((x) => x.name === 'edges').schemas);
  assert.ok(tables.values.length > 40);
  for (const v of tables.values) {
    const s = t.lookup(v.schema);
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
  assert.equal(avatar.isValidValue(0, new Uint8Array(8)), true);
  assert.equal(avatar.isValidValue(0, new Uint8Array(7)), false);
  assert.equal(avatar.isValidValue(2, new Uint8Array(4096)), true);
  assert.equal(avatar.isValidValue(2, new Uint8Array(4097)), false);
  assert.equal(avatar.isValidValue(3, new Uint8Array(1)), false);
  assert.equal(avatar.isValidValue(0, [0, 0, 0, 0, 0, 0, 0, 0]), false);
  assert.equal(avatar.checkValue(0, new Uint8Array(8)), true);
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
