// @ts-check
// One WebRTC link to another member: an RTCPeerConnection with Concord's two pre-negotiated data
// channels (id 0 reliable+ordered, id 1 unordered with maxRetransmits 0), set up through signaling.
//
// The member side makes the offer; the host side answers. ICE servers are the ones signaling
// handed out in `joined` (none on a loopback server). Remote
// candidates are queued until the remote description is set, and nothing ever waits for local
// candidates: in a loopback-only network namespace Chromium may signal none, and the other end
// learns the address from the first connectivity check.

export const RELIABLE = 0;
export const UNRELIABLE = 1;

/** Above this many buffered bytes an unreliable send is dropped (stale updates are worthless). */
export const UNRELIABLE_DROP_THRESHOLD = 64 * 1024;
/**
 * Above this many buffered bytes a reliable send waits in the link's backlog, sent as the
 * channel's buffer drains (bufferedamountlow): a snapshot of a large world streams to a joiner at
 * the link's pace (Go's peer backlog; docs/protocol.md §5, "Limits").
 */
export const RELIABLE_HIGH_WATER = 1024 * 1024;
/** A reliable backlog past this many bytes (the largest payload a member reassembles): the remote cannot keep up. */
export const MAX_RELIABLE_BACKLOG = 64 << 20;
/** A backlog that has not moved for this long: the remote cannot keep up, the link is closed. */
export const BACKLOG_STALL_MS = 10000;
/** Remote candidates queued before the remote description; more is a misbehaving peer. */
const MAX_PENDING_CANDIDATES = 64;

/**
 * What a link is made with: the remote's peer index, the signaling session, whether this end
 * offers, and its callbacks.
 * @typedef {object} LinkOptions
 * @property {number} remote
 * @property {number} session
 * @property {boolean} offerer
 * @property {(payload: import('./signaling.js').SignalPayload) => void} signal
 * @property {(ch: number, bytes: Uint8Array) => void} onMessage
 * @property {() => void} [onReady]
 * @property {(reason: string) => void} [onClose]
 * @property {RTCIceServer[]} [iceServers] STUN/TURN servers from signaling's `joined` (none on loopback)
 */

/**
 * The SDP of pc's local description, which a settled setLocalDescription has set.
 * @param {RTCPeerConnection} pc
 * @returns {string}
 */
function localSDP(pc) {
  const d = pc.localDescription;
  if (!d) throw new Error('no local description');
  return d.sdp;
}

/**
 * The address field of an ICE candidate line (`candidate:F C proto prio ADDRESS port typ …`), or ''.
 * @param {string} line
 */
export function candidateAddress(line) {
  const f = line.replace(/^a=/, '').split(' ');
  return f.length > 5 && f[0].startsWith('candidate:') ? f[4] : '';
}

const isLoopback = (/** @type {string} */ a) => a.startsWith('127.') || a === '::1' || a === 'localhost';

/**
 * Why no candidate pair can form between this browser's addresses and the remote's, in words a
 * newcomer can act on, or '' when nothing is known to stand in the way. Stock Firefox and Chromium
 * never gather a loopback candidate and pair a loopback address only with another
 * (docs/design.md §6), so a Go peer or server confined to loopback (`--ice loopback`) can never
 * reach them.
 * @param {string[]} local this browser's candidate addresses (mDNS names included)
 * @param {string[]} remote the remote's candidate addresses
 */
export function pairHint(local, remote) {
  if (remote.length > 0 && remote.every(isLoopback) && !local.some(isLoopback)) {
    return 'the host offers only loopback addresses (127.0.0.1), and this browser pairs only its own network addresses ' +
      `(${local.length ? 'it offered ' + local.length + ', ' + (local.every((a) => a.endsWith('.local')) ? 'as mDNS names' : local.join(', ')) : 'it offered none'}): ` +
      'run the server and Go peers without --ice loopback (on one machine they default to --ice local), or with --ice any';
  }
  if (local.length === 0 && remote.length === 0) {
    return 'neither side offered an address for WebRTC: check that this machine has a network interface, or give the server a TURN relay (--turn)';
  }
  return '';
}

/** What both kinds of link hold: the remote end, the session, the callbacks and the byte counts. */
class LinkEnd {
  /** @param {LinkOptions} opts */
  constructor({ remote, session, offerer, signal, onMessage, onReady = () => {}, onClose = () => {} }) {
    this.remote = remote;
    this.session = session;
    this.offerer = offerer;
    /**
     * The signals sent until the link is ready, for resend: the description first, then the
     * candidates (Go's Conn.sent). A ready link keeps none.
     * @type {import('./signaling.js').SignalPayload[]}
     */
    this.sent = [];
    /** @param {import('./signaling.js').SignalPayload} pl */
    this.signalOut = (pl) => {
      if (!this.ready) this.sent.push(pl);
      else this.sent = [];
      signal(pl);
    };
    this.onMessage = onMessage;
    this.onReady = onReady;
    this.onClose = onClose;
    this.ready = false;
    this.dead = false;
    this.bytesIn = 0;
    this.bytesOut = 0;
  }

  /**
   * Sends again signals signaling did not relay (refused as recipient_busy: the remote never saw
   * them, docs/protocol.md §4 "Signal budgets"): for kind 'offer' or 'answer', this link's
   * description and every candidate sent so far; for 'candidate', every candidate sent so far
   * (the remote ignores one it has). Nothing once the link is ready or dead; reports whether it
   * sent anything. The same link and session: the remote's ICE may be connecting already.
   * @param {string} kind
   * @returns {boolean}
   */
  resend(kind) {
    if (this.dead || this.ready) {
      this.sent = [];
      return false;
    }
    const again = this.sent.filter((s) => s.kind === 'candidate' || kind !== 'candidate');
    for (const s of again) this.signalOut(s);
    this.sent.splice(this.sent.length - again.length); // signalOut noted them again
    return again.length > 0;
  }

  /**
   * The bytes waiting to leave on channel ch (a data channel's bufferedAmount); an in-page link
   * buffers nothing.
   * @param {number} _ch
   * @returns {number}
   */
  buffered(_ch) {
    return 0;
  }

  /**
   * Takes fresh STUN/TURN servers; a link without ICE (MemoryLink) has no use for them.
   * @param {RTCIceServer[]} _iceServers
   */
  setICEServers(_iceServers) {}
}

/**
 * Link is one peer connection. Callbacks:
 *   signal(payload)        send a SignalPayload to the remote end through signaling;
 *   onMessage(ch, bytes)   a payload arrived on channel ch (Uint8Array);
 *   onReady()              both channels are open;
 *   onClose(reason)        the link is dead (called once).
 */
export class Link extends LinkEnd {
  /** @param {LinkOptions} opts */
  constructor(opts) {
    super(opts);
    this.dropped = 0;
    this.remoteSet = false;
    /** @type {RTCIceCandidateInit[]} candidates that came before the remote description */
    this.pending = [];
    this.chain = Promise.resolve(); // serializes signal handling (setRemoteDescription is async)

    const pc = new RTCPeerConnection({ iceServers: opts.iceServers || [] });
    this.pc = pc;
    this.channels = [
      pc.createDataChannel('reliable', { negotiated: true, id: 0 }),
      pc.createDataChannel('unreliable', { negotiated: true, id: 1, ordered: false, maxRetransmits: 0 }),
    ];
    /** @type {Uint8Array[]} reliable payloads waiting for the channel's buffer to drain, in order */
    this.backlog = [];
    this.backlogBytes = 0;
    /** @type {ReturnType<typeof setTimeout> | null} fires when the backlog has not moved for BACKLOG_STALL_MS */
    this.stall = null;
    this.channels[0].bufferedAmountLowThreshold = RELIABLE_HIGH_WATER / 2;
    this.channels[0].onbufferedamountlow = () => this.drain();
    let open = 0;
    this.channels.forEach((dc, ch) => {
      dc.binaryType = 'arraybuffer';
      dc.onopen = () => {
        if (this.dead) return;
        if (++open === 2) {
          this.ready = true;
          this.onReady();
        }
      };
      dc.onclose = () => this.fail(`${dc.label} channel closed`);
      dc.onmessage = (ev) => {
        if (this.dead || !(ev.data instanceof ArrayBuffer)) return;
        this.bytesIn += ev.data.byteLength;
        this.onMessage(ch, new Uint8Array(ev.data));
      };
    });
    /** @type {Set<string>} addresses of the candidates each side offered, for pairHint */
    this.localAddrs = new Set();
    /** @type {Set<string>} */
    this.remoteAddrs = new Set();
    pc.onicecandidate = (ev) => {
      if (!ev.candidate || !ev.candidate.candidate || this.dead) return; // end of candidates is implied
      const c = ev.candidate;
      this.noteAddr(this.localAddrs, c.candidate);
      this.signalOut({
        kind: 'candidate', session: this.session,
        candidate: { candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex, usernameFragment: c.usernameFragment },
      });
    };
    pc.onconnectionstatechange = () => {
      const s = pc.connectionState;
      if (s === 'failed' || s === 'closed' || s === 'disconnected') this.fail(`peer connection ${s}`);
    };
    if (this.offerer) {
      this.chain = this.chain.then(async () => {
        const offer = await pc.createOffer();
        await pc.setLocalDescription(offer);
        if (!this.dead) this.signalOut({ kind: 'offer', sdp: localSDP(pc), session: this.session });
      }).catch((err) => this.fail(`create offer: ${err}`));
    }
  }

  /**
   * Takes fresh STUN/TURN servers (signaling's ice-servers: TURN credentials renewed before they
   * expire). The allocations already made keep theirs; the next ICE gathering (a restart) uses
   * these. A connection that refuses the change keeps the old ones.
   * @param {RTCIceServer[]} iceServers
   */
  setICEServers(iceServers) {
    if (this.dead) return;
    try {
      this.pc.setConfiguration({ ...this.pc.getConfiguration(), iceServers });
    } catch {
      // An RTCPeerConnection may refuse a configuration change (closed, or a browser's rule).
    }
  }

  /**
   * Consumes a SignalPayload from the remote end.
   * @param {import('./signaling.js').SignalPayload} p
   */
  handleSignal(p) {
    this.chain = this.chain.then(() => this.applySignal(p)).catch((err) => this.fail(`signal ${p.kind}: ${err}`));
    return this.chain;
  }

  /**
   * @param {import('./signaling.js').SignalPayload} p
   */
  async applySignal(p) {
    if (this.dead) return;
    const pc = this.pc;
    switch (p.kind) {
      case 'offer':
        if (this.offerer) throw new Error('offer sent to the offerer');
        await pc.setRemoteDescription({ type: 'offer', sdp: p.sdp });
        await this.remoteDescriptionSet();
        await pc.setLocalDescription(await pc.createAnswer());
        if (!this.dead) this.signalOut({ kind: 'answer', sdp: localSDP(pc), session: this.session });
        break;
      case 'answer':
        if (!this.offerer) throw new Error('answer sent to the answerer');
        await pc.setRemoteDescription({ type: 'answer', sdp: p.sdp });
        await this.remoteDescriptionSet();
        break;
      case 'candidate': {
        const c = p.candidate;
        if (!c || !c.candidate) return; // end of candidates
        this.noteAddr(this.remoteAddrs, c.candidate);
        if (!this.remoteSet) {
          if (this.pending.length >= MAX_PENDING_CANDIDATES) throw new Error('too many early candidates');
          this.pending.push(c);
          return;
        }
        await pc.addIceCandidate(c);
        break;
      }
      default:
        throw new Error(`unknown signal kind ${p.kind}`);
    }
  }

  /**
   * @param {Set<string>} set
   * @param {string} line
   */
  noteAddr(set, line) {
    const a = candidateAddress(line);
    if (a && set.size < 64) set.add(a);
  }

  /** Why this link's candidates cannot pair, or '' (pairHint). */
  pairHint() {
    return pairHint([...this.localAddrs], [...this.remoteAddrs]);
  }

  async remoteDescriptionSet() {
    this.remoteSet = true;
    for (const line of (this.pc.remoteDescription && this.pc.remoteDescription.sdp.match(/^a=candidate:.*$/gm)) || []) this.noteAddr(this.remoteAddrs, line);
    const q = this.pending;
    this.pending = [];
    for (const c of q) await this.pc.addIceCandidate(c);
  }

  /**
   * Sends one payload on channel ch. Returns false when it was not sent: an unreliable payload
   * dropped over the buffer threshold or before the channel opened, or a dead link. A reliable
   * payload over the channel's high-water mark (or behind others that were) waits in the backlog
   * and goes as the buffer drains; a backlog past MAX_RELIABLE_BACKLOG, or that has not moved for
   * BACKLOG_STALL_MS, closes the link (the remote cannot keep up).
   * @param {number} ch
   * @param {Uint8Array} bytes
   */
  send(ch, bytes) {
    if (this.dead) return false;
    const dc = this.channels[ch];
    if (dc.readyState !== 'open') {
      this.dropped++;
      return false;
    }
    if (ch === UNRELIABLE && dc.bufferedAmount > UNRELIABLE_DROP_THRESHOLD) {
      this.dropped++;
      return false;
    }
    if (ch === RELIABLE && (this.backlog.length > 0 || dc.bufferedAmount > RELIABLE_HIGH_WATER)) return this.hold(bytes);
    try {
      dc.send(/** @type {Uint8Array<ArrayBuffer>} */ (bytes));
    } catch (err) {
      this.fail(`send: ${err}`);
      return false;
    }
    this.bytesOut += bytes.byteLength;
    return true;
  }

  /**
   * @param {number} ch
   * @returns {number}
   */
  buffered(ch) {
    const dc = this.channels[ch];
    return dc ? dc.bufferedAmount : 0;
  }

  /**
   * Keeps a reliable payload in the backlog; false when the backlog is full (the link fails).
   * @param {Uint8Array} bytes
   */
  hold(bytes) {
    if (this.backlogBytes + bytes.byteLength > MAX_RELIABLE_BACKLOG) {
      this.fail('remote cannot keep up (backlog full)');
      return false;
    }
    if (this.backlog.length === 0) this.armStall();
    this.backlog.push(bytes.slice());
    this.backlogBytes += bytes.byteLength;
    return true;
  }

  /** Sends what the reliable channel's buffer takes of the backlog (on bufferedamountlow). */
  drain() {
    const dc = this.channels[RELIABLE];
    let moved = false;
    while (!this.dead && this.backlog.length > 0 && dc.bufferedAmount <= RELIABLE_HIGH_WATER) {
      const b = /** @type {Uint8Array} */ (this.backlog.shift());
      this.backlogBytes -= b.byteLength;
      try {
        dc.send(/** @type {Uint8Array<ArrayBuffer>} */ (b));
      } catch (err) {
        this.fail(`send: ${err}`);
        return;
      }
      this.bytesOut += b.byteLength;
      moved = true;
    }
    if (this.backlog.length === 0) this.clearStall();
    else if (moved) this.armStall();
  }

  /** (Re)starts the stall timer of a backlog that moved or began. */
  armStall() {
    this.clearStall();
    this.stall = setTimeout(() => this.fail('remote cannot keep up (backlog stalled)'), BACKLOG_STALL_MS);
  }

  clearStall() {
    if (this.stall !== null) clearTimeout(this.stall);
    this.stall = null;
  }

  /**
   * @param {string} reason
   */
  fail(reason) {
    if (this.dead) return;
    this.dead = true;
    this.ready = false;
    this.reason = reason;
    this.clearStall();
    this.closeChannels();
    this.onClose(reason);
  }

  closeChannels() {
    for (const dc of this.channels) {
      dc.onmessage = null;
      dc.onclose = null;
      try { dc.close(); } catch { /* closed */ }
    }
    this.pc.onconnectionstatechange = null;
    this.pc.onicecandidate = null;
    try { this.pc.close(); } catch { /* closed */ }
  }

  /** Closes the link without calling onClose. */
  close() {
    if (this.dead) return;
    this.dead = true;
    this.ready = false;
    this.clearStall();
    this.closeChannels();
  }

  /**
   * Refreshes `pair`: the candidate types ({local, remote}: host, srflx, prflx or relay) of the
   * ICE pair the browser selected, read from getStats. The peer reports it to signaling.
   */
  async refreshPair() {
    if (this.dead) return;
    try {
      const stats = await this.pc.getStats();
      /** @type {any} a candidate-pair stats entry (RTCIceCandidatePairStats) */
      let pair = null;
      stats.forEach((s) => {
        if (s.type === 'transport' && s.selectedCandidatePairId) pair = stats.get(s.selectedCandidatePairId) || pair;
      });
      if (!pair) {
        stats.forEach((s) => {
          if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') pair = s;
        });
      }
      const local = pair && stats.get(pair.localCandidateId);
      const remote = pair && stats.get(pair.remoteCandidateId);
      if (local && remote) this.pair = { local: local.candidateType, remote: remote.candidateType };
    } catch { /* closed meanwhile */ }
  }
}

// ---------------------------------------------------------------------------------------------
// In-page links, for tests and tools: two Peers in one page connected without WebRTC. They are
// set up through signaling like a WebRTC link (the offer's sdp is "memory:<token>"), so that the
// host side needs no special case beyond choosing this class for such an offer.

const memoryOffers = new Map(); // token → offering MemoryLink
let memoryNext = 0;

/**
 * Reports whether a signal payload sets up an in-page link.
 * @param {import('./signaling.js').SignalPayload} p
 */
export function isMemoryOffer(p) {
  return p.kind === 'offer' && typeof p.sdp === 'string' && p.sdp.startsWith('memory:');
}

/** MemoryLink has Link's interface; both channels deliver in order, asynchronously, copying. */
export class MemoryLink extends LinkEnd {
  /** @param {LinkOptions} opts */
  constructor(opts) {
    super(opts);
    /** @type {MemoryLink | null} */
    this.other = null;
    const { offerer, session } = opts;
    if (offerer) {
      this.token = `memory:${++memoryNext}`;
      memoryOffers.set(this.token, this);
      queueMicrotask(() => { if (!this.dead) this.signalOut({ kind: 'offer', sdp: this.token, session }); });
    }
  }

  /**
   * @param {import('./signaling.js').SignalPayload} p
   */
  handleSignal(p) {
    if (this.dead) return Promise.resolve();
    if (p.kind === 'offer' && !this.offerer) {
      const o = memoryOffers.get(p.sdp);
      memoryOffers.delete(p.sdp);
      if (!o || o.dead) {
        this.fail('unknown memory offer');
        return Promise.resolve();
      }
      this.other = o;
      o.other = this;
      this.signalOut({ kind: 'answer', sdp: p.sdp, session: this.session });
      setTimeout(() => { this.open(); o.open(); }, 0);
    }
    return Promise.resolve();
  }

  open() {
    if (this.dead || this.ready) return;
    this.ready = true;
    this.onReady();
  }

  /**
   * @param {number} ch
   * @param {Uint8Array} bytes
   */
  send(ch, bytes) {
    if (this.dead || !this.ready || !this.other) return false;
    const copy = bytes.slice();
    const o = this.other;
    this.bytesOut += copy.length;
    setTimeout(() => {
      if (o.dead) return;
      o.bytesIn += copy.length;
      o.onMessage(ch, copy);
    }, 0);
    return true;
  }

  /**
   * @param {string} reason
   */
  fail(reason) {
    if (this.dead) return;
    this.close();
    this.reason = reason;
    this.onClose(reason);
  }

  close() {
    if (this.dead) return;
    this.dead = true;
    this.ready = false;
    if (this.token) memoryOffers.delete(this.token);
    const o = this.other;
    this.other = null;
    if (o) setTimeout(() => o.fail('remote closed'), 0);
  }
}
