// @ts-check
// Keeping a voice session across a forwarder failing (docs/protocol.md §10 "A forwarder
// failing"). In a cluster a room's forwarder is its owner node's; when that node dies the room
// moves, the member's signaling resumes on another node, and the voice session must be opened
// anew there: a new POST, to the node list the page was given, with backoff, bounded.
//
// VoiceKeeper wraps a voice.js VoiceClient (duck-typed below, so this module stands alone): it
// joins, and when the session ends for any reason but the page leaving — the forwarder's `bye`,
// the voice channel closing, the connection failed, or disconnected beyond a short grace — it
// joins again, through the node that served it, then the next, waiting 250 ms doubling to 5 s
// between failed tries, at most 20 in a row. A refusal a retry cannot cure (400, 401, 403) stops
// it, and so does the forwarder replacing the session (another tab of this member took voice
// over: rejoining would take it back). Timers are injectable so that Node tests drive it
// without waiting.

/** The bye reason of a session another of the member's sessions replaced (Go: voice.ByeReplaced). */
export const BYE_REPLACED = 'replaced';

/** Disconnected this long (ms) is taken for failed (the Go client's voice.DefaultKeepGrace). */
export const KEEP_GRACE_MS = 2000;
export const KEEP_BACKOFF_MIN_MS = 250;
export const KEEP_BACKOFF_MAX_MS = 5000;
export const KEEP_MAX_ATTEMPTS = 20;

/**
 * What VoiceKeeper needs of a voice.js VoiceClient.
 * @typedef {object} KeptClient
 * @property {{url?: string, onClose?: (reason: string) => void}} opts
 * @property {string} state
 * @property {{connectionState: string, addEventListener?: (type: string, fn: () => void) => void} | null} pc
 * @property {() => Promise<void>} join
 * @property {(reason: string) => void} end
 * @property {(o?: {release?: boolean}) => Promise<void>} leave
 */

/**
 * @typedef {object} KeepOptions
 * @property {string[]} urls the forwarder base URLs, the page's node list ('' = the page's origin)
 * @property {number} [graceMs]
 * @property {number} [backoffMinMs]
 * @property {number} [backoffMaxMs]
 * @property {number} [maxAttempts]
 * @property {(state: 'live' | 'retrying' | 'gave-up' | 'left', detail: string, waitMs: number) => void} [onState]
 *   detail: the URL of a live session, why for the others; waitMs: when 'retrying', the wait
 *   before the next try
 * @property {(fn: () => void, ms: number) => unknown} [setTimeout]
 * @property {(t: unknown) => void} [clearTimeout]
 */

/** @param {unknown} err */
function permanent(err) {
  const status = err && typeof err === 'object' && 'status' in err ? /** @type {{status: unknown}} */ (err).status : 0;
  return status === 400 || status === 401 || status === 403;
}

export class VoiceKeeper {
  /**
   * @param {KeptClient} client
   * @param {KeepOptions} opts
   */
  constructor(client, opts) {
    if (!opts.urls || opts.urls.length === 0) throw new Error('voice: VoiceKeeper needs urls');
    this.client = client;
    this.opts = opts;
    this.next = Math.max(0, opts.urls.indexOf(client.opts.url || ''));
    this.failed = 0;
    this.backoff = opts.backoffMinMs ?? KEEP_BACKOFF_MIN_MS;
    this.stopped = false;
    this.sessions = 0; // sessions opened
    /** @type {unknown} */
    this.timer = null;
    /** @type {unknown} */
    this.graceTimer = null;
    const pageOnClose = client.opts.onClose;
    client.opts.onClose = (reason) => {
      if (pageOnClose) pageOnClose(reason);
      this.clearGrace();
      if (this.stopped || reason === 'left') return;
      if (reason === BYE_REPLACED) {
        this.stopped = true;
        this.report('gave-up', reason);
        return;
      }
      this.retry(reason, 0);
    };
  }

  /** @param {() => void} fn @param {number} ms */
  after(fn, ms) {
    return (this.opts.setTimeout || setTimeout)(fn, ms);
  }

  /** @param {unknown} t */
  cancel(t) {
    if (t !== null) (this.opts.clearTimeout || clearTimeout)(/** @type {any} */ (t));
  }

  clearGrace() {
    this.cancel(this.graceTimer);
    this.graceTimer = null;
  }

  /**
   * @param {'live' | 'retrying' | 'gave-up' | 'left'} state
   * @param {string} detail
   * @param {number} [waitMs]
   */
  report(state, detail, waitMs = 0) {
    if (this.opts.onState) this.opts.onState(state, detail, waitMs);
  }

  /** Joins (again) through urls[next]; on failure, the next URL after the backoff. */
  async start() {
    if (this.stopped) return;
    const c = this.client;
    c.opts.url = this.opts.urls[this.next % this.opts.urls.length];
    try {
      await c.join();
    } catch (err) {
      if (this.stopped) return;
      this.failed++;
      // A VoiceError says why in words (its reason); anything else as it prints.
      const why = err && typeof err === 'object' && 'reason' in err && err.reason ? String(err.reason) : String(err);
      if (permanent(err) || this.failed >= (this.opts.maxAttempts ?? KEEP_MAX_ATTEMPTS)) {
        this.report('gave-up', why);
        return;
      }
      this.next++; // another node may serve it: an edge relays to the room's owner
      const wait = this.backoff;
      this.backoff = Math.min(2 * this.backoff, this.opts.backoffMaxMs ?? KEEP_BACKOFF_MAX_MS);
      this.retry(why, wait);
      return;
    }
    if (this.stopped) {
      c.leave().catch(() => {});
      return;
    }
    this.kept();
  }

  /**
   * The client's session is live (opened by start, or by the caller before it handed the client
   * over, e.g. a page that first tried the microphone): keep it from now on.
   */
  kept() {
    const c = this.client;
    this.failed = 0;
    this.backoff = this.opts.backoffMinMs ?? KEEP_BACKOFF_MIN_MS;
    this.sessions++;
    this.watch();
    this.report('live', c.opts.url || '');
  }

  /**
   * @param {string} why
   * @param {number} ms
   */
  retry(why, ms) {
    this.report('retrying', why, ms);
    this.cancel(this.timer);
    this.timer = this.after(() => {
      this.timer = null;
      this.start();
    }, ms);
  }

  /** Disconnected beyond the grace ends the session (voice.js ends it on failed and closed). */
  watch() {
    const pc = this.client.pc;
    if (!pc || !pc.addEventListener) return;
    pc.addEventListener('connectionstatechange', () => {
      if (this.client.pc !== pc) return;
      if (pc.connectionState !== 'disconnected') {
        this.clearGrace();
        return;
      }
      if (this.graceTimer !== null) return;
      this.graceTimer = this.after(() => {
        this.graceTimer = null;
        if (this.client.pc === pc && pc.connectionState === 'disconnected') this.client.end('connection disconnected');
      }, this.opts.graceMs ?? KEEP_GRACE_MS);
    });
  }

  /**
   * Stops keeping the session and leaves it.
   * @param {{release?: boolean}} [o]
   */
  async stop(o) {
    this.stopped = true;
    this.cancel(this.timer);
    this.timer = null;
    this.clearGrace();
    this.report('left', '');
    await this.client.leave(o);
  }
}

/**
 * The forwarder base URLs of a signaling node list (Peer.servers: ws[s]://host/ws, or '' for the
 * page's own origin): http[s]://host, '' kept.
 * @param {string[]} servers
 * @returns {string[]}
 */
export function voiceBases(servers) {
  return servers.map((s) => {
    if (!s) return '';
    const u = new URL(s);
    u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
    u.pathname = u.pathname.replace(/\/ws$/, '');
    return u.toString().replace(/\/+$/, '');
  });
}
