// CBOR (RFC 8949) for the hub's frames: exactly the subset they use, over caller-owned buffers.
// Here: the subset (its values, errors and limits, and the initial bytes and float scratch that
// writing and reading share) and the writer. The reader, which checks everything it reads, is
// cbor-reader.ts, with the table of what it enforces and the error each breach yields.
//
// Values: unsigned and negative integers within ±(2^53−1); byte strings; UTF-8 text strings; arrays;
// maps with integer keys (decoded to Map<number, CborValue>); floats of 16, 32 and 64 bits; false,
// true, null.
//
// The encoder writes integers and lengths in shortest form, floats in the shortest of f16/f32/f64
// that holds the value exactly (NaN as f16 0x7e00), and map keys in ascending order. It throws
// OVERFLOW when the caller's buffer cannot take the next item (leaving `pos` before it), and
// UNSUPPORTED for a value outside the subset (an unsafe integer, a non-integer map key, undefined,
// an object of another kind). After a throw inside `value()`, the bytes from where that value began
// are unspecified. Values must be acyclic.

import { utf8ByteLength, utf8Write } from './utf8.js';

export const CborErrorCode = Object.freeze({
  TRUNCATED: 'TRUNCATED',
  MALFORMED: 'MALFORMED',
  NON_CANONICAL: 'NON_CANONICAL',
  TOO_LARGE: 'TOO_LARGE',
  TOO_DEEP: 'TOO_DEEP',
  UNSUPPORTED: 'UNSUPPORTED',
  OVERFLOW: 'OVERFLOW',
} as const);
export type CborErrorCode = (typeof CborErrorCode)[keyof typeof CborErrorCode];

export class CborError extends Error {
  readonly code: CborErrorCode;
  readonly offset: number;
  constructor(code: CborErrorCode, offset: number, detail?: string) {
    super(detail === undefined ? `CBOR ${code} at ${offset}` : `CBOR ${code} at ${offset}: ${detail}`);
    this.name = 'CborError';
    this.code = code;
    this.offset = offset;
  }
}

export interface CborLimits {
  readonly maxDepth: number;
  readonly maxItems: number;
  readonly maxStringBytes: number;
}

export const DEFAULT_CBOR_LIMITS: CborLimits = Object.freeze({
  maxDepth: 8,
  maxItems: 256,
  maxStringBytes: 4096,
});

export type CborValue = number | string | boolean | null | Uint8Array | CborValue[] | CborMap;
export type CborMap = Map<number, CborValue>;

export const MajorType = Object.freeze({
  UINT: 0,
  NINT: 1,
  BYTES: 2,
  TEXT: 3,
  ARRAY: 4,
  MAP: 5,
  TAG: 6,
  SIMPLE: 7,
} as const);

// §3: additional information 24–27 announce a 1-, 2-, 4- or 8-byte argument.
export const AI_1 = 24;
export const AI_2 = 25;
export const AI_4 = 26;
export const AI_8 = 27;
// §3.3: initial bytes of major type 7.
export const FALSE = 0xf4;
export const TRUE = 0xf5;
export const NULL = 0xf6;
export const F16 = 0xf9;
export const F32 = 0xfa;
export const F64 = 0xfb;
export const TWO_32 = 0x100000000;
const F16_NAN = 0x7e00;
const F16_INFINITY = 0x7c00;
const F16_MAX = 65504;
const F16_MIN_NORMAL = 0.00006103515625; // 2^-14
const F16_MIN_SUBNORMAL = 5.960464477539063e-8; // 2^-24

function headSize(n: number): number {
  return n < AI_1 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < TWO_32 ? 5 : 9;
}

/** The binary16 pattern that holds `x` exactly, or -1. */
export function f16Bits(x: number): number {
  if (x !== x) return F16_NAN;
  const sign = x < 0 || (x === 0 && 1 / x < 0) ? 0x8000 : 0;
  const a = sign ? -x : x;
  if (a === 0) return sign;
  if (a === Infinity) return sign | F16_INFINITY;
  if (a > F16_MAX || a < F16_MIN_SUBNORMAL) return -1;
  if (a < F16_MIN_NORMAL) {
    const m = a * 0x1000000;
    return m === Math.floor(m) ? sign | m : -1;
  }
  // a = m · 2^(e−25) with m in [1024, 2048): e is then the biased binary16 exponent. Scaling by two is exact.
  let m = a;
  let e = 25;
  while (m >= 2048) {
    m /= 2;
    e++;
  }
  while (m < 1024) {
    m *= 2;
    e--;
  }
  return m === Math.floor(m) ? sign | (e << 10) | (m - 1024) : -1;
}

// Float conversion goes through typed-array views of an 8-byte scratch: on XS a DataView byte
// accessor costs several times a typed-array element access, and floats are the bulk of every
// DATA frame. CBOR is big-endian; the platform's order is probed once. The scratch belongs to
// each writer and reader, made at run time: on the device this module is preloaded, and a
// typed array made at preload lives in flash, where a write throws.
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class FloatScratch {
  readonly f64 = new Float64Array(1);
  readonly f32 = new Float32Array(this.f64.buffer, 0, 1);
  readonly u8 = new Uint8Array(this.f64.buffer);
}

export class CborWriter {
  buf: Uint8Array;
  pos = 0;
  private readonly scratch = new FloatScratch();
  // State of the allocation-free key ordering in writeMap; read only between forEach passes.
  private ordered = true;
  private keyAfter = 0;
  private keyNext = 0;

  constructor(buf: Uint8Array) {
    this.buf = buf;
  }

  reset(): void {
    this.pos = 0;
  }

  subarray(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  uint(n: number): void {
    if (!(Number.isSafeInteger(n) && n >= 0)) throw new CborError(CborErrorCode.UNSUPPORTED, this.pos, 'not a safe unsigned integer');
    this.head(MajorType.UINT, n);
  }

  int(n: number): void {
    if (!Number.isSafeInteger(n)) throw new CborError(CborErrorCode.UNSUPPORTED, this.pos, 'not a safe integer');
    if (n >= 0) this.head(MajorType.UINT, n);
    else this.head(MajorType.NINT, -1 - n);
  }

  float(x: number): void {
    const b = this.buf;
    const p = this.pos;
    const u = this.scratch.u8;
    // Every binary16 value is a binary32 value: an x that fround changes needs binary64.
    if (x === x && Math.fround(x) !== x) {
      this.room(9);
      this.scratch.f64[0] = x;
      b[p] = F64;
      if (LITTLE_ENDIAN) for (let i = 0; i < 8; i++) b[p + 1 + i] = u[7 - i]!;
      else for (let i = 0; i < 8; i++) b[p + 1 + i] = u[i]!;
      this.pos = p + 9;
      return;
    }
    const h = f16Bits(x);
    if (h >= 0) {
      this.room(3);
      b[p] = F16;
      b[p + 1] = h >> 8;
      b[p + 2] = h & 0xff;
      this.pos = p + 3;
      return;
    }
    this.room(5);
    this.scratch.f32[0] = x;
    b[p] = F32;
    if (LITTLE_ENDIAN) for (let i = 0; i < 4; i++) b[p + 1 + i] = u[3 - i]!;
    else for (let i = 0; i < 4; i++) b[p + 1 + i] = u[i]!;
    this.pos = p + 5;
  }

  /** A safe integer as an integer; anything else, and −0 (so that it survives), as float(). */
  number(x: number): void {
    if (Number.isSafeInteger(x) && (x !== 0 || 1 / x > 0)) this.int(x);
    else this.float(x);
  }

  bool(v: boolean): void {
    this.room(1);
    this.buf[this.pos++] = v ? TRUE : FALSE;
  }

  null(): void {
    this.room(1);
    this.buf[this.pos++] = NULL;
  }

  text(s: string): void {
    const n = utf8ByteLength(s);
    this.room(headSize(n) + n);
    this.head(MajorType.TEXT, n);
    this.pos = utf8Write(s, this.buf, this.pos);
  }

  bytes(v: Uint8Array): void {
    const n = v.length;
    this.room(headSize(n) + n);
    this.head(MajorType.BYTES, n);
    this.buf.set(v, this.pos);
    this.pos += n;
  }

  array(length: number): void {
    if (!(Number.isSafeInteger(length) && length >= 0)) throw new CborError(CborErrorCode.UNSUPPORTED, this.pos, 'bad array length');
    this.head(MajorType.ARRAY, length);
  }

  map(size: number): void {
    if (!(Number.isSafeInteger(size) && size >= 0)) throw new CborError(CborErrorCode.UNSUPPORTED, this.pos, 'bad map size');
    this.head(MajorType.MAP, size);
  }

  value(v: CborValue): void {
    switch (typeof v) {
      case 'number':
        return this.number(v);
      case 'string':
        return this.text(v);
      case 'boolean':
        return this.bool(v);
      case 'object':
        if (v === null) return this.null();
        if (v instanceof Uint8Array) return this.bytes(v);
        if (Array.isArray(v)) {
          const n = v.length;
          this.array(n);
          for (let i = 0; i < n; i++) this.value(v[i]!);
          return;
        }
        if (v instanceof Map) return this.writeMap(v);
    }
    throw new CborError(CborErrorCode.UNSUPPORTED, this.pos, 'value outside the subset');
  }

  private room(n: number): void {
    if (this.pos + n > this.buf.length) throw new CborError(CborErrorCode.OVERFLOW, this.pos);
  }

  private head(major: number, n: number): void {
    const b = this.buf;
    const p = this.pos;
    const mt = major << 5;
    if (n < AI_1) {
      this.room(1);
      b[p] = mt | n;
      this.pos = p + 1;
    } else if (n < 0x100) {
      this.room(2);
      b[p] = mt | AI_1;
      b[p + 1] = n;
      this.pos = p + 2;
    } else if (n < 0x10000) {
      this.room(3);
      b[p] = mt | AI_2;
      b[p + 1] = n >> 8;
      b[p + 2] = n & 0xff;
      this.pos = p + 3;
    } else if (n < TWO_32) {
      this.room(5);
      b[p] = mt | AI_4;
      this.put32(p + 1, n);
      this.pos = p + 5;
    } else {
      this.room(9);
      b[p] = mt | AI_8;
      this.put32(p + 1, Math.floor(n / TWO_32));
      this.put32(p + 5, n >>> 0);
      this.pos = p + 9;
    }
  }

  private put32(p: number, n: number): void {
    const b = this.buf;
    b[p] = n >>> 24;
    b[p + 1] = (n >> 16) & 0xff;
    b[p + 2] = (n >> 8) & 0xff;
    b[p + 3] = n & 0xff;
  }

  // Keys go out in ascending order (the decoder's canonical rule). A map built in order is written
  // in one pass; otherwise each next key is found by a scan, O(n²) for frame-sized n, and no array
  // of keys is allocated. Map.forEach with a static callback and `this` avoids iterator objects.
  private writeMap(m: CborMap): void {
    const n = m.size;
    this.map(n);
    this.ordered = true;
    this.keyAfter = -Infinity;
    m.forEach(CborWriter.checkOrder, this);
    if (this.ordered) {
      m.forEach(CborWriter.writeEntry, this);
      return;
    }
    let key = -Infinity;
    for (let i = 0; i < n; i++) {
      this.keyAfter = key;
      this.keyNext = Infinity;
      m.forEach(CborWriter.findNext, this);
      key = this.keyNext;
      this.int(key);
      this.value(m.get(key)!);
    }
  }

  private static checkOrder(this: CborWriter, _v: CborValue, k: number): void {
    if (!(k > this.keyAfter)) this.ordered = false;
    this.keyAfter = k;
  }

  private static findNext(this: CborWriter, _v: CborValue, k: number): void {
    if (k > this.keyAfter && k < this.keyNext) this.keyNext = k;
  }

  private static writeEntry(this: CborWriter, v: CborValue, k: number): void {
    this.int(k);
    this.value(v);
  }
}

/** Encodes `v` at the start of `buf`; returns the length written. */
export function encodeValue(v: CborValue, buf: Uint8Array): number {
  const w = new CborWriter(buf);
  w.value(v);
  return w.pos;
}
