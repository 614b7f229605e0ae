#!/usr/bin/env node
// Stock browsers on one machine: Firefox ESR (driven by puppeteer-core over WebDriver BiDi) and
// Chromium without any WebRTC flag, against `concord serve`, `concord bot` and a browser host, all
// with their default settings, as a newcomer runs README's "Try it".
//
//   CONCORD_BIN=/tmp/concord node web/e2e/firefox.mjs [scenario-name ...]
//
// A stock browser never offers a loopback candidate: it offers its network addresses (as mDNS
// names) and pairs them only with another network address (docs/design.md §6). So unlike run.mjs's
// loopback-only namespace, this runs in a namespace that looks like a user's machine: lo plus one
// network interface (10.77.0.2) with a default route, whose other end sits alone in a second
// namespace. Run as root: the script makes both namespaces, re-executes itself inside the first
// and deletes them afterwards. Nothing reaches this machine's own interfaces. Every wait polls a
// condition with a deadline. Output: one line per scenario, then "N passed, N failed".

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { CHROMIUM_ARGS } from './chromium.mjs';
import { Proc, check, converged, reexecInNamespaces, runScenarios, waitFor } from './common.mjs';
import { botVoice, joinVoice } from './voice.mjs';

const here = dirname(fileURLToPath(import.meta.url));
if (!process.env.CONCORD_E2E_ARTIFACTS) {
  process.env.CONCORD_E2E_ARTIFACTS = mkdtempSync(join(tmpdir(), 'concord-e2e-firefox-'));
  console.log(`e2e firefox: artifacts (logs, screenshots) in ${process.env.CONCORD_E2E_ARTIFACTS}`);
}
const artifacts = resolve(process.env.CONCORD_E2E_ARTIFACTS);
const firefoxPath = process.env.FIREFOX || '/usr/bin/firefox-esr';
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const NETNS_ENV = 'CONCORD_E2E_FF_NETNS';
const USER_IP = '10.77.0.2';
const ROUTER_IP = '10.77.0.1';

// ---------------------------------------------------------------------------------------------
// Namespaces: the user's machine (lo + ffu0) and the far end of its one link (ffr0).

if (!process.env[NETNS_ENV]) process.exit(outside());

function outside() {
  const user = `concord-ff-${process.pid}`;
  const router = `concord-ffr-${process.pid}`;
  return reexecInNamespaces({
    label: 'e2e firefox', namespaces: [user, router], inside: user, envName: NETNS_ENV, script: fileURLToPath(import.meta.url),
    steps: [
      ['netns', 'add', user], ['netns', 'add', router],
      ['link', 'add', 'ffu0', 'netns', user, 'type', 'veth', 'peer', 'name', 'ffr0', 'netns', router],
      ['-n', user, 'link', 'set', 'lo', 'up'], ['-n', router, 'link', 'set', 'lo', 'up'],
      ['-n', user, 'addr', 'add', `${USER_IP}/24`, 'dev', 'ffu0'], ['-n', user, 'link', 'set', 'ffu0', 'up'],
      ['-n', router, 'addr', 'add', `${ROUTER_IP}/24`, 'dev', 'ffr0'], ['-n', router, 'link', 'set', 'ffr0', 'up'],
      ['-n', user, 'route', 'add', 'default', 'via', ROUTER_IP],
    ],
  });
}

// ---------------------------------------------------------------------------------------------
// Inside the user's namespace.

const names = readdirSync('/sys/class/net').sort();
const ours = (networkInterfaces().ffu0 || []).some((a) => a.family === 'IPv4' && a.address === USER_IP);
if (names.join(',') !== 'ffu0,lo' || !ours) {
  console.error(`e2e firefox: refusing to run: interfaces ${names.join(', ')} (want lo and ffu0 at ${USER_IP})`);
  process.exit(2);
}
const bin = process.env.CONCORD_BIN;
for (const [what, path] of [['CONCORD_BIN (the concord binary)', bin], ['Firefox (apt-get install -y firefox-esr)', firefoxPath], ['Chromium (apt-get install -y chromium)', chromiumPath]]) {
  if (!path || !existsSync(path)) {
    console.error(`e2e firefox: ${what} not found at ${path}`);
    process.exit(2);
  }
}
mkdirSync(join(artifacts, 'logs'), { recursive: true });
const puppeteer = (await import('puppeteer-core')).default;
const { chromium } = await import('playwright-core');

// The processes run with a user's defaults: the test command's CONCORD_LOOPBACK_ONLY (which pins
// WebRTC to loopback on the shared machine) does not apply inside this namespace.
delete process.env.CONCORD_LOOPBACK_ONLY;

let nextPort = 18880;

/** One scenario's world: a server, Go peers, one browser; all torn down by close(). */
class Env {
  constructor(name) {
    this.name = name;
    this.port = nextPort++;
    this.url = `http://127.0.0.1:${this.port}`;
    this.procs = [];
    this.closers = [];
  }

  proc(name, args) {
    const p = new Proc(name, join(artifacts, 'logs', `${this.name}-${name}.log`), bin, args);
    this.procs.push(p);
    return p;
  }

  async serve(extra = []) {
    this.server = this.proc('serve', ['serve', '--addr', `127.0.0.1:${this.port}`, '--data', '', ...extra]);
    await waitFor('the server to answer /healthz', 10000, async () => (await fetch(`${this.url}/healthz`)).ok);
    return this.server;
  }

  bots(n, moveFor = '2s') {
    return this.proc('bots', ['bot', '--server', this.url, '--room', 'arena', '-n', String(n), '--move-for', moveFor, '--log-level', 'info']);
  }

  async rooms() {
    const r = await fetch(`${this.url}/api/rooms`);
    if (!r.ok) throw new Error(`/api/rooms: ${r.status}`);
    return r.json();
  }

  async room(name = 'arena') {
    return (await this.rooms()).find((r) => r.room === name);
  }

  converged(members, timeoutMs = 30000) {
    return converged(() => this.rooms(), members, timeoutMs);
  }

  /**
   * A stock Firefox (no pref changed) with a fresh profile; returns a puppeteer page. fakeMic:
   * the only prefs a test changes, a fake microphone granted without asking (voice).
   */
  async firefox({ fakeMic = false } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'concord-e2e-ff-'));
    const browser = await puppeteer.launch({
      browser: 'firefox', executablePath: firefoxPath, headless: true, userDataDir: join(dir, 'profile'),
      env: { ...process.env, HOME: dir },
      extraPrefsFirefox: fakeMic ? { 'media.navigator.streams.fake': true, 'media.navigator.permission.disabled': true } : {},
    });
    this.closers.push(async () => { await browser.close().catch(() => {}); rmSync(dir, { recursive: true, force: true }); });
    this.browserName = 'firefox';
    return this.log(await browser.newPage());
  }

  /** Chromium without the WebRTC flags of the loopback tests: what a user runs. */
  async chromiumStock() {
    const dir = mkdtempSync(join(tmpdir(), 'concord-e2e-chromium-stock-'));
    const webrtcFlags = new Set(['--allow-loopback-in-peer-connection', '--disable-features=WebRtcHideLocalIpsWithMdns']);
    const ctx = await chromium.launchPersistentContext(dir, {
      executablePath: chromiumPath, args: CHROMIUM_ARGS.filter((a) => !webrtcFlags.has(a)), headless: true,
    });
    this.closers.push(async () => { await ctx.close().catch(() => {}); rmSync(dir, { recursive: true, force: true }); });
    this.browserName = 'chromium';
    return this.log(await ctx.newPage());
  }

  log(page) {
    this.page = page;
    const out = [];
    page.on('console', (m) => out.push(`${new Date().toISOString()} ${m.type()} ${m.text()}`));
    page.on('pageerror', (err) => out.push(`pageerror ${err.message}`));
    this.closers.push(async () => {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(join(artifacts, 'logs', `${this.name}-page.log`), out.join('\n') + '\n');
    });
    return page;
  }

  async join(page, user, room = 'arena') {
    await page.goto(`${this.url}/?room=${room}&user=${user}`);
    await waitFor(`${user} to join`, 10000, () => page.evaluate(() => !!window.concord && window.concord.status().self > 0));
  }

  async close() {
    for (const c of this.closers.reverse()) await c();
    await Promise.all(this.procs.filter((p) => p !== this.server).map((p) => p.kill('SIGTERM')));
    if (this.server) await this.server.kill('SIGTERM');
  }
}

const status = (page) => page.evaluate(() => window.concord.status());

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

/** A browser joins the default demo (dedicated host) and syncs; two Go bots join and all converge. */
async function member(env, page) {
  await env.serve();
  const t0 = Date.now();
  await env.join(page, 'ann');
  await waitFor('the page to sync', 20000, async () => (await status(page)).synced);
  const syncMs = Date.now() - t0;
  env.bots(2);
  const r = await env.converged(4);
  const me = r.members.find((m) => m.kind === 'browser');
  check(me && me.replica && me.replica.link, `the browser reported no candidate pair: ${JSON.stringify(me)}`);
  return `${env.browserName} synced ${syncMs} ms after the page opened, pair ${me.replica.link.local}/${me.replica.link.remote}; 4 replicas at ${r.members[0].replica.hash}`;
}

/** A browser hosts a room (no dedicated host); two Go bots with default flags join it and converge. */
async function hosting(env, page) {
  await env.serve(['--dedicated-host=false']);
  await env.join(page, 'hana');
  await waitFor('the page to host', 10000, async () => (await status(page)).isHost);
  env.bots(2);
  const r = await env.converged(3);
  const host = r.members.find((m) => m.peerIndex === r.host);
  check(host && host.kind === 'browser', `the host is not the browser: ${JSON.stringify(host)}`);
  return r;
}

scenario('firefox-member', async (env) => member(env, await env.firefox()));

scenario('chromium-stock-member', async (env) => member(env, await env.chromiumStock()));

scenario('firefox-host', async (env) => {
  const r = await hosting(env, await env.firefox());
  return `the Firefox tab hosts term ${r.term}; 2 Go bots synced from it, 3 replicas at ${r.members[0].replica.hash}`;
});

scenario('chromium-stock-host', async (env) => {
  const r = await hosting(env, await env.chromiumStock());
  return `the Chromium tab hosts term ${r.term}; 2 Go bots synced from it, 3 replicas at ${r.members[0].replica.hash}`;
});

scenario('firefox-host-killed', async (env) => {
  const page = await env.firefox();
  const before = await hosting(env, page);
  const boxes = before.members[0].replica.entities;
  await page.close(); // the hosting tab goes away
  const after = await waitFor('a bot to take over in a later term', 20000, async () => {
    const r = await env.room();
    return r && r.term > before.term && r.host !== before.host && r.members.length === 2 ? r : false;
  });
  const r = await env.converged(2);
  // Nothing is lost but, in time, the tab's own avatar: every box and both bots' avatars stay.
  const left = r.members[0].replica.entities;
  check(left >= boxes - 1 && left <= boxes, `entities ${left} after the host left, ${boxes} before`);
  return `the Firefox host (term ${before.term}) closed; bot #${after.host} hosts term ${r.term}, 2 replicas at ${r.members[0].replica.hash} with ${left} of ${boxes} entities`;
});

scenario('firefox-explains-loopback', async (env) => {
  // A server confined to loopback cannot pair with a stock browser: the page must say why.
  await env.serve(['--ice', 'loopback']);
  const page = await env.firefox();
  await env.join(page, 'lou');
  const said = await waitFor('the page to explain the missing pair', 20000, () => page.evaluate(() => {
    const el = document.getElementById('link-hint');
    return el && !el.hidden ? el.textContent : false;
  }));
  check(said.includes('--ice loopback') && said.includes('only loopback'), `the hint says: ${said}`);
  await page.screenshot({ path: join(artifacts, 'firefox-explains-loopback.png') });
  return `the page says "${said.slice(0, 90)}…"`;
});

scenario('firefox-voice', async (env) => {
  // Firefox in voice with Go bots (docs/protocol.md §10): it hears the publishing bot, and the
  // listening bot hears it. Radius 0: everyone hears everyone.
  await env.serve(['--voice-radius', '0']);
  const page = await env.firefox({ fakeMic: true });
  await env.join(page, 'vera');
  await waitFor('the page to sync', 20000, async () => (await status(page)).synced);
  const ogg = resolve(here, '..', '..', 'testdata', 'voice', 'silence.ogg');
  env.proc('bot-speaker', ['bot', '--server', env.url, '--room', 'arena', '-n', '1', '--name', 'gospeak', '--move-for', '1s', '--voice', ogg]);
  const listener = env.proc('bot-listener', ['bot', '--server', env.url, '--room', 'arena', '-n', '1', '--name', 'golisten', '--move-for', '1s', '--voice-listen']);
  await joinVoice(page);
  const got = await waitFor('Firefox to receive the Go speaker', 30000, () => page.evaluate(async () => {
    const st = await window.concord.voice().stats();
    const s = st.slots.find((x) => x.member.startsWith('gospeak'));
    if (s && s.packetsReceived > 50 && st.packetsSent > 50) return { received: s.packetsReceived, sent: st.packetsSent };
    const v = window.concord.voice();
    throw new Error(`voice ${v.state} (${v.pc && v.pc.connectionState}), slots ${JSON.stringify(st.slots.filter((x) => x.member))}, sent ${st.packetsSent}`);
  }), 200);
  const heard = await waitFor('the Go listener to hear Firefox and the Go speaker', 20000, () => {
    const x = botVoice(listener.out);
    return x && x.speakers === 2 && x.heard > 100 ? x : false;
  });
  return `Firefox received ${got.received} packets from the Go speaker and sent ${got.sent}; the Go listener heard ${heard.heard} packets from 2 speakers`;
});

// ---------------------------------------------------------------------------------------------

process.exit(await runScenarios(scenarios, (name) => new Env(name), 90000, async (name, env) => {
  if (env.page) await env.page.screenshot({ path: join(artifacts, `${name}-failure.png`) });
}));
