// The CBOR reader (cbor.ts defines the subset it reads): typed reads, one item at a time, for
// the frame decoder (frame-fields.ts), and whole values (decodeValue), every item checked as it
// is read and nothing built for an item that is skipped.
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

import {
  AI_1,
  AI_2,
  AI_4,
  AI_8,
  CborError,
  CborErrorCode,
  DEFAULT_CBOR_LIMITS,
  F16,
  F32,
  F64,
  FALSE,
  FloatScratch,
  LITTLE_ENDIAN,
  MajorType,
  NULL,
  TRUE,
  TWO_32,
  type CborLimits,
  type CborMap,
  type CborValue,
} from './cbor.js';
import { UTF8_DECODE_CHUNK, utf8Check, utf8Decode } from './utf8.js';

// §3: additional information 31 announces an indefinite length.
const AI_INDEFINITE = 31;
// §3.3: the initial byte of a two-byte simple value.
const SIMPLE_1 = 0xf8;
// The high word of 2^53−1: an 8-byte argument above it is no safe integer.
const MAX_SAFE_HI = 0x1fffff;

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
