// What a peer tells about itself (peer/status.go): the status the page and tools read, and the
// replica report it sends signaling every reportMs. These are methods of Peer (see loop.js mixin).

/** Lowercase 16-hex-digit form of a u64 BigInt (the replica hash in reports). */
export function hex16(h) {
  return BigInt.asUintN(64, BigInt(h)).toString(16).padStart(16, '0');
}

/** Peer's status methods. */
export class PeerStatus {
  report() {
    const st = this.status();
    const hostLink = this.member && this.member.hostLink && this.member.hostLink.link;
    if (this.sig && !this.sig.closed) {
      const replica = { term: st.term, clock: st.clock, entities: st.entities, hash: st.hash };
      if (hostLink && hostLink.pair) replica.link = hostLink.pair; // the selected ICE pair's types
      this.sig.report(replica);
    }
    if (hostLink && hostLink.refreshPair) hostLink.refreshPair(); // for the next report
    if (this.member) this.member.ping();
  }

  /** A summary of the peer for the page and tools. */
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
      signaling: this.signalingState, resumes: this.resumes, resumeRefused: this.resumeRefused,
      entities: w.size, clock: w.clock, hash: hex16(w.r.hash()),
      members: this.members.size, links: this.remotes.size, rtt,
      bytesIn: this.count.bytesIn, bytesOut: this.count.bytesOut,
      rejected: this.count.rejected, rejectedRace: this.count.rejectedRace, fenced: this.count.fenced, dropped: this.count.dropped,
      error: this.error ? this.error.message : '',
    };
  }
}
