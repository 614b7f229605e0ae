// @ts-check
// The chat page: joins ?room= (default chat) as ?user=; the first tab hosts.
import { Peer } from '/concord/js/index.js';
import { Chat, SCHEMA_MEMBER, MEMBER_CURSOR, MEMBER_NAME, encodeCursor, decodeCursor, readLog } from './chat.js';

const q = new URLSearchParams(location.search);
const app = new Chat();
const peer = new Peer({ room: q.get('room') || 'chat', user: q.get('user') || undefined, token: q.get('token') || undefined, app });
const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const input = /** @type {HTMLInputElement} */ ($('text'));
const dec = new TextDecoder();

/** Writes a property of this tab's member entity (its avatar), if it has one yet. @param {number} prop @param {Uint8Array} v */
const setMine = (prop, v) => peer.do((w) => { const me = w.avatarOf(w.self); if (me) w.set(me, prop, v); });

let lastMove = 0;
addEventListener('pointermove', (ev) => {
  if (ev.timeStamp - lastMove < 50) return; // the peer sends at 20 Hz anyway
  lastMove = ev.timeStamp;
  setMine(MEMBER_CURSOR, encodeCursor(1000 * ev.clientX / innerWidth, 1000 * ev.clientY / innerHeight));
});

// "typing…" is an application message to every tab, repeated while typing goes on, "stopped" when
// the line is sent or after a pause; others forget it after TYPING_MS anyway.
let typingTimer = 0;
let typingSent = 0;
input.addEventListener('input', () => {
  if (performance.now() - typingSent > 1000) {
    typingSent = performance.now();
    app.setTyping(peer, true);
  }
  clearTimeout(typingTimer);
  typingTimer = setTimeout(() => { typingSent = 0; app.setTyping(peer, false); }, 2000);
});
$('say').addEventListener('submit', (ev) => {
  ev.preventDefault();
  app.say(peer, input.value);
  input.value = '';
  clearTimeout(typingTimer);
  typingSent = 0;
  app.setTyping(peer, false);
});

/** The room as this tab sees it (also for the example's end-to-end test). */
function view() {
  const w = peer.world;
  const members = w.entitiesOf(SCHEMA_MEMBER).map((e) => ({
    e, mine: w.authority(e) === w.self,
    name: dec.decode(w.get(e, MEMBER_NAME) || new Uint8Array(0)),
    cursor: decodeCursor(w.get(e, MEMBER_CURSOR)),
  }));
  return { members, log: readLog(w), typing: app.typingNames(w) };
}

function render() {
  const v = view();
  $('log').replaceChildren(...v.log.map((l) => {
    const li = document.createElement('li');
    const b = document.createElement('b');
    b.textContent = l.from;
    li.append(b, ': ' + l.text);
    return li;
  }));
  const typing = v.typing;
  $('typing').textContent = typing.length ? `${typing.join(', ')} ${typing.length > 1 ? 'are' : 'is'} typing…` : '';
  $('cursors').replaceChildren(...v.members.filter((m) => !m.mine).map((m) => {
    const d = document.createElement('div');
    d.className = 'cursor';
    d.dataset.name = m.name;
    d.style.left = `${m.cursor.x / 10}%`;
    d.style.top = `${m.cursor.y / 10}%`;
    d.textContent = m.name;
    return d;
  }));
  const st = peer.status();
  $('status').textContent = `${st.state}, ${st.members} here${st.isHost ? ', this tab hosts' : ''}${st.error ? ' — ' + st.error : ''}`;
}

// @ts-ignore: for the console and the end-to-end test
window.chat = { peer, app, view, status: () => peer.status() };
peer.run().then(() => {
  let queued = false;
  peer.onEvent(() => { // world events: redraw once per frame
    if (!queued) requestAnimationFrame(() => { queued = false; render(); });
    queued = true;
  });
  setInterval(render, 500); // and the status line
  render();
}, (err) => { $('status').textContent = `cannot join: ${err.message}`; });
