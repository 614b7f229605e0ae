// Colyseus side of the fan-out comparison: one room, M entities of {x, y: float32, sent: float64},
// every entity written every 50 ms tick, patches sent every 50 ms. Usage: node server.mjs PORT M
// With TLS_CERT and TLS_KEY (PEM files) in the environment, clients connect over TLS (wss).
import { Server, Room } from '@colyseus/core';
import { WebSocketTransport } from '@colyseus/ws-transport';
import { Schema, MapSchema, defineTypes, Encoder } from '@colyseus/schema';
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';

// The full state a joining client gets is ~20 bytes per entity; the default buffer is 8 KiB.
Encoder.BUFFER_SIZE = 1 << 20;

class Entity extends Schema {}
defineTypes(Entity, { x: 'float32', y: 'float32', sent: 'float64' });
class State extends Schema {
  constructor() {
    super();
    this.entities = new MapSchema();
  }
}
defineTypes(State, { entities: { map: Entity } });

const [port, m] = process.argv.slice(2).map(Number);

class Bench extends Room {
  maxClients = 1000;
  patchRate = 50;
  onCreate() {
    this.setState(new State());
    for (let i = 0; i < m; i++) {
      const e = new Entity();
      e.x = i; e.y = 0; e.sent = Date.now();
      this.state.entities.set(String(i), e);
    }
    let tick = 0;
    this.setSimulationInterval(() => {
      tick++;
      const now = Date.now();
      for (const [k, e] of this.state.entities) {
        e.x = (Number(k) + tick) % 1000; e.y = tick % 1000; e.sent = now;
      }
    }, 50);
  }
}

const tls = process.env.TLS_CERT
  ? createServer({ cert: readFileSync(process.env.TLS_CERT), key: readFileSync(process.env.TLS_KEY) })
  : undefined;
const server = new Server({ transport: new WebSocketTransport(tls ? { server: tls } : {}), greet: false });
server.define('bench', Bench);
await server.listen(port, '127.0.0.1');
console.log('listening');
