// The application API in JS (world.js unset/append/values/sendMessage/sendAction/grant/revoke and
// the rpc hooks), between a browser host and two browser members over in-test links, as Go's
// peer/app_api_test.go does it: every peer is a real Peer, every byte crosses netmsg.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Peer } from '../static/js/peer.js';
import { Game, SCHEMA_BOX, BOX_POS } from '../static/js/arena.js';
import { ROOM_ENTITY, EVERYONE, MAX_APPEND_VALUE, MAX_UNRELIABLE_MESSAGE, Ev, RPC_APPEND } from '../static/js/world.js';
import { DEFAULT_APPEND_RETENTION } from '../static/js/crdt.js';
import { APP_BURST, APP_RATE } from '../static/js/host.js';

const HOST = 1;
const CHAT = 5000;
const utf8 = new TextEncoder();
const text = new TextDecoder();

/** The arena game with every application hook, recording what it hears. */
class ApiGame extends Game {
  constructor() {
    super({ boxes: 1 });
    this.msgs = [];
    this.actions = [];
    this.rpcs = [];
    this.events = [];
    this.openChat = false;
    this.denyRelay = -1;
  }

  message(w, from, type, data) { this.msgs.push([from, type, text.decode(data)]); }
  action(w, from, type, data) { this.actions.push([from, type, text.decode(data)]); }
  rpc(w, from, type, data) { this.rpcs.push([from, type, text.decode(data)]); }
  onEvent(w, ev) { this.events.push(ev); }
  allowAppend(w, from, e, c) { return this.openChat && e === ROOM_ENTITY && c === CHAT; }
  allowRelay(w, from, to, type) { return type !== this.denyRelay; }

  take() {
    const out = { msgs: this.msgs, actions: this.actions, rpcs: this.rpcs };
    this.msgs = [];
    this.actions = [];
    this.rpcs = [];
    return out;
  }
}

/** One end of an in-test link: what it sends waits in the room's queue for pump(). */
class Wire {
  constructor(room, to, toRemote) { Object.assign(this, { room, to, toRemote, dead: false }); }
  send(ch, bytes) {
    if (this.dead) return false;
    this.room.queue.push({ to: this.to, r: this.toRemote(), ch, bytes: bytes.slice() });
    return true;
  }
  close() { this.dead = true; }
  buffered() { return 0; } // delivered by pump(), nothing waits
}

function pump(room) {
  for (let n = 0; room.queue.length > 0; n++) {
    assert.ok(n < 10000, 'the peers keep talking');
    const { to, r, ch, bytes } = room.queue.shift();
    to.step(() => to.linkMessage(r, ch, bytes));
  }
}

/**
 * A browser host (1) and two synced browser members (2, 3), each with an ApiGame.
 * @param {object} [opts] more Peer options of every peer
 */
function newRoom(opts = {}) {
  const room = { queue: [], peers: new Map(), games: new Map() };
  const idxs = [HOST, 2, 3];
  for (const idx of idxs) {
    const game = new ApiGame();
    const p = new Peer({ app: game, kind: idx === HOST ? 'host' : 'browser', memory: true, log: () => {}, ...opts });
    p.w.self = idx;
    for (const j of idxs) p.members.set(j, { peerIndex: j, peerId: `user${j}/device`, kind: j === HOST ? 'host' : 'browser' });
    room.peers.set(idx, p);
    room.games.set(idx, game);
  }
  const host = room.peers.get(HOST);
  host.step(() => host.setHost(1, HOST));
  for (const idx of [2, 3]) {
    const m = room.peers.get(idx);
    m.step(() => m.setHost(1, HOST));
    const mr = m.member.hostLink;
    const hr = host.connect(idx, mr.session, false, true);
    hr.link = new Wire(room, m, () => mr);
    hr.ready = true;
    mr.link = new Wire(room, host, () => hr);
    mr.ready = true;
    m.step(() => m.linkReady(mr));
    pump(room);
    assert.ok(m.member.synced, `member ${idx} synced`);
  }
  [room.box] = host.w.entitiesOf(SCHEMA_BOX);
  return room;
}

function stop(room) { for (const p of room.peers.values()) p.stop(); }

/** Runs fn on peer idx's world as one step, then delivers everything. */
function on(room, idx, fn) {
  const p = room.peers.get(idx);
  p.step(() => fn(p.w));
  pump(room);
}

function flush(room, idx) {
  const p = room.peers.get(idx);
  p.step(() => p.flushUpdates());
  pump(room);
}

function sameHash(room) {
  const want = room.peers.get(HOST).w.r.hash();
  for (const [idx, p] of room.peers) assert.equal(p.w.r.hash(), want, `peer ${idx} replica hash`);
}

test('unset deletes a property everywhere, with the authority set needs', () => {
  const room = newRoom();
  try {
    on(room, HOST, (w) => w.unset(room.box, BOX_POS));
    for (const [idx, p] of room.peers) {
      assert.equal(p.w.get(room.box, BOX_POS), undefined, `peer ${idx} still has the box pos`);
      assert.ok(room.games.get(idx).events.some((ev) => ev.kind === Ev.Unset && ev.entity === room.box), `peer ${idx} heard unset`);
    }
    assert.throws(() => room.peers.get(2).w.unset(room.box, BOX_POS), { code: 'no_authority' });
    const a2 = room.peers.get(2).w.avatarOf(2);
    on(room, 2, (w) => w.unset(a2, 0));
    for (const [idx, p] of room.peers) assert.equal(p.w.get(a2, 0), undefined, `peer ${idx} still has member 2's avatar pos`);
    sameHash(room);
  } finally {
    stop(room);
  }
});

test('append sets: a chat log through the host\'s allowAppend, bounded, the same on every peer', () => {
  const room = newRoom();
  try {
    on(room, 2, (w) => w.append(ROOM_ENTITY, CHAT, utf8.encode('refused')));
    assert.equal(room.peers.get(HOST).w.values(ROOM_ENTITY, CHAT).length, 0, 'no policy, no append');
    room.games.get(HOST).openChat = true;
    on(room, 2, (w) => w.append(ROOM_ENTITY, CHAT, utf8.encode('hello')));
    on(room, 3, (w) => w.append(ROOM_ENTITY, CHAT, utf8.encode('world')));
    on(room, HOST, (w) => w.append(ROOM_ENTITY, CHAT, utf8.encode('from the host')));
    for (const [idx, p] of room.peers) {
      assert.deepEqual(p.w.values(ROOM_ENTITY, CHAT).map((v) => text.decode(v)), ['hello', 'world', 'from the host'], `peer ${idx} chat`);
      assert.ok(room.games.get(idx).events.some((ev) => ev.kind === Ev.Appended && ev.component === CHAT), `peer ${idx} heard appended`);
    }
    on(room, HOST, (w) => { for (let i = 0; i < DEFAULT_APPEND_RETENTION + 20; i++) w.append(ROOM_ENTITY, CHAT, utf8.encode(`line ${i}`)); });
    for (const [idx, p] of room.peers) {
      const vals = p.w.values(ROOM_ENTITY, CHAT);
      assert.equal(vals.length, DEFAULT_APPEND_RETENTION, `peer ${idx} keeps the newest ${DEFAULT_APPEND_RETENTION}`);
      assert.equal(text.decode(vals[vals.length - 1]), `line ${DEFAULT_APPEND_RETENTION + 19}`);
    }
    const w2 = room.peers.get(2).w;
    assert.throws(() => w2.append(ROOM_ENTITY, CHAT, new Uint8Array(MAX_APPEND_VALUE + 1)), { code: 'too_large' });
    assert.throws(() => w2.append(ROOM_ENTITY, 2, new Uint8Array(1)), { code: 'bad_component' });
    sameHash(room);
  } finally {
    stop(room);
  }
});

test('application messages reach the host, one member through the host, or everyone, with the sender', () => {
  const room = newRoom();
  try {
    const take = (idx) => room.games.get(idx).take().msgs;
    on(room, 2, (w) => w.sendMessage(HOST, 130, utf8.encode('to host')));
    on(room, 2, (w) => w.sendMessage(HOST, 131, utf8.encode('unreliable'), false));
    assert.deepEqual(take(HOST), [[2, 130, 'to host'], [2, 131, 'unreliable']]);
    on(room, 2, (w) => w.sendMessage(3, 140, utf8.encode('typing…')));
    assert.deepEqual(take(3), [[2, 140, 'typing…']]);
    assert.deepEqual(take(HOST), []);
    on(room, 3, (w) => w.sendMessage(EVERYONE, 150, utf8.encode('all'), false));
    assert.deepEqual(take(HOST), [[3, 150, 'all']]);
    assert.deepEqual(take(2), [[3, 150, 'all']]);
    assert.deepEqual(take(3), []);
    on(room, HOST, (w) => {
      w.sendMessage(EVERYONE, 200, utf8.encode('from the host'));
      w.sendMessage(2, 201, utf8.encode('just you'));
    });
    assert.deepEqual(take(2), [[HOST, 200, 'from the host'], [HOST, 201, 'just you']]);
    assert.deepEqual(take(3), [[HOST, 200, 'from the host']]);
    room.games.get(HOST).denyRelay = 160;
    on(room, 2, (w) => w.sendMessage(3, 160, utf8.encode('denied')));
    assert.deepEqual(take(3), []);
    const w2 = room.peers.get(2).w;
    assert.throws(() => w2.sendMessage(HOST, 127, new Uint8Array(0)), { code: 'bad_message_type' });
    assert.throws(() => w2.sendMessage(HOST, 128, new Uint8Array(MAX_UNRELIABLE_MESSAGE + 1), false), { code: 'too_large' });
    assert.throws(() => w2.sendMessage(2, 128, new Uint8Array(0)), { code: 'no_peer' });
    // A flood is cut at the host's budget; the member keeps its link.
    // The budget refills at APP_RATE in real time while the flood goes through (slowly on a
    // loaded machine): what it could have refilled meanwhile is allowed on top of the burst.
    const start = performance.now();
    on(room, 2, (w) => { for (let i = 0; i < 3 * APP_BURST; i++) w.sendMessage(HOST, 128, utf8.encode('x')); });
    const got = take(HOST).length;
    const refill = Math.ceil((performance.now() - start) / 1000 * APP_RATE);
    assert.ok(got >= APP_BURST - 10 && got <= APP_BURST + 10 + refill, `host took ${got} of a flood, want about ${APP_BURST} (+${refill} refilled)`);
    assert.ok(room.peers.get(2).member.hostLink.ready, 'the flooding member keeps its link');
  } finally {
    stop(room);
  }
});

test('actions and RPCs: a member\'s to the host, the host\'s to every member', () => {
  const room = newRoom();
  try {
    on(room, 2, (w) => {
      w.sendAction(7, utf8.encode('jump'));
      w.sendRPC(9, utf8.encode('call'));
    });
    let got = room.games.get(HOST).take();
    assert.deepEqual(got.actions, [[2, 7, 'jump']]);
    assert.deepEqual(got.rpcs, [[2, 9, 'call']]);
    on(room, HOST, (w) => {
      w.sendAction(8, utf8.encode('replay'));
      w.broadcastRPC(10, utf8.encode('all'));
    });
    for (const idx of [2, 3]) {
      got = room.games.get(idx).take();
      assert.deepEqual(got.actions, [[HOST, 8, 'replay']], `member ${idx} actions`);
      assert.deepEqual(got.rpcs, [[HOST, 10, 'all']], `member ${idx} RPCs`);
    }
    assert.throws(() => room.peers.get(HOST).w.broadcastRPC(0xffffff00, new Uint8Array(0)), { code: 'no_authority' });
    assert.throws(() => room.peers.get(2).w.broadcastRPC(1, new Uint8Array(0)), { code: 'not_host' });
  } finally {
    stop(room);
  }
});

test('grant hands a host entity to a member as an AuthorityTransfer; revoke takes it back', () => {
  const room = newRoom();
  try {
    on(room, HOST, (w) => w.grant(room.box, 2));
    for (const [idx, p] of room.peers) assert.equal(p.w.authority(room.box), 2, `peer ${idx} sees member 2 write the box`);
    assert.ok(room.peers.get(2).w.canWrite(room.box));
    assert.ok(!room.peers.get(3).w.canWrite(room.box));
    const pos = new Uint8Array(room.peers.get(2).w.get(room.box, BOX_POS));
    pos[0] ^= 0x55;
    on(room, 2, (w) => w.set(room.box, BOX_POS, pos));
    flush(room, 2);
    flush(room, HOST);
    assert.deepEqual(room.peers.get(3).w.get(room.box, BOX_POS), pos, 'member 3 sees member 2\'s write');
    assert.throws(() => room.peers.get(3).w.set(room.box, BOX_POS, pos), { code: 'no_authority' });
    assert.throws(() => room.peers.get(2).w.grant(room.box, 3), { code: 'not_host' });
    const a3 = room.peers.get(HOST).w.avatarOf(3);
    assert.throws(() => room.peers.get(HOST).w.grant(a3, 2), /not_lockable/);
    on(room, HOST, (w) => w.revoke(room.box));
    for (const [idx, p] of room.peers) assert.equal(p.w.authority(room.box), HOST, `peer ${idx} sees the host write the box again`);
    assert.ok(!room.peers.get(2).w.canWrite(room.box));
    sameHash(room);
  } finally {
    stop(room);
  }
});

/** Member idx asks the host for an append as a hostile member would, past its own world's checks. */
function requestAppend(room, idx, e, c, value) {
  const b = new Uint8Array(8 + value.length);
  const dv = new DataView(b.buffer);
  dv.setUint32(0, e >>> 0, true);
  dv.setUint32(4, c >>> 0, true);
  b.set(value, 8);
  const p = room.peers.get(idx);
  p.step(() => p.rpcToHost(RPC_APPEND, b));
  pump(room);
}

test('world bounds: append sets per entity, a member\'s bytes and the room\'s are refused past their limits (Go\'s TestWorldLimitsBoundAppends)', () => {
  const limits = { appendSets: 2, memberBytes: 8 << 10, roomBytes: 16 << 10 };
  const room = newRoom({ worldLimits: limits });
  try {
    const host = room.peers.get(HOST);
    const a2 = host.w.avatarOf(2);
    const a3 = host.w.avatarOf(3);
    const value = (i) => { const v = new Uint8Array(1000); v[0] = i; v[1] = i >> 8; return v; };
    // Append sets: 5 components asked, 2 admitted.
    for (let c = 0; c < 5; c++) requestAppend(room, 2, a2, 6000 + c, value(c));
    assert.equal(host.w.r.appendSets(a2, 0).n, 2);
    assert.equal(host.status().refusedBy.append_sets, 3);
    // The member's budget: its writes add at most memberBytes.
    const start = host.w.r.bytes;
    for (let i = 0; i < 20; i++) requestAppend(room, 2, a2, 6000 + (i % 2), value(100 + i));
    assert.ok(host.status().refusedBy.member_world_bytes > 0, 'refused past the member budget');
    assert.ok(host.w.r.bytes - start <= limits.memberBytes, `member 2 grew the world by ${host.w.r.bytes - start}`);
    // The room's: member 3 has a budget of its own, the world stops at roomBytes.
    for (let i = 0; i < 12; i++) requestAppend(room, 3, a3, 6000, value(200 + i));
    const st = host.status();
    assert.ok(st.refusedBy.world_bytes > 0, `refused past the room bound: ${JSON.stringify(st.refusedBy)}`);
    assert.ok(host.w.r.bytes <= limits.roomBytes, `world of ${host.w.r.bytes} bytes`);
    assert.equal(st.worldBytes, host.w.r.bytes);
    assert.equal(st.worldBytes, host.w.r.appendState().length);
    assert.ok(st.refused >= 3 + st.refusedBy.member_world_bytes + st.refusedBy.world_bytes);
    // The host's own append and a member's, past the room bound, throw.
    assert.throws(() => host.w.append(a3, 6000, value(999)), { code: 'world_limit' });
    assert.throws(() => room.peers.get(3).w.append(a3, 6000, value(998)), { code: 'world_limit' });
    // Honest play goes on and every replica agrees.
    const pos = new Uint8Array(room.peers.get(3).w.get(a3, 0));
    pos[0] ^= 0x55;
    on(room, 3, (w) => w.set(a3, 0, pos));
    flush(room, 3);
    flush(room, HOST);
    assert.deepEqual(room.peers.get(2).w.get(a3, 0), pos, 'member 2 sees member 3 move');
    sameHash(room);
  } finally {
    stop(room);
  }
});
