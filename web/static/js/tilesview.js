// @ts-check
// What the tiles page draws, apart from the page: scene() turns a world client's merged view and
// the directory into plain data (players, blocks, regions with their role and node), camera()
// picks what the canvas shows, and draw() paints a scene on a 2D context. No DOM here, so that
// web/test/tilesview.test.js can check what a scene holds and what draw() paints.

import { cellKey, regionOrigin } from './regions.js';
import {
  SCHEMA_PLAYER, SCHEMA_BLOCK, PLAYER_POS, PLAYER_COLOR, PLAYER_NAME, PLAYER_OWNER,
  BLOCK_X, BLOCK_Y, BLOCK_KIND, TILE, parseXY, i32,
} from './tiles.js';

/** @typedef {import('./tiles.js').XY} XY */
/** @typedef {import('./regions.js').Directory} Directory */

/**
 * A player as drawn: owner, name, color (RGBA), world position, the room whose copy is shown,
 * its generation, and whether it is this tab's player.
 * @typedef {{owner: string, name: string, color: number[], pos: XY, room: string, gen: number, mine: boolean}} ScenePlayer
 */
/** @typedef {{x: number, y: number, kind: number, room: string, writable: boolean}} SceneBlock */
/**
 * A region of the overlay: its cell, room, hosting node, whether its host runs, and this tab's
 * role there ('resident', 'watching', or '' when it does not follow it).
 * @typedef {{x: number, y: number, room: string, node: string, loaded: boolean, role: string, state: string}} SceneRegion
 */
/**
 * @typedef {object} Scene
 * @property {Directory} dir
 * @property {ScenePlayer[]} players
 * @property {SceneBlock[]} blocks
 * @property {SceneRegion[]} regions
 * @property {ScenePlayer | undefined} me
 * @property {import('./regions.js').Cell | null} resident
 */

const dec = new TextDecoder();

/**
 * The scene of world client c with directory dir (the latest read; its `loaded` and `node` may
 * lag the client's own joins).
 * @param {import('./worldclient.js').WorldClient} c
 * @param {Directory} dir
 * @returns {Scene}
 */
export function scene(c, dir) {
  /** @type {ScenePlayer[]} */
  const players = [];
  /** @type {SceneBlock[]} */
  const blocks = [];
  for (const e of c.entities()) {
    const w = e.world;
    if (e.schema === SCHEMA_PLAYER) {
      const pos = parseXY(w.get(e.entity, PLAYER_POS));
      if (!pos) continue;
      const ob = w.get(e.entity, PLAYER_OWNER);
      const owner = ob ? dec.decode(ob) : '';
      const nb = w.get(e.entity, PLAYER_NAME);
      const cb = w.get(e.entity, PLAYER_COLOR);
      const cr = w.creation(e.entity);
      players.push({
        owner, name: nb ? dec.decode(nb) : owner, color: cb && cb.length === 4 ? [...cb] : [120, 120, 120, 255], pos,
        room: e.region.room, gen: cr && cr.length === 4 ? new DataView(cr.buffer, cr.byteOffset, 4).getUint32(0, true) : 0,
        mine: owner !== '' && owner === c.self,
      });
    } else if (e.schema === SCHEMA_BLOCK) {
      const kb = w.get(e.entity, BLOCK_KIND);
      blocks.push({ x: i32(w.get(e.entity, BLOCK_X)), y: i32(w.get(e.entity, BLOCK_Y)), kind: kb && kb.length === 1 ? kb[0] : 0, room: e.region.room, writable: e.writable });
    }
  }
  const rk = c.resident ? cellKey(c.resident) : '';
  /** @type {SceneRegion[]} */
  const regions = dir.regions.map((r) => {
    const f = c.regions.get(cellKey(r));
    const role = !f ? '' : f.key === rk ? 'resident' : 'watching';
    return { x: r.x, y: r.y, room: r.room, node: r.node, loaded: r.loaded, role, state: f ? f.state : '' };
  });
  return { dir, players, blocks, regions, me: players.find((p) => p.mine), resident: c.resident };
}

/**
 * What the canvas shows: a square of (2·view + 1) regions' side, centred on the player (or on the
 * resident region before the avatar is known), clamped to the world. scale is pixels per mm.
 * @param {Directory} dir
 * @param {XY | null} center world mm
 * @param {number} px the canvas side in pixels
 * @param {number} view
 * @returns {{x0: number, y0: number, side: number, scale: number}}
 */
export function camera(dir, center, px, view) {
  const S = dir.regionSize;
  const side = Math.min((2 * view + 1) * S, Math.max(dir.cols, dir.rows) * S);
  const c = center || { x: dir.cols * S / 2, y: dir.rows * S / 2 };
  const clamp = (/** @type {number} */ v, /** @type {number} */ hi) => Math.max(0, Math.min(Math.max(0, hi - side), v));
  const x0 = clamp(c.x - side / 2, dir.cols * S);
  const y0 = clamp(c.y - side / 2, dir.rows * S);
  return { x0, y0, side, scale: px / side };
}

/** Block colours by kind (1–7). */
export const BLOCK_COLORS = ['#999', '#8a5a1c', '#5b8c3a', '#3a6e8c', '#8c3a5b', '#c9a13b', '#6b6b6b', '#d05a2c'];

/**
 * Paints scene s on ctx (a px × px canvas) as seen through cam; pos(p) gives where to draw each
 * player (interpolated by the page; default its position).
 * @param {CanvasRenderingContext2D} ctx
 * @param {Scene} s
 * @param {{x0: number, y0: number, side: number, scale: number}} cam
 * @param {number} px
 * @param {(p: ScenePlayer) => XY} [pos]
 */
export function draw(ctx, s, cam, px, pos = (p) => p.pos) {
  const d = s.dir;
  const S = d.regionSize;
  const X = (/** @type {number} */ mm) => (mm - cam.x0) * cam.scale;
  const Y = (/** @type {number} */ mm) => (mm - cam.y0) * cam.scale;
  const L = (/** @type {number} */ mm) => mm * cam.scale;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = '#e9ecef';
  ctx.fillRect(0, 0, px, px);

  // Regions: followed ones lit, the resident one lighter still; the rest dim.
  for (const r of s.regions) {
    const o = regionOrigin(d, r);
    if (X(o.x + S) <= 0 || Y(o.y + S) <= 0 || X(o.x) >= px || Y(o.y) >= px) continue;
    ctx.fillStyle = r.role === 'resident' ? '#fbfbf8' : r.role === 'watching' ? '#f1f3ee' : '#dfe3e8';
    ctx.fillRect(X(o.x), Y(o.y), L(S), L(S));
  }
  // Tile grid.
  ctx.strokeStyle = 'rgba(0,0,0,0.06)';
  ctx.lineWidth = 1;
  ctx.beginPath();
  const t0x = Math.floor(cam.x0 / TILE) * TILE;
  const t0y = Math.floor(cam.y0 / TILE) * TILE;
  for (let x = t0x; x <= cam.x0 + cam.side; x += TILE) { ctx.moveTo(X(x), 0); ctx.lineTo(X(x), px); }
  for (let y = t0y; y <= cam.y0 + cam.side; y += TILE) { ctx.moveTo(0, Y(y)); ctx.lineTo(px, Y(y)); }
  ctx.stroke();

  // Blocks.
  for (const b of s.blocks) {
    const x = X(b.x * TILE);
    const y = Y(b.y * TILE);
    if (x + L(TILE) < 0 || y + L(TILE) < 0 || x > px || y > px) continue;
    ctx.fillStyle = BLOCK_COLORS[b.kind] || BLOCK_COLORS[0];
    ctx.fillRect(x + 1, y + 1, L(TILE) - 2, L(TILE) - 2);
  }

  // Region borders and the overlay: room, node, role.
  ctx.strokeStyle = 'rgba(29,35,48,0.55)';
  ctx.lineWidth = 2;
  ctx.setLineDash([6, 4]);
  ctx.beginPath();
  for (let x = 0; x <= d.cols * S; x += S) { ctx.moveTo(X(x), Y(0)); ctx.lineTo(X(x), Y(d.rows * S)); }
  for (let y = 0; y <= d.rows * S; y += S) { ctx.moveTo(X(0), Y(y)); ctx.lineTo(X(d.cols * S), Y(y)); }
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.font = '600 12px system-ui, sans-serif';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  for (const r of s.regions) {
    const o = regionOrigin(d, r);
    // The label goes in the visible part of its region, clipped to it.
    const x0 = Math.max(0, X(o.x));
    const y0 = Math.max(0, Y(o.y));
    const x1 = Math.min(px, X(o.x + S));
    const y1 = Math.min(px, Y(o.y + S));
    if (x1 - x0 < 24 || y1 - y0 < 16) continue;
    const host = r.loaded ? (r.node ? `node ${r.node}` : 'hosted') : 'not loaded';
    const label = `${r.room} · ${host}${r.role ? ` · ${r.role}` : ''}`;
    ctx.save();
    ctx.beginPath();
    ctx.rect(x0, y0, x1 - x0, y1 - y0);
    ctx.clip();
    ctx.fillStyle = r.role === 'resident' ? '#1d2330' : 'rgba(29,35,48,0.6)';
    ctx.fillText(label, x0 + 6, y0 + 6);
    ctx.restore();
  }

  // Players.
  const rad = Math.max(4, L(TILE * 0.35));
  ctx.font = '500 12px system-ui, sans-serif';
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  for (const p of s.players) {
    const q = pos(p);
    const x = X(q.x);
    const y = Y(q.y);
    if (x < -rad || y < -rad || x > px + rad || y > px + rad) continue;
    ctx.beginPath();
    ctx.arc(x, y, rad, 0, 2 * Math.PI);
    ctx.fillStyle = `rgba(${p.color[0]},${p.color[1]},${p.color[2]},1)`;
    ctx.fill();
    ctx.lineWidth = p.mine ? 3 : 1;
    ctx.strokeStyle = p.mine ? '#1d2330' : 'rgba(0,0,0,0.4)';
    ctx.stroke();
    ctx.fillStyle = '#1d2330';
    ctx.fillText(p.name.split('/')[0] + (p.mine ? ' (you)' : ''), x, y - rad - 2);
  }
}
