// @ts-check
// When the inspector calls replicas diverged. Replicas of a room in play differ all the time: a
// member's report and the host's are taken at different moments, and updates are in flight
// between them. A difference means something only when it lasts where nothing is in flight:
//
//   - at rest: the member's and the host's reports have not changed (same clock, same hash) for
//     restPolls successive polls, and their hashes differ; or
//   - at the same clock: the two reports carry the same clock and different hashes, in two
//     successive polls.
//
// Only a synced member that reports the host's term is compared. The reports (signaling's
// Report: term, clock, entities, hash) carry no time of their own, so "has not changed" is
// counted in the inspector's polls.

/** Successive unchanged polls that make a replica "at rest". */
export const REST_POLLS = 3;

/** Verdicts of compare. */
export const Verdict = Object.freeze({
  Equal: 'equal', // the member's hash is the host's
  Settling: 'settling', // they differ while the room moves: updates are in flight
  Diverged: 'diverged', // they differ at rest, or at the same clock
  NotCompared: 'not-compared', // no report, not synced, another term, or no host report
});

/**
 * A member of a room as /api/rooms lists it (signaling.MemberInfo), replica: its latest report.
 * @typedef {{peerIndex: number, peerId: string, kind: string, synced: boolean, replica: {term: number, clock: number, entities: number, hash: string} | null}} RoomMember
 */
/**
 * One room of /api/rooms (signaling.RoomInfo).
 * @typedef {{room: string, host: number, term: number, members: RoomMember[]}} RoomInfo
 */

/** Follows the members' reports across polls of /api/rooms and compares them with their host's. */
export class DivergenceTracker {
  constructor({ restPolls = REST_POLLS } = {}) {
    this.restPolls = restPolls;
    this.peers = new Map(); // room/peerIndex → {term, clock, hash, steady, sameClock}
  }

  /**
   * Takes one poll (the /api/rooms answer) and returns, per room name, a Map from peer index to
   * its Verdict (the host itself is Equal when it reports).
   * @param {RoomInfo[]} rooms
   */
  update(rooms) {
    const live = new Set();
    for (const room of rooms) {
      for (const m of room.members) {
        if (!m.replica) continue;
        const key = `${room.room}/${m.peerIndex}`;
        live.add(key);
        const r = m.replica;
        const prev = this.peers.get(key);
        const same = prev && prev.term === r.term && prev.clock === r.clock && prev.hash === r.hash;
        this.peers.set(key, { term: r.term, clock: r.clock, hash: r.hash, steady: same ? prev.steady + 1 : 1, sameClock: prev ? prev.sameClock : 0 });
      }
    }
    for (const key of this.peers.keys()) if (!live.has(key)) this.peers.delete(key);

    const out = new Map();
    for (const room of rooms) {
      const verdicts = new Map();
      out.set(room.room, verdicts);
      const host = room.members.find((m) => m.peerIndex === room.host);
      const h = host && host.replica ? this.peers.get(`${room.room}/${host.peerIndex}`) : undefined;
      for (const m of room.members) {
        const key = `${room.room}/${m.peerIndex}`;
        const p = this.peers.get(key);
        if (!p || !h) {
          verdicts.set(m.peerIndex, Verdict.NotCompared);
          continue;
        }
        if (m.peerIndex === room.host) {
          verdicts.set(m.peerIndex, Verdict.Equal);
          continue;
        }
        if (!m.synced || p.term !== h.term) {
          p.sameClock = 0;
          verdicts.set(m.peerIndex, Verdict.NotCompared);
          continue;
        }
        if (p.hash === h.hash) {
          p.sameClock = 0;
          verdicts.set(m.peerIndex, Verdict.Equal);
          continue;
        }
        p.sameClock = p.clock === h.clock ? p.sameClock + 1 : 0;
        const atRest = p.steady >= this.restPolls && h.steady >= this.restPolls;
        verdicts.set(m.peerIndex, atRest || p.sameClock >= 2 ? Verdict.Diverged : Verdict.Settling);
      }
    }
    return out;
  }
}
