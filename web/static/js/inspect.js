// @ts-check
// The room inspector (/inspect): polls /api/rooms every second and shows every room's members,
// host and term, each member's replica report with the replicas that diverged from the host's
// highlighted (at rest or at the same clock: divergence.js; hashes that differ while the room
// moves are only "settling"), and a small chart per member of its Lamport clock's growth (writes it has seen per
// second) over the last minute. /api/rooms carries no per-member byte counts; the clock rate is the
// traffic signal available without changing signaling.
//
// "Observe" joins a room as a member (kind host, so the host spawns no avatar for it) and lists the
// entities of its replica.

import { Peer } from './peer.js';
import { Game, SCHEMA_AVATAR, SCHEMA_BOX, SCHEMA_ROOM, parseVec, parseVel, avatarName, u32 } from './arena.js';
import { KIND_AVATAR, KIND_LOCK } from './authority.js';
import { DivergenceTracker, Verdict } from './divergence.js';
import { fetchRooms, moderate, SignalingError } from './signaling.js';
import { takeCredentials } from './urlcred.js';

/**
 * The page's element with id (any: the page knows which kind of element each id is).
 * @param {string} id
 * @returns {any}
 */
const $ = (id) => document.getElementById(id);
const HISTORY = 60;
/** @type {Map<string, {t: number, clock: number}[]>} room/peerIndex → its reports */
const history = new Map();
/** @type {import('./peer.js').Peer | null} */
let observer = null;
const divergence = new DivergenceTracker();
// On a server with a secret: ?key= (the admin key: every room) or ?token= (a join token: its room,
// and the token "Observe" joins with).
// Both leave the address bar as soon as they are read (urlcred.js).
const { token, key: adminKey } = takeCredentials(location, window.history);
const credential = adminKey || token;

/**
 * @param {string} tag
 * @param {object} [props]
 * @param {...(Node | string)} children
 */
function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...children);
  return e;
}

async function poll() {
  /** @type {import('./divergence.js').RoomInfo[]} */
  let rooms;
  try {
    rooms = await fetchRooms({ credential });
    $('poll').textContent = `updated ${new Date().toLocaleTimeString()}`;
    $('poll').className = 'chip chip-ok';
  } catch (err) {
    const refused = err instanceof SignalingError && err.code === 'token_required';
    $('poll').textContent = refused
      ? 'this server has a secret: open /inspect?key=… (the admin key) or ?token=… (one room)'
      : 'server unreachable';
    $('poll').className = 'chip chip-bad';
    return;
  }
  const t = Date.now();
  for (const room of rooms) {
    for (const m of room.members) {
      if (!m.replica) continue;
      const key = `${room.room}/${m.peerIndex}`;
      const h = history.get(key) || [];
      h.push({ t, clock: m.replica.clock });
      while (h.length > HISTORY + 1) h.shift();
      history.set(key, h);
    }
  }
  render(rooms, divergence.update(rooms));
  const sel = $('observe-room');
  const cur = sel.value;
  const names = rooms.map((r) => r.room);
  if (sel.options.length !== names.length || [...sel.options].some((o, i) => o.value !== names[i])) {
    sel.replaceChildren(...names.map((n) => el('option', { value: n, textContent: n })));
    if (names.includes(cur)) sel.value = cur;
  }
}

/**
 * @param {import('./divergence.js').RoomInfo[]} rooms
 * @param {Map<string, Map<number, string>>} verdicts
 */
function render(rooms, verdicts) {
  const root = $('rooms');
  root.replaceChildren();
  if (rooms.length === 0) {
    root.append(el('p', { className: 'muted', textContent: 'No open rooms.' }));
    return;
  }
  for (const room of rooms) {
    const host = room.members.find((m) => m.peerIndex === room.host);
    const verdict = verdicts.get(room.room) || new Map();
    const count = (/** @type {string} */ v) => room.members.filter((m) => verdict.get(m.peerIndex) === v).length;
    const diverged = count(Verdict.Diverged);
    const settling = count(Verdict.Settling);
    let badge;
    if (!host || !host.replica) badge = el('span', { className: 'badge idle', textContent: 'no host report' });
    else if (diverged > 0) badge = el('span', { className: 'badge bad', textContent: `${diverged} diverged` });
    else if (settling > 0) badge = el('span', { className: 'badge idle', textContent: `in play: ${settling} catching up` });
    else badge = el('span', { className: 'badge ok', textContent: 'all synced replicas equal' });
    const table = el('table');
    const heads = ['peer', 'identity', 'kind', 'synced', 'term', 'clock', 'entities', 'replica hash', 'writes/s (60 s)'];
    if (adminKey) heads.push('moderate');
    table.append(el('tr', {}, ...heads.map((h) => el('th', { textContent: h }))));
    for (const m of room.members) {
      const r = m.replica;
      const tr = el('tr');
      if (m.peerIndex === room.host) tr.className = 'is-host';
      if (verdict.get(m.peerIndex) === Verdict.Diverged) tr.className = 'diverged';
      const spark = el('canvas', { className: 'spark', width: 180, height: 28 });
      drawSpark(/** @type {HTMLCanvasElement} */ (spark), history.get(`${room.room}/${m.peerIndex}`) || []);
      tr.append(
        el('td', { textContent: `#${m.peerIndex}${m.peerIndex === room.host ? ' ★' : ''}` }),
        el('td', { textContent: m.peerId }),
        el('td', { textContent: m.kind }),
        el('td', { textContent: m.synced ? 'yes' : 'no' }),
        el('td', { textContent: r ? String(r.term) : '–' }),
        el('td', { textContent: r ? String(r.clock) : '–' }),
        el('td', { textContent: r ? String(r.entities) : '–' }),
        el('td', { className: 'hash mono', textContent: r ? r.hash : '–' }),
        el('td', {}, spark),
      );
      if (adminKey) tr.append(el('td', {}, ...moderationButtons(room.room, m.peerId)));
      table.append(tr);
    }
    root.append(el('div', { className: 'room' },
      el('h2', { textContent: room.room }),
      el('div', { className: 'meta' }, `host #${room.host}${host ? ` (${host.peerId}, ${host.kind})` : ''} · term ${room.term} · ${room.members.length} member${room.members.length === 1 ? '' : 's'} · `, badge),
      table));
  }
}

/**
 * The kick and ban buttons of a member, shown only with ?key= (the admin key): kick removes this
 * identity, ban keeps its user (every device) out for the time asked, or for good.
 * @param {string} room
 * @param {string} peerId
 * @returns {HTMLElement[]}
 */
function moderationButtons(room, peerId) {
  const user = peerId.split('/')[0];
  const act = async (/** @type {'kick' | 'ban'} */ op, /** @type {object} */ body, /** @type {string} */ what) => {
    try {
      const res = await moderate(op, room, body, { credential: adminKey });
      $('poll').textContent = `${what}: removed ${res.kicked.length}`;
      $('poll').className = 'chip chip-ok';
    } catch (err) {
      $('poll').textContent = `${what} refused: ${err.message}`;
      $('poll').className = 'chip chip-bad';
    }
  };
  const kick = el('button', { type: 'button', textContent: 'kick', title: `remove ${peerId} from ${room}` });
  kick.addEventListener('click', () => {
    if (confirm(`Kick ${peerId} from ${room}?`)) act('kick', { peerId }, `kick ${peerId}`);
  });
  const ban = el('button', { type: 'button', textContent: 'ban', title: `keep ${user} (every device) out of ${room}` });
  ban.addEventListener('click', () => {
    const d = prompt(`Ban ${user} from ${room} for how long? (e.g. 30m, 24h; empty: for good)`, '1h');
    if (d === null) return;
    /** @type {{user: string, for?: string}} */
    const body = { user };
    if (d.trim()) body.for = d.trim();
    act('ban', body, `ban ${user}`);
  });
  return [kick, ban];
}

/**
 * Draws the clock growth per second from successive reports.
 * @param {HTMLCanvasElement} canvas
 * @param {{t: number, clock: number}[]} h
 */
function drawSpark(canvas, h) {
  const ctx = canvas.getContext('2d');
  if (!ctx) return; // never: the canvas is used only for a 2d context
  const W = canvas.width;
  const H = canvas.height;
  ctx.clearRect(0, 0, W, H);
  const rates = [];
  for (let i = 1; i < h.length; i++) {
    const dt = (h[i].t - h[i - 1].t) / 1000;
    rates.push(dt > 0 ? Math.max(0, h[i].clock - h[i - 1].clock) / dt : 0);
  }
  ctx.fillStyle = '#eef0f4';
  ctx.fillRect(0, H - 1, W, 1);
  if (rates.length === 0) return;
  const max = Math.max(1, ...rates);
  const step = W / HISTORY;
  ctx.fillStyle = '#2f6fde';
  rates.forEach((r, i) => {
    const bh = Math.max(1, (r / max) * (H - 10));
    ctx.fillRect(W - (rates.length - i) * step, H - bh, Math.max(1, step - 1), bh);
  });
  ctx.fillStyle = '#6b7385';
  ctx.font = '10px system-ui, sans-serif';
  ctx.textBaseline = 'top';
  ctx.fillText(`${Math.round(rates[rates.length - 1])}/s (max ${Math.round(max)})`, 2, 0);
}

// ---------------------------------------------------------------------------------------------
// Observer: a member whose replica lists the entities.

$('observe').addEventListener('click', async () => {
  const room = $('observe-room').value;
  if (!room) return;
  if (observer) observer.stop();
  $('observe-state').textContent = `joining ${room}…`;
  observer = new Peer({ room, user: token ? '' : 'inspector', token, kind: 'host', app: new Game(), log: () => {} });
  try {
    await observer.run();
  } catch (err) {
    $('observe-state').textContent = `cannot join: ${err.message}`;
    observer = null;
  }
});

function renderEntities() {
  const table = $('entities');
  if (!observer) return;
  const st = observer.status();
  $('observe-state').textContent = `#${st.self} · ${st.state} · term ${st.term} · host #${st.host} · ${st.entities} entities · hash ${st.hash}`;
  const w = observer.world;
  table.replaceChildren(el('tr', {}, ...['entity', 'number/version', 'schema', 'authority', 'state'].map((h) => el('th', { textContent: h }))));
  for (const e of w.entities()) {
    const s = w.schemaOf(e);
    if (!s) continue; // never: every live entity has a schema
    const rec = w.authorityRecord(e);
    const auth = rec.kind === KIND_AVATAR ? `avatar of #${rec.peer}` : rec.kind === KIND_LOCK ? `locked by #${rec.peer}` : 'host';
    let state = '';
    if (s.id === SCHEMA_AVATAR) {
      const p = parseVec(w.get(e, 0));
      state = `${avatarName(w, e)} at (${p.x}, ${p.y})`;
    } else if (s.id === SCHEMA_BOX) {
      const p = parseVec(w.get(e, 0));
      const v = parseVel(w.get(e, 1));
      state = `at (${p.x}, ${p.y}) moving (${v.x}, ${v.y})`;
    } else if (s.id === SCHEMA_ROOM) {
      state = `score ${u32(w.get(e, 0))}, ${u32(w.get(e, 1))} goals`;
    }
    table.append(el('tr', {},
      el('td', { className: 'mono', textContent: String(e) }),
      el('td', { textContent: `${e & 0xffff}/v${e >>> 16}` }),
      el('td', { textContent: s.name }),
      el('td', { textContent: auth }),
      el('td', { textContent: state })));
  }
}

poll();
setInterval(poll, 1000);
setInterval(renderEntities, 500);
window.addEventListener('pagehide', () => { if (observer) observer.stop(); });
