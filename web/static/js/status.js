// @ts-check
// What a peer tells about itself (peer/status.go): the status the page and tools read, and the
// replica report it sends signaling every reportMs. These are methods of Peer (see loop.js mixin).

/**
 * Lowercase 16-hex-digit form of a u64 BigInt (the replica hash in reports).
 * @param {bigint | number} h
 * @returns {string}
 */
export function hex16(h) {
  return BigInt.asUintN(64, BigInt(h)).toString(16).padStart(16, '0');
}

/**
 * What Peer.status() tells: the peer's index, identity, host and term; state ('connecting',
 * 'connected', 'hosting', 'migrating', 'no host', 'left' or 'failed'); signaling ('connecting',
 * 'connected', 'closed' or 'refused', with resumeRefused saying why); the replica's size, clock and
 * hash; traffic and refusal counters; and error, the message of the error that ended the session.
 * @typedef {object} PeerStatusInfo
 * @property {number} self
 * @property {string} peerId
 * @property {number} host
 * @property {number} term
 * @property {boolean} isHost
 * @property {boolean} synced
 * @property {string} state
 * @property {string} signaling
 * @property {string} server
 * @property {number} resumes
 * @property {string} resumeRefused
 * @property {number} entities
 * @property {number} clock
 * @property {string} hash
 * @property {number} members
 * @property {number} links
 * @property {number} rtt
 * @property {number} bytesIn
 * @property {number} bytesOut
 * @property {number} rejected
 * @property {number} rejectedRace
 * @property {number} refused inputs refused by the limits (docs/protocol.md §5, "Limits")
 * @property {Record<string, number>} refusedBy the part of refused whose reason is named, by Go's
 *   peer.Refusal label: relay_budget, relay_inbound, relay_backlog, append_sets, member_world_bytes, world_bytes
 * @property {number} worldBytes the replica's size as an ADR-117 message stream (a checkpoint's bytes)
 * @property {number} offenders members whose link this host closed for refused inputs
 * @property {number} fenced
 * @property {number} dropped
 * @property {number} deltas values taken as differences from acknowledged ones (a Go host's)
 * @property {number} deltaMissed values dropped for want of the value they were a difference from
 * @property {string} error
 * @property {string} hint why the link to the host cannot form a candidate pair and what to try, or ''
 */

/** Peer's status methods. */
export class PeerStatus {
  /** @this {import('./peer.js').Peer} */
  report() {
    const st = this.status();
    const hostLink = this.member && this.member.hostLink && this.member.hostLink.link;
    if (this.sig && !this.sig.closed) {
      /** @type {{term: number, clock: number, entities: number, hash: string, link?: {local: string, remote: string}}} */
      const replica = { term: st.term, clock: st.clock, entities: st.entities, hash: st.hash };
      if (hostLink && 'pair' in hostLink && hostLink.pair) replica.link = hostLink.pair; // the selected ICE pair's types
      this.sig.report(replica);
    }
    if (hostLink && 'refreshPair' in hostLink) hostLink.refreshPair(); // a WebRTC Link, not a MemoryLink // for the next report
    if (this.member) this.member.ping();
  }

  /**
   * A summary of the peer for the page and tools.
   * @this {import('./peer.js').Peer}
   * @returns {PeerStatusInfo}
   */
  status() {
    const w = this.w;
    let rtt = 0;
    if (this.member && this.member.hostLink) rtt = this.member.hostLink.rtt;
    const synced = !!this.host || !!(this.member && this.member.synced);
    let state = 'connecting';
    if (this.error) state = 'failed';
    else if (this.stopped) state = 'left';
    else if (this.host) state = 'hosting';
    else if (this.member && this.member.synced) state = 'connected';
    else if (this.member && this.member.wasSynced) state = 'migrating';
    else if (w.host === 0 && w.self) state = 'no host';
    return {
      self: w.self, peerId: this.peerId, host: w.host, term: w.term, isHost: !!this.host, synced, state,
      signaling: this.signalingState, server: this.servers[this.server], resumes: this.resumes, resumeRefused: this.resumeRefused,
      entities: w.size, clock: w.clock, hash: hex16(w.r.hash()),
      members: this.members.size, links: this.remotes.size, rtt,
      bytesIn: this.count.bytesIn, bytesOut: this.count.bytesOut,
      rejected: this.count.rejected, rejectedRace: this.count.rejectedRace,
      refused: this.count.refused, refusedBy: { ...this.count.refusedBy }, worldBytes: w.r.bytes, offenders: this.count.offenders, fenced: this.count.fenced, dropped: this.count.dropped,
      deltas: this.count.deltas, deltaMissed: this.count.deltaMissed,
      error: this.error ? this.error.message : '',
      hint: this.linkHint,
    };
  }
}
