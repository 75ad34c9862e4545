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
 * `prefix` is dataPrefix(channel_id). The caller sized b with dataFrameBytes. This runs once per
 * push of every stream: the common cases (a seq and a time of at most 32 bits, a value count
 * below 24, a float32 value) are written inline, in as few bytecodes as the engine will take.
 */
export function writeData(b: Uint8Array, dv: DataView, fp: FloatProbe, prefix: Uint8Array, seq: number, t: number, values: Float64Array, count: number, gap: boolean, dropped: number): number {
  b.set(prefix);
  let p = prefix.length;
  if (gap || dropped > 0) b[0] = 0xa5 + (gap ? 1 : 0) + (dropped > 0 ? 1 : 0);
  if (seq >= 0x10000 && seq < TWO_32) {
    b[p] = 0x1a;
    dv.setUint32(p + 1, seq);
    p += 5;
  } else p = head(b, p, 0x00, seq);
  b[p] = Key.T;
  if (t >= 0x10000 && t < TWO_32) {
    b[p + 1] = 0x1a;
    dv.setUint32(p + 2, t);
    p += 6;
  } else p = head(b, p + 1, 0x00, t);
  b[p] = Key.VALUES;
  if (count < 24) {
    b[p + 1] = 0x80 | count;
    p += 2;
  } else p = head(b, p + 1, 0x80, count);
  const f = fp.f;
  const bits = fp.bits;
  let u = 0;
  for (let i = 0; i < count; i++) {
    const x = values[i] as number;
    f[0] = x;
    // A float32 whose low 13 mantissa bits are not all zero, below 2^31 in magnitude: neither an
    // integer nor a binary16 value (number() judges everything else).
    if (f[0] === x && ((u = bits[0] as number) & 0x1fff) !== 0 && (u & 0x7f800000) < 0x4f000000) {
      b[p] = F32;
      dv.setFloat32(p + 1, x);
      p += 5;
    } else p = number(b, dv, p, x, f, bits);
  }
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

/** PONG {0: 14, 31: t0, 32: t1} into b from 0; returns the length (at most 23 bytes). */
export function writePong(b: Uint8Array, t0: number, t1: number): number {
  b[0] = 0xa3;
  b[1] = Key.TYPE;
  b[2] = FrameType.PONG;
  b[3] = 0x18;
  b[4] = Key.T0;
  let p = head(b, 5, 0x00, t0);
  b[p] = 0x18;
  b[p + 1] = Key.T1;
  return head(b, p + 2, 0x00, t1);
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
 */
export class FastReader {
  /** ACK: acked; PING: t0. */
  value = 0;
  /** BUNDLE: the channel. */
  channelId = 0;
  /** BUNDLE: the samples, as the robot port receives them (hub/ports.ts SampleBlock). */
  readonly block: { count: number; width: number; readonly numbers: Float64Array };
  private readonly dv: DataView;
  private readonly scratch = new Uint8Array(8);
  private pos = 0;
  private end = 0;
  private buf: Uint8Array = this.scratch;

  constructor(keepWidth: number = MAX_SAMPLE_NUMBERS) {
    this.dv = new DataView(this.scratch.buffer);
    // At least one sample of any width: a bundle too wide to keep is read sample by sample at the start.
    const size = Math.max(MAX_SAMPLE_NUMBERS, MAX_BUNDLE_SAMPLES * Math.min(Math.max(1, keepWidth), MAX_SAMPLE_NUMBERS));
    this.block = { count: 0, width: 0, numbers: new Float64Array(size) };
  }

  /** Reads buf[start, end): the frame type when it is one of the three in canonical form, else Fast.NONE. */
  read(buf: Uint8Array, start: number, end: number): number {
    if (end - start < 5 || end > buf.length) return Fast.NONE;
    const h = buf[start] as number;
    if (buf[start + 1] !== Key.TYPE) return Fast.NONE;
    const type = buf[start + 2] as number;
    this.buf = buf;
    this.end = end;
    if (h === 0xa2 && type === FrameType.ACK) {
      if (buf[start + 3] !== 0x18 || buf[start + 4] !== Key.ACKED) return Fast.NONE;
      this.pos = start + 5;
      const v = this.uint();
      if (v < 0 || v >= TWO_32 || this.pos !== end) return Fast.NONE;
      this.value = v;
      return Fast.ACK;
    }
    if (h === 0xa2 && type === FrameType.PING) {
      if (buf[start + 3] !== 0x18 || buf[start + 4] !== Key.T0) return Fast.NONE;
      this.pos = start + 5;
      const v = this.uint();
      if (v < 0 || this.pos !== end) return Fast.NONE;
      this.value = v;
      return Fast.PING;
    }
    if (h === 0xa3 && type === FrameType.BUNDLE) return this.bundle(start + 3);
    return Fast.NONE;
  }

  private bundle(p: number): number {
    const buf = this.buf;
    if (buf[p] !== Key.CHANNEL_ID) return Fast.NONE;
    this.pos = p + 1;
    const ch = this.uint();
    if (ch < MIN_CHANNEL_ID || ch > MAX_CHANNEL_ID || this.pos >= this.end || buf[this.pos] !== Key.VALUES) return Fast.NONE;
    this.pos++;
    const n = this.arrayHead();
    if (n < 1 || n > MAX_BUNDLE_SAMPLES) return Fast.NONE;
    // The first sample's length is every sample's.
    const m = this.arrayHead();
    if (m < 1 || m > MAX_SAMPLE_NUMBERS) return Fast.NONE;
    const numbers = this.block.numbers;
    // Too wide to keep: each sample is read into the block's start, for its checks only.
    const wide = n * m > numbers.length;
    let k = 0;
    for (let i = 0; ; ) {
      for (let j = 0; j < m; j++) {
        const v = this.number();
        if (v !== v && !this.nan) return Fast.NONE;
        numbers[k++] = v;
      }
      const t = numbers[k - m] as number;
      if (!Number.isInteger(t) || t < 0) return Fast.NONE;
      if (++i === n) break;
      if (wide) k = 0;
      if (this.arrayHead() !== m) return Fast.NONE;
    }
    if (this.pos !== this.end) return Fast.NONE;
    this.channelId = ch;
    this.block.count = n;
    this.block.width = m;
    return Fast.BUNDLE;
  }

  // A canonical unsigned integer head at pos (≤ 2^53 − 1), or −1.
  private uint(): number {
    const b = this.buf;
    const p = this.pos;
    if (p >= this.end) return -1;
    const ib = b[p] as number;
    if (ib >> 5 !== 0) return -1;
    return this.argument(ib & 0x1f, p);
  }

  private argument(ai: number, p: number): number {
    const b = this.buf;
    if (ai < 24) {
      this.pos = p + 1;
      return ai;
    }
    if (ai === 24) {
      if (p + 2 > this.end) return -1;
      const n = b[p + 1] as number;
      this.pos = p + 2;
      return n >= 24 ? n : -1;
    }
    if (ai === 25) {
      if (p + 3 > this.end) return -1;
      const n = ((b[p + 1] as number) << 8) | (b[p + 2] as number);
      this.pos = p + 3;
      return n >= 0x100 ? n : -1;
    }
    if (ai === 26) {
      if (p + 5 > this.end) return -1;
      const n = (b[p + 1] as number) * 0x1000000 + (((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 8) | (b[p + 4] as number));
      this.pos = p + 5;
      return n >= 0x10000 ? n : -1;
    }
    if (ai === 27) {
      if (p + 9 > this.end) return -1;
      const hi = (b[p + 1] as number) * 0x1000000 + (((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 8) | (b[p + 4] as number));
      if (hi === 0 || hi > 0x1fffff) return -1;
      const lo = (b[p + 5] as number) * 0x1000000 + (((b[p + 6] as number) << 16) | ((b[p + 7] as number) << 8) | (b[p + 8] as number));
      this.pos = p + 9;
      return hi * TWO_32 + lo;
    }
    return -1;
  }

  // A definite array head (canonical), its count; −1 otherwise.
  private arrayHead(): number {
    const p = this.pos;
    if (p >= this.end) return -1;
    const ib = this.buf[p] as number;
    if (ib >> 5 !== 4) return -1;
    return this.argument(ib & 0x1f, p);
  }

  /** Set by number() when the value read was a NaN (so that NaN is told from a failure). */
  private nan = false;

  // A number as CborReader.number reads it: an integer (canonical, safe) or a float16/32/64.
  // NaN with nan = false: not a number here.
  private number(): number {
    const b = this.buf;
    const p = this.pos;
    this.nan = false;
    if (p >= this.end) return NaN;
    const ib = b[p] as number;
    const major = ib >> 5;
    if (major === 0 || major === 1) {
      const n = this.argument(ib & 0x1f, p);
      if (n < 0 || (major === 1 && n === MAX_SAFE)) return NaN;
      return major === 0 ? n : -1 - n;
    }
    const s = this.scratch;
    if (ib === F32) {
      if (p + 5 > this.end) return NaN;
      s[0] = b[p + 1] as number;
      s[1] = b[p + 2] as number;
      s[2] = b[p + 3] as number;
      s[3] = b[p + 4] as number;
      this.pos = p + 5;
      const v = this.dv.getFloat32(0);
      this.nan = v !== v;
      return v;
    }
    if (ib === F64) {
      if (p + 9 > this.end) return NaN;
      for (let i = 0; i < 8; i++) s[i] = b[p + 1 + i] as number;
      this.pos = p + 9;
      const v = this.dv.getFloat64(0);
      this.nan = v !== v;
      return v;
    }
    if (ib === F16) {
      if (p + 3 > this.end) return NaN;
      s[0] = 0;
      s[1] = 0;
      s[2] = b[p + 1] as number;
      s[3] = b[p + 2] as number;
      this.pos = p + 3;
      const v = f16Value(this.dv.getUint32(0));
      this.nan = v !== v;
      return v;
    }
    return NaN;
  }
}

function f16Value(h: number): number {
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  const a = e === 0 ? f / 0x1000000 : e === 0x1f ? (f === 0 ? Infinity : NaN) : e >= 25 ? (f + 1024) * (1 << (e - 25)) : (f + 1024) / (1 << (25 - e));
  return h & 0x8000 ? -a : a;
}
