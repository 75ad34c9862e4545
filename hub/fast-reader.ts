// The frequent client frames read in place without allocating: ACK, PING and BUNDLE (the writers
// of the hot paths are fast-frames.ts'). Each reader accepts only the canonical form of its frame
// and reports anything else as not its own, so that decodeFrame (hub/frame-decode.ts) judges it
// and answers exactly as before (test/core/fast-frames.test.ts holds both against the general
// codec, verdict for verdict).

import { MAX_CHANNEL_ID, MIN_CHANNEL_ID } from '../catalog/schema.js';
import { MAX_BUNDLE_SAMPLES } from './constants.js';
import { FrameType, Key, MAX_SAMPLE_NUMBERS } from './frame-types.js';

const TWO_32 = 0x100000000;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const F16 = 0xf9;
const F32 = 0xfa;
const F64 = 0xfb;
// The keys and types read, as plain numbers (a property read per use otherwise).
const K_TYPE = Key.TYPE;
const K_CHANNEL_ID = Key.CHANNEL_ID;
const K_VALUES = Key.VALUES;
const K_ACKED = Key.ACKED;
const K_T0 = Key.T0;
const T_ACK = FrameType.ACK;
const T_PING = FrameType.PING;
const T_BUNDLE = FrameType.BUNDLE;
// Which 32-bit word of a float64 holds its sign and exponent in the host's byte order (1.0 is 0x3ff00000_00000000).
const HI = new Uint32Array(new Float64Array([1]).buffer)[1] === 0x3ff00000 ? 1 : 0;
const LO = 1 - HI;

/**
 * What `FastReader.read` recognised; NONE: not a canonical ACK, PING or BUNDLE (or not well
 * formed), for decodeFrame to judge.
 */
export const Fast = Object.freeze({ NONE: 0, ACK: FrameType.ACK, PING: FrameType.PING, BUNDLE: FrameType.BUNDLE } as const);
const NONE = Fast.NONE;

/** How many numbers a reader's BUNDLE block holds for samples of at most `keepWidth` numbers (FastReader, device/fast-native.ts). */
export function blockNumbers(keepWidth: number): number {
  // At least one sample of any width: a bundle too wide to keep is read sample by sample at the start.
  return Math.max(MAX_SAMPLE_NUMBERS, MAX_BUNDLE_SAMPLES * Math.min(Math.max(1, keepWidth), MAX_SAMPLE_NUMBERS));
}

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
 * locals, with the common heads read inline: a sample's time as a small, 16- or 32-bit integer,
 * its other numbers as float64 or float32. A float is assembled from its bytes through a scratch
 * of our own: a DataView over the frame's buffer would be an object per frame (a binding may hand
 * each frame in a buffer of its own). Bytes past the frame's end may be read on the way (as
 * undefined past the buffer's): what reads past it ends past it, and a frame that does not end
 * exactly where its last number does is not taken.
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
  // One 8-byte scratch: a float32 written and read big-endian, a float64 written as its two 32-bit
  // words, the high one at u32[HI] (the host's byte order), and read in place (no calls).
  private readonly dv = new DataView(new ArrayBuffer(8));
  private readonly f64 = new Float64Array(this.dv.buffer, 0, 1);
  private readonly u32 = new Uint32Array(this.dv.buffer, 0, 2);
  /** Where number() left off; -1 when what it read was no number. */
  private pos = 0;

  constructor(keepWidth: number = MAX_SAMPLE_NUMBERS) {
    this.block = { count: 0, width: 0, numbers: new Float64Array(blockNumbers(keepWidth)) };
  }

  /** Reads buf[start, end): the frame type when it is one of the three in canonical form, else Fast.NONE. */
  read(buf: Uint8Array, start: number, end: number): number {
    if (end - start < 5 || end > buf.length || buf[start + 1] !== K_TYPE) return NONE;
    if (buf[start] === 0xa3) return buf[start + 2] === T_BUNDLE ? this.bundle(buf, start + 3, end) : NONE;
    // ACK and PING: one key of 24 or more after the type, then an unsigned integer that ends the
    // frame, its head told by its length (uintTo, its common forms inline).
    if (buf[start] !== 0xa2 || buf[start + 3] !== 0x18) return NONE;
    const type = buf[start + 2] as number;
    if (type === T_ACK ? buf[start + 4] !== K_ACKED : type !== T_PING || buf[start + 4] !== K_T0) return NONE;
    const p = start + 5;
    const len = end - p;
    let v = 0;
    if (len === 5) {
      if (buf[p] !== 0x1a) return NONE;
      v = (buf[p + 1] as number) * 0x1000000 + (((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number));
      if (v < 0x10000) return NONE;
    } else if (len === 3) {
      if (buf[p] !== 0x19) return NONE;
      v = ((buf[p + 1] as number) << 8) | (buf[p + 2] as number);
      if (v < 0x100) return NONE;
    } else if (len === 1) {
      v = buf[p] as number;
      if (v >= 24) return NONE;
    } else if ((v = uintTo(buf, p, end)) < 0) return NONE;
    if (type === T_ACK) {
      if (v >= TWO_32) return NONE;
      this.value = v;
      return T_ACK;
    }
    this.value = v;
    return T_PING;
  }

  private bundle(buf: Uint8Array, p: number, end: number): number {
    if (buf[p] !== K_CHANNEL_ID) return NONE;
    // A channel id (1–255): one byte below 24, else 0x18 and one byte of 24 or more.
    let ch = buf[p + 1] as number;
    if (ch < 24) p += 2;
    else if (ch === 0x18 && (buf[p + 2] as number) >= 24) {
      ch = buf[p + 2] as number;
      p += 3;
    } else return NONE;
    if (ch < MIN_CHANNEL_ID || ch > MAX_CHANNEL_ID || buf[p] !== K_VALUES) return NONE;
    // The samples' array, then the first sample's: each head one byte for fewer than 24 items.
    let n = buf[p + 1] as number;
    if (n > 0x80 && n < 0x98) {
      n -= 0x80;
      p += 2;
    } else {
      n = arrayHeadAt(buf, p + 1, end);
      if (n < 1 || n > MAX_BUNDLE_SAMPLES) return NONE;
      p += n < 0x100 ? 3 : 4;
    }
    // The first sample's length is every sample's.
    let m = buf[p] as number;
    let mHead = 1;
    if (m > 0x80 && m < 0x98) m -= 0x80;
    else {
      m = arrayHeadAt(buf, p, end);
      if (m < 1 || m > MAX_SAMPLE_NUMBERS) return NONE;
      mHead = m < 0x100 ? 2 : 3;
    }
    p += mHead;
    // The scratch and the block are read through `this` where they are used: on XS a local costs at
    // every call about what a few reads of a field through it do.
    const numbers = this.block.numbers;
    let k = 0;
    // x − x is 0 exactly when x is finite (NaN and ±Infinity give NaN): summed over every number
    // after a time, one test at the end tells whether all were.
    let spread = 0;
    // Declared once out here: a block that declares its own makes XS open a scope on every pass.
    let ib = 0;
    let v = 0;
    let j = 0;
    let i = 0;
    for (;;) {
      // The sample's time, an unsigned integer: in ms, mostly of 16 or 32 bits (canonical: not
      // fewer bytes than needed); in any other form as CborReader.number reads it.
      ib = buf[p] as number;
      if (ib === 0x19) {
        v = ((buf[p + 1] as number) << 8) | (buf[p + 2] as number);
        if (v < 0x100) return NONE;
        p += 3;
      } else if (ib === 0x1a) {
        v = (buf[p + 1] as number) * 0x1000000 + (((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number));
        if (v < 0x10000) return NONE;
        p += 5;
      } else {
        v = this.number(buf, p, end);
        if ((p = this.pos) < 0 || !(v % 1 === 0) || v < 0) return NONE;
      }
      numbers[k++] = v;
      for (j = 1; j < m; j++) {
        ib = buf[p] as number;
        if (ib === F64) {
          this.u32[HI] = ((buf[p + 1] as number) << 24) | ((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number);
          this.u32[LO] = ((buf[p + 5] as number) << 24) | ((buf[p + 6] as number) << 16) | ((buf[p + 7] as number) << 8) | (buf[p + 8] as number);
          v = this.f64[0] as number;
          p += 9;
        } else if (ib === F32) {
          this.dv.setUint32(0, ((buf[p + 1] as number) << 24) | ((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number));
          v = this.dv.getFloat32(0);
          p += 5;
        } else if (ib < 24) {
          v = ib;
          p++;
        } else {
          v = this.number(buf, p, end);
          if ((p = this.pos) < 0) return NONE;
        }
        numbers[k++] = v;
        spread += v - v;
      }
      if (++i === n) break;
      // Too wide to keep: each sample is read into the block's start, for its checks only.
      if (n * m > numbers.length) k = 0;
      if (mHead === 1 ? buf[p] !== 0x80 + m : arrayHeadAt(buf, p, end) !== m) return NONE;
      p += mHead;
    }
    if (p !== end) return NONE;
    this.channelId = ch;
    this.block.count = n;
    this.block.width = m;
    this.finite = spread === 0;
    return T_BUNDLE;
  }

  // A number at p as CborReader.number reads it (within end): an integer (canonical, safe) or a
  // float of any width. Its end in `pos`, which is -1 when there is none.
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
    if (ib === F64 && p + 9 <= end) {
      this.u32[HI] = ((b[p + 1] as number) << 24) | ((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 8) | (b[p + 4] as number);
      this.u32[LO] = ((b[p + 5] as number) << 24) | ((b[p + 6] as number) << 16) | ((b[p + 7] as number) << 8) | (b[p + 8] as number);
      this.pos = p + 9;
      return this.f64[0] as number;
    }
    if (ib === F32 && p + 5 <= end) {
      this.dv.setUint32(0, ((b[p + 1] as number) << 24) | ((b[p + 2] as number) << 16) | ((b[p + 3] as number) << 8) | (b[p + 4] as number));
      this.pos = p + 5;
      return this.dv.getFloat32(0);
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
