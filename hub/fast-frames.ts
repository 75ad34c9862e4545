// The frames of the hot paths, written and read without allocating: DATA and PONG out (here); ACK,
// PING and BUNDLE in (fast-reader.ts, re-exported here). Each writes exactly the bytes encodeFrame
// writes (canonical CBOR, docs/protocol.md §4), and each reader accepts only the canonical form of
// its frame and reports anything else as not its own, so that decodeFrame (hub/frame-decode.ts)
// judges it and answers exactly as before: these are shortcuts, never a second dialect
// (test/core/fast-frames.test.ts holds both against the general codec, byte for byte and verdict
// for verdict).

import { f16Bits } from './cbor.js';
import { FrameType, Key } from './frame-types.js';
import type { SampleWriter } from './ports.js';

export { Fast, FastReader } from './fast-reader.js';

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
  return writeSampleAfter(b, dv, fp, prefix.length, seq, t, values, count);
}

/** writeSample with b[0, p) holding the prefix already (the push's buffer keeps the last route's). */
export function writeSampleAfter(b: Uint8Array, dv: DataView, fp: FloatProbe, p: number, seq: number, t: number, values: Float64Array, count: number): number {
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

/**
 * The SampleWriter in script: writeSampleAfter over views of the buffers it is given, each made
 * when its buffer is new (once, where a hub writes every push into one buffer from one values
 * array). What the device's C (device/native/samplewriter.h) is held to, byte for byte.
 */
export class ScriptSampleWriter implements SampleWriter {
  private readonly fp = new FloatProbe();
  private out: Uint8Array | null = null;
  private dv: DataView | null = null;
  private valuesBuffer: ArrayBufferLike | null = null;
  private valuesAt = -1;
  private valuesBytes = -1;
  private values: Float64Array | null = null;

  writeSample(b: Uint8Array, p: number, seq: number, t: number, values: ArrayBufferLike, at: number, count: number): number {
    let dv = this.dv;
    // (A view without a length follows a resizable buffer's length, as the hub's DATA buffer's does.)
    if (b !== this.out || dv === null) {
      this.out = b;
      this.dv = dv = new DataView(b.buffer, b.byteOffset);
    }
    let v = this.values;
    // (A resizable buffer that grew or shrank gets a view of its new length.)
    if (values !== this.valuesBuffer || at !== this.valuesAt || values.byteLength !== this.valuesBytes || v === null) {
      this.valuesBuffer = values;
      this.valuesAt = at;
      this.valuesBytes = values.byteLength;
      this.values = v = new Float64Array(values, at, (values.byteLength - at) >> 3);
    }
    return writeSampleAfter(b, dv, this.fp, p, seq, t, v, count);
  }
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
