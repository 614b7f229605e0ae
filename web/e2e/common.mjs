// What the end-to-end runners share (run.mjs: Chromium on loopback; firefox.mjs: Firefox and stock
// Chromium on a machine with a network interface): polling with a deadline, child processes of the
// concord binary with their output kept, and a room's state in one line.

import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';

/** A scenario's assertion failed (reported without a stack). */
export class Failure extends Error {}

export function check(cond, msg) {
  if (!cond) throw new Failure(msg);
}

export const sleepTick = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn (async, returns a truthy value when done) every `every` ms until the deadline. */
export async function waitFor(what, timeoutMs, fn, every = 200) {
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

/** A child process, its output teed to logFile and kept in memory. */
export class Proc {
  constructor(name, logFile, cmd, args, env = {}) {
    this.name = name;
    this.out = '';
    this.exited = false;
    const log = createWriteStream(logFile);
    this.child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
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

/** A room of GET /api/rooms in one line: term, host, and each member's replica. */
export function describe(r) {
  return `term ${r.term} host ${r.host}: ` + r.members.map((m) => `${m.peerIndex}:${m.kind}${m.synced ? '' : '(unsynced)'}=${m.replica ? `${m.replica.hash}@t${m.replica.term}/${m.replica.entities}e` : 'none'}`).join(' ');
}

/**
 * Waits until `room` (from rooms(), GET /api/rooms) has `members` synced members with equal hashes in
 * the room's term, twice in a row, so the room is at rest (and, if `entities` is given, that many
 * entities in every replica).
 */
export async function converged(rooms, members, timeoutMs = 30000, room = 'arena', entities = undefined) {
  let prev = '';
  const what = `${members} members with equal hashes${entities === undefined ? '' : ` and ${entities} entities`}`;
  return waitFor(what, timeoutMs, async () => {
    const r = (await rooms()).find((x) => x.room === room);
    if (!r || r.members.length !== members || !r.host) throw new Error(r ? describe(r) : 'no room');
    const hashes = new Set();
    for (const m of r.members) {
      if (!m.synced || !m.replica || m.replica.term !== r.term) throw new Error(describe(r));
      if (entities !== undefined && m.replica.entities !== entities) throw new Error(describe(r));
      hashes.add(m.replica.hash);
    }
    if (hashes.size !== 1) throw new Error(describe(r));
    const key = `${r.term}/${[...hashes][0]}`;
    const ok = key === prev;
    prev = key;
    return ok ? r : false;
  }, 500);
}

/**
 * Runs scenarios ({name, fn(env)}) one after another, each in its own env (makeEnv(name), closed
 * after it) and within deadlineMs, those named on the command line only if any are; prints a line
 * per scenario and "N passed, N failed", and returns the exit status. onFailure(name, env) saves
 * what helps (screenshots).
 */
export async function runScenarios(scenarios, makeEnv, deadlineMs, onFailure) {
  const only = process.argv.slice(2);
  let passed = 0;
  let failed = 0;
  for (const s of scenarios) {
    if (only.length && !only.includes(s.name)) continue;
    const env = makeEnv(s.name);
    const t0 = Date.now();
    const deadline = new Promise((_, rej) => setTimeout(() => rej(new Failure(`scenario deadline (${deadlineMs / 1000} s) passed`)), deadlineMs).unref());
    try {
      const detail = await Promise.race([s.fn(env), deadline]);
      passed++;
      console.log(`PASS ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s): ${detail}`);
    } catch (err) {
      failed++;
      console.log(`FAIL ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s): ${err instanceof Failure ? err.message : err.stack}`);
      await onFailure(s.name, env).catch(() => {});
    } finally {
      await env.close();
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

/**
 * Makes network namespaces with `ip` (steps, each an argument list, run in order; the first ones
 * add `namespaces`), re-executes script inside the namespace `inside` with env[envName] set to it,
 * and deletes every namespace afterwards, on SIGINT and SIGTERM too. Returns the exit status: the
 * inner run's, or 2 when this is not root or a step fails. label prefixes the messages.
 */
export function reexecInNamespaces({ label, namespaces, steps, inside, envName, script }) {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    console.error(`${label}: must run as root (it creates network namespaces)`);
    return 2;
  }
  const ip = (...args) => spawnSync('ip', args, { stdio: ['ignore', 'inherit', 'inherit'] }).status;
  const cleanup = () => { for (const ns of namespaces) ip('netns', 'delete', ns); };
  const onSignal = (sig) => { cleanup(); process.exit(128 + (sig === 'SIGINT' ? 2 : 15)); };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    for (const s of steps) {
      if (ip(...s) !== 0) {
        console.error(`${label}: ip ${s.join(' ')} failed`);
        return 2;
      }
    }
    const r = spawnSync('ip', ['netns', 'exec', inside, process.execPath, script, ...process.argv.slice(2)], {
      stdio: 'inherit',
      env: { ...process.env, [envName]: inside },
    });
    return r.status ?? 1;
  } finally {
    cleanup();
  }
}
