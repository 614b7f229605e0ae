// @ts-check
// The browser peer's links (peer/link in Go): one Remote per linked peer, made from signaling's
// signals, the messages of each payload walked and handed to the role, and sends fragmented or
// dropped as the channel allows. These are methods of Peer (see loop.js mixin).

import * as netmsg from './netmsg.js';
import { Type, MAX_RELIABLE } from './netmsg.js';
import { Link, MemoryLink, isMemoryOffer, RELIABLE, UNRELIABLE } from './rtc.js';
import { now } from './loop.js';
import { hex16 } from './status.js';
import { MAX_CORRECTION_BYTES } from './restamp.js';

/** Close code: the member runs another schema table. */
export const CLOSE_SCHEMA_MISMATCH = 1;

/**
 * The error that ends a member whose schema table is not the host's (peer.ErrSchemaMismatch):
 * it names this peer's table and, in what the host said, the host's.
 * @param {bigint} ours
 * @param {number} host
 * @param {string} said
 */
export function schemaMismatch(ours, host, said) {
  const err = /** @type {Error & {code: string}} */ (new Error(`peer: schema table differs from the host's: this peer runs schema table ${hex16(ours)}; the host (peer ${host}) ${said}`));
  err.code = 'schema_mismatch';
  return err;
}

/** One link to another peer (the host keeps what it knows of the member at its end: HostMember). */
export class Remote {
  /**
   * @param {import('./peer.js').Peer} peer
   * @param {number} idx
   * @param {number} session
   */
  constructor(peer, idx, session) {
    this.p = peer;
    this.idx = idx;
    this.session = session;
    /** Set by Peer.connect right after construction. @type {Link | MemoryLink | null} */
    this.link = null;
    this.ready = false;
    this.reasm = new netmsg.Reassembler();
    this.reasmHost = false; // reasm is sized for a host receiving from a member
    this.reasmAt = 0; // when reasm's payload in progress started (ms)
    this.fragID = 0;
    this.lastHeard = 0;
    this.rtt = 0; // ms
    this.pongs = 0; // Pongs received: answers to this peer's pings (the host's confirmGone)
    // The term in which this link was made, raised while its remote stays the host: the term of
    // the host messages that carry none on the wire (a member's fence checks it).
    this.term = 0;
    // Signals of this link signaling refused as recipient_busy, not yet sent again (SHED_*), the
    // resends so far, and whether one is scheduled (Peer.signalShed).
    this.shed = 0;
    this.resends = 0;
    this.resendArmed = false;
  }

  close() {
    if (this.link) this.link.close();
  }
}

/**
 * Reassembly limits (Go's hostReassemblyLimit, reassemblyTimeout; docs/protocol.md §5 "Limits"):
 * a host receives only greetings, RPCs and corrections from a member; a member the host's
 * snapshots (netmsg's default, 64 MiB). A payload unfinished after the timeout ends the link.
 */
export const HOST_REASSEMBLY_LIMIT = MAX_CORRECTION_BYTES + (64 << 10);
export const REASSEMBLY_TIMEOUT_MS = 30000;

/**
 * Refused signals sent again (Go's peer/resend.go; docs/protocol.md §4 "Signal budgets"): the
 * first pause, doubled after each resend up to the most, plus up to half again of jitter, at
 * most MAX_RESENDS times a link; past that the connect timeout decides.
 */
export const RESEND_PAUSE_MS = 250;
export const MAX_RESEND_PAUSE_MS = 2000;
export const MAX_RESENDS = 6;
const SHED_DESCRIPTION = 1;
const SHED_CANDIDATES = 2;

/** Peer's link methods. */
export class PeerLinks {
  /**
   * Gives r, between two payloads, the reassembler its direction needs; notes when one starts.
   * @this {import('./peer.js').Peer}
   * @param {Remote} r
   */
  sizeReassembly(r) {
    if (r.reasm.inProgress) return;
    const host = this.host !== null;
    if (r.reasmHost !== host) {
      r.reasm = new netmsg.Reassembler(host ? { maxTotal: HOST_REASSEMBLY_LIMIT } : {});
      r.reasmHost = host;
    }
    r.reasmAt = now();
  }

  /**
   * Closes the links whose fragmented payload is unfinished after REASSEMBLY_TIMEOUT_MS.
   * @this {import('./peer.js').Peer}
   * @param {number} t
   */
  expireReassembly(t) {
    for (const r of [...this.remotes.values()]) {
      if (r.reasm.inProgress && t - r.reasmAt > REASSEMBLY_TIMEOUT_MS) {
        this.count.refused++;
        this.log('warn', 'fragmented payload unfinished after 30s; closing link', { remote: r.idx, buffered: r.reasm.buffered });
        r.reasm.reset();
        this.dropRemote(r);
      }
    }
  }

  /**
   * @this {import('./peer.js').Peer}
   * @param {number} from
   * @param {import('./signaling.js').SignalPayload} pl
   */
  handleSignal(from, pl) {
    let r = this.remotes.get(from);
    const session = pl.session || 0;
    if (pl.kind === 'offer' && this.host) {
      if (r) {
        r.close();
        this.remotes.delete(from);
        this.host.forget(r);
      }
      r = this.connect(from, session, false, isMemoryOffer(pl));
    }
    if (!r || r.session !== session || !r.link) return; // a signal for no link
    r.link.handleSignal(pl);
  }

  /**
   * Handles signaling's refusal of one of this peer's signals as recipient_busy (an error naming
   * peerIndex, signal and session): in a burst of joins a host's signal budget or the signal share
   * of its queue runs out, and the remote never saw the signal, so the link cannot come up
   * without it. The link it belongs to, while it is still being made, sends it again after a
   * pause (RESEND_PAUSE_MS doubled each time, with jitter so that a burst's refused joiners do
   * not come back at once), the same session, never remade: the remote may be connecting already.
   * @this {import('./peer.js').Peer}
   * @param {import('./signaling.js').SignalingEvent} ev
   */
  signalShed(ev) {
    this.count.signalsShed++;
    const r = this.remotes.get(ev.peerIndex);
    if (!r || r.session !== (ev.session || 0) || r.ready || !r.link || r.link.dead) return; // replaced, up or gone
    r.shed |= ev.signal === 'candidate' ? SHED_CANDIDATES : SHED_DESCRIPTION;
    if (r.resendArmed || r.resends >= MAX_RESENDS) return;
    r.resendArmed = true;
    let pause = Math.min(RESEND_PAUSE_MS * 2 ** r.resends, MAX_RESEND_PAUSE_MS);
    pause += Math.random() * pause / 2;
    r.resends++;
    this.after(pause, () => {
      r.resendArmed = false;
      if (this.remotes.get(r.idx) !== r || r.ready || !r.link) return;
      const kind = r.shed & SHED_DESCRIPTION ? 'offer' : 'candidate'; // the description, whichever it is, and the candidates after it
      r.shed = 0;
      if (r.link.resend(kind)) this.count.signalsResent++;
    });
  }

  /**
   * Makes a link to member idx: WebRTC, or an in-page MemoryLink when this peer was made with
   * opts.memory (as offerer) or the offer asks for one (as answerer).
   * @this {import('./peer.js').Peer}
   * @param {number} idx
   * @param {number} session
   * @param {boolean} offerer
   * @param {boolean} [memory]
   */
  connect(idx, session, offerer, memory = undefined) {
    if (memory === undefined) memory = offerer && !!this.opts.memory;
    const r = new Remote(this, idx, session);
    r.term = this.w.term;
    const LinkClass = memory ? MemoryLink : Link;
    r.link = new LinkClass({
      remote: idx, session, offerer,
      signal: (pl) => this.sig && this.sig.signal(idx, pl),
      onMessage: (ch, bytes) => this.step(() => this.linkMessage(r, ch, bytes)),
      onReady: () => this.step(() => this.linkReady(r)),
      onClose: (reason) => this.step(() => this.linkClosed(r, reason)),
      iceServers: (this.sig && this.sig.joined && this.sig.joined.iceServers) || [],
    });
    this.remotes.set(idx, r);
    return r;
  }

  /**
   * @this {import('./peer.js').Peer}
   * @param {Remote} r
   */
  linkReady(r) {
    if (this.remotes.get(r.idx) !== r) return;
    r.ready = true;
    r.lastHeard = now();
    this.linkHint = '';
    if (this.member && r === this.member.hostLink) this.member.linkReady();
  }

  /**
   * @this {import('./peer.js').Peer}
   * @param {Remote} r
   * @param {string} reason
   */
  linkClosed(r, reason) {
    if (this.remotes.get(r.idx) !== r) return;
    this.log('info', 'link closed', { remote: r.idx, reason });
    this.remotes.delete(r.idx);
    if (this.host) this.host.linkClosed(r);
    if (this.member && r === this.member.hostLink) this.member.hostLinkClosed();
  }

  /**
   * @this {import('./peer.js').Peer}
   * @param {Remote} r
   * @param {number} ch
   * @param {Uint8Array} bytes
   */
  linkMessage(r, ch, bytes) {
    if (this.remotes.get(r.idx) !== r) {
      // A link this peer has let go of. A member still hears what its previous host sent before
      // the link closed: the fence refuses it, and counts it.
      if (this.member) this.member.admit(r);
      return;
    }
    r.ready = true;
    this.count.bytesIn += bytes.length;
    r.lastHeard = now();
    try {
      this.handlePayload(r, ch, bytes, 0);
    } catch (err) {
      this.log('warn', 'protocol error; closing link', { remote: r.idx, err: String(err && err.message || err) });
      this.dropRemote(r);
    }
  }

  /**
   * Walks the messages of one payload. A thrown error ends the link.
   * @this {import('./peer.js').Peer}
   * @param {Remote} r
   * @param {number} ch
   * @param {Uint8Array} payload
   * @param {number} depth
   */
  handlePayload(r, ch, payload, depth) {
    if (ch === UNRELIABLE) netmsg.checkDatagram(payload);
    let stamp = 0n;
    const onUnknown = () => { this.count.dropped++; };
    for (const m of netmsg.readMessages(payload, { onUnknown })) {
      switch (m.type) {
        case Type.Fragment: {
          if (depth > 0) throw new Error('fragment inside a fragmented payload');
          this.sizeReassembly(r);
          const whole = r.reasm.push(/** @type {any} */ (m)); // a decoded Fragment
          if (whole) this.handlePayload(r, ch, whole, depth + 1);
          continue;
        }
        case Type.Stamp:
          stamp = m.time;
          continue;
        case Type.Ping:
          this.send(r, RELIABLE, netmsg.encode({ type: Type.Pong, nonce: m.nonce, echoTime: m.sendTime }));
          continue;
        case Type.Pong:
          r.rtt = (Number(this.monotonic() - m.echoTime)) / 1e6;
          r.pongs++;
          continue;
        case Type.Close:
          this.log('warn', 'remote closed the session', { remote: r.idx, code: m.code, reason: m.reason });
          if (m.code === CLOSE_SCHEMA_MISMATCH && this.member && this.member.admit(r)) {
            this.fail(schemaMismatch(this.w.schemas.fingerprint, r.idx, `refused it: ${m.reason}`));
            return;
          }
          continue;
        default:
      }
      if (this.host) this.host.handle(r, m, ch);
      else if (this.member) this.member.handle(r, m, stamp);
      else this.count.fenced++;
    }
  }

  /**
   * Monotonic nanoseconds as a u64 BigInt (Ping send times).
   * @this {import('./peer.js').Peer}
   */
  monotonic() {
    return BigInt(Math.round(now() * 1e6));
  }

  /**
   * Sends a payload to r, fragmenting a reliable payload above the message limit. Nothing is sent
   * without a ready link (r null included).
   * @this {import('./peer.js').Peer}
   * @param {Remote | null} r
   * @param {number} ch
   * @param {Uint8Array} payload
   */
  send(r, ch, payload) {
    if (!r || !r.link || !r.ready) return;
    if (ch === RELIABLE && payload.length > MAX_RELIABLE) {
      r.fragID = (r.fragID + 1) >>> 0;
      for (const f of netmsg.fragment(payload, r.fragID, MAX_RELIABLE)) {
        if (!this.sendOne(r, ch, f)) return;
      }
      return;
    }
    this.sendOne(r, ch, payload);
  }

  /**
   * @this {import('./peer.js').Peer}
   * @param {Remote} r
   * @param {number} ch
   * @param {Uint8Array} b
   */
  sendOne(r, ch, b) {
    const link = r.link;
    if (!link) return false; // never: Peer.connect gives every Remote its link
    if (link.send(ch, b)) {
      this.count.bytesOut += b.length;
      return true;
    }
    if (link.dead) {
      this.log('warn', 'send failed; closing link', { remote: r.idx, reason: link.reason });
      this.dropRemote(r);
      return false;
    }
    this.count.dropped++; // dropped (channel not open yet, or unreliable over its threshold): anti-entropy heals
    return true;
  }

  /**
   * @this {import('./peer.js').Peer}
   * @param {Remote} r
   */
  dropRemote(r) {
    if (this.remotes.get(r.idx) === r) {
      this.remotes.delete(r.idx);
      if (this.host) this.host.linkClosed(r);
      if (this.member && r === this.member.hostLink) this.member.hostLinkClosed();
    }
    r.close();
  }
}
