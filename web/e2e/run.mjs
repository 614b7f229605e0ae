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
    this.server = this.proc('serve', ['serve', '--addr', `127.0.0.1:${this.port}`, '--data', '', '--log-level', 'debug', ...extra], env);
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
    if (this.tmpData) rmSync(this.tmpData, { recursive: true, force: true });
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

scenario('kept-browser-room', async (env) => {
  // A room a browser hosts is kept by the server's follower (serve --keep-rooms all, the default):
  // after every member left and serve restarted, the next browser host restores its world.
  const data = mkdtempSync(join(tmpdir(), 'concord-e2e-data-'));
  const args = ['--dedicated-host=false', '--data', data, '--checkpoint-interval', '300ms'];
  try {
    await env.serve(args);
    const page = await env.page('alice', 'kept');
    await waitFor('the browser to become host', 10000, async () => (await status(page)).isHost);
    const bots = env.proc('bots-kept', ['bot', '--server', env.url, '--room', 'kept', '-n', '2', '--move-for', '2s', '--name', 'bot', '--log-level', 'info']);
    // The host drags a box away from where a new world would spawn it.
    const box = await quietBox(page);
    check(box, 'no free box to drag');
    const drag = await dragBox(page, box, 0, 2000);
    check(drag.to.y - drag.from.y > 1500, `the box did not follow the mouse: ${JSON.stringify(drag)}`);
    // The browser, two bots and the server's follower, at rest with equal hashes.
    const r = await env.converged(4, 40000, 'kept');
    check(r.members.some((m) => m.peerId.startsWith('concord-follow/')), 'no follower in the room');
    const boxes = (p) => p.evaluate(() => {
      const c = window.concord;
      return c.peer.world.entitiesOf(2).map((e) => ({ e, pos: c.debug.boxPos(e) }));
    });
    const before = await boxes(page);
    check(before.length === 8, `${before.length} boxes, want 8`);
    await bots.kill('SIGTERM');
    await page.close();
    await waitFor('the room to close (its follower leaves last)', 15000, async () => !(await env.room('kept')));
    await env.server.kill('SIGTERM');
    env.server = env.proc('serve-restarted', ['serve', '--addr', `127.0.0.1:${env.port}`, ...args]);
    await waitFor('the restarted server to answer /healthz', 10000, async () => (await fetch(`${env.url}/healthz`).catch(() => ({ ok: false }))).ok);
    const page2 = await env.page('bob', 'kept');
    await waitFor('the new browser to become host', 10000, async () => (await status(page2)).isHost);
    const after = await boxes(page2);
    check(JSON.stringify(after) === JSON.stringify(before), `boxes not restored: ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
    const moved = after.find((b) => b.e === box);
    return `8 boxes kept across every tab leaving and a serve restart, box ${box} still where it was dragged: ${JSON.stringify(moved.pos)}`;
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
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
// A world of regions (docs/protocol.md §11): the demo world `tiles` of `serve --world tiles`.

/** Opens the world page as user, first joining region (x, y), and waits until a host says where it is resident. */
async function worldPage(env, user, x, y, opts = {}) {
  const page = await env.tab(user, opts);
  await page.goto(`${env.url}/world.html?world=tiles&user=${encodeURIComponent(user)}&x=${x}&y=${y}`);
  await waitFor(`${user} to be resident somewhere`, 20000, () => page.evaluate(() => !!window.concord && !!window.concord.status().resident));
  return page;
}

/** What a world page sees: its status, and per owner how many avatars it draws and where. */
const worldView = (page) => page.evaluate(() => {
  const c = window.concord;
  const count = {};
  const at = {};
  for (const p of c.players()) {
    count[p.owner] = (count[p.owner] || 0) + 1;
    at[p.owner] = { room: p.room, gen: p.gen, x: p.pos.x, y: p.pos.y };
  }
  const rooms = {};
  for (const k of c.copies()) (rooms[k.owner] ||= new Set()).add(k.room);
  const twice = Object.entries(rooms).filter(([, s]) => s.size > 1).map(([o]) => o);
  return { st: c.status(), count, at, twice };
});

scenario('world-tiles', async (env) => {
  await env.serve(['--world', 'tiles']);
  // ann starts in (3, 3), bob in (4, 3): a first arrival stands in the middle of its region, 8 m
  // from the border between them.
  const ann = await worldPage(env, 'ann', 3, 3);
  const bob = await worldPage(env, 'bob', 4, 3);
  const annID = (await worldView(ann)).st.self;
  const bobID = (await worldView(bob)).st.self;
  const res = (v) => v.st.resident && `${v.st.resident.x},${v.st.resident.y}`;
  check(res(await worldView(ann)) === '3,3' && res(await worldView(bob)) === '4,3', 'ann and bob are not resident where they arrived');
  // Each sees the other across the border, once the neighbour's room is joined.
  await waitFor('ann and bob to see each other across the border', 20000, async () => {
    const a = await worldView(ann);
    const b = await worldView(bob);
    return a.count[bobID] === 1 && b.count[annID] === 1;
  }, 100);

  // Both walk across the border at once (ann right, bob left) while both pages are sampled: every
  // sample shows exactly one avatar of each player.
  let samples = 0;
  let handovers = 0; // samples in which some region pair held a player's avatar twice (the merge at work)
  const bad = [];
  let walking = true;
  const sampler = (async () => {
    while (walking) {
      for (const [who, page] of [['ann', ann], ['bob', bob]]) {
        const v = await worldView(page);
        samples++;
        if (v.twice.length) handovers++;
        for (const id of [annID, bobID]) if (v.count[id] !== 1) bad.push(`${who} drew ${v.count[id] || 0} avatars of ${id} (at ${JSON.stringify(v.at[id])})`);
      }
    }
  })();
  const cross = async (page, key, want) => {
    await page.locator('#world').focus();
    await page.keyboard.down(key);
    try {
      await waitFor(`a crossing into ${want}`, 20000, async () => res(await worldView(page)) === want, 50);
      // A little past the border, so that the next check is not a walk back.
      const x0 = (await worldView(page)).at[(await worldView(page)).st.self].x;
      await waitFor('a step past the border', 5000, async () => {
        const v = await worldView(page);
        return Math.abs(v.at[v.st.self].x - x0) >= 1000;
      }, 50);
    } finally {
      await page.keyboard.up(key);
    }
  };
  try {
    await Promise.all([cross(ann, 'KeyD', '4,3'), cross(bob, 'KeyA', '3,3')]);
  } finally {
    walking = false;
    await sampler;
  }
  check(bad.length === 0, `merged views broke during the crossings (${bad.length} of ${samples} samples): ${bad.slice(0, 3).join('; ')}`);
  const a = await worldView(ann);
  const b = await worldView(bob);
  check(a.st.crossings >= 1 && b.st.crossings >= 1, `crossings: ann ${a.st.crossings}, bob ${b.st.crossings}`);
  check(a.at[annID].room === 'tiles.4.3' && a.at[annID].gen >= 2, `ann's own avatar: ${JSON.stringify(a.at[annID])}`);
  check(a.count[bobID] === 1 && b.count[annID] === 1, 'after the crossings ann and bob do not see each other');
  // Every input reached a host: nothing waits unacknowledged once the walk has stopped.
  await waitFor('no input to wait for an ack', 5000, async () => (await worldView(ann)).st.pending === 0 && (await worldView(bob)).st.pending === 0, 100);

  // ann places a block next to her on a tile of her region; it is still there after a reload.
  const me = (await worldView(ann)).at[annID];
  const tx = Math.max(64, Math.floor(me.x / 1000) + 1);
  const ty = Math.floor(me.y / 1000);
  const before = await ann.evaluate(([x, y]) => window.concord.blocks().find((k) => k.x === x && k.y === y), [tx, ty]);
  const kind = before && before.kind === 5 ? 6 : 5;
  // Clicks on the canvas: the page picks the block with the number keys.
  const click = async (page, button) => {
    const at = await page.evaluate(([x, y]) => window.concord.tileOnScreen(x, y), [tx, ty]);
    await page.mouse.click(at.x, at.y, { button });
  };
  await ann.locator('#world').focus();
  await ann.keyboard.press(`Digit${kind}`);
  await click(ann, 'left');
  const hasBlock = (page, k = kind) => page.evaluate(([x, y, kk]) => window.concord.blocks().some((b) => b.x === x && b.y === y && (kk === 0 || b.kind === kk)), [tx, ty, k]);
  await waitFor(`ann's block on tile ${tx},${ty}`, 10000, () => hasBlock(ann), 100);
  await waitFor(`bob to see ann's block`, 10000, () => hasBlock(bob), 100);
  await ann.reload();
  await waitFor('ann to be back, resident', 20000, () => ann.evaluate(() => !!window.concord && !!window.concord.status().resident));
  await waitFor(`ann's block after the reload`, 20000, () => hasBlock(ann), 100);
  const back = await worldView(ann);
  check(back.st.self === annID, `ann came back as ${back.st.self}, not ${annID}`);
  await ann.screenshot({ path: join(artifacts, 'world.png') });
  // A right-click removes it, for bob too.
  await waitFor('ann to see her avatar again', 10000, async () => (await worldView(ann)).count[annID] === 1, 100);
  await click(ann, 'right');
  await waitFor(`the block on tile ${tx},${ty} to go`, 10000, async () => !(await hasBlock(ann, 0)) && !(await hasBlock(bob, 0)), 100);
  return `ann and bob saw each other across the border; crossed it both at once (${a.st.crossings}/${b.st.crossings} crossings), ` +
    `${samples} samples with one avatar per player (${handovers} during a handover with two copies); ` +
    `ann's block (a click) on ${tx},${ty} was there after a reload (ann back in ${res(back)}) and went with a right-click`;
});

scenario('world-bots', async (env) => {
  await env.serve(['--world', 'tiles']);
  // A tab watches from (1, 0); three bots start in (0, 0), (1, 0), (2, 0) — all in its view — and
  // wander across region borders, placing and removing blocks.
  const page = await worldPage(env, 'watcher', 1, 0);
  env.proc('bots-world', ['bot', '--server', env.url, '--world', 'tiles', '-n', '3', '--name', 'bot', '--log-level', 'info']);
  // Sampled until the page has seen bots cross borders in its view: never two avatars of one
  // player; never none of a bot that stood well inside the followed area one sample before.
  const area = () => page.evaluate(() => {
    const c = window.concord.client;
    const S = c.dir.regionSize;
    const rs = [...c.regions.values()];
    if (!rs.length || rs.some((r) => r.state !== 'joined')) return null;
    return { x0: Math.min(...rs.map((r) => r.cell.x)) * S, y0: Math.min(...rs.map((r) => r.cell.y)) * S, x1: (Math.max(...rs.map((r) => r.cell.x)) + 1) * S, y1: (Math.max(...rs.map((r) => r.cell.y)) + 1) * S };
  });
  let prev = null;
  let samples = 0;
  let handovers = 0;
  const crossings = new Set();
  const bad = [];
  const deadline = Date.now() + 60000;
  while (crossings.size < 3) {
    check(Date.now() < deadline, `the page saw ${crossings.size} bot crossings in 60 s (want 3)`);
    const a = await area();
    const v = await worldView(page);
    const t = Date.now();
    samples++;
    if (v.twice.length) handovers++;
    for (const [owner, n] of Object.entries(v.count)) if (n !== 1) bad.push(`${n} avatars of ${owner}`);
    if (prev && a && t - prev.t < 300) {
      for (const [owner, p] of Object.entries(prev.at)) {
        if (owner === v.st.self) continue;
        const inside = p.x >= a.x0 + 2000 && p.x < a.x1 - 2000 && p.y >= a.y0 + 2000 && p.y < a.y1 - 2000;
        if (inside && !v.count[owner]) bad.push(`${owner} vanished at ${p.x},${p.y} (${p.room})`);
        if (v.at[owner] && v.at[owner].room !== p.room) crossings.add(`${owner} ${p.room}→${v.at[owner].room}`);
      }
    }
    prev = { t, at: v.at };
    check(bad.length === 0, `after ${samples} samples: ${bad.slice(0, 3).join('; ')}`);
  }
  return `${samples} samples, one avatar per player in each (${handovers} during a handover with two copies); ` +
    `bot crossings seen: ${[...crossings].join(', ')}`;
});

scenario('world-restart', async (env) => {
  env.tmpData = mkdtempSync(join(tmpdir(), 'concord-e2e-world-'));
  const args = ['--world', 'tiles', '--data', env.tmpData, '--checkpoint-interval', '300ms'];
  await env.serve(args);
  // While the server is away the page's directory reads fail in its console: expected.
  const ann = await worldPage(env, 'ann', 3, 3, { expectErrors: true });
  const annID = (await worldView(ann)).st.self;
  await waitFor('ann to see her avatar', 20000, async () => (await worldView(ann)).count[annID] === 1, 100);
  const me = (await worldView(ann)).at[annID];
  const tx = Math.floor(me.x / 1000) + 1;
  const ty = Math.floor(me.y / 1000);
  const kindBefore = await ann.evaluate(([x, y]) => (window.concord.blocks().find((k) => k.x === x && k.y === y) || { kind: 0 }).kind, [tx, ty]);
  const kind = kindBefore === 4 ? 2 : 4;
  await ann.evaluate(([x, y, k]) => window.concord.place(x, y, k), [tx, ty, kind]);
  const hasBlock = () => ann.evaluate(([x, y, k]) => window.concord.blocks().some((b) => b.x === x && b.y === y && b.kind === k), [tx, ty, kind]);
  await waitFor(`ann's block on ${tx},${ty}`, 10000, hasBlock, 100);
  // The whole server goes and comes back on the same data directory, the tab staying open.
  await env.server.kill('SIGTERM');
  await env.serve(args);
  // The tab's rooms redial and resume, the client loads its regions again, and the region hosts
  // take the rooms over from their checkpoints: ann's avatar and block are there, and her inputs
  // apply again (a walk moves her, every input acknowledged).
  await waitFor('ann back with one avatar and her block', 30000, async () => (await worldView(ann)).count[annID] === 1 && await hasBlock(), 200);
  const p0 = (await worldView(ann)).at[annID];
  await ann.evaluate(() => window.concord.walk(0, 3000));
  await waitFor('ann to walk after the restart', 15000, async () => {
    const v = await worldView(ann);
    return v.at[annID] && v.at[annID].y > p0.y + 1000;
  }, 100);
  await ann.evaluate(() => window.concord.walk(0, 0));
  await waitFor('no input waiting', 10000, async () => (await worldView(ann)).st.pending === 0, 100);
  const v = await worldView(ann);
  check(v.count[annID] === 1, `${v.count[annID]} avatars of ann`);
  return `the server restarted under an open tab: ann came back with one avatar (${v.st.resident.x},${v.st.resident.y}, gen ${v.st.gen}), ` +
    `her block on ${tx},${ty} kept, and walked again with every input acknowledged`;
});

// ---------------------------------------------------------------------------------------------

process.exit(await runScenarios(scenarios, (name) => new Env(name), 120000, async (name, env) => {
  if (!env.context) return;
  for (const [i, p] of env.context.pages().entries()) {
    await p.screenshot({ path: join(artifacts, `${name}-failure-${i}.png`) }).catch(() => {});
  }
}));
