// Websocket client of Concord's signaling protocol (docs/protocol.md §4).
//
// A SignalingClient joins one room and turns the server's messages into calls of onEvent. It
// keeps no game state. Every method runs on the page's single thread.

const VERSION = 1;

/** The URL of the signaling endpoint served next to the page. */
export function defaultURL(loc = window.location) {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${loc.host}/ws`;
}

/** A random per-tab device id, so two tabs of one user are two members. */
export function randomDevice() {
  const b = new Uint8Array(4);
  crypto.getRandomValues(b);
  return 'tab-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export class SignalingError extends Error {
  constructor(code, message) {
    super(`signaling: ${code}: ${message}`);
    this.code = code;
  }

  /**
   * True when a resume failed for good: the server refused the claim or the join itself, so
   * redialing would fail the same way (docs/protocol.md §5 "Session: signaling outage and
   * resume"). Network errors, timeouts, a full room and a closing server are worth a retry.
   */
  get permanent() {
    return PERMANENT_CODES.has(this.code);
  }
}

/** Error codes after which a redial cannot succeed. 'resume_ignored' is the client's own. */
export const PERMANENT_CODES = new Set([
  'index_taken', 'resume_token_invalid', 'resume_term_invalid', 'resume_room_mismatch', 'resume_ignored',
  'token_required', 'token_invalid', 'token_expired', 'token_mismatch', 'wrong_room',
  'unsupported_version', 'bad_message',
]);

/** Redial waits (ms): the first is min, each next doubles up to max. */
export const REDIAL = Object.freeze({ min: 100, max: 1000 });

/**
 * The wait before a redial: between half of delay and all of it (jitter, so that peers that lost
 * the server together do not come back in lockstep). random() is in [0, 1).
 */
export function redialWait(delay, random = Math.random) {
  return Math.floor(delay / 2 + random() * (delay / 2 + 1));
}

/** The delay after a failed redial: doubled, at most max. */
export function nextRedialDelay(delay, max = REDIAL.max) {
  return Math.min(2 * delay, max);
}

/**
 * SignalingClient is one member's websocket to the signaling server.
 *
 * onEvent receives every server message after `joined` as the parsed JSON object
 * ({type: 'member-joined' | 'member-left' | 'member-synced' | 'host' | 'signal' | 'error', ...})
 * and finally {type: 'closed', code, reason} when the socket closes.
 */
export class SignalingClient {
  /**
   * resume, if set, is the claim {peerIndex, term, host, synced, room, token} of a member that
   * lost its connection: connect() then rejects unless the server gives peerIndex back.
   * WebSocketImpl replaces the browser's WebSocket (tests).
   */
  constructor({ url = defaultURL(), room, user, device = randomDevice(), kind = 'browser', token = '', resume = null, onEvent = () => {}, WebSocketImpl = globalThis.WebSocket }) {
    this.url = url;
    this.join = { room, user, device, kind, token, resume };
    this.WebSocket = WebSocketImpl;
    this.onEvent = onEvent;
    this.ws = null;
    this.joined = null; // the `joined` message
    this.closed = false;
    this.sentBytes = 0;
    this.recvBytes = 0;
  }

  /** Opens the socket and joins; resolves with the `joined` message or rejects with a SignalingError. */
  connect(timeoutMs = 5000) {
    return new Promise((resolve, reject) => {
      const ws = new this.WebSocket(this.url);
      this.ws = ws;
      let settled = false;
      const timer = setTimeout(() => fail(new SignalingError('timeout', 'no joined message in time')), timeoutMs);
      const fail = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        try { ws.close(); } catch { /* already closed */ }
        reject(err);
      };
      ws.onopen = () => {
        const j = { v: VERSION, type: 'join', room: this.join.room, user: this.join.user, kind: this.join.kind };
        if (this.join.device) j.device = this.join.device;
        if (this.join.token) j.token = this.join.token;
        if (this.join.resume) j.resume = this.join.resume;
        this.sendJSON(j);
      };
      ws.onmessage = (ev) => {
        if (typeof ev.data !== 'string') return;
        this.recvBytes += ev.data.length;
        let msg;
        try {
          msg = JSON.parse(ev.data);
        } catch {
          return; // not JSON: nothing a client can do about it
        }
        if (!settled) {
          if (msg.type === 'joined') {
            const r = this.join.resume;
            if (r && msg.self !== r.peerIndex) {
              // A server that predates resume ignored the claim and issued a new index.
              fail(new SignalingError('resume_ignored', `claimed peer ${r.peerIndex}, joined as ${msg.self}`));
              return;
            }
            settled = true;
            clearTimeout(timer);
            this.joined = msg;
            resolve(msg);
          } else if (msg.type === 'error') {
            fail(new SignalingError(msg.code, msg.message));
          }
          return;
        }
        this.onEvent(msg);
      };
      ws.onerror = () => fail(new SignalingError('network', `cannot reach ${this.url}`));
      ws.onclose = (ev) => {
        this.closed = true;
        if (!settled) {
          fail(new SignalingError('closed', ev.reason || `socket closed (${ev.code})`));
          return;
        }
        this.onEvent({ type: 'closed', code: ev.code, reason: ev.reason });
      };
    });
  }

  sendJSON(obj) {
    if (!this.ws || this.ws.readyState !== this.WebSocket.OPEN) return false;
    const s = JSON.stringify(obj);
    this.sentBytes += s.length;
    this.ws.send(s);
    return true;
  }

  /**
   * Relays a WebRTC signal to member `to`. payload is a SignalPayload:
   * {kind: 'offer'|'answer', sdp, session} or {kind: 'candidate', candidate: {candidate, sdpMid,
   * sdpMLineIndex, usernameFragment}, session}.
   */
  signal(to, payload) {
    const p = { kind: payload.kind };
    if (payload.sdp) p.sdp = payload.sdp;
    if (payload.candidate) {
      const c = { candidate: payload.candidate.candidate || '' };
      if (payload.candidate.sdpMid != null) c.sdpMid = payload.candidate.sdpMid;
      if (payload.candidate.sdpMLineIndex != null) c.sdpMLineIndex = payload.candidate.sdpMLineIndex;
      if (payload.candidate.usernameFragment != null) c.usernameFragment = payload.candidate.usernameFragment;
      p.candidate = c;
    }
    if (payload.session) p.session = payload.session;
    return this.sendJSON({ v: VERSION, type: 'signal', to, payload: p });
  }

  /** Tells the server that this member has applied the host's snapshot. */
  synced() {
    return this.sendJSON({ v: VERSION, type: 'synced' });
  }

  /** Reports the replica summary: {term, clock, entities, hash (16 hex digits)}. */
  report(replica) {
    return this.sendJSON({ v: VERSION, type: 'report', replica });
  }

  /** Leaves gracefully (close frame). */
  close() {
    if (this.ws && this.ws.readyState <= this.WebSocket.OPEN) this.ws.close(1000, 'left');
  }
}
