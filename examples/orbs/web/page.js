// @ts-check
// The orbs page: joins ?room= (default orbs) as ?user=, draws the field, walks where you click.
import { Peer } from '/concord/js/index.js';
import { Orbs, SCHEMA_ORB, SCHEMA_PLAYER, SCHEMA_SCORE, ORB_POS, PLAYER_POS, PLAYER_NAME, SCORE_PLAYER, SCORE_POINTS, REACH, ACTION_CHEER, MSG_SCORED, MSG_CHEER, decodePos } from './orbs.js';

const q = new URLSearchParams(location.search);
const app = new Orbs();
const peer = new Peer({ room: q.get('room') || 'orbs', user: q.get('user') || undefined, token: q.get('token') || undefined, app });
const canvas = /** @type {HTMLCanvasElement} */ (document.getElementById('field'));
const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
const statusEl = /** @type {HTMLElement} */ (document.getElementById('status'));
const scoresEl = /** @type {HTMLElement} */ (document.getElementById('scores'));
const dec = new TextDecoder();

canvas.addEventListener('click', (ev) => {
  const r = canvas.getBoundingClientRect();
  app.target = { x: (ev.clientX - r.left) * canvas.width / r.width, y: (ev.clientY - r.top) * canvas.height / r.height };
});

/** Reads the world for the page (and for the example's end-to-end test). */
function view() {
  const w = peer.world;
  const names = new Map();
  const players = w.entitiesOf(SCHEMA_PLAYER).map((e) => {
    const name = dec.decode(w.get(e, PLAYER_NAME) || new Uint8Array(0));
    names.set(w.authority(e), name);
    return { e, name, pos: decodePos(w.get(e, PLAYER_POS)), mine: w.authority(e) === w.self };
  });
  const orbs = w.entitiesOf(SCHEMA_ORB).map((e) => decodePos(w.get(e, ORB_POS)));
  const scores = w.entitiesOf(SCHEMA_SCORE).map((e) => {
    const b = w.get(e, SCORE_PLAYER) || new Uint8Array(4);
    const p = b.length === 4 ? new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true) : 0;
    const v = w.get(e, SCORE_POINTS) || new Uint8Array(4);
    return { peer: p, name: names.get(p) || `#${p}`, points: v.length === 4 ? new DataView(v.buffer, v.byteOffset, 4).getUint32(0, true) : 0 };
  });
  return { self: w.self, players, orbs, scores };
}

function draw() {
  const v = view();
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = '#f5c542';
  for (const o of v.orbs) { ctx.beginPath(); ctx.arc(o.x, o.y, REACH / 2, 0, 2 * Math.PI); ctx.fill(); }
  for (const p of v.players) {
    ctx.fillStyle = p.mine ? '#4fd18b' : '#6aa7ff';
    ctx.beginPath(); ctx.arc(p.pos.x, p.pos.y, 12, 0, 2 * Math.PI); ctx.fill();
    ctx.fillText(p.name, p.pos.x + 14, p.pos.y - 14);
  }
  scoresEl.replaceChildren(...v.scores.sort((a, b) => b.points - a.points).map((s) => {
    const li = document.createElement('li');
    li.textContent = `${s.name}: ${s.points}`;
    return li;
  }));
  const st = peer.status();
  const last = app.heard[app.heard.length - 1];
  const news = !last ? '' : last.type === MSG_SCORED ? ` — +1 (${last.value})` : last.type === MSG_CHEER ? ` — #${last.value} cheers` : '';
  statusEl.textContent = `${st.state} — you are #${st.self}${st.isHost ? ' (hosting)' : ''}, host #${st.host}${st.error ? ' — ' + st.error : ''}${news}`;
  requestAnimationFrame(draw);
}

// Space cheers: an Action to the host, which tells everyone (an application message).
const cheer = () => peer.do((w) => { w.sendAction(ACTION_CHEER, new Uint8Array(0)); return true; });
addEventListener('keydown', (ev) => { if (ev.key === ' ') cheer(); });

// @ts-ignore: for the console and the end-to-end test
window.game = { peer, app, view, cheer, heard: () => app.heard, status: () => peer.status() };
peer.run().then(() => requestAnimationFrame(draw), (err) => { statusEl.textContent = `cannot join: ${err.message}`; });
