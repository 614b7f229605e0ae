// Signaling outage and resume (peer/resume.go; docs/protocol.md §5 "Session: signaling outage and
// resume"): the links stay up while the peer redials signaling with the claim of its index, term
// and host, then reconciles with what the server says. These are methods of Peer (see loop.js).

import { SignalingClient, redialWait, nextRedialDelay } from './signaling.js';

/** Peer's signaling and resume methods. */
export class PeerResume {
  /** A signaling client for this peer, with a resume claim or none. */
  signalingClient(resume) {
    const c = new SignalingClient({
      url: this.opts.url, room: this.opts.room, user: this.opts.user, device: this.opts.device,
      kind: this.opts.kind || 'browser', token: this.opts.token, resume, WebSocketImpl: this.opts.WebSocket,
      // Only the current client's events count: a replaced one's late close is ignored.
      onEvent: (ev) => this.step(() => { if (this.sig === c) this.handleSignaling(ev); }),
    });
    return c;
  }

  /**
   * Redials signaling after an unexpected close, with the resume claim of this peer's index, term
   * and host, until it resumes, the server refuses for good, or the peer stops.
   */
  async redial() {
    const w = this.w;
    const claim = {
      peerIndex: w.self, term: w.term, host: w.host, synced: this.held, room: this.opts.room,
    };
    if (this.resumeToken) claim.token = this.resumeToken;
    let delay = this.opts.redialMinMs;
    for (let attempt = 1; !this.stopped; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, redialWait(delay)));
      if (this.stopped) return;
      const c = this.signalingClient(claim);
      try {
        const j = await c.connect();
        if (this.stopped) {
          c.close();
          return;
        }
        this.step(() => this.adopt(c, j, attempt));
        return;
      } catch (err) {
        if (err && err.permanent) {
          this.step(() => {
            this.signalingState = 'refused';
            this.resumeRefused = err.message;
            this.log('error', 'signaling refused to resume this peer; playing on without signaling, state kept', { err: err.message });
          });
          return;
        }
        delay = nextRedialDelay(delay, this.opts.redialMaxMs);
      }
    }
  }

  /** Takes a resumed signaling client and reconciles with what the server says. */
  adopt(c, j, attempts) {
    if (j.self !== this.w.self) {
      c.close();
      this.signalingState = 'refused';
      this.resumeRefused = `resumed as ${j.self}, not ${this.w.self}`;
      return;
    }
    this.sig = c;
    this.signalingState = 'connected';
    this.resumeToken = j.resumeToken || '';
    this.members.clear();
    for (const m of j.members) this.members.set(m.peerIndex, m);
    this.resumes++;
    this.log('info', 'signaling resumed', { attempts, term: j.term, host: j.host, members: j.members.length });
    const hosting = this.host;
    this.setHost(j.term, j.host);
    if (this.host && this.host === hosting) this.host.sweepLater(); // a host that just started scheduled its own
    if (this.host || (this.member && this.member.synced)) this.setSynced();
    this.report();
  }
}
