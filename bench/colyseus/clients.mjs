// N passive Colyseus clients in one process. Usage: node clients.mjs PORT N WARMUP_MS DURATION_MS
// With TLS=1 in the environment they connect over TLS (wss; NODE_EXTRA_CA_CERTS trusts the cert).
// Prints "window start", "window end", then one JSON line of what the window received.
import { Client } from '@colyseus/sdk';

const [port, n, warmup, duration] = process.argv.slice(2).map(Number);
const rooms = [];
for (let i = 0; i < n; i++) {
  const c = new Client(`${process.env.TLS === '1' ? 'wss' : 'ws'}://127.0.0.1:${port}`);
  rooms.push(await c.joinOrCreate('bench'));
}
let recording = false;
const lat = []; // ms, one sample per entity update received
let updates = 0;
for (const room of rooms) {
  const last = new Map();
  room.onStateChange((state) => {
    if (!recording) return;
    const now = Date.now();
    for (const [k, e] of state.entities) {
      if (last.get(k) !== e.sent) {
        last.set(k, e.sent);
        updates++;
        lat.push(now - e.sent);
      }
    }
  });
}
await new Promise((r) => setTimeout(r, warmup));
recording = true;
console.log('window start');
await new Promise((r) => setTimeout(r, duration));
recording = false;
console.log('window end');
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : NaN);
console.log(JSON.stringify({ updates, p50: q(0.5), p99: q(0.99) }));
for (const r of rooms) await r.leave();
process.exit(0);
