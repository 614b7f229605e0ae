#!/usr/bin/env node
// A browser for the NAT lab (internal/harness/netlab, docs/design.md §6): one page of the Concord client in
// Debian's Chromium (driven by playwright-core; the default) or, with `--browser firefox`, Firefox
// ESR with stock prefs (driven by puppeteer-core over WebDriver BiDi), run by the Go test inside a lab
// namespace behind a NAT (`ip netns exec <home> node web/e2e/lab.mjs --server URL`). It never
// creates a namespace itself and refuses to run where the machine's own interfaces are visible:
// it must see exactly `lo` and `eth0` with a lab address (10.0.0.0/8 or 100.64.0.0/10).
//
// Output, one line each, for the Go test to read: `joined <status JSON>` once the page has
// joined the room, then `status <status JSON>` every 500 ms, with `pairs`: the candidate types of
// each link's selected pair from the browser's getStats(), and `localCandidates`: the type and
// address of every local candidate it gathered. It runs until SIGTERM or SIGINT; a
// failure prints `error <message>` and exits 1.

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { CHROMIUM_ARGS } from './chromium.mjs';

const { values: opt } = parseArgs({
  options: {
    server: { type: 'string' },
    room: { type: 'string', default: 'arena' },
    user: { type: 'string', default: 'alice' },
    browser: { type: 'string', default: 'chromium' },
  },
});

const fail = (msg) => {
  console.log(`error ${msg}`);
  process.exit(1);
};

const inLab = (a) => a.family === 'IPv4' && (a.address.startsWith('10.') || /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./.test(a.address));
const ifaces = readdirSync('/sys/class/net').sort();
const addrs = Object.entries(networkInterfaces()).filter(([n]) => n !== 'lo').flatMap(([, a]) => a);
if (ifaces.join(',') !== 'eth0,lo' || addrs.length === 0 || !addrs.every(inLab)) {
  fail(`refusing to run outside a lab namespace: interfaces ${ifaces.join(', ')}, addresses ${addrs.map((a) => a.address).join(', ')}`);
}
if (!opt.server) fail('--server URL is required');

if (opt.browser !== 'chromium' && opt.browser !== 'firefox') fail(`--browser ${opt.browser}: want chromium or firefox`);
const tmp = mkdtempSync(join(tmpdir(), `concord-lab-${opt.browser}-`));
let context;
let closing = false;
const close = async (code) => {
  if (closing) return;
  closing = true;
  if (context) await context.close().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
  process.exit(code);
};
process.on('SIGTERM', () => close(0));
process.on('SIGINT', () => close(0));

try {
  let page;
  if (opt.browser === 'firefox') {
    const puppeteer = (await import('puppeteer-core')).default;
    context = await puppeteer.launch({
      browser: 'firefox', executablePath: process.env.FIREFOX || '/usr/bin/firefox-esr', headless: true,
      userDataDir: join(tmp, 'profile'), env: { ...process.env, HOME: tmp },
    });
    page = await context.newPage();
  } else {
    const { chromium } = await import('playwright-core');
    context = await chromium.launchPersistentContext(tmp, {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: CHROMIUM_ARGS,
      headless: true,
    });
    page = await context.newPage();
  }
  page.on('pageerror', (err) => console.log(`pageerror ${err.message}`));
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') console.log(`console ${m.type()} ${m.text()}`); });
  await page.goto(`${opt.server}/?room=${encodeURIComponent(opt.room)}&user=${encodeURIComponent(opt.user)}`);
  // The status, plus the candidate types of each link's selected pair as the browser's own stats
  // say (pairs: {remote peer index: {local, remote}}). Firefox names no selected pair on its
  // transport stats: its candidate pair says `selected` (or, failing that, nominated and succeeded).
  const status = () => page.evaluate(async () => {
    const c = window.concord;
    if (!c) return null;
    const st = c.status();
    st.pairs = {};
    st.localCandidates = [];
    for (const [idx, r] of c.peer.remotes || []) {
      const pc = r.link && r.link.pc;
      if (!pc) continue;
      const stats = await pc.getStats();
      stats.forEach((s) => { if (s.type === 'local-candidate') st.localCandidates.push(`${s.candidateType} ${s.address}`); });
      let pairId;
      stats.forEach((s) => { if (s.type === 'transport' && s.selectedCandidatePairId) pairId = s.selectedCandidatePairId; });
      if (!pairId) stats.forEach((s) => { if (s.type === 'candidate-pair' && (s.selected || (s.nominated && s.state === 'succeeded'))) pairId = s.id; });
      const pair = pairId && stats.get(pairId);
      if (!pair) continue;
      const local = stats.get(pair.localCandidateId);
      const remote = stats.get(pair.remoteCandidateId);
      st.pairs[idx] = { local: local && local.candidateType, remote: remote && remote.candidateType };
    }
    return st;
  });
  const end = Date.now() + 20000;
  for (;;) {
    const st = await status();
    if (st && st.self > 0) {
      console.log(`joined ${JSON.stringify(st)}`);
      break;
    }
    if (Date.now() > end) {
      console.log('error the page did not join within 20 s');
      await close(1);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  for (;;) {
    console.log(`status ${JSON.stringify(await status())}`);
    await new Promise((r) => setTimeout(r, 500));
  }
} catch (err) {
  if (!closing) {
    console.log(`error ${err.message}`);
    await close(1);
  }
}
