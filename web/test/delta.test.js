// The JavaScript member's delta decoder against a Go host's DeltaUpdates (testdata/peer/
// delta_updates.json, written by peer/delta_crosslang_test.go): every delivered step rebuilds
// exactly the values the Go host sent, lost steps are never acknowledged, and the Acks are what
// the Go member would send.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as netmsg from '../static/js/netmsg.js';
import { SchemaTable, deltaCapable } from '../static/js/schema.js';
import { DeltaRx, putRing, rebuild } from '../static/js/delta.js';
import { readJSON, fromHex, toHex } from './helpers.js';

const run = readJSON('testdata/peer/delta_updates.json');

test('a Go host\'s DeltaUpdates rebuild to its exact values in JavaScript', () => {
  const s = new SchemaTable([run.schema]).lookup(run.schema.id);
  const x = new DeltaRx(null);
  let deltas = 0;
  assert.ok(run.steps.length >= 10);
  for (const step of run.steps) {
    const { msg, n } = netmsg.decode(fromHex(step.hex));
    assert.equal(n, step.hex.length / 2);
    assert.equal(msg.type, netmsg.Type.DeltaUpdates);
    assert.equal(msg.seq, BigInt(step.seq));
    if (step.lost) continue;
    x.received(msg.seq);
    const u = msg.updates[0];
    assert.equal(Number(u.networkId), run.entity);
    const de = x.rings(run.entity, s.properties.length);
    const vals = rebuild(s, de, u, msg.seq);
    assert.deepEqual(vals.map((v) => v.v && toHex(v.v)), step.values, `step ${step.seq}`);
    for (const { i, v, delta } of vals) {
      if (delta) deltas++;
      if (v && deltaCapable(s.properties[i])) putRing(de.rings[i], msg.seq, v);
    }
    const a = x.pendingAck();
    assert.ok(a, `an Ack after step ${step.seq}`);
    assert.equal(a.highest, msg.seq);
  }
  assert.ok(deltas >= 10, `${deltas} values came as differences`);
});
