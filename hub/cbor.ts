// CBOR (RFC 8949) for the hub's frames: exactly the subset they use, over caller-owned buffers.
//
// Values: unsigned and negative integers within ±(2^53−1); byte strings; UTF-8 text strings; arrays;
// maps with integer keys (decoded to Map<number, CborValue>); floats of 16, 32 and 64 bits; false,
// true, null.
//
// What the decoder enforces, and the error each breach yields (`offset` is where the item at fault
// starts; for bad UTF-8, the first bad byte; for trailing bytes, the first of them):
//   TRUNCATED      the input ends inside an item, or an array/map counts more entries than the bytes
//                  left could hold.
//   MALFORMED      not well-formed (§3): additional information 28–30; 31 on major types 0, 1 and 6;
//                  a break (0xff) outside an indefinite item; a two-byte simple value below 32
//                  (§3.3). Text that is not well-formed UTF-8 (§3.1, RFC 3629). A map key equal to
//                  the one before it (duplicate keys make a map invalid, §5.6). Bytes after a whole
//                  value in `decodeValue`. From the typed readers: an item of another type.
//   NON_CANONICAL  an integer, length or count not in its shortest form (§4.2.1); map keys not in
//                  strictly ascending numeric order. For non-negative keys, the ones our frames
//                  use, numeric order is also the bytewise order of §4.2.1; a negative key sorts
//                  before the non-negative ones here, after them in §4.2.1.
//   UNSUPPORTED    well-formed, outside the subset: tags, undefined, simple values other than
//                  false/true/null, indefinite lengths, integers beyond ±(2^53−1), map keys that
//                  are not integers.
//   TOO_LARGE      a string longer than maxStringBytes; an array or map of more than maxItems.
//   TOO_DEEP       more than maxDepth arrays/maps nested one inside another (a top-level array is
//                  at depth 1; maxDepth 0 admits scalars only). Counted within one value()/skip().
// Floats of any width are accepted, shortest or not; every NaN decodes to NaN.
//
// The encoder writes integers and lengths in shortest form, floats in the shortest of f16/f32/f64
// that holds the value exactly (NaN as f16 0x7e00), and map keys in ascending order. It throws
// OVERFLOW when the caller's buffer cannot take the next item (leaving `pos` before it), and
// UNSUPPORTED for a value outside the subset (an unsafe integer, a non-integer map key, undefined,
// an object of another kind). After a throw inside `value()`, the bytes from where that value began
// are unspecified. Values must be acyclic.

import { UTF8_DECODE_CHUNK, utf8ByteLength, utf8Check, utf8Decode, utf8Write } from './utf8.js';

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

// §3: additional information 24–27 announce a 1-, 2-, 4- or 8-byte argument; 31 an indefinite length.
const AI_1 = 24;
const AI_2 = 25;
const AI_4 = 26;
const AI_8 = 27;
const AI_INDEFINITE = 31;
// §3.3: initial bytes of major type 7.
const FALSE = 0xf4;
const TRUE = 0xf5;
const NULL = 0xf6;
const SIMPLE_1 = 0xf8;
const F16 = 0xf9;
const F32 = 0xfa;
const F64 = 0xfb;
const TWO_32 = 0x100000000;
// The high word of 2^53−1: an 8-byte argument above it is no safe integer.
const MAX_SAFE_HI = 0x1fffff;
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

function f16Value(h: number): number {
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  const a =
    e === 0 ? f / 0x1000000
    : e === 0x1f ? (f === 0 ? Infinity : NaN)
    : e >= 25 ? (f + 1024) * (1 << (e - 25))
    : (f + 1024) / (1 << (25 - e));
  return h & 0x8000 ? -a : a;
}

function u32(b: Uint8Array, i: number): number {
  return b[i]! * 0x1000000 + ((b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!);
}

// Float conversion goes through typed-array views of an 8-byte scratch: on XS a DataView byte
// accessor costs several times a typed-array element access, and floats are the bulk of every
// DATA frame. CBOR is big-endian; the platform's order is probed once. The scratch belongs to
// each writer and reader, made at run time: on the device this module is preloaded, and a
// typed array made at preload lives in flash, where a write throws.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

class FloatScratch {
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

export class CborReader {
  pos: number;
  private buf: Uint8Array;
  private lim: number;
  private readonly maxDepth: number;
  private readonly maxItems: number;
  private readonly maxStringBytes: number;
  private readonly units = new Uint32Array(UTF8_DECODE_CHUNK);
  private readonly scratch = new FloatScratch();

  constructor(buf: Uint8Array, start = 0, end = buf.length, limits: CborLimits = DEFAULT_CBOR_LIMITS) {
    this.buf = buf;
    this.pos = start;
    this.lim = Math.min(end, buf.length);
    this.maxDepth = limits.maxDepth;
    this.maxItems = limits.maxItems;
    this.maxStringBytes = limits.maxStringBytes;
  }

  get end(): number {
    return this.lim;
  }

  reset(buf: Uint8Array, start: number, end: number): void {
    this.buf = buf;
    this.pos = start;
    this.lim = Math.min(end, buf.length);
  }

  atEnd(): boolean {
    return this.pos >= this.lim;
  }

  /** The major type of the next item; TRUNCATED at the end, as peekIsNull(). */
  peekMajor(): number {
    return this.initial() >> 5;
  }

  peekIsNull(): boolean {
    return this.initial() === NULL;
  }

  uint(): number {
    const p = this.pos;
    const n = this.expect(MajorType.UINT);
    if (n === Infinity) throw new CborError(CborErrorCode.UNSUPPORTED, p, 'integer beyond 2^53-1');
    return n;
  }

  int(): number {
    const p = this.pos;
    const major = this.initial() >> 5;
    if (major > MajorType.NINT) throw new CborError(CborErrorCode.MALFORMED, p, 'expected an integer');
    return this.integer(major, p);
  }

  number(): number {
    const p = this.pos;
    const ib = this.initial();
    if (ib >> 5 <= MajorType.NINT) return this.integer(ib >> 5, p);
    if (ib >= F16 && ib <= F64) return this.float(ib, p);
    throw new CborError(CborErrorCode.MALFORMED, p, 'expected a number');
  }

  bool(): boolean {
    const ib = this.initial();
    if (ib !== TRUE && ib !== FALSE) throw new CborError(CborErrorCode.MALFORMED, this.pos, 'expected a boolean');
    this.pos++;
    return ib === TRUE;
  }

  null(): void {
    if (this.initial() !== NULL) throw new CborError(CborErrorCode.MALFORMED, this.pos, 'expected null');
    this.pos++;
  }

  text(): string {
    const p = this.pos;
    const n = this.string(this.expect(MajorType.TEXT), p);
    return utf8Decode(this.buf, this.pos - n, this.pos, this.units);
  }

  /** A copy: the input buffer is reused after decoding. */
  bytes(): Uint8Array {
    const p = this.pos;
    const n = this.string(this.expect(MajorType.BYTES), p);
    return this.buf.slice(this.pos - n, this.pos);
  }

  array(): number {
    const p = this.pos;
    return this.count(this.expect(MajorType.ARRAY), 1, p);
  }

  map(): number {
    const p = this.pos;
    return this.count(this.expect(MajorType.MAP), 2, p);
  }

  value(): CborValue {
    return this.item(0, true);
  }

  /** Passes over one item, checking exactly what value() checks, building nothing. */
  skip(): void {
    this.item(0, false);
  }

  private initial(): number {
    if (this.pos >= this.lim) throw new CborError(CborErrorCode.TRUNCATED, this.pos);
    return this.buf[this.pos]!;
  }

  private expect(major: number): number {
    if (this.initial() >> 5 !== major) throw new CborError(CborErrorCode.MALFORMED, this.pos, 'unexpected major type');
    return this.argument();
  }

  /** The argument of the head at pos (major type 0–6, pos < lim), in shortest form; Infinity above 2^53−1. */
  private argument(): number {
    const b = this.buf;
    const p = this.pos;
    const ib = b[p]!;
    const ai = ib & 0x1f;
    if (ai < AI_1) {
      this.pos = p + 1;
      return ai;
    }
    if (ai > AI_8) {
      const major = ib >> 5;
      const indefinite = ai === AI_INDEFINITE && major >= MajorType.BYTES && major <= MajorType.MAP;
      throw new CborError(indefinite ? CborErrorCode.UNSUPPORTED : CborErrorCode.MALFORMED, p, indefinite ? 'indefinite length' : 'reserved additional information');
    }
    const size = 1 << (ai - AI_1);
    if (p + 1 + size > this.lim) throw new CborError(CborErrorCode.TRUNCATED, p);
    let n: number;
    let shortest: boolean;
    if (ai === AI_1) {
      n = b[p + 1]!;
      shortest = n >= AI_1;
    } else if (ai === AI_2) {
      n = (b[p + 1]! << 8) | b[p + 2]!;
      shortest = n >= 0x100;
    } else if (ai === AI_4) {
      n = u32(b, p + 1);
      shortest = n >= 0x10000;
    } else {
      const hi = u32(b, p + 1);
      n = hi > MAX_SAFE_HI ? Infinity : hi * TWO_32 + u32(b, p + 5);
      shortest = hi !== 0;
    }
    if (!shortest) throw new CborError(CborErrorCode.NON_CANONICAL, p, 'argument not in shortest form');
    this.pos = p + 1 + size;
    return n;
  }

  private integer(major: number, p: number): number {
    const n = this.argument();
    // −1−(2^53−1) = −2^53 is past the safe range too.
    if (n === Infinity || (major === MajorType.NINT && n === Number.MAX_SAFE_INTEGER)) {
      throw new CborError(CborErrorCode.UNSUPPORTED, p, 'integer beyond the safe range');
    }
    return major === MajorType.UINT ? n : -1 - n;
  }

  private float(ib: number, p: number): number {
    const b = this.buf;
    const size = ib === F16 ? 2 : ib === F32 ? 4 : 8;
    if (p + 1 + size > this.lim) throw new CborError(CborErrorCode.TRUNCATED, p);
    this.pos = p + 1 + size;
    if (size === 2) return f16Value((b[p + 1]! << 8) | b[p + 2]!);
    const sc = this.scratch;
    const u = sc.u8;
    if (LITTLE_ENDIAN) for (let i = 0; i < size; i++) u[size - 1 - i] = b[p + 1 + i]!;
    else for (let i = 0; i < size; i++) u[i] = b[p + 1 + i]!;
    return size === 4 ? sc.f32[0]! : sc.f64[0]!;
  }

  /** Checks a byte/text string of n bytes whose head started at p; leaves pos after it. */
  private string(n: number, p: number): number {
    if (n > this.maxStringBytes) throw new CborError(CborErrorCode.TOO_LARGE, p, 'string longer than maxStringBytes');
    const start = this.pos;
    if (n > this.lim - start) throw new CborError(CborErrorCode.TRUNCATED, p);
    if (this.buf[p]! >> 5 === MajorType.TEXT) {
      const bad = utf8Check(this.buf, start, start + n);
      if (bad >= 0) throw new CborError(CborErrorCode.MALFORMED, bad, 'invalid UTF-8');
    }
    this.pos = start + n;
    return n;
  }

  /** Checks an array/map count whose entries take at least `width` bytes each. */
  private count(n: number, width: number, p: number): number {
    if (n > this.maxItems) throw new CborError(CborErrorCode.TOO_LARGE, p, 'more than maxItems entries');
    if (n * width > this.lim - this.pos) throw new CborError(CborErrorCode.TRUNCATED, p);
    return n;
  }

  private item(depth: number, build: boolean): CborValue {
    const p = this.pos;
    const ib = this.initial();
    const major = ib >> 5;
    switch (major) {
      case MajorType.UINT:
      case MajorType.NINT:
        return this.integer(major, p);
      case MajorType.BYTES: {
        const n = this.string(this.argument(), p);
        return build ? this.buf.slice(this.pos - n, this.pos) : null;
      }
      case MajorType.TEXT: {
        const n = this.string(this.argument(), p);
        return build ? utf8Decode(this.buf, this.pos - n, this.pos, this.units) : null;
      }
      case MajorType.ARRAY: {
        if (depth >= this.maxDepth) throw new CborError(CborErrorCode.TOO_DEEP, p);
        const n = this.count(this.argument(), 1, p);
        const a: CborValue[] | null = build ? new Array<CborValue>(n) : null;
        for (let i = 0; i < n; i++) {
          const v = this.item(depth + 1, build);
          if (a !== null) a[i] = v;
        }
        return a;
      }
      case MajorType.MAP: {
        if (depth >= this.maxDepth) throw new CborError(CborErrorCode.TOO_DEEP, p);
        const n = this.count(this.argument(), 2, p);
        const m: CborMap | null = build ? new Map<number, CborValue>() : null;
        let prev = -Infinity;
        for (let i = 0; i < n; i++) {
          const kp = this.pos;
          const km = this.initial() >> 5;
          if (km > MajorType.NINT) throw new CborError(CborErrorCode.UNSUPPORTED, kp, 'map key not an integer');
          const k = this.integer(km, kp);
          if (k === prev) throw new CborError(CborErrorCode.MALFORMED, kp, 'duplicate map key');
          if (k < prev) throw new CborError(CborErrorCode.NON_CANONICAL, kp, 'map keys not ascending');
          prev = k;
          const v = this.item(depth + 1, build);
          if (m !== null) m.set(k, v);
        }
        return m;
      }
      case MajorType.TAG:
        this.argument();
        throw new CborError(CborErrorCode.UNSUPPORTED, p, 'tag');
    }
    return this.simple(ib, p);
  }

  private simple(ib: number, p: number): CborValue {
    switch (ib) {
      case FALSE:
        this.pos = p + 1;
        return false;
      case TRUE:
        this.pos = p + 1;
        return true;
      case NULL:
        this.pos = p + 1;
        return null;
      case F16:
      case F32:
      case F64:
        return this.float(ib, p);
      case SIMPLE_1:
        if (p + 1 >= this.lim) throw new CborError(CborErrorCode.TRUNCATED, p);
        if (this.buf[p + 1]! < 32) throw new CborError(CborErrorCode.MALFORMED, p, 'two-byte simple value below 32');
        throw new CborError(CborErrorCode.UNSUPPORTED, p, 'simple value');
    }
    // 0xfc–0xfe are reserved; 0xff is a break with no indefinite item open.
    if (ib > F64) throw new CborError(CborErrorCode.MALFORMED, p, ib === 0xff ? 'break outside an indefinite item' : 'reserved additional information');
    throw new CborError(CborErrorCode.UNSUPPORTED, p, 'simple value');
  }
}

/** Decodes `buf`, which must hold exactly one value. */
export function decodeValue(buf: Uint8Array, limits: CborLimits = DEFAULT_CBOR_LIMITS): CborValue {
  const r = new CborReader(buf, 0, buf.length, limits);
  const v = r.value();
  if (r.pos !== buf.length) throw new CborError(CborErrorCode.MALFORMED, r.pos, 'bytes after the value');
  return v;
}

/** Encodes `v` at the start of `buf`; returns the length written. */
export function encodeValue(v: CborValue, buf: Uint8Array): number {
  const w = new CborWriter(buf);
  w.value(v);
  return w.pos;
}
