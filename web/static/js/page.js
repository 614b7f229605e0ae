// @ts-check
// The arena page: pick or name a room, join it, draw the world, move with the keyboard, grab boxes
// with the mouse, and show the session's state. When this tab is the host it runs the arena's host
// logic and Go bots follow it.
//
// window.concord exposes the running peer for tools and the end-to-end tests: status(),
// entities(), entries(). The tests' hooks that forge messages are not part of this page: the test
// runner injects them (web/e2e/debug.mjs).

import { Peer } from './peer.js';
import { randomDevice, randomName, SignalingError, REMOVED_CODES, fetchRooms } from './signaling.js';
import { KIND_AVATAR, KIND_LOCK } from './authority.js';
import { ROOM_ENTITY } from './world.js';
import { Interpolator } from './interpolate.js';
import { takeCredentials } from './urlcred.js';
import { VoiceClient, VoiceMixer, VoiceError, voiceClaim, speaking, DEFAULT_RADIUS } from './voice.js';
import { VoiceKeeper, voiceBases, KEEP_BACKOFF_MIN_MS } from './voicekeep.js';
import { fetchCheckpoint } from './restore.js';
import {
  Game, WIDTH, HEIGHT, GOAL_X, BOX_RADIUS, AVATAR_RADIUS, SCHEMA_AVATAR, SCHEMA_BOX,
  AVATAR_POS, AVATAR_COLOR, BOX_POS, ROOM_SCORE, ROOM_GOALS, parseVec, u32, avatarName,
} from './arena.js';

/**
 * The page's element with id (any: the page knows which kind of element each id is).
 * @param {string} id
 * @returns {any}
 */
const $ = (id) => document.getElementById(id);
// ?token= and ?key= leave the address bar as soon as they are read (urlcred.js).
const { params, token: urlToken, key: urlKey } = takeCredentials(location, history);

/**
 * @param {number} n
 */
function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

// ---------------------------------------------------------------------------------------------
// Lobby

function showLobby() {
  $('lobby').hidden = false;
  const user = localStorage.getItem('concord.user') || randomName();
  $('user-input').value = user;
  $('join-form').addEventListener('submit', (/** @type {SubmitEvent} */ ev) => {
    ev.preventDefault();
    const room = $('room-input').value.trim() || 'arena';
    const name = $('user-input').value.trim() || randomName();
    localStorage.setItem('concord.user', name);
    location.search = `?room=${encodeURIComponent(room)}&user=${encodeURIComponent(name)}`;
  });
  // On a server with a secret the list needs a credential: the page's ?token= (its room only) or
  // ?key= (the admin key, every room).
  const credential = urlToken || urlKey;
  const refresh = async () => {
    try {
      const rooms = await fetchRooms({ credential });
      const ul = $('room-list');
      ul.replaceChildren();
      if (rooms.length === 0) {
        const li = document.createElement('li');
        li.className = 'muted';
        li.textContent = 'none yet';
        ul.append(li);
      }
      for (const r of rooms) {
        const li = document.createElement('li');
        const a = document.createElement('a');
        a.href = `/?room=${encodeURIComponent(r.room)}&user=${encodeURIComponent($('user-input').value.trim())}`;
        a.textContent = r.room;
        li.append(a, ` — ${r.members.length} member${r.members.length === 1 ? '' : 's'}, host #${r.host}, term ${r.term}`);
        ul.append(li);
      }
    } catch (err) {
      if (err instanceof SignalingError && err.code === 'token_required') {
        const li = document.createElement('li');
        li.className = 'muted';
        li.textContent = 'this server has a secret: open this page with ?token=… (concord token --room ROOM --user NAME) to see your room, or ?key=… (the admin key) to see every room';
        $('room-list').replaceChildren(li);
      }
      // Otherwise the server is away; try again.
    }
  };
  refresh();
  setInterval(refresh, 2000);
}

// ---------------------------------------------------------------------------------------------
// Game

/**
 * Joins room as user. With a token (the page's ?token= parameter) the token names the user and
 * may pin the device, so the join names neither unless the URL does: the server takes the
 * token's user and makes up a device.
 * @param {string} room
 * @param {string} user
 * @param {string} token
 */
async function join(room, user, token) {
  $('game').hidden = false;
  $('room-label').textContent = `room ${room}`;
  document.title = `${room} — Concord arena`;
  const game = new Game();
  let device = '';
  if (!token) {
    device = sessionStorage.getItem('concord.device') || randomDevice();
    sessionStorage.setItem('concord.device', device);
  }
  // A kept room that no one hosts comes back with its world if this tab becomes its first host
  // (docs/protocol.md §6 "Kept rooms"); a live room answers null (its host has the world).
  let restore = null;
  try {
    restore = await fetchCheckpoint(room, { credential: token });
  } catch (err) {
    console.warn(`concord: the room's checkpoint was not fetched: ${err instanceof Error ? err.message : String(err)}`);
  }
  const peer = new Peer({
    room, user, device, token, kind: 'browser', app: game, restore,
    log: (level, msg, fields) => {
      const f = fields ? ' ' + JSON.stringify(fields) : '';
      const out = { warn: console.warn, error: console.error, debug: console.debug }[level] || console.info;
      out(`concord: ${msg}${f}`);
    },
  });
  /** @type {any} */ (window).concord = makeAPI(peer, game);
  setConn('connecting', 'chip-warn');
  try {
    await peer.run();
  } catch (err) {
    if (err instanceof SignalingError && err.code === 'token_required') {
      showError(`cannot join: ${err.reason}. Open this page with ?room=${room}&token=… (for a test server: concord token --room ${room} --user NAME). (${err.message})`);
    } else if (err instanceof SignalingError) {
      showError(`cannot join: ${err.reason} (${err.message})`);
    } else {
      showError(`cannot join: ${err instanceof Error ? err.message : String(err)}`);
    }
    setConn('failed', 'chip-bad');
    return;
  }
  window.addEventListener('pagehide', () => peer.stop());
  // A fatal error (a schema table other than the host's, a moderator's kick or ban) ends the
  // session: say so, retry nothing.
  peer.done.then((err) => {
    if (!err) return;
    if (err instanceof SignalingError && REMOVED_CODES.has(err.code)) showError(`${err.reason} (${err.message})`);
    else showError(`cannot play in this room: ${err.message}`);
    setConn('failed', 'chip-bad');
  });
  setupInput(peer, game);
  setupVoice(peer, room, token);
  const canvas = $('arena');
  const draw = () => {
    drawArena(canvas, peer, game);
    requestAnimationFrame(draw);
  };
  requestAnimationFrame(draw);
  setInterval(() => updatePanel(peer), 250);
  updatePanel(peer);
  canvas.focus();
}

/**
 * @param {string} text
 */
function showError(text) {
  const e = $('error');
  e.textContent = text;
  e.hidden = false;
}

/**
 * @param {string} text
 * @param {string} cls
 */
function setConn(text, cls) {
  const c = $('conn');
  c.textContent = text;
  c.className = `chip ${cls}`;
}

/** @type {Record<string, string>} */
const KEYS = {
  KeyW: 'up', ArrowUp: 'up', KeyS: 'down', ArrowDown: 'down',
  KeyA: 'left', ArrowLeft: 'left', KeyD: 'right', ArrowRight: 'right',
};

/**
 * @param {import('./peer.js').Peer} peer
 * @param {import('./arena.js').Game} game
 */
function setupInput(peer, game) {
  const canvas = $('arena');
  const onKey = (/** @type {boolean} */ down) => (/** @type {KeyboardEvent} */ ev) => {
    const k = KEYS[ev.code];
    if (!k || ev.target instanceof HTMLInputElement) return;
    ev.preventDefault();
    game.setKeys({ [k]: down });
  };
  window.addEventListener('keydown', onKey(true));
  window.addEventListener('keyup', onKey(false));
  window.addEventListener('blur', () => game.setKeys({ up: false, down: false, left: false, right: false }));
  const toWorld = (/** @type {PointerEvent} */ ev) => {
    const rect = canvas.getBoundingClientRect();
    return {
      x: Math.round(((ev.clientX - rect.left) / rect.width) * WIDTH),
      y: Math.round(((ev.clientY - rect.top) / rect.height) * HEIGHT),
    };
  };
  canvas.addEventListener('pointerdown', (/** @type {PointerEvent} */ ev) => {
    canvas.focus();
    canvas.setPointerCapture(ev.pointerId);
    peer.do((w) => game.pointerDown(w, toWorld(ev)));
  });
  canvas.addEventListener('pointermove', (/** @type {PointerEvent} */ ev) => game.pointerMove(toWorld(ev)));
  const up = () => peer.do((w) => game.pointerUp(w));
  canvas.addEventListener('pointerup', up);
  canvas.addEventListener('pointercancel', up);
}

/**
 * @param {Uint8Array | undefined} c
 * @param {number} [a]
 */
function rgba(c, a = 1) {
  if (!c || c.length !== 4) return `rgba(120,120,120,${a})`;
  return `rgba(${c[0]},${c[1]},${c[2]},${a})`;
}

// Other players' avatars and boxes are drawn 100 ms behind, between the updates around that moment
// (interpolate.js); this tab's own avatar and a box it holds are drawn as written. A step of 2 m or
// more (a respawn) is drawn at once.
/** @type {Interpolator<number>} */
const interp = new Interpolator({ delay: 100, snapDistance: 2000 });

/**
 * Where to draw entity e whose world position is p: p itself when this tab moves it, else the
 * interpolated position. seen collects the entities drawn this frame.
 * @param {number} e
 * @param {{x: number, y: number}} p
 * @param {boolean} own
 * @param {number} now
 * @param {Set<number>} seen
 */
function drawn(e, p, own, now, seen) {
  seen.add(e);
  interp.push(e, now, [p.x, p.y]);
  if (own) return p;
  const v = interp.at(e, now);
  return v ? { x: v[0], y: v[1] } : p;
}

/**
 * @param {HTMLCanvasElement} canvas
 * @param {import('./peer.js').Peer} peer
 * @param {import('./arena.js').Game} game
 */
function drawArena(canvas, peer, game) {
  const now = performance.now();
  /** @type {Set<number>} */
  const seen = new Set();
  const dpr = window.devicePixelRatio || 1;
  const cssW = canvas.clientWidth || 1000;
  const cssH = Math.round(cssW * HEIGHT / WIDTH);
  if (canvas.width !== Math.round(cssW * dpr) || canvas.height !== Math.round(cssH * dpr)) {
    canvas.width = Math.round(cssW * dpr);
    canvas.height = Math.round(cssH * dpr);
  }
  const ctx = canvas.getContext('2d');
  if (!ctx) return; // never: the canvas is used only for a 2d context
  const s = canvas.width / WIDTH; // device pixels per mm
  const px = (/** @type {number} */ mm) => mm * s;
  const w = peer.world;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = '#fbfbf8';
  ctx.fillRect(0, 0, canvas.width, canvas.height);

  // Grid every metre.
  ctx.strokeStyle = '#eceee8';
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let x = 1000; x < WIDTH; x += 1000) { ctx.moveTo(px(x), 0); ctx.lineTo(px(x), canvas.height); }
  for (let y = 1000; y < HEIGHT; y += 1000) { ctx.moveTo(0, px(y)); ctx.lineTo(canvas.width, px(y)); }
  ctx.stroke();

  // Goal zone.
  ctx.fillStyle = 'rgba(46, 160, 90, 0.10)';
  ctx.fillRect(px(GOAL_X), 0, canvas.width - px(GOAL_X), canvas.height);
  ctx.strokeStyle = '#2ea05a';
  ctx.lineWidth = Math.max(2, px(40));
  ctx.setLineDash([px(300), px(200)]);
  ctx.beginPath();
  ctx.moveTo(px(GOAL_X), 0);
  ctx.lineTo(px(GOAL_X), canvas.height);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.save();
  ctx.translate(px(GOAL_X + 500), canvas.height / 2);
  ctx.rotate(Math.PI / 2);
  ctx.fillStyle = '#2ea05a';
  ctx.font = `600 ${Math.round(px(420))}px system-ui, sans-serif`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  ctx.fillText('GOAL', 0, 0);
  ctx.restore();

  // Boxes.
  const r = px(BOX_RADIUS);
  for (const e of w.entitiesOf(SCHEMA_BOX)) {
    const rec = w.authorityRecord(e);
    const mine = rec.kind === KIND_LOCK && rec.peer === w.self;
    const held = rec.kind === KIND_LOCK;
    const p = drawn(e, parseVec(w.get(e, BOX_POS)), mine, now, seen);
    const x = px(p.x) - r;
    const y = px(p.y) - r;
    ctx.fillStyle = held ? (mine ? '#f3c969' : '#f0d9a8') : '#d9a55b';
    ctx.strokeStyle = held ? '#9a6a12' : '#8a5a1c';
    ctx.lineWidth = Math.max(1.5, px(held ? 70 : 40));
    roundRect(ctx, x, y, 2 * r, 2 * r, px(90));
    ctx.fill();
    ctx.stroke();
    ctx.strokeStyle = 'rgba(138, 90, 28, 0.35)';
    ctx.lineWidth = Math.max(1, px(25));
    ctx.beginPath();
    ctx.moveTo(x + px(120), y + px(120)); ctx.lineTo(x + 2 * r - px(120), y + 2 * r - px(120));
    ctx.moveTo(x + 2 * r - px(120), y + px(120)); ctx.lineTo(x + px(120), y + 2 * r - px(120));
    ctx.stroke();
  }

  // Avatars.
  const ar = px(AVATAR_RADIUS);
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  ctx.font = `500 ${Math.max(11, Math.round(px(330)))}px system-ui, sans-serif`;
  const labels = [];
  for (const e of w.entitiesOf(SCHEMA_AVATAR)) {
    const rec = w.authorityRecord(e);
    const me = rec.kind === KIND_AVATAR && rec.peer === w.self;
    const p = drawn(e, parseVec(w.get(e, AVATAR_POS)), me, now, seen);
    ctx.beginPath();
    ctx.arc(px(p.x), px(p.y), ar, 0, 2 * Math.PI);
    ctx.fillStyle = rgba(w.get(e, AVATAR_COLOR));
    ctx.fill();
    ctx.lineWidth = me ? Math.max(2, px(90)) : Math.max(1, px(40));
    ctx.strokeStyle = me ? '#1d2330' : 'rgba(0,0,0,0.35)';
    ctx.stroke();
    if (voice.state === 'live') {
      if (voice.speakingNow().has(rec.peer)) {
        ctx.beginPath();
        ctx.arc(px(p.x), px(p.y), ar + px(140), 0, 2 * Math.PI);
        ctx.lineWidth = Math.max(2, px(70));
        ctx.strokeStyle = 'rgba(30, 142, 78, 0.8)';
        ctx.stroke();
      }
      if (me && voice.radius > 0) {
        ctx.beginPath();
        ctx.arc(px(p.x), px(p.y), px(voice.radius), 0, 2 * Math.PI);
        ctx.lineWidth = 1;
        ctx.setLineDash([px(150), px(150)]);
        ctx.strokeStyle = 'rgba(47, 111, 222, 0.35)';
        ctx.stroke();
        ctx.setLineDash([]);
      }
    }
    const name = avatarName(w, e).split('/')[0] + (me ? ' (you)' : '') + (rec.peer === w.host ? ' ★ host' : '');
    labels.push({ name, x: px(p.x), y: px(p.y) - ar - px(80), me });
  }
  // Names above the avatars, nudged up so that none covers another.
  const lh = Math.max(11, Math.round(px(330))) * 1.15;
  /** @type {{x: number, y: number, half: number}[]} */
  const placed = [];
  for (const l of labels.sort((a, b) => b.y - a.y)) {
    const half = ctx.measureText(l.name).width / 2 + 2;
    let y = l.y;
    for (let tries = 0; tries < 8; tries++) {
      const hit = placed.find((q) => Math.abs(q.x - l.x) < q.half + half && Math.abs(q.y - y) < lh);
      if (!hit) break;
      y = hit.y - lh;
    }
    placed.push({ x: l.x, y, half });
    ctx.lineWidth = Math.max(2, px(60));
    ctx.strokeStyle = 'rgba(251,251,248,0.9)';
    ctx.strokeText(l.name, l.x, y);
    ctx.fillStyle = l.me ? '#000' : '#1d2330';
    ctx.fillText(l.name, l.x, y);
  }

  interp.retain(seen);

  // Score.
  const score = u32(w.get(ROOM_ENTITY, ROOM_SCORE));
  const goals = u32(w.get(ROOM_ENTITY, ROOM_GOALS));
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillStyle = '#1d2330';
  ctx.font = `700 ${Math.round(px(520))}px system-ui, sans-serif`;
  ctx.fillText(`${score}`, px(350), px(250));
  ctx.font = `500 ${Math.round(px(280))}px system-ui, sans-serif`;
  ctx.fillStyle = '#6b7385';
  ctx.fillText(`score · ${goals} goal${goals === 1 ? '' : 's'}`, px(350), px(820));

  if (!peer.status().synced) {
    ctx.fillStyle = 'rgba(29,35,48,0.55)';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = '#fff';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.font = `600 ${Math.round(px(600))}px system-ui, sans-serif`;
    ctx.fillText(peer.status().state === 'migrating' ? 'host changing…' : 'connecting…', canvas.width / 2, canvas.height / 2);
  }
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number} x
 * @param {number} y
 * @param {number} w
 * @param {number} h
 * @param {number} r
 */
function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}

/**
 * @param {import('./peer.js').Peer} peer
 */
function updatePanel(peer) {
  const st = peer.status();
  /** @type {Record<string, string[]>} */
  const chips = {
    connected: ['connected', 'chip-ok'], hosting: ['connected', 'chip-ok'], migrating: ['migrating', 'chip-warn'],
    connecting: ['connecting', 'chip-warn'], 'no host': ['no host', 'chip-bad'], left: ['left', 'chip-idle'],
    failed: ['failed', 'chip-bad'],
  };
  const chip = chips[st.state] || [st.state, 'chip-idle'];
  /** @type {Record<string, string>} */
  const sigNotes = { closed: ' · signaling lost, reconnecting', refused: ' · signaling refused (playing on)' };
  const sigNote = sigNotes[st.signaling];
  setConn(sigNote && st.state !== 'left' ? chip[0] + sigNote : chip[0], chip[1]);
  // A link to the host that cannot form a pair says why, and what to try (rtc.js pairHint).
  const hint = $('link-hint');
  const showHint = !!st.hint && !st.synced && st.state !== 'left';
  hint.hidden = !showHint;
  if (showHint) hint.textContent = `No network path to the host: ${st.hint}.`;
  const role = $('role');
  role.textContent = st.isHost ? 'you are the host' : st.synced ? 'member' : '';
  role.className = `chip ${st.isHost ? 'chip-host' : 'chip-idle'}`;
  const hostMember = peer.members.get(st.host);
  $('st-self').textContent = `#${st.self} ${st.peerId}`;
  $('st-self').title = st.peerId;
  $('st-host').textContent = st.host ? `#${st.host} ${hostMember ? `${hostMember.peerId} (${hostMember.kind})` : ''}` : 'none';
  $('st-term').textContent = String(st.term);
  $('st-rtt').textContent = st.isHost ? '— (host)' : st.rtt ? `${st.rtt.toFixed(2)} ms` : '…';
  $('st-bytes').textContent = `${fmtBytes(st.bytesIn)} / ${fmtBytes(st.bytesOut)}`;
  $('st-entities').textContent = String(st.entities);
  $('st-clock').textContent = String(st.clock);
  $('st-hash').textContent = st.hash;
  const w = peer.world;
  $('st-score').textContent = `${u32(w.get(ROOM_ENTITY, ROOM_SCORE))} (${u32(w.get(ROOM_ENTITY, ROOM_GOALS))} goals)`;
  const ul = $('members');
  ul.replaceChildren();
  for (const m of [...peer.members.values()].sort((a, b) => a.peerIndex - b.peerIndex)) {
    const li = document.createElement('li');
    const dot = document.createElement('span');
    dot.className = 'dot';
    const av = w.avatarOf(m.peerIndex);
    dot.style.background = av !== undefined ? rgba(w.get(av, AVATAR_COLOR)) : '#ccc';
    const name = document.createElement('span');
    name.className = 'who';
    const [u, d] = String(m.peerId).split('/');
    const b = document.createElement('b');
    b.textContent = u;
    const small = document.createElement('small');
    small.textContent = ` #${m.peerIndex} ${d || ''}`;
    name.append(b, small);
    const tag = document.createElement('span');
    tag.className = 'tag';
    tag.textContent = [m.kind === 'host' ? 'dedicated' : m.kind, m.peerIndex === st.host ? '★ hosting' : '', m.peerIndex === st.self ? 'you' : ''].filter(Boolean).join(' · ');
    li.append(dot, name, tag);
    ul.append(li);
  }
}

// ---------------------------------------------------------------------------------------------
// Voice: one session with the server's forwarder (voice.js), heard through Web Audio at each
// speaker's avatar position. The microphone is asked for once, on "Join voice", and starts muted.
// A lost session is rejoined by a VoiceKeeper (voicekeep.js) over the page's node list, with the
// same microphone and mute state, until its bound.

/** How long a speaking indicator stays lit after the last loud level (levels come at ~5 Hz), ms. */
const SPEAKING_HOLD_MS = 400;

const voice = {
  /** @type {VoiceClient | null} */
  client: null,
  /** @type {VoiceMixer | null} */
  mixer: null,
  /** @type {VoiceKeeper | null} */
  keeper: null,
  state: 'off', // off → joining → live; refused (this page cannot have voice)
  userLeft: false, // the player clicked Leave voice (or the page is going): do not rejoin
  radius: Number(params.get('voiceRadius') ?? DEFAULT_RADIUS),
  /** @type {Map<number, number>} peer index → when it last spoke (performance.now()) */
  spoke: new Map(),
  /** @type {Map<string, number>} peerId → the volume this listener set for it (0..2) */
  volume: new Map(),
  /** @type {Map<string, HTMLLIElement>} peerId → its row in the voice list */
  rows: new Map(),
  /** The peer indexes speaking now. */
  speakingNow() {
    const t = performance.now();
    /** @type {Set<number>} */
    const out = new Set();
    for (const [i, at] of this.spoke) if (t - at < SPEAKING_HOLD_MS) out.add(i);
    return out;
  },
};

/**
 * @param {string} text
 */
function voiceNote(text) {
  $('voice-status').textContent = text;
}

/**
 * Wires the voice panel: Join voice, (un)mute, leave, the speakers' placement every frame.
 * @param {import('./peer.js').Peer} peer
 * @param {string} room
 * @param {string} token
 */
function setupVoice(peer, room, token) {
  const claim = voiceClaim(token);
  if (claim === 'none') {
    voice.state = 'refused';
    $('voice-join').disabled = true;
    voiceNote('Voice is off for you: your token does not allow it in this room.');
    return;
  }
  if (claim === 'listen') voiceNote('Your token lets you listen only: others near you will be heard, you will not.');
  /** peer index of a member by its signaling identity */
  const indexOf = (/** @type {string} */ peerId) => {
    for (const m of peer.members.values()) if (m.peerId === peerId) return m.peerIndex;
    return peerId === peer.peerId ? peer.world.self : 0;
  };
  const join = async () => {
    $('voice-join').disabled = true;
    voice.userLeft = false;
    voice.keeper = null;
    voice.state = 'joining';
    voiceNote('Joining voice…');
    const mixer = new VoiceMixer({ radius: voice.radius });
    voice.mixer = mixer;
    mixer.resume(); // inside the click: browsers start audio only on a user gesture
    const make = (/** @type {boolean} */ listen) => new VoiceClient({
      room, member: peer.peerId, token, listen,
      iceServers: () => (peer.sig && peer.sig.joined && peer.sig.joined.iceServers) || [],
      onTrack: (mid, track) => mixer.attach(mid, track),
      onLevels: (levels) => {
        const t = performance.now();
        for (const [who, l] of levels) if (speaking(l)) voice.spoke.set(indexOf(who), t);
      },
      onClose: (reason) => {
        // The lost session's slots go; whether it is rejoined is the keeper's (onKeep).
        for (const mid of [...mixer.slots.keys()]) mixer.detach(mid);
        if (reason !== 'left') return;
        voice.state = 'off';
        voiceNote('You left voice.');
        stopVoice();
      },
    });
    // Browsers offer the microphone only to a secure page (https://, or http://localhost): on
    // plain http from another address there is none to ask for, so listen.
    const noMic = !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia;
    let client = make(claim === 'listen' || noMic);
    voice.client = client;
    try {
      try {
        await client.join();
        if (noMic && claim !== 'listen') voiceNote('No microphone: browsers allow it only on https:// pages (or http://localhost); you are listening only.');
      } catch (err) {
        // The microphone refused (by the user or the browser): listen anyway.
        if (!(err instanceof DOMException)) throw err;
        client = make(true);
        voice.client = client;
        await client.join();
        voiceNote(`No microphone (${err.name === 'NotAllowedError' ? 'permission refused' : err.message}): you are listening only.`);
      }
    } catch (err) {
      if (err instanceof VoiceError && err.code === 'voice_unavailable') {
        // The room is moving between nodes: the keeper retries it like a lost session.
        const keeper = new VoiceKeeper(client, { urls: voiceBases(peer.servers), onState: onKeep });
        voice.keeper = keeper;
        $('voice-join').hidden = true;
        $('voice-leave').hidden = false;
        keeper.retry(err.reason, KEEP_BACKOFF_MIN_MS);
        return;
      }
      stopVoice();
      if (err instanceof VoiceError && (err.status === 503 || err.status === 403)) {
        voice.state = 'refused';
        voiceNote(`No voice here: ${err.reason}.`);
        return;
      }
      voice.state = 'off';
      voiceNote(`Could not join voice: ${err instanceof VoiceError ? err.reason : err instanceof Error ? err.message : String(err)}.`);
      $('voice-join').disabled = false;
      return;
    }
    voice.state = 'live';
    const keeper = new VoiceKeeper(client, { urls: voiceBases(peer.servers), onState: onKeep });
    voice.keeper = keeper;
    keeper.kept();
    shown(client);
  };
  /**
   * The panel of a live session: the microphone's level, mute, leave.
   * @param {VoiceClient} client
   */
  const shown = (client) => {
    const mixer = voice.mixer;
    if (mixer && client.mic && client.publishing && claim !== 'listen') {
      mixer.watchMic(client.mic);
      voiceNote('In voice, muted: unmute to talk to the players near you.');
      $('voice-mute').hidden = false;
      $('voice-self').hidden = false;
    } else if (claim === 'listen') {
      voiceNote('In voice, listening only (your token does not let you speak).');
    }
    $('voice-join').hidden = true;
    $('voice-leave').hidden = false;
    showMute(client.muted);
  };
  /**
   * What the keeper does with a lost session, told to the player.
   * @param {'live' | 'retrying' | 'gave-up' | 'left'} state
   * @param {string} detail
   * @param {number} waitMs
   */
  const onKeep = (state, detail, waitMs) => {
    const client = voice.client;
    if (!client || voice.userLeft) return;
    if (state === 'retrying') {
      voice.state = 'joining';
      voiceNote(`Voice lost (${detail}); rejoining${waitMs ? ` in ${waitMs / 1000} s` : ''}…`);
    } else if (state === 'live' && voice.state !== 'live') {
      voice.state = 'live';
      if ($('voice-mute').hidden) shown(client);
      voiceNote(client.muted ? 'Back in voice, muted.' : 'Back in voice: the players near you hear you.');
    } else if (state === 'gave-up') {
      voice.state = 'off';
      voiceNote(`Voice ended: ${detail === 'replaced' ? 'this member joined voice from another tab' : detail}.`);
      stopVoice();
    }
  };
  const stopVoice = () => {
    if (voice.mixer) voice.mixer.close();
    voice.mixer = null;
    if (voice.client) voice.client.releaseMic();
    $('voice-join').hidden = false;
    $('voice-join').disabled = voice.state === 'refused';
    $('voice-mute').hidden = true;
    $('voice-self').hidden = true;
    $('voice-leave').hidden = true;
    $('voice-members').replaceChildren();
    voice.rows.clear();
  };
  const showMute = (/** @type {boolean} */ muted) => {
    const b = $('voice-mute');
    b.textContent = muted ? 'Unmute' : 'Mute';
    b.setAttribute('aria-pressed', String(muted));
  };
  $('voice-join').addEventListener('click', join);
  $('voice-mute').addEventListener('click', () => {
    const c = voice.client;
    if (!c) return;
    c.mute(!c.muted);
    showMute(c.muted);
    voiceNote(c.muted ? 'Muted: nobody hears you.' : 'Live: the players near you hear you.');
  });
  const leave = () => {
    voice.userLeft = true;
    const live = voice.state === 'live'; // else no session to close: onClose will not say it
    if (voice.keeper) voice.keeper.stop({ release: true });
    else if (voice.client) voice.client.leave({ release: true });
    if (!live && voice.state !== 'refused') {
      voice.state = 'off';
      voiceNote('You left voice.');
      stopVoice();
    }
  };
  $('voice-leave').addEventListener('click', leave);
  window.addEventListener('pagehide', leave);
  const place = () => {
    if (voice.state === 'live') placeSpeakers(peer, indexOf);
    requestAnimationFrame(place);
  };
  requestAnimationFrame(place);
  setInterval(() => { if (voice.state === 'live') updateVoicePanel(peer); }, 250);
}

/**
 * Moves each slot's panner to its speaker's avatar, relative to this tab's avatar, and marks self
 * speaking from the local microphone.
 * @param {import('./peer.js').Peer} peer
 * @param {(peerId: string) => number} indexOf
 */
function placeSpeakers(peer, indexOf) {
  const { client, mixer } = voice;
  if (!client || !mixer) return;
  const w = peer.world;
  const posOf = (/** @type {number} */ i) => {
    const av = i ? w.avatarOf(i) : undefined;
    return av !== undefined ? parseVec(w.get(av, AVATAR_POS)) : null;
  };
  const me = posOf(w.self);
  for (const [mid, who] of client.table.speakers) {
    if (!who) continue;
    const them = posOf(indexOf(who));
    // The server's radius is not on the wire: a speaker forwarded from clearly beyond the page's
    // (serve runs with a larger --voice-radius, or 0) widens it, so that nobody it forwards is
    // silenced here. A quarter's margin leaves out what the forwarder's view lags behind.
    const d = me && them ? Math.hypot(them.x - me.x, them.y - me.y) : 0;
    if (voice.radius > 0 && d > voice.radius * 1.25) voice.radius = mixer.radius = Math.round(d * 1.1);
    mixer.place(mid, me, them, voice.volume.get(who) ?? 1);
  }
  if (!client.muted && client.publishing && speaking(mixer.micLevel())) voice.spoke.set(w.self, performance.now());
}

/**
 * The voice list: every other member, lit while speaking, with a volume slider; rows persist so
 * that a slider keeps its drag.
 * @param {import('./peer.js').Peer} peer
 */
function updateVoicePanel(peer) {
  const client = voice.client;
  if (!client) return;
  const now = voice.speakingNow();
  $('voice-self').className = `speak${now.has(peer.world.self) ? ' on' : ''}`;
  const heard = new Set(client.table.members());
  const ul = $('voice-members');
  /** @type {Set<string>} */
  const live = new Set();
  for (const m of [...peer.members.values()].sort((a, b) => a.peerIndex - b.peerIndex)) {
    // The dedicated host and the forwarder's own read-only member (concord-voice) never speak.
    if (m.peerIndex === peer.world.self || m.kind === 'host' || String(m.peerId).startsWith('concord-voice/')) continue;
    live.add(m.peerId);
    let li = voice.rows.get(m.peerId);
    if (!li) {
      li = document.createElement('li');
      li.dataset.peer = m.peerId;
      const dot = document.createElement('span');
      dot.className = 'speak';
      const who = document.createElement('span');
      who.className = 'who';
      who.textContent = String(m.peerId).split('/')[0];
      const vol = document.createElement('input');
      vol.type = 'range';
      vol.min = '0';
      vol.max = '200';
      vol.value = String(Math.round((voice.volume.get(m.peerId) ?? 1) * 100));
      vol.title = 'volume';
      vol.setAttribute('aria-label', `volume of ${who.textContent}`);
      vol.addEventListener('input', () => voice.volume.set(m.peerId, Number(vol.value) / 100));
      li.append(dot, who, vol);
      ul.append(li);
      voice.rows.set(m.peerId, li);
    }
    const [dot, who] = /** @type {HTMLElement[]} */ ([...li.children]);
    dot.className = `speak${now.has(m.peerIndex) ? ' on' : ''}`;
    who.classList.toggle('far', !heard.has(m.peerId));
    who.title = heard.has(m.peerId) ? 'in range' : 'out of range: not heard';
  }
  for (const [id, li] of voice.rows) {
    if (live.has(id)) continue;
    li.remove();
    voice.rows.delete(id);
  }
}

// ---------------------------------------------------------------------------------------------
// window.concord: tools and tests

/**
 * @param {import('./peer.js').Peer} peer
 * @param {import('./arena.js').Game} game
 */
function makeAPI(peer, game) {
  const w = peer.world;
  /** @param {number} e a live entity, which always has a schema */
  const schemaID = (e) => {
    const s = w.schemaOf(e);
    if (!s) throw new Error(`page: live entity ${e} has no schema`);
    return s.id;
  };
  return {
    peer, game,
    /** The voice session (null before Join voice), its state and the speaking indicators. */
    voice: () => voice.client,
    voiceView: () => ({
      state: voice.state, note: $('voice-status').textContent, speaking: [...voice.speakingNow()], muted: voice.client ? voice.client.muted : true,
      radius: voice.radius,
      /** Each playing slot's gain now (falloff × the listener's volume for its speaker). */
      gains: Object.fromEntries([...(voice.mixer ? voice.mixer.slots : [])].map(([mid, sl]) => [mid, sl.gain.gain.value])),
    }),
    status: () => peer.status(),
    /** Live entities: {entity, schema, authority: {kind, peer}}. */
    entities: () => w.entities().map((e) => ({ entity: e, schema: schemaID(e), authority: { ...w.authorityRecord(e) } })),
    /** Every LWW entry's key and timestamp: {entity, component, timestamp}. */
    entries: () => {
      /** @type {{entity: number, component: number, timestamp: number}[]} */
      const out = [];
      w.r.range((en) => { out.push({ entity: en.entity >>> 0, component: en.component, timestamp: Number(en.timestamp) }); return true; });
      return out;
    },
  };
}

// ---------------------------------------------------------------------------------------------

const room = params.get('room');
if (room) {
  const token = urlToken;
  // A token names its user: the page names one only when the URL does.
  const user = params.get('user') || (token ? '' : localStorage.getItem('concord.user') || randomName());
  join(room, user, token);
} else {
  showLobby();
}
