// The voice client (docs/protocol.md §10): the forwarder's messages, the slot table, the answer's
// directions, the proximity gain/pan math, and a session's offer/answer/mute/leave against a fake
// RTCPeerConnection and fetch. No network, no media.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  parseVoiceMessage, SlotTable, answerDirections, falloff, spatial, rmsToLevel, speaking, voiceURL,
  VoiceClient, VoiceError, voiceClaim, SILENCE, MAX_MESSAGE, DEFAULT_SLOTS,
} from '../static/js/voice.js';
import * as index from '../static/js/index.js';

test('the package index exports the voice client', () => {
  assert.equal(index.VoiceClient, VoiceClient);
  assert.equal(index.spatial, spatial);
});

test('parseVoiceMessage reads slots, levels and bye, and refuses anything else', () => {
  const s = parseVoiceMessage('{"t":"slots","slots":{"1":"7","2":null,"3":12}}');
  assert.deepEqual(s, { t: 'slots', slots: new Map([['1', '7'], ['2', ''], ['3', '12']]) });
  const l = parseVoiceMessage('{"t":"levels","levels":{"7":30,"9":200,"4":-3,"5":12.6}}');
  assert.deepEqual(l, { t: 'levels', levels: new Map([['7', 30], ['9', SILENCE], ['4', 0], ['5', 13]]) });
  assert.deepEqual(parseVoiceMessage('{"t":"bye","reason":"room closed"}'), { t: 'bye', reason: 'room closed' });
  assert.deepEqual(parseVoiceMessage('{"t":"bye"}'), { t: 'bye', reason: '' });
  for (const bad of [
    'not json', '[]', 'null', '{"t":"mute","muted":true}', '{"t":"slots","slots":[1]}', '{"t":"slots","slots":{"1":{}}}',
    '{"t":"levels","levels":{"7":"loud"}}', '{"t":"levels"}', 42, new ArrayBuffer(4),
    JSON.stringify({ t: 'bye', reason: 'x'.repeat(MAX_MESSAGE) }),
  ]) assert.equal(parseVoiceMessage(bad), null, String(bad).slice(0, 40));
});

test('SlotTable applies slot changes, ignores unknown slots, and never names one member twice', () => {
  const t = new SlotTable(['1', '2', '3']);
  assert.deepEqual(t.apply(new Map([['1', '7'], ['2', '9'], ['8', '5']])), [
    { mid: '1', from: '', to: '7' }, { mid: '2', from: '', to: '9' },
  ]);
  assert.equal(t.speakerOf('1'), '7');
  assert.equal(t.slotOf('9'), '2');
  assert.equal(t.speakerOf('8'), '');
  // A partial message leaves the other slots alone; unchanged ones are no change.
  assert.deepEqual(t.apply(new Map([['2', ''], ['1', '7']])), [{ mid: '2', from: '9', to: '' }]);
  // The forwarder moved 7 from slot 1 to slot 3: the later slot keeps it.
  assert.deepEqual(t.apply(new Map([['3', '7']])), [{ mid: '1', from: '7', to: '' }, { mid: '3', from: '', to: '7' }]);
  assert.deepEqual(t.members(), ['7']);
  assert.equal(t.slotOf('9'), '');
});

const ANSWER = [
  'v=0', 'o=- 1 1 IN IP4 127.0.0.1', 's=-', 't=0 0',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'a=mid:0', 'a=recvonly',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'a=mid:1', 'a=sendonly',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'a=mid:2', 'a=sendonly',
  'm=audio 0 UDP/TLS/RTP/SAVPF 111', 'a=mid:3', 'a=inactive',
  'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'a=mid:4', '',
].join('\r\n');

test('answerDirections lists each section\'s mid and direction (sendrecv when none is given)', () => {
  assert.deepEqual(answerDirections(ANSWER), [
    { kind: 'audio', mid: '0', direction: 'recvonly' }, { kind: 'audio', mid: '1', direction: 'sendonly' },
    { kind: 'audio', mid: '2', direction: 'sendonly' }, { kind: 'audio', mid: '3', direction: 'inactive' },
    { kind: 'application', mid: '4', direction: 'sendrecv' },
  ]);
});

test('falloff: full volume up close, to zero at the radius (linear or inverse), a floor without a radius', () => {
  assert.equal(falloff(0), 1);
  assert.equal(falloff(1000), 1);
  assert.equal(falloff(6000), 0);
  assert.equal(falloff(9000), 0);
  assert.ok(Math.abs(falloff(3500) - 0.5) < 1e-9);
  let last = 2;
  for (let d = 0; d <= 6000; d += 250) {
    const g = falloff(d);
    assert.ok(g <= last && g >= 0 && g <= 1, `linear not falling at ${d}`);
    last = g;
  }
  assert.equal(falloff(500, { model: 'inverse' }), 1);
  assert.ok(Math.abs(falloff(2000, { model: 'inverse' }) - 0.5) < 1e-9);
  assert.ok(falloff(5900, { model: 'inverse' }) < 0.1);
  assert.equal(falloff(6000, { model: 'inverse' }), 0);
  // radius 0: everyone hears everyone, far ones quietly.
  assert.equal(falloff(500, { radius: 0 }), 1);
  assert.equal(falloff(4000, { radius: 0 }), 0.25);
  assert.equal(falloff(1e6, { radius: 0 }), 0.1);
  // A tiny radius still ends at zero.
  assert.equal(falloff(1000, { radius: 1000 }), 0);
  assert.equal(falloff(NaN), 0);
});

test('spatial places the speaker relative to the listener in metres, up the screen in front', () => {
  const me = { x: 5000, y: 5000 };
  const right = spatial(me, { x: 7000, y: 5000 });
  assert.deepEqual({ x: right.x, y: right.y, z: right.z, distance: right.distance }, { x: 2, y: 0, z: 0, distance: 2000 });
  assert.ok(Math.abs(right.gain - 0.8) < 1e-9);
  const above = spatial(me, { x: 5000, y: 2000 });
  assert.equal(above.z, -3);
  assert.equal(above.x, 0);
  const same = spatial(me, me);
  assert.equal(same.gain, 1);
  assert.ok(same.z < 0 && same.x === 0);
  assert.equal(spatial(me, { x: 12000, y: 5000 }).gain, 0);
});

test('rmsToLevel is −dBov clamped to RFC 6464\'s range; speaking is louder than −50 dBov', () => {
  assert.equal(rmsToLevel(1), 0);
  assert.equal(rmsToLevel(0.1), 20);
  assert.equal(rmsToLevel(0.001), 60);
  assert.equal(rmsToLevel(0), SILENCE);
  assert.equal(rmsToLevel(1e-9), SILENCE);
  assert.equal(rmsToLevel(4), 0);
  assert.ok(speaking(20));
  assert.ok(!speaking(60));
  assert.ok(!speaking(undefined));
});

test('voiceURL escapes the room and the member', () => {
  assert.equal(voiceURL('', 'arena', '3'), '/voice/arena?member=3');
  assert.equal(voiceURL('http://127.0.0.1:8080/', 'a b/c', 'u/d'), 'http://127.0.0.1:8080/voice/a%20b%2Fc?member=u%2Fd');
});

// ---------------------------------------------------------------------------------------------
// A session against fakes.

class FakeTrack {
  constructor() { this.enabled = true; this.stopped = false; this.kind = 'audio'; }
  stop() { this.stopped = true; }
}

class FakeStream {
  constructor() { this.tracks = [new FakeTrack()]; }
  getAudioTracks() { return this.tracks; }
  getTracks() { return this.tracks; }
}

class FakeChannel {
  constructor(label, opts) {
    this.label = label;
    this.opts = opts;
    this.readyState = 'connecting';
    this.sent = [];
    this.onopen = null;
    this.onmessage = null;
    this.onclose = null;
  }
  send(s) { this.sent.push(JSON.parse(s)); }
  close() { this.readyState = 'closed'; }
  open() { this.readyState = 'open'; this.onopen && this.onopen(); }
}

function fakePC({ onRemote } = {}) {
  const made = [];
  class FakePC extends EventTarget {
    constructor(config) {
      super();
      this.config = config;
      this.transceivers = [];
      this.channels = [];
      this.iceGatheringState = 'new';
      this.localDescription = null;
      this.remote = null;
      this.closed = false;
      made.push(this);
    }
    addTransceiver(trackOrKind, init) {
      const t = { track: trackOrKind, direction: init.direction, streams: init.streams, mid: null,
        receiver: { getStats: async () => new Map([['r', { type: 'inbound-rtp', packetsReceived: 50, bytesReceived: 4000, audioLevel: 0.3 }]]) },
        sender: { getStats: async () => new Map([['s', { type: 'outbound-rtp', packetsSent: 70 }]]) } };
      this.transceivers.push(t);
      return t;
    }
    createDataChannel(label, opts) {
      const c = new FakeChannel(label, opts);
      this.channels.push(c);
      return c;
    }
    async createOffer() {
      const lines = ['v=0'];
      this.transceivers.forEach((t, i) => lines.push('m=audio 9 UDP/TLS/RTP/SAVPF 111', `a=mid:${i}`, `a=${t.direction}`));
      lines.push('m=application 9 UDP/DTLS/SCTP webrtc-datachannel', `a=mid:${this.transceivers.length}`);
      return { type: 'offer', sdp: lines.join('\r\n') + '\r\n' };
    }
    async setLocalDescription(d) {
      this.localDescription = d;
      this.transceivers.forEach((t, i) => { t.mid = String(i); });
      // Gathering completes a little later, as in a browser.
      setTimeout(() => {
        this.iceGatheringState = 'complete';
        this.localDescription = { ...d, sdp: d.sdp + 'a=candidate:1 1 udp 1 127.0.0.1 5000 typ host\r\n' };
        this.dispatchEvent(new Event('icegatheringstatechange'));
      }, 5);
    }
    async setRemoteDescription(d) {
      this.remote = d;
      if (onRemote) onRemote(this);
    }
    close() { this.closed = true; }
  }
  return { FakePC, made };
}

/**
 * A fake forwarder: answers a POST with an answer whose directions it chooses.
 * @param {{status?: number, mic?: string, slots?: string[]}} how
 */
function fakeFetch(how) {
  const calls = [];
  const f = async (url, init) => {
    calls.push({ url, init });
    if (init.method === 'DELETE') return { status: 204, text: async () => '', headers: new Map() };
    const status = how.status || 201;
    if (status !== 201) return { status, text: async () => 'refused\n', headers: new Map(how.headers || []) };
    const n = (init.body.match(/^m=audio/gm) || []).length;
    const lines = ['v=0', 'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'a=mid:0', `a=${how.mic || 'recvonly'}`];
    for (let i = 1; i < n; i++) lines.push('m=audio 9 UDP/TLS/RTP/SAVPF 111', `a=mid:${i}`, `a=${(how.slots && how.slots[i - 1]) || 'sendonly'}`);
    const headers = new Map([['Location', '/voice/arena/s42']]);
    return { status: 201, text: async () => lines.join('\r\n') + '\r\n', headers: { get: (k) => headers.get(k) } };
  };
  return { f, calls };
}

test('join offers the mic sendrecv then K recvonly slots and a voice channel, complete, with the token; mute and leave', async () => {
  const { FakePC, made } = fakePC();
  const { f, calls } = fakeFetch({ slots: ['sendonly', 'sendonly', 'inactive'] });
  const mic = new FakeStream();
  let asked = 0;
  const servers = [{ urls: ['turn:127.0.0.1:3478'], username: 'u', credential: 'p' }];
  const changes = [];
  const tracks = [];
  let closed = '';
  const v = new VoiceClient({
    room: 'arena', member: '3', token: async () => 'TOKEN', url: 'http://127.0.0.1:8080', slots: 3,
    iceServers: () => servers, RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (f),
    getUserMedia: async () => { asked++; return /** @type {any} */ (mic); },
    onSlots: (c) => changes.push(...c), onTrack: (mid, tr) => tracks.push([mid, tr]), onClose: (r) => { closed = r; },
  });
  await v.join();
  const pc = made[0];
  assert.deepEqual(pc.config, { iceServers: servers });
  assert.deepEqual(pc.transceivers.map((t) => t.direction), ['sendrecv', 'recvonly', 'recvonly', 'recvonly']);
  assert.equal(pc.transceivers[0].track, mic.tracks[0]);
  assert.equal(pc.channels[0].label, 'voice');
  assert.equal(pc.channels[0].opts.ordered, true);
  const post = calls[0];
  assert.equal(post.url, 'http://127.0.0.1:8080/voice/arena?member=3');
  assert.equal(post.init.method, 'POST');
  assert.equal(post.init.headers['Content-Type'], 'application/sdp');
  assert.equal(post.init.headers.Authorization, 'Bearer TOKEN');
  assert.match(post.init.body, /a=candidate:/, 'the offer is posted after gathering completed');
  assert.equal(v.state, 'live');
  assert.equal(v.publishing, true);
  assert.equal(v.location, 'http://127.0.0.1:8080/voice/arena/s42');
  // Muted by default: the track sends nothing, and the forwarder hears so when the channel opens.
  assert.equal(mic.tracks[0].enabled, false);
  pc.channels[0].open();
  assert.deepEqual(pc.channels[0].sent, [{ t: 'mute', muted: true }]);
  v.mute(false);
  assert.equal(mic.tracks[0].enabled, true);
  assert.deepEqual(pc.channels[0].sent.at(-1), { t: 'mute', muted: false });
  // The slot answered inactive is not a slot; messages fill the others.
  assert.deepEqual([...v.table.speakers.keys()], ['1', '2']);
  pc.channels[0].onmessage({ data: '{"t":"slots","slots":{"1":"5","3":"6"}}' });
  assert.deepEqual(changes, [{ mid: '1', from: '', to: '5' }]);
  pc.channels[0].onmessage({ data: '{"t":"levels","levels":{"5":20,"3":127}}' });
  assert.equal(v.levels.get('5'), 20);
  pc.channels[0].onmessage({ data: 'garbage' });
  assert.equal(v.ignored, 1);
  pc.ontrack({ transceiver: pc.transceivers[1], track: 'T1' });
  pc.ontrack({ transceiver: pc.transceivers[0], track: 'echo' });
  assert.deepEqual(tracks, [['1', 'T1']]);
  const st = await v.stats();
  assert.deepEqual(st.slots.map((s) => [s.mid, s.member, s.packetsReceived]), [['1', '5', 50], ['2', '', 50]]);
  assert.equal(st.packetsSent, 70);

  await v.leave();
  assert.equal(pc.closed, true);
  assert.equal(closed, 'left');
  const del = calls[1];
  assert.equal(del.url, 'http://127.0.0.1:8080/voice/arena/s42');
  assert.equal(del.init.method, 'DELETE');
  assert.equal(del.init.headers.Authorization, 'Bearer TOKEN');
  // A rejoin reuses the microphone: it is asked for once.
  await v.join();
  assert.equal(asked, 1);
  assert.equal(made.length, 2);
  await v.leave({ release: true });
  assert.equal(mic.tracks[0].stopped, true);
});

test('a slots message that runs before the answer is applied is kept (the channel opened first)', async () => {
  // Chromium on a loaded machine: the forwarder's first mapping arrives on the channel before the
  // task that resolves setRemoteDescription; the slots it names must stay named.
  const { FakePC } = fakePC({
    onRemote: (pc) => {
      pc.channels[0].open();
      pc.channels[0].onmessage({ data: '{"t":"slots","slots":{"1":"alice","2":null,"3":"carol"}}' });
    },
  });
  const { f } = fakeFetch({ slots: ['sendonly', 'sendonly', 'inactive'] });
  const changes = [];
  const v = new VoiceClient({ room: 'arena', member: '3', slots: 3, RTCPeerConnection: /** @type {any} */ (FakePC),
    fetch: /** @type {any} */ (f), getUserMedia: async () => /** @type {any} */ (new FakeStream()), onSlots: (c) => changes.push(...c) });
  await v.join();
  assert.equal(v.state, 'live');
  assert.deepEqual(v.table.members(), ['alice'], 'the accepted slot keeps alice; the refused one (carol) is gone');
  assert.deepEqual([...v.table.speakers.keys()], ['1', '2']);
  assert.deepEqual(changes.map((c) => [c.mid, c.to]), [['1', 'alice'], ['3', 'carol']]);
});

test('a listen-only answer (the mic refused) leaves the client not publishing, its track off even when unmuted', async () => {
  const { FakePC } = fakePC();
  const { f } = fakeFetch({ mic: 'inactive' });
  const mic = new FakeStream();
  const v = new VoiceClient({ room: 'r', member: '2', RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (f), getUserMedia: async () => /** @type {any} */ (mic) });
  await v.join();
  assert.equal(v.publishing, false);
  assert.equal(v.table.speakers.size, DEFAULT_SLOTS);
  v.mute(false);
  assert.equal(mic.tracks[0].enabled, false);
});

test('listen asks for no microphone and offers the first section recvonly', async () => {
  const { FakePC, made } = fakePC();
  const { f, calls } = fakeFetch({});
  const v = new VoiceClient({ room: 'r', member: '2', listen: true, slots: 2, RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (f),
    getUserMedia: async () => { throw new Error('asked for the microphone'); } });
  await v.join();
  assert.deepEqual(made[0].transceivers.map((t) => t.direction), ['recvonly', 'recvonly', 'recvonly']);
  assert.equal(calls[0].init.headers.Authorization, undefined, 'no token, no Authorization');
  assert.equal(v.publishing, false);
});

test('a refusal rejects join with a VoiceError that says why, and closes the connection', async () => {
  for (const [status, code] of [[503, 'voice_disabled'], [403, 'not_allowed'], [404, 'not_a_member'], [429, 'too_many'], [401, 'token_required']]) {
    const { FakePC, made } = fakePC();
    const { f } = fakeFetch({ status });
    const v = new VoiceClient({ room: 'r', member: '2', listen: true, RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (f) });
    await assert.rejects(v.join(), (err) => err instanceof VoiceError && err.status === status && err.code === code && err.reason.length > 0);
    assert.equal(made[0].closed, true);
    assert.equal(v.state, 'closed');
  }
});

test('a 503 with Retry-After (the room moving between nodes) is voice unavailable, not disabled', async () => {
  const { FakePC } = fakePC();
  const { f } = fakeFetch({ status: 503, headers: [['Retry-After', '1']] });
  const v = new VoiceClient({ room: 'r', member: '2', listen: true, RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (f) });
  await assert.rejects(v.join(), (err) => err instanceof VoiceError && err.status === 503 && err.code === 'voice_unavailable' &&
    /unavailable/.test(err.reason) && /retrying/.test(err.reason) && !/disabled/.test(err.reason));
});

test('bye ends the session with its reason', async () => {
  const { FakePC, made } = fakePC();
  const { f } = fakeFetch({});
  let closed = '';
  const v = new VoiceClient({ room: 'r', member: '2', listen: true, RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (f), onClose: (r) => { closed = r; } });
  await v.join();
  made[0].channels[0].onmessage({ data: '{"t":"bye","reason":"member left the room"}' });
  assert.equal(closed, 'member left the room');
  assert.equal(v.state, 'closed');
  assert.equal(made[0].closed, true);
});

test('voiceClaim reads a token\'s voice claim without verifying it; publish when absent or unreadable', () => {
  const tok = (claims) => `eyJhbGciOiJIUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;
  assert.equal(voiceClaim(tok({ room: 'r', user: 'ü', voice: 'listen' })), 'listen');
  assert.equal(voiceClaim(tok({ room: 'r', voice: 'none' })), 'none');
  assert.equal(voiceClaim(tok({ room: 'r' })), 'publish');
  assert.equal(voiceClaim(tok({ room: 'r', voice: 'shout' })), 'publish');
  assert.equal(voiceClaim(''), 'publish');
  assert.equal(voiceClaim('a.%%%.c'), 'publish');
});

test('a session lost and joined again keeps the microphone and the mute state, on a new offer', async () => {
  const { FakePC, made } = fakePC();
  const { f, calls } = fakeFetch({});
  const mic = new FakeStream();
  let asked = 0;
  const closed = [];
  const v = new VoiceClient({ room: 'r', member: 'u/d', RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (f),
    getUserMedia: async () => { asked++; return /** @type {any} */ (mic); }, onClose: (r) => closed.push(r) });
  await v.join();
  made[0].channels[0].open();
  v.mute(false);
  v.end('connection failed');
  assert.deepEqual(closed, ['connection failed']);
  assert.equal(made[0].closed, true);
  await v.join();
  assert.equal(asked, 1, 'the microphone is asked for once');
  assert.equal(made.length, 2);
  assert.equal(calls.filter((c) => c.init.method === 'POST').length, 2);
  assert.equal(mic.tracks[0].enabled, true, 'unmuted as before');
  made[1].channels[0].open();
  assert.deepEqual(made[1].channels[0].sent, [{ t: 'mute', muted: false }]);
  await assert.rejects(v.join(), /already joined/);
});

test('leaving while the offer is out ends the session the forwarder made (DELETE)', async () => {
  const { FakePC } = fakePC();
  const { f, calls } = fakeFetch({});
  let v;
  const slow = async (url, init) => {
    if (init.method === 'POST') v.end('left'); // the player left meanwhile
    return f(url, init);
  };
  v = new VoiceClient({ room: 'r', member: 'u/d', listen: true, RTCPeerConnection: /** @type {any} */ (FakePC), fetch: /** @type {any} */ (slow) });
  await assert.rejects(v.join(), /left while joining/);
  assert.deepEqual(calls.map((c) => c.init.method), ['POST', 'DELETE']);
  assert.equal(calls[1].url, '/voice/arena/s42');
});
