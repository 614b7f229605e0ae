// @ts-check
// Voice: one extra RTCPeerConnection per member, to the server's selective forwarder
// (docs/protocol.md §10), separate from the data links to the game host, so that the host
// vanishing, migrating, or a member's link to it failing never touches voice.
//
// The session is set up WHIP-like, with no renegotiation: the client gathers its ICE candidates
// completely, POSTs one offer (its microphone, then K receive-only "slots" the forwarder fills with
// the speakers in range, then a data channel `voice`) to /voice/{room}, and applies the answer.
// The forwarder tells on `voice` which speaker each slot carries now (`slots`), how loud everyone
// in this listener's set is (`levels`, RFC 6464: 0 loudest … 127 silence) and why it ends a
// session (`bye`). Placement and falloff are this side's: the forwarder only decides who is in
// range; spatial() turns the two avatars' positions into a PannerNode position and a gain.
//
// The pure parts (parseVoiceMessage, SlotTable, answerDirections, falloff, spatial, rmsToLevel)
// run anywhere; VoiceClient needs an RTCPeerConnection, fetch and, to publish, getUserMedia —
// each injectable, so that Node tests drive it with fakes.

/** The slots a client asks for unless told otherwise (the forwarder's default bound, --voice-max-subscriptions). */
export const DEFAULT_SLOTS = 8;
/** The most slots a client asks for: each is an m-section in the offer and a receiver kept alive. */
export const MAX_SLOTS = 32;
/** RFC 6464's level of silence (−127 dBov). */
export const SILENCE = 127;
/** A level at or below this (louder than −50 dBov) counts as speaking. */
export const SPEAKING_LEVEL = 50;
/** The forwarder's proximity radius unless the page knows better (serve's --voice-radius default), mm. */
export const DEFAULT_RADIUS = 6000;
/** Inside this distance (mm) a speaker is at full volume. */
export const FULL_VOLUME_DISTANCE = 1000;
/** A voice message longer than this is not one the forwarder sends; it is ignored. */
export const MAX_MESSAGE = 64 * 1024;
/** How long join() waits for ICE gathering to complete before offering what it has, ms. */
export const GATHER_TIMEOUT_MS = 5000;

/**
 * Why a voice session could not start, from the forwarder's HTTP status (docs/protocol.md §10).
 * status is the HTTP status (0: no answer); code a word for it; reason says it in words.
 */
export class VoiceError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   * @param {boolean} [retryAfter] the refusal came with Retry-After: a 503 then means the room's
   *   forwarder is away for a moment (the room moving between nodes), not voice turned off
   */
  constructor(status, message, retryAfter = false) {
    super(message);
    this.name = 'VoiceError';
    this.status = status;
    this.code = status === 503 && retryAfter ? 'voice_unavailable' : VOICE_CODES[status] || (status ? 'http_' + status : 'unreachable');
    this.reason = VOICE_REASONS[this.code] || message;
  }
}

/** @type {Record<number, string>} */
const VOICE_CODES = {
  400: 'bad_offer', 401: 'token_required', 403: 'not_allowed', 404: 'not_a_member',
  409: 'session_exists', 429: 'too_many', 503: 'voice_disabled',
};

/** @type {Record<string, string>} */
const VOICE_REASONS = {
  bad_offer: 'the forwarder could not read this browser\'s offer',
  token_required: 'voice needs a valid token for this room',
  not_allowed: 'this token does not allow voice in this room',
  not_a_member: 'the forwarder does not see this tab in the room (yet)',
  session_exists: 'this member already has a voice session',
  too_many: 'the room\'s voice is full',
  voice_disabled: 'voice is disabled on this server',
  voice_unavailable: 'voice is unavailable for a moment (the room is moving), retrying',
  unreachable: 'the voice forwarder did not answer',
};

/**
 * A message from the forwarder on the `voice` channel, checked: slots maps a slot's mid to the
 * member it carries ('' none), levels a member to its RFC 6464 level.
 * @typedef {{t: 'slots', slots: Map<string, string>} | {t: 'levels', levels: Map<string, number>} | {t: 'bye', reason: string}} VoiceMessage
 */

/**
 * Parses one text message of the `voice` channel; null for anything the forwarder does not send
 * (too long, not JSON, an unknown type, wrong field types). Member ids are kept as strings (a
 * number is taken as its decimal string); a level is clamped to 0..127.
 * @param {unknown} text
 * @returns {VoiceMessage | null}
 */
export function parseVoiceMessage(text) {
  if (typeof text !== 'string' || text.length > MAX_MESSAGE) return null;
  let m;
  try {
    m = JSON.parse(text);
  } catch {
    return null;
  }
  if (!m || typeof m !== 'object' || Array.isArray(m)) return null;
  switch (m.t) {
    case 'slots': {
      if (!isRecord(m.slots)) return null;
      /** @type {Map<string, string>} */
      const slots = new Map();
      for (const [mid, who] of Object.entries(m.slots)) {
        if (who === null) slots.set(mid, '');
        else if (typeof who === 'string' || (typeof who === 'number' && Number.isFinite(who))) slots.set(mid, String(who));
        else return null;
      }
      return { t: 'slots', slots };
    }
    case 'levels': {
      if (!isRecord(m.levels)) return null;
      /** @type {Map<string, number>} */
      const levels = new Map();
      for (const [who, l] of Object.entries(m.levels)) {
        if (typeof l !== 'number' || !Number.isFinite(l)) return null;
        levels.set(who, Math.min(SILENCE, Math.max(0, Math.round(l))));
      }
      return { t: 'levels', levels };
    }
    case 'bye':
      return { t: 'bye', reason: typeof m.reason === 'string' ? m.reason : '' };
    default:
      return null;
  }
}

/**
 * @param {unknown} v
 * @returns {v is Record<string, unknown>}
 */
function isRecord(v) {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/**
 * One change of a slot's speaker: mid's slot carried from and now carries to ('' none).
 * @typedef {{mid: string, from: string, to: string}} SlotChange
 */

/**
 * SlotTable is which speaker each of this listener's slots carries, by the slot's mid. Only the
 * slots the forwarder accepted exist; a `slots` message naming another mid is ignored for it.
 */
export class SlotTable {
  /** @param {Iterable<string>} mids the accepted slots' mids, in offer order */
  constructor(mids) {
    /** @type {Map<string, string>} mid → member id, '' when the slot is free */
    this.speakers = new Map();
    for (const mid of mids) this.speakers.set(mid, '');
  }

  /**
   * Applies a `slots` message: each mid it names takes its new speaker; mids it leaves out keep
   * theirs. A member named on two slots keeps only the later (the forwarder moved it).
   * @param {Map<string, string>} slots
   * @returns {SlotChange[]} what changed, in slot order
   */
  apply(slots) {
    /** @type {Map<string, string>} */
    const next = new Map(this.speakers);
    for (const [mid, who] of slots) if (next.has(mid)) next.set(mid, who);
    /** @type {Map<string, string>} member → the last mid that names it */
    const last = new Map();
    for (const [mid, who] of next) if (who) last.set(who, mid);
    for (const [mid, who] of next) if (who && last.get(who) !== mid) next.set(mid, '');
    /** @type {SlotChange[]} */
    const changes = [];
    for (const [mid, to] of next) {
      const from = /** @type {string} */ (this.speakers.get(mid));
      if (from !== to) changes.push({ mid, from, to });
    }
    this.speakers = next;
    return changes;
  }

  /**
   * The member slot mid carries, or ''.
   * @param {string} mid
   */
  speakerOf(mid) {
    return this.speakers.get(mid) || '';
  }

  /**
   * The mid of the slot that carries member, or ''.
   * @param {string} member
   */
  slotOf(member) {
    for (const [mid, who] of this.speakers) if (who === member) return mid;
    return '';
  }

  /**
   * A table of only the given mids, each keeping the speaker it has here (a slot the answer
   * accepted may already have been named by a `slots` message that came first).
   * @param {Iterable<string>} mids
   */
  narrow(mids) {
    const t = new SlotTable(mids);
    for (const mid of t.speakers.keys()) t.speakers.set(mid, this.speakerOf(mid));
    return t;
  }

  /** The members the slots carry now. */
  members() {
    return [...this.speakers.values()].filter(Boolean);
  }
}

/**
 * The mid and direction of each media section of an SDP, in order (a section without a
 * direction attribute is sendrecv, RFC 8866 §6.7). The answer's directions are the forwarder's:
 * the mic section answered recvonly or sendrecv may publish; a slot answered inactive is
 * refused (beyond the forwarder's bound).
 * @param {string} sdp
 * @returns {{kind: string, mid: string, direction: string}[]}
 */
export function answerDirections(sdp) {
  /** @type {{kind: string, mid: string, direction: string}[]} */
  const out = [];
  for (const sec of sdp.split(/\r?\nm=/).slice(1)) {
    const lines = sec.split(/\r?\n/);
    const kind = lines[0].split(' ')[0];
    let mid = '';
    let direction = 'sendrecv';
    for (const l of lines) {
      if (l.startsWith('a=mid:')) mid = l.slice(6).trim();
      else if (/^a=(sendrecv|sendonly|recvonly|inactive)\s*$/.test(l)) direction = l.slice(2).trim();
    }
    out.push({ kind, mid, direction });
  }
  return out;
}

/**
 * The gain of a speaker at distance d (mm). With a radius, 'linear' falls from 1 (inside
 * FULL_VOLUME_DISTANCE) to 0 at the radius — where the forwarder stops forwarding, so nothing
 * jumps — and 'inverse' is Web Audio's inverse model (ref/d) faded to 0 over the last tenth of the
 * radius. Without one (radius 0: everyone hears everyone) the model is inverse, never below 0.1.
 * @param {number} d
 * @param {{radius?: number, model?: 'linear' | 'inverse', ref?: number}} [opts]
 */
export function falloff(d, { radius = DEFAULT_RADIUS, model = 'linear', ref = FULL_VOLUME_DISTANCE } = {}) {
  if (!(d >= 0)) return 0;
  if (!radius || radius <= 0) return Math.max(0.1, ref / Math.max(d, ref));
  if (d >= radius) return 0;
  const r = Math.min(ref, radius / 2);
  if (model === 'inverse') {
    const fade = Math.min(1, (radius - d) / (radius / 10));
    return (r / Math.max(d, r)) * fade;
  }
  if (d <= r) return 1;
  return 1 - (d - r) / (radius - r);
}

/**
 * Where a PannerNode puts a speaker, and at what gain: the speaker's avatar position relative to
 * the listener's, in metres, on the horizontal plane of Web Audio's default listener (facing −z):
 * the arena's x is x, its y (down the screen) is z, so a speaker above the listener on the
 * screen is in front. gain is falloff() of the distance; the panner itself does no attenuation
 * (rolloffFactor 0), so the falloff is the same in every browser.
 * @param {{x: number, y: number}} listener mm
 * @param {{x: number, y: number}} speaker mm
 * @param {{radius?: number, model?: 'linear' | 'inverse', ref?: number}} [opts]
 * @returns {{x: number, y: number, z: number, gain: number, distance: number}}
 */
export function spatial(listener, speaker, opts) {
  const dx = speaker.x - listener.x;
  const dy = speaker.y - listener.y;
  const distance = Math.hypot(dx, dy);
  // On top of the listener: straight ahead, not at the origin (where the panner's azimuth is moot).
  if (distance < 1) return { x: 0, y: 0, z: -0.001, gain: falloff(distance, opts), distance };
  return { x: dx / 1000, y: 0, z: dy / 1000, gain: falloff(distance, opts), distance };
}

/**
 * An RFC 6464 level (0 loudest … 127 silence, −dBov) from the RMS of samples in [−1, 1].
 * @param {number} rms
 */
export function rmsToLevel(rms) {
  if (!(rms > 0)) return SILENCE;
  return Math.min(SILENCE, Math.max(0, Math.round(-20 * Math.log10(rms))));
}

/**
 * Whether a level says speaking.
 * @param {number | undefined} level
 */
export function speaking(level) {
  return level !== undefined && level <= SPEAKING_LEVEL;
}

/**
 * The URL a session is offered to: base (an origin or a URL whose path ends before /voice; ''
 * relative to the page) + /voice/{room}?member=ID.
 * @param {string} base
 * @param {string} room
 * @param {string} member
 */
export function voiceURL(base, room, member) {
  return `${base.replace(/\/+$/, '')}/voice/${encodeURIComponent(room)}?member=${encodeURIComponent(member)}`;
}

/**
 * The `voice` claim of a join token (docs/protocol.md §10): 'publish' (also when absent, or
 * without a token), 'listen' or 'none'. The token is only read, not verified — the forwarder
 * decides; the page uses this to ask for no microphone it could not use, and to say why.
 * @param {string} token
 * @returns {'publish' | 'listen' | 'none'}
 */
export function voiceClaim(token) {
  const part = (token || '').split('.')[1];
  if (!part) return 'publish';
  try {
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
    const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))));
    return claims && (claims.voice === 'listen' || claims.voice === 'none') ? claims.voice : 'publish';
  } catch {
    return 'publish';
  }
}

/**
 * A slot's receiving statistics (RTCInboundRtpStreamStats of its receiver).
 * @typedef {{mid: string, member: string, packetsReceived: number, bytesReceived: number, audioLevel: number}} SlotStats
 */

/**
 * What a VoiceClient is made with. room and member name the session (member: this tab's
 * signaling identity, its peerId `user/device`); token is the join token (or a function returning a fresh one) — '' on a
 * server without a secret. url is the forwarder's base ('' = the page's origin). iceServers
 * returns the STUN/TURN servers to use now (the ones signaling handed the data links, refreshed
 * by `ice-servers`). listen: ask for no microphone. slots: K. The callbacks report slot changes,
 * levels, each slot's remote track, and the session's end.
 * @typedef {object} VoiceOptions
 * @property {string} room
 * @property {string} member
 * @property {string | (() => string | Promise<string>)} [token]
 * @property {string} [url]
 * @property {RTCIceServer[] | (() => RTCIceServer[])} [iceServers]
 * @property {boolean} [listen]
 * @property {number} [slots]
 * @property {boolean} [muted] start muted (default true: nothing is sent until unmute)
 * @property {number} [gatherTimeoutMs]
 * @property {(changes: SlotChange[], table: SlotTable) => void} [onSlots]
 * @property {(levels: Map<string, number>) => void} [onLevels]
 * @property {(mid: string, track: MediaStreamTrack) => void} [onTrack]
 * @property {(reason: string) => void} [onClose]
 * @property {typeof RTCPeerConnection} [RTCPeerConnection]
 * @property {typeof fetch} [fetch]
 * @property {(c: MediaStreamConstraints) => Promise<MediaStream>} [getUserMedia]
 */

/**
 * VoiceClient is this member's session with the forwarder: join() asks for the microphone (once:
 * a rejoin reuses it), offers, and resolves when the answer is applied; mute() and leave() do
 * what they say. publishing is false when the forwarder answered the microphone refused (a
 * listen-only token) or none was asked for.
 */
export class VoiceClient {
  /** @param {VoiceOptions} opts */
  constructor(opts) {
    this.opts = opts;
    this.state = 'idle'; // idle → joining → live → closed
    this.muted = opts.muted !== false;
    this.publishing = false;
    /** @type {MediaStream | null} the microphone, kept across sessions */
    this.mic = null;
    /** @type {RTCPeerConnection | null} */
    this.pc = null;
    /** @type {RTCDataChannel | null} */
    this.dc = null;
    /** @type {RTCRtpTransceiver[]} the slots' transceivers, in offer order */
    this.slotTransceivers = [];
    /** @type {RTCRtpTransceiver | null} */
    this.micTransceiver = null;
    this.table = new SlotTable([]);
    /** @type {Map<string, number>} the last levels, by member */
    this.levels = new Map();
    this.location = '';
    this.closeReason = '';
    this.ignored = 0; // messages parseVoiceMessage refused
  }

  /**
   * Opens the session; rejects with a VoiceError the forwarder's refusal (or a DOMException of
   * getUserMedia: the microphone was refused).
   */
  async join() {
    if (this.state === 'joining' || this.state === 'live') throw new Error('voice: already joined');
    this.state = 'joining';
    this.closeReason = '';
    const o = this.opts;
    try {
      if (!o.listen && !this.mic) {
        const gum = o.getUserMedia || ((c) => navigator.mediaDevices.getUserMedia(c));
        this.mic = await gum({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true }, video: false });
      }
      const PC = o.RTCPeerConnection || RTCPeerConnection;
      const servers = typeof o.iceServers === 'function' ? o.iceServers() : o.iceServers || [];
      const pc = new PC({ iceServers: servers });
      this.pc = pc;
      const track = !o.listen && this.mic ? this.mic.getAudioTracks()[0] : null;
      if (track) {
        track.enabled = !this.muted;
        this.micTransceiver = pc.addTransceiver(track, { direction: 'sendrecv', streams: [/** @type {MediaStream} */ (this.mic)] });
      } else {
        this.micTransceiver = pc.addTransceiver('audio', { direction: 'recvonly' });
      }
      const k = Math.max(1, Math.min(MAX_SLOTS, Math.floor(o.slots || DEFAULT_SLOTS)));
      this.slotTransceivers = [];
      for (let i = 0; i < k; i++) this.slotTransceivers.push(pc.addTransceiver('audio', { direction: 'recvonly' }));
      const dc = pc.createDataChannel('voice', { ordered: true });
      this.dc = dc;
      dc.onopen = () => this.sendMute();
      dc.onmessage = (ev) => this.handleMessage(ev.data);
      dc.onclose = () => this.end(this.closeReason || 'voice channel closed');
      pc.ontrack = (ev) => {
        const mid = ev.transceiver && ev.transceiver.mid;
        if (mid && mid !== (this.micTransceiver && this.micTransceiver.mid) && o.onTrack) o.onTrack(mid, ev.track);
      };
      pc.onconnectionstatechange = () => {
        if (pc.connectionState === 'failed' || pc.connectionState === 'closed') this.end(`connection ${pc.connectionState}`);
      };
      await pc.setLocalDescription(await pc.createOffer());
      // The table holds every offered slot from now on: the forwarder sends the whole mapping as
      // soon as the channel opens, and a loaded page can run that message before the task that
      // resolves setRemoteDescription below (Chromium, the second member to join: the only
      // mapping it got named the first, and was lost). accept() keeps what it already says.
      /** @type {string[]} */
      const offered = [];
      for (const t of this.slotTransceivers) if (t.mid) offered.push(t.mid);
      this.table = new SlotTable(offered);
      await gathered(pc, o.gatherTimeoutMs ?? GATHER_TIMEOUT_MS);
      const offer = pc.localDescription;
      if (!offer) throw new Error('voice: no local description');
      const url = voiceURL(o.url || '', o.room, o.member);
      const answer = await this.post(url, offer.sdp);
      if (this.state !== 'joining') {
        // Left while the offer was out: end the session the forwarder just made.
        this.leave().catch(() => {});
        throw new Error(`voice: ${this.closeReason || 'left'} while joining`);
      }
      await pc.setRemoteDescription({ type: 'answer', sdp: answer });
      this.accept(answer);
      this.state = 'live';
    } catch (err) {
      this.teardown();
      this.state = 'closed';
      throw err;
    }
  }

  /**
   * POSTs the offer and returns the answer's SDP; sets location.
   * @param {string} url
   * @param {string} sdp
   */
  async post(url, sdp) {
    const f = this.opts.fetch || fetch;
    /** @type {Record<string, string>} */
    const headers = { 'Content-Type': 'application/sdp' };
    const token = await this.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    let res;
    try {
      res = await f(url, { method: 'POST', headers, body: sdp });
    } catch (err) {
      throw new VoiceError(0, `voice: POST ${url}: ${err}`);
    }
    const body = await res.text();
    if (res.status !== 201) {
      const retry = !!(res.headers && typeof res.headers.get === 'function' && res.headers.get('Retry-After'));
      throw new VoiceError(res.status, `voice: ${res.status} ${body.trim().slice(0, 200)}`, retry);
    }
    const loc = res.headers.get('Location') || '';
    this.location = loc ? new URL(loc, new URL(url, 'http://page.invalid/')).href.replace(/^http:\/\/page\.invalid/, '') : '';
    return body;
  }

  async token() {
    const t = this.opts.token;
    return typeof t === 'function' ? await t() : t || '';
  }

  /**
   * Reads the answer's directions: which slots the forwarder accepted, whether it takes the
   * microphone.
   * @param {string} answer
   */
  accept(answer) {
    const dirs = new Map(answerDirections(answer).map((d) => [d.mid, d.direction]));
    const mic = this.micTransceiver && this.micTransceiver.mid;
    const micDir = mic ? dirs.get(mic) : undefined;
    this.publishing = !this.opts.listen && !!this.mic && (micDir === 'recvonly' || micDir === 'sendrecv');
    if (!this.publishing && this.mic) for (const t of this.mic.getAudioTracks()) t.enabled = false;
    /** @type {string[]} */
    const mids = [];
    for (const t of this.slotTransceivers) if (t.mid && dirs.has(t.mid) && dirs.get(t.mid) !== 'inactive') mids.push(t.mid);
    this.table = this.table.narrow(mids);
  }

  /**
   * Handles one message of the `voice` channel.
   * @param {unknown} data
   */
  handleMessage(data) {
    const m = parseVoiceMessage(data);
    if (!m) {
      this.ignored++;
      return;
    }
    switch (m.t) {
      case 'slots': {
        const changes = this.table.apply(m.slots);
        if (changes.length && this.opts.onSlots) this.opts.onSlots(changes, this.table);
        break;
      }
      case 'levels':
        this.levels = m.levels;
        if (this.opts.onLevels) this.opts.onLevels(m.levels);
        break;
      case 'bye':
        this.closeReason = m.reason || 'the forwarder ended the session';
        this.end(this.closeReason);
        break;
    }
  }

  /**
   * Mutes or unmutes the microphone: the track stops sending, and the forwarder is told (it stops
   * forwarding a muted publisher).
   * @param {boolean} muted
   */
  mute(muted) {
    this.muted = muted;
    if (this.mic) for (const t of this.mic.getAudioTracks()) t.enabled = !muted && (this.publishing || this.state === 'joining');
    this.sendMute();
  }

  sendMute() {
    const dc = this.dc;
    if (dc && dc.readyState === 'open') {
      try { dc.send(JSON.stringify({ t: 'mute', muted: this.muted })); } catch { /* closing */ }
    }
  }

  /**
   * Ends the session: DELETE its location (keepalive: it survives the page closing), close the
   * connection. The microphone stays open for a rejoin unless release is true.
   * @param {{release?: boolean}} [opts]
   */
  async leave({ release = false } = {}) {
    const loc = this.location;
    this.location = '';
    this.end('left');
    if (release) this.releaseMic();
    if (!loc) return;
    /** @type {Record<string, string>} */
    const headers = {};
    const token = await this.token().catch(() => '');
    if (token) headers.Authorization = `Bearer ${token}`;
    try {
      await (this.opts.fetch || fetch)(loc, { method: 'DELETE', headers, keepalive: true });
    } catch { /* the server is away: the session ends with the connection */ }
  }

  /** Stops the microphone (the browser's recording indicator goes off). */
  releaseMic() {
    if (this.mic) for (const t of this.mic.getTracks()) t.stop();
    this.mic = null;
  }

  /**
   * The session ended (bye, the connection, leave): close it, report once.
   * @param {string} reason
   */
  end(reason) {
    if (this.state === 'closed' || this.state === 'idle') return;
    const was = this.state;
    this.state = 'closed';
    this.closeReason = reason;
    this.teardown();
    if (was === 'live' && this.opts.onClose) this.opts.onClose(reason);
  }

  teardown() {
    const pc = this.pc;
    const dc = this.dc;
    this.pc = null;
    this.dc = null;
    if (dc) {
      dc.onopen = null;
      dc.onmessage = null;
      dc.onclose = null;
      try { dc.close(); } catch { /* closed */ }
    }
    if (pc) {
      pc.ontrack = null;
      pc.onconnectionstatechange = null;
      try { pc.close(); } catch { /* closed */ }
    }
    this.publishing = false;
    this.table = new SlotTable([]);
  }

  /**
   * Each accepted slot's receive statistics and the member it carries now (what the end-to-end
   * tests measure forwarding by), and the microphone's packets sent.
   * @returns {Promise<{slots: SlotStats[], packetsSent: number}>}
   */
  async stats() {
    /** @type {SlotStats[]} */
    const slots = [];
    let packetsSent = 0;
    if (!this.pc) return { slots, packetsSent };
    for (const t of this.slotTransceivers) {
      if (!t.mid || !this.table.speakers.has(t.mid)) continue;
      const s = { mid: t.mid, member: this.table.speakerOf(t.mid), packetsReceived: 0, bytesReceived: 0, audioLevel: 0 };
      try {
        (await t.receiver.getStats()).forEach((r) => {
          if (r.type !== 'inbound-rtp') return;
          s.packetsReceived += r.packetsReceived || 0;
          s.bytesReceived += r.bytesReceived || 0;
          s.audioLevel = Math.max(s.audioLevel, r.audioLevel || 0);
        });
      } catch { /* closed meanwhile */ }
      slots.push(s);
    }
    if (this.micTransceiver) {
      try {
        (await this.micTransceiver.sender.getStats()).forEach((r) => {
          if (r.type === 'outbound-rtp') packetsSent += r.packetsSent || 0;
        });
      } catch { /* closed meanwhile */ }
    }
    return { slots, packetsSent };
  }
}

/**
 * VoiceMixer plays the slots through Web Audio: each slot's track → a GainNode (falloff × the
 * listener's volume for that speaker) → a PannerNode (equalpower, no attenuation of its own) →
 * the speakers. place() moves a slot's speaker; the microphone's own level is read from an
 * AnalyserNode (the speaking indicator for self, which needs no round trip).
 */
export class VoiceMixer {
  /**
   * @param {{radius?: number, model?: 'linear' | 'inverse', context?: AudioContext}} [opts]
   */
  constructor(opts = {}) {
    this.radius = opts.radius ?? DEFAULT_RADIUS;
    this.model = opts.model || 'linear';
    this.ctx = opts.context || new AudioContext();
    /** @type {Map<string, {source: MediaStreamAudioSourceNode, gain: GainNode, panner: PannerNode, element: HTMLAudioElement | null}>} */
    this.slots = new Map();
    /** @type {AnalyserNode | null} */
    this.analyser = null;
    /** @type {Float32Array<ArrayBuffer> | null} */
    this.samples = null;
  }

  /** Starts the audio context (browsers start one suspended until a user gesture). */
  resume() {
    return this.ctx.resume();
  }

  /**
   * Plays track on slot mid (replacing what it played).
   * @param {string} mid
   * @param {MediaStreamTrack} track
   */
  attach(mid, track) {
    this.detach(mid);
    const stream = new MediaStream([track]);
    // Chromium feeds a remote WebRTC track into Web Audio only while a media element plays it too
    // (muted here: the graph is what is heard).
    /** @type {HTMLAudioElement | null} */
    let element = null;
    if (typeof Audio === 'function') {
      element = new Audio();
      element.muted = true;
      element.srcObject = stream;
      element.play().catch(() => {});
    }
    const source = this.ctx.createMediaStreamSource(stream);
    const gain = this.ctx.createGain();
    gain.gain.value = 0; // silent until placed
    const panner = new PannerNode(this.ctx, { panningModel: 'equalpower', distanceModel: 'linear', rolloffFactor: 0 });
    source.connect(gain).connect(panner).connect(this.ctx.destination);
    this.slots.set(mid, { source, gain, panner, element });
  }

  /**
   * Places slot mid's speaker relative to the listener and sets its gain (volume: the listener's
   * own setting for that speaker, 0..2). Changes glide over 50 ms (no clicks).
   * @param {string} mid
   * @param {{x: number, y: number} | null} listener mm, null when unknown (then: centred, full falloff gain)
   * @param {{x: number, y: number} | null} speaker mm
   * @param {number} volume
   */
  place(mid, listener, speaker, volume) {
    const s = this.slots.get(mid);
    if (!s) return;
    const p = listener && speaker ? spatial(listener, speaker, { radius: this.radius, model: this.model }) : { x: 0, y: 0, z: -1, gain: 1 };
    const t = this.ctx.currentTime;
    s.panner.positionX.setTargetAtTime(p.x, t, 0.05);
    s.panner.positionY.setTargetAtTime(p.y, t, 0.05);
    s.panner.positionZ.setTargetAtTime(p.z, t, 0.05);
    s.gain.gain.setTargetAtTime(p.gain * volume, t, 0.05);
  }

  /**
   * Stops playing slot mid.
   * @param {string} mid
   */
  detach(mid) {
    const s = this.slots.get(mid);
    if (!s) return;
    this.slots.delete(mid);
    s.source.disconnect();
    s.gain.disconnect();
    s.panner.disconnect();
    if (s.element) s.element.srcObject = null;
  }

  /**
   * Reads the microphone's level from now on (micLevel).
   * @param {MediaStream} mic
   */
  watchMic(mic) {
    if (this.analyser) return;
    this.analyser = this.ctx.createAnalyser();
    this.analyser.fftSize = 1024;
    this.samples = new Float32Array(this.analyser.fftSize);
    this.ctx.createMediaStreamSource(mic).connect(this.analyser); // not to the speakers: no echo of oneself
  }

  /** The microphone's RFC 6464 level now (SILENCE when not watched). */
  micLevel() {
    if (!this.analyser || !this.samples) return SILENCE;
    this.analyser.getFloatTimeDomainData(this.samples);
    let sum = 0;
    for (const v of this.samples) sum += v * v;
    return rmsToLevel(Math.sqrt(sum / this.samples.length));
  }

  close() {
    for (const mid of [...this.slots.keys()]) this.detach(mid);
    this.ctx.close().catch(() => {});
  }
}

/**
 * Resolves when pc's ICE gathering completes, or after timeoutMs (the offer then carries what was
 * gathered; the forwarder still learns this side's address from its connectivity checks).
 * @param {RTCPeerConnection} pc
 * @param {number} timeoutMs
 */
function gathered(pc, timeoutMs) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    function done() {
      clearTimeout(timer);
      pc.removeEventListener('icegatheringstatechange', check);
      resolve(undefined);
    }
    function check() {
      if (pc.iceGatheringState === 'complete') done();
    }
    pc.addEventListener('icegatheringstatechange', check);
  });
}
