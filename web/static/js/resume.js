// @ts-check
// Signaling outage and resume (peer/resume.go; docs/protocol.md §5 "Session: signaling outage and
// resume"): the links stay up while the peer redials signaling with the claim of its index, term
// and host, then reconciles with what the server says. These are methods of Peer (see loop.js).

import { SignalingClient, SignalingError, REMOVED_CODES, redialWait, nextRedialDelay, nextServer } from './signaling.js';

/** Peer's signaling and resume methods. */
export class PeerResume {
  /**
   * The join token of the next (re)join: the tokenProvider's, called anew each time (a token
   * may have expired since the last), else opts.token. A provider's failure is a SignalingError
   * with code 'token_provider' (a redial tries again).
   * @param {import('./signaling.js').ResumeClaim | null} resume
   * @returns {Promise<string>}
   * @this {import('./peer.js').Peer}
   */
  async joinToken(resume) {
    const provide = this.opts.tokenProvider;
    if (!provide) return this.opts.token || '';
    let token;
    try {
      token = await provide({ room: this.opts.room, user: this.opts.user || '', device: this.opts.device || '', resume: resume !== null });
    } catch (err) {
      throw new SignalingError('token_provider', String(err instanceof Error ? err.message : err), { cause: err });
    }
    if (typeof token !== 'string') throw new SignalingError('token_provider', `the token provider returned ${typeof token}, not a string`);
    return token;
  }

  /**
   * The first join: through the first node of the server list that takes it, each tried once in
   * order; a refusal every node would give alike (err.permanent) ends the search. Sets sig and
   * server.
   * @this {import('./peer.js').Peer}
   * @returns {Promise<import('./signaling.js').SignalingEvent>}
   */
  async joinFirst() {
    let last;
    for (let i = 0; i < this.servers.length; i++) {
      this.sig = this.signalingClient(null, await this.joinToken(null), i);
      try {
        const j = await this.sig.connect();
        this.server = i;
        return j;
      } catch (err) {
        if (this.servers.length === 1 || (err && err.permanent)) throw err;
        this.log('warn', 'signaling node unreachable; trying the next', { server: this.servers[i], err: String(err && err.message) });
        last = err;
      }
    }
    throw last;
  }

  /**
   * A signaling client for this peer to the server at index i of the list, with a resume claim or
   * none, joining with token.
   * @this {import('./peer.js').Peer}
   * @param {import('./signaling.js').ResumeClaim | null} resume
   * @param {string} token
   * @param {number} i
   * @returns {SignalingClient}
   */
  signalingClient(resume, token, i) {
    const c = new SignalingClient({
      url: this.servers[i] || undefined, room: this.opts.room, user: this.opts.user, device: this.opts.device,
      kind: this.opts.kind || 'browser', token, resume, WebSocketImpl: this.opts.WebSocket,
      // Only the current client's events count: a replaced one's late close is ignored.
      onEvent: (ev) => this.step(() => { if (this.sig === c) this.handleSignaling(ev); }),
    });
    return c;
  }

  /**
   * Redials signaling after an unexpected close, with the resume claim of this peer's index, term
   * and host, until it resumes, the server refuses for good, or the peer stops.
   * @this {import('./peer.js').Peer}
   */
  async redial() {
    const w = this.w;
    /**
     * @type {import('./signaling.js').ResumeClaim}
     */
    const claim = {
      peerIndex: w.self, term: w.term, host: w.host, synced: this.held, room: this.opts.room,
    };
    if (this.resumeToken) claim.token = this.resumeToken;
    let delay = this.opts.redialMinMs;
    const last = this.server;
    for (let attempt = 1; !this.stopped; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, redialWait(delay)));
      if (this.stopped) return;
      // Each attempt goes to the next node of the list: the one just lost may be dead.
      const i = nextServer(last, attempt, this.servers.length);
      try {
        const token = await this.joinToken(claim);
        if (this.stopped) return;
        const c = this.signalingClient(claim, token, i);
        const j = await c.connect();
        if (this.stopped) {
          c.close();
          return;
        }
        this.step(() => { this.server = i; this.adopt(c, j, attempt); });
        return;
      } catch (err) {
        if (err instanceof SignalingError && REMOVED_CODES.has(err.code)) {
          this.step(() => this.fail(err)); // banned while away: the session ends
          return;
        }
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

  /**
   * Takes a resumed signaling client and reconciles with what the server says.
   * @this {import('./peer.js').Peer}
   * @param {SignalingClient} c
   * @param {import('./signaling.js').SignalingEvent} j
   * @param {number} attempts
   */
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
