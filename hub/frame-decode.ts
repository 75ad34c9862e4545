// The validating decoder (docs/protocol.md "Frames"): decodeFrame, and the typed frame built
// from the fields frame-fields.ts read: what each frame type requires, what it may carry, and
// the rules across its keys (HELLO's version before anything else, ACK's two forms, CATALOG's
// hash with its text, a chunk within its total). It is direction-agnostic: the client library
// decodes what the hub sends with it, and the hub's dispatcher answers a frame arriving the
// wrong way.

import { CborError } from './cbor.js';
import type { CborReader } from './cbor-reader.js';
import { bad, badAt, cborFault, frameReader, need, opt, readFrame, U8 } from './frame-fields.js';
import {
  FrameError,
  FrameType,
  Key,
  MAX_FRAME_BYTES,
  peekFrameType,
  PROTOCOL_VERSION,
  type Arg,
  type CatalogFrame,
  type DataFrame,
  type EchoFrame,
  type EstopClearFrame,
  type Frame,
  type GoodbyeFrame,
  type GrantFrame,
  type HealthFrame,
  type HelloFrame,
  type IntentFrame,
  type NackFrame,
  type PubGrant,
  type PubWish,
  type SubGrant,
  type SubWish,
} from './frame-types.js';
import { Nack } from './nack.js';
import { utf8ByteLength } from './utf8.js';

const K = Key;
// Made on first use, not at module load (a preloaded module keeps no buffer in flash): the
// reader, and the fields it reads, by key (frame-fields.ts fills them).
let reader: CborReader | undefined;
let values: unknown[] | undefined;

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
        badAt(base === undefined ? K.ACK_BASE : K.ACK_BITMAP, 'ACK needs acked, or both ack_base and ack_bitmap');
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

// Decodes and validates the frame in buf[start, end). Throws FrameError carrying the NACK
// code to answer with (and the frame type once key 0 was read). maxBytes is MAX_FRAME_BYTES
// for what clients send; a client decoding what the hub sends passes MAX_HUB_FRAME_BYTES.
export function decodeFrame(buf: Uint8Array, start: number, end: number, maxBytes: number = MAX_FRAME_BYTES): Frame {
  if (end - start > maxBytes) {
    const t = peekFrameType(buf, start, end);
    throw new FrameError(Nack.TOO_LARGE, t >= 0 && t <= U8 ? t : undefined, undefined, `frame of ${end - start} bytes (max ${maxBytes})`);
  }
  if (reader === undefined) {
    values = [];
    reader = frameReader(buf, start, end, values);
  } else reader.reset(buf, start, end);
  try {
    return build(readFrame(reader));
  } catch (e) {
    if (e instanceof CborError) throw cborFault(e);
    throw e;
  } finally {
    // Made with the reader: nothing of this frame is kept.
    (values as unknown[]).length = 0;
  }
}
