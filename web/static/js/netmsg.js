// @ts-check
// TRNP codec: the data-channel messages of docs/protocol.md, byte for byte as the Go package netmsg
// (the reference) writes and reads them, checked against testdata/netmsg/*.json.
//
// Messages are plain objects {type, ...fields} with the field names of the golden vectors:
// every u64 is a BigInt, u32/u16/u8 are numbers, byte fields are Uint8Array, peerId and reason are
// strings. Decoded byte fields alias the input (subarrays): they stay valid as long as the input is
// not modified. Decoders throw only ProtocolError (with .code and .offset), whatever the input;
// encoders throw TypeError/RangeError for values the wire cannot carry (bugs in the caller).

/** Message types (the first byte of every message). */
export const Type = Object.freeze({
  HostSnapshot: 0,
  PeerEntered: 1,
  PeerExited: 2,
  HostCommands: 3,
  PeerCommands: 4,
  EntityUpdates: 5,
  Fragment: 6,
  CrdtBatch: 7,
  Ping: 8,
  Pong: 9,
  Close: 10,
  Hello: 11,
  Stamp: 12,
  Digest: 13,
  Relay: 14,
  Actions: 15,
  Forget: 16,
  PackedUpdates: 17,
  DeltaUpdates: 18,
  Ack: 19,
  RunUpdates: 20,
});

const TYPE_NAMES = Object.keys(Type);

/** First Concord extension type; types from here up use the extension frame. */
export const FIRST_EXTENSION = 6;
/** First application type (128–255 are handed to the application as opaque bodies). */
export const FIRST_APPLICATION = 128;
/** Cap of a payload on the unreliable channel: what one SCTP packet carries (docs/protocol.md §1.3). */
export const MAX_DATAGRAM = 1156;
/** Cap of a payload on the reliable channel; larger payloads travel as Fragments. */
export const MAX_RELIABLE = 16384;
/** Cap of PeerInfo.peerId in UTF-8 bytes. */
export const MAX_PEER_ID_LEN = 256;
/** Cap of Update.data: its length has 14 bits on the wire. */
export const MAX_UPDATE_DATA = 16383;
/** Cap of Close.reason in UTF-8 bytes. */
export const MAX_CLOSE_REASON = 256;
/** Most properties an Update mask can address. */
export const MAX_PROPERTIES = 32;
/** Most buckets a Digest may carry. */
export const MAX_DIGEST_BUCKETS = 4096;
/** Default cap of a reassembled payload (64 MiB). */
export const DEFAULT_MAX_TOTAL = 64 << 20;
/** Size of a Fragment message without its chunk. */
export const FRAGMENT_OVERHEAD = 17;
/** The most updates an encoder puts in one run of a RunUpdates (netmsg.MaxRun): the count takes one byte. */
export const MAX_RUN = 127;
/** Size of a Relay message without its data. */
export const RELAY_OVERHEAD = 14;

const EXT_HEADER = 5;
const MIN_PEER_INFO = 12;
const MIN_SPAWN = 20;
const DESPAWN_SIZE = 8;
const TRANSFER_SIZE = 16;
const MIN_CALL = 8;
const MIN_UPDATE = 11;
const EU_HEADER = 13;

/**
 * Returns the name of a message type: "HostSnapshot", …, "Extension(n)" or "Application(n)".
 * @param {number} t
 * @returns {string}
 */
export function typeName(t) {
  if (t >= 0 && t < TYPE_NAMES.length) return TYPE_NAMES[t];
  if (t >= FIRST_APPLICATION) return `Application(${t})`;
  return `Extension(${t})`;
}

/**
 * Reports whether this build defines message type t (0–19).
 * @param {number} t
 * @returns {boolean}
 */
export function isKnownType(t) {
  return t >= 0 && t < TYPE_NAMES.length;
}

/**
 * Input that breaks the wire format: the sender is buggy or hostile, close the peer.
 * code is one of short_buffer, too_large, invalid_mask_width, invalid_peer_id, invalid_reason,
 * body_length, fragment, wrong_type (netmsg), truncated, bad_length (crdt streams), or a code
 * of the module that threw it; offset is the byte offset of the faulty field in the input the
 * failing call was given, or -1 when no position applies.
 */
export class ProtocolError extends Error {
  /**
   * @param {string} code
   * @param {number} offset
   * @param {string} message
   * @param {number} [type] the message type at fault, when known
   */
  constructor(code, offset, message, type) {
    super(message);
    this.name = 'ProtocolError';
    /** @type {string} */
    this.code = code;
    /** @type {number} */
    this.offset = offset;
    /** @type {number|undefined} */
    this.type = type;
  }
}

const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/**
 * Returns whether s has no lone surrogate (so that it has an exact UTF-8 form).
 * @param {string} s
 */
function wellFormed(s) {
  if (typeof s.isWellFormed === 'function') return s.isWellFormed();
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

/**
 * A TRNP message: {type, ...fields} with the field names of the golden vectors (see the file
 * comment; docs/protocol.md lists each type's fields).
 * @typedef {{type: number, [field: string]: any}} Msg
 */

/**
 * One entity update: its network id, the mask width (maskBits) and mask of the properties it
 * carries, and their values (data).
 * @typedef {{networkId: bigint | number, maskBits: number, mask: number, data?: Uint8Array}} Update
 */

// ---------------------------------------------------------------------------------------------
// Decoding

/** A cursor over one input. Every failure throws a ProtocolError at an absolute offset. */
class Cursor {
  /** @param {Uint8Array} b */
  constructor(b) {
    this.b = b;
    this.dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    this.off = 0;
    this.end = b.length;
    this.t = 0;
  }

  /**
   * @param {number} at
   * @param {string} code
   * @param {string} detail
   * @returns {never}
   */
  fail(at, code, detail) {
    throw new ProtocolError(code, at, `netmsg: protocol error in ${typeName(this.t)} at offset ${at}: ${code}: ${detail}`, this.t);
  }

  /**
   * @param {number} n
   * @param {string} what
   */
  need(n, what) {
    if (n > this.end - this.off) this.fail(this.off, 'short_buffer', `${what} needs ${n} bytes, ${this.end - this.off} left`);
  }

  /**
   * @param {string} what
   */
  u8(what) {
    this.need(1, what);
    return this.b[this.off++];
  }

  /**
   * @param {string} what
   */
  u16(what) {
    this.need(2, what);
    const v = this.dv.getUint16(this.off, true);
    this.off += 2;
    return v;
  }

  /**
   * @param {string} what
   */
  u32(what) {
    this.need(4, what);
    const v = this.dv.getUint32(this.off, true);
    this.off += 4;
    return v;
  }

  /**
   * @param {string} what
   */
  u64(what) {
    this.need(8, what);
    const v = this.dv.getBigUint64(this.off, true);
    this.off += 8;
    return v;
  }

  /**
   * @param {number} n
   * @param {string} what
   */
  blob(n, what) {
    if (n > this.end - this.off) this.fail(this.off, 'short_buffer', `${what} of ${n} bytes, ${this.end - this.off} left`);
    const s = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return s;
  }

  /**
   * Reads a u32 count and checks that count elements of at least minSize bytes fit.
   * @param {string} what
   * @param {number} minSize
   */
  count(what, minSize) {
    const at = this.off;
    const c = this.u32(what);
    const left = this.end - this.off;
    if (c * minSize > left) this.fail(at, 'short_buffer', `${what} ${c} needs at least ${c * minSize} bytes, ${left} left`);
    return c;
  }

  peerInfo() {
    const peerIndex = this.u64('peer index');
    const at = this.off;
    const n = this.u32('peer id length');
    if (n > MAX_PEER_ID_LEN) this.fail(at, 'invalid_peer_id', `length ${n} exceeds ${MAX_PEER_ID_LEN}`);
    const id = this.blob(n, 'peer id');
    let peerId;
    try {
      peerId = utf8Decoder.decode(id);
    } catch {
      this.fail(at + 4, 'invalid_peer_id', 'not valid UTF-8');
    }
    return { peerIndex, peerId };
  }

  spawn() {
    const networkId = this.u64('network id');
    const schemaId = this.u32('schema id');
    const creationData = this.blob(this.u32('creation data length'), 'creation data');
    const updateData = this.blob(this.u32('update data length'), 'update data');
    return { networkId, schemaId, creationData, updateData };
  }

  call() {
    const type = this.u32('call type');
    const data = this.blob(this.u32('call data length'), 'call data');
    return { type, data };
  }

  /**
   * An unsigned LEB128 varint in its shortest form, as a BigInt.
   * @param {string} what
   * @returns {bigint}
   */
  uvarint(what) {
    const start = this.off;
    let v = 0n;
    let shift = 0n;
    for (let i = 0; ; i++) {
      if (this.off >= this.end) this.fail(start, 'short_buffer', `${what}: varint runs past the end`);
      const b = this.b[this.off++];
      if (i === 9 && b > 1) this.fail(start, 'body_length', `${what}: varint overflows 64 bits`);
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (b < 0x80) {
        if (b === 0 && i > 0) this.fail(start, 'body_length', `${what}: varint not in its shortest form`);
        return v;
      }
    }
  }

  /**
   * A mask of width code (0: u8, 1: u16, 2: u32; anything else fails at offset at).
   * @param {number} code
   * @param {number} at
   * @returns {{mask: number, maskBits: number}}
   */
  mask(code, at) {
    if (code === 0) return { mask: this.u8('mask'), maskBits: 8 };
    if (code === 1) return { mask: this.u16('mask'), maskBits: 16 };
    if (code === 2) return { mask: this.u32('mask'), maskBits: 32 };
    return this.fail(at, 'invalid_mask_width', `width code ${code}`);
  }

  /** One Update of a PackedUpdates body (netmsg/packed.go). */
  packedUpdate() {
    const networkId = this.uvarint('network id');
    const at = this.off;
    const lw = this.uvarint('length and width');
    const { mask, maskBits } = this.mask(Number(lw & 3n), at);
    if (lw >> 2n > BigInt(MAX_UPDATE_DATA)) this.fail(at, 'too_large', `update data of ${lw >> 2n} bytes, more than ${MAX_UPDATE_DATA}`);
    const data = this.blob(Number(lw >> 2n), 'update data');
    return { networkId, maskBits, mask, data };
  }

  /**
   * One run of a RunUpdates body (netmsg/runs.go), its updates pushed to updates: networkId,
   * count, lengthAndWidth and mask once, then count data of dataLength bytes, entity networkId + k.
   * @param {Array<{networkId: bigint, maskBits: number, mask: number, data: Uint8Array}>} updates
   */
  run(updates) {
    const networkId = this.uvarint('network id');
    const at = this.off;
    const count = this.uvarint('run count');
    const lwAt = this.off;
    const lw = this.uvarint('length and width');
    const size = lw >> 2n;
    if (count === 0n) this.fail(at, 'body_length', 'run of no updates');
    if (count > 1n && size === 0n) this.fail(at, 'body_length', `run of ${count} updates without data`);
    if (count - 1n > 0xffffffffffffffffn - networkId) this.fail(at, 'body_length', `run of ${count} updates from network id ${networkId} passes 2⁶⁴`);
    const code = Number(lw & 3n);
    if (code === 3) this.fail(lwAt, 'invalid_mask_width', `width code ${code}`);
    if (size > BigInt(MAX_UPDATE_DATA)) this.fail(lwAt, 'too_large', `update data of ${size} bytes, more than ${MAX_UPDATE_DATA}`);
    const { mask, maskBits } = this.mask(code, lwAt);
    if (size > 0n && count > BigInt(this.end - this.off) / size) {
      this.fail(this.off, 'short_buffer', `run of ${count} updates of ${size} bytes runs past the body`);
    }
    for (let k = 0n; k < count; k++) {
      updates.push({ networkId: networkId + k, maskBits, mask, data: this.blob(Number(size), 'update data') });
    }
  }

  update() {
    const networkId = this.u64('network id');
    const at = this.off;
    const lw = this.u16('length and width');
    const { mask, maskBits } = this.mask(lw >> 14, at);
    const data = this.blob(lw & MAX_UPDATE_DATA, 'update data');
    return { networkId, maskBits, mask, data };
  }

  /**
   * Reads an extension frame header at start, restricts the cursor to the frame, returns the body length.
   * @param {number} start
   */
  frame(start) {
    this.off = start + 1;
    const n = this.u32('body length');
    if (n > this.end - this.off) this.fail(this.off, 'short_buffer', `body of ${n} bytes, ${this.end - this.off} left`);
    this.end = this.off + n;
    return n;
  }

  /**
   * @param {number} start
   * @param {number} n
   * @param {number} want
   * @param {boolean} exact
   */
  checkBody(start, n, want, exact) {
    if (n < want || (exact && n !== want)) {
      this.fail(start + 1, 'body_length', `${typeName(this.t)} body of ${n} bytes, want ${exact ? '' : 'at least '}${want}`);
    }
  }
}

/**
 * @param {number} n
 * @template T
 * @param {() => T} fn
 * @returns {T[]}
 */
function list(n, fn) {
  const a = new Array(n);
  for (let i = 0; i < n; i++) a[i] = fn();
  return a;
}

/**
 * Decodes the message at c.off (the type byte is known to be there).
 * @param {Cursor} c
 * @param {number} start
 */
function decodeAt(c, start) {
  const b = c.b;
  c.end = b.length;
  c.off = start;
  const t = b[start];
  c.t = t;
  if (t < FIRST_EXTENSION) {
    c.off = start + 1;
    let msg;
    switch (t) {
      case Type.HostSnapshot: {
        const hostTime = c.u64('host time');
        const localPeerIndex = c.u64('local peer index');
        const hostPeerIndex = c.u64('host peer index');
        const peers = list(c.count('peer count', MIN_PEER_INFO), () => c.peerInfo());
        const spawns = list(c.count('entity count', MIN_SPAWN), () => c.spawn());
        const hostState = c.blob(c.u32('host state length'), 'host state');
        msg = { type: t, hostTime, localPeerIndex, hostPeerIndex, peers, spawns, hostState };
        break;
      }
      case Type.PeerEntered:
        msg = { type: t, peer: c.peerInfo() };
        break;
      case Type.PeerExited:
        msg = { type: t, peerIndex: c.u64('peer index') };
        break;
      case Type.HostCommands: {
        const spawns = list(c.count('spawn count', MIN_SPAWN), () => c.spawn());
        const despawns = list(c.count('despawn count', DESPAWN_SIZE), () => ({ networkId: c.u64('network id') }));
        const authorityTransfers = list(c.count('authority transfer count', TRANSFER_SIZE), () => {
          const networkId = c.u64('network id');
          return { networkId, newAuthorIndex: c.u64('new author index') };
        });
        const rpcs = list(c.count('rpc count', MIN_CALL), () => c.call());
        const actions = list(c.count('action count', MIN_CALL), () => c.call());
        msg = { type: t, spawns, despawns, authorityTransfers, rpcs, actions };
        break;
      }
      case Type.PeerCommands:
        msg = { type: t, rpcs: list(c.count('rpc count', MIN_CALL), () => c.call()) };
        break;
      default: {
        const time = c.u64('time');
        const updates = list(c.count('update count', MIN_UPDATE), () => c.update());
        msg = { type: t, time, updates };
      }
    }
    return { msg, n: c.off - start };
  }

  const n = c.frame(start);
  let msg;
  switch (t) {
    case Type.Fragment: {
      c.checkBody(start, n, 12, false);
      const messageId = c.u32('message id');
      const totalLength = c.u32('total length');
      const at = c.off;
      const offset = c.u32('offset');
      const chunk = c.blob(c.end - c.off, 'chunk');
      if (offset + chunk.length > totalLength) {
        c.fail(at, 'fragment', `chunk of ${chunk.length} bytes at ${offset} runs past total ${totalLength}`);
      }
      msg = { type: t, messageId, totalLength, offset, chunk };
      break;
    }
    case Type.CrdtBatch: {
      c.checkBody(start, n, 8, false);
      const term = c.u64('term');
      msg = { type: t, term, messages: c.blob(c.end - c.off, 'messages') };
      break;
    }
    case Type.Ping:
    case Type.Pong: {
      c.checkBody(start, n, 16, true);
      const nonce = c.u64('nonce');
      const time = c.u64(t === Type.Ping ? 'send time' : 'echo time');
      msg = t === Type.Ping ? { type: t, nonce, sendTime: time } : { type: t, nonce, echoTime: time };
      break;
    }
    case Type.Close: {
      c.checkBody(start, n, 4, false);
      const code = c.u16('code');
      const at = c.off;
      const rl = c.u16('reason length');
      if (rl > MAX_CLOSE_REASON) c.fail(at, 'invalid_reason', `length ${rl} exceeds ${MAX_CLOSE_REASON}`);
      if (4 + rl !== n) c.fail(start + 1, 'body_length', `Close body of ${n} bytes, reason length ${rl} needs ${4 + rl}`);
      const raw = c.blob(rl, 'reason');
      let reason;
      try {
        reason = utf8Decoder.decode(raw);
      } catch {
        c.fail(at + 2, 'invalid_reason', 'not valid UTF-8');
      }
      msg = { type: t, code, reason };
      break;
    }
    case Type.Hello: {
      c.checkBody(start, n, 24, true);
      const term = c.u64('term');
      const peerIndex = c.u64('peer index');
      msg = { type: t, term, peerIndex, schemaFingerprint: c.u64('schema fingerprint') };
      break;
    }
    case Type.Stamp:
      c.checkBody(start, n, 8, true);
      msg = { type: t, time: c.u64('time') };
      break;
    case Type.Digest: {
      c.checkBody(start, n, 14, false);
      const term = c.u64('term');
      const clock = c.u32('clock');
      const count = c.u16('bucket count');
      if (count === 0 || count > MAX_DIGEST_BUCKETS || n !== 14 + 8 * count) {
        c.fail(start + 1, 'body_length', `Digest of ${count} buckets in a body of ${n} bytes`);
      }
      const digests = new BigUint64Array(count);
      for (let i = 0; i < count; i++) digests[i] = c.u64('digest');
      msg = { type: t, term, clock, digests };
      break;
    }
    case Type.Relay: {
      c.checkBody(start, n, 9, false);
      const peer = c.u64('peer');
      const at = c.off;
      const appType = c.u8('application type');
      if (appType < FIRST_APPLICATION) c.fail(at, 'wrong_type', `relayed type ${appType} is not an application type (128–255)`);
      msg = { type: t, peer, appType, data: c.blob(c.end - c.off, 'data') };
      break;
    }
    case Type.PackedUpdates: {
      c.checkBody(start, n, 1, false);
      const time = c.uvarint('time');
      const updates = [];
      while (c.off < c.end) updates.push(c.packedUpdate());
      msg = { type: t, time, updates };
      break;
    }
    case Type.RunUpdates: {
      c.checkBody(start, n, 1, false);
      const time = c.uvarint('time');
      /** @type {Array<{networkId: bigint, maskBits: number, mask: number, data: Uint8Array}>} */
      const updates = [];
      while (c.off < c.end) c.run(updates);
      msg = { type: t, time, updates };
      break;
    }
    case Type.DeltaUpdates: {
      c.checkBody(start, n, 2, false);
      const seq = c.uvarint('seq');
      const time = c.uvarint('time');
      const updates = [];
      while (c.off < c.end) updates.push(c.packedUpdate());
      msg = { type: t, seq, time, updates };
      break;
    }
    case Type.Ack: {
      c.checkBody(start, n, 9, false);
      const highest = c.uvarint('highest');
      if (c.end - c.off !== 8) c.fail(start + 1, 'body_length', `Ack body of ${n} bytes, want ${n - (c.end - c.off) + 8}`);
      msg = { type: t, highest, received: c.u64('received') };
      break;
    }
    case Type.Forget: {
      c.checkBody(start, n, 4, false);
      const count = c.count('network id count', 8);
      if (n !== 4 + 8 * count) c.fail(start + 1, 'body_length', `Forget body of ${n} bytes for ${count} network ids`);
      const networkIds = [];
      for (let i = 0; i < count; i++) networkIds.push(c.u64('network id'));
      msg = { type: t, networkIds };
      break;
    }
    case Type.Actions: {
      c.checkBody(start, n, 4, false);
      const actions = list(c.count('action count', MIN_CALL), () => c.call());
      if (c.off !== c.end) c.fail(start + 1, 'body_length', `Actions body has ${c.end - c.off} bytes after its last action`);
      msg = { type: t, actions };
      break;
    }
    default:
      msg = { type: t, body: c.blob(n, 'body') };
  }
  return { msg, n: EXT_HEADER + n };
}

/**
 * @param {Uint8Array | ArrayBuffer | ArrayBufferView} b
 * @returns {Uint8Array}
 */
function asBytes(b) {
  if (b instanceof Uint8Array) return b;
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  if (ArrayBuffer.isView(b)) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  throw new TypeError('netmsg: input must be a Uint8Array or ArrayBuffer');
}

/**
 * Decodes the one message that starts at bytes[offset]. Returns the message and its length n.
 * Error offsets are positions in bytes. Byte fields of msg alias bytes.
 * @param {Uint8Array|ArrayBuffer} bytes
 * @param {number} [offset]
 * @returns {{msg: Msg, n: number}}
 */
export function decode(bytes, offset = 0) {
  const b = asBytes(bytes);
  if (offset >= b.length) {
    throw new ProtocolError('short_buffer', offset, `netmsg: protocol error at offset ${offset}: short_buffer: no message`, undefined);
  }
  return decodeAt(new Cursor(b), offset);
}

/**
 * Yields the messages of a payload (one or more messages back to back), each fully validated.
 * Extension types this build does not define (6–127) are skipped (reported to opts.onUnknown);
 * application messages (128–255) are yielded as {type, body}. A malformed message throws a
 * ProtocolError whose offset is a position in the payload; messages before it were yielded.
 * An empty payload yields nothing.
 * @param {Uint8Array|ArrayBuffer} payload
 * @param {{onUnknown?: (type: number, body: Uint8Array) => void}} [opts]
 * @returns {Generator<Msg>}
 */
export function* readMessages(payload, opts = {}) {
  const b = asBytes(payload);
  const c = new Cursor(b);
  let off = 0;
  while (off < b.length) {
    const { msg, n } = decodeAt(c, off);
    off += n;
    if (msg.type >= FIRST_EXTENSION && msg.type < FIRST_APPLICATION && !isKnownType(msg.type)) {
      if (opts.onUnknown && msg.body) opts.onUnknown(msg.type, msg.body); // an unknown type is decoded as {type, body}
      continue;
    }
    yield msg;
  }
}

/**
 * Decodes the extension frame at bytes[offset] without decoding its body: {type, body, n}. A TRNP
 * type (0–5) is a ProtocolError (wrong_type).
 * @param {Uint8Array|ArrayBuffer} bytes
 * @param {number} [offset]
 * @returns {{type: number, body: Uint8Array, n: number}}
 */
export function decodeFrame(bytes, offset = 0) {
  const c = new Cursor(asBytes(bytes));
  c.off = offset;
  c.need(1, 'type');
  const t = c.b[offset];
  c.t = t;
  if (t < FIRST_EXTENSION) c.fail(offset, 'wrong_type', `${typeName(t)} is not an extension message`);
  const n = c.frame(offset);
  return { type: t, body: c.blob(n, 'body'), n: EXT_HEADER + n };
}

/**
 * @param {Uint8Array | ArrayBuffer} payload
 * @param {number} limit
 * @param {string} what
 */
function checkSize(payload, limit, what) {
  const b = asBytes(payload);
  if (b.length <= limit) return;
  throw new ProtocolError('too_large', limit, `netmsg: protocol error in ${typeName(b[0])} at offset ${limit}: too_large: ${what} of ${b.length} bytes exceeds ${limit}`, b[0]);
}

/**
 * Checks the size of a payload received on the unreliable channel (≤ MAX_DATAGRAM), throwing a
 * ProtocolError (too_large, offset MAX_DATAGRAM) when it is over.
 * @param {Uint8Array|ArrayBuffer} payload
 */
export function checkDatagram(payload) {
  checkSize(payload, MAX_DATAGRAM, 'datagram');
}

/**
 * Checks the size of a payload received on the reliable channel (≤ MAX_RELIABLE), throwing a
 * ProtocolError (too_large, offset MAX_RELIABLE) when it is over. Reassembled payloads are exempt.
 * @param {Uint8Array|ArrayBuffer} payload
 */
export function checkReliable(payload) {
  checkSize(payload, MAX_RELIABLE, 'reliable message');
}

// ---------------------------------------------------------------------------------------------
// Encoding

/**
 * @param {string} what
 * @param {number} v
 * @returns {number}
 */
function checkU32(v, what) {
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`netmsg: ${what} ${v} is not a u32`);
  return v;
}

/**
 * @param {string} what
 * @param {bigint | number} v
 * @returns {bigint}
 */
function toU64(v, what) {
  if (typeof v === 'bigint') {
    if (v < 0n || v > 0xffffffffffffffffn) throw new RangeError(`netmsg: ${what} ${v} is not a u64`);
    return v;
  }
  if (Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw new RangeError(`netmsg: ${what} ${v} is not a u64`);
}

/**
 * @param {string} what
 * @param {Uint8Array | null | undefined} v
 * @returns {Uint8Array}
 */
function bytesOf(v, what) {
  if (v === undefined || v === null) return EMPTY;
  if (v instanceof Uint8Array) return v;
  throw new TypeError(`netmsg: ${what} must be a Uint8Array`);
}

const EMPTY = new Uint8Array(0);

/** A growable little-endian byte buffer. */
class Writer {
  constructor(cap = 64) {
    this.buf = new Uint8Array(cap);
    this.dv = new DataView(this.buf.buffer);
    this.len = 0;
  }

  /**
   * @param {number} n
   */
  grow(n) {
    if (this.len + n <= this.buf.length) return;
    const nb = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    nb.set(this.buf.subarray(0, this.len));
    this.buf = nb;
    this.dv = new DataView(nb.buffer);
  }

  /**
   * @param {number} v
   */
  u8(v) {
    this.grow(1);
    this.buf[this.len++] = v;
  }

  /**
   * @param {number} v
   */
  u16(v) {
    this.grow(2);
    this.dv.setUint16(this.len, v, true);
    this.len += 2;
  }

  /**
   * @param {string} what
   * @param {number} v
   */
  u32(v, what) {
    this.grow(4);
    this.dv.setUint32(this.len, checkU32(v, what), true);
    this.len += 4;
  }

  /**
   * @param {string} what
   * @param {bigint | number} v
   */
  u64(v, what) {
    this.grow(8);
    this.dv.setBigUint64(this.len, toU64(v, what), true);
    this.len += 8;
  }

  /**
   * An unsigned LEB128 varint in its shortest form.
   * @param {bigint | number} v
   * @param {string} what
   */
  uvarint(v, what) {
    let x = toU64(v, what);
    do {
      const b = Number(x & 0x7fn);
      x >>= 7n;
      this.u8(x > 0n ? b | 0x80 : b);
    } while (x > 0n);
  }

  /**
   * @param {Uint8Array} b
   */
  bytes(b) {
    this.grow(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  /**
   * @param {string} what
   * @param {Uint8Array | null | undefined} b
   */
  blob32(b, what) {
    const x = bytesOf(b, what);
    this.u32(x.length, `${what} length`);
    this.bytes(x);
  }

  /**
   * @param {string} what
   * @template T
   * @param {T[]} a
   * @returns {T[]}
   */
  count(a, what) {
    const arr = a ?? [];
    this.u32(arr.length, what);
    return arr;
  }

  /**
   * Starts an extension frame; returns its position for endFrame.
   * @param {number} t
   */
  startFrame(t) {
    const mark = this.len;
    this.u8(t);
    this.u32(0, 'body length');
    return mark;
  }

  /**
   * @param {number} mark
   */
  endFrame(mark) {
    this.dv.setUint32(mark + 1, this.len - mark - EXT_HEADER, true);
  }

  result() {
    return this.buf.subarray(0, this.len);
  }
}

/**
 * @param {Writer} w
 * @param {{peerIndex: bigint | number, peerId: string}} p
 */
function writePeerInfo(w, p) {
  if (typeof p.peerId !== 'string' || !wellFormed(p.peerId)) throw new RangeError('netmsg: peerId must be a well-formed string');
  const id = utf8Encoder.encode(p.peerId);
  if (id.length > MAX_PEER_ID_LEN) throw new RangeError(`netmsg: peerId of ${id.length} bytes exceeds ${MAX_PEER_ID_LEN}`);
  w.u64(p.peerIndex, 'peer index');
  w.u32(id.length, 'peer id length');
  w.bytes(id);
}

/**
 * @param {Writer} w
 * @param {{networkId: bigint | number, schemaId: number, creationData?: Uint8Array, updateData?: Uint8Array}} s
 */
function writeSpawn(w, s) {
  w.u64(s.networkId, 'network id');
  w.u32(s.schemaId, 'schema id');
  w.blob32(s.creationData, 'creation data');
  w.blob32(s.updateData, 'update data');
}

/**
 * @param {Writer} w
 * @param {{type: number, data?: Uint8Array}} x
 */
function writeCall(w, x) {
  w.u32(x.type, 'call type');
  w.blob32(x.data, 'call data');
}

/**
 * Returns the mask width, in bits (8, 16 or 32), of a schema with propertyCount properties:
 * ≤ 8 → 8, ≤ 16 → 16, ≤ 32 → 32. Throws RangeError for other counts.
 * @param {number} propertyCount
 * @returns {8|16|32}
 */
export function maskWidth(propertyCount) {
  if (!Number.isInteger(propertyCount) || propertyCount < 0 || propertyCount > MAX_PROPERTIES) {
    throw new RangeError(`netmsg: ${propertyCount} properties (0–${MAX_PROPERTIES} supported)`);
  }
  if (propertyCount <= 8) return 8;
  if (propertyCount <= 16) return 16;
  return 32;
}

/**
 * Reports whether update u fits a schema of propertyCount properties: its maskBits is
 * maskWidth(propertyCount) and its mask sets no bit at or above propertyCount. A mismatch means
 * "drop this update", not "close the peer".
 * @param {{maskBits: number, mask: number}} u
 * @param {number} propertyCount
 * @returns {boolean}
 */
export function checkMask(u, propertyCount) {
  if (!Number.isInteger(propertyCount) || propertyCount < 0 || propertyCount > MAX_PROPERTIES) return false;
  if (u.maskBits !== maskWidth(propertyCount)) return false;
  return propertyCount >= 32 || Math.floor(u.mask / 2 ** propertyCount) === 0;
}

/**
 * @param {Update} u
 */
function updateCheck(u) {
  const data = bytesOf(u.data, 'update data');
  const bits = u.maskBits;
  if (bits !== 8 && bits !== 16 && bits !== 32) throw new RangeError(`netmsg: maskBits ${bits} (want 8, 16 or 32)`);
  if (!Number.isInteger(u.mask) || u.mask < 0 || u.mask >= 2 ** bits) throw new RangeError(`netmsg: mask ${u.mask} does not fit ${bits} bits`);
  if (data.length > MAX_UPDATE_DATA) throw new RangeError(`netmsg: update data of ${data.length} bytes exceeds ${MAX_UPDATE_DATA}`);
  return data;
}

/**
 * Returns the encoded size of an Update {networkId, maskBits, mask, data}.
 * @param {{maskBits: number, data?: Uint8Array}} u
 * @returns {number}
 */
export function sizeUpdate(u) {
  return 10 + u.maskBits / 8 + (u.data ? u.data.length : 0);
}

/**
 * @param {Writer} w
 * @param {Update} u
 */
function writeUpdate(w, u) {
  const data = updateCheck(u);
  w.u64(u.networkId, 'network id');
  const code = u.maskBits === 8 ? 0 : u.maskBits === 16 ? 1 : 2;
  w.u16((code << 14) | data.length);
  if (code === 0) w.u8(u.mask);
  else if (code === 1) w.u16(u.mask);
  else w.u32(u.mask, 'mask');
  w.bytes(data);
}

/**
 * Returns reason as valid UTF-8 of at most MAX_CLOSE_REASON bytes, cut at a character boundary.
 * @param {string} reason
 */
function clipReason(reason) {
  const s = typeof reason === 'string' ? reason : String(reason ?? '');
  let b = utf8Encoder.encode(s); // lone surrogates become U+FFFD, as Go repairs invalid UTF-8
  if (b.length > MAX_CLOSE_REASON) {
    let i = MAX_CLOSE_REASON;
    while (i > 0 && (b[i] & 0xc0) === 0x80) i--;
    b = b.subarray(0, i);
  }
  return b;
}

/**
 * @param {number} t
 */
function checkType(t) {
  if (!Number.isInteger(t) || t < 0 || t > 255) throw new RangeError(`netmsg: message type ${t} is not a u8`);
}

/**
 * @param {Writer} w
 * @param {Msg} m
 */
function writeMessage(w, m) {
  const t = m.type;
  checkType(t);
  switch (t) {
    case Type.HostSnapshot:
      w.u8(t);
      w.u64(m.hostTime, 'host time');
      w.u64(m.localPeerIndex, 'local peer index');
      w.u64(m.hostPeerIndex, 'host peer index');
      for (const p of w.count(m.peers, 'peer count')) writePeerInfo(w, p);
      for (const s of w.count(m.spawns, 'entity count')) writeSpawn(w, s);
      w.blob32(m.hostState, 'host state');
      return;
    case Type.PeerEntered:
      w.u8(t);
      writePeerInfo(w, m.peer);
      return;
    case Type.PeerExited:
      w.u8(t);
      w.u64(m.peerIndex, 'peer index');
      return;
    case Type.HostCommands:
      w.u8(t);
      for (const s of w.count(m.spawns, 'spawn count')) writeSpawn(w, s);
      for (const d of w.count(m.despawns, 'despawn count')) w.u64(d.networkId, 'network id');
      for (const a of w.count(m.authorityTransfers, 'authority transfer count')) {
        w.u64(a.networkId, 'network id');
        w.u64(a.newAuthorIndex, 'new author index');
      }
      for (const x of w.count(m.rpcs, 'rpc count')) writeCall(w, x);
      for (const x of w.count(m.actions, 'action count')) writeCall(w, x);
      return;
    case Type.PeerCommands:
      w.u8(t);
      for (const x of w.count(m.rpcs, 'rpc count')) writeCall(w, x);
      return;
    case Type.EntityUpdates:
      w.u8(t);
      w.u64(m.time, 'time');
      for (const u of w.count(m.updates, 'update count')) writeUpdate(w, u);
      return;
    default:
      break;
  }
  const mark = w.startFrame(t);
  switch (t) {
    case Type.Fragment: {
      const chunk = bytesOf(m.chunk, 'chunk');
      checkU32(m.offset, 'offset');
      checkU32(m.totalLength, 'total length');
      if (m.offset + chunk.length > m.totalLength) {
        throw new RangeError(`netmsg: Fragment chunk of ${chunk.length} bytes at ${m.offset} runs past total ${m.totalLength}`);
      }
      w.u32(m.messageId, 'message id');
      w.u32(m.totalLength, 'total length');
      w.u32(m.offset, 'offset');
      w.bytes(chunk);
      break;
    }
    case Type.CrdtBatch:
      w.u64(m.term, 'term');
      w.bytes(bytesOf(m.messages, 'messages'));
      break;
    case Type.Ping:
      w.u64(m.nonce, 'nonce');
      w.u64(m.sendTime, 'send time');
      break;
    case Type.Pong:
      w.u64(m.nonce, 'nonce');
      w.u64(m.echoTime, 'echo time');
      break;
    case Type.Close: {
      if (!Number.isInteger(m.code) || m.code < 0 || m.code > 0xffff) throw new RangeError(`netmsg: close code ${m.code} is not a u16`);
      const reason = clipReason(m.reason);
      w.u16(m.code);
      w.u16(reason.length);
      w.bytes(reason);
      break;
    }
    case Type.Hello:
      w.u64(m.term, 'term');
      w.u64(m.peerIndex, 'peer index');
      w.u64(m.schemaFingerprint, 'schema fingerprint');
      break;
    case Type.Stamp:
      w.u64(m.time, 'time');
      break;
    case Type.Relay:
      if (!Number.isInteger(m.appType) || m.appType < FIRST_APPLICATION || m.appType > 255) {
        throw new RangeError(`netmsg: Relay of type ${m.appType}, not an application type (128–255)`);
      }
      w.u64(m.peer, 'peer');
      w.u8(m.appType);
      w.bytes(bytesOf(m.data ?? new Uint8Array(0), 'data'));
      break;
    case Type.Actions:
      for (const x of w.count(m.actions, 'action count')) writeCall(w, x);
      break;
    case Type.Forget:
      for (const id of w.count(m.networkIds, 'network id count')) w.u64(id, 'network id');
      break;
    case Type.Ack:
      w.uvarint(m.highest, 'highest');
      w.u64(m.received, 'received');
      break;
    case Type.DeltaUpdates:
    case Type.PackedUpdates:
      if (m.type === Type.DeltaUpdates) w.uvarint(m.seq, 'seq');
      w.uvarint(m.time, 'time');
      for (const u of m.updates ?? []) {
        const data = updateCheck(u);
        const code = u.maskBits === 8 ? 0 : u.maskBits === 16 ? 1 : 2;
        w.uvarint(u.networkId, 'network id');
        w.uvarint((BigInt(data.length) << 2n) | BigInt(code), 'length and width');
        if (code === 0) w.u8(u.mask);
        else if (code === 1) w.u16(u.mask);
        else w.u32(u.mask, 'mask');
        w.bytes(data);
      }
      break;
    case Type.RunUpdates: {
      // Consecutive ids of one mask and data length (not empty) in one run of at most MAX_RUN,
      // as Go's RunUpdatesWriter makes them.
      w.uvarint(m.time, 'time');
      const us = m.updates ?? [];
      for (let i = 0; i < us.length; ) {
        const u = us[i];
        const data = updateCheck(u);
        let j = i + 1;
        while (j < us.length && j - i < MAX_RUN && data.length > 0 && us[j].networkId === u.networkId + BigInt(j - i) &&
          us[j].maskBits === u.maskBits && us[j].mask === u.mask && updateCheck(us[j]).length === data.length) j++;
        const code = u.maskBits === 8 ? 0 : u.maskBits === 16 ? 1 : 2;
        w.uvarint(u.networkId, 'network id');
        w.uvarint(BigInt(j - i), 'run count');
        w.uvarint((BigInt(data.length) << 2n) | BigInt(code), 'length and width');
        if (code === 0) w.u8(u.mask);
        else if (code === 1) w.u16(u.mask);
        else w.u32(u.mask, 'mask');
        for (let k = i; k < j; k++) w.bytes(updateCheck(us[k]));
        i = j;
      }
      break;
    }
    case Type.Digest: {
      const d = m.digests ?? [];
      if (d.length < 1 || d.length > MAX_DIGEST_BUCKETS) throw new RangeError(`netmsg: Digest of ${d.length} buckets (1–${MAX_DIGEST_BUCKETS})`);
      w.u64(m.term, 'term');
      w.u32(m.clock, 'clock');
      w.u16(d.length);
      for (const x of d) w.u64(x, 'digest');
      break;
    }
    default:
      w.bytes(bytesOf(m.body, 'body'));
  }
  w.endFrame(mark);
}

/**
 * Encodes one message {type, ...fields}. Types 14–255 (and any framed type given as {type, body})
 * take {type, body}. Throws TypeError/RangeError for a value the wire cannot carry: a peer id
 * over 256 bytes or with a lone surrogate, a mask wider than maskBits, update data over 16383
 * bytes, a Fragment chunk past totalLength, a count over u32. A Close reason is repaired instead
 * (lone surrogates become U+FFFD, over 256 bytes is cut at a character boundary).
 * @param {Msg} msg
 * @returns {Uint8Array}
 */
export function encode(msg) {
  const w = new Writer();
  writeMessage(w, msg);
  return w.result();
}

/**
 * Encodes several messages back to back into one payload.
 * @param {Msg[]} msgs
 * @returns {Uint8Array}
 */
export function encodeAll(msgs) {
  const w = new Writer(256);
  for (const m of msgs) writeMessage(w, m);
  return w.result();
}

/**
 * Encodes an extension or application message of type t (6–255) with the given body.
 * @param {number} t
 * @param {Uint8Array} body
 * @returns {Uint8Array}
 */
export function encodeFrame(t, body) {
  checkType(t);
  if (t < FIRST_EXTENSION) throw new RangeError(`netmsg: ${typeName(t)} does not use the extension frame`);
  const w = new Writer(EXT_HEADER + body.length);
  const mark = w.startFrame(t);
  w.bytes(bytesOf(body, 'body'));
  w.endFrame(mark);
  return w.result();
}

/**
 * Returns the concatenation of byte arrays.
 * @param {...Uint8Array} parts
 * @returns {Uint8Array}
 */
export function concat(...parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// EntityUpdates in datagrams

/**
 * Builds a datagram of EntityUpdates messages in place, one message per Lamport time, never
 * exceeding a size limit.
 *
 *   const w = new EntityUpdatesWriter();      // limit MAX_DATAGRAM
 *   for (const [time, updates] of byStamp) {
 *     if (!w.begin(time)) break;              // no room for another message
 *     for (const u of updates) if (!w.add(u)) break;
 *   }
 *   channel.send(w.bytes());
 *   w.clear();
 */
export class EntityUpdatesWriter {
  #limit;
  #buf;
  #dv;
  #len;
  #start;
  #count;

  /** @param {number} [limit] cap of the whole datagram; zero or less means MAX_DATAGRAM */
  constructor(limit = MAX_DATAGRAM) {
    this.#limit = limit > 0 ? limit : MAX_DATAGRAM;
    this.#buf = new Uint8Array(this.#limit);
    this.#dv = new DataView(this.#buf.buffer);
    this.#len = 0;
    this.#start = -1;
    this.#count = 0;
  }

  /** Empties the datagram. */
  clear() {
    this.#len = 0;
    this.#start = -1;
    this.#count = 0;
  }

  /**
   * Starts a new EntityUpdates message stamped time after the ones already written. Reports
   * false, leaving no message open, when even an empty message would exceed the limit.
   * @param {bigint|number} time
   * @returns {boolean}
   */
  begin(time) {
    this.#count = 0;
    this.#start = -1;
    const t = toU64(time, 'time');
    if (this.#len + EU_HEADER > this.#limit) return false;
    this.#start = this.#len;
    this.#buf[this.#len] = Type.EntityUpdates;
    this.#dv.setBigUint64(this.#len + 1, t, true);
    this.#dv.setUint32(this.#len + 9, 0, true);
    this.#len += EU_HEADER;
    return true;
  }

  /**
   * Reports whether update u can be added to the current message within the limit.
   * @param {{maskBits: number, data?: Uint8Array}} u
   * @returns {boolean}
   */
  fits(u) {
    return this.#start >= 0 && this.#count < 0xffffffff && this.#len + sizeUpdate(u) <= this.#limit;
  }

  /**
   * Adds update u {networkId, maskBits, mask, data} to the current message and reports true, or
   * reports false and changes nothing when it does not fit. Throws like encode on an update
   * that cannot be encoded.
   * @param {{networkId: bigint|number, maskBits: number, mask: number, data: Uint8Array}} u
   * @returns {boolean}
   */
  add(u) {
    const data = updateCheck(u);
    const id = toU64(u.networkId, 'network id');
    if (!this.fits(u)) return false;
    const dv = this.#dv;
    let o = this.#len;
    dv.setBigUint64(o, id, true);
    const code = u.maskBits === 8 ? 0 : u.maskBits === 16 ? 1 : 2;
    dv.setUint16(o + 8, (code << 14) | data.length, true);
    o += 10;
    if (code === 0) this.#buf[o++] = u.mask;
    else if (code === 1) {
      dv.setUint16(o, u.mask, true);
      o += 2;
    } else {
      dv.setUint32(o, u.mask, true);
      o += 4;
    }
    this.#buf.set(data, o);
    this.#len = o + data.length;
    this.#count++;
    dv.setUint32(this.#start + 9, this.#count, true);
    return true;
  }

  /** Number of updates in the current message. */
  get count() {
    return this.#count;
  }

  /** Bytes written so far, current message included. */
  get length() {
    return this.#len;
  }

  /**
   * Returns a copy of the datagram: every message begun, complete with its update count.
   * @returns {Uint8Array}
   */
  bytes() {
    return this.#buf.slice(0, this.#len);
  }
}

// ---------------------------------------------------------------------------------------------
// Fragmentation

/**
 * Cuts a payload into Fragment messages of at most maxFragment bytes each (so chunks of
 * maxFragment − 17 bytes), to be sent in order on the reliable channel. Always at least one
 * fragment (an empty payload gives one with an empty chunk). maxFragment zero or less means
 * MAX_RELIABLE; it must be in (17, 16384].
 * @param {Uint8Array} payload
 * @param {number} messageId u32, the same for every fragment of the payload
 * @param {number} [maxFragment]
 * @returns {Uint8Array[]}
 */
export function fragment(payload, messageId, maxFragment = MAX_RELIABLE) {
  if (!(maxFragment > 0)) maxFragment = MAX_RELIABLE;
  if (!Number.isInteger(maxFragment) || maxFragment <= FRAGMENT_OVERHEAD || maxFragment > MAX_RELIABLE) {
    throw new RangeError(`netmsg: fragment size ${maxFragment} outside (${FRAGMENT_OVERHEAD}, ${MAX_RELIABLE}]`);
  }
  checkU32(messageId, 'message id');
  const p = asBytes(payload);
  checkU32(p.length, 'payload length');
  const chunk = maxFragment - FRAGMENT_OVERHEAD;
  const out = [];
  let off = 0;
  do {
    const k = Math.min(chunk, p.length - off);
    const f = new Uint8Array(FRAGMENT_OVERHEAD + k);
    const dv = new DataView(f.buffer);
    f[0] = Type.Fragment;
    dv.setUint32(1, 12 + k, true);
    dv.setUint32(5, messageId, true);
    dv.setUint32(9, p.length, true);
    dv.setUint32(13, off, true);
    f.set(p.subarray(off, off + k), FRAGMENT_OVERHEAD);
    out.push(f);
    off += k;
  } while (off < p.length);
  return out;
}

/**
 * Rebuilds payloads from Fragment messages received in order on one reliable channel, with the
 * checks of the Go Reassembler: the first fragment has offset 0 and totalLength ≤ maxTotal; each
 * later one has the same messageId and totalLength and the offset of the bytes received so far;
 * a chunk is empty only when totalLength is 0. Any violation throws a ProtocolError (code
 * fragment, or too_large over maxTotal; offset −1) and drops the partial payload. Memory grows
 * with the bytes received, not with the announced totalLength.
 */
export class Reassembler {
  #maxTotal;
  #active;
  #id;
  #total;
  #buf;
  #len;

  /** @param {{maxTotal?: number}} [cfg] maxTotal: cap of a payload in bytes, default 64 MiB */
  constructor(cfg = {}) {
    this.#maxTotal = cfg.maxTotal !== undefined && cfg.maxTotal > 0 ? cfg.maxTotal : DEFAULT_MAX_TOTAL;
    this.#active = false;
    this.#id = 0;
    this.#total = 0;
    this.#buf = EMPTY;
    this.#len = 0;
  }

  /** Whether a payload is partly received. */
  get inProgress() {
    return this.#active;
  }

  /** Bytes received of the payload in progress. */
  get buffered() {
    return this.#active ? this.#len : 0;
  }

  /** Drops the payload in progress. */
  reset() {
    this.#active = false;
    this.#buf = EMPTY;
    this.#len = 0;
  }

  /**
   * @param {string} code
   * @param {string} detail
   */
  #fail(code, detail) {
    this.reset();
    throw new ProtocolError(code, -1, `netmsg: protocol error in Fragment: ${code}: ${detail}`, Type.Fragment);
  }

  /**
   * Adds a decoded Fragment {messageId, totalLength, offset, chunk}. Returns the whole payload
   * (a new array the caller owns) when this fragment completes it, else null. The chunk is copied.
   * @param {{messageId: number, totalLength: number, offset: number, chunk: Uint8Array}} f
   * @returns {Uint8Array|null}
   */
  push(f) {
    const chunk = f.chunk;
    if (!this.#active) {
      if (f.offset !== 0) this.#fail('fragment', `message ${f.messageId} starts at offset ${f.offset}, want 0`);
      if (f.totalLength > this.#maxTotal) this.#fail('too_large', `message ${f.messageId} of ${f.totalLength} bytes exceeds ${this.#maxTotal}`);
      this.#active = true;
      this.#id = f.messageId;
      this.#total = f.totalLength;
      this.#buf = EMPTY;
      this.#len = 0;
    } else if (f.messageId !== this.#id) {
      this.#fail('fragment', `message ${f.messageId} interrupts message ${this.#id}`);
    } else if (f.totalLength !== this.#total) {
      this.#fail('fragment', `message ${f.messageId} changed total length from ${this.#total} to ${f.totalLength}`);
    } else if (f.offset !== this.#len) {
      this.#fail('fragment', `message ${f.messageId} fragment at offset ${f.offset}, want ${this.#len}`);
    }
    if (f.offset + chunk.length > this.#total) {
      this.#fail('fragment', `message ${f.messageId} chunk of ${chunk.length} bytes at ${f.offset} runs past total ${this.#total}`);
    }
    if (chunk.length === 0 && this.#total !== 0) this.#fail('fragment', `message ${f.messageId} empty chunk at offset ${f.offset}`);
    const need = this.#len + chunk.length;
    if (need > this.#buf.length) {
      const nb = new Uint8Array(Math.min(this.#total, Math.max(need, 2 * this.#buf.length)));
      nb.set(this.#buf.subarray(0, this.#len));
      this.#buf = nb;
    }
    this.#buf.set(chunk, this.#len);
    this.#len = need;
    if (this.#len < this.#total) return null;
    const out = this.#total === 0 ? new Uint8Array(0) : this.#buf;
    this.#active = false;
    this.#buf = EMPTY;
    this.#len = 0;
    return out;
  }
}
