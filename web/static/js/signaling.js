// @ts-check
// Websocket client of Concord's signaling protocol (docs/protocol.md §4).
//
// A SignalingClient joins one room and turns the server's messages into calls of onEvent. It
// keeps no game state. Every method runs on the page's single thread.

const VERSION = 1;

/**
 * The URL of the signaling endpoint served next to the page.
 * @param {{protocol: string, host: string}} [loc]
 * @returns {string}
 */
export function defaultURL(loc = window.location) {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${loc.host}/ws`;
}

/** The most node URLs a failover list may hold (Go: signaling.MaxServers). */
export const MAX_SERVERS = 64;

/**
 * The signaling endpoints of a list of node URLs: a comma-separated string or an array of base
 * URLs (http://a:7880, https://b) or websocket URLs (ws://a:7880/ws), in the order a client tries
 * them (docs/guide.md "Cluster"). http becomes ws, https wss, and /ws is appended unless the path
 * already ends with it, as the Go client does. An empty entry, another scheme, a URL without a
 * host or more than MAX_SERVERS entries throws a TypeError naming it.
 * @param {string | string[]} list
 * @returns {string[]}
 */
export function parseServers(list) {
  const parts = Array.isArray(list) ? list : String(list).split(',');
  if (parts.length === 0) throw new TypeError('signaling: empty server list');
  if (parts.length > MAX_SERVERS) throw new TypeError(`signaling: ${parts.length} server URLs, the limit is ${MAX_SERVERS}`);
  return parts.map((raw, i) => {
    const s = String(raw).trim();
    if (s === '') throw new TypeError(`signaling: server list entry ${i + 1} is empty`);
    let u;
    try {
      u = new URL(s);
    } catch {
      throw new TypeError(`signaling: server URL ${JSON.stringify(s)} is not a URL`);
    }
    const scheme = { 'http:': 'ws:', 'ws:': 'ws:', 'https:': 'wss:', 'wss:': 'wss:' }[u.protocol];
    if (!scheme) throw new TypeError(`signaling: server URL ${JSON.stringify(s)}: scheme must be http, https, ws or wss`);
    if (!u.host) throw new TypeError(`signaling: server URL ${JSON.stringify(s)} has no host`);
    u.protocol = scheme;
    if (!u.pathname.endsWith('/ws')) u.pathname = u.pathname.replace(/\/$/, '') + '/ws';
    return u.toString();
  });
}

/**
 * The index in a list of n servers of the node a redial's attempt-th try goes to (1-based),
 * after losing the node at index last: the next one each time, round robin, so that a dead node
 * is left at once and every node is tried in turn.
 * @param {number} last
 * @param {number} attempt
 * @param {number} n
 * @returns {number}
 */
export function nextServer(last, attempt, n) {
  return (last + attempt) % n;
}

const NAME_ADJ = ['brisk', 'calm', 'eager', 'jolly', 'lucky', 'merry', 'nimble', 'quiet', 'sunny', 'witty'];
const NAME_NOUN = ['otter', 'heron', 'lynx', 'panda', 'fox', 'robin', 'koala', 'ibis', 'marten', 'wren'];

/**
 * A random player name ("calm-otter") for a demo page opened without one.
 * @returns {string}
 */
export function randomName() {
  const r = new Uint8Array(2);
  crypto.getRandomValues(r);
  return `${NAME_ADJ[r[0] % NAME_ADJ.length]}-${NAME_NOUN[r[1] % NAME_NOUN.length]}`;
}

/**
 * A random per-tab device id, so two tabs of one user are two members.
 * @returns {string}
 */
export function randomDevice() {
  const b = new Uint8Array(4);
  crypto.getRandomValues(b);
  return 'tab-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * A refused or failed join. code is the server's error code (docs/protocol.md §4: token_required,
 * token_expired, wrong_room, …) or the client's own (network, timeout, closed, resume_ignored,
 * token_provider); reason says it in words (see explain).
 */
export class SignalingError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{cause?: unknown}} [options]
   */
  constructor(code, message, options) {
    super(`signaling: ${code}: ${message}`, options);
    this.name = 'SignalingError';
    /** @type {string} */
    this.code = code;
  }

  /** What the code means, in words (explain(code)). */
  get reason() {
    return explain(this.code);
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

/**
 * Error codes after which a redial cannot succeed. 'resume_ignored' is the client's own.
 * @type {ReadonlySet<string>}
 */
export const PERMANENT_CODES = new Set([
  'index_taken', 'resume_token_invalid', 'resume_term_invalid', 'resume_room_mismatch', 'resume_ignored',
  'token_required', 'token_invalid', 'token_expired', 'token_mismatch', 'wrong_room',
  'unsupported_version', 'bad_message', 'kicked', 'banned',
]);

/**
 * Codes with which a moderator removes a member (docs/protocol.md §4 "Signaling: moderation"): the session
 * ends, nothing redials (a client that rejoined by itself would undo the kick).
 * @type {ReadonlySet<string>}
 */
export const REMOVED_CODES = new Set(['kicked', 'banned']);

/** @type {Readonly<Record<string, string>>} */
const EXPLANATIONS = Object.freeze({
  token_required: 'a token is required to join this room',
  token_invalid: 'the token is not valid (malformed, signed with another secret, or not valid yet)',
  token_expired: 'the token has expired',
  wrong_room: 'the token is for another room',
  token_mismatch: 'the join names another user, device or kind than its token',
  room_full: 'the room is full',
  unsupported_version: 'the server speaks another signaling protocol version',
  bad_message: 'the server did not understand the join',
  rate_limited: 'too many messages: the server cut the connection',
  replaced: 'this identity joined again elsewhere',
  server_closing: 'the server is shutting down',
  index_taken: 'the peer index claimed by the resume is taken',
  resume_token_invalid: 'the resume claim is not valid',
  resume_room_mismatch: 'the resume claim is for another room',
  resume_term_invalid: 'the resume claim names a term the server cannot vouch for',
  too_many_errors: 'too many refused messages: the server cut the connection',
  server_busy: 'the server has no room for another connection or room',
  too_many_devices: 'this token already has its most devices in the room',
  evicted: 'evicted: not synced in time, and the room was full',
  kicked: 'a moderator removed you from the room',
  banned: 'a moderator banned you from the room',
  forbidden: 'this credential does not allow that',
  resume_ignored: 'the server did not resume this peer',
  network: 'cannot reach the signaling server',
  timeout: 'the signaling server did not answer in time',
  closed: 'the signaling server closed the connection',
  token_provider: 'the token provider failed',
});

/**
 * Says what a signaling error code means, in words (for pages and logs); an unknown code is
 * returned as it is.
 * @param {string} code
 * @returns {string}
 */
export function explain(code) {
  return EXPLANATIONS[code] || code;
}

/**
 * GET /api/rooms: the rooms this caller may see (signaling.RoomInfo). On a server with a secret it
 * needs a credential, sent as "Authorization: Bearer …": a join token (its room only) or the admin
 * key (every room). A refusal throws SignalingError('token_required') with the server's reason; a
 * network error or another status throws SignalingError('unavailable').
 * @param {{base?: string, credential?: string, fetch?: typeof fetch}} [opts] base: the server's
 *   http(s) origin (default: this page's); credential: a token or the admin key.
 * @returns {Promise<any[]>}
 */
export async function fetchRooms(opts = {}) {
  const f = opts.fetch || fetch;
  /** @type {Record<string, string>} */
  const headers = {};
  if (opts.credential) headers.Authorization = `Bearer ${opts.credential}`;
  let res;
  try {
    res = await f(`${opts.base || ''}/api/rooms`, { cache: 'no-store', headers });
  } catch (err) {
    throw new SignalingError('unavailable', `GET /api/rooms: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (res.status === 401) {
    const body = (await res.text()).trim();
    throw new SignalingError('token_required', body || 'GET /api/rooms needs a token or the admin key');
  }
  if (!res.ok) throw new SignalingError('unavailable', `GET /api/rooms: HTTP ${res.status}`);
  const rooms = await res.json();
  if (!Array.isArray(rooms)) throw new SignalingError('unavailable', 'GET /api/rooms: not a list');
  return rooms;
}

/**
 * The moderation API (docs/protocol.md §4 "Signaling: moderation"): op 'kick' (POST …/kick), 'ban' (POST
 * …/ban), 'unban' (DELETE …/ban) or 'bans' (GET …/bans) on room, with body {user | peerId,
 * for?, reason?}. credential is the admin key or a join token of the room with the mod claim. A
 * refusal throws SignalingError with the server's code (token_required, forbidden, unknown_peer,
 * bad_message, server_busy); a network error SignalingError('unavailable').
 * @param {'kick' | 'ban' | 'unban' | 'bans'} op
 * @param {string} room
 * @param {{user?: string, peerId?: string, for?: string, reason?: string}} body
 * @param {{base?: string, credential?: string, fetch?: typeof fetch}} [opts]
 * @returns {Promise<{kicked: string[], bans?: {room: string, target: string, until?: string, reason?: string}[], lifted?: boolean}>}
 */
export async function moderate(op, room, body, opts = {}) {
  const f = opts.fetch || fetch;
  const method = { kick: 'POST', ban: 'POST', unban: 'DELETE', bans: 'GET' }[op];
  const path = { kick: 'kick', ban: 'ban', unban: 'ban', bans: 'bans' }[op];
  const url = `${opts.base || ''}/api/rooms/${encodeURIComponent(room)}/${path}`;
  /** @type {Record<string, string>} */
  const headers = { 'Content-Type': 'application/json' };
  if (opts.credential) headers.Authorization = `Bearer ${opts.credential}`;
  let res;
  try {
    res = await f(url, { method, cache: 'no-store', headers, body: method === 'GET' ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new SignalingError('unavailable', `${method} ${url}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (!res.ok) {
    const text = (await res.text()).trim();
    const code = /^([a-z_]+):/.exec(text);
    throw new SignalingError(code ? code[1] : 'unavailable', text || `${method} ${url}: HTTP ${res.status}`);
  }
  return res.json();
}

/** Redial waits (ms): the first is min, each next doubles up to max. */
export const REDIAL = Object.freeze({ min: 100, max: 1000 });

/**
 * The wait before a redial: between half of delay and all of it (jitter, so that peers that lost
 * the server together do not come back in lockstep). random() is in [0, 1).
 * @param {number} delay
 * @param {() => number} [random]
 * @returns {number}
 */
export function redialWait(delay, random = Math.random) {
  return Math.floor(delay / 2 + random() * (delay / 2 + 1));
}

/**
 * The delay after a failed redial: doubled, at most max.
 * @param {number} delay
 * @param {number} [max]
 * @returns {number}
 */
export function nextRedialDelay(delay, max = REDIAL.max) {
  return Math.min(2 * delay, max);
}

/**
 * A member's claim to the peer index it held before it lost signaling (docs/protocol.md §5).
 * token is the resumeToken of its last `joined` message.
 * @typedef {object} ResumeClaim
 * @property {number} peerIndex
 * @property {number} term
 * @property {number} host
 * @property {boolean} synced
 * @property {string} [room]
 * @property {string} [token]
 */

/**
 * A member of the room as the server describes it in `joined` (members) and `member-joined` (member),
 * docs/protocol.md §4. syncedTerm is the last term in which the server recorded the member synced
 * (absent: never, or a server that predates it): a host opens the survivors' correction window only
 * on it (restamp.js survivorWindow). `member-synced` carries the new record as its term.
 * @typedef {object} Member
 * @property {number} peerIndex
 * @property {string} peerId
 * @property {string} kind
 * @property {number} power
 * @property {boolean} mayHost
 * @property {boolean} synced
 * @property {number} [syncedTerm]
 */

/**
 * A WebRTC signal relayed through signaling: an SDP offer or answer, or an ICE candidate.
 * @typedef {object} SignalPayload
 * @property {'offer' | 'answer' | 'candidate'} kind
 * @property {string} [sdp]
 * @property {{candidate: string, sdpMid?: string | null, sdpMLineIndex?: number | null, usernameFragment?: string | null}} [candidate]
 * @property {number} [session]
 */

/**
 * A server message after `joined` ({type: 'member-joined' | 'member-left' | 'member-synced' |
 * 'host' | 'signal' | 'error', …}, docs/protocol.md §4), or the client's own {type: 'closed',
 * code, reason} when the socket of a joined client closes.
 * @typedef {{type: string, [field: string]: any}} SignalingEvent
 */

/**
 * What a SignalingClient joins with. url defaults to defaultURL(), device to randomDevice() (an
 * empty device lets the server choose one), kind to 'browser'. token is the join token a server
 * with a secret requires. WebSocketImpl replaces the global WebSocket (tests, Node).
 * @typedef {object} SignalingOptions
 * @property {string} [url]
 * @property {string} room
 * @property {string} [user]
 * @property {string} [device]
 * @property {'browser' | 'bot' | 'host'} [kind]
 * @property {string} [token]
 * @property {ResumeClaim | null} [resume]
 * @property {(ev: SignalingEvent) => void} [onEvent]
 * @property {typeof WebSocket} [WebSocketImpl]
 */

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
   * @param {SignalingOptions} opts
   */
  constructor({ url = defaultURL(), room, user, device = randomDevice(), kind = 'browser', token = '', resume = null, onEvent = () => {}, WebSocketImpl = globalThis.WebSocket }) {
    this.url = url;
    this.join = { room, user, device, kind, token, resume };
    this.WebSocket = WebSocketImpl;
    this.onEvent = onEvent;
    /** @type {WebSocket | null} */
    this.ws = null;
    /** @type {SignalingEvent | null} the `joined` message */
    this.joined = null;
    this.closed = false;
    this.sentBytes = 0;
    this.recvBytes = 0;
  }

  /**
   * Opens the socket and joins; resolves with the `joined` message or rejects with a SignalingError.
   * @param {number} [timeoutMs]
   * @returns {Promise<SignalingEvent>}
   */
  connect(timeoutMs = 5000) {
    return new Promise((resolve, reject) => {
      const ws = new this.WebSocket(this.url);
      this.ws = ws;
      let settled = false;
      const timer = setTimeout(() => fail(new SignalingError('timeout', 'no joined message in time')), timeoutMs);
      /** @param {SignalingError} err */
      const fail = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        try { ws.close(); } catch { /* already closed */ }
        reject(err);
      };
      ws.onopen = () => {
        // batch: this client reads several messages from one websocket message, '\n' apart.
        /** @type {Record<string, unknown>} */
        const j = { v: VERSION, type: 'join', room: this.join.room, user: this.join.user, kind: this.join.kind, batch: true };
        if (this.join.device) j.device = this.join.device;
        if (this.join.token) j.token = this.join.token;
        if (this.join.resume) j.resume = this.join.resume;
        this.sendJSON(j);
      };
      /** @param {string} line */
      const onMessage = (line) => {
        let msg;
        try {
          msg = JSON.parse(line);
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
        if (msg.type === 'ice-servers' && Array.isArray(msg.iceServers) && this.joined) {
          // Fresh TURN credentials (docs/protocol.md §4 "ice-servers"): links made from now on
          // use them (links.js reads joined.iceServers), and the peer hands them to live ones.
          this.joined.iceServers = msg.iceServers;
        }
        this.onEvent(msg);
      };
      ws.onmessage = (ev) => {
        if (typeof ev.data !== 'string') return;
        this.recvBytes += ev.data.length;
        // A batch holds several messages, '\n' apart (JSON text never holds a raw newline).
        for (const line of ev.data.split('\n')) onMessage(line);
      };
      ws.onerror = () => fail(new SignalingError('network', `cannot reach ${this.url}`));
      ws.onclose = (ev) => {
        this.closed = true;
        if (!settled) {
          // A refusal's close frame carries its code as the reason (1008): keep it typed.
          const code = ev.code === 1008 && ev.reason ? ev.reason : 'closed';
          fail(new SignalingError(code, ev.reason || `socket closed (${ev.code})`));
          return;
        }
        // Only a joined client reports its close: a refused join already rejected connect(), and
        // a "closed" event would make its peer redial a session it never had.
        if (this.joined) this.onEvent({ type: 'closed', code: ev.code, reason: ev.reason });
      };
    });
  }

  /**
   * Sends obj as one JSON message; false when the socket is not open.
   * @param {object} obj
   * @returns {boolean}
   */
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
   * @param {number} to
   * @param {SignalPayload} payload
   * @returns {boolean}
   */
  signal(to, payload) {
    /** @type {SignalPayload} */
    const p = { kind: payload.kind };
    if (payload.sdp) p.sdp = payload.sdp;
    if (payload.candidate) {
      /** @type {NonNullable<SignalPayload['candidate']>} */
      const c = { candidate: payload.candidate.candidate || '' };
      if (payload.candidate.sdpMid != null) c.sdpMid = payload.candidate.sdpMid;
      if (payload.candidate.sdpMLineIndex != null) c.sdpMLineIndex = payload.candidate.sdpMLineIndex;
      if (payload.candidate.usernameFragment != null) c.usernameFragment = payload.candidate.usernameFragment;
      p.candidate = c;
    }
    if (payload.session) p.session = payload.session;
    return this.sendJSON({ v: VERSION, type: 'signal', to, payload: p });
  }

  /**
   * Tells the server that this member has applied the host's snapshot.
   * @returns {boolean}
   */
  synced() {
    return this.sendJSON({ v: VERSION, type: 'synced' });
  }

  /**
   * Reports the replica summary: {term, clock, entities, hash (16 hex digits)}.
   * @param {{term: number, clock: number, entities: number, hash: string}} replica
   * @returns {boolean}
   */
  report(replica) {
    return this.sendJSON({ v: VERSION, type: 'report', replica });
  }

  /** Leaves gracefully (close frame). */
  close() {
    if (this.ws && this.ws.readyState <= this.WebSocket.OPEN) this.ws.close(1000, 'left');
  }
}
