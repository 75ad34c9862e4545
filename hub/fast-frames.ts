// The frames of the hot paths, written and read without allocating: DATA and PONG out; ACK, PING
// and BUNDLE in. Each writes exactly the bytes encodeFrame writes (canonical CBOR, docs/protocol.md
// §4), and each reader accepts only the canonical form of its frame and reports anything else as
// not its own, so that decodeFrame (hub/frame-decode.ts) judges it and answers exactly as before:
// these are shortcuts, never a second dialect (test/core/fast-frames.test.ts holds both against
// the general codec, byte for byte and verdict for verdict).

import { MAX_CHANNEL_ID, MIN_CHANNEL_ID } from '../catalog/schema.js';
import { MAX_BUNDLE_SAMPLES } from './constants.js';
import { f16Bits } from './cbor.js';
import { FrameType, Key, MAX_SAMPLE_NUMBERS } from './frame-types.js';

const TWO_32 = 0x100000000;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const F16 = 0xf9;
const F32 = 0xfa;
const F64 = 0xfb;
const TRUE = 0xf5;

/** Writes a CBOR head of major type `mt` (already shifted: 0x00, 0x20, 0x80, …) with argument n at b[p]; returns the end. */
function head(b: Uint8Array, p: number, mt: number, n: number): number {
  if (n < 24) {
    b[p] = mt | n;
    return p + 1;
  }
  if (n < 0x100) {
    b[p] = mt | 24;
    b[p + 1] = n;
    return p + 2;
  }
  if (n < 0x10000) {
    b[p] = mt | 25;
    b[p + 1] = n >> 8;
    b[p + 2] = n & 0xff;
    return p + 3;
  }
  if (n < TWO_32) {
    b[p] = mt | 26;
    b[p + 1] = n >>> 24;
    b[p + 2] = (n >> 16) & 0xff;
    b[p + 3] = (n >> 8) & 0xff;
    b[p + 4] = n & 0xff;
    return p + 5;
  }
  b[p] = mt | 27;
  const hi = Math.floor(n / TWO_32);
  const lo = n >>> 0;
  b[p + 1] = hi >>> 24;
  b[p + 2] = (hi >> 16) & 0xff;
  b[p + 3] = (hi >> 8) & 0xff;
  b[p + 4] = hi & 0xff;
  b[p + 5] = lo >>> 24;
  b[p + 6] = (lo >> 16) & 0xff;
  b[p + 7] = (lo >> 8) & 0xff;
  b[p + 8] = lo & 0xff;
  return p + 9;
}

/** A float32 and its bits, for the shortest-float test: one per writer, made at run time. */
export class FloatProbe {
  readonly f = new Float32Array(1);
  readonly bits = new Uint32Array(this.f.buffer);
}

/**
 * One number as CborWriter.number writes it: a safe integer (not −0) as an integer, anything else
 * as the shortest float of binary16, binary32 and binary64 that holds it exactly. A float32 value
 * whose low 13 mantissa bits are not all zero cannot be a binary16 one: that test, read off the
 * float32's own bits, spares the exact binary16 search for almost every sensor value.
 */
function number(b: Uint8Array, dv: DataView, p: number, x: number, f: Float32Array, bits: Uint32Array): number {
  if ((x | 0) === x && (x !== 0 || 1 / x > 0)) return x >= 0 ? head(b, p, 0x00, x) : head(b, p, 0x20, -1 - x);
  f[0] = x;
  if (f[0] === x) {
    // Beyond int32 a float32 is an integer: a safe one is written as such.
    if ((x >= 2147483648 || x <= -2147483649) && x <= MAX_SAFE && x >= -MAX_SAFE) return x >= 0 ? head(b, p, 0x00, x) : head(b, p, 0x20, -1 - x);
    if (((bits[0] as number) & 0x1fff) !== 0) {
      b[p] = F32;
      dv.setFloat32(p + 1, x);
      return p + 5;
    }
  } else if (x === x) {
    if (Number.isSafeInteger(x)) return x >= 0 ? head(b, p, 0x00, x) : head(b, p, 0x20, -1 - x);
    b[p] = F64;
    dv.setFloat64(p + 1, x);
    return p + 9;
  }
  const h = f16Bits(x);
  if (h >= 0) {
    b[p] = F16;
    b[p + 1] = h >> 8;
    b[p + 2] = h & 0xff;
    return p + 3;
  }
  b[p] = F32;
  dv.setFloat32(p + 1, x);
  return p + 5;
}

/** The largest DATA frame the writer produces for `fields` values (each at most 9 bytes), gap and dropped included. */
export function dataFrameBytes(fields: number): number {
  return 1 + 7 * 2 + 1 + 2 + 5 + 9 + 2 + fields * 9 + 1 + 9;
}

/**
 * The head of a route's DATA frames up to the seq value, {0: 7, 3: channel_id, 4: …, with the map
 * head of the plain five-key form: what writeData copies first (made once per route).
 */
export function dataPrefix(channelId: number): Uint8Array {
  const b = new Uint8Array(8);
  b[0] = 0xa5;
  b[1] = Key.TYPE;
  b[2] = FrameType.DATA;
  b[3] = Key.CHANNEL_ID;
  const p = head(b, 4, 0x00, channelId);
  b[p] = Key.SEQ;
  return b.slice(0, p + 1);
}

/**
 * DATA {0: 7, 3: channel_id, 4: seq, 5: t, 6: values, 26: gap?, 27: dropped?} into b from 0, with
 * `dv` a DataView of the same bytes; returns the length. Byte for byte what encodeData writes.
 * `prefix` is dataPrefix(channel_id). The caller sized b with dataFrameBytes.
 */
export function writeData(b: Uint8Array, dv: DataView, fp: FloatProbe, prefix: Uint8Array, seq: number, t: number, values: Float64Array, count: number, gap: boolean, dropped: number): number {
  const p = writeSample(b, dv, fp, prefix, seq, t, values, count);
  return gap || dropped > 0 ? dataTail(b, p, gap, dropped) : p;
}

/**
 * writeData without gap and dropped: the frame every push of every stream shares. The common
 * cases (a seq and a time of 16 or 32 bits, a value count below 24, a float32 value that is
 * neither an integer nor a binary16) are written inline, in as few bytecodes as the engine will
 * take; head() and number() write everything else.
 */
export function writeSample(b: Uint8Array, dv: DataView, fp: FloatProbe, prefix: Uint8Array, seq: number, t: number, values: Float64Array, count: number): number {
  b.set(prefix);
  let p = prefix.length;
  // seq and the key of t after it, then t and the key of values: a 16-bit argument, its head and
  // the next key are one 32-bit word (0x19, hi, lo, key).
  if (seq < 0x10000) {
    if (seq >= 0x100) {
      dv.setUint32(p, 0x19000000 + seq * 0x100 + Key.T);
      p += 4;
    } else {
      p = head(b, p, 0x00, seq);
      b[p++] = Key.T;
    }
  } else {
    if (seq < TWO_32) {
      b[p] = 0x1a;
      dv.setUint32(p + 1, seq);
      p += 5;
    } else p = head(b, p, 0x00, seq);
    b[p++] = Key.T;
  }
  if (t < 0x10000) {
    if (t >= 0x100) {
      dv.setUint32(p, 0x19000000 + t * 0x100 + Key.VALUES);
      p += 4;
    } else {
      p = head(b, p, 0x00, t);
      b[p++] = Key.VALUES;
    }
  } else {
    if (t < TWO_32) {
      b[p] = 0x1a;
      dv.setUint32(p + 1, t);
      p += 5;
    } else p = head(b, p, 0x00, t);
    b[p++] = Key.VALUES;
  }
  if (count < 24) b[p++] = 0x80 | count;
  else p = head(b, p, 0x80, count);
  const f = fp.f;
  const bits = fp.bits;
  // Declared once out here: a block that declares its own makes XS open a scope on every pass
  // (and a for loop's own `let` a copy of it on every pass).
  let x = 0;
  let i = 0;
  for (i = 0; i < count; i++) {
    x = values[i] as number;
    f[0] = x;
    // A float32 with one of its low 13 mantissa bits set is no binary16 value (those have 10),
    // and one with a fraction is no integer: a float32 and nothing shorter. number() judges
    // everything else.
    if (f[0] === x && ((bits[0] as number) & 0x1fff) !== 0 && x % 1 !== 0) {
      b[p] = F32;
      dv.setFloat32(p + 1, x);
      p += 5;
    } else p = number(b, dv, p, x, f, bits);
  }
  return p;
}

// The optional keys of a DATA frame after its values, and the map head that counts them; returns the end.
function dataTail(b: Uint8Array, p: number, gap: boolean, dropped: number): number {
  b[0] = 0xa5 + (gap ? 1 : 0) + (dropped > 0 ? 1 : 0);
  if (gap) {
    b[p] = 0x18;
    b[p + 1] = Key.GAP;
    b[p + 2] = TRUE;
    p += 3;
  }
  if (dropped > 0) {
    b[p] = 0x18;
    b[p + 1] = Key.DROPPED;
    p = head(b, p + 2, 0x00, dropped);
  }
  return p;
}

/**
 * PONG {0: 14, 31: t0, 32: t1[, 45: level]} into b from 0, with `dv` a DataView of the same bytes;
 * returns the length (at most 25 bytes). `level` below 0: no level key (a transport without a
 * session). Both times are written by uint(): a PING comes every second from every client, more
 * often from the control owner.
 */
export function writePong(b: Uint8Array, dv: DataView, t0: number, t1: number, level: number): number {
  b[0] = level < 0 ? 0xa3 : 0xa4;
  b[1] = Key.TYPE;
  b[2] = FrameType.PONG;
  b[3] = 0x18;
  b[4] = Key.T0;
  const p = uint(b, dv, 5, t0);
  b[p] = 0x18;
  b[p + 1] = Key.T1;
  const q = uint(b, dv, p + 2, t1);
  if (level < 0) return q;
  b[q] = 0x18;
  b[q + 1] = Key.LEVEL;
  b[q + 2] = level;
  return q + 3;
}

// An unsigned integer as head() writes it, the 16- and 32-bit forms (a time in ms) by the DataView.
function uint(b: Uint8Array, dv: DataView, p: number, n: number): number {
  if (n >= 0x10000 && n < TWO_32) {
    b[p] = 0x1a;
    dv.setUint32(p + 1, n);
    return p + 5;
  }
  if (n >= 0x100 && n < 0x10000) {
    b[p] = 0x19;
    dv.setUint16(p + 1, n);
    return p + 3;
  }
  return head(b, p, 0x00, n);
}

// ---------------------------------------------------------------------------------------------
// Reading.

/**
 * What `FastReader.read` recognised; NONE: not a canonical ACK, PING or BUNDLE (or not well
 * formed), for decodeFrame to judge.
 */
export const Fast = Object.freeze({ NONE: 0, ACK: FrameType.ACK, PING: FrameType.PING, BUNDLE: FrameType.BUNDLE } as const);

/**
 * The canonical forms of the frequent client frames, read in place: ACK {0: 12, 28: acked},
 * PING {0: 13, 31: t0}, BUNDLE {0: 8, 3: channel_id, 6: [[t, v…] …]} whose samples all have the
 * same number of numbers. One reader per hub; its results are valid until the next read.
 *
 * The BUNDLE block keeps MAX_BUNDLE_SAMPLES samples of at most `keepWidth` numbers: the hub sizes
 * it to the widest sample a publication of its catalog takes (1.8 KB for the default catalog's
 * [t, six fields], where samples of MAX_SAMPLE_NUMBERS would take 8.4 KB). A bundle of wider
 * samples is read and judged all the same, but its numbers are not kept: `block.width` shows it,
 * and no publication takes samples that wide, so the hub refuses it by its width before it reads
 * any number (ingress.ts).
 *
 * Every client frame that is not an ESTOP comes through here first, so the reading is done in
 * locals, with the common heads (small and 16- and 32-bit integers, float32 and float64) read
 * inline. A float is assembled from its bytes through a scratch of our own: a DataView over the
 * frame's buffer would be an object per frame (a binding may hand each frame in a buffer of its own).
 */
export class FastReader {
  /** ACK: acked; PING: t0. */
  value = 0;
  /** BUNDLE: the channel. */
  channelId = 0;
  /** BUNDLE: the samples, as the robot port receives them (hub/ports.ts SampleBlock). */
  readonly block: { count: number; width: number; readonly numbers: Float64Array };
  /** BUNDLE: every number after a sample's time is finite (what a publication takes, ingress.ts). */
  finite = true;
  // One 8-byte scratch: a float32 written by its bits (same-size views: no byte order to mind),
  // a float64 as two big-endian words.
  private readonly dv = new DataView(new ArrayBuffer(8));
  private readonly f = new Float32Array(this.dv.buffer, 0, 1);
  private readonly bits = new Uint32Array(this.dv.buffer, 0, 1);
  /** Where number() left off; -1 when what it read was no number. */
  private pos = 0;

  constructor(keepWidth: number = MAX_SAMPLE_NUMBERS) {
    // At least one sample of any width: a bundle too wide to keep is read sample by sample at the start.
    const size = Math.max(MAX_SAMPLE_NUMBERS, MAX_BUNDLE_SAMPLES * Math.min(Math.max(1, keepWidth), MAX_SAMPLE_NUMBERS));
    this.block = { count: 0, width: 0, numbers: new Float64Array(size) };
  }

  /** Reads buf[start, end): the frame type when it is one of the three in canonical form, else Fast.NONE. */
  read(buf: Uint8Array, start: number, end: number): number {
    if (end - start < 5 || end > buf.length || buf[start + 1] !== Key.TYPE) return Fast.NONE;
    const h = buf[start] as number;
    const type = buf[start + 2] as number;
    if (h === 0xa2) {
      // ACK and PING: one key of 24 or more after the type, then an unsigned integer that ends the frame.
      if (buf[start + 3] !== 0x18) return Fast.NONE;
      const key = buf[start + 4] as number;
      if (type === FrameType.ACK) {
        if (key !== Key.ACKED) return Fast.NONE;
        const v = uintTo(buf, start + 5, end);
        if (v < 0 || v >= TWO_32) return Fast.NONE;
        this.value = v;
        return Fast.ACK;
      }
      if (type === FrameType.PING) {
        if (key !== Key.T0) return Fast.NONE;
        const v = uintTo(buf, start + 5, end);
        if (v < 0) return Fast.NONE;
        this.value = v;
        return Fast.PING;
      }
      return Fast.NONE;
    }
    if (h === 0xa3 && type === FrameType.BUNDLE) return this.bundle(buf, start + 3, end);
    return Fast.NONE;
  }

  private bundle(buf: Uint8Array, p: number, end: number): number {
    if (buf[p] !== Key.CHANNEL_ID) return Fast.NONE;
    // A channel id (1–255): one byte below 24, else 0x18 and one byte of 24 or more.
    let ch = buf[p + 1] as number;
    if (ch < 24) p += 2;
    else if (ch === 0x18 && (buf[p + 2] as number) >= 24) {
      ch = buf[p + 2] as number;
      p += 3;
    } else return Fast.NONE;
    if (ch < MIN_CHANNEL_ID || ch > MAX_CHANNEL_ID || p >= end || buf[p] !== Key.VALUES) return Fast.NONE;
    // The samples' array, then the first sample's: each head one byte for fewer than 24 items.
    let n = buf[p + 1] as number;
    if (n > 0x80 && n < 0x98) {
      n -= 0x80;
      p += 2;
    } else {
      n = arrayHeadAt(buf, p + 1, end);
      if (n < 1 || n > MAX_BUNDLE_SAMPLES) return Fast.NONE;
      p += n < 0x100 ? 3 : 4;
    }
    // The first sample's length is every sample's.
    let m = buf[p] as number;
    let mHead = 1;
    if (m > 0x80 && m < 0x98) m -= 0x80;
    else {
      m = arrayHeadAt(buf, p, end);
      if (m < 1 || m > MAX_SAMPLE_NUMBERS) return Fast.NONE;
      mHead = m < 0x100 ? 2 : 3;
    }
    p += mHead;
    const head = 0x80 + m;
    const numbers = this.block.numbers;
    const f = this.f;
    const bits = this.bits;
    const dv = this.dv;
    // Too wide to keep: each sample is read into the block's start, for its checks only.
    const wide = n * m > numbers.length;
    let k = 0;
    // x − x is 0 exactly when x is finite (NaN and ±Infinity give NaN): summed over every number
    // (a time that is not finite is refused anyway), one test at the end tells whether all were.
    let spread = 0;
    // Declared once out here: a block that declares its own makes XS open a scope on every pass.
    let ib = 0;
    let v = 0;
    for (let i = 0; ; ) {
      for (let j = 0; j < m; j++) {
        if (p >= end) return Fast.NONE;
        ib = buf[p] as number;
        if (ib === F64) {
          if (p + 9 > end) return Fast.NONE;
          dv.setUint32(0, ((buf[p + 1] as number) << 24) | ((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number));
          dv.setUint32(4, ((buf[p + 5] as number) << 24) | ((buf[p + 6] as number) << 16) | ((buf[p + 7] as number) << 8) | (buf[p + 8] as number));
          v = dv.getFloat64(0);
          p += 9;
        } else if (ib === F32) {
          if (p + 5 > end) return Fast.NONE;
          bits[0] = ((buf[p + 1] as number) << 24) | ((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number);
          v = f[0] as number;
          p += 5;
        } else if (ib < 24) {
          v = ib;
          p++;
        } else if (ib === 0x19 && p + 3 <= end) {
          // A time in ms: 16 bits, then 32 (canonical: not fewer bytes than needed).
          v = ((buf[p + 1] as number) << 8) | (buf[p + 2] as number);
          if (v < 0x100) return Fast.NONE;
          p += 3;
        } else if (ib === 0x1a && p + 5 <= end) {
          v = (buf[p + 1] as number) * 0x1000000 + (((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number));
          if (v < 0x10000) return Fast.NONE;
          p += 5;
        } else {
          v = this.number(buf, p, end);
          if ((p = this.pos) < 0) return Fast.NONE;
        }
        numbers[k++] = v;
        spread += v - v;
      }
      // A sample's time is an unsigned integer.
      v = numbers[k - m] as number;
      if (!(v % 1 === 0) || v < 0) return Fast.NONE;
      if (++i === n) break;
      if (wide) k = 0;
      if (mHead === 1 ? buf[p] !== head || p >= end : arrayHeadAt(buf, p, end) !== m) return Fast.NONE;
      p += mHead;
    }
    if (p !== end) return Fast.NONE;
    this.channelId = ch;
    this.block.count = n;
    this.block.width = m;
    this.finite = spread === 0;
    return Fast.BUNDLE;
  }

  // A number at p as CborReader.number reads it, in the forms bundle() does not read inline: an
  // integer (canonical, safe) or a float16. Its end in `pos`, which is -1 when there is none.
  private number(b: Uint8Array, p: number, end: number): number {
    this.pos = -1;
    const ib = b[p] as number;
    const major = ib >> 5;
    if (major === 0 || major === 1) {
      const n = argument(b, p, end, ib & 0x1f);
      if (n < 0 || (major === 1 && n === MAX_SAFE)) return NaN;
      this.pos = p + argumentBytes(ib & 0x1f);
      return major === 0 ? n : -1 - n;
    }
    if (ib !== F16 || p + 3 > end) return NaN;
    this.pos = p + 3;
    return f16Value(((b[p + 1] as number) << 8) | (b[p + 2] as number));
  }
}

// The bytes of a head with additional information ai (< 28).
function argumentBytes(ai: number): number {
  return ai < 24 ? 1 : ai === 24 ? 2 : ai === 25 ? 3 : ai === 26 ? 5 : 9;
}

// The argument of the head at b[p] with additional information ai, in canonical (shortest) form
// and at most 2^53 − 1, within end; −1 otherwise.
function argument(b: Uint8Array, p: number, end: number, ai: number): number {
  if (ai < 24) return ai;
  if (ai === 24) {
    if (p + 2 > end) return -1;
    const n = b[p + 1] as number;
    return n >= 24 ? n : -1;
  }
  if (ai === 25) {
    if (p + 3 > end) return -1;
    const n = ((b[p + 1] as number) << 8) | (b[p + 2] as number);
    return n >= 0x100 ? n : -1;
  }
  if (ai === 26) {
    if (p + 5 > end) return -1;
    const n = (b[p + 1] as number) * 0x1000000 + (((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 8) | (b[p + 4] as number));
    return n >= 0x10000 ? n : -1;
  }
  if (ai === 27) {
    if (p + 9 > end) return -1;
    const hi = (b[p + 1] as number) * 0x1000000 + (((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 8) | (b[p + 4] as number));
    if (hi === 0 || hi > 0x1fffff) return -1;
    const lo = (b[p + 5] as number) * 0x1000000 + (((b[p + 6] as number) << 16) | ((b[p + 7] as number) << 8) | (b[p + 8] as number));
    return hi * TWO_32 + lo;
  }
  return -1;
}

// A canonical unsigned integer that fills b[p, end) exactly (≤ 2^53 − 1); −1 otherwise. Its length
// tells which head it must have.
function uintTo(b: Uint8Array, p: number, end: number): number {
  const len = end - p;
  const ib = b[p] as number;
  if (len === 1) return ib < 24 ? ib : -1;
  if (len === 5) {
    if (ib !== 0x1a) return -1;
    const n = (b[p + 1] as number) * 0x1000000 + (((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 8) | (b[p + 4] as number));
    return n >= 0x10000 ? n : -1;
  }
  if (len === 3) {
    if (ib !== 0x19) return -1;
    const n = ((b[p + 1] as number) << 8) | (b[p + 2] as number);
    return n >= 0x100 ? n : -1;
  }
  if (len === 2) {
    if (ib !== 0x18) return -1;
    const n = b[p + 1] as number;
    return n >= 24 ? n : -1;
  }
  return len === 9 && ib === 0x1b ? argument(b, p, end, 27) : -1;
}

// The count of the canonical definite array head at b[p] (within end); −1 otherwise.
function arrayHeadAt(b: Uint8Array, p: number, end: number): number {
  if (p >= end) return -1;
  const ib = b[p] as number;
  if (ib >> 5 !== 4) return -1;
  return argument(b, p, end, ib & 0x1f);
}

function f16Value(h: number): number {
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  const a = e === 0 ? f / 0x1000000 : e === 0x1f ? (f === 0 ? Infinity : NaN) : e >= 25 ? (f + 1024) * (1 << (e - 25)) : (f + 1024) / (1 << (25 - e));
  return h & 0x8000 ? -a : a;
}
