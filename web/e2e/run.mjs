#!/usr/bin/env node
// Chromium end-to-end tests of the Concord browser client against Go peers.
//
//   CONCORD_BIN=/tmp/concord node web/e2e/run.mjs [scenario-name ...]
//
// Everything — `concord serve`, `concord host`/`bot` processes and Chromium — runs inside a fresh
// network namespace whose only interface is lo. Run as root, the script creates the namespace,
// re-executes itself inside it and deletes it afterwards. Chromium is Debian's /usr/bin/chromium
// (CHROMIUM to override); no browser is ever downloaded. Every wait polls a condition with a
// deadline; there are no fixed sleeps.
//
// Output: one line per scenario, then "N passed, N failed". Exit status 1 on any failure.
// Artifacts (logs, screenshots) go to $CONCORD_E2E_ARTIFACTS, by default a fresh temporary folder whose
// path is printed; the run never writes into the repository (docs/screenshot.png is refreshed by hand
// from the artifacts' screenshot.png).

import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { CHROMIUM_ARGS, voiceArgs } from './chromium.mjs';
import { Failure, Proc, check, converged, reexecInNamespaces, runScenarios, waitFor } from './common.mjs';
import { addVoiceScenarios, fakeMicFile } from './voice.mjs';

const here = dirname(fileURLToPath(import.meta.url));
if (!process.env.CONCORD_E2E_ARTIFACTS) {
  // Set in the environment, so that the run re-executed inside the namespace writes to the same folder.
  process.env.CONCORD_E2E_ARTIFACTS = mkdtempSync(join(tmpdir(), 'concord-e2e-'));
  console.log(`e2e: artifacts (logs, screenshots) in ${process.env.CONCORD_E2E_ARTIFACTS}`);
}
const artifacts = resolve(process.env.CONCORD_E2E_ARTIFACTS);
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const NETNS_ENV = 'CONCORD_E2E_NETNS';

// ---------------------------------------------------------------------------------------------
// Network namespace: create, re-exec inside, delete.

// Already inside a namespace whose only interface is lo (`ip netns exec X node run.mjs`): run in
// place. Otherwise make one.
const onlyLoopback = () => {
  const names = readdirSync('/sys/class/net');
  return names.length === 1 && names[0] === 'lo';
};
if (!process.env[NETNS_ENV] && !onlyLoopback()) {
  process.exit(outsideNamespace());
}

function outsideNamespace() {
  const ns = `concord-e2e-${process.pid}`;
  return reexecInNamespaces({
    label: 'e2e', namespaces: [ns], inside: ns, envName: NETNS_ENV, script: fileURLToPath(import.meta.url),
    steps: [['netns', 'add', ns], ['-n', ns, 'link', 'set', 'lo', 'up']],
  });
}

// ---------------------------------------------------------------------------------------------
// Inside the namespace.

const { chromium } = await import('playwright-core');

if (!onlyLoopback()) {
  console.error(`e2e: refusing to run: network interfaces ${readdirSync('/sys/class/net').join(', ')} (want only lo)`);
  process.exit(2);
}
const bin = process.env.CONCORD_BIN;
if (!bin || !existsSync(bin)) {
  console.error('e2e: set CONCORD_BIN to the concord binary (go build -o /tmp/concord ./cmd/concord)');
  process.exit(2);
}
if (!existsSync(chromiumPath)) {
  console.error(`e2e: no Chromium at ${chromiumPath} (apt-get install -y chromium)`);
  process.exit(2);
}
mkdirSync(join(artifacts, 'logs'), { recursive: true });

let nextPort = 17880;

/** One scenario's world: a server, Go peers, a browser; all torn down by close(). */
class Env {
  constructor(name) {
    this.name = name;
    this.port = nextPort++;
    this.url = `http://127.0.0.1:${this.port}`;
    this.procs = [];
    this.context = null;
    this.tmp = null;
  }

  proc(name, args, env = {}, cmd = bin) {
    const p = new Proc(name, join(artifacts, 'logs', `${this.name}-${name}.log`), cmd, args, env);
    this.procs.push(p);
    return p;
  }

  async serve(extra = [], env = {}) {
    this.server = this.proc('serve', ['serve', '--addr', `127.0.0.1:${this.port}`, '--data', '', ...extra], env);
    await waitFor('the server to answer /healthz', 10000, async () => (await fetch(`${this.url}/healthz`)).ok);
    return this.server;
  }

  host() { return this.proc('host', ['host', '--server', this.url, '--room', 'arena']); }

  bots(n, moveFor = '3s', name = 'bot') {
    return this.proc(`bots-${name}`, ['bot', '--server', this.url, '--room', 'arena', '-n', String(n), '--move-for', moveFor, '--name', name, '--log-level', 'info']);
  }

  async browser() {
    if (!this.context) {
      this.tmp = mkdtempSync(join(tmpdir(), 'concord-e2e-chromium-'));
      this.context = await chromium.launchPersistentContext(this.tmp, {
        executablePath: chromiumPath,
        // A fake microphone for the voice scenarios (granted without asking; unused elsewhere).
        args: [...CHROMIUM_ARGS, ...voiceArgs(fakeMicFile(this.tmp))],
        headless: true,
        viewport: { width: 1400, height: 820 },
      });
    }
    return this.context;
  }

  /** Opens the page in a new tab (query: more of its URL's parameters) and waits until it has joined the room. */
  async page(user = 'alice', room = 'arena', query = '', { expectErrors = false } = {}) {
    const page = await this.tab(user, { expectErrors });
    await page.goto(`${this.url}/?room=${encodeURIComponent(room)}&user=${encodeURIComponent(user)}${query}`);
    await waitFor(`${user} to join`, 10000, () => page.evaluate(() => window.concord && window.concord.status().self > 0));
    // The hooks that read the world and forge messages are test-only: injected, never served.
    // Served same-origin by this browser context only (the server has no such path), so the page's
    // Content-Security-Policy (script-src 'self') stays enforced in every scenario.
    await page.context().route('**/__e2e/debug.mjs', (route) => route.fulfill({ path: join(here, 'debug.mjs'), contentType: 'text/javascript' }));
    await page.addScriptTag({ url: `${this.url}/__e2e/debug.mjs`, type: 'module' });
    await waitFor(`${user}'s debug hooks`, 5000, () => page.evaluate(() => !!window.concord.debug), 50);
    return page;
  }

  /**
   * A new tab whose errors and console go to the scenario's log (as `user`'s). Console errors are
   * echoed to the run's output too, unless the scenario expects them (a refused join says so in
   * the console by design: echoing it would read like a failure in a passing run).
   */
  async tab(user, { expectErrors = false } = {}) {
    const ctx = await this.browser();
    const page = await ctx.newPage();
    const log = createWriteStream(join(artifacts, 'logs', `${this.name}-page-${user}.log`));
    page.on('pageerror', (err) => {
      log.write(`pageerror ${err.stack || err.message}\n`);
      console.error(`  [${user}] page error: ${err.message}`);
    });
    page.on('console', (m) => {
      log.write(`${new Date().toISOString()} ${m.type()} ${m.text()}\n`);
      if (m.type() === 'error' && !expectErrors) console.error(`  [${user}] console: ${m.text()}`);
    });
    page.on('close', () => log.end());
    return page;
  }

  async rooms() {
    const r = await fetch(`${this.url}/api/rooms`);
    if (!r.ok) throw new Error(`/api/rooms: ${r.status}`);
    return r.json();
  }

  async room(name = 'arena') {
    return (await this.rooms()).find((r) => r.room === name);
  }

  /**
   * Waits until the room has `members` synced members with equal hashes in the room's term, twice in
   * a row (and, if `entities` is given, that many entities in every replica).
   */
  converged(members, timeoutMs = 30000, room = 'arena', entities = undefined) {
    return converged(() => this.rooms(), members, timeoutMs, room, entities);
  }

  async close() {
    if (this.context) await this.context.close().catch(() => {});
    await Promise.all(this.procs.filter((p) => p !== this.server).map((p) => p.kill('SIGTERM')));
    if (this.server) await this.server.kill('SIGTERM');
    if (this.pageHost) await new Promise((r) => this.pageHost.close(r));
    if (this.tmp) rmSync(this.tmp, { recursive: true, force: true });
  }
}

const status = (page) => page.evaluate(() => window.concord.status());

/** The page's own avatar position (mm). */
const myPos = (page) => page.evaluate(() => {
  const c = window.concord;
  const w = c.peer.world;
  const e = w.avatarOf(w.self);
  return e === undefined ? null : c.debug.avatarPos(e);
});

/** Holds key down until the page's avatar has moved at least minMm, then lets go. */
async function walk(page, key, minMm) {
  const p0 = await myPos(page);
  check(p0, 'the page has no avatar');
  await page.locator('#arena').focus();
  await page.keyboard.down(key);
  try {
    await waitFor(`the avatar to move with ${key}`, 10000, async () => {
      const p = await myPos(page);
      return Math.hypot(p.x - p0.x, p.y - p0.y) >= minMm;
    }, 50);
  } finally {
    await page.keyboard.up(key);
  }
  return { from: p0, to: await myPos(page) };
}

/** Drags box e with the mouse by (dx, dy) mm; returns where the page sees it after the drag. */
async function dragBox(page, e, dx, dy) {
  const box = await page.locator('#arena').boundingBox();
  const p0 = await page.evaluate((b) => window.concord.debug.boxPos(b), e);
  const sx = (x) => box.x + (x / 20000) * box.width;
  const sy = (y) => box.y + (y / 12000) * box.height;
  await page.mouse.move(sx(p0.x), sy(p0.y));
  await page.mouse.down();
  // Hold still until this page may write the box (a member waits for the host's lock grant).
  await waitFor('the box to be writable', 5000, () => page.evaluate((b) => window.concord.peer.world.canWrite(b), e), 50);
  const steps = 10;
  for (let i = 1; i <= steps; i++) {
    await page.mouse.move(sx(p0.x + (dx * i) / steps), sy(p0.y + (dy * i) / steps));
    await waitFor('the box to follow the mouse', 5000, async () => {
      const p = await page.evaluate((b) => window.concord.debug.boxPos(b), e);
      return Math.abs(p.x - (p0.x + (dx * i) / steps)) < 200 && Math.abs(p.y - (p0.y + (dy * i) / steps)) < 200;
    }, 25);
  }
  await page.mouse.up();
  return { from: p0, to: await page.evaluate((b) => window.concord.debug.boxPos(b), e) };
}

/** A box far from every avatar, so that nothing pushes it while the test drags it. */
const quietBox = (page) => page.evaluate(() => {
  const c = window.concord;
  const w = c.peer.world;
  let best = 0;
  let bestD = -1;
  for (const e of w.entitiesOf(2)) {
    const p = c.debug.boxPos(e);
    let d = Infinity;
    for (const a of w.entitiesOf(1)) {
      const q = c.debug.avatarPos(a);
      d = Math.min(d, Math.hypot(p.x - q.x, p.y - q.y));
    }
    if (w.authority(e) === w.host && d > bestD && p.y > 2000 && p.y < 10000 && p.x < 14000) { best = e; bestD = d; }
  }
  return best;
});

// ---------------------------------------------------------------------------------------------
// Scenarios.

const scenarios = [];
function scenario(name, fn) { scenarios.push({ name, fn }); }

scenario('browser-joins-dedicated-host', async (env) => {
  await env.serve();
  const page = await env.page('alice');
  env.bots(4, '3s');
  // The bots join one by one and then move for 3 s: a room can look converged between two joins, so wait until
  // the room has rested and the page holds the same hash as every reported replica.
  let r, st;
  await waitFor('the page to hold the room\'s converged hash', 40000, async () => {
    r = await env.converged(6, 40000);
    st = await status(page);
    return st.hash === r.members[0].replica.hash;
  });
  check(r.members.find((m) => m.peerIndex === r.host).kind === 'host', 'the dedicated host is not the host');
  const ents = await page.evaluate(() => window.concord.entities());
  check(ents.filter((e) => e.schema === 2).length === 8, 'the page does not see 8 boxes');
  check(ents.filter((e) => e.schema === 1).length === 5, 'the page does not see 5 avatars');

  // Keyboard: the avatar (client authority) moves and every replica follows.
  const moved = await walk(page, 'ArrowDown', 1500);
  // Mouse: grab a box (a lock from the Go host), carry it, let go (the lock returns to the host).
  const box = await quietBox(page);
  check(box, 'no free box to drag');
  const drag = await dragBox(page, box, 2500, 0);
  check(drag.to.x - drag.from.x > 2000, `the box did not follow the mouse: ${JSON.stringify(drag)}`);
  await waitFor('the lock to return to the host', 5000, () => page.evaluate((b) => window.concord.peer.world.authority(b) === window.concord.peer.world.host, box));
  const r2 = await env.converged(6, 30000);
  const st2 = await status(page);
  check(st2.hash === r2.members[0].replica.hash, 'page hash differs after input');
  const seen = await page.evaluate((b) => window.concord.debug.boxPos(b), box);
  // (An avatar standing where the box was dropped may push it on: physics, not a conflict.)
  check(Math.hypot(seen.x - drag.from.x, seen.y - drag.from.y) > 1000, `the drag was undone: ${JSON.stringify(drag)} → ${JSON.stringify(seen)}`);
  await page.locator('#arena').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'screenshot.png') });
  // The inspector shows the room, with every hash equal; observing adds a seventh replica.
  const insp = await (await env.browser()).newPage();
  await insp.goto(`${env.url}/inspect`);
  await waitFor('the inspector to list the room', 10000, () => insp.evaluate(() => document.querySelectorAll('#rooms tr').length === 7));
  await insp.click('#observe');
  await waitFor('the inspector to observe', 15000, () => insp.evaluate(() => document.querySelectorAll('#entities tr').length === 15));
  await env.converged(7, 30000);
  await insp.screenshot({ path: join(artifacts, 'inspect.png'), fullPage: true });
  return `6 replicas at ${st.hash}, ${st.entities} entities; walked ${Math.round(Math.hypot(moved.to.x - moved.from.x, moved.to.y - moved.from.y))} mm; dragged box ${box} by lock ${drag.to.x - drag.from.x} mm; converged again at ${st2.hash}`;
});

scenario('browser-hosts-go-bots', async (env) => {
  await env.serve(['--dedicated-host=false']);
  const page = await env.page('alice');
  await waitFor('the browser to become host', 10000, async () => (await status(page)).isHost);
  const bots = env.bots(4, '3s');
  const r = await env.converged(5, 40000);
  const st = await status(page);
  check(r.host === st.self, `host is ${r.host}, not the browser (${st.self})`);
  check(st.entities === 8 + 1 + 5, `browser host has ${st.entities} entities, want 14`);
  await walk(page, 'KeyD', 1500);
  const box = await quietBox(page);
  check(box, 'no free box to drag');
  const drag = await dragBox(page, box, 0, 2000);
  check(drag.to.y - drag.from.y > 1500, `the box did not follow the mouse: ${JSON.stringify(drag)}`);
  const r2 = await env.converged(5, 30000);
  check(r2.members[0].replica.hash === (await status(page)).hash, 'page hash differs after input');
  await page.screenshot({ path: join(artifacts, 'browser-host.png') });
  // The bots leave: the browser host despawns their avatars.
  await bots.kill('SIGTERM');
  await waitFor('the browser host to despawn the avatars of members who left', 10000, async () => (await status(page)).entities === 8 + 1 + 1);
  return `browser host ${st.self} term ${r.term}, 5 replicas at ${st.hash}; after walking and dragging box ${box}: ${r2.members[0].replica.hash}; bots left, avatars despawned`;
});

/**
 * Checks a migration kept what the browser saw before it: the same box and avatar ids, and no key
 * with an older timestamp than before. before and after are {ents, entries} read from the page.
 */
function checkKept(before, after) {
  const ids = (list, schema) => list.filter((e) => e.schema === schema).map((e) => e.entity).sort((a, b) => a - b).join(',');
  check(ids(before.ents, 2) === ids(after.ents, 2), `box ids changed: ${ids(before.ents, 2)} → ${ids(after.ents, 2)}`);
  check(ids(before.ents, 1) === ids(after.ents, 1), `avatar ids changed: ${ids(before.ents, 1)} → ${ids(after.ents, 1)}`);
  const ts = new Map(after.entries.map((e) => [`${e.entity}/${e.component}`, e.timestamp]));
  for (const e of before.entries) {
    const t = ts.get(`${e.entity}/${e.component}`);
    check(t !== undefined && t >= e.timestamp, `key ${e.entity}/${e.component} went from t=${e.timestamp} to ${t}`);
  }
}

scenario('migration', async (env) => {
  await env.serve(['--dedicated-host=false']);
  const hostProc = env.host();
  await waitFor('the Go host to host', 10000, async () => {
    const r = await env.room();
    return r && r.host && r.members.find((m) => m.peerIndex === r.host).kind === 'host';
  });
  const page = await env.page('alice');
  await waitFor('the browser to sync', 10000, async () => (await status(page)).synced);
  env.bots(3, '3s');
  const r1 = await env.converged(5, 40000);
  const before = await page.evaluate(() => ({ ents: window.concord.entities(), entries: window.concord.entries() }));
  const st1 = await status(page);
  check(!st1.isHost, 'the browser hosts before the kill');

  // 1. SIGKILL the Go host: the browser (earliest synced member) takes over.
  const t0 = Date.now();
  await hostProc.kill('SIGKILL');
  await waitFor('the browser to take over', 15000, async () => (await status(page)).isHost);
  const r2 = await env.converged(4, 30000);
  const dt1 = Date.now() - t0;
  check(r2.term > r1.term, 'the term did not grow');
  const after = await page.evaluate(() => ({ ents: window.concord.entities(), entries: window.concord.entries() }));
  checkKept(before, after);

  // 2. Close the browser host's tab: a Go bot takes over. The new host sweeps the browser's avatar
  // once members have had peer.Config.ResumeSettle (3 s) to come back.
  const want = 8 + 1 + 3;
  const t1 = Date.now();
  await page.close();
  const r3 = await env.converged(3, 30000, 'arena', want);
  const dt2 = Date.now() - t1;
  check(r3.term > r2.term, 'the term did not grow after the browser left');
  const hostKind = r3.members.find((m) => m.peerIndex === r3.host).kind;
  check(hostKind === 'bot', `the new host is a ${hostKind}`);
  check(r3.members.every((m) => m.replica.entities === want), `entity counts ${r3.members.map((m) => m.replica.entities)} (want ${want})`);
  return `Go host killed → browser host, converged in ${dt1} ms; browser closed → bot host, converged with the browser's avatar swept (after ResumeSettle, 3 s) in ${dt2} ms; ${before.ents.length} entity ids kept`;
});

scenario('migration-while-moving', async (env) => {
  await env.serve(['--dedicated-host=false']);
  const hostProc = env.host();
  await waitFor('the Go host to host', 10000, async () => {
    const r = await env.room();
    return r && r.host && r.members.find((m) => m.peerIndex === r.host).kind === 'host';
  });
  env.bots(3, '7s');
  await waitFor('the bots to sync', 15000, async () => {
    const r = await env.room();
    return r && r.members.length === 4 && r.members.every((m) => m.synced);
  });
  const page = await env.page('alice');
  await waitFor('the browser to sync', 10000, async () => (await status(page)).synced);
  const st1 = await status(page);
  const before = await page.evaluate(() => ({ ents: window.concord.entities(), entries: window.concord.entries() }));
  check(st1.entities === 8 + 1 + 4, `browser sees ${st1.entities} entities before the kill`);
  // Kill the host while the bots are still moving and carrying boxes.
  const t0 = Date.now();
  await hostProc.kill('SIGKILL');
  await waitFor('a bot to take over', 10000, async () => {
    const st = await status(page);
    return st.term > st1.term && st.synced && !st.isHost;
  });
  const dtSync = Date.now() - t0;
  const r = await env.converged(4, 40000);
  const after = await page.evaluate(() => ({ ents: window.concord.entities(), entries: window.concord.entries() }));
  const hostKind = r.members.find((m) => m.peerIndex === r.host).kind;
  check(hostKind === 'bot', `the new host is a ${hostKind}`);
  checkKept(before, after);
  const locks = after.ents.filter((e) => e.authority.kind === 2);
  check(locks.length === 0, `locks left after the bots stopped: ${JSON.stringify(locks)}`);
  return `browser re-synced with the new bot host ${dtSync} ms after the kill; 4 replicas equal at ${r.members[0].replica.hash}; ${before.entries.length} keys, none went back`;
});

scenario('browser-host-authority', async (env) => {
  await env.serve(['--dedicated-host=false']);
  const page = await env.page('alice');
  await waitFor('the browser to become host', 10000, async () => (await status(page)).isHost);
  env.bots(2, '2s');
  // A second member in the same page, linked to the browser host in memory: it misbehaves.
  await page.evaluate(() => window.concord.addMemoryMember('mallory'));
  const mal = (fn, arg) => page.evaluate(([src, a]) => (0, eval)(src)(window.concord.extras.mallory, a), [fn.toString(), arg]);
  await waitFor('mallory to sync', 10000, () => mal((x) => x.status().synced));
  await env.converged(4, 40000);
  const box = await quietBox(page);
  const pos0 = await page.evaluate((b) => window.concord.debug.boxPos(b), box);
  const rej0 = (await status(page)).rejected;
  const sent = await mal((x, b) => ({
    update: x.debug.forgeUpdate(b, { x: 19500, y: 6000 }),
    correction: x.debug.forgeCorrection(b, { x: 500, y: 500 }),
    snapshot: x.debug.forgeSnapshot(b, { x: 100, y: 100 }),
  }), box);
  check(sent.update && sent.correction && sent.snapshot, `a forged message was not sent: ${JSON.stringify(sent)}`);
  await waitFor('the browser host to reject the writes', 10000, async () => (await status(page)).rejected >= rej0 + 2);
  const r = await env.converged(4, 30000);
  for (const who of ['host', 'mallory']) {
    const pos = who === 'host'
      ? await page.evaluate((b) => window.concord.debug.boxPos(b), box)
      : await mal((x, b) => x.debug.boxPos(b), box);
    check(pos.x === pos0.x && pos.y === pos0.y, `${who} sees the box moved from ${JSON.stringify(pos0)} to ${JSON.stringify(pos)}`);
  }
  // A lock: granted by the browser host, then taken back when its holder falls silent for 3 s.
  await mal((x, b) => x.debug.requestLock(b), box);
  await waitFor('the lock to be granted', 5000, () => mal((x, b) => x.peer.world.authority(b) === x.peer.world.self, box));
  const t0 = Date.now();
  await mal((x) => x.debug.silence());
  await waitFor('the lock to expire', 10000, () => page.evaluate((b) => window.concord.peer.world.authority(b) === window.concord.peer.world.self, box));
  const expired = Date.now() - t0;
  check(expired >= 2500, `the lock expired after ${expired} ms, before the 3 s timeout`);
  return `browser host rejected ${(await status(page)).rejected - rej0} forged writes and re-asserted the box; 4 replicas at ${r.members[0].replica.hash}; a silent holder's lock expired after ${expired} ms`;
});

scenario('bad-input-from-browser', async (env) => {
  const server = await env.serve();
  const page = await env.page('mallory');
  env.bots(2, '1s');
  await env.converged(4, 40000);
  const box = await page.evaluate(() => window.concord.entities().find((e) => e.schema === 2).entity);
  const pos0 = await page.evaluate((b) => window.concord.debug.boxPos(b), box);
  const rejectedBefore = server.count('write rejected');
  const sent = await page.evaluate((b) => {
    const d = window.concord.debug;
    return {
      snapshot: d.forgeSnapshot(b, { x: 100, y: 100 }),
      update: d.forgeUpdate(b, { x: 19500, y: 6000 }),
      correction: d.forgeCorrection(b, { x: 500, y: 500 }),
    };
  }, box);
  check(sent.snapshot && sent.update && sent.correction, `a forged message was not sent: ${JSON.stringify(sent)}`);
  await waitFor('the host to log rejected writes', 10000, () => server.count('write rejected') >= rejectedBefore + 2);
  const r = await env.converged(4, 30000);
  const pos1 = await page.evaluate((b) => window.concord.debug.boxPos(b), box);
  check(pos1.x === pos0.x && pos1.y === pos0.y, `box moved from ${JSON.stringify(pos0)} to ${JSON.stringify(pos1)}`);
  const st = await status(page);
  check(st.synced && !st.isHost, 'the browser lost its session');
  return `host rejected ${server.count('write rejected') - rejectedBefore} writes, box stayed at (${pos0.x}, ${pos0.y}), 4 replicas at ${r.members[0].replica.hash}`;
});

scenario('tokens', async (env) => {
  // A server with a secret: the page says why it cannot join without a token, joins with one
  // minted by `concord token`, and names a token for another room as such.
  const secret = 'e2e-secret-for-join-tokens-0123456789';
  await env.serve([], { CONCORD_SECRET: secret });
  const mint = (room, user) => {
    const r = spawnSync(bin, ['token', '--room', room, '--user', user], { env: { ...process.env, CONCORD_SECRET: secret }, encoding: 'utf8' });
    check(r.status === 0, `concord token: ${r.stderr}`);
    return r.stdout.trim();
  };
  const refusal = async (page) => waitFor('the page to show why it cannot join', 10000, () => page.evaluate(() => {
    const e = document.getElementById('error');
    return !e.hidden && e.textContent;
  }));

  const bare = await env.tab('no-token', { expectErrors: true });
  await bare.goto(`${env.url}/?room=arena&user=alice`);
  const said = await refusal(bare);
  check(/a token is required/.test(said) && /token_required/.test(said), `without a token the page says: ${said}`);
  check(!/peerIndex/.test(said), `the page blames a resume: ${said}`);
  const st0 = await status(bare);
  check(st0.state === 'failed' && /token_required/.test(st0.error) && st0.signaling !== 'refused', `status without a token: ${JSON.stringify(st0)}`);

  const page = await env.tab('carol');
  await page.goto(`${env.url}/?room=arena&token=${encodeURIComponent(mint('arena', 'carol'))}`);
  await waitFor('carol to join with her token', 10000, () => page.evaluate(() => window.concord && window.concord.status().self > 0));
  // With a secret /api/rooms wants a token or the admin key: the page's own status says it synced.
  const st = await waitFor('carol to sync with the dedicated host', 30000, async () => {
    const s = await status(page);
    return s.synced && s.entities > 0 && s;
  });
  check(st.peerId.startsWith('carol/'), `joined as ${st.peerId}, not as the token's user`);

  const lobby = await env.tab('wrong-room', { expectErrors: true });
  await lobby.goto(`${env.url}/?room=arena&token=${encodeURIComponent(mint('lobby', 'dave'))}`);
  const wrong = await refusal(lobby);
  check(/the token is for another room/.test(wrong) && /wrong_room/.test(wrong), `a token for another room: ${wrong}`);
  return `no token: "${said.slice(0, 60)}…"; carol joined as ${st.peerId} and synced ${st.entities} entities; other room: wrong_room`;
});

// ---------------------------------------------------------------------------------------------
// The examples (examples/) and a game page on another origin.

const repo = resolve(here, '..', '..');

/** The orbs example's Go host, built once per run ($CONCORD_ORBS_HOST to use a built one). */
let orbsHost = process.env.CONCORD_ORBS_HOST || '';
function orbsHostBin() {
  if (!orbsHost) {
    orbsHost = join(artifacts, 'orbs-host');
    const r = spawnSync('go', ['build', '-o', orbsHost, './examples/orbs/host'], { cwd: repo, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Failure('go build ./examples/orbs/host failed');
  }
  return orbsHost;
}

// A second member of the chat in ann's page, linked to her (the host) in memory: two Chromium tabs
// cannot link in the loopback-only namespace (see README). Served same-origin by the test only.
const CHAT_BOB = `
import { Peer, randomDevice } from '/concord/js/index.js';
import { Chat, MEMBER_CURSOR, encodeCursor, readLog } from '/chat.js';
const app = new Chat();
const p = new Peer({ room: 'chat', user: 'bob', device: randomDevice(), app, memory: true });
await p.run();
const mine = (prop, v) => p.do((w) => { const me = w.avatarOf(w.self); if (!me) return false; w.set(me, prop, v); return true; });
window.bob = {
  status: () => p.status(),
  log: () => readLog(p.world),
  move: (x, y) => mine(MEMBER_CURSOR, encodeCursor(x, y)),
  typing: (on) => app.setTyping(p, on),
  say: (text) => app.say(p, text),
};
`;

scenario('example-chat', async (env) => {
  await env.serve(['--static', join(repo, 'examples', 'chat')]);
  const page = await env.tab('ann');
  await page.goto(`${env.url}/?room=chat&user=ann`);
  await waitFor('ann\'s tab to host the chat', 10000, () => page.evaluate(() => !!window.chat && window.chat.status().isHost));
  await page.context().route('**/__e2e/chat-bob.mjs', (route) => route.fulfill({ body: CHAT_BOB, contentType: 'text/javascript' }));
  await page.addScriptTag({ url: `${env.url}/__e2e/chat-bob.mjs`, type: 'module' });
  await waitFor('bob to sync', 10000, () => page.evaluate(() => !!window.bob && window.bob.status().synced), 100);
  await waitFor('bob\'s avatar', 5000, () => page.evaluate(() => window.bob.move(250, 400)), 100);
  await waitFor('bob\'s cursor on ann\'s page', 5000, () => page.evaluate(() => {
    const c = document.querySelector('.cursor[data-name="bob"]');
    return !!c && c.style.left === '25%' && c.style.top === '40%';
  }), 100);
  await page.evaluate(() => window.bob.typing(true));
  await waitFor('"bob is typing…" on ann\'s page', 5000, async () => (await page.textContent('#typing')).includes('bob is typing'), 100);
  await page.evaluate(() => window.bob.say('hello from bob'));
  await waitFor('bob\'s line in ann\'s log', 5000, async () => (await page.textContent('#log')).includes('bob: hello from bob'), 100);
  await page.fill('#text', 'hi bob');
  await page.press('#text', 'Enter');
  await waitFor('ann\'s line in bob\'s replica', 5000, () => page.evaluate(() => {
    const l = window.bob.log();
    return l.length === 2 && l[0].from === 'bob' && l[1].from === 'ann' && l[1].text === 'hi bob';
  }), 100);
  const r = await env.converged(2, 20000, 'chat');
  await page.screenshot({ path: join(artifacts, 'example-chat.png') });
  return `ann hosts, bob linked in memory: cursor, "typing…" (an application message) and 2 lines of the append-set log seen both ways; 2 replicas at ${r.members[0].replica.hash}`;
});

scenario('example-orbs', async (env) => {
  await env.serve(['--static', join(repo, 'examples', 'orbs', 'web'), '--room', 'orbs']);
  env.proc('orbs-host', ['--server', env.url, '--room', 'orbs'], {}, orbsHostBin());
  await waitFor('the Go host to host orbs', 15000, async () => {
    const r = await env.room('orbs');
    return r && r.host && r.members.find((m) => m.peerIndex === r.host).kind === 'host';
  });
  const page = await env.tab('ann');
  await page.goto(`${env.url}/?room=orbs&user=ann`);
  await waitFor('ann to sync', 10000, () => page.evaluate(() => !!window.game && window.game.status().synced));
  const st = await page.evaluate(() => window.game.status());
  check(!st.isHost, 'the browser hosts, not the Go host');
  // Click the nearest orb: ann walks there and the Go host scores her.
  const box = await page.locator('#field').boundingBox();
  const orb = await page.evaluate(() => window.game.view().orbs[0]);
  await page.mouse.click(box.x + orb.x * box.width / 1000, box.y + orb.y * box.height / 600);
  const mine = () => page.evaluate(() => {
    const v = window.game.view();
    const s = v.scores.find((x) => x.peer === v.self);
    return s ? s.points : 0;
  });
  await waitFor('the Go host to score ann', 15000, async () => (await mine()) >= 1, 100);
  // The application API across languages over a real WebRTC link: the Go host told ann she
  // scored (a message to her), and her cheer (an Action to the host) comes back to everyone.
  await waitFor('ann to hear "scored" from the Go host', 5000, () => page.evaluate(() => window.game.heard().some((m) => m.type === 200 && m.value >= 1)), 100);
  await page.keyboard.press('Space');
  await waitFor('ann to hear her own cheer from the Go host', 5000, () => page.evaluate(() => {
    const self = window.game.status().self;
    return window.game.heard().some((m) => m.type === 201 && m.value === self);
  }), 100);
  const r = await env.converged(2, 20000, 'orbs');
  await page.screenshot({ path: join(artifacts, 'example-orbs.png') });
  return `Go host #${r.host}, ann #${st.self} walked to an orb and scored ${await mine()}; the Go host's "scored" message and ann's cheer (an Action, echoed to everyone) crossed the link; 2 replicas at ${r.members[0].replica.hash}`;
});

/**
 * Serves a game page on another loopback origin (a tiny static server, as `python3 -m http.server`
 * would): it imports the client from `concord serve` (the ?server= URL) and joins the arena.
 */
async function pageOnAnotherOrigin(env) {
  const { createServer } = await import('node:http');
  const port = nextPort++;
  const html = '<!doctype html><title>elsewhere</title><p id="out">loading</p><script type="module" src="/main.js"></script>';
  const main = `
const out = document.getElementById('out');
const server = new URLSearchParams(location.search).get('server');
try {
  const { Peer } = await import(server + '/concord/js/index.js');
  const { Game } = await import(server + '/concord/js/arena.js');
  const peer = new Peer({ url: server.replace(/^http/, 'ws') + '/ws', room: 'arena', user: 'elsewhere', app: new Game() });
  window.elsewhere = { status: () => peer.status() };
  await peer.run();
  out.textContent = 'joined';
} catch (err) {
  out.textContent = 'cannot use the Concord client at ' + server + ' (is this origin in serve --origin?): ' + err.message;
}
`;
  env.pageHost = createServer((req, res) => {
    const js = req.url.startsWith('/main.js');
    res.writeHead(200, { 'Content-Type': js ? 'text/javascript' : 'text/html' });
    res.end(js ? main : html);
  });
  await new Promise((r) => env.pageHost.listen(port, '127.0.0.1', r));
  return `http://127.0.0.1:${port}`;
}

scenario('cross-origin-client', async (env) => {
  // The page's origin is only known once its server listens: start it first, then serve.
  const origin = await pageOnAnotherOrigin(env);
  await env.serve(['--origin', origin]);
  const page = await env.tab('elsewhere');
  await page.goto(`${origin}/?server=${encodeURIComponent(env.url)}`);
  await waitFor('the page on another origin to join and sync', 20000, () => page.evaluate(() => !!window.elsewhere && window.elsewhere.status().synced));
  const st = await page.evaluate(() => window.elsewhere.status());
  return `a page on ${origin} imported the client from ${env.url} and joined as ${st.peerId}, synced ${st.entities} entities`;
});

scenario('cross-origin-refused', async (env) => {
  const origin = await pageOnAnotherOrigin(env);
  const server = await env.serve();
  const page = await env.tab('elsewhere', { expectErrors: true });
  await page.goto(`${origin}/?server=${encodeURIComponent(env.url)}`);
  const said = await waitFor('the page to say it cannot use the client', 10000, async () => {
    const t = await page.textContent('#out');
    return t.startsWith('cannot use') ? t : false;
  });
  await waitFor('serve to log the refused origin', 5000, () => server.out.includes('refused a cross-origin load') && server.out.includes(origin));
  const r = await env.room();
  check(!r || !r.members.some((m) => m.peerId && m.peerId.startsWith('elsewhere')), 'the refused page joined');
  return `without --origin: "${said.slice(0, 70)}…"; serve logged the refused origin`;
});

// ---------------------------------------------------------------------------------------------
// Voice (voice.mjs).

addVoiceScenarios(scenario, {
  status,
  artifacts,
  ogg: resolve(here, '..', '..', 'testdata', 'voice', 'silence.ogg'),
  debugModule: join(here, 'debug.mjs'),
  mint: (secret, room, user, ...extra) => {
    const r = spawnSync(bin, ['token', '--room', room, '--user', user, ...extra], { env: { ...process.env, CONCORD_SECRET: secret }, encoding: 'utf8' });
    check(r.status === 0, `concord token: ${r.stderr}`);
    return r.stdout.trim();
  },
});

// ---------------------------------------------------------------------------------------------

process.exit(await runScenarios(scenarios, (name) => new Env(name), 120000, async (name, env) => {
  if (!env.context) return;
  for (const [i, p] of env.context.pages().entries()) {
    await p.screenshot({ path: join(artifacts, `${name}-failure-${i}.png`) }).catch(() => {});
  }
}));
