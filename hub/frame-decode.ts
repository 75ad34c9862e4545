// The validating decoder (docs/protocol.md "Frames"): decodeFrame, and the typed frame built
// from the fields frame-fields.ts read: what each frame type requires, what it may carry, and
// the rules across its keys (HELLO's version before anything else, ACK's two forms, CATALOG's
// hash with its text, a chunk within its total). It is direction-agnostic: the client library
// decodes what the hub sends with it, and the hub's dispatcher answers a frame arriving the
// wrong way.

import { CborError } from './cbor.js';
import { FieldReader, U8 } from './frame-fields.js';
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
  type PongFrame,
  type PubGrant,
  type PubWish,
  type SubGrant,
  type SubWish,
} from './frame-types.js';
import { Nack } from './nack.js';
import { utf8ByteLength } from './utf8.js';

const K = Key;

function build(d: FieldReader, type: number): Frame {
  switch (type) {
    case FrameType.HELLO: {
      // Version first: a client of another version gets VERSION, not an error about a key
      // that its version may lay out differently.
      const version = d.need<number>(K.VERSION);
      if (version !== PROTOCOL_VERSION) {
        throw new FrameError(Nack.VERSION, type, K.VERSION, `protocol version ${version} (this hub speaks ${PROTOCOL_VERSION})`);
      }
      const f: HelloFrame = { type, version, name: d.need<string>(K.NAME) };
      const cred = d.opt<Uint8Array>(K.CREDENTIAL);
      if (cred !== undefined) f.credential = cred;
      const tok = d.opt<Uint8Array>(K.RESUME_TOKEN);
      if (tok !== undefined) f.resumeToken = tok;
      const subs = d.opt<SubWish[]>(K.SUB_WISHES);
      if (subs !== undefined) f.subWishes = subs;
      const pubs = d.opt<PubWish[]>(K.PUB_WISHES);
      if (pubs !== undefined) f.pubWishes = pubs;
      return f;
    }
    case FrameType.WELCOME:
      return {
        type,
        sessionId: d.need<number>(K.SESSION_ID),
        resumeToken: d.need<Uint8Array>(K.RESUME_TOKEN),
        hubId: d.need<string>(K.HUB_ID),
        mtu: d.need<number>(K.MTU),
        slots: d.need<number>(K.SLOTS),
        catalogHash: d.need<Uint8Array>(K.CATALOG_HASH),
        tier: d.need<number>(K.TIER),
        owner: d.need<number>(K.OWNER),
        latched: d.need<boolean>(K.LATCHED),
        subGrants: d.need<SubGrant[]>(K.SUB_GRANTS),
        pubGrants: d.need<PubGrant[]>(K.PUB_GRANTS),
        staleTtlMs: d.need<number>(K.STALE_TTL_MS),
      };
    case FrameType.SUBSCRIBE:
      return { type, wishes: d.need<SubWish[]>(K.SUB_WISHES) };
    case FrameType.UNSUBSCRIBE:
      return { type, channels: d.need<number[]>(K.CHANNELS) };
    case FrameType.PUBLISH:
      return { type, wishes: d.need<PubWish[]>(K.PUB_WISHES) };
    case FrameType.GRANT: {
      const f: GrantFrame = { type };
      const subs = d.opt<SubGrant[]>(K.SUB_GRANTS);
      if (subs !== undefined) f.subGrants = subs;
      const pubs = d.opt<PubGrant[]>(K.PUB_GRANTS);
      if (pubs !== undefined) f.pubGrants = pubs;
      if (subs === undefined && pubs === undefined) d.bad('GRANT carries neither key 35 nor key 36');
      return f;
    }
    case FrameType.DATA: {
      const f: DataFrame = {
        type,
        channelId: d.need<number>(K.CHANNEL_ID),
        seq: d.need<number>(K.SEQ),
        t: d.need<number>(K.T),
        values: d.need<number[]>(K.VALUES),
      };
      // Canonical form omits gap:false and dropped:0; both read back as absent.
      if (d.opt<boolean>(K.GAP) === true) f.gap = true;
      const dropped = d.opt<number>(K.DROPPED);
      if (dropped !== undefined && dropped > 0) f.dropped = dropped;
      const text = d.opt<string>(K.TEXT);
      if (text !== undefined) f.text = text;
      return f;
    }
    case FrameType.BUNDLE:
      return { type, channelId: d.need<number>(K.CHANNEL_ID), samples: d.need<number[][]>(K.VALUES) };
    case FrameType.INTENT: {
      const f: IntentFrame = { type, channelId: d.need<number>(K.CHANNEL_ID), requestId: d.need<number>(K.REQUEST_ID) };
      const args = d.opt<Arg[]>(K.ARGS);
      if (args !== undefined) f.args = args;
      return f;
    }
    case FrameType.ECHO: {
      const f: EchoFrame = {
        type,
        channelId: d.need<number>(K.CHANNEL_ID),
        requestId: d.need<number>(K.REQUEST_ID),
        result: d.need<number>(K.RESULT),
      };
      const args = d.opt<Arg[]>(K.ARGS);
      if (args !== undefined) f.args = args;
      return f;
    }
    case FrameType.NACK: {
      const f: NackFrame = { type, code: d.need<number>(K.CODE) };
      const ch = d.opt<number>(K.CHANNEL_ID);
      if (ch !== undefined) f.channelId = ch;
      const ft = d.opt<number>(K.FRAME_TYPE);
      if (ft !== undefined) f.frameType = ft;
      const req = d.opt<number>(K.REQUEST_ID);
      if (req !== undefined) f.requestId = req;
      const retry = d.opt<number>(K.RETRY_AFTER_MS);
      if (retry !== undefined) f.retryAfterMs = retry;
      return f;
    }
    case FrameType.ACK: {
      const acked = d.opt<number>(K.ACKED);
      const base = d.opt<number>(K.ACK_BASE);
      const bitmap = d.opt<number>(K.ACK_BITMAP);
      if (acked !== undefined) {
        if (base !== undefined || bitmap !== undefined) d.bad('ACK mixes the stream and bitmap forms');
        return { type, acked };
      }
      if (base === undefined || bitmap === undefined) {
        d.badAt(base === undefined ? K.ACK_BASE : K.ACK_BITMAP, 'ACK needs acked, or both ack_base and ack_bitmap');
      }
      return { type, ackBase: base, ackBitmap: bitmap };
    }
    case FrameType.PING:
      return { type, t0: d.need<number>(K.T0) };
    case FrameType.PONG:
    {
      const f: PongFrame = { type, t0: d.need<number>(K.T0), t1: d.need<number>(K.T1) };
      const level = d.opt<number>(K.LEVEL);
      if (level !== undefined) f.level = level;
      return f;
    }
    case FrameType.GOODBYE: {
      const f: GoodbyeFrame = { type };
      const reason = d.opt<number>(K.REASON);
      if (reason !== undefined) f.reason = reason;
      return f;
    }
    case FrameType.ESTOP_CLEAR: {
      const f: EstopClearFrame = { type };
      const seq = d.opt<number>(K.ESTOP_SEQ);
      if (seq !== undefined) f.estopSeq = seq;
      return f;
    }
    case FrameType.CATALOG:
    case FrameType.HEALTH: {
      const f: CatalogFrame | HealthFrame = { type };
      const text = d.opt<string>(K.TEXT);
      if (type === FrameType.CATALOG) {
        const hash = d.opt<Uint8Array>(K.CATALOG_HASH);
        if ((hash === undefined) !== (text === undefined)) d.bad('CATALOG response needs both catalog_hash and text');
        if (hash !== undefined) (f as CatalogFrame).catalogHash = hash;
      }
      if (text !== undefined) f.text = text;
      const offset = d.opt<number>(K.OFFSET);
      if (offset !== undefined) f.offset = offset;
      const total = d.opt<number>(K.TOTAL);
      if (total !== undefined) {
        if (text === undefined) d.bad('total without text');
        if ((offset ?? 0) + utf8ByteLength(text) > total) d.bad('chunk extends past total');
        f.total = total;
      }
      return f;
    }
  }
  return d.bad(`unknown frame type ${type}`);
}

/**
 * The validating decoder, with the state it keeps between frames (its reader, the fields of the
 * frame being read) in itself: the hub's ingress and each client own one, so that decoding
 * allocates nothing beyond the frame it returns, and the module keeps no state (preloaded, it is
 * code and constants in flash). Not re-entrant: one frame at a time.
 */
export class FrameDecoder {
  private readonly d = new FieldReader();

  // Decodes and validates the frame in buf[start, end). Throws FrameError carrying the NACK
  // code to answer with (and the frame type once key 0 was read). maxBytes is MAX_FRAME_BYTES
  // for what clients send; a client decoding what the hub sends passes MAX_HUB_FRAME_BYTES.
  decode(buf: Uint8Array, start: number, end: number, maxBytes: number = MAX_FRAME_BYTES): Frame {
    if (end - start > maxBytes) {
      const t = peekFrameType(buf, start, end);
      throw new FrameError(Nack.TOO_LARGE, t >= 0 && t <= U8 ? t : undefined, undefined, `frame of ${end - start} bytes (max ${maxBytes})`);
    }
    const d = this.d;
    try {
      return build(d, d.readFrame(d.open(buf, start, end)));
    } catch (e) {
      if (e instanceof CborError) throw d.cborFault(e);
      throw e;
    } finally {
      // Nothing of this frame is kept.
      d.fields.length = 0;
    }
  }
}

/**
 * FrameDecoder.decode with a decoder of its own, made for this one frame: for code off the hot
 * paths (tools, tests, the simulator's observers). The hub and the client library keep one.
 */
export function decodeFrame(buf: Uint8Array, start: number, end: number, maxBytes: number = MAX_FRAME_BYTES): Frame {
  return new FrameDecoder().decode(buf, start, end, maxBytes);
}
