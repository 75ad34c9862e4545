// The frames of the hub protocol as data (docs/protocol.md "Frames", "Key registry", "Limits"):
// the frame types and who may send each, the key registry, the limits, the GOODBYE reasons, the
// typed frames the encoder takes and the decoder gives, the error a frame is refused with, and a
// cheap peek at a frame's type from its first bytes. The encoder is frame-encode.ts, the decoder
// frame-decode.ts; hub/frames.ts gathers all of it in one import.

import {
  KEY_BURST,
  KEY_GRANTED_RATE_HZ,
  KEY_PRIORITY,
  KEY_PUB_GRANTS,
  KEY_SUB_GRANTS,
  MAX_BURST_MULTIPLE,
} from './constants.js';
import { MAX_RATE_HZ } from '../catalog/schema.js';
import type { NackCode } from './nack.js';

export const PROTOCOL_VERSION = 1;

export const FrameType = Object.freeze({
  HELLO: 1,
  WELCOME: 2,
  SUBSCRIBE: 3,
  UNSUBSCRIBE: 4,
  PUBLISH: 5,
  GRANT: 6,
  DATA: 7,
  BUNDLE: 8,
  INTENT: 9,
  ECHO: 10,
  NACK: 11,
  ACK: 12,
  PING: 13,
  PONG: 14,
  GOODBYE: 15,
  ESTOP_CLEAR: 16,
  CATALOG: 17,
  HEALTH: 18,
} as const);
export type FrameTypeName = keyof typeof FrameType;
export type FrameTypeCode = (typeof FrameType)[FrameTypeName];
export const MAX_FRAME_TYPE = 18;

// Index = frame type code.
export const FRAME_TYPE_NAMES: readonly (FrameTypeName | undefined)[] = Object.freeze([
  undefined, 'HELLO', 'WELCOME', 'SUBSCRIBE', 'UNSUBSCRIBE', 'PUBLISH', 'GRANT', 'DATA', 'BUNDLE',
  'INTENT', 'ECHO', 'NACK', 'ACK', 'PING', 'PONG', 'GOODBYE', 'ESTOP_CLEAR', 'CATALOG', 'HEALTH',
] as const);

// Who may send each frame type. The decoder is direction-agnostic (the client library
// decodes what the hub sends with it); the hub's dispatcher answers a frame arriving the
// wrong way with NACK MALFORMED.
export const FROM_CLIENT = 1;
export const FROM_HUB = 2;
export const FRAME_DIRECTION: readonly number[] = Object.freeze([
  0,
  FROM_CLIENT, // HELLO
  FROM_HUB, // WELCOME
  FROM_CLIENT, // SUBSCRIBE
  FROM_CLIENT, // UNSUBSCRIBE
  FROM_CLIENT, // PUBLISH
  FROM_HUB, // GRANT
  FROM_HUB, // DATA
  FROM_CLIENT, // BUNDLE
  FROM_CLIENT, // INTENT
  FROM_HUB, // ECHO
  FROM_HUB, // NACK
  FROM_CLIENT, // ACK: the client acknowledges what the hub sent (§13.3)
  FROM_CLIENT | FROM_HUB, // PING
  FROM_CLIENT | FROM_HUB, // PONG
  FROM_CLIENT | FROM_HUB, // GOODBYE
  FROM_CLIENT, // ESTOP_CLEAR
  FROM_CLIENT | FROM_HUB, // CATALOG: request from the client, response from the hub
  FROM_CLIENT | FROM_HUB, // HEALTH: request from the client, response from the hub
]);

// The key registry (docs/protocol.md "Key registry").
export const Key = Object.freeze({
  TYPE: 0,
  VERSION: 1,
  SESSION_ID: 2,
  CHANNEL_ID: 3,
  SEQ: 4,
  T: 5,
  VALUES: 6, // DATA: values; BUNDLE: samples
  NAME: 7,
  CREDENTIAL: 8,
  RESUME_TOKEN: 9,
  SUB_WISHES: 10,
  PUB_WISHES: 11,
  WISHED_RATE_HZ: 12,
  PRIORITY: KEY_PRIORITY,
  GRANTED_RATE_HZ: KEY_GRANTED_RATE_HZ,
  CODE: 15,
  RETRY_AFTER_MS: 16,
  FRAME_TYPE: 17,
  ARGS: 18,
  REQUEST_ID: 19,
  RESULT: 20,
  HUB_ID: 21,
  MTU: 22,
  SLOTS: 23,
  CATALOG_HASH: 24,
  TIER: 25,
  GAP: 26,
  DROPPED: 27,
  ACKED: 28,
  ACK_BASE: 29,
  ACK_BITMAP: 30,
  T0: 31,
  T1: 32,
  OWNER: 33,
  LATCHED: 34,
  SUB_GRANTS: KEY_SUB_GRANTS,
  PUB_GRANTS: KEY_PUB_GRANTS,
  TEXT: 37,
  STALE_TTL_MS: 38,
  ESTOP_SEQ: 39,
  REASON: 40,
  CHANNELS: 41,
  BURST: KEY_BURST,
  OFFSET: 43,
  TOTAL: 44,
  LEVEL: 45,
} as const);
export const MAX_KEY = 45;

// Limits (docs/protocol.md "Limits"). A client→hub frame larger than MAX_FRAME_BYTES is
// refused whole with NACK TOO_LARGE; hub→client frames stay within MAX_HUB_FRAME_BYTES.
export const MAX_FRAME_BYTES = 1024;
// The largest hub frame is a DATA event with 32 float64 values and a 4096-byte text: 4424 bytes.
export const MAX_HUB_FRAME_BYTES = 4608;
export const MAX_NAME_BYTES = 32;
export const MAX_CREDENTIAL_BYTES = 64;
export const RESUME_TOKEN_BYTES = 16;
export const CATALOG_HASH_BYTES = 8;
export const MAX_TEXT_BYTES = 4096;
export const MAX_VALUES = 32;
export const MAX_SAMPLE_NUMBERS = MAX_VALUES + 1;
export const MAX_ARGS = 16;
export const MAX_ARG_TEXT_BYTES = 64;
export const MAX_LIST = 32;
export const MAX_BURST = MAX_RATE_HZ * MAX_BURST_MULTIPLE;
export const MAX_PRIORITY = 3;
export const MAX_TIER = 2;

// GOODBYE reasons (key 40).
export const GoodbyeReason = Object.freeze({
  NORMAL: 0,
  SHUTDOWN: 1,
  MISBEHAVING: 2,
  EVICTED: 3,
  RESUMED_ELSEWHERE: 4,
} as const);

export interface SubWish {
  channelId: number;
  wishedRateHz: number;
  priority?: number;
}
export interface PubWish {
  channelId: number;
  wishedRateHz: number;
  burst?: number;
}
export interface SubGrant {
  channelId: number;
  grantedRateHz: number;
  priority: number;
}
export interface PubGrant {
  channelId: number;
  grantedRateHz: number;
  burst: number;
}
export type Arg = number | string;

export interface HelloFrame {
  type: 1;
  version: number;
  name: string;
  credential?: Uint8Array;
  resumeToken?: Uint8Array;
  subWishes?: SubWish[];
  pubWishes?: PubWish[];
}
export interface WelcomeFrame {
  type: 2;
  sessionId: number;
  resumeToken: Uint8Array;
  hubId: string;
  mtu: number;
  slots: number;
  catalogHash: Uint8Array;
  tier: number;
  owner: number;
  latched: boolean;
  subGrants: SubGrant[];
  pubGrants: PubGrant[];
  staleTtlMs: number;
}
export interface SubscribeFrame {
  type: 3;
  wishes: SubWish[];
}
export interface UnsubscribeFrame {
  type: 4;
  channels: number[];
}
export interface PublishFrame {
  type: 5;
  wishes: PubWish[];
}
export interface GrantFrame {
  type: 6;
  subGrants?: SubGrant[];
  pubGrants?: PubGrant[];
}
export interface DataFrame {
  type: 7;
  channelId: number;
  seq: number;
  t: number;
  values: number[];
  gap?: true;
  dropped?: number;
  text?: string;
}
export interface BundleFrame {
  type: 8;
  channelId: number;
  samples: number[][];
}
export interface IntentFrame {
  type: 9;
  channelId: number;
  requestId: number;
  args?: Arg[];
}
export interface EchoFrame {
  type: 10;
  channelId: number;
  requestId: number;
  result: number;
  args?: Arg[];
}
export interface NackFrame {
  type: 11;
  code: number;
  channelId?: number;
  frameType?: number;
  requestId?: number;
  retryAfterMs?: number;
}
export interface StreamAckFrame {
  type: 12;
  acked: number;
}
export interface BitmapAckFrame {
  type: 12;
  ackBase: number;
  ackBitmap: number;
}
export type AckFrame = StreamAckFrame | BitmapAckFrame;
export interface PingFrame {
  type: 13;
  t0: number;
}
export interface PongFrame {
  type: 14;
  t0: number;
  t1: number;
  /** Hub → client in a session: the §10.3 level the hub reads this session's link at (0–3). */
  level?: number;
}
export interface GoodbyeFrame {
  type: 15;
  reason?: number;
}
export interface EstopClearFrame {
  type: 16;
  estopSeq?: number;
}
// Request: no catalogHash/text (offset asks for a later chunk). Response: catalogHash and text.
export interface CatalogFrame {
  type: 17;
  catalogHash?: Uint8Array;
  text?: string;
  offset?: number;
  total?: number;
}
// Request: no text. Response: text (health JSON).
export interface HealthFrame {
  type: 18;
  text?: string;
  offset?: number;
  total?: number;
}

export type Frame =
  | HelloFrame
  | WelcomeFrame
  | SubscribeFrame
  | UnsubscribeFrame
  | PublishFrame
  | GrantFrame
  | DataFrame
  | BundleFrame
  | IntentFrame
  | EchoFrame
  | NackFrame
  | AckFrame
  | PingFrame
  | PongFrame
  | GoodbyeFrame
  | EstopClearFrame
  | CatalogFrame
  | HealthFrame;

export class FrameError extends Error {
  readonly nack: NackCode;
  readonly frameType: number | undefined;
  readonly key: number | undefined;
  constructor(nack: NackCode, frameType: number | undefined, key: number | undefined, message: string) {
    super(message);
    this.name = 'FrameError';
    this.nack = nack;
    this.frameType = frameType;
    this.key = key;
  }
}

// ---------------------------------------------------------------------------------------
// Peeking

// The frame type from the first bytes: a definite-length map whose first key is 0 and whose
// type value is an unsigned integer. −1 for anything else (an ESTOP frame, a fragment, junk).
// It does not validate the frame; decodeFrame does.
export function peekFrameType(buf: Uint8Array, start: number, end: number): number {
  if (end > buf.length) end = buf.length;
  let p = start;
  if (p < 0 || p >= end) return -1;
  const h = buf[p++] as number;
  if (h >> 5 !== 5) return -1;
  const ai = h & 0x1f;
  if (ai === 0) return -1;
  if (ai === 24) p += 1;
  else if (ai === 25) p += 2;
  else if (ai === 26) p += 4;
  else if (ai > 23) return -1;
  if (p >= end || buf[p++] !== 0) return -1;
  if (p >= end) return -1;
  const v = buf[p++] as number;
  if (v >> 5 !== 0) return -1;
  const vai = v & 0x1f;
  if (vai < 24) return vai;
  if (vai === 24) return p + 1 <= end ? (buf[p] as number) : -1;
  if (vai === 25) return p + 2 <= end ? ((buf[p] as number) << 8) | (buf[p + 1] as number) : -1;
  if (vai === 26) {
    if (p + 4 > end) return -1;
    return (
      (buf[p] as number) * 0x1000000 +
      (((buf[p + 1] as number) << 16) | ((buf[p + 2] as number) << 8) | (buf[p + 3] as number))
    );
  }
  return -1;
}
