// Shared helpers for gen.mjs and bench.mjs: loading the real @dcl/ecs, a seeded PRNG,
// an independent ADR-117 stream parser, the independent CRDT.md reference merge and the
// canonical state JSON.
//
// @dcl/ecs is loaded from its CommonJS build (dist-cjs): its ESM build uses extensionless
// and directory imports that Node cannot resolve without a bundler. It also requires
// '@protobufjs/utf8', 'protobufjs/minimal' and 'long' without declaring them (the
// Decentraland SDK bundles them), so package.json pins them next to @dcl/ecs.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** The package root of @dcl/ecs (Engine, Schemas, components, message writers, EntityUtils…). */
export const ecs = require('@dcl/ecs/dist-cjs')
/** @dcl/ecs's own byte buffer (serialization/ByteBuffer). */
export const { ReadWriteByteBuffer } = require('@dcl/ecs/dist-cjs/serialization/ByteBuffer/index.js')
/** @dcl/ecs's own message reader (serialization/crdt/message readMessage). */
export const { readMessage } = require('@dcl/ecs/dist-cjs/serialization/crdt/message.js')
/** @dcl/ecs's component id hash (crc32(name) + 2048). */
export const { componentNumberFromName } = require('@dcl/ecs/dist-cjs/components/component-number.js')
export const ECS_VERSION = require('@dcl/ecs/package.json').version

// ---------------------------------------------------------------------------------------------
// Seeded PRNG (mulberry32). Nothing in the generator uses Math.random.
export class Rng {
  constructor(seed) {
    this.a = seed >>> 0
  }
  next() {
    this.a = (this.a + 0x6d2b79f5) >>> 0
    let t = this.a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  int(n) {
    return Math.floor(this.next() * n)
  }
  range(lo, hi) {
    return lo + this.int(hi - lo + 1)
  }
  chance(p) {
    return this.next() < p
  }
  pick(arr) {
    return arr[this.int(arr.length)]
  }
  bytes(n) {
    const b = new Uint8Array(n)
    for (let i = 0; i < n; i++) b[i] = this.int(256)
    return b
  }
  shuffle(arr) {
    for (let i = arr.length - 1; i > 0; i--) {
      const j = this.int(i + 1)
      const t = arr[i]
      arr[i] = arr[j]
      arr[j] = t
    }
    return arr
  }
}

export const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')
export const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'))
export const entityNumber = (e) => e & 0xffff
export const entityVersion = (e) => e >>> 16
export const entityId = (n, v) => ((n & 0xffff) | ((v & 0xffff) << 16)) >>> 0

// ---------------------------------------------------------------------------------------------
// Independent stream parser, written from CRDT.md (not from @dcl/ecs). Throws on anything
// malformed; accepts the legacy 12-byte length of type 7 and consumes 16 bytes for it.
export function parseStream(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const u32 = (o) => dv.getUint32(o, true)
  const out = []
  let off = 0
  while (off < bytes.length) {
    if (bytes.length - off < 8) throw new Error(`short header at ${off}`)
    const length = u32(off)
    const type = u32(off + 4)
    const size = type === 7 && length === 12 ? 16 : length
    if (size < 8 || off + size > bytes.length) throw new Error(`bad length ${length} at ${off}`)
    const b = off + 8
    const m = { type, length, entity: 0, component: 0, timestamp: 0, networkId: 0, data: null }
    const need = (n) => {
      if (size !== n) throw new Error(`type ${type}: length ${size} != ${n}`)
    }
    switch (type) {
      case 1:
      case 4: {
        if (size < 24) throw new Error('short put/append')
        m.entity = u32(b)
        m.component = u32(b + 4)
        m.timestamp = u32(b + 8)
        const dl = u32(b + 12)
        need(24 + dl)
        m.data = bytes.slice(b + 16, b + 16 + dl)
        break
      }
      case 5: {
        if (size < 28) throw new Error('short put network')
        m.entity = u32(b)
        m.component = u32(b + 4)
        m.timestamp = u32(b + 8)
        m.networkId = u32(b + 12)
        const dl = u32(b + 16)
        need(28 + dl)
        m.data = bytes.slice(b + 20, b + 20 + dl)
        break
      }
      case 2:
        need(20)
        m.entity = u32(b)
        m.component = u32(b + 4)
        m.timestamp = u32(b + 8)
        break
      case 6:
        need(24)
        m.entity = u32(b)
        m.component = u32(b + 4)
        m.timestamp = u32(b + 8)
        m.networkId = u32(b + 12)
        break
      case 3:
        need(12)
        m.entity = u32(b)
        break
      case 7:
        need(16)
        m.entity = u32(b)
        m.networkId = u32(b + 4)
        break
      default:
        throw new Error(`unknown type ${type}`)
    }
    m.raw = bytes.slice(off, off + size)
    out.push(m)
    off += size
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Value order of CRDT.md: deleted (null) < any bytes; then longer > shorter; then unsigned bytes.
export function compareValue(a, b) {
  if (a === null && b === null) return 0
  if (a === null) return -1
  if (b === null) return 1
  if (a.length !== b.length) return a.length > b.length ? 1 : -1
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i] ? 1 : -1
  return 0
}

export const APPEND_LIMIT = 128

/**
 * The reference merge, written from CRDT.md only. The _NETWORK types merge like their local
 * counterparts on the message's entity field (networkId is not part of the key).
 */
export class RefReplica {
  constructor(appendLimit = APPEND_LIMIT) {
    this.lww = new Map() // "entity:component" -> {entity, component, timestamp, data|null}
    this.deleted = new Map() // number -> highest deleted version
    this.append = new Map() // "entity:component" -> {entity, component, values: Map(hex -> {timestamp, data})}
    this.appendLimit = appendLimit
    // What the merge went through (for coverage reporting only).
    this.stats = { ties: 0, outdated: 0, ignoredDeleted: 0, explicitDeletes: 0, implicitDeletes: 0, purgedRows: 0, maxVersion: 0 }
  }
  isDeleted(e) {
    const d = this.deleted.get(entityNumber(e))
    return d !== undefined && entityVersion(e) <= d
  }
  markDeleted(n, v, implicit = false) {
    const d = this.deleted.get(n)
    if (d !== undefined && d >= v) return
    this.deleted.set(n, v)
    if (implicit) this.stats.implicitDeletes++
    else this.stats.explicitDeletes++
    for (const [k, row] of this.lww)
      if (this.isDeleted(row.entity)) {
        this.lww.delete(k)
        this.stats.purgedRows++
      }
    for (const [k, row] of this.append)
      if (this.isDeleted(row.entity)) {
        this.append.delete(k)
        this.stats.purgedRows++
      }
  }
  apply(m) {
    const e = m.entity >>> 0
    if (this.isDeleted(e)) {
      this.stats.ignoredDeleted++
      return 'ignored'
    }
    const n = entityNumber(e)
    const v = entityVersion(e)
    this.stats.maxVersion = Math.max(this.stats.maxVersion, v)
    if (v > 0 && m.type !== 3 && m.type !== 7) this.markDeleted(n, v - 1, true)
    switch (m.type) {
      case 3:
      case 7:
        this.markDeleted(n, v)
        return 'applied'
      case 1:
      case 5:
        return this.mergeLww(e, m.component, m.timestamp, m.data)
      case 2:
      case 6:
        return this.mergeLww(e, m.component, m.timestamp, null)
      case 4:
        return this.addAppend(e, m.component, m.timestamp, m.data)
      default:
        throw new Error(`unknown type ${m.type}`)
    }
  }
  mergeLww(entity, component, timestamp, data) {
    const k = `${entity}:${component}`
    const cur = this.lww.get(k)
    if (cur === undefined || timestamp > cur.timestamp) {
      this.lww.set(k, { entity, component, timestamp, data })
      return 'applied'
    }
    if (timestamp < cur.timestamp) {
      this.stats.outdated++
      return 'outdated'
    }
    const c = compareValue(data, cur.data)
    if (c === 0) return 'nochange'
    this.stats.ties++
    if (c < 0) return 'outdated'
    this.lww.set(k, { entity, component, timestamp, data })
    return 'applied'
  }
  addAppend(entity, component, timestamp, data) {
    const k = `${entity}:${component}`
    let row = this.append.get(k)
    if (!row) {
      row = { entity, component, values: new Map() }
      this.append.set(k, row)
    }
    const h = hex(data)
    const cur = row.values.get(h)
    if (cur && cur.timestamp >= timestamp) return 'nochange'
    row.values.set(h, { timestamp, data })
    if (row.values.size > this.appendLimit) {
      // Keep the N greatest by (timestamp, value order).
      const sorted = [...row.values.entries()].sort(
        (a, b) => a[1].timestamp - b[1].timestamp || compareValue(a[1].data, b[1].data)
      )
      row.values = new Map(sorted.slice(sorted.length - this.appendLimit))
    }
    return 'applied'
  }
  canonical() {
    return canonicalState(
      [...this.lww.values()],
      this.deleted,
      [...this.append.values()].map((r) => ({ entity: r.entity, component: r.component, values: [...r.values.keys()] }))
    )
  }
}

/** Reference replica after a message list (hex strings or parsed messages), in the given order. */
export function referenceReplica(messages, appendLimit) {
  const r = new RefReplica(appendLimit)
  for (const m of messages) {
    const list = typeof m === 'string' ? parseStream(unhex(m)) : [m]
    for (const x of list) r.apply(x)
  }
  return r
}

/** Reference state of a message list, in the given order. */
export function referenceState(messages, appendLimit) {
  return referenceReplica(messages, appendLimit).canonical()
}

/**
 * Canonical state JSON of CRDT.md. lwwRows: {entity, component, timestamp, data|null};
 * deleted: Map number -> version; appendRows: {entity, component, values: [hex…]}.
 * Rows of deleted entities are left out here, whatever the caller passes.
 */
export function canonicalState(lwwRows, deleted, appendRows) {
  const isDel = (e) => {
    const d = deleted.get(entityNumber(e))
    return d !== undefined && entityVersion(e) <= d
  }
  const byKey = (a, b) => a.entity - b.entity || a.component - b.component
  const lww = lwwRows
    .filter((r) => !isDel(r.entity))
    .sort(byKey)
    .map((r) => ({
      entity: r.entity,
      component: r.component,
      timestamp: r.timestamp,
      deleted: r.data === null,
      data: r.data === null ? null : hex(r.data)
    }))
  const deletedEntities = [...deleted.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([number, version]) => ({ number, version }))
  const append = appendRows
    .filter((r) => !isDel(r.entity) && r.values.length > 0)
    .sort(byKey)
    .map((r) => ({
      entity: r.entity,
      component: r.component,
      values: [...new Set(r.values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    }))
  return { lww, deletedEntities, append }
}

export const stateKey = (s) => JSON.stringify(s)
