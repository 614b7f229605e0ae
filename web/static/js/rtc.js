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
/** Above this many buffered bytes on the reliable channel the remote cannot keep up: the link is closed. */
export const RELIABLE_HIGH_WATER = 1024 * 1024;
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

/** What both kinds of link hold: the remote end, the session, the callbacks and the byte counts. */
class LinkEnd {
  /** @param {LinkOptions} opts */
  constructor({ remote, session, offerer, signal, onMessage, onReady = () => {}, onClose = () => {} }) {
    this.remote = remote;
    this.session = session;
    this.offerer = offerer;
    this.signalOut = signal;
    this.onMessage = onMessage;
    this.onReady = onReady;
    this.onClose = onClose;
    this.ready = false;
    this.dead = false;
    this.bytesIn = 0;
    this.bytesOut = 0;
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
    pc.onicecandidate = (ev) => {
      if (!ev.candidate || !ev.candidate.candidate || this.dead) return; // end of candidates is implied
      const c = ev.candidate;
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

  async remoteDescriptionSet() {
    this.remoteSet = true;
    const q = this.pending;
    this.pending = [];
    for (const c of q) await this.pc.addIceCandidate(c);
  }

  /**
   * Sends one payload on channel ch. Returns false when it was not sent: an unreliable payload
   * dropped over the buffer threshold or before the channel opened, or a dead link. A reliable
   * channel over its high-water mark closes the link (the remote cannot keep up).
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
    if (ch === RELIABLE && dc.bufferedAmount > RELIABLE_HIGH_WATER) {
      this.fail('remote cannot keep up');
      return false;
    }
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
   * @param {string} reason
   */
  fail(reason) {
    if (this.dead) return;
    this.dead = true;
    this.ready = false;
    this.reason = reason;
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
