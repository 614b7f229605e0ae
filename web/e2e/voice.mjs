// The voice scenarios of run.mjs (docs/protocol.md §10): Chromium tabs with a fake microphone and
// Go bots in one room, talking through the server's forwarder. What a listener receives is read
// from Chromium's getStats (inbound-rtp of each slot's receiver) next to the `slots` message that
// says whom the slot carries; positions are set by teleporting each tab's avatar (its own write).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { speechWav } from './chromium.mjs';
import { check, waitFor } from './common.mjs';

/** The proximity radius the voice scenarios run serve with (mm). */
const RADIUS = 5000;

/** Writes the fake microphone's sound into dir and returns its path (Chromium's flags need it before launch). */
export function fakeMicFile(dir) {
  const path = join(dir, 'speech.wav');
  writeFileSync(path, speechWav(4));
  return path;
}

/** The last voice summary line of `concord bot` output (printed every second), or null. */
export function botVoice(out) {
  const m = [...out.matchAll(/voice: (\d+)\/(\d+) sessions, (\d+) packets sent, (\d+) heard from (\d+) speakers/g)].pop();
  return m ? { sessions: +m[1], sent: +m[3], heard: +m[4], speakers: +m[5] } : null;
}

/** Clicks Join voice and waits until the session is live; unmute clicks Unmute after. */
export async function joinVoice(page, { unmute = true } = {}) {
  // Click until the panel reacts (a click that lands while the page is still laying out is lost).
  await waitFor('Join voice to react', 10000, async () => {
    if (await page.evaluate(() => window.concord.voiceView().state !== 'off')) return true;
    await page.click('#voice-join');
    return page.evaluate(() => window.concord.voiceView().state !== 'off');
  }, 500);
  await waitFor('the voice session to go live', 15000, () => page.evaluate(() => {
    const v = window.concord.voiceView();
    if (v.state === 'refused' || (v.state === 'off' && /Could not/.test(v.note))) throw new Error(v.note);
    return v.state === 'live';
  }), 100);
  if (unmute) {
    await page.click('#voice-mute');
    await waitFor('the microphone to be unmuted', 5000, () => page.evaluate(() => !window.concord.voiceView().muted), 50);
  }
}

const peerId = (page) => page.evaluate(() => window.concord.status().peerId);
const teleport = (page, x, y) => waitFor('the avatar to move', 5000, () => page.evaluate((p) => window.concord.debug.teleport(p), { x, y }), 50);

/** The members page's slots carry now, sorted. */
const heard = (page) => page.evaluate(() => {
  const v = window.concord.voice();
  return v ? v.table.members().sort() : [];
});

/** Waits until page's slots carry exactly want (peer ids): up to 30 s, the forwarder's follower may be late to see the avatars on a loaded machine. */
async function waitHeard(page, name, want) {
  const w = [...want].sort();
  let got;
  await waitFor(`${name} to hear exactly [${w.join(', ')}]`, 30000, async () => {
    got = await heard(page);
    if (got.join() !== w.join()) throw new Error(`hears [${got.join(', ')}]`);
    return true;
  }, 100);
}

/**
 * Packets each slot of page received over ms, with the member it carried (the mapping must not
 * change meanwhile: a slot that changed speaker reports member '?').
 */
const received = (page, ms) => page.evaluate(async (ms) => {
  const v = window.concord.voice();
  const a = await v.stats();
  await new Promise((r) => setTimeout(r, ms));
  const b = await v.stats();
  return b.slots.map((s) => {
    const before = a.slots.find((x) => x.mid === s.mid);
    return { mid: s.mid, member: before && before.member === s.member ? s.member : '?', packets: s.packetsReceived - (before ? before.packetsReceived : 0) };
  });
}, ms);

/** Checks that over 1.5 s page received RTP on the slots of exactly the members want and on no other slot. */
async function checkReceiving(page, name, want) {
  const r = await received(page, 1500);
  const from = r.filter((s) => s.packets > 0).map((s) => s.member).sort();
  const silent = r.filter((s) => s.member && s.packets === 0).map((s) => s.member);
  check(!from.includes('?'), `${name}: a slot changed speaker while measuring: ${JSON.stringify(r)}`);
  check(from.join() === [...want].sort().join() && silent.length === 0, `${name} received RTP from [${from.join(', ')}], want [${[...want].sort().join(', ')}] (${JSON.stringify(r)})`);
  // 1.5 s of Opus at 20 ms a packet is 75 a speaker; allow for the fake microphone's pauses (DTX).
  for (const s of r) check(!s.member || s.packets >= 20, `${name}: only ${s.packets} packets from ${s.member} in 1.5 s`);
  return r.reduce((n, s) => n + s.packets, 0);
}

/**
 * In page, records when the slot carrying member delivered new audio: every 10 ms it reads the
 * slot receiver's synchronization source (its rtpTimestamp moves with each packet played; not
 * cached, unlike getStats), and every 20 ms getStats' packetsReceived, until stopArrivals.
 */
const startArrivals = (page, member) => page.evaluate((member) => {
  const v = window.concord.voice();
  const rec = { rtp: [], stats: [], lastTs: -1, lastPackets: 0, slotChanges: 0, stop: false, timer: 0 };
  window.__arrivals = rec;
  const receiver = () => {
    const mid = v.table.slotOf(member);
    const t = mid && v.slotTransceivers.find((x) => x.mid === mid);
    return t ? t.receiver : null;
  };
  rec.timer = setInterval(() => {
    const r = receiver();
    if (!r) { rec.slotChanges++; return; }
    const src = r.getSynchronizationSources()[0];
    if (src && src.rtpTimestamp !== rec.lastTs) {
      rec.lastTs = src.rtpTimestamp;
      rec.rtp.push(performance.now());
    }
  }, 10);
  (async () => {
    while (!rec.stop) {
      const st = await v.stats();
      const s = st.slots.find((x) => x.member === member);
      if (s && s.packetsReceived > rec.lastPackets) {
        rec.lastPackets = s.packetsReceived;
        rec.stats.push(performance.now());
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return performance.now();
}, member);

/** Stops the recording; the largest gaps between deliveries since from (ms), by both measures. */
const stopArrivals = (page, from) => page.evaluate((from) => {
  const rec = window.__arrivals;
  rec.stop = true;
  clearInterval(rec.timer);
  const gap = (times) => {
    const t = times.filter((x) => x >= from);
    let g = 0;
    let at = 0;
    for (let i = 1; i < t.length; i++) if (t[i] - t[i - 1] > g) { g = t[i] - t[i - 1]; at = t[i - 1]; }
    return { n: t.length, maxGap: Math.round(g), at: Math.round(at - from), span: t.length ? Math.round(t[t.length - 1] - t[0]) : 0 };
  };
  return { rtp: gap(rec.rtp), stats: gap(rec.stats), lost: rec.slotChanges };
}, from);

/**
 * Adds the voice scenarios. h: the runner's pieces — bin (the concord binary), artifacts, status(page),
 * and mint(secret, room, user, ...extra) for tokens.
 */
export function addVoiceScenarios(scenario, h) {
  scenario('voice-proximity', async (env) => {
    await env.serve(['--voice-radius', String(RADIUS)]);
    const q = `&voiceRadius=${RADIUS}`;
    const a = await env.page('alice', 'arena', q);
    const b = await env.page('bob', 'arena', q);
    const c = await env.page('carol', 'arena', q);
    const [ia, ib, ic] = [await peerId(a), await peerId(b), await peerId(c)];
    await teleport(a, 4000, 6000);
    await teleport(b, 7000, 6000); // 3 m from alice
    await teleport(c, 16000, 6000); // 9 m from bob, 12 m from alice
    // Muted by default: in voice, in range, and nobody hears anybody.
    for (const p of [a, b, c]) await joinVoice(p, { unmute: false });
    const quiet = await received(b, 1000);
    check(quiet.every((s) => !s.member && s.packets === 0), `muted members were forwarded: ${JSON.stringify(quiet)}`);
    for (const p of [a, b, c]) {
      await p.click('#voice-mute');
      await waitFor('unmuted', 5000, () => p.evaluate(() => !window.concord.voiceView().muted), 50);
    }
    await waitHeard(a, 'alice', [ib]);
    await waitHeard(b, 'bob', [ia]);
    await waitHeard(c, 'carol', []);
    const n1 = await checkReceiving(a, 'alice', [ib]) + await checkReceiving(b, 'bob', [ia]) + await checkReceiving(c, 'carol', []);
    // The speaking indicator: alice's page lights bob (from the forwarder's levels), and herself (her microphone).
    const lit = await waitFor('alice\'s page to show bob speaking', 10000, () => a.evaluate((ib) => {
      const row = document.querySelector(`#voice-members li[data-peer="${CSS.escape(ib)}"] .speak.on`);
      return row && document.querySelector('#voice-self.on') ? true : false;
    }, ib), 100);
    check(lit, 'no speaking indicator');
    await a.screenshot({ path: join(h.artifacts, 'voice.png') });

    // Carol walks into range of both: forwarding starts both ways.
    await teleport(c, 8500, 6000); // 1.5 m from bob, 4.5 m from alice
    await waitHeard(a, 'alice', [ib, ic]);
    await waitHeard(b, 'bob', [ia, ic]);
    await waitHeard(c, 'carol', [ia, ib]);
    const n2 = await checkReceiving(a, 'alice', [ib, ic]) + await checkReceiving(b, 'bob', [ia, ic]) + await checkReceiving(c, 'carol', [ia, ib]);
    // And out again: forwarding stops, not only the volume.
    await teleport(c, 16000, 6000);
    await waitHeard(c, 'carol', []);
    await waitHeard(a, 'alice', [ib]);
    await checkReceiving(c, 'carol', []);
    await checkReceiving(a, 'alice', [ib]);
    return `radius ${RADIUS} mm: apart, each heard only those in range (${n1} packets in 1.5 s); carol in range of both: ${n2} packets, all six pairs; carol out again: she receives nothing; bob lit as speaking on alice's page`;
  });

  scenario('voice-go-bots', async (env) => {
    // Go bots in voice with a tab: one publishes an Ogg file, one only listens. Radius 0: everyone
    // hears everyone (the bots' avatars wander).
    await env.serve(['--voice-radius', '0']);
    const a = await env.page('alice', 'arena', '&voiceRadius=0');
    const ia = await peerId(a);
    await joinVoice(a);
    const speaker = env.proc('bot-speaker', ['bot', '--server', env.url, '--room', 'arena', '-n', '1', '--name', 'gospeak', '--move-for', '1s', '--voice', h.ogg]);
    const listener = env.proc('bot-listener', ['bot', '--server', env.url, '--room', 'arena', '-n', '1', '--name', 'golisten', '--move-for', '1s', '--voice-listen']);
    const ids = await waitFor('both bots in the room', 20000, async () => {
      const m = (await env.room()).members.map((x) => x.peerId);
      const s = m.find((x) => x.startsWith('gospeak'));
      const l = m.find((x) => x.startsWith('golisten'));
      return s && l ? { s, l } : false;
    });
    // alice hears the Go speaker (the listener bot publishes nothing), on a slot with packets.
    await waitHeard(a, 'alice', [ids.s]);
    await checkReceiving(a, 'alice', [ids.s]);
    // The Go listener hears alice and the Go speaker; the Go speaker hears alice (the bots' summary line).
    const summary = (p) => botVoice(p.out);
    const heardL = await waitFor('the Go listener to hear alice and the Go speaker', 20000, () => {
      const x = summary(listener);
      return x && x.sessions === 1 && x.speakers === 2 && x.heard > 100 ? x : false;
    });
    const heardS = await waitFor('the Go speaker to hear alice', 20000, () => {
      const x = summary(speaker);
      return x && x.sessions === 1 && x.speakers === 1 && x.heard > 50 && x.sent > 50 ? x : false;
    });
    check(heardL.sent === 0, `the listen-only bot sent ${heardL.sent} packets`);
    return `alice (${ia}) hears the Go speaker; the Go listener heard ${heardL.heard} packets from 2 speakers; the Go speaker sent ${heardS.sent} and heard ${heardS.heard} from alice`;
  });

  scenario('voice-rejoin', async (env) => {
    // serve's radius (9 m) is wider than the pages' default (6 m): bob, 8 m from alice, hears her
    // and his page widens its falloff so she is not silenced. Then alice's voice connection is
    // lost (as when it fails): her page rejoins by itself, unmuted as she was, and bob hears her
    // again; Leave voice is final.
    await env.serve(['--voice-radius', '9000']);
    const a = await env.page('alice');
    const b = await env.page('bob');
    const ia = await peerId(a);
    await teleport(a, 3000, 6000);
    await teleport(b, 11000, 6000);
    await joinVoice(a);
    await joinVoice(b);
    await waitHeard(b, 'bob', [ia]);
    const wide = await waitFor('bob\'s page to widen its radius and play alice', 10000, () => b.evaluate(() => {
      const v = window.concord.voiceView();
      const g = Object.values(v.gains);
      return v.radius >= 8000 && g.some((x) => x > 0.01) ? { radius: v.radius, gains: g.map((x) => +x.toFixed(3)) } : false;
    }), 100);
    await teleport(b, 6000, 6000);
    const first = await a.evaluate(() => window.concord.voice().location);
    await a.evaluate(() => window.concord.voice().end('connection failed'));
    const note = await waitFor('alice\'s page to say it rejoins', 5000, () => a.evaluate(() => {
      const n = window.concord.voiceView().note;
      return /rejoining/.test(n) && n;
    }), 50);
    await waitFor('alice back in voice', 15000, () => a.evaluate(() => window.concord.voiceView().state === 'live' && !window.concord.voiceView().muted), 100);
    const second = await a.evaluate(() => window.concord.voice().location);
    check(second && second !== first, `the same session location after rejoining: ${first}`);
    await waitHeard(b, 'bob', [ia]);
    await checkReceiving(b, 'bob', [ia]);
    await a.click('#voice-leave');
    await waitHeard(b, 'bob', []);
    const after = await a.evaluate(() => window.concord.voiceView());
    check(after.state === 'off' && /You left voice/.test(after.note), `after Leave voice: ${JSON.stringify(after)}`);
    return `8 m apart under serve's 9 m: bob's page widened its radius to ${wide.radius} mm, gains ${wide.gains.join(', ')}; "${note}"; back live unmuted on a new session, bob hears alice again; Leave voice ends it for good`;
  });

  scenario('voice-host-killed', async (env) => {
    // The game host is a `concord host` process (serve's dedicated host is off): SIGKILL it while
    // alice talks to bob; the forwarder never involved the host, so bob's arrivals have no gap.
    await env.serve(['--dedicated-host=false', '--voice-radius', String(RADIUS)]);
    const hostProc = env.host();
    await waitFor('the Go host to host', 15000, async () => {
      const r = await env.room();
      return r && r.host && r.members.find((m) => m.peerIndex === r.host).kind === 'host';
    });
    const q = `&voiceRadius=${RADIUS}`;
    const a = await env.page('alice', 'arena', q);
    const b = await env.page('bob', 'arena', q);
    const ia = await peerId(a);
    await teleport(a, 5000, 6000);
    await teleport(b, 6000, 6000);
    await joinVoice(a);
    await joinVoice(b);
    await waitHeard(b, 'bob', [ia]);
    const term0 = (await env.room()).term;
    const from = await startArrivals(b, ia);
    await waitFor('a second of arrivals', 5000, () => b.evaluate(() => window.__arrivals.rtp.length > 40), 100);
    const killedAt = await b.evaluate(() => performance.now());
    await hostProc.kill('SIGKILL');
    const r = await waitFor('a new host', 20000, async () => {
      const r = await env.room();
      return r && r.term > term0 && r.host ? r : false;
    }, 100);
    const migrated = await b.evaluate(() => performance.now());
    // Three more seconds of arrivals after the new host took over.
    await waitFor('3 s of arrivals after the migration', 10000, () => b.evaluate((t0) => {
      const t = window.__arrivals.rtp;
      return t.length > 0 && t[t.length - 1] - t0 > 3000;
    }, migrated), 100);
    const m = await stopArrivals(b, from);
    check(m.lost === 0, `bob's slot lost alice ${m.lost} times`);
    // The bound is on packets played (the synchronization source's RTP timestamp, read every
    // 10 ms); getStats' packetsReceived is a coarser check (Chromium caches stats; the sampling
    // loop itself stalls behind page.evaluate), held to 1 s.
    check(m.rtp.maxGap < 500 && m.stats.maxGap < 1000, `a gap in bob's arrivals from alice across the host's death (killed ${Math.round(killedAt - from)} ms in): ${JSON.stringify(m)}`);
    return `host SIGKILLed ${Math.round(killedAt - from)} ms in, term ${term0} → ${r.term} ${Math.round(migrated - killedAt)} ms later; bob's audio from alice over ${m.rtp.span} ms: largest gap ${m.rtp.maxGap} ms between packets played (${m.rtp.n}, at ${m.rtp.at} ms), ${m.stats.maxGap} ms between getStats increases (${m.stats.n})`;
  });

  scenario('voice-listen-only', async (env) => {
    const secret = 'e2e-secret-for-voice-tokens-0123456789';
    const key = 'e2e-admin-key-for-voice-0123456789';
    await env.serve(['--voice-radius', String(RADIUS)], { CONCORD_SECRET: secret, CONCORD_ADMIN_KEY: key });
    const open = async (user, ...extra) => {
      const p = await env.tab(user);
      await p.goto(`${env.url}/?room=arena&voiceRadius=${RADIUS}&token=${encodeURIComponent(h.mint(secret, 'arena', user, ...extra))}`);
      await waitFor(`${user} to sync`, 20000, () => p.evaluate(() => window.concord && window.concord.status().synced));
      await p.context().route('**/__e2e/debug.mjs', (route) => route.fulfill({ path: h.debugModule, contentType: 'text/javascript' }));
      await p.addScriptTag({ url: `${env.url}/__e2e/debug.mjs`, type: 'module' });
      await waitFor(`${user}'s debug hooks`, 5000, () => p.evaluate(() => !!window.concord.debug), 50);
      return p;
    };
    const carol = await open('carol');
    const dave = await open('dave', '--voice', 'listen');
    const erin = await open('erin', '--voice', 'none');
    const [ic, id] = [await peerId(carol), await peerId(dave)];
    await teleport(carol, 5000, 6000);
    await teleport(dave, 6000, 6000);
    await teleport(erin, 7000, 6000);
    // erin's token allows no voice: the page says so and offers no button.
    const erinNote = await erin.evaluate(() => ({ note: window.concord.voiceView().note, disabled: document.getElementById('voice-join').disabled }));
    check(erinNote.disabled && /does not allow/.test(erinNote.note), `erin's panel: ${JSON.stringify(erinNote)}`);
    await joinVoice(carol);
    await joinVoice(dave, { unmute: false });
    const daveView = await dave.evaluate(() => ({ note: window.concord.voiceView().note, mute: !document.getElementById('voice-mute').hidden, mic: !!window.concord.voice().mic }));
    check(/listening only/.test(daveView.note) && !daveView.mute && !daveView.mic, `dave's listen-only panel: ${JSON.stringify(daveView)}`);
    // dave hears carol; carol does not hear dave.
    await waitHeard(dave, 'dave', [ic]);
    await checkReceiving(dave, 'dave', [ic]);
    // dave forges a publishing session with the page's own client (microphone, unmuted): the
    // forwarder answers it, but forwards nothing of it and counts what it drops.
    const sent = await dave.evaluate(async ({ room }) => {
      const { VoiceClient } = await import('/js/voice.js');
      const c = window.concord;
      const token = new URLSearchParams(location.search).get('token') || c.peer.opts.token;
      const forged = new VoiceClient({ room, member: c.peer.peerId, token, muted: false, iceServers: () => c.peer.sig.joined.iceServers || [] });
      await forged.join();
      window.__forged = forged;
      for (let i = 0; i < 100; i++) {
        const st = await forged.stats();
        if (st.packetsSent > 50) return st.packetsSent;
        await new Promise((r) => setTimeout(r, 50));
      }
      return (await forged.stats()).packetsSent;
    }, { room: 'arena' });
    check(sent > 50, `dave's forged session sent ${sent} packets`);
    await waitHeard(carol, 'carol', []);
    await checkReceiving(carol, 'carol', []);
    const dropped = await waitFor('the forwarder to count dave\'s dropped packets', 10000, async () => {
      const t = await (await fetch(`${env.url}/metrics`, { headers: { Authorization: `Bearer ${key}` } })).text();
      const m = t.match(/concord_voice_dropped_packets_total\{reason="listen_only"\} (\d+)/);
      return m && Number(m[1]) > 0 ? Number(m[1]) : false;
    });
    void id;
    return `erin (voice none): no button; dave (listen) hears carol, carol hears nobody; dave's forged publishing session sent ${sent} packets, the forwarder dropped ${dropped} (listen_only)`;
  });

  scenario('voice-disabled', async (env) => {
    await env.serve(['--voice=false']);
    // The refused POST is a console error by design (the browser logs the 503).
    const a = await env.page('alice', 'arena', '', { expectErrors: true });
    await a.click('#voice-join');
    const note = await waitFor('the panel to say voice is off', 10000, () => a.evaluate(() => {
      const v = window.concord.voiceView();
      return v.state === 'refused' && v.note;
    }), 100);
    check(/disabled/.test(note), `the panel says: ${note}`);
    const st = await h.status(a);
    check(st.synced, 'the page stopped playing');
    return `the panel says: "${note}"; the page plays on`;
  });
}
