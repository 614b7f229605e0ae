// HostSnapshot build/apply against the Go vectors (testdata/hostsnapshot) and randomized worlds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as hs from '../static/js/hostsnapshot.js';
import * as nm from '../static/js/netmsg.js';
import { Replica, MessageType as MT, entityOf } from '../static/js/crdt.js';
import { SchemaTable, COMPONENT_META, COMPONENT_AUTHORITY, appendMeta } from '../static/js/schema.js';
import { readJSON, fromHex, toHex, hex16, Rng } from './helpers.js';

const V = readJSON('testdata/hostsnapshot/vectors.json');
const table = new SchemaTable(V.schemas);

function replicaOf(name) {
  const j = V.replicas[name];
  assert.ok(j, `replica ${name}`);
  const r = new Replica();
  r.mergeStream(fromHex(j.state));
  r.observeClock(j.clock);
  return r;
}

function coverOf(c) {
  return c.buckets === null ? hs.Cover.all(c.count) : hs.Cover.only(c.count, c.buckets);
}

function optionsOf(o) {
  return {
    term: BigInt(o.term),
    localPeerIndex: BigInt(o.localPeerIndex),
    hostPeerIndex: BigInt(o.hostPeerIndex),
    peers: o.peers.map((p) => ({ peerIndex: BigInt(p.peerIndex), peerId: p.peerId })),
    cover: coverOf(o.cover),
  };
}

const snapshots = new Map([...V.builds, ...V.crafted].map((b) => [b.name, b.snapshot]));

function decodeSnapshot(hex) {
  const wire = fromHex(hex);
  const { msg, n } = nm.decode(wire);
  assert.equal(n, wire.length);
  assert.equal(msg.type, nm.Type.HostSnapshot);
  return msg;
}

test('schema table and replicas load as in Go', () => {
  assert.equal(hex16(table.fingerprint), V.fingerprint);
  for (const [name, j] of Object.entries(V.replicas)) {
    const r = replicaOf(name);
    assert.equal(toHex(r.appendState()), j.state, name);
    assert.equal(hex16(r.hash()), j.hash, name);
    assert.equal(r.clock, j.clock, name);
  }
});

test('build: JS snapshots are byte-identical to Go', async (t) => {
  assert.ok(V.builds.length >= 5);
  for (const b of V.builds) {
    await t.test(b.name, () => {
      const r = replicaOf(b.replica);
      const before = r.hash();
      const snap = hs.build(r, table, optionsOf(b.options));
      assert.equal(toHex(nm.encode(snap)), b.snapshot);
      assert.equal(r.hash(), before, 'build does not modify the replica');
      const back = decodeSnapshot(b.snapshot);
      assert.equal(back.spawns.length, snap.spawns.length);
      const h = hs.readHostState(back.hostState);
      assert.equal(h.version, 1);
      assert.equal(h.term, BigInt(b.options.term));
      assert.equal(h.clock, r.clock);
    });
  }
});

test('apply: JS merges Go snapshots to the same replica and corrections', async (t) => {
  assert.ok(V.applies.length >= 5);
  for (const a of V.applies) {
    await t.test(a.name, () => {
      const r = replicaOf(a.receiver);
      let merges = 0;
      const { info, corrections } = hs.apply(r, table, decodeSnapshot(snapshots.get(a.build)), (m) => {
        merges++;
        return r.merge(m);
      });
      assert.equal(toHex(corrections), a.corrections, 'corrections');
      assert.equal(hex16(r.hash()), a.after.hash, 'merged state');
      assert.equal(r.clock, a.after.clock, 'clock');
      assert.equal(info.term, BigInt(a.info.term));
      assert.equal(info.clock, a.info.clock);
      assert.equal(hex16(info.fingerprint), a.info.fingerprint);
      assert.equal(info.cover.count, a.info.coverCount);
      assert.equal(info.cover.len, a.info.coverBuckets);
      assert.equal(info.spawns, a.info.spawns);
      if (info.spawns > 0) assert.ok(merges > info.spawns, 'merge is the caller’s function');
    });
  }
});

test('apply: malformed snapshots fail like Go and merge nothing', async (t) => {
  const codes = new Set();
  for (const e of V.errors) {
    await t.test(e.name, () => {
      const r = replicaOf(e.receiver);
      const before = r.hash();
      const clock = r.clock;
      const snap = decodeSnapshot(e.snapshot);
      let err;
      try {
        hs.apply(r, table, snap);
      } catch (x) {
        err = x;
      }
      assert.ok(err instanceof hs.SnapshotError, `want SnapshotError, got ${err}`);
      assert.ok(err instanceof nm.ProtocolError);
      assert.equal(err.code, e.error);
      assert.equal(r.hash(), before);
      assert.equal(r.clock, clock);
      codes.add(err.code);
    });
  }
  assert.deepEqual([...codes].sort(), ['host_state', 'schema_mismatch', 'spawn']);
});

test('snapshot plus corrections make host and member equal', () => {
  const host = replicaOf('host');
  const member = replicaOf('receiver');
  const snap = hs.build(host, table, { term: 3n, cover: hs.Cover.all() });
  const { corrections } = hs.apply(member, table, decodeSnapshot(toHex(nm.encode(snap))));
  host.mergeStream(corrections);
  assert.equal(host.hash(), member.hash());
  // A second round has nothing left to correct.
  const again = hs.apply(member, table, hs.build(host, table, { term: 3n }));
  assert.equal(again.corrections.length, 0);
});

/** A random world over the vectors' schema table, in JS. */
function randomWorld(rng) {
  const r = new Replica();
  const ids = [...table.ids];
  for (let k = 0; k < 40; k++) {
    const e = entityOf(rng.int(3) === 0 ? rng.int(600) : 512 + rng.int(3000), rng.int(4) === 0 ? 1 : 0);
    const s = table.lookup(ids[rng.int(ids.length)]);
    const ts = () => 1 + rng.int(50);
    if (rng.int(10) > 0) r.merge({ type: MT.PutComponent, entity: e, component: COMPONENT_META, timestamp: ts(), data: appendMeta(null, rng.int(12) === 0 ? 77 : s.id, rng.bytes(rng.int(3))) });
    s.properties.forEach((p, i) => {
      const roll = rng.int(10);
      if (roll < 6) {
        r.merge({ type: MT.PutComponent, entity: e, component: p.component, timestamp: ts(), data: rng.bytes(p.size || rng.int(5)) });
      } else if (roll === 6) {
        r.merge({ type: MT.DeleteComponent, entity: e, component: p.component, timestamp: ts() });
      } else if (roll === 7) {
        r.merge({ type: MT.PutComponent, entity: e, component: p.component, timestamp: ts(), data: rng.bytes((p.size || 5000) + 1) });
      }
      void i;
    });
    if (rng.int(3) === 0) r.merge({ type: MT.PutComponent, entity: e, component: COMPONENT_AUTHORITY, timestamp: ts(), data: rng.bytes(9) });
    if (rng.int(3) === 0) r.merge({ type: MT.AppendValue, entity: e, component: 1900, timestamp: ts(), data: rng.bytes(2) });
    if (rng.int(15) === 0) r.merge({ type: MT.DeleteEntity, entity: e });
  }
  r.observeClock(r.clock + rng.int(100));
  return r;
}

test('property: a full snapshot rebuilds the world; a partial one its buckets', () => {
  const rng = new Rng(5);
  for (let round = 0; round < 60; round++) {
    const w = randomWorld(rng);
    const wire = nm.encode(hs.build(w, table, { term: BigInt(round), cover: hs.Cover.all(1 + rng.int(300)) }));
    const r = new Replica();
    const { info, corrections } = hs.apply(r, table, nm.decode(wire).msg);
    assert.equal(corrections.length, 0);
    assert.equal(r.hash(), w.hash(), `round ${round}`);
    assert.equal(r.clock, w.clock);
    assert.equal(info.term, BigInt(round));
    // A partial cover carries exactly its buckets.
    const count = 1 + rng.int(20);
    const buckets = [...Array(count).keys()].filter(() => rng.int(2) === 0);
    const cover = hs.Cover.only(count, buckets);
    const p = new Replica();
    hs.apply(p, table, nm.decode(nm.encode(hs.build(w, table, { cover }))).msg);
    const wd = w.bucketDigests(count);
    const pd = p.bucketDigests(count);
    for (let b = 0; b < count; b++) {
      if (cover.has(b)) assert.equal(pd[b], wd[b], `bucket ${b} of ${count}`);
      else assert.equal(p.bucketState(b, count).length, 0, `bucket ${b} of ${count} not covered`);
    }
  }
});

test('inspect: clock, highest stamp, values and bytes, as apply then finds them', () => {
  for (const b of V.builds) {
    const snap = decodeSnapshot(b.snapshot);
    const st = hs.inspect(snap);
    assert.equal(st.clock, hs.readHostState(snap.hostState).clock, b.name);
    assert.ok(st.maxStamp <= st.clock, `${b.name}: max stamp ${st.maxStamp} above clock ${st.clock}`);
    assert.ok(st.bytes >= snap.hostState.length, b.name);
    const r = new Replica();
    let merged = 0;
    hs.apply(r, table, snap, (m) => { merged++; return r.merge(m); });
    assert.equal(st.values, merged, `${b.name}: values`);
    assert.ok(r.clock >= st.clock, b.name);
  }
  assert.throws(() => hs.inspect({ spawns: [], hostState: new Uint8Array(3) }), hs.SnapshotError);
});

test('fuzz: mutated snapshots only ever raise ProtocolError', () => {
  const rng = new Rng(17);
  const corpus = [...V.builds.map((b) => fromHex(b.snapshot)), ...V.errors.map((e) => fromHex(e.snapshot))];
  const base = replicaOf('receiver');
  const baseHash = base.hash();
  let applied = 0;
  for (let i = 0; i < 1500; i++) {
    const input = corpus[rng.int(corpus.length)].slice();
    for (let k = 1 + rng.int(4); k > 0; k--) input[rng.int(input.length)] ^= 1 << rng.int(8);
    const r = new Replica();
    try {
      const snap = nm.decode(input).msg;
      if (snap.type !== nm.Type.HostSnapshot) continue;
      let st = null;
      try {
        st = hs.inspect(snap);
      } catch (err) {
        if (!(err instanceof nm.ProtocolError)) assert.fail(err.stack);
      }
      hs.apply(r, table, snap);
      assert.ok(st && st.maxStamp <= r.clock && st.clock <= r.clock, 'inspect read what apply took');
      applied++;
    } catch (err) {
      if (!(err instanceof nm.ProtocolError)) assert.fail(err.stack);
      assert.equal(r.hash(), new Replica().hash(), 'nothing merged on error');
    }
  }
  assert.equal(base.hash(), baseHash);
  assert.ok(applied > 0, 'some mutations still apply');
  // Random hostState blobs behind a valid header.
  for (let i = 0; i < 1500; i++) {
    const h = rng.bytes(rng.int(60));
    if (h.length > 23) {
      h[0] = 1;
      h.set(fromHex(V.fingerprint).reverse(), 13);
      h[21] = 1 + rng.int(16);
      h[22] = 0;
    }
    const r = new Replica();
    try {
      hs.apply(r, table, { spawns: [], hostState: h });
    } catch (err) {
      if (!(err instanceof hs.SnapshotError)) assert.fail(err.stack);
    }
  }
});

test('Cover', () => {
  const all = hs.Cover.all();
  assert.equal(all.count, 256);
  assert.equal(all.len, 256);
  assert.ok(all.isAll);
  assert.ok(all.number(65535));
  const c = hs.Cover.only(10, [0, 3, 9, 10, -1, 2.5]);
  assert.equal(c.len, 3);
  assert.ok(c.has(3) && !c.has(4) && !c.has(10) && !c.has(-1));
  assert.ok(c.number(13) && !c.number(14));
  assert.deepEqual([...c.bitmap()], [0b1001, 0b10]);
  assert.equal(hs.Cover.only(0, [1]).count, 256);
  assert.ok(hs.Cover.only(3, [0, 1, 2]).isAll);
});

test('spawnValues and appendSpawnUpdate round trip for every mask width', () => {
  const rng = new Rng(23);
  for (const id of table.ids) {
    const s = table.lookup(id);
    for (let k = 0; k < 20; k++) {
      const mask = rng.next() % (s.fullMask + 1);
      const vals = s.properties.map((p) => rng.bytes(p.size || rng.int(6)));
      const upd = hs.appendSpawnUpdate(s, mask, (i) => vals[i]);
      assert.equal(upd.length, nm.maskWidth(s.properties.length) / 8 + s.encodeValues(mask, (i) => vals[i]).length);
      const got = [];
      hs.spawnValues(s, upd, (i, v) => got.push([i, toHex(v)]));
      const want = vals.map((v, i) => [i, toHex(v)]).filter(([i]) => Math.floor(mask / 2 ** i) % 2 === 1);
      assert.deepEqual(got, want);
      if (upd.length > 1) assert.throws(() => hs.spawnValues(s, upd.subarray(0, upd.length - 1), () => {}), hs.SnapshotError);
    }
  }
  assert.throws(() => hs.spawnValues(table.lookup(3), new Uint8Array(3), () => {}), hs.SnapshotError);
});
