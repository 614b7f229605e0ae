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
// Artifacts (logs, screenshots) go to $CONCORD_E2E_ARTIFACTS (default <repo>/artifacts).

import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const artifacts = resolve(process.env.CONCORD_E2E_ARTIFACTS || join(repo, 'artifacts'));
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const NETNS_ENV = 'CONCORD_E2E_NETNS';

// ---------------------------------------------------------------------------------------------
// Network namespace: create, re-exec inside, delete.

if (!process.env[NETNS_ENV]) {
  process.exit(outsideNamespace());
}

function outsideNamespace() {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    console.error('e2e: must run as root (it creates a network namespace)');
    return 2;
  }
  const ns = `concord-e2e-${process.pid}`;
  const ip = (...args) => spawnSync('ip', args, { stdio: ['ignore', 'inherit', 'inherit'] }).status;
  if (ip('netns', 'add', ns) !== 0) {
    console.error(`e2e: cannot create network namespace ${ns}`);
    return 2;
  }
  const cleanup = () => { ip('netns', 'delete', ns); };
  const onSignal = (sig) => { cleanup(); process.exit(128 + (sig === 'SIGINT' ? 2 : 15)); };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    if (ip('-n', ns, 'link', 'set', 'lo', 'up') !== 0) {
      console.error('e2e: cannot bring lo up');
      return 2;
    }
    const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: 'inherit',
      env: { ...process.env, [NETNS_ENV]: ns },
    });
    return r.status ?? 1;
  } finally {
    cleanup();
  }
}

// ---------------------------------------------------------------------------------------------
// Inside the namespace.

const { chromium } = await import('playwright-core');

const ifaces = readdirSync('/sys/class/net');
if (ifaces.length !== 1 || ifaces[0] !== 'lo') {
  console.error(`e2e: refusing to run: network interfaces ${ifaces.join(', ')} (want only lo)`);
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

const CHROMIUM_ARGS = [
  '--allow-loopback-in-peer-connection',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let nextPort = 17880;

class Failure extends Error {}

function check(cond, msg) {
  if (!cond) throw new Failure(msg);
}

const sleepTick = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn (async, returns a truthy value when done) every `every` ms until the deadline. */
async function waitFor(what, timeoutMs, fn, every = 200) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Failure(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (${last.message})` : ''}`);
    await sleepTick(every);
  }
}

/** A child process of the concord binary, its output teed to a log file and kept in memory. */
class Proc {
  constructor(scenario, name, args) {
    this.name = name;
    this.out = '';
    this.exited = false;
    const log = createWriteStream(join(artifacts, 'logs', `${scenario}-${name}.log`));
    this.child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const take = (d) => {
      const s = d.toString();
      log.write(s);
      if (this.out.length < 8 << 20) this.out += s;
    };
    this.child.stdout.on('data', take);
    this.child.stderr.on('data', take);
    this.done = new Promise((res) => this.child.on('exit', (code, sig) => {
      this.exited = true;
      log.end();
      res({ code, sig });
    }));
  }

  kill(sig = 'SIGTERM') {
    if (!this.exited) this.child.kill(sig);
    return this.done;
  }

  count(text) {
    return this.out.split(text).length - 1;
  }
}

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

  proc(name, args) {
    const p = new Proc(this.name, name, args);
    this.procs.push(p);
    return p;
  }

  async serve(extra = []) {
    this.server = this.proc('serve', ['serve', '--addr', `127.0.0.1:${this.port}`, ...extra]);
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
        args: CHROMIUM_ARGS,
        headless: true,
        viewport: { width: 1400, height: 820 },
      });
    }
    return this.context;
  }

  /** Opens the page in a new tab and waits until it has joined the room. */
  async page(user = 'alice', room = 'arena') {
    const ctx = await this.browser();
    const page = await ctx.newPage();
    page.on('pageerror', (err) => console.error(`  [${user}] page error: ${err.message}`));
    page.on('console', (m) => { if (m.type() === 'error') console.error(`  [${user}] console: ${m.text()}`); });
    await page.goto(`${this.url}/?room=${encodeURIComponent(room)}&user=${encodeURIComponent(user)}`);
    await waitFor(`${user} to join`, 10000, () => page.evaluate(() => window.concord && window.concord.status().self > 0));
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
   * Waits until the room has `members` members, every one synced and reporting the host's term
   * and the same replica hash, twice in a row (so the room is at rest, not momentarily equal).
   */
  async converged(members, timeoutMs = 30000, room = 'arena') {
    let prev = '';
    return waitFor(`${members} members with equal hashes`, timeoutMs, async () => {
      const r = await this.room(room);
      if (!r || r.members.length !== members || !r.host) throw new Error(r ? describe(r) : 'no room');
      const hashes = new Set();
      for (const m of r.members) {
        if (!m.synced || !m.replica || m.replica.term !== r.term) throw new Error(describe(r));
        hashes.add(m.replica.hash);
      }
      if (hashes.size !== 1) throw new Error(describe(r));
      const key = `${r.term}/${[...hashes][0]}`;
      const ok = key === prev;
      prev = key;
      return ok ? r : false;
    }, 500);
  }

  async close() {
    if (this.context) await this.context.close().catch(() => {});
    await Promise.all(this.procs.map((p) => p.kill('SIGTERM')));
    if (this.tmp) rmSync(this.tmp, { recursive: true, force: true });
  }
}

function describe(r) {
  return `term ${r.term} host ${r.host}: ` + r.members.map((m) => `${m.peerIndex}:${m.kind}${m.synced ? '' : '(unsynced)'}=${m.replica ? `${m.replica.hash}@t${m.replica.term}/${m.replica.entities}e` : 'none'}`).join(' ');
}

const status = (page) => page.evaluate(() => window.concord.status());

// ---------------------------------------------------------------------------------------------
// Scenarios.

const scenarios = [];
function scenario(name, fn) { scenarios.push({ name, fn }); }

scenario('browser-joins-dedicated-host', async (env) => {
  await env.serve();
  const page = await env.page('alice');
  env.bots(4, '3s');
  const r = await env.converged(6, 40000);
  const st = await status(page);
  check(st.hash === r.members[0].replica.hash, `page hash ${st.hash} differs from the room's`);
  check(r.members.find((m) => m.peerIndex === r.host).kind === 'host', 'the dedicated host is not the host');
  const ents = await page.evaluate(() => window.concord.entities());
  check(ents.filter((e) => e.schema === 2).length === 8, 'the page does not see 8 boxes');
  check(ents.filter((e) => e.schema === 1).length === 5, 'the page does not see 5 avatars');
  await page.locator('#arena').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'screenshot.png') });
  copyFileSync(join(artifacts, 'screenshot.png'), join(repo, 'docs', 'screenshot.png'));
  return `6 replicas at ${st.hash}, ${st.entities} entities`;
});

scenario('browser-hosts-go-bots', async (env) => {
  await env.serve(['--dedicated-host=false']);
  const page = await env.page('alice');
  await waitFor('the browser to become host', 10000, async () => (await status(page)).isHost);
  env.bots(4, '3s');
  const r = await env.converged(5, 40000);
  const st = await status(page);
  check(r.host === st.self, `host is ${r.host}, not the browser (${st.self})`);
  check(st.entities === 8 + 1 + 5, `browser host has ${st.entities} entities, want 14`);
  return `browser host ${st.self} term ${r.term}, 5 replicas at ${st.hash}`;
});

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
  const ids = (list, schema) => list.filter((e) => e.schema === schema).map((e) => e.entity).sort((a, b) => a - b).join(',');
  check(ids(before.ents, 2) === ids(after.ents, 2), `box ids changed: ${ids(before.ents, 2)} → ${ids(after.ents, 2)}`);
  check(ids(before.ents, 1) === ids(after.ents, 1), `avatar ids changed: ${ids(before.ents, 1)} → ${ids(after.ents, 1)}`);
  const ts = new Map(after.entries.map((e) => [`${e.entity}/${e.component}`, e.timestamp]));
  for (const e of before.entries) {
    const t = ts.get(`${e.entity}/${e.component}`);
    check(t !== undefined && t >= e.timestamp, `key ${e.entity}/${e.component} went from t=${e.timestamp} to ${t}`);
  }

  // 2. Close the browser host's tab: a Go bot takes over.
  const t1 = Date.now();
  await page.close();
  const r3 = await env.converged(3, 30000);
  const dt2 = Date.now() - t1;
  check(r3.term > r2.term, 'the term did not grow after the browser left');
  const hostKind = r3.members.find((m) => m.peerIndex === r3.host).kind;
  check(hostKind === 'bot', `the new host is a ${hostKind}`);
  const want = 8 + 1 + 3;
  check(r3.members.every((m) => m.replica.entities === want), `entity counts ${r3.members.map((m) => m.replica.entities)} (want ${want})`);
  return `Go host killed → browser host, converged in ${dt1} ms; browser closed → bot host, converged in ${dt2} ms; ${before.ents.length} entity ids kept`;
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

// ---------------------------------------------------------------------------------------------

const only = process.argv.slice(2);
let passed = 0;
let failed = 0;
for (const s of scenarios) {
  if (only.length && !only.includes(s.name)) continue;
  const env = new Env(s.name);
  const t0 = Date.now();
  const deadline = new Promise((_, rej) => setTimeout(() => rej(new Failure('scenario deadline (120 s) passed')), 120000).unref());
  try {
    const detail = await Promise.race([s.fn(env), deadline]);
    passed++;
    console.log(`PASS ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s): ${detail}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s): ${err instanceof Failure ? err.message : err.stack}`);
    if (env.context) {
      for (const [i, p] of env.context.pages().entries()) {
        await p.screenshot({ path: join(artifacts, `${s.name}-failure-${i}.png`) }).catch(() => {});
      }
    }
  } finally {
    await env.close();
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
