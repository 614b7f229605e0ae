// @ts-check
// The world page (/world.html?world=tiles): a player in the demo world `tiles` (docs/protocol.md
// §11). It joins the world through a WorldClient, walks with the keyboard across region borders,
// places and removes blocks with the mouse (inputs to the region the player is resident in, whose
// host owns the tile), and draws every followed region with an overlay of the region borders, the
// node hosting each region and this tab's role there (tilesview.js).
//
// window.concord exposes the client for tools and the end-to-end tests: status(), players(),
// blocks(), walk(), place(), remove().

import { WorldClient, fetchDirectory } from './worldclient.js';
import { randomDevice, randomName, SignalingError } from './signaling.js';
import { takeCredentials } from './urlcred.js';
import { Interpolator } from './interpolate.js';
import { cellKey, regionAt } from './regions.js';
import * as tiles from './tiles.js';
import { scene, camera, draw } from './tilesview.js';

/**
 * @param {string} id
 * @returns {any}
 */
const $ = (id) => document.getElementById(id);
const { params, token } = takeCredentials(location, history);

const world = params.get('world') || tiles.WORLD;
// A token names its user; otherwise the URL or this browser's remembered name. The device is this
// tab's, kept across reloads, so that a reload is the same player (it comes back where it left).
const user = params.get('user') || (token ? '' : localStorage.getItem('concord.user') || randomName());
const device = sessionStorage.getItem('concord.world.device') || randomDevice();
sessionStorage.setItem('concord.world.device', device);
const sx = params.get('x');
const sy = params.get('y');
const start = sx !== null && sy !== null ? { x: Number(sx) | 0, y: Number(sy) | 0 } : undefined;

const client = new WorldClient({
  world, schemas: tiles.schemas(), avatar: { schema: tiles.SCHEMA_PLAYER, owner: tiles.PLAYER_OWNER },
  user, device, token, start,
  log: (level, msg, fields) => {
    const f = fields ? ' ' + JSON.stringify(fields) : '';
    const out = { warn: console.warn, error: console.error, debug: console.debug }[level] || console.info;
    if (level !== 'debug') out(`concord: ${msg}${f}`);
  },
});

/** @type {import('./regions.js').Directory | null} */
let dir = null;
let kind = 1;
const keys = { up: false, down: false, left: false, right: false };
let lastWalk = '0,0';
/** @type {Interpolator<string>} */
const interp = new Interpolator({ delay: 100, snapDistance: 3000 });

/** @param {string} text */
function say(text) {
  $('say').textContent = text;
}

/** @param {string} text */
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
  $('conn').textContent = text;
  $('conn').className = `chip ${cls}`;
}

/** Sends a walk input when the keys ask for another velocity. */
function walkKeys() {
  const v = tiles.keysVelocity(keys);
  const k = `${v.x},${v.y}`;
  if (k === lastWalk) return;
  // Refused (too many inputs unacknowledged): the next key event tries again.
  if (client.input(tiles.walkInput(v)) > 0) lastWalk = k;
}

/** @type {Record<string, 'up' | 'down' | 'left' | 'right'>} */
const KEYS = {
  KeyW: 'up', ArrowUp: 'up', KeyS: 'down', ArrowDown: 'down',
  KeyA: 'left', ArrowLeft: 'left', KeyD: 'right', ArrowRight: 'right',
};

function setupInput() {
  const canvas = $('world');
  const onKey = (/** @type {boolean} */ down) => (/** @type {KeyboardEvent} */ ev) => {
    if (down && /^Digit[1-7]$/.test(ev.code)) {
      kind = Number(ev.code.slice(5));
      $('st-kind').textContent = String(kind);
      return;
    }
    const k = KEYS[ev.code];
    if (!k) return;
    ev.preventDefault();
    keys[k] = down;
    walkKeys();
  };
  window.addEventListener('keydown', onKey(true));
  window.addEventListener('keyup', onKey(false));
  window.addEventListener('blur', () => {
    keys.up = keys.down = keys.left = keys.right = false;
    walkKeys();
  });
  canvas.addEventListener('contextmenu', (/** @type {MouseEvent} */ ev) => ev.preventDefault());
  canvas.addEventListener('pointerdown', (/** @type {PointerEvent} */ ev) => {
    canvas.focus();
    if (!dir) return;
    const cam = currentCamera(canvas.width);
    const rect = canvas.getBoundingClientRect();
    const p = {
      x: cam.x0 + ((ev.clientX - rect.left) / rect.width) * cam.side,
      y: cam.y0 + ((ev.clientY - rect.top) / rect.height) * cam.side,
    };
    const t = tiles.tileAt(p);
    // The resident region's host places and removes blocks on its own tiles near the player
    // only: say so rather than send an input it drops.
    const me = scene(client, dir).me;
    const owner = regionAt(dir, { x: t.x * tiles.TILE, y: t.y * tiles.TILE });
    const res = client.resident;
    if (!me || !res) return;
    if (!owner || owner.x !== res.x || owner.y !== res.y) {
      say(`That tile is in another region: you change blocks in ${world}.${res.x}.${res.y}, where you are.`);
      return;
    }
    if (!tiles.inReach(me.pos, t)) {
      say(`Too far: blocks within ${tiles.REACH_TILES} tiles of you.`);
      return;
    }
    say('');
    if (ev.button === 2 || ev.shiftKey) client.input(tiles.removeInput(t.x, t.y));
    else if (ev.button === 0) client.input(tiles.placeInput(t.x, t.y, kind));
  });
}

/**
 * The camera of the last frame drawn: clicks land where the player saw them.
 * @type {{x0: number, y0: number, side: number, scale: number} | null}
 */
let lastCam = null;

/** @param {number} px */
function currentCamera(px) {
  if (lastCam) return lastCam;
  const d = /** @type {import('./regions.js').Directory} */ (dir);
  return camera(d, centre(scene(client, d), performance.now()), px, client.view);
}

/**
 * Where the camera looks: this player's avatar as drawn (interpolated, so that the view glides
 * with it), else the middle of the resident region.
 * @param {import('./tilesview.js').Scene} s
 * @param {number} t
 */
function centre(s, t) {
  if (s.me) {
    const v = interp.at(s.me.owner, t);
    return v ? { x: v[0], y: v[1] } : s.me.pos;
  }
  const d = s.dir;
  return client.resident ? { x: (client.resident.x + 0.5) * d.regionSize, y: (client.resident.y + 0.5) * d.regionSize } : null;
}

function frame() {
  const canvas = $('world');
  const dpr = window.devicePixelRatio || 1;
  const css = canvas.clientWidth || 900;
  const px = Math.round(css * dpr);
  if (canvas.width !== px || canvas.height !== px) {
    canvas.width = px;
    canvas.height = px;
  }
  const ctx = canvas.getContext('2d');
  if (ctx && dir) {
    const s = scene(client, dir);
    const t = performance.now();
    /** @type {Set<string>} */
    const seen = new Set();
    for (const p of s.players) {
      seen.add(p.owner);
      interp.push(p.owner, t, [p.pos.x, p.pos.y]);
    }
    interp.retain(seen);
    lastCam = camera(dir, centre(s, t), px, client.view);
    draw(ctx, s, lastCam, px, (p) => {
      const v = interp.at(p.owner, t);
      return v ? { x: v[0], y: v[1] } : p.pos;
    });
  }
  requestAnimationFrame(frame);
}

function updatePanel() {
  if (!dir) return;
  const s = scene(client, dir);
  $('st-self').textContent = client.self || '–';
  $('st-resident').textContent = client.resident ? `${world}.${client.resident.x}.${client.resident.y}` : 'not yet';
  $('where').textContent = client.resident ? `resident in ${world}.${client.resident.x}.${client.resident.y}` : '';
  $('where').className = `chip ${client.resident ? 'chip-host' : 'chip-idle'}`;
  $('st-gen').textContent = String(client.gen);
  $('st-pos').textContent = s.me ? `${(s.me.pos.x / 1000).toFixed(1)} m, ${(s.me.pos.y / 1000).toFixed(1)} m` : '–';
  $('st-crossings').textContent = String(client.crossings);
  $('st-pending').textContent = String(client.queue.size);
  $('st-players').textContent = String(s.players.length);
  const ul = $('regions');
  ul.replaceChildren();
  const rk = client.resident ? cellKey(client.resident) : '';
  for (const r of [...client.regions.values()].sort((a, b) => a.cell.y - b.cell.y || a.cell.x - b.cell.x)) {
    const li = document.createElement('li');
    const entry = dir.regions.find((e) => e.x === r.cell.x && e.y === r.cell.y);
    const who = document.createElement('span');
    who.className = 'who';
    const b = document.createElement('b');
    b.textContent = r.room;
    const small = document.createElement('small');
    small.textContent = entry && entry.node ? ` node ${entry.node}` : '';
    who.append(b, small);
    const tag = document.createElement('span');
    tag.className = 'tag';
    tag.textContent = [r.key === rk ? 'resident' : 'watching', r.state === 'joined' ? '' : r.state].filter(Boolean).join(' · ');
    li.append(who, tag);
    ul.append(li);
  }
  const joined = [...client.regions.values()].filter((r) => r.state === 'joined').length;
  setConn(`${joined}/${client.regions.size} regions`, joined === client.regions.size && joined > 0 ? 'chip-ok' : 'chip-warn');
}

/** window.concord: what tools and the end-to-end tests read and drive. */
function makeAPI() {
  const sc = () => scene(client, /** @type {import('./regions.js').Directory} */ (dir));
  return {
    client,
    status: () => ({
      self: client.self, resident: client.resident, gen: client.gen, crossings: client.crossings, pending: client.queue.size,
      regions: [...client.regions.values()].map((r) => ({ room: r.room, role: r.role, state: r.state })),
    }),
    /** Every player drawn: owner, position, the room whose copy is shown, generation. */
    players: () => (dir ? sc().players : []),
    /** Every player copy of every joined region (before the merge), for checks of the merge. */
    copies: () => {
      const out = [];
      for (const r of client.regions.values()) {
        if (r.state !== 'joined' || !r.peer) continue;
        const w = r.peer.world;
        for (const e of w.entitiesOf(tiles.SCHEMA_PLAYER)) {
          const ob = w.get(e, tiles.PLAYER_OWNER);
          out.push({ room: r.room, entity: e, owner: ob ? new TextDecoder().decode(ob) : '' });
        }
      }
      return out;
    },
    blocks: () => (dir ? sc().blocks : []),
    /**
     * Where the middle of tile (tx, ty) is on the screen (client pixels), for clicks.
     * @param {number} tx
     * @param {number} ty
     */
    tileOnScreen: (tx, ty) => {
      const canvas = $('world');
      const cam = currentCamera(canvas.width);
      const rect = canvas.getBoundingClientRect();
      return {
        x: rect.left + (((tx + 0.5) * tiles.TILE - cam.x0) / cam.side) * rect.width,
        y: rect.top + (((ty + 0.5) * tiles.TILE - cam.y0) / cam.side) * rect.height,
      };
    },
    /** @param {number} vx @param {number} vy */
    walk: (vx, vy) => client.input(tiles.walkInput({ x: vx, y: vy })),
    /** @param {number} tx @param {number} ty @param {number} k */
    place: (tx, ty, k) => client.input(tiles.placeInput(tx, ty, k)),
    /** @param {number} tx @param {number} ty */
    remove: (tx, ty) => client.input(tiles.removeInput(tx, ty)),
  };
}

async function main() {
  $('world-label').textContent = `world ${world}`;
  document.title = `${world} — Concord world`;
  /** @type {any} */ (window).concord = makeAPI();
  setConn('connecting', 'chip-warn');
  try {
    await client.start();
    dir = client.dir;
  } catch (err) {
    const why = err instanceof SignalingError ? `${err.reason} (${err.message})` : err instanceof Error ? err.message : String(err);
    showError(`cannot join world ${world}: ${why}`);
    setConn('failed', 'chip-bad');
    return;
  }
  client.on((ev) => {
    if (ev.kind === 'error') console.warn(`concord: region ${ev.region.x},${ev.region.y}: ${ev.error}`);
  });
  window.addEventListener('pagehide', () => client.stop());
  setupInput();
  // The directory says which node hosts which region: read it again now and then for the overlay.
  setInterval(async () => {
    try {
      dir = await fetchDirectory(world, { credential: token });
    } catch {
      // The server is away for a moment: keep the last directory.
    }
  }, 2000);
  setInterval(updatePanel, 250);
  updatePanel();
  requestAnimationFrame(frame);
  $('world').focus();
}

main();
