// The TRNP codec against the Go golden vectors (testdata/netmsg) and randomized inputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as nm from '../static/js/netmsg.js';
import { readJSON, listDir, fromHex, toHex, Rng } from './helpers.js';

const DIR = 'testdata/netmsg';

const U64 = new Set([
  'hostTime', 'localPeerIndex', 'hostPeerIndex', 'peerIndex', 'networkId', 'newAuthorIndex',
  'time', 'seq', 'highest', 'received', 'term', 'nonce', 'sendTime', 'echoTime', 'schemaFingerprint', 'peer', 'networkIds',
]);
const BYTES = new Set(['creationData', 'updateData', 'hostState', 'data', 'chunk', 'messages', 'body']);

/** Converts golden-vector JSON fields into codec values (u64 → BigInt, hex → bytes). */
function fromJSON(v, key) {
  if (Array.isArray(v)) return v.map((x) => fromJSON(x, key));
  if (v !== null && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) o[k] = fromJSON(x, k);
    return o;
  }
  if (U64.has(key)) {
    assert.equal(typeof v, 'string', `${key} must be a decimal string`);
    return BigInt(v);
  }
  if (BYTES.has(key)) return fromHex(v);
  return v;
}

/** Converts decoded values into golden-vector JSON form. */
function toJSON(v) {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return toHex(v);
  if (v instanceof BigUint64Array) return Array.from(v, (x) => x.toString());
  if (Array.isArray(v)) return v.map(toJSON);
  if (v !== null && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) o[k] = toJSON(x);
    return o;
  }
  return v;
}

/** The message fields without the type byte (golden "fields" of files other than ext.json). */
function fieldsOf(msg) {
  const { type, ...rest } = msg;
  return rest;
}

const MESSAGE_FILES = {
  'host_snapshot.json': 0,
  'peer_entered.json': 1,
  'peer_exited.json': 2,
  'host_commands.json': 3,
  'peer_commands.json': 4,
  'entity_updates.json': 5,
  'fragment.json': 6,
  'crdt_batch.json': 7,
  'ping.json': 8,
  'pong.json': 9,
  'close.json': 10,
  'hello.json': 11,
  'relay.json': 14,
  'actions.json': 15,
  'forget.json': 16,
  'packed_updates.json': 17,
  'delta_updates.json': 18,
  'ack.json': 19,
  'run_updates.json': 20,
};
const OTHER_FILES = ['ext.json', 'payload.json', 'invalid.json', 'fragmentation.json', 'mask_width.json'];

/** Asserts fn throws a ProtocolError and returns it. */
function protocolError(fn) {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof nm.ProtocolError, `want ProtocolError, got ${err && err.stack}`);
    return err;
  }
  assert.fail('no error');
}

test('every golden file is checked', () => {
  const files = listDir(DIR).filter((f) => f.endsWith('.json'));
  const known = new Set([...Object.keys(MESSAGE_FILES), ...OTHER_FILES]);
  for (const f of files) assert.ok(known.has(f), `golden file ${f} has no check`);
  for (const f of known) assert.ok(files.includes(f), `golden file ${f} is missing`);
});

for (const [file, type] of Object.entries(MESSAGE_FILES)) {
  test(`golden ${file}`, async (t) => {
    const vectors = readJSON(`${DIR}/${file}`);
    assert.ok(vectors.length > 0);
    for (const v of vectors) {
      await t.test(v.name, () => {
        const wire = fromHex(v.hex);
        const enc = nm.encode({ type, ...fromJSON(v.fields) });
        assert.equal(toHex(enc), v.hex, 'encode');
        const { msg, n } = nm.decode(wire);
        assert.equal(n, wire.length, 'decoded length');
        assert.equal(msg.type, type);
        assert.deepEqual(toJSON(fieldsOf(msg)), v.fields, 'decode');
        // As the only message of a payload, and after another message.
        assert.deepEqual([...nm.readMessages(wire)].map(toJSON), [toJSON(msg)]);
        const two = nm.concat(nm.encode({ type: nm.Type.PeerExited, peerIndex: 7n }), wire);
        const second = nm.decode(two, 9);
        assert.equal(second.n, wire.length);
        assert.deepEqual(toJSON(second.msg), toJSON(msg));
      });
    }
  });
}

test('golden ext.json', async (t) => {
  for (const v of readJSON(`${DIR}/ext.json`)) {
    await t.test(v.name, () => {
      const wire = fromHex(v.hex);
      const body = fromHex(v.fields.body);
      assert.equal(toHex(nm.encodeFrame(v.fields.type, body)), v.hex);
      const f = nm.decodeFrame(wire);
      assert.equal(f.type, v.fields.type);
      assert.equal(toHex(f.body), v.fields.body);
      assert.equal(f.n, wire.length);
      const { msg, n } = nm.decode(wire);
      assert.equal(n, wire.length);
      if (nm.isKnownType(v.fields.type)) {
        // Stamp and Digest: decoded into fields, re-encoded to the same bytes.
        assert.equal(toHex(nm.encode(msg)), v.hex);
      } else {
        assert.deepEqual(toJSON(msg), v.fields);
        assert.equal(toHex(nm.encode(fromJSON(v.fields))), v.hex);
      }
    });
  }
});

test('Stamp and Digest fields', () => {
  const stamp = nm.decode(fromHex('0c08000000d204000000000000')).msg;
  assert.deepEqual(stamp, { type: 12, time: 1234n });
  const digest = nm.decode(fromHex('0d1e00000003000000000000004d0000000200efcdab8967452301ffffffffffffffff')).msg;
  assert.equal(digest.term, 3n);
  assert.equal(digest.clock, 77);
  assert.deepEqual([...digest.digests], [0x0123456789abcdefn, 0xffffffffffffffffn]);
  const cases = [
    ['stamp body 7', '0c0700000000000000000000'],
    ['stamp body 9', '0c09000000000000000000000000'],
    ['digest body 13', '0d0d00000000000000000000000000000000'],
    ['digest 0 buckets', '0d0e0000000000000000000000000000000000'],
    ['digest 2 buckets in 1', '0d16000000000000000000000000000000000200ffffffffffffffff'],
  ];
  for (const [name, hex] of cases) {
    const err = protocolError(() => nm.decode(fromHex(hex)));
    assert.equal(err.code, 'body_length', name);
    assert.equal(err.offset, 1, name);
  }
  const big = new BigUint64Array(4097);
  assert.throws(() => nm.encode({ type: 13, term: 0n, clock: 0, digests: big }), RangeError);
  assert.throws(() => nm.encode({ type: 13, term: 0n, clock: 0, digests: [] }), RangeError);
  const d = nm.encode({ type: 13, term: 1n, clock: 2, digests: new BigUint64Array(4096).fill(5n) });
  const back = nm.decode(d).msg;
  assert.equal(back.digests.length, 4096);
  assert.equal(back.digests[4095], 5n);
});

test('golden payload.json', async (t) => {
  for (const v of readJSON(`${DIR}/payload.json`)) {
    await t.test(v.name, () => {
      const wire = fromHex(v.hex);
      const want = v.fields.messages;
      const msgs = want.map((m) => (m.fields.type === undefined ? { type: m.type, ...fromJSON(m.fields) } : fromJSON(m.fields)));
      assert.equal(toHex(nm.encodeAll(msgs)), v.hex, 'encodeAll');
      assert.equal(toHex(nm.concat(...msgs.map(nm.encode))), v.hex, 'concat of encode');
      const unknown = [];
      const got = [...nm.readMessages(wire, { onUnknown: (type, body) => unknown.push([type, toHex(body)]) })];
      const isUnknown = (ty) => ty >= 6 && ty < 128 && !nm.isKnownType(ty);
      assert.deepEqual(got.map(toJSON), msgs.filter((m) => !isUnknown(m.type)).map(toJSON));
      assert.deepEqual(unknown, want.filter((m) => isUnknown(m.type)).map((m) => [m.type, m.fields.body]));
      // Message by message with decode, unknown types included.
      let off = 0;
      for (const m of msgs) {
        const { msg, n } = nm.decode(wire, off);
        assert.deepEqual(toJSON(msg), toJSON(m));
        off += n;
      }
      assert.equal(off, wire.length);
    });
  }
});

test('golden invalid.json', async (t) => {
  const vectors = readJSON(`${DIR}/invalid.json`);
  assert.ok(vectors.length > 50);
  for (const v of vectors) {
    await t.test(v.name, () => {
      const wire = fromHex(v.hex);
      let err;
      if (v.check === 'datagram') {
        err = protocolError(() => nm.checkDatagram(wire));
        nm.checkDatagram(wire.subarray(0, nm.MAX_DATAGRAM));
      } else if (v.check === 'reliable') {
        err = protocolError(() => nm.checkReliable(wire));
        nm.checkReliable(wire.subarray(0, nm.MAX_RELIABLE));
      } else {
        assert.equal(v.check, undefined);
        err = protocolError(() => {
          for (const m of nm.readMessages(wire)) void m;
        });
      }
      assert.equal(err.code, v.error);
      assert.equal(err.offset, v.offset);
    });
  }
});

test('golden fragmentation.json', async (t) => {
  for (const v of readJSON(`${DIR}/fragmentation.json`)) {
    await t.test(v.name, () => {
      const payload = fromHex(v.payload);
      const frags = nm.fragment(payload, v.messageId, v.maxFragment);
      assert.deepEqual(frags.map(toHex), v.fragments);
      for (const f of frags) assert.ok(f.length <= v.maxFragment);
      const r = new nm.Reassembler();
      let out = null;
      v.fragments.forEach((h, i) => {
        const { msg } = nm.decode(fromHex(h));
        out = r.push(msg);
        if (i < v.fragments.length - 1) {
          assert.equal(out, null);
          assert.ok(r.inProgress);
        }
      });
      assert.ok(out instanceof Uint8Array);
      assert.equal(toHex(out), v.payload);
      assert.equal(r.inProgress, false);
    });
  }
});

test('golden mask_width.json', () => {
  const vectors = readJSON(`${DIR}/mask_width.json`);
  assert.equal(vectors.length, 33);
  for (const v of vectors) assert.equal(nm.maskWidth(v.properties), v.maskBits, `${v.properties} properties`);
  for (const bad of [-1, 33, 1.5, NaN]) assert.throws(() => nm.maskWidth(bad), RangeError);
});

test('checkMask', () => {
  assert.equal(nm.checkMask({ maskBits: 8, mask: 0b111 }, 3), true);
  assert.equal(nm.checkMask({ maskBits: 8, mask: 0b1000 }, 3), false);
  assert.equal(nm.checkMask({ maskBits: 16, mask: 1 }, 3), false);
  assert.equal(nm.checkMask({ maskBits: 32, mask: 0xffffffff }, 32), true);
  assert.equal(nm.checkMask({ maskBits: 32, mask: 0x80000000 }, 31), false);
  assert.equal(nm.checkMask({ maskBits: 16, mask: 0xffff }, 16), true);
  assert.equal(nm.checkMask({ maskBits: 8, mask: 1 }, 40), false);
});

test('Reassembler rules', async (t) => {
  const frag = (messageId, totalLength, offset, chunk) => ({ messageId, totalLength, offset, chunk: Uint8Array.from(chunk) });
  const cases = [
    { name: 'first fragment not at 0', seq: [frag(1, 4, 2, [1, 2])], code: 'fragment' },
    { name: 'over the cap', cfg: { maxTotal: 3 }, seq: [frag(1, 4, 0, [1])], code: 'too_large' },
    { name: 'interrupted by another id', seq: [frag(1, 4, 0, [1, 2]), frag(2, 4, 2, [3, 4])], code: 'fragment' },
    { name: 'total changed', seq: [frag(1, 4, 0, [1, 2]), frag(1, 5, 2, [3, 4])], code: 'fragment' },
    { name: 'gap', seq: [frag(1, 4, 0, [1]), frag(1, 4, 2, [3, 4])], code: 'fragment' },
    { name: 'overlap', seq: [frag(1, 4, 0, [1, 2]), frag(1, 4, 1, [2, 3, 4])], code: 'fragment' },
    { name: 'past total', seq: [frag(1, 2, 0, [1, 2, 3])], code: 'fragment' },
    { name: 'empty chunk', seq: [frag(1, 4, 0, [1]), frag(1, 4, 1, [])], code: 'fragment' },
    { name: 'empty first chunk', seq: [frag(1, 4, 0, [])], code: 'fragment' },
  ];
  for (const tc of cases) {
    await t.test(tc.name, () => {
      const r = new nm.Reassembler(tc.cfg);
      let err;
      for (const f of tc.seq) {
        try {
          r.push(f);
        } catch (e) {
          err = e;
          break;
        }
      }
      assert.ok(err instanceof nm.ProtocolError, 'want a ProtocolError');
      assert.equal(err.code, tc.code);
      assert.equal(err.offset, -1);
      assert.equal(r.inProgress, false, 'partial payload dropped');
      // The next payload starts afresh.
      assert.deepEqual(r.push(frag(9, 2, 0, [7, 8])), Uint8Array.from([7, 8]));
    });
  }
  await t.test('empty payload and back-to-back payloads', () => {
    const r = new nm.Reassembler();
    assert.deepEqual(r.push(frag(1, 0, 0, [])), new Uint8Array(0));
    assert.equal(r.push(frag(1, 3, 0, [1])), null);
    assert.equal(r.buffered, 1);
    const a = r.push(frag(1, 3, 1, [2, 3]));
    assert.deepEqual(a, Uint8Array.from([1, 2, 3]));
    const b = r.push(frag(1, 1, 0, [9]));
    assert.deepEqual(b, Uint8Array.from([9]));
    assert.deepEqual(a, Uint8Array.from([1, 2, 3]), 'a returned payload is not reused');
  });
  await t.test('large payload round trip', () => {
    const rng = new Rng(7);
    const payload = rng.bytes(200000);
    const frags = nm.fragment(payload, 0xffffffff);
    assert.equal(frags.length, Math.ceil(200000 / (nm.MAX_RELIABLE - nm.FRAGMENT_OVERHEAD)));
    const r = new nm.Reassembler();
    let out = null;
    for (const f of frags) {
      assert.ok(f.length <= nm.MAX_RELIABLE);
      nm.checkReliable(f);
      for (const m of nm.readMessages(f)) out = r.push(m);
    }
    assert.deepEqual(out, payload);
  });
  assert.throws(() => nm.fragment(new Uint8Array(1), 1, 17), RangeError);
  assert.throws(() => nm.fragment(new Uint8Array(1), 1, 16385), RangeError);
  assert.equal(nm.fragment(new Uint8Array(10), 1, 18).length, 10);
});

test('EntityUpdatesWriter fills datagrams and matches encode', () => {
  const rng = new Rng(3);
  for (let round = 0; round < 200; round++) {
    const limit = round % 2 ? nm.MAX_DATAGRAM : 13 + rng.int(400);
    const w = new nm.EntityUpdatesWriter(limit);
    const expected = [];
    for (let k = 0; k < 1 + rng.int(4); k++) {
      const time = BigInt(rng.next()) * 4096n + BigInt(rng.int(4096));
      if (!w.begin(time)) {
        assert.ok(w.length + 13 > limit);
        break;
      }
      const cur = { type: 5, time, updates: [] };
      expected.push(cur);
      for (;;) {
        const bits = [8, 16, 32][rng.int(3)];
        const u = {
          networkId: BigInt(rng.next()),
          maskBits: bits,
          mask: rng.next() % 2 ** bits,
          data: rng.bytes(rng.int(60)),
        };
        const fits = w.fits(u);
        assert.equal(w.add(u), fits);
        if (!fits) {
          assert.ok(w.length + nm.sizeUpdate(u) > limit);
          break;
        }
        cur.updates.push(u);
        assert.equal(w.count, cur.updates.length);
      }
    }
    const got = w.bytes();
    assert.ok(got.length <= limit);
    assert.equal(toHex(got), toHex(nm.encodeAll(expected)));
    assert.deepEqual([...nm.readMessages(got)].map(toJSON), expected.map(toJSON));
    w.clear();
    assert.equal(w.length, 0);
    assert.equal(w.add({ networkId: 1n, maskBits: 8, mask: 1, data: new Uint8Array(1) }), false, 'no message open');
  }
  const w = new nm.EntityUpdatesWriter();
  assert.ok(w.begin(1n));
  assert.throws(() => w.add({ networkId: 1n, maskBits: 8, mask: 256, data: new Uint8Array(0) }), RangeError);
  assert.throws(() => w.add({ networkId: 1n, maskBits: 12, mask: 1, data: new Uint8Array(0) }), RangeError);
});

test('encode rejects values the wire cannot carry', () => {
  const peer = (peerId) => ({ type: 1, peer: { peerIndex: 1n, peerId } });
  assert.throws(() => nm.encode(peer('a'.repeat(257))), RangeError);
  assert.throws(() => nm.encode(peer('é'.repeat(129))), RangeError);
  assert.throws(() => nm.encode(peer('x\ud800y')), RangeError);
  assert.equal(nm.encode(peer('é'.repeat(128))).length, 13 + 256);
  assert.throws(() => nm.encode({ type: 2, peerIndex: -1n }), RangeError);
  assert.throws(() => nm.encode({ type: 2, peerIndex: 1n << 64n }), RangeError);
  assert.throws(() => nm.encode({ type: 2, peerIndex: 1.5 }), RangeError);
  assert.equal(toHex(nm.encode({ type: 2, peerIndex: 258 })), '020201000000000000', 'a safe integer is accepted');
  assert.throws(() => nm.encode({ type: 5, time: 1n, updates: [{ networkId: 1n, maskBits: 8, mask: 0, data: new Uint8Array(16384) }] }), RangeError);
  assert.throws(() => nm.encode({ type: 6, messageId: 1, totalLength: 2, offset: 1, chunk: new Uint8Array(2) }), RangeError);
  assert.throws(() => nm.encode({ type: 4, rpcs: [{ type: 2 ** 32, data: new Uint8Array(0) }] }), RangeError);
  assert.throws(() => nm.encode({ type: 256, body: new Uint8Array(0) }), RangeError);
  assert.throws(() => nm.encodeFrame(3, new Uint8Array(0)), RangeError);
  assert.throws(() => nm.encode({ type: 4, rpcs: [{ type: 1, data: 'str' }] }), TypeError);
});

test('Close reasons are repaired and clipped like Go', () => {
  const round = (reason) => nm.decode(nm.encode({ type: 10, code: 1, reason })).msg.reason;
  assert.equal(round('bye'), 'bye');
  assert.equal(round('a\ud800b'), 'a\ufffdb');
  assert.equal(round('r'.repeat(300)), 'r'.repeat(256));
  // 85 three-byte characters are 255 bytes; the 86th would cross 256 and is cut whole.
  assert.equal(round('x' + '例'.repeat(100)), 'x' + '例'.repeat(85));
  assert.equal(round('🦊'.repeat(70)), '🦊'.repeat(64));
  assert.throws(() => nm.encode({ type: 10, code: 65536, reason: '' }), RangeError);
});

test('UTF-8 checks follow Go (overlong, surrogates, BOM kept)', () => {
  const entered = (idHex) => {
    const id = fromHex(idHex);
    const b = new Uint8Array(13 + id.length);
    b[0] = 1;
    new DataView(b.buffer).setUint32(9, id.length, true);
    b.set(id, 13);
    return b;
  };
  for (const bad of ['c0af', 'eda080', 'e4be', 'ff', 'f4908080', 'e08080']) {
    const err = protocolError(() => nm.decode(entered(bad)));
    assert.equal(err.code, 'invalid_peer_id', bad);
    assert.equal(err.offset, 13, bad);
  }
  const bom = nm.decode(entered('efbbbf41')).msg;
  assert.equal(bom.peer.peerId, '\ufeffA');
  assert.equal(toHex(nm.encode(bom)), toHex(entered('efbbbf41')));
});

/** Runs fn and requires that it returns or throws a ProtocolError, nothing else. */
function onlyProtocolErrors(fn, input) {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof nm.ProtocolError)) {
      assert.fail(`input ${toHex(input).slice(0, 200)}: ${err && err.stack}`);
    }
    assert.ok(Number.isInteger(err.offset) && err.offset >= -1 && err.offset <= input.length, `offset ${err.offset}`);
    return undefined;
  }
}

/** Decodes every message of a payload and re-encodes it: the bytes must be the same. */
function roundTrip(input) {
  let off = 0;
  while (off < input.length) {
    const { msg, n } = nm.decode(input, off);
    assert.ok(n > 0 && off + n <= input.length);
    assert.equal(toHex(nm.encode(msg)), toHex(input.subarray(off, off + n)), 're-encode');
    off += n;
  }
}

function goldenCorpus() {
  const corpus = [];
  for (const f of [...Object.keys(MESSAGE_FILES), 'ext.json', 'payload.json', 'invalid.json']) {
    for (const v of readJSON(`${DIR}/${f}`)) corpus.push(fromHex(v.hex));
  }
  for (const v of readJSON(`${DIR}/fragmentation.json`)) for (const h of v.fragments) corpus.push(fromHex(h));
  return corpus;
}

test('fuzz: random and mutated payloads only ever raise ProtocolError', () => {
  const rng = new Rng(20240611);
  const corpus = goldenCorpus();
  const started = Date.now();
  let runs = 0;
  for (; runs < 15000 && Date.now() - started < 1500; runs++) {
    let input;
    const mode = rng.int(4);
    if (mode === 0) {
      input = rng.bytes(rng.int(64));
      if (input.length > 0) input[0] = rng.int(16); // favour defined types
    } else {
      const base = corpus[rng.int(corpus.length)];
      input = base.slice();
      const flips = 1 + rng.int(4);
      for (let i = 0; i < flips && input.length > 0; i++) {
        const at = rng.int(input.length);
        input[at] = mode === 1 ? rng.next() & 0xff : input[at] ^ (1 << rng.int(8));
      }
      if (mode === 3) input = input.subarray(0, rng.int(input.length + 1));
    }
    onlyProtocolErrors(() => roundTrip(input), input);
    onlyProtocolErrors(() => [...nm.readMessages(input)], input);
    onlyProtocolErrors(() => nm.decodeFrame(input), input);
    onlyProtocolErrors(() => nm.checkDatagram(input), input);
  }
  assert.ok(runs >= 1000, `only ${runs} runs`);
});

test('fuzz: random fragment sequences only ever raise ProtocolError', () => {
  const rng = new Rng(99);
  const r = new nm.Reassembler({ maxTotal: 64 });
  for (let i = 0; i < 20000; i++) {
    const total = rng.int(80);
    const f = {
      messageId: rng.int(3),
      totalLength: total,
      offset: rng.int(2) ? r.buffered : rng.int(80),
      chunk: rng.bytes(rng.int(20)),
    };
    const out = onlyProtocolErrors(() => r.push(f), new Uint8Array(0));
    if (out) assert.equal(out.length, total);
  }
});
