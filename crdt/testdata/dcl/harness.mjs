// Real @dcl/ecs engines wired through test transports, and read-back of their CRDT state.
import {
  ecs,
  ReadWriteByteBuffer,
  readMessage,
  parseStream,
  hex,
  entityNumber,
  entityVersion,
  entityId,
  canonicalState
} from './lib.mjs'

const { Engine, Schemas, components, EntityState, CrdtMessageType } = ecs

/**
 * A raw-bytes schema: the component value IS its serialization (any length, even empty).
 * It lets scenarios hit every branch of the equal-timestamp tie-break (empty vs deleted,
 * longer vs shorter, byte order) through @dcl/ecs's own updateFromCrdt.
 */
export const BlobSchema = {
  serialize(value, builder) {
    builder.writeBuffer(value, false)
  },
  deserialize(reader) {
    const n = reader.remainingBytes()
    const off = reader.incrementReadOffset(n)
    return reader.buffer().slice(off, off + n)
  },
  create() {
    return new Uint8Array(0)
  },
  jsonSchema: { type: 'object', properties: {}, serializationType: 'unknown' }
}

export const ChatSchema = Schemas.Map({ t: Schemas.Int, text: Schemas.String })

/** Serialize a value with a @dcl/ecs schema. */
export function ser(schema, value) {
  const b = new ReadWriteByteBuffer()
  schema.serialize(value, b)
  return b.toCopiedBinary()
}

/**
 * One @dcl/ecs Engine() with the components every scenario uses, all defined through the
 * engine's own API:
 *   Transform  core::Transform (id 1, 44 bytes, @dcl/ecs's TransformSchema)
 *   Name       core-schema::Name (id 3864921337) {value: String}
 *   Health     concord::Health (id 2955260751) {hp: Int, shield: Float}
 *   Blob       concord::Blob (id 580453176) raw bytes
 *   Chat       concord::Chat (id 3150434063) grow-only value set {t: Int, text: String}
 * A system runs the actor's pending local changes inside engine.update(), after
 * receiveMessages() and before sendMessages(), which is where scene code runs.
 */
export function makeActor(index, opts = {}) {
  const engine = Engine()
  const actor = {
    index,
    engine,
    Transform: components.Transform(engine),
    Name: components.Name(engine),
    Health: engine.defineComponent('concord::Health', { hp: Schemas.Int, shield: Schemas.Float }),
    Blob: engine.defineComponentFromSchema('concord::Blob', BlobSchema),
    Chat: engine.defineValueSetComponentFromSchema('concord::Chat', ChatSchema, {
      maxElements: opts.maxElements ?? 1000,
      timestampFunction: (v) => v.t
    }),
    transports: [],
    pending: []
  }
  engine.addSystem(function concordActions() {
    const list = actor.pending
    actor.pending = []
    for (const f of list) f(actor)
  })
  return actor
}

/** Live (used) entities of an actor, numbers >= 512, sorted. */
export function liveEntities(actor) {
  return [...actor.engine.entityContainer.getExistingEntities()]
    .filter((e) => entityNumber(e) >= 512)
    .sort((a, b) => a - b)
}

/**
 * Delivery network between actors: every packet an engine's transport sends is recorded
 * (each message's bytes, first-seen order) and delivered later, possibly delayed, reordered,
 * split into single messages and duplicated.
 */
export class Net {
  constructor(rng, cfg) {
    this.rng = rng
    this.cfg = { maxDelay: 0, dupP: 0, splitP: 0, ...cfg }
    this.inflight = []
    this.produced = new Map() // hex -> index of the engine that sent it first, insertion order
    this.sentThisTick = 0
    this.delivered = 0
    this.seq = 0
  }
  record(from, bytes) {
    for (const m of parseStream(bytes)) {
      const h = hex(m.raw)
      if (!this.produced.has(h)) this.produced.set(h, from)
    }
  }
  send(tick, from, to, transportOnTo, bytes) {
    if (bytes.byteLength === 0) return
    const copy = new Uint8Array(bytes)
    this.record(from, copy)
    this.sentThisTick++
    const pieces = this.rng.chance(this.cfg.splitP) ? parseStream(copy).map((m) => m.raw) : [copy]
    for (const p of pieces) {
      const copies = this.rng.chance(this.cfg.dupP) ? 2 : 1
      for (let i = 0; i < copies; i++) {
        this.inflight.push({
          at: tick + 1 + this.rng.int(this.cfg.maxDelay + 1),
          seq: this.seq++,
          to,
          transportOnTo,
          bytes: p
        })
      }
    }
  }
  /** Deliver every due packet, in a random order. */
  deliver(tick, actors) {
    const due = this.inflight.filter((p) => p.at <= tick)
    this.inflight = this.inflight.filter((p) => p.at > tick)
    this.rng.shuffle(due)
    for (const p of due) {
      actors[p.to].transports[p.transportOnTo].onmessage(p.bytes)
      this.delivered++
    }
  }
}

/**
 * Connect actors. mesh: every pair has a link, and a transport only carries the engine's OWN
 * messages (filter drops relayed ones, which have a transportId) — @dcl/ecs rebroadcasts
 * every received message that does not conflict, including duplicates, so relaying on a mesh
 * of three or more would echo forever. star: actor 0 is a hub that relays (the way a scene's
 * engine relays between renderer and network transports); leaves have one transport.
 */
export function connect(actors, topology, net, clock) {
  const link = (a, b) => {
    // transport on a towards b; its index on a is a.transports.length
    const t = {
      type: 'concord-test',
      peer: b.index,
      send: (bytes) => {
        const idxOnB = b.transports.findIndex((x) => x.peer === a.index)
        net.send(clock.tick, a.index, b.index, idxOnB, bytes)
      },
      filter: topology === 'mesh' ? (m) => m.transportId === undefined : () => true
    }
    a.transports.push(t)
    a.engine.addTransport(t)
  }
  if (topology === 'mesh') {
    for (const a of actors) for (const b of actors) if (a !== b) link(a, b)
  } else {
    for (const b of actors.slice(1)) {
      link(actors[0], b)
      link(b, actors[0])
    }
  }
}

/**
 * Read the CRDT state an engine holds, through @dcl/ecs's own code:
 *  - every component's dumpCrdtStateToBuffer() (PUT for data, DELETE_COMPONENT for a
 *    timestamp without data, APPEND_VALUE per stored grow-only value), read back with
 *    @dcl/ecs's readMessage();
 *  - the deleted-entity versions, probed with engine.getEntityState() (the container's
 *    removedEntities G-set is not exposed): for each number, the highest v reported Removed.
 * Returns the canonical state plus what the canonical form hides: data still held for deleted
 * entity versions ("leaks") and append values held more than once ("dups").
 */
export function readEngineState(engine, probeNumbers, extraDeleted = new Map()) {
  const lwwRows = []
  const appendRaw = new Map() // "e:c" -> {entity, component, values: [hex…]} (with duplicates)
  for (const comp of engine.componentsIter()) {
    const out = new ReadWriteByteBuffer()
    comp.dumpCrdtStateToBuffer(out)
    const rd = new ReadWriteByteBuffer(out.toCopiedBinary())
    let m
    while ((m = readMessage(rd))) {
      if (m.type === CrdtMessageType.PUT_COMPONENT) {
        lwwRows.push({ entity: m.entityId, component: m.componentId, timestamp: m.timestamp, data: new Uint8Array(m.data) })
      } else if (m.type === CrdtMessageType.DELETE_COMPONENT) {
        lwwRows.push({ entity: m.entityId, component: m.componentId, timestamp: m.timestamp, data: null })
      } else if (m.type === CrdtMessageType.APPEND_VALUE) {
        const k = `${m.entityId}:${m.componentId}`
        if (!appendRaw.has(k)) appendRaw.set(k, { entity: m.entityId, component: m.componentId, values: [] })
        appendRaw.get(k).values.push(hex(m.data))
      } else {
        throw new Error(`unexpected dump message type ${m.type}`)
      }
    }
  }
  const numbers = new Set(probeNumbers)
  for (const r of lwwRows) numbers.add(entityNumber(r.entity))
  for (const r of appendRaw.values()) numbers.add(entityNumber(r.entity))
  for (const e of engine.entityContainer.getExistingEntities()) numbers.add(entityNumber(e))
  const deleted = new Map()
  for (const n of [...numbers].sort((a, b) => a - b)) {
    let rv
    for (let v = 0; v <= 0xffff; v++) {
      const st = engine.getEntityState(entityId(n, v))
      if (st === EntityState.Removed) rv = v
      else if (st !== EntityState.UsedEntity) break
    }
    if (rv !== undefined) deleted.set(n, rv)
  }
  for (const [n, v] of extraDeleted) if (!(deleted.get(n) >= v)) deleted.set(n, v)
  const isDel = (e) => deleted.has(entityNumber(e)) && entityVersion(e) <= deleted.get(entityNumber(e))
  const leaks = []
  for (const r of lwwRows)
    if (r.data !== null && isDel(r.entity)) leaks.push({ entity: r.entity, component: r.component, kind: 'lww', data: hex(r.data) })
  for (const r of appendRaw.values())
    if (isDel(r.entity)) leaks.push({ entity: r.entity, component: r.component, kind: 'append', values: r.values.length })
  const dups = []
  for (const r of appendRaw.values()) {
    if (isDel(r.entity)) continue
    const count = new Map()
    for (const v of r.values) count.set(v, (count.get(v) ?? 0) + 1)
    for (const [v, c] of count) if (c > 1) dups.push({ entity: r.entity, component: r.component, value: v, count: c })
  }
  const state = canonicalState(lwwRows, deleted, [...appendRaw.values()])
  return { state, leaks, dups, appendRaw: [...appendRaw.values()] }
}

/** "n=512 v=1" style label of an entity id. */
export const ent = (e) => `${e} (n=${entityNumber(e)} v=${entityVersion(e)})`
