// The validating decoder's first half (docs/protocol.md "Frames", "Limits"): a frame's CBOR map
// walked key by key (keys strictly ascending, key 0 the type), each key its frame type reads
// read and checked by the key registry (ranges, lengths, lists without duplicates, BUNDLE's
// sample limit), every other key skipped as valid CBOR. The fields read wait in the FieldReader,
// by key, for frame-decode.ts to build the typed frame from; a breach throws FrameError with the
// NACK code, the frame type and the key at fault.

import type { CborError } from './cbor.js';
import { CborReader } from './cbor-reader.js';
import { MAX_BUNDLE_SAMPLES } from './constants.js';
import { MAX_CHANNEL_ID, MAX_RATE_HZ, MIN_CHANNEL_ID } from '../catalog/schema.js';
import {
  CATALOG_HASH_BYTES,
  FrameError,
  FrameType,
  Key,
  MAX_ARG_TEXT_BYTES,
  MAX_ARGS,
  MAX_BURST,
  MAX_CREDENTIAL_BYTES,
  MAX_FRAME_TYPE,
  MAX_LIST,
  MAX_NAME_BYTES,
  MAX_PRIORITY,
  MAX_SAMPLE_NUMBERS,
  MAX_TEXT_BYTES,
  MAX_TIER,
  MAX_VALUES,
  PROTOCOL_VERSION,
  RESUME_TOKEN_BYTES,
  type Arg,
  type PubGrant,
  type PubWish,
  type SubGrant,
  type SubWish,
} from './frame-types.js';
import { Nack } from './nack.js';
import { utf8ByteLength } from './utf8.js';

export const U8 = 0xff;
const U16 = 0xffff;
const U32 = 0xffffffff;
const MAX_UINT = Number.MAX_SAFE_INTEGER;

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
  keys(K.T0, K.T1, K.LEVEL),
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

// The entries of key 10/11/35/36: maps {3 channel_id, 12|14 rate, 13|42 ...}.
const ENTRY_SUB_WISH = 0;
const ENTRY_PUB_WISH = 1;
const ENTRY_SUB_GRANT = 2;
const ENTRY_PUB_GRANT = 3;

/**
 * The decoder's state for one frame at a time, in an object its owner makes (the hub's ingress,
 * a client, frame-decode.ts FrameDecoder): nothing is kept at module level, so that the module
 * preloads into flash with no state left in RAM. Not re-entrant: one frame at a time.
 */
export class FieldReader {
  /** The frame type and the key being read, for the FrameError a breach throws. */
  type: number | undefined = undefined;
  key: number | undefined = undefined;
  // The keys read so far: bit k of [lo, hi] for key k.
  private lo = 0;
  private hi = 0;
  /** Field values by key, valid where the present bits are set: the owner empties it after each frame. */
  readonly fields: unknown[] = [];
  // Channel ids seen in the list being read (duplicates are malformed): a 256-bit set.
  private readonly seen = new Uint32Array(8);
  private reader: CborReader | null = null;

  bad(message: string): never {
    throw new FrameError(Nack.MALFORMED, this.type, this.key, message);
  }

  /** bad() blaming `key`: a rule across keys that a later one broke. */
  badAt(key: number, message: string): never {
    this.key = key;
    return this.bad(message);
  }

  private has(key: number): boolean {
    return key < 32 ? ((this.lo >>> key) & 1) === 1 : ((this.hi >>> (key - 32)) & 1) === 1;
  }

  need<T>(key: number): T {
    if (!this.has(key)) {
      this.key = key;
      this.bad(`missing required key ${key}`);
    }
    return this.fields[key] as T;
  }

  opt<T>(key: number): T | undefined {
    return this.has(key) ? (this.fields[key] as T) : undefined;
  }

  private expectMajor(r: CborReader, major: number, what: string): void {
    if (r.atEnd()) this.bad('truncated');
    if (r.peekMajor() !== major) this.bad(`${what}: wrong type`);
  }

  private readUint(r: CborReader, min: number, max: number, what: string): number {
    this.expectMajor(r, MAJOR_UINT, what);
    const v = r.uint();
    if (v < min || v > max) this.bad(`${what}: ${v} out of range [${min}, ${max}]`);
    return v;
  }

  private readNumber(r: CborReader, what: string): number {
    if (r.atEnd()) this.bad('truncated');
    const m = r.peekMajor();
    if (m !== MAJOR_UINT && m !== MAJOR_NINT && m !== MAJOR_SIMPLE) this.bad(`${what}: not a number`);
    return r.number();
  }

  private readRate(r: CborReader, what: string, zeroAllowed: boolean, max: number): number {
    const v = this.readNumber(r, what);
    if (!Number.isFinite(v) || v > max || (zeroAllowed ? v < 0 : !(v > 0)) || Object.is(v, -0)) {
      this.bad(`${what}: ${v} out of range`);
    }
    return v;
  }

  private readBool(r: CborReader, what: string): boolean {
    this.expectMajor(r, MAJOR_SIMPLE, what);
    return r.bool();
  }

  private readText(r: CborReader, minBytes: number, maxBytes: number, what: string): string {
    this.expectMajor(r, MAJOR_TEXT, what);
    const s = r.text();
    const n = utf8ByteLength(s);
    if (n < minBytes || n > maxBytes) this.bad(`${what}: ${n} bytes out of range [${minBytes}, ${maxBytes}]`);
    return s;
  }

  private readBytes(r: CborReader, minBytes: number, maxBytes: number, what: string): Uint8Array {
    this.expectMajor(r, MAJOR_BYTES, what);
    const b = r.bytes();
    if (b.length < minBytes || b.length > maxBytes) this.bad(`${what}: ${b.length} bytes out of range`);
    return b;
  }

  private readArrayHead(r: CborReader, min: number, max: number, what: string): number {
    this.expectMajor(r, MAJOR_ARRAY, what);
    const n = r.array();
    if (n < min || n > max) this.bad(`${what}: ${n} items out of range [${min}, ${max}]`);
    return n;
  }

  // Reads one key of a map: an unsigned integer strictly above the previous one.
  private readKey(r: CborReader, prev: number): number {
    if (r.atEnd()) this.bad('truncated');
    if (r.peekMajor() !== MAJOR_UINT) this.bad('map key is not an unsigned integer');
    const k = r.uint();
    if (k <= prev) this.bad(`map key ${k} not above ${prev}`);
    return k;
  }

  private clearSeen(): void {
    this.seen.fill(0);
  }

  private firstSeen(channelId: number): boolean {
    const set = this.seen;
    const i = channelId >>> 5;
    const bit = 1 << (channelId & 31);
    const word = set[i] as number;
    if (word & bit) return false;
    set[i] = word | bit;
    return true;
  }

  private readChannelList(r: CborReader): number[] {
    const n = this.readArrayHead(r, 1, MAX_LIST, 'channels');
    this.clearSeen();
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const c = this.readUint(r, MIN_CHANNEL_ID, MAX_CHANNEL_ID, 'channel_id');
      if (!this.firstSeen(c)) this.bad(`channel ${c} listed twice`);
      out.push(c);
    }
    return out;
  }

  private readEntries(r: CborReader, kind: number, min: number): (SubWish | PubWish | SubGrant | PubGrant)[] {
    const n = this.readArrayHead(r, min, MAX_LIST, 'list');
    this.clearSeen();
    const out: (SubWish | PubWish | SubGrant | PubGrant)[] = [];
    for (let i = 0; i < n; i++) {
      this.expectMajor(r, MAJOR_MAP, 'list entry');
      const m = r.map();
      let prev = -1;
      let channelId = -1;
      let rate = -1;
      let priority = -1;
      let burst = -1;
      for (let j = 0; j < m; j++) {
        const k = this.readKey(r, prev);
        prev = k;
        if (k === Key.CHANNEL_ID) channelId = this.readUint(r, MIN_CHANNEL_ID, MAX_CHANNEL_ID, 'channel_id');
        else if (k === Key.WISHED_RATE_HZ && kind <= ENTRY_PUB_WISH) rate = this.readRate(r, 'wished_rate_hz', false, MAX_RATE_HZ);
        else if (k === Key.GRANTED_RATE_HZ && kind >= ENTRY_SUB_GRANT) rate = this.readRate(r, 'granted_rate_hz', true, MAX_RATE_HZ);
        else if (k === Key.PRIORITY && (kind === ENTRY_SUB_WISH || kind === ENTRY_SUB_GRANT)) priority = this.readUint(r, 0, MAX_PRIORITY, 'priority');
        else if (k === Key.BURST && kind === ENTRY_PUB_WISH) burst = this.readRate(r, 'burst', false, MAX_BURST);
        else if (k === Key.BURST && kind === ENTRY_PUB_GRANT) burst = this.readRate(r, 'burst', true, MAX_BURST);
        else r.skip();
      }
      if (channelId < 0) this.bad('entry without channel_id');
      if (rate < 0) this.bad('entry without a rate');
      if (!this.firstSeen(channelId)) this.bad(`channel ${channelId} listed twice`);
      if (kind === ENTRY_SUB_WISH) {
        out.push(priority < 0 ? { channelId, wishedRateHz: rate } : { channelId, wishedRateHz: rate, priority });
      } else if (kind === ENTRY_PUB_WISH) {
        out.push(burst < 0 ? { channelId, wishedRateHz: rate } : { channelId, wishedRateHz: rate, burst });
      } else if (kind === ENTRY_SUB_GRANT) {
        if (priority < 0) this.bad('grant without priority');
        out.push({ channelId, grantedRateHz: rate, priority });
      } else {
        if (burst < 0) this.bad('grant without burst');
        out.push({ channelId, grantedRateHz: rate, burst });
      }
    }
    return out;
  }

  private readNumbers(r: CborReader, min: number, max: number, what: string): number[] {
    const n = this.readArrayHead(r, min, max, what);
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(this.readNumber(r, what));
    return out;
  }

  private readSamples(r: CborReader): number[][] {
    this.expectMajor(r, MAJOR_ARRAY, 'samples');
    const n = r.array();
    // §10.5: a bundle batches at most 32 samples; more is refused whole.
    if (n > MAX_BUNDLE_SAMPLES) {
      throw new FrameError(Nack.TOO_LARGE, this.type, this.key, `bundle of ${n} samples (max ${MAX_BUNDLE_SAMPLES})`);
    }
    if (n < 1) this.bad('empty bundle');
    const out: number[][] = [];
    for (let i = 0; i < n; i++) {
      const s = this.readNumbers(r, 1, MAX_SAMPLE_NUMBERS, 'sample');
      const t = s[0] as number;
      if (!Number.isInteger(t) || t < 0) this.bad('sample time is not an unsigned integer');
      out.push(s);
    }
    return out;
  }

  private readArgs(r: CborReader): Arg[] {
    const n = this.readArrayHead(r, 0, MAX_ARGS, 'args');
    const out: Arg[] = [];
    for (let i = 0; i < n; i++) {
      if (r.atEnd()) this.bad('truncated');
      if (r.peekMajor() === MAJOR_TEXT) out.push(this.readText(r, 0, MAX_ARG_TEXT_BYTES, 'arg'));
      else out.push(this.readNumber(r, 'arg'));
    }
    return out;
  }

  // One field by the key registry; `type` only chooses between DATA values and BUNDLE samples.
  private readField(r: CborReader, type: number, key: number): unknown {
    switch (key) {
      case K.VERSION: return this.readUint(r, 0, U16, 'version');
      case K.SESSION_ID: return this.readUint(r, 1, U32, 'session_id');
      case K.CHANNEL_ID: return this.readUint(r, MIN_CHANNEL_ID, MAX_CHANNEL_ID, 'channel_id');
      case K.SEQ: return this.readUint(r, 0, U32, 'seq');
      case K.T: return this.readUint(r, 0, MAX_UINT, 't');
      case K.VALUES: return type === FrameType.BUNDLE ? this.readSamples(r) : this.readNumbers(r, 0, MAX_VALUES, 'values');
      case K.NAME: return this.readText(r, 1, MAX_NAME_BYTES, 'name');
      case K.CREDENTIAL: return this.readBytes(r, 0, MAX_CREDENTIAL_BYTES, 'credential');
      case K.RESUME_TOKEN: return this.readBytes(r, RESUME_TOKEN_BYTES, RESUME_TOKEN_BYTES, 'resume_token');
      case K.SUB_WISHES: return this.readEntries(r, ENTRY_SUB_WISH, type === FrameType.SUBSCRIBE ? 1 : 0);
      case K.PUB_WISHES: return this.readEntries(r, ENTRY_PUB_WISH, type === FrameType.PUBLISH ? 1 : 0);
      case K.CODE: return this.readUint(r, 1, U8, 'code');
      case K.RETRY_AFTER_MS: return this.readUint(r, 0, U32, 'retry_after_ms');
      case K.FRAME_TYPE: return this.readUint(r, 0, U8, 'frame_type');
      case K.ARGS: return this.readArgs(r);
      case K.REQUEST_ID: return this.readUint(r, 0, U32, 'request_id');
      case K.RESULT: return this.readUint(r, 0, U8, 'result');
      case K.HUB_ID: return this.readText(r, 1, MAX_NAME_BYTES, 'hub_id');
      case K.MTU: return this.readUint(r, 1, U16, 'mtu');
      case K.SLOTS: return this.readUint(r, 1, U8, 'slots');
      case K.CATALOG_HASH: return this.readBytes(r, CATALOG_HASH_BYTES, CATALOG_HASH_BYTES, 'catalog_hash');
      case K.TIER: return this.readUint(r, 0, MAX_TIER, 'tier');
      case K.GAP: return this.readBool(r, 'gap');
      case K.DROPPED: return this.readUint(r, 0, U32, 'dropped');
      case K.ACKED: return this.readUint(r, 0, U32, 'acked');
      case K.ACK_BASE: return this.readUint(r, 0, U16, 'ack_base');
      case K.ACK_BITMAP: return this.readUint(r, 0, U32, 'ack_bitmap');
      case K.T0: return this.readUint(r, 0, MAX_UINT, 't0');
      case K.T1: return this.readUint(r, 0, MAX_UINT, 't1');
      case K.LEVEL: return this.readUint(r, 0, 3, 'level');
      case K.OWNER: return this.readUint(r, 0, U32, 'owner');
      case K.LATCHED: return this.readBool(r, 'latched');
      case K.SUB_GRANTS: return this.readEntries(r, ENTRY_SUB_GRANT, 0);
      case K.PUB_GRANTS: return this.readEntries(r, ENTRY_PUB_GRANT, 0);
      case K.TEXT: return this.readText(r, 0, MAX_TEXT_BYTES, 'text');
      case K.STALE_TTL_MS: return this.readUint(r, 0, U32, 'stale_ttl_ms');
      case K.ESTOP_SEQ: return this.readUint(r, 0, U16, 'estop_seq');
      case K.REASON: return this.readUint(r, 0, U8, 'reason');
      case K.CHANNELS: return this.readChannelList(r);
      case K.OFFSET: return this.readUint(r, 0, U32, 'offset');
      case K.TOTAL: return this.readUint(r, 0, U32, 'total');
    }
    return this.bad(`key ${key} has no reader`);
  }

  /**
   * Reads the frame in the reader's range into the fields and returns its type; the typed frame is
   * built from them (frame-decode.ts build). Throws FrameError, or CborError for what the reader
   * refuses (decodeFrame answers it with the frame type and key being read).
   */
  readFrame(r: CborReader): number {
    this.type = undefined;
    this.key = undefined;
    this.expectMajor(r, MAJOR_MAP, 'frame');
    const n = r.map();
    if (n < 1) this.bad('empty map');
    if (r.atEnd()) this.bad('truncated');
    if (r.peekMajor() !== MAJOR_UINT || r.uint() !== Key.TYPE) this.bad('first key is not 0 (type)');
    this.key = Key.TYPE;
    this.expectMajor(r, MAJOR_UINT, 'type');
    const type = r.uint();
    if (type <= U8) this.type = type;
    if (type < 1 || type > MAX_FRAME_TYPE) this.bad(`unknown frame type ${type}`);
    this.lo = 0;
    this.hi = 0;
    let prev = 0;
    for (let i = 1; i < n; i++) {
      this.key = undefined;
      const k = this.readKey(r, prev);
      prev = k;
      this.key = k;
      if (reads(type, k)) {
        const v = this.readField(r, type, k);
        // §5.1: HELLO's version is checked before every other key. Keys ascend and version is
        // key 1, so it is judged here, before a later key of another version's layout is read.
        if (k === K.VERSION && type === FrameType.HELLO && v !== PROTOCOL_VERSION) {
          throw new FrameError(Nack.VERSION, type, K.VERSION, `protocol version ${String(v)} (this hub speaks ${PROTOCOL_VERSION})`);
        }
        this.fields[k] = v;
        if (k < 32) this.lo |= 1 << k;
        else this.hi |= 1 << (k - 32);
      } else {
        r.skip();
      }
    }
    this.key = undefined;
    if (!r.atEnd()) this.bad('bytes after the frame');
    return type;
  }

  /** The reader over buf[start, end), made on the first frame and reset for each after it. */
  open(buf: Uint8Array, start: number, end: number): CborReader {
    const r = this.reader;
    if (r === null) return (this.reader = new CborReader(buf, start, end));
    r.reset(buf, start, end);
    return r;
  }

  /** What the reader refused, as the FrameError answering it: at the frame type and key being read. */
  cborFault(e: CborError): FrameError {
    return new FrameError(e.code === 'TOO_LARGE' ? Nack.TOO_LARGE : Nack.MALFORMED, this.type, this.key, `CBOR ${e.code} at ${e.offset}: ${e.message}`);
  }
}
