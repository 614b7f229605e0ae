// Restoring a kept room in the browser (docs/protocol.md §6 "Kept rooms"): a room the server
// keeps (concord serve --keep-rooms all) is checkpointed by a server-side follower; when every
// tab has left and the room opens again, its first host merges the checkpoint into its world
// before the game's hostStart, as Go's durable.App does for a Go host.
import { readStream } from './crdt.js';

/**
 * A room's checkpoint: an ADR-117 message stream and the Lamport clock stored with it.
 * @typedef {object} Checkpoint
 * @property {Uint8Array} data
 * @property {number} clock
 */

/**
 * Fetches room's checkpoint from the server (GET /api/rooms/{room}/checkpoint), for the Peer
 * option restore. It answers null when the room has none, or has a host (the world lives there:
 * this tab syncs from it), or the server keeps no rooms (204). credential is the page's join token
 * ('' on an open server). Other failures throw: the caller decides whether to open the room
 * without its world (better not: the follower then refuses to checkpoint it).
 * @param {string} room
 * @param {{credential?: string, base?: string, fetch?: typeof fetch}} [opts]
 * @returns {Promise<Checkpoint | null>}
 */
export async function fetchCheckpoint(room, opts = {}) {
  const f = opts.fetch || fetch;
  /** @type {Record<string, string>} */
  const headers = {};
  if (opts.credential) headers.Authorization = `Bearer ${opts.credential}`;
  const res = await f(`${opts.base || ''}/api/rooms/${encodeURIComponent(room)}/checkpoint`, { cache: 'no-store', headers });
  // 204: nothing to restore (Concord-Checkpoint: none, or live: the room has a host); 404: a
  // server that predates kept rooms.
  if (res.status === 204 || res.status === 404) return null;
  if (!res.ok) throw new Error(`GET checkpoint of ${room}: HTTP ${res.status}`);
  const clock = Number(res.headers.get('Concord-Clock'));
  if (!Number.isInteger(clock) || clock < 0 || clock > 0xffffffff) throw new Error(`GET checkpoint of ${room}: bad Concord-Clock`);
  return { data: new Uint8Array(await res.arrayBuffer()), clock };
}

/**
 * Merges a checkpoint into w (the host's world, before the game's hostStart), as remote messages
 * from peer 0, so that the index and the events follow; then raises the clock to the stored one,
 * so the host's next writes are above everything the checkpointing follower saw. The stream is
 * decoded whole first: a malformed one throws and merges nothing.
 * @param {import('./world.js').World} w
 * @param {Checkpoint} c
 * @returns {number} the messages merged
 */
export function mergeCheckpoint(w, c) {
  const msgs = [...readStream(c.data)];
  for (const m of msgs) w.mergeRemote(m, 0);
  w.closeBatch();
  w.resumeAllocation();
  w.r.observeClock(c.clock);
  return msgs.length;
}
