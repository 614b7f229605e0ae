// The JS client as a package (web/static/js, published as @concordrtc/client): packing. Run from
// web/ after `npm ci` (TypeScript is pinned in web/package.json); `npm run typecheck` is the type
// check alone (tsc --noEmit -p static/js: checkJs, strict).
//
//   node pkg.mjs pack [DIR]     generates the .d.ts files (tsc declaration emit from the JSDoc)
//                               into a staging copy, runs `npm pack` there, verifies the tarball
//                               (see verify) and leaves it in DIR (without DIR: verifies only)
//
// The .d.ts files are generated at pack time, never committed: the modules are the only source
// of their types, and a change to them cannot leave stale declarations behind. verify proves the
// tarball whole: every export's module and declarations are in it, the page scripts are not, a
// strict TypeScript consumer compiles against it through its exports map, and Node imports it.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = path.dirname(fileURLToPath(import.meta.url));
const SRC = path.join(WEB, 'static', 'js');
const TSC = path.join(WEB, 'node_modules', 'typescript', 'bin', 'tsc');

/** Files of web/static/js that are pages' scripts, not part of the package. */
const PAGE_SCRIPTS = ['page.js', 'inspect.js', 'worldpage.js', 'arena.js']; // the demo's pages and its game: not the library

function tsc(args, opts = {}) {
  if (!existsSync(TSC)) throw new Error(`pkg: ${TSC} is missing: run npm ci in web/ first`);
  return execFileSync(process.execPath, [TSC, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
}

/** Runs tsc and returns its diagnostics (tsc exits non-zero when it has any). */
function diagnostics(args) {
  try {
    tsc(args);
    return [];
  } catch (err) {
    if (typeof err.stdout !== 'string') throw err;
    return err.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
  }
}

/** Builds the tarball into outDir and returns its path. */
function pack(outDir) {
  const work = mkdtempSync(path.join(tmpdir(), 'concord-pkg-'));
  try {
    const stage = path.join(work, 'package');
    cpSync(SRC, stage, { recursive: true, filter: (f) => !f.includes(`${path.sep}types${path.sep}`) && !f.endsWith(`${path.sep}types`) });
    tsc(['-p', SRC, '--noEmit', 'false', '--declaration', '--emitDeclarationOnly', '--outDir', path.join(stage, 'types')]);
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', outDir], { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const [info] = JSON.parse(out);
    const tarball = path.join(outDir, info.filename);
    verify(tarball, info.files.map((f) => f.path), work);
    return tarball;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Checks the packed files, then compiles and imports the tarball as a consumer would. */
function verify(tarball, files, work) {
  const has = new Set(files);
  const manifest = JSON.parse(readFileSync(path.join(SRC, 'package.json'), 'utf8'));
  const want = [];
  for (const [sub, target] of Object.entries(manifest.exports)) {
    if (typeof target === 'string') want.push(target);
    else want.push(target.types, target.default);
    if (sub !== './package.json' && (typeof target === 'string' || !target.types)) throw new Error(`pkg: export ${sub} has no types`);
  }
  want.push(manifest.types, manifest.main);
  const missing = want.map((f) => f.replace(/^\.\//, '')).filter((f) => !has.has(f));
  if (missing.length > 0) throw new Error(`pkg: ${tarball} lacks ${missing.join(', ')}`);
  const pages = PAGE_SCRIPTS.filter((f) => has.has(f));
  if (pages.length > 0) throw new Error(`pkg: ${tarball} carries the page scripts ${pages.join(', ')}`);
  for (const f of readdirSync(SRC).filter((n) => n.endsWith('.js') && !PAGE_SCRIPTS.includes(n))) {
    if (!has.has(f) || !has.has(`types/${f.replace(/\.js$/, '.d.ts')}`)) throw new Error(`pkg: ${tarball} lacks ${f} or its declarations`);
  }

  // A consumer project with the tarball installed (unpacked: no registry involved).
  const consumer = path.join(work, 'consumer');
  const dest = path.join(consumer, 'node_modules', ...manifest.name.split('/'));
  mkdirSync(dest, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', dest, '--strip-components=1']);
  writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022',
      lib: ['es2022', 'dom'], types: [], skipLibCheck: false, exactOptionalPropertyTypes: false,
    },
    files: ['consumer.ts'],
  }));
  writeFileSync(path.join(consumer, 'consumer.ts'), CONSUMER_TS.replaceAll('PKG', manifest.name));
  const errs = diagnostics(['-p', consumer]);
  if (errs.length > 0) {
    console.error(errs.join('\n'));
    throw new Error('pkg: a strict TypeScript consumer does not compile against the package');
  }
  const probe = `
    const m = await import('${manifest.name}');
    const w = await import('${manifest.name}/world');
    const n = await import('${manifest.name}/netmsg');
    if (typeof m.Peer !== 'function' || m.World !== w.World || typeof n.encode !== 'function') process.exit(1);
    console.log(Object.keys(m).length);`;
  const count = execFileSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: consumer, encoding: 'utf8' }).trim();
  console.log(`pkg: ${path.basename(tarball)}: ${files.length} files, a strict TypeScript consumer compiles, Node imports ${count} names`);
}

// What a game written in TypeScript does with the package; it must compile under strict.
const CONSUMER_TS = `
import { Peer, SchemaTable, SignalingError, World, Ev, explain, type App, type PeerOptions, type WorldEvent, type PeerStatusInfo } from 'PKG';
import { encode, Type } from 'PKG/netmsg';

const table: SchemaTable = new SchemaTable([{ id: 1, name: 'dot', properties: [{ name: 'pos', component: 1024, size: 8 }] }]);
const app: App = {
  schemas: () => table,
  hostStart: (w: World) => { w.spawn(1, new Uint8Array(0), new Uint8Array(8)); },
  spawnAvatar: (w, member) => w.spawn(1, new Uint8Array([member.index]), null),
  tick: (_w: World, dtMs: number) => { void dtMs; },
  rpc: (_w, from: number, type: number, data: Uint8Array) => { void [from, type, data]; },
  onEvent: (_w, ev: WorldEvent) => { if (ev.kind === Ev.Spawned && ev.entity !== undefined) void ev.entity; },
};
const opts: PeerOptions = { room: 'r', app, tokenProvider: async ({ room, resume }) => (resume ? 'again-' : '') + room };
const peer = new Peer(opts);
async function main(): Promise<void> {
  try {
    const joined = await peer.run();
    void joined.type;
  } catch (err) {
    if (err instanceof SignalingError) console.log(err.code, err.reason, err.permanent, explain(err.code));
  }
  const st: PeerStatusInfo = peer.status();
  const n: number = peer.world.entities().length + st.entities;
  const v: Uint8Array | undefined = peer.do((w: World) => w.get(1, 0));
  const ended: Error | null = await peer.done;
  void [n, v, ended, encode({ type: Type.Ping, nonce: 1, sendTime: 1n })];
}
void main;
`;

const [cmd, arg] = process.argv.slice(2);
try {
  if (cmd === 'pack') {
    const outDir = arg ? path.resolve(arg) : mkdtempSync(path.join(tmpdir(), 'concord-tgz-'));
    const tarball = pack(outDir);
    if (arg) console.log(tarball);
    else rmSync(outDir, { recursive: true, force: true });
  } else {
    console.error('usage: node pkg.mjs pack [DIR]');
    process.exit(2);
  }
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
