// @ts-check
// @concordrtc/client — the browser client of Concord (also runs in Node ≥ 20 with a WebSocket).
//
// A game makes a Peer with its App (schemas, host logic, avatars, tick, RPCs), awaits run(), and
// reads and writes the replicated World that the peer keeps in step with the room's host:
//
//   import { Peer, SchemaTable } from '@concordrtc/client';
//   const peer = new Peer({ room: 'lobby', tokenProvider: async () => fetchToken(), app });
//   await peer.run();
//   peer.do((w) => w.set(myAvatar, 0, bytes));
//
// The modules behind this entry are importable one by one (subpath exports '@concordrtc/client/
// world', '/signaling', '/schema', '/netmsg', …), and, served by `concord serve`, by relative
// path from a page (/js/index.js). No bundler is required.

export { Peer, DEFAULTS, CLOSE_SCHEMA_MISMATCH } from './peer.js';
export {
  World, WorldError, Ev, ROOM_ENTITY, FIRST_SPAWN_NUMBER, FIRST_SYSTEM_RPC,
  EVERYONE, MAX_MESSAGE, MAX_UNRELIABLE_MESSAGE, MAX_ACTION, MAX_APPEND_VALUE,
} from './world.js';
export {
  SignalingClient, SignalingError, PERMANENT_CODES, REDIAL, explain, defaultURL, randomDevice,
} from './signaling.js';
export {
  Schema, SchemaTable, SchemaError, appendMeta, parseMeta,
  MAX_PROPERTIES, MAX_VALUE_SIZE, FIRST_APP_COMPONENT,
  quantized, appendQuantized, consumeQuantized, appendFloat16, consumeFloat16,
  appendUvarint, consumeUvarint, appendVarint, consumeVarint,
} from './schema.js';
export {
  KIND_HOST, KIND_AVATAR, KIND_LOCK, RESERVED_NUMBERS, LOCK_TIMEOUT_MS, MAX_LOCKS_PER_PEER,
  AuthorityError, Reject,
} from './authority.js';
export { ProtocolError } from './netmsg.js';
export { Interpolator, INTERPOLATION_DEFAULTS } from './interpolate.js';
export {
  VoiceClient, VoiceMixer, VoiceError, SlotTable, voiceClaim, parseVoiceMessage, answerDirections, falloff, spatial, rmsToLevel, speaking,
  voiceURL, DEFAULT_SLOTS, DEFAULT_RADIUS, SILENCE, SPEAKING_LEVEL,
} from './voice.js';
export {
  VoiceKeeper, voiceBases, KEEP_GRACE_MS, KEEP_BACKOFF_MIN_MS, KEEP_BACKOFF_MAX_MS, KEEP_MAX_ATTEMPTS, BYE_REPLACED,
} from './voicekeep.js';
export { fetchCheckpoint, mergeCheckpoint } from './restore.js';
export { WorldClient, fetchDirectory, loadRegion } from './worldclient.js';
export {
  regionAt, regionsInView, roomName, parseRoomName, parseDirectory, mergeAvatars, ReplayQueue,
  MSG_RESIDENT, MSG_ACK, ACTION_INPUT, MAX_PENDING_INPUTS,
} from './regions.js';

/** @typedef {import('./peer.js').PeerOptions} PeerOptions */
/** @typedef {import('./peer.js').App} App */
/** @typedef {import('./peer.js').MemberInfo} MemberInfo */
/** @typedef {import('./peer.js').PeerStatusInfo} PeerStatusInfo */
/** @typedef {import('./peer.js').LogFunc} LogFunc */
/** @typedef {import('./peer.js').TokenProvider} TokenProvider */
/** @typedef {import('./world.js').WorldEvent} WorldEvent */
/** @typedef {import('./signaling.js').SignalingOptions} SignalingOptions */
/** @typedef {import('./signaling.js').SignalingEvent} SignalingEvent */
/** @typedef {import('./signaling.js').ResumeClaim} ResumeClaim */
/** @typedef {import('./schema.js').SchemaSpec} SchemaSpec */
/** @typedef {import('./schema.js').EncodingSpec} EncodingSpec */
/** @typedef {import('./authority.js').AuthorityRecord} AuthorityRecord */
/** @typedef {import('./interpolate.js').InterpolatorOptions} InterpolatorOptions */
/** @typedef {import('./voice.js').VoiceOptions} VoiceOptions */
/** @typedef {import('./voice.js').VoiceMessage} VoiceMessage */
/** @typedef {import('./voice.js').SlotChange} SlotChange */
/** @typedef {import('./voicekeep.js').KeepOptions} KeepOptions */
/** @typedef {import('./voicekeep.js').KeptClient} KeptClient */
/** @typedef {import('./worldclient.js').WorldClientOptions} WorldClientOptions */
/** @typedef {import('./worldclient.js').WorldClientEvent} WorldClientEvent */
/** @typedef {import('./worldclient.js').WorldEntity} WorldEntity */
/** @typedef {import('./regions.js').Directory} Directory */
