// A fake signaling server for the node tests: fake WebSockets that answer joins as the server
// would (a joined or an error message, the error followed by a 1008 close frame whose reason is
// its code), break like a crashed server, or fail to open while the server is down. No network.
import assert from 'node:assert/strict';

/**
 * FakeServer answers joins through fake sockets. onJoin(msg) returns the server's answer (a
 * joined or an error message); while down, sockets fail to open.
 */
export class FakeServer {
  constructor() {
    this.down = false;
    this.joins = [];
    this.sockets = [];
    this.onJoin = () => null;
    const server = this;
    this.WebSocket = class FakeWebSocket {
      static OPEN = 1;
      constructor(url) {
        this.url = url;
        this.readyState = 0;
        server.sockets.push(this);
        setTimeout(() => {
          if (server.down) {
            this.readyState = 3;
            if (this.onerror) this.onerror({});
            if (this.onclose) this.onclose({ code: 1006, reason: '' });
            return;
          }
          this.readyState = 1;
          this.onopen();
        }, 1);
      }

      send(s) {
        const m = JSON.parse(s);
        if (m.type !== 'join') return;
        server.joins.push(m);
        const reply = server.onJoin(m);
        setTimeout(() => {
          if (this.readyState !== 1 || !reply) return;
          this.onmessage({ data: JSON.stringify(reply) });
          if (reply.type === 'error') this.close(1008, reply.code);
        }, 1);
      }

      close(code = 1000, reason = '') {
        if (this.readyState === 3) return;
        this.readyState = 3;
        setTimeout(() => { if (this.onclose) this.onclose({ code, reason }); }, 1);
      }

      /** The server process dies: the socket breaks without a close frame. */
      crash() {
        if (this.readyState === 3) return;
        this.readyState = 3;
        this.onclose({ code: 1006, reason: '' });
      }
    };
  }

  live() { return this.sockets.filter((s) => s.readyState === 1); }
}

export function joined(self, term, host, token = '') {
  const m = { v: 1, type: 'joined', room: 'r', self, peerId: `u/d`, term, host, members: [{ peerIndex: self, peerId: 'u/d', kind: 'browser', power: 0, mayHost: true, synced: true }], pinnedHosts: [] };
  if (token) m.resumeToken = token;
  return m;
}

/** Polls cond every 5 ms until it holds or ms pass. */
export async function until(what, cond, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (cond()) return;
    if (Date.now() > deadline) assert.fail(`${what}: not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
