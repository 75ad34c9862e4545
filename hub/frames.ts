// Every CBOR frame of the hub protocol (docs/protocol.md "Frames"): typed frames, one
// encoder and one validating decoder, a hot-path DATA encoder that allocates nothing, and a
// cheap peek at a frame's type. The 12-byte ESTOP frame is not CBOR: see estop-frame.ts.
//
// A frame is one CBOR map with unsigned-integer keys in strictly ascending order; key 0 is
// the frame type. One key registry serves every frame: a key number means the same field
// wherever it appears. Unknown keys are skipped (forward compatibility) but must still be
// valid CBOR within the reader's limits.

import { CborError, CborReader, type CborWriter } from './cbor.js';
import {
  KEY_BURST,
  KEY_GRANTED_RATE_HZ,
  KEY_PRIORITY,
  KEY_PUB_GRANTS,
  KEY_SUB_GRANTS,
  MAX_BUNDLE_SAMPLES,
  MAX_BURST_MULTIPLE,
} from './constants.js';
import { MAX_CHANNEL_ID, MAX_RATE_HZ, MIN_CHANNEL_ID } from '../catalog/schema.js';
import { Nack, type NackCode } from './nack.js';
import { utf8ByteLength } from './utf8.js';

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
} as const);
export const MAX_KEY = 44;

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
const U8 = 0xff;
const U16 = 0xffff;
const U32 = 0xffffffff;
const MAX_UINT = Number.MAX_SAFE_INTEGER;

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
// Encoding

function writeSubWishes(w: CborWriter, list: readonly SubWish[]): void {
  w.array(list.length);
  for (const x of list) {
    const hasPriority = x.priority !== undefined;
    w.map(hasPriority ? 3 : 2);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.WISHED_RATE_HZ);
    w.number(x.wishedRateHz);
    if (hasPriority) {
      w.uint(Key.PRIORITY);
      w.uint(x.priority as number);
    }
  }
}

function writePubWishes(w: CborWriter, list: readonly PubWish[]): void {
  w.array(list.length);
  for (const x of list) {
    const hasBurst = x.burst !== undefined;
    w.map(hasBurst ? 3 : 2);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.WISHED_RATE_HZ);
    w.number(x.wishedRateHz);
    if (hasBurst) {
      w.uint(Key.BURST);
      w.number(x.burst as number);
    }
  }
}

function writeSubGrants(w: CborWriter, list: readonly SubGrant[]): void {
  w.array(list.length);
  for (const x of list) {
    w.map(3);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.PRIORITY);
    w.uint(x.priority);
    w.uint(Key.GRANTED_RATE_HZ);
    w.number(x.grantedRateHz);
  }
}

function writePubGrants(w: CborWriter, list: readonly PubGrant[]): void {
  w.array(list.length);
  for (const x of list) {
    w.map(3);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.GRANTED_RATE_HZ);
    w.number(x.grantedRateHz);
    w.uint(Key.BURST);
    w.number(x.burst);
  }
}

function writeNumbers(w: CborWriter, list: readonly number[]): void {
  w.array(list.length);
  for (const x of list) w.number(x);
}

function writeArgs(w: CborWriter, list: readonly Arg[]): void {
  w.array(list.length);
  for (const x of list) {
    if (typeof x === 'string') w.text(x);
    else w.number(x);
  }
}

function count(...present: boolean[]): number {
  let n = 0;
  for (const p of present) if (p) n++;
  return n;
}

// Appends the frame at w.pos. It writes what it is given (the hub builds its frames from
// validated state); decodeFrame is where everything is checked.
export function encodeFrame(f: Frame, w: CborWriter): void {
  switch (f.type) {
    case FrameType.HELLO: {
      const cred = f.credential !== undefined;
      const tok = f.resumeToken !== undefined;
      const subs = f.subWishes !== undefined;
      const pubs = f.pubWishes !== undefined;
      w.map(3 + count(cred, tok, subs, pubs));
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.VERSION);
      w.uint(f.version);
      w.uint(Key.NAME);
      w.text(f.name);
      if (cred) {
        w.uint(Key.CREDENTIAL);
        w.bytes(f.credential as Uint8Array);
      }
      if (tok) {
        w.uint(Key.RESUME_TOKEN);
        w.bytes(f.resumeToken as Uint8Array);
      }
      if (subs) {
        w.uint(Key.SUB_WISHES);
        writeSubWishes(w, f.subWishes as SubWish[]);
      }
      if (pubs) {
        w.uint(Key.PUB_WISHES);
        writePubWishes(w, f.pubWishes as PubWish[]);
      }
      return;
    }
    case FrameType.WELCOME:
      w.map(13);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.SESSION_ID);
      w.uint(f.sessionId);
      w.uint(Key.RESUME_TOKEN);
      w.bytes(f.resumeToken);
      w.uint(Key.HUB_ID);
      w.text(f.hubId);
      w.uint(Key.MTU);
      w.uint(f.mtu);
      w.uint(Key.SLOTS);
      w.uint(f.slots);
      w.uint(Key.CATALOG_HASH);
      w.bytes(f.catalogHash);
      w.uint(Key.TIER);
      w.uint(f.tier);
      w.uint(Key.OWNER);
      w.uint(f.owner);
      w.uint(Key.LATCHED);
      w.bool(f.latched);
      w.uint(Key.SUB_GRANTS);
      writeSubGrants(w, f.subGrants);
      w.uint(Key.PUB_GRANTS);
      writePubGrants(w, f.pubGrants);
      w.uint(Key.STALE_TTL_MS);
      w.uint(f.staleTtlMs);
      return;
    case FrameType.SUBSCRIBE:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.SUB_WISHES);
      writeSubWishes(w, f.wishes);
      return;
    case FrameType.UNSUBSCRIBE:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNELS);
      w.array(f.channels.length);
      for (const c of f.channels) w.uint(c);
      return;
    case FrameType.PUBLISH:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.PUB_WISHES);
      writePubWishes(w, f.wishes);
      return;
    case FrameType.GRANT: {
      const subs = f.subGrants !== undefined;
      const pubs = f.pubGrants !== undefined;
      w.map(1 + count(subs, pubs));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (subs) {
        w.uint(Key.SUB_GRANTS);
        writeSubGrants(w, f.subGrants as SubGrant[]);
      }
      if (pubs) {
        w.uint(Key.PUB_GRANTS);
        writePubGrants(w, f.pubGrants as PubGrant[]);
      }
      return;
    }
    case FrameType.DATA: {
      const gap = f.gap === true;
      const dropped = f.dropped !== undefined && f.dropped > 0;
      const text = f.text !== undefined;
      w.map(5 + count(gap, dropped, text));
      writeDataHead(w, f.channelId, f.seq, f.t, f.values.length);
      for (const x of f.values) w.number(x);
      writeDataTail(w, gap, dropped ? (f.dropped as number) : 0);
      if (text) {
        w.uint(Key.TEXT);
        w.text(f.text as string);
      }
      return;
    }
    case FrameType.BUNDLE:
      w.map(3);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNEL_ID);
      w.uint(f.channelId);
      w.uint(Key.VALUES);
      w.array(f.samples.length);
      for (const s of f.samples) writeNumbers(w, s);
      return;
    case FrameType.INTENT: {
      const args = f.args !== undefined;
      w.map(3 + count(args));
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNEL_ID);
      w.uint(f.channelId);
      if (args) {
        w.uint(Key.ARGS);
        writeArgs(w, f.args as Arg[]);
      }
      w.uint(Key.REQUEST_ID);
      w.uint(f.requestId);
      return;
    }
    case FrameType.ECHO: {
      const args = f.args !== undefined;
      w.map(4 + count(args));
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNEL_ID);
      w.uint(f.channelId);
      if (args) {
        w.uint(Key.ARGS);
        writeArgs(w, f.args as Arg[]);
      }
      w.uint(Key.REQUEST_ID);
      w.uint(f.requestId);
      w.uint(Key.RESULT);
      w.uint(f.result);
      return;
    }
    case FrameType.NACK: {
      const ch = f.channelId !== undefined;
      const retry = f.retryAfterMs !== undefined;
      const ft = f.frameType !== undefined;
      const req = f.requestId !== undefined;
      w.map(2 + count(ch, retry, ft, req));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (ch) {
        w.uint(Key.CHANNEL_ID);
        w.uint(f.channelId as number);
      }
      w.uint(Key.CODE);
      w.uint(f.code);
      if (retry) {
        w.uint(Key.RETRY_AFTER_MS);
        w.uint(f.retryAfterMs as number);
      }
      if (ft) {
        w.uint(Key.FRAME_TYPE);
        w.uint(f.frameType as number);
      }
      if (req) {
        w.uint(Key.REQUEST_ID);
        w.uint(f.requestId as number);
      }
      return;
    }
    case FrameType.ACK:
      if ('acked' in f) {
        w.map(2);
        w.uint(Key.TYPE);
        w.uint(f.type);
        w.uint(Key.ACKED);
        w.uint(f.acked);
      } else {
        w.map(3);
        w.uint(Key.TYPE);
        w.uint(f.type);
        w.uint(Key.ACK_BASE);
        w.uint(f.ackBase);
        w.uint(Key.ACK_BITMAP);
        w.uint(f.ackBitmap);
      }
      return;
    case FrameType.PING:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.T0);
      w.uint(f.t0);
      return;
    case FrameType.PONG:
      w.map(3);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.T0);
      w.uint(f.t0);
      w.uint(Key.T1);
      w.uint(f.t1);
      return;
    case FrameType.GOODBYE: {
      const reason = f.reason !== undefined;
      w.map(1 + count(reason));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (reason) {
        w.uint(Key.REASON);
        w.uint(f.reason as number);
      }
      return;
    }
    case FrameType.ESTOP_CLEAR: {
      const seq = f.estopSeq !== undefined;
      w.map(1 + count(seq));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (seq) {
        w.uint(Key.ESTOP_SEQ);
        w.uint(f.estopSeq as number);
      }
      return;
    }
    case FrameType.CATALOG:
    case FrameType.HEALTH: {
      const hash = f.type === FrameType.CATALOG && f.catalogHash !== undefined;
      const text = f.text !== undefined;
      const offset = f.offset !== undefined;
      const total = f.total !== undefined;
      w.map(1 + count(hash, text, offset, total));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (hash) {
        w.uint(Key.CATALOG_HASH);
        w.bytes((f as CatalogFrame).catalogHash as Uint8Array);
      }
      if (text) {
        w.uint(Key.TEXT);
        w.text(f.text as string);
      }
      if (offset) {
        w.uint(Key.OFFSET);
        w.uint(f.offset as number);
      }
      if (total) {
        w.uint(Key.TOTAL);
        w.uint(f.total as number);
      }
      return;
    }
  }
  throw new TypeError(`encodeFrame: unknown frame type ${String((f as { type: unknown }).type)}`);
}

function writeDataHead(w: CborWriter, channelId: number, seq: number, t: number, n: number): void {
  w.uint(Key.TYPE);
  w.uint(FrameType.DATA);
  w.uint(Key.CHANNEL_ID);
  w.uint(channelId);
  w.uint(Key.SEQ);
  w.uint(seq);
  w.uint(Key.T);
  w.uint(t);
  w.uint(Key.VALUES);
  w.array(n);
}

function writeDataTail(w: CborWriter, gap: boolean, dropped: number): void {
  if (gap) {
    w.uint(Key.GAP);
    w.bool(true);
  }
  if (dropped > 0) {
    w.uint(Key.DROPPED);
    w.uint(dropped);
  }
}

// The hot path: one sample or STATE value, encoded once and then copied to each subscriber.
// Writes exactly what encodeFrame writes for the DATA frame {channelId, seq, t,
// values: values[0..count), gap: true if gap, dropped if > 0} and allocates nothing.
export function encodeData(
  w: CborWriter,
  channelId: number,
  seq: number,
  t: number,
  values: Float64Array,
  count: number,
  gap: boolean,
  dropped: number,
): void {
  w.map(5 + (gap ? 1 : 0) + (dropped > 0 ? 1 : 0));
  writeDataHead(w, channelId, seq, t, count);
  for (let i = 0; i < count; i++) w.number(values[i] as number);
  writeDataTail(w, gap, dropped);
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

// ---------------------------------------------------------------------------------------
// Decoding

const MAJOR_UINT = 0;
const MAJOR_NINT = 1;
const MAJOR_BYTES = 2;
const MAJOR_TEXT = 3;
const MAJOR_ARRAY = 4;
const MAJOR_MAP = 5;
const MAJOR_SIMPLE = 7;

// Which keys each frame type reads, indexed by frame type: bit k of [lo, hi] for key k
// (lo: 0–31, hi: 32–63). Any other key is skipped.
function keys(...ks: number[]): readonly [number, number] {
  let lo = 0;
  let hi = 0;
  for (const k of ks) {
    if (k < 32) lo |= 1 << k;
    else hi |= 1 << (k - 32);
  }
  return Object.freeze([lo >>> 0, hi >>> 0] as const);
}
const K = Key;
const FRAME_KEYS: readonly (readonly [number, number])[] = Object.freeze([
  keys(),
  keys(K.VERSION, K.NAME, K.CREDENTIAL, K.RESUME_TOKEN, K.SUB_WISHES, K.PUB_WISHES),
  keys(K.SESSION_ID, K.RESUME_TOKEN, K.HUB_ID, K.MTU, K.SLOTS, K.CATALOG_HASH, K.TIER, K.OWNER, K.LATCHED,
    K.SUB_GRANTS, K.PUB_GRANTS, K.STALE_TTL_MS),
  keys(K.SUB_WISHES),
  keys(K.CHANNELS),
  keys(K.PUB_WISHES),
  keys(K.SUB_GRANTS, K.PUB_GRANTS),
  keys(K.CHANNEL_ID, K.SEQ, K.T, K.VALUES, K.GAP, K.DROPPED, K.TEXT),
  keys(K.CHANNEL_ID, K.VALUES),
  keys(K.CHANNEL_ID, K.ARGS, K.REQUEST_ID),
  keys(K.CHANNEL_ID, K.ARGS, K.REQUEST_ID, K.RESULT),
  keys(K.CHANNEL_ID, K.CODE, K.RETRY_AFTER_MS, K.FRAME_TYPE, K.REQUEST_ID),
  keys(K.ACKED, K.ACK_BASE, K.ACK_BITMAP),
  keys(K.T0),
  keys(K.T0, K.T1),
  keys(K.REASON),
  keys(K.ESTOP_SEQ),
  keys(K.CATALOG_HASH, K.TEXT, K.OFFSET, K.TOTAL),
  keys(K.TEXT, K.OFFSET, K.TOTAL),
]);

function reads(type: number, key: number): boolean {
  const m = FRAME_KEYS[type] as readonly [number, number];
  if (key < 32) return ((m[0] >>> key) & 1) === 1;
  if (key < 64) return ((m[1] >>> (key - 32)) & 1) === 1;
  return false;
}

// Decoder state for one frame. Decoding is not re-entrant: one frame at a time. The buffers
// are made on first use, not at module load, so that a preloaded module keeps none in flash.
let curType: number | undefined;
let curKey: number | undefined;
let reader: CborReader | undefined;
let presentLo = 0;
let presentHi = 0;
// Field values by key, valid where the present bits are set.
let fields: unknown[] | undefined;
// Channel ids seen in the list being read (duplicates are malformed): a 256-bit set.
let seen: Uint32Array | undefined;

function bad(message: string): never {
  throw new FrameError(Nack.MALFORMED, curType, curKey, message);
}

function has(key: number): boolean {
  return key < 32 ? ((presentLo >>> key) & 1) === 1 : ((presentHi >>> (key - 32)) & 1) === 1;
}

function need<T>(key: number): T {
  if (!has(key)) {
    curKey = key;
    bad(`missing required key ${key}`);
  }
  return (fields as unknown[])[key] as T;
}

function opt<T>(key: number): T | undefined {
  return has(key) ? ((fields as unknown[])[key] as T) : undefined;
}

function expectMajor(r: CborReader, major: number, what: string): void {
  if (r.atEnd()) bad('truncated');
  if (r.peekMajor() !== major) bad(`${what}: wrong type`);
}

function readUint(r: CborReader, min: number, max: number, what: string): number {
  expectMajor(r, MAJOR_UINT, what);
  const v = r.uint();
  if (v < min || v > max) bad(`${what}: ${v} out of range [${min}, ${max}]`);
  return v;
}

function readNumber(r: CborReader, what: string): number {
  if (r.atEnd()) bad('truncated');
  const m = r.peekMajor();
  if (m !== MAJOR_UINT && m !== MAJOR_NINT && m !== MAJOR_SIMPLE) bad(`${what}: not a number`);
  return r.number();
}

function readRate(r: CborReader, what: string, zeroAllowed: boolean, max: number): number {
  const v = readNumber(r, what);
  if (!Number.isFinite(v) || v > max || (zeroAllowed ? v < 0 : !(v > 0)) || Object.is(v, -0)) {
    bad(`${what}: ${v} out of range`);
  }
  return v;
}

function readBool(r: CborReader, what: string): boolean {
  expectMajor(r, MAJOR_SIMPLE, what);
  return r.bool();
}

function readText(r: CborReader, minBytes: number, maxBytes: number, what: string): string {
  expectMajor(r, MAJOR_TEXT, what);
  const s = r.text();
  const n = utf8ByteLength(s);
  if (n < minBytes || n > maxBytes) bad(`${what}: ${n} bytes out of range [${minBytes}, ${maxBytes}]`);
  return s;
}

function readBytes(r: CborReader, minBytes: number, maxBytes: number, what: string): Uint8Array {
  expectMajor(r, MAJOR_BYTES, what);
  const b = r.bytes();
  if (b.length < minBytes || b.length > maxBytes) bad(`${what}: ${b.length} bytes out of range`);
  return b;
}

function readArrayHead(r: CborReader, min: number, max: number, what: string): number {
  expectMajor(r, MAJOR_ARRAY, what);
  const n = r.array();
  if (n < min || n > max) bad(`${what}: ${n} items out of range [${min}, ${max}]`);
  return n;
}

// Reads one key of a map: an unsigned integer strictly above the previous one.
function readKey(r: CborReader, prev: number): number {
  if (r.atEnd()) bad('truncated');
  if (r.peekMajor() !== MAJOR_UINT) bad('map key is not an unsigned integer');
  const k = r.uint();
  if (k <= prev) bad(`map key ${k} not above ${prev}`);
  return k;
}

function clearSeen(): Uint32Array {
  if (seen === undefined) seen = new Uint32Array(8);
  else seen.fill(0);
  return seen;
}

function firstSeen(channelId: number): boolean {
  const set = seen as Uint32Array;
  const i = channelId >>> 5;
  const bit = 1 << (channelId & 31);
  const word = set[i] as number;
  if (word & bit) return false;
  set[i] = word | bit;
  return true;
}

function readChannelList(r: CborReader): number[] {
  const n = readArrayHead(r, 1, MAX_LIST, 'channels');
  clearSeen();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const c = readUint(r, MIN_CHANNEL_ID, MAX_CHANNEL_ID, 'channel_id');
    if (!firstSeen(c)) bad(`channel ${c} listed twice`);
    out.push(c);
  }
  return out;
}

// The entries of key 10/11/35/36: maps {3 channel_id, 12|14 rate, 13|42 ...}.
const ENTRY_SUB_WISH = 0;
const ENTRY_PUB_WISH = 1;
const ENTRY_SUB_GRANT = 2;
const ENTRY_PUB_GRANT = 3;

function readEntries(r: CborReader, kind: number, min: number): (SubWish | PubWish | SubGrant | PubGrant)[] {
  const n = readArrayHead(r, min, MAX_LIST, 'list');
  clearSeen();
  const out: (SubWish | PubWish | SubGrant | PubGrant)[] = [];
  for (let i = 0; i < n; i++) {
    expectMajor(r, MAJOR_MAP, 'list entry');
    const m = r.map();
    let prev = -1;
    let channelId = -1;
    let rate = -1;
    let priority = -1;
    let burst = -1;
    for (let j = 0; j < m; j++) {
      const k = readKey(r, prev);
      prev = k;
      if (k === Key.CHANNEL_ID) channelId = readUint(r, MIN_CHANNEL_ID, MAX_CHANNEL_ID, 'channel_id');
      else if (k === Key.WISHED_RATE_HZ && kind <= ENTRY_PUB_WISH) rate = readRate(r, 'wished_rate_hz', false, MAX_RATE_HZ);
      else if (k === Key.GRANTED_RATE_HZ && kind >= ENTRY_SUB_GRANT) rate = readRate(r, 'granted_rate_hz', true, MAX_RATE_HZ);
      else if (k === Key.PRIORITY && (kind === ENTRY_SUB_WISH || kind === ENTRY_SUB_GRANT)) priority = readUint(r, 0, MAX_PRIORITY, 'priority');
      else if (k === Key.BURST && kind === ENTRY_PUB_WISH) burst = readRate(r, 'burst', false, MAX_BURST);
      else if (k === Key.BURST && kind === ENTRY_PUB_GRANT) burst = readRate(r, 'burst', true, MAX_BURST);
      else r.skip();
    }
    if (channelId < 0) bad('entry without channel_id');
    if (rate < 0) bad('entry without a rate');
    if (!firstSeen(channelId)) bad(`channel ${channelId} listed twice`);
    if (kind === ENTRY_SUB_WISH) {
      out.push(priority < 0 ? { channelId, wishedRateHz: rate } : { channelId, wishedRateHz: rate, priority });
    } else if (kind === ENTRY_PUB_WISH) {
      out.push(burst < 0 ? { channelId, wishedRateHz: rate } : { channelId, wishedRateHz: rate, burst });
    } else if (kind === ENTRY_SUB_GRANT) {
      if (priority < 0) bad('grant without priority');
      out.push({ channelId, grantedRateHz: rate, priority });
    } else {
      if (burst < 0) bad('grant without burst');
      out.push({ channelId, grantedRateHz: rate, burst });
    }
  }
  return out;
}

function readNumbers(r: CborReader, min: number, max: number, what: string): number[] {
  const n = readArrayHead(r, min, max, what);
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(readNumber(r, what));
  return out;
}

function readSamples(r: CborReader): number[][] {
  expectMajor(r, MAJOR_ARRAY, 'samples');
  const n = r.array();
  // §10.5: a bundle batches at most 32 samples; more is refused whole.
  if (n > MAX_BUNDLE_SAMPLES) {
    throw new FrameError(Nack.TOO_LARGE, curType, curKey, `bundle of ${n} samples (max ${MAX_BUNDLE_SAMPLES})`);
  }
  if (n < 1) bad('empty bundle');
  const out: number[][] = [];
  for (let i = 0; i < n; i++) {
    const s = readNumbers(r, 1, MAX_SAMPLE_NUMBERS, 'sample');
    const t = s[0] as number;
    if (!Number.isInteger(t) || t < 0) bad('sample time is not an unsigned integer');
    out.push(s);
  }
  return out;
}

function readArgs(r: CborReader): Arg[] {
  const n = readArrayHead(r, 0, MAX_ARGS, 'args');
  const out: Arg[] = [];
  for (let i = 0; i < n; i++) {
    if (r.atEnd()) bad('truncated');
    if (r.peekMajor() === MAJOR_TEXT) out.push(readText(r, 0, MAX_ARG_TEXT_BYTES, 'arg'));
    else out.push(readNumber(r, 'arg'));
  }
  return out;
}

// One field by the key registry; `type` only chooses between DATA values and BUNDLE samples.
function readField(r: CborReader, type: number, key: number): unknown {
  switch (key) {
    case K.VERSION: return readUint(r, 0, U16, 'version');
    case K.SESSION_ID: return readUint(r, 1, U32, 'session_id');
    case K.CHANNEL_ID: return readUint(r, MIN_CHANNEL_ID, MAX_CHANNEL_ID, 'channel_id');
    case K.SEQ: return readUint(r, 0, U32, 'seq');
    case K.T: return readUint(r, 0, MAX_UINT, 't');
    case K.VALUES: return type === FrameType.BUNDLE ? readSamples(r) : readNumbers(r, 0, MAX_VALUES, 'values');
    case K.NAME: return readText(r, 1, MAX_NAME_BYTES, 'name');
    case K.CREDENTIAL: return readBytes(r, 0, MAX_CREDENTIAL_BYTES, 'credential');
    case K.RESUME_TOKEN: return readBytes(r, RESUME_TOKEN_BYTES, RESUME_TOKEN_BYTES, 'resume_token');
    case K.SUB_WISHES: return readEntries(r, ENTRY_SUB_WISH, type === FrameType.SUBSCRIBE ? 1 : 0);
    case K.PUB_WISHES: return readEntries(r, ENTRY_PUB_WISH, type === FrameType.PUBLISH ? 1 : 0);
    case K.CODE: return readUint(r, 1, U8, 'code');
    case K.RETRY_AFTER_MS: return readUint(r, 0, U32, 'retry_after_ms');
    case K.FRAME_TYPE: return readUint(r, 0, U8, 'frame_type');
    case K.ARGS: return readArgs(r);
    case K.REQUEST_ID: return readUint(r, 0, U32, 'request_id');
    case K.RESULT: return readUint(r, 0, U8, 'result');
    case K.HUB_ID: return readText(r, 1, MAX_NAME_BYTES, 'hub_id');
    case K.MTU: return readUint(r, 1, U16, 'mtu');
    case K.SLOTS: return readUint(r, 1, U8, 'slots');
    case K.CATALOG_HASH: return readBytes(r, CATALOG_HASH_BYTES, CATALOG_HASH_BYTES, 'catalog_hash');
    case K.TIER: return readUint(r, 0, MAX_TIER, 'tier');
    case K.GAP: return readBool(r, 'gap');
    case K.DROPPED: return readUint(r, 0, U32, 'dropped');
    case K.ACKED: return readUint(r, 0, U32, 'acked');
    case K.ACK_BASE: return readUint(r, 0, U16, 'ack_base');
    case K.ACK_BITMAP: return readUint(r, 0, U32, 'ack_bitmap');
    case K.T0: return readUint(r, 0, MAX_UINT, 't0');
    case K.T1: return readUint(r, 0, MAX_UINT, 't1');
    case K.OWNER: return readUint(r, 0, U32, 'owner');
    case K.LATCHED: return readBool(r, 'latched');
    case K.SUB_GRANTS: return readEntries(r, ENTRY_SUB_GRANT, 0);
    case K.PUB_GRANTS: return readEntries(r, ENTRY_PUB_GRANT, 0);
    case K.TEXT: return readText(r, 0, MAX_TEXT_BYTES, 'text');
    case K.STALE_TTL_MS: return readUint(r, 0, U32, 'stale_ttl_ms');
    case K.ESTOP_SEQ: return readUint(r, 0, U16, 'estop_seq');
    case K.REASON: return readUint(r, 0, U8, 'reason');
    case K.CHANNELS: return readChannelList(r);
    case K.OFFSET: return readUint(r, 0, U32, 'offset');
    case K.TOTAL: return readUint(r, 0, U32, 'total');
  }
  return bad(`key ${key} has no reader`);
}

function build(type: number): Frame {
  switch (type) {
    case FrameType.HELLO: {
      // Version first: a client of another version gets VERSION, not an error about a key
      // that its version may lay out differently.
      const version = need<number>(K.VERSION);
      if (version !== PROTOCOL_VERSION) {
        throw new FrameError(Nack.VERSION, type, K.VERSION, `protocol version ${version} (this hub speaks ${PROTOCOL_VERSION})`);
      }
      const f: HelloFrame = { type, version, name: need<string>(K.NAME) };
      const cred = opt<Uint8Array>(K.CREDENTIAL);
      if (cred !== undefined) f.credential = cred;
      const tok = opt<Uint8Array>(K.RESUME_TOKEN);
      if (tok !== undefined) f.resumeToken = tok;
      const subs = opt<SubWish[]>(K.SUB_WISHES);
      if (subs !== undefined) f.subWishes = subs;
      const pubs = opt<PubWish[]>(K.PUB_WISHES);
      if (pubs !== undefined) f.pubWishes = pubs;
      return f;
    }
    case FrameType.WELCOME:
      return {
        type,
        sessionId: need<number>(K.SESSION_ID),
        resumeToken: need<Uint8Array>(K.RESUME_TOKEN),
        hubId: need<string>(K.HUB_ID),
        mtu: need<number>(K.MTU),
        slots: need<number>(K.SLOTS),
        catalogHash: need<Uint8Array>(K.CATALOG_HASH),
        tier: need<number>(K.TIER),
        owner: need<number>(K.OWNER),
        latched: need<boolean>(K.LATCHED),
        subGrants: need<SubGrant[]>(K.SUB_GRANTS),
        pubGrants: need<PubGrant[]>(K.PUB_GRANTS),
        staleTtlMs: need<number>(K.STALE_TTL_MS),
      };
    case FrameType.SUBSCRIBE:
      return { type, wishes: need<SubWish[]>(K.SUB_WISHES) };
    case FrameType.UNSUBSCRIBE:
      return { type, channels: need<number[]>(K.CHANNELS) };
    case FrameType.PUBLISH:
      return { type, wishes: need<PubWish[]>(K.PUB_WISHES) };
    case FrameType.GRANT: {
      const f: GrantFrame = { type };
      const subs = opt<SubGrant[]>(K.SUB_GRANTS);
      if (subs !== undefined) f.subGrants = subs;
      const pubs = opt<PubGrant[]>(K.PUB_GRANTS);
      if (pubs !== undefined) f.pubGrants = pubs;
      if (subs === undefined && pubs === undefined) bad('GRANT carries neither key 35 nor key 36');
      return f;
    }
    case FrameType.DATA: {
      const f: DataFrame = {
        type,
        channelId: need<number>(K.CHANNEL_ID),
        seq: need<number>(K.SEQ),
        t: need<number>(K.T),
        values: need<number[]>(K.VALUES),
      };
      // Canonical form omits gap:false and dropped:0; both read back as absent.
      if (opt<boolean>(K.GAP) === true) f.gap = true;
      const dropped = opt<number>(K.DROPPED);
      if (dropped !== undefined && dropped > 0) f.dropped = dropped;
      const text = opt<string>(K.TEXT);
      if (text !== undefined) f.text = text;
      return f;
    }
    case FrameType.BUNDLE:
      return { type, channelId: need<number>(K.CHANNEL_ID), samples: need<number[][]>(K.VALUES) };
    case FrameType.INTENT: {
      const f: IntentFrame = { type, channelId: need<number>(K.CHANNEL_ID), requestId: need<number>(K.REQUEST_ID) };
      const args = opt<Arg[]>(K.ARGS);
      if (args !== undefined) f.args = args;
      return f;
    }
    case FrameType.ECHO: {
      const f: EchoFrame = {
        type,
        channelId: need<number>(K.CHANNEL_ID),
        requestId: need<number>(K.REQUEST_ID),
        result: need<number>(K.RESULT),
      };
      const args = opt<Arg[]>(K.ARGS);
      if (args !== undefined) f.args = args;
      return f;
    }
    case FrameType.NACK: {
      const f: NackFrame = { type, code: need<number>(K.CODE) };
      const ch = opt<number>(K.CHANNEL_ID);
      if (ch !== undefined) f.channelId = ch;
      const ft = opt<number>(K.FRAME_TYPE);
      if (ft !== undefined) f.frameType = ft;
      const req = opt<number>(K.REQUEST_ID);
      if (req !== undefined) f.requestId = req;
      const retry = opt<number>(K.RETRY_AFTER_MS);
      if (retry !== undefined) f.retryAfterMs = retry;
      return f;
    }
    case FrameType.ACK: {
      const acked = opt<number>(K.ACKED);
      const base = opt<number>(K.ACK_BASE);
      const bitmap = opt<number>(K.ACK_BITMAP);
      if (acked !== undefined) {
        if (base !== undefined || bitmap !== undefined) bad('ACK mixes the stream and bitmap forms');
        return { type, acked };
      }
      if (base === undefined || bitmap === undefined) {
        curKey = base === undefined ? K.ACK_BASE : K.ACK_BITMAP;
        bad('ACK needs acked, or both ack_base and ack_bitmap');
      }
      return { type, ackBase: base, ackBitmap: bitmap };
    }
    case FrameType.PING:
      return { type, t0: need<number>(K.T0) };
    case FrameType.PONG:
      return { type, t0: need<number>(K.T0), t1: need<number>(K.T1) };
    case FrameType.GOODBYE: {
      const f: GoodbyeFrame = { type };
      const reason = opt<number>(K.REASON);
      if (reason !== undefined) f.reason = reason;
      return f;
    }
    case FrameType.ESTOP_CLEAR: {
      const f: EstopClearFrame = { type };
      const seq = opt<number>(K.ESTOP_SEQ);
      if (seq !== undefined) f.estopSeq = seq;
      return f;
    }
    case FrameType.CATALOG:
    case FrameType.HEALTH: {
      const f: CatalogFrame | HealthFrame = { type };
      const text = opt<string>(K.TEXT);
      if (type === FrameType.CATALOG) {
        const hash = opt<Uint8Array>(K.CATALOG_HASH);
        if ((hash === undefined) !== (text === undefined)) bad('CATALOG response needs both catalog_hash and text');
        if (hash !== undefined) (f as CatalogFrame).catalogHash = hash;
      }
      if (text !== undefined) f.text = text;
      const offset = opt<number>(K.OFFSET);
      if (offset !== undefined) f.offset = offset;
      const total = opt<number>(K.TOTAL);
      if (total !== undefined) {
        if (text === undefined) bad('total without text');
        if ((offset ?? 0) + utf8ByteLength(text) > total) bad('chunk extends past total');
        f.total = total;
      }
      return f;
    }
  }
  return bad(`unknown frame type ${type}`);
}

function decodeMap(r: CborReader): Frame {
  expectMajor(r, MAJOR_MAP, 'frame');
  const n = r.map();
  if (n < 1) bad('empty map');
  if (r.atEnd()) bad('truncated');
  if (r.peekMajor() !== MAJOR_UINT || r.uint() !== Key.TYPE) bad('first key is not 0 (type)');
  curKey = Key.TYPE;
  expectMajor(r, MAJOR_UINT, 'type');
  const type = r.uint();
  if (type <= U8) curType = type;
  if (type < 1 || type > MAX_FRAME_TYPE) bad(`unknown frame type ${type}`);
  presentLo = 0;
  presentHi = 0;
  let prev = 0;
  for (let i = 1; i < n; i++) {
    curKey = undefined;
    const k = readKey(r, prev);
    prev = k;
    curKey = k;
    if (reads(type, k)) {
      const v = readField(r, type, k);
      // §5.1: HELLO's version is checked before every other key. Keys ascend and version is
      // key 1, so it is judged here, before a later key of another version's layout is read.
      if (k === K.VERSION && type === FrameType.HELLO && v !== PROTOCOL_VERSION) {
        throw new FrameError(Nack.VERSION, type, K.VERSION, `protocol version ${String(v)} (this hub speaks ${PROTOCOL_VERSION})`);
      }
      (fields as unknown[])[k] = v;
      if (k < 32) presentLo |= 1 << k;
      else presentHi |= 1 << (k - 32);
    } else {
      r.skip();
    }
  }
  curKey = undefined;
  if (!r.atEnd()) bad('bytes after the frame');
  return build(type);
}

// Decodes and validates the frame in buf[start, end). Throws FrameError carrying the NACK
// code to answer with (and the frame type once key 0 was read). maxBytes is MAX_FRAME_BYTES
// for what clients send; a client decoding what the hub sends passes MAX_HUB_FRAME_BYTES.
export function decodeFrame(buf: Uint8Array, start: number, end: number, maxBytes: number = MAX_FRAME_BYTES): Frame {
  curType = undefined;
  curKey = undefined;
  if (end - start > maxBytes) {
    const t = peekFrameType(buf, start, end);
    throw new FrameError(Nack.TOO_LARGE, t >= 0 && t <= U8 ? t : undefined, undefined, `frame of ${end - start} bytes (max ${maxBytes})`);
  }
  if (reader === undefined) {
    reader = new CborReader(buf, start, end);
    fields = [];
  } else reader.reset(buf, start, end);
  try {
    return decodeMap(reader);
  } catch (e) {
    if (e instanceof CborError) {
      throw new FrameError(e.code === 'TOO_LARGE' ? Nack.TOO_LARGE : Nack.MALFORMED, curType, curKey, `CBOR ${e.code} at ${e.offset}: ${e.message}`);
    }
    throw e;
  } finally {
    if (fields !== undefined) fields.length = 0;
  }
}
