// Fan-out comparison, loopback only: Colyseus (one server process, N clients in another) against
// `concord bench fanout` (a bench-host process, N bots in another), same workload: M entities of
// a position (x, y) and an 8-byte send time, all written every 50 ms. Colyseus holds the position as
// two float32 (8 bytes); Concord as a game would encode it, quantized to 1/256 over [-1024, 1024]
// (3 bytes a coordinate, 6 in all; internal/harness/bench/app.go).
// Usage: node run.mjs N M [DURATION_S] [-schema quantized|plain]   (CONCORD_BIN: the concord binary,
// default "concord"). -schema plain gives Concord the position a user would first write: two
// float32 (8 bytes), as Colyseus holds it. The last line of output is "json " and the figures as JSON
// (what `concord bench all` reads).
// Colyseus serves its websockets over TLS (a self-signed P-256 certificate for 127.0.0.1 made with
// openssl in a temporary directory, trusted by the clients), as a deployment would and as
// Concord's DTLS is; COLYSEUS_TLS=0 runs it without TLS.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const argv = process.argv.slice(2);
let schema = 'quantized';
const si = argv.findIndex((a) => a === '-schema' || a === '--schema');
if (si >= 0) {
  schema = argv[si + 1];
  argv.splice(si, 2);
}
if (schema !== 'quantized' && schema !== 'plain') {
  console.error(`-schema ${schema}: want quantized or plain`);
  process.exit(2);
}
const [n, m] = [Number(argv[0] ?? 8), Number(argv[1] ?? 100)];
const duration = Number(argv[2] ?? 10) * 1000;
const warmup = 2000;
const port = 20000 + Math.floor(Math.random() * 20000);
const dir = new URL('.', import.meta.url).pathname;

/** CPU seconds (user + system) and bytes written (wchar: sockets included) of process pid. */
function procStats(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpu = (Number(f[11]) + Number(f[12])) / 100; // utime, stime in USER_HZ (100)
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const wchar = Number(/wchar: (\d+)/.exec(io)[1]);
  return { cpu, wchar, at: performance.now() };
}

async function lines(child, onLine) {
  for await (const line of createInterface({ input: child.stdout })) onLine(line);
}

// Colyseus.
const tls = process.env.COLYSEUS_TLS !== '0';
const env = { ...process.env };
let certDir;
if (tls) {
  certDir = mkdtempSync(join(tmpdir(), 'colyseus-tls-'));
  const [cert, key] = [join(certDir, 'cert.pem'), join(certDir, 'key.pem')];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
  { stdio: 'ignore' });
  Object.assign(env, { TLS_CERT: cert, TLS_KEY: key, TLS: '1', NODE_EXTRA_CA_CERTS: cert });
}
const server = spawn('node', [dir + 'server.mjs', String(port), String(m)], { stdio: ['ignore', 'pipe', 'inherit'], env });
let resolveListening;
const listening = new Promise((r) => { resolveListening = r; });
lines(server, (l) => { if (l === 'listening') resolveListening(); });
await listening;
const clients = spawn('node', [dir + 'clients.mjs', String(port), String(n), String(warmup), String(duration)], { stdio: ['ignore', 'pipe', 'inherit'], env });
let s0, s1, result;
await lines(clients, (l) => {
  if (l === 'window start') s0 = procStats(server.pid);
  else if (l === 'window end') s1 = procStats(server.pid);
  else if (l.startsWith('{')) result = JSON.parse(l);
});
server.kill('SIGTERM');
await once(server, 'exit');
if (certDir) rmSync(certDir, { recursive: true, force: true });
const secs = (s1.at - s0.at) / 1000;
const coly = {
  cpu: (100 * (s1.cpu - s0.cpu)) / secs,
  bytes: (s1.wchar - s0.wchar) / secs,
  delivered: result.updates / (n * m * 20 * secs),
  p50: result.p50,
  p99: result.p99,
};

// Concord.
const bin = process.env.CONCORD_BIN ?? 'concord';
// -no-raw: the raw pion phase is not part of this comparison.
const out = execFileSync(bin, ['bench', 'fanout', '-no-raw', '-schema', schema, '-n', String(n), '-m', String(m), '-duration', `${duration / 1000}s`, '-warmup', '2s'],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
const row = out.split('\n').find((l) => l.trim().startsWith('concord ') && !l.includes('bench'));
const cols = row.trim().split(/\s+/);
const hostCPU = Number(/concord host process: CPU ([\d.]+)%/.exec(out)[1]);
const ms = (s) => (s.endsWith('µs') ? parseFloat(s) / 1000 : s.endsWith('ms') ? parseFloat(s) : parseFloat(s) * 1000);
const conc = { cpu: hostCPU, bytes: Number(cols[3]), delivered: parseFloat(cols[10]) / 100, p50: ms(cols[11]), p99: ms(cols[12]) };

const f = (x, d = 1) => x.toFixed(d);
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`fan-out ${n} clients × ${m} entities, ${duration / 1000}s window, loopback, Concord schema ${schema}, Colyseus ${tls ? 'over TLS (wss)' : 'without TLS (ws)'}, load average ${load}`);
console.log('side      server CPU %1core  per client  out B/s  per client  delivered  p50 ms  p99 ms');
for (const [name, r] of [['colyseus', coly], ['concord', conc]]) {
  console.log(`${name.padEnd(9)} ${f(r.cpu).padStart(17)} ${f(r.cpu / n, 2).padStart(11)} ${f(r.bytes, 0).padStart(8)} ${f(r.bytes / n, 0).padStart(11)} ${f(100 * r.delivered).padStart(9)}% ${f(r.p50).padStart(7)} ${f(r.p99).padStart(7)}`);
}
console.log(`ratios concord/colyseus: CPU ${f(conc.cpu / coly.cpu, 2)}, bytes ${f(conc.bytes / coly.bytes, 2)}, p50 ${f(conc.p50 / coly.p50, 2)}, p99 ${f(conc.p99 / coly.p99, 2)}`);
console.log(`${out.split('\n').filter((l) => l.startsWith('note:')).join('\n')}`);
console.log(`json ${JSON.stringify({ n, m, seconds: duration / 1000, schema, tls, load, colyseus: coly, concord: conc })}`);
