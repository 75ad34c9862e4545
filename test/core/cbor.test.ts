import { Decoder, Encoder } from 'cbor-x';
import fc from 'fast-check';
import {
  CborError,
  CborErrorCode,
  CborWriter,
  DEFAULT_CBOR_LIMITS,
  MajorType,
  encodeValue,
  type CborLimits,
  type CborMap,
  type CborValue,
} from '../../hub/cbor.js';
import { CborReader, decodeValue } from '../../hub/cbor-reader.js';
import { UTF8_DECODE_CHUNK, utf8ByteLength, utf8Check, utf8Decode, utf8Write } from '../../hub/utf8.js';
import { deepEqual, equal, fail, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';

const CODES: readonly string[] = Object.values(CborErrorCode);

function bytes(hex: string): Uint8Array {
  const clean = hex.replace(/\s+/g, '');
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function hex(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += b[i]!.toString(16).padStart(2, '0');
  return s;
}

const scratch = new Uint8Array(1 << 16);

function encode(v: CborValue): Uint8Array {
  return scratch.slice(0, encodeValue(v, scratch));
}

function encodeWith(write: (w: CborWriter) => void): string {
  const w = new CborWriter(new Uint8Array(64));
  write(w);
  return hex(w.subarray());
}

function isCborError(e: unknown): e is CborError {
  return e instanceof CborError && CODES.includes(e.code);
}

/** The CborError `fn` throws; fails on success or on any other exception. */
function cborError(fn: () => unknown): CborError {
  return throws(fn, isCborError) as CborError;
}

function rejects(input: string, code: CborErrorCode, offset?: number, limits?: CborLimits): void {
  const e = cborError(() => decodeValue(bytes(input), limits));
  equal(e.code, code, input);
  if (offset !== undefined) equal(e.offset, offset, `${input} offset`);
}

/** Decodes, or throws only a CborError with a listed code and an offset inside the input. */
function decodeOrCborError(b: Uint8Array, limits?: CborLimits): { value?: CborValue; error?: CborError } {
  try {
    return { value: decodeValue(b, limits) };
  } catch (e) {
    if (!isCborError(e)) fail(`${hex(b)}: threw ${String(e)}`);
    ok(e.offset >= 0 && e.offset <= b.length, `${hex(b)}: offset ${e.offset}`);
    return { error: e };
  }
}

function sortedKeys(m: CborMap): boolean {
  let prev = -Infinity;
  for (const k of m.keys()) {
    if (!(k > prev)) return false;
    prev = k;
  }
  return true;
}

// --- generators -------------------------------------------------------------------------------

const f16Value = fc.integer({ min: 0, max: 0xffff }).map((h) => decodeValue(new Uint8Array([0xf9, h >> 8, h & 0xff])) as number);

const scalar: fc.Arbitrary<CborValue> = fc.oneof(
  fc.integer({ min: -30, max: 30 }),
  fc.maxSafeInteger(),
  fc.integer({ min: -0x100000000, max: 0x100000000 }),
  fc.double(),
  fc.float(),
  f16Value,
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.string({ maxLength: 40 }),
  fc.uint8Array({ maxLength: 40 }),
  fc.boolean(),
  fc.constant(null),
);

const key = fc.oneof(fc.integer({ min: -30, max: 30 }), fc.maxSafeInteger());

const { value: anyValue } = fc.letrec<{ value: CborValue }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 6, depthIdentifier: 'cbor' },
    scalar,
    fc.array(tie('value'), { maxLength: 6 }),
    fc.array(fc.tuple(key, tie('value')), { maxLength: 6 }).map((entries): CborValue => new Map(entries)),
  ),
}));

// --- RFC 8949 Appendix A --------------------------------------------------------------------------

describe('cbor: RFC 8949 Appendix A, the cases in our subset', () => {
  const range25: number[] = [];
  for (let i = 1; i <= 25; i++) range25.push(i);
  // Written exactly so by our encoder and read back to the same value.
  const both: [CborValue, string][] = [
    [0, '00'], [1, '01'], [10, '0a'], [23, '17'], [24, '1818'], [25, '1819'], [100, '1864'],
    [1000, '1903e8'], [1000000, '1a000f4240'], [1000000000000, '1b000000e8d4a51000'],
    [-1, '20'], [-10, '29'], [-100, '3863'], [-1000, '3903e7'],
    [-0, 'f98000'], [1.1, 'fb3ff199999999999a'], [1.5, 'f93e00'], [3.4028234663852886e38, 'fa7f7fffff'],
    [1.0e300, 'fb7e37e43c8800759c'], [5.960464477539063e-8, 'f90001'], [0.00006103515625, 'f90400'],
    [-4.1, 'fbc010666666666666'], [Infinity, 'f97c00'], [NaN, 'f97e00'], [-Infinity, 'f9fc00'],
    [false, 'f4'], [true, 'f5'], [null, 'f6'],
    [new Uint8Array(0), '40'], [new Uint8Array([1, 2, 3, 4]), '4401020304'],
    ['', '60'], ['a', '6161'], ['IETF', '6449455446'], ['"\\', '62225c'], ['\u00fc', '62c3bc'],
    ['\u6c34', '63e6b0b4'], ['\ud800\udd51', '64f0908591'],
    [[], '80'], [[1, 2, 3], '83010203'], [[1, [2, 3], [4, 5]], '8301820203820405'],
    [range25, '98190102030405060708090a0b0c0d0e0f101112131415161718181819'],
    [new Map(), 'a0'], [new Map([[1, 2], [3, 4]]), 'a201020304'],
  ];
  it('encodes and decodes each value as the RFC does', () => {
    for (const [v, h] of both) {
      equal(hex(encode(v)), h, `encode ${String(v)}`);
      deepEqual(decodeValue(bytes(h)), v, `decode ${h}`);
    }
  });
  it('decodes floats written in a wider or other width than ours', () => {
    const decodeOnly: [number, string][] = [
      [0, 'f90000'], [1, 'f93c00'], [100000, 'fa47c35000'], [65504, 'f97bff'], [-4, 'f9c400'],
      [Infinity, 'fa7f800000'], [NaN, 'fa7fc00000'], [-Infinity, 'faff800000'],
      [Infinity, 'fb7ff0000000000000'], [NaN, 'fb7ff8000000000000'], [-Infinity, 'fbfff0000000000000'],
    ];
    for (const [v, h] of decodeOnly) equal(decodeValue(bytes(h)), v, h);
  });
  it('rejects the rest of Appendix A as outside the subset', () => {
    const outside = [
      '1bffffffffffffffff', 'c249010000000000000000', '3bffffffffffffffff', 'c349010000000000000000',
      'f0', 'f8ff', 'f7', 'c074323031332d30332d32315432303a30343a30305a', 'c11a514b67b0',
      'c1fb41d452d9ec200000', 'd74401020304', 'd818456449455446', 'd82076687474703a2f2f7777772e6578616d706c652e636f6d',
      'a26161016162820203', '826161a161626163', 'a56161614161626142616361436164614461656145',
      '5f42010243030405ff', '7f657374726561646d696e67ff', '9fff', '9f018202039f0405ffff', '9f01820203820405ff',
      '83018202039f0405ff', '83019f0203ff820405', '9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff',
      'bf61610161629f0203ffff', '826161bf61626163ff', 'bf6346756ef563416d7421ff',
    ];
    for (const h of outside) rejects(h, CborErrorCode.UNSUPPORTED);
  });
});

// --- errors ------------------------------------------------------------------------------------

describe('cbor: every error code from a crafted input', () => {
  it('TRUNCATED: the input ends inside an item', () => {
    rejects('', CborErrorCode.TRUNCATED, 0);
    rejects('19 03', CborErrorCode.TRUNCATED, 0);
    rejects('1b 00 00 00 01 00 00 00', CborErrorCode.TRUNCATED, 0);
    rejects('62 61', CborErrorCode.TRUNCATED, 0);
    rejects('82 01', CborErrorCode.TRUNCATED, 0);
    rejects('81 82 01', CborErrorCode.TRUNCATED, 1);
    rejects('a1 01', CborErrorCode.TRUNCATED, 0);
    rejects('a2 01 02 03', CborErrorCode.TRUNCATED, 0);
    rejects('fa 3f 80 00', CborErrorCode.TRUNCATED, 0);
    rejects('f9 00', CborErrorCode.TRUNCATED, 0);
    rejects('f8', CborErrorCode.TRUNCATED, 0);
    // A count no remaining bytes could satisfy is caught before any entry is read.
    rejects('99 01 00 01', CborErrorCode.TRUNCATED, 0);
    rejects('b8 20 01 02', CborErrorCode.TRUNCATED, 0);
  });
  it('MALFORMED: not well-formed, bad UTF-8, duplicate keys, trailing bytes', () => {
    for (const h of ['1c', '1d', '1e', '3c', '5c', '7d', '9e', 'bc', 'dc', 'fc', 'fd', 'fe']) rejects(h, CborErrorCode.MALFORMED, 0);
    rejects('1f', CborErrorCode.MALFORMED, 0);
    rejects('3f', CborErrorCode.MALFORMED, 0);
    rejects('df', CborErrorCode.MALFORMED, 0);
    rejects('ff', CborErrorCode.MALFORMED, 0);
    rejects('82 01 ff', CborErrorCode.MALFORMED, 2);
    rejects('f8 00', CborErrorCode.MALFORMED, 0);
    rejects('f8 1f', CborErrorCode.MALFORMED, 0);
    rejects('62 c3 28', CborErrorCode.MALFORMED, 1);
    rejects('a2 01 00 01 00', CborErrorCode.MALFORMED, 3);
    rejects('a2 20 00 20 00', CborErrorCode.MALFORMED, 3);
    rejects('01 00', CborErrorCode.MALFORMED, 1);
    rejects('80 80', CborErrorCode.MALFORMED, 1);
  });
  it('NON_CANONICAL: an argument not in shortest form, map keys not ascending', () => {
    rejects('18 17', CborErrorCode.NON_CANONICAL, 0);
    rejects('19 00 ff', CborErrorCode.NON_CANONICAL, 0);
    rejects('1a 00 00 ff ff', CborErrorCode.NON_CANONICAL, 0);
    rejects('1b 00 00 00 00 ff ff ff ff', CborErrorCode.NON_CANONICAL, 0);
    rejects('38 00', CborErrorCode.NON_CANONICAL, 0);
    rejects('78 01 61', CborErrorCode.NON_CANONICAL, 0);
    rejects('58 00', CborErrorCode.NON_CANONICAL, 0);
    rejects('98 01 00', CborErrorCode.NON_CANONICAL, 0);
    rejects('b8 00', CborErrorCode.NON_CANONICAL, 0);
    rejects('81 18 00', CborErrorCode.NON_CANONICAL, 1);
    rejects('a1 18 01 00', CborErrorCode.NON_CANONICAL, 1);
    rejects('a2 02 00 01 00', CborErrorCode.NON_CANONICAL, 3);
    // Numeric order: -1 (0x20) sorts before 0, although its encoding sorts after.
    rejects('a2 00 00 20 00', CborErrorCode.NON_CANONICAL, 3);
    deepEqual(decodeValue(bytes('a2 20 00 00 00')), new Map([[-1, 0], [0, 0]]));
  });
  it('TOO_LARGE: strings, arrays and maps over the limits', () => {
    const over = DEFAULT_CBOR_LIMITS.maxStringBytes + 1;
    rejects('79' + over.toString(16).padStart(4, '0'), CborErrorCode.TOO_LARGE, 0);
    rejects('59' + over.toString(16).padStart(4, '0'), CborErrorCode.TOO_LARGE, 0);
    rejects('99 01 01', CborErrorCode.TOO_LARGE, 0);
    rejects('b9 01 01', CborErrorCode.TOO_LARGE, 0);
    rejects('9b 00 20 00 00 00 00 00 00', CborErrorCode.TOO_LARGE, 0);
    rejects('81 5a 00 01 00 00', CborErrorCode.TOO_LARGE, 1);
    const tight: CborLimits = { maxDepth: 8, maxItems: 2, maxStringBytes: 3 };
    rejects('63 61 62 63', CborErrorCode.TOO_LARGE, undefined, { ...tight, maxStringBytes: 2 });
    deepEqual(decodeValue(bytes('63 61 62 63'), tight), 'abc');
    rejects('83 01 02 03', CborErrorCode.TOO_LARGE, 0, tight);
    rejects('a3 01 01 02 02 03 03', CborErrorCode.TOO_LARGE, 0, tight);
    deepEqual(decodeValue(bytes('a2 01 01 02 02'), tight), new Map([[1, 1], [2, 2]]));
  });
  it('limits at the boundary: exactly the limit decodes', () => {
    const n = DEFAULT_CBOR_LIMITS.maxStringBytes;
    const text = new Uint8Array(3 + n).fill(0x61);
    text.set([0x79, n >> 8, n & 0xff]);
    equal((decodeValue(text) as string).length, n);
    const items = DEFAULT_CBOR_LIMITS.maxItems;
    const arr = new Uint8Array(3 + items);
    arr.set([0x99, items >> 8, items & 0xff]);
    equal((decodeValue(arr) as CborValue[]).length, items);
  });
  it('TOO_DEEP: more than maxDepth containers nested', () => {
    const d = DEFAULT_CBOR_LIMITS.maxDepth;
    deepEqual(decodeValue(bytes('81'.repeat(d) + '00')), JSON.parse('['.repeat(d) + '0' + ']'.repeat(d)));
    rejects('81'.repeat(d + 1) + '00', CborErrorCode.TOO_DEEP, d);
    rejects('a1 00'.repeat(d + 1) + '00', CborErrorCode.TOO_DEEP, 2 * d);
    ok(decodeValue(bytes('a1 00'.repeat(d) + '00')) instanceof Map);
    rejects('81 00', CborErrorCode.TOO_DEEP, 0, { ...DEFAULT_CBOR_LIMITS, maxDepth: 0 });
    equal(decodeValue(bytes('00'), { ...DEFAULT_CBOR_LIMITS, maxDepth: 0 }), 0);
    // A nesting bomb far past the limit fails on the limit, not on the stack.
    rejects('81'.repeat(5000) + '00', CborErrorCode.TOO_DEEP, d);
  });
  it('UNSUPPORTED: tags, simple values, indefinite lengths, unsafe integers, non-integer keys', () => {
    rejects('c0 00', CborErrorCode.UNSUPPORTED, 0);
    rejects('d9 d9 f7 00', CborErrorCode.UNSUPPORTED, 0);
    rejects('f7', CborErrorCode.UNSUPPORTED, 0);
    rejects('e0', CborErrorCode.UNSUPPORTED, 0);
    rejects('f3', CborErrorCode.UNSUPPORTED, 0);
    rejects('f8 20', CborErrorCode.UNSUPPORTED, 0);
    for (const h of ['5f ff', '7f ff', '9f ff', 'bf ff']) rejects(h, CborErrorCode.UNSUPPORTED, 0);
    rejects('1b 00 20 00 00 00 00 00 00', CborErrorCode.UNSUPPORTED, 0);
    rejects('3b 00 1f ff ff ff ff ff ff', CborErrorCode.UNSUPPORTED, 0);
    equal(decodeValue(bytes('1b 00 1f ff ff ff ff ff ff')), Number.MAX_SAFE_INTEGER);
    equal(decodeValue(bytes('3b 00 1f ff ff ff ff ff fe')), -Number.MAX_SAFE_INTEGER);
    rejects('a1 61 61 00', CborErrorCode.UNSUPPORTED, 1);
    rejects('a1 f9 3c 00 00', CborErrorCode.UNSUPPORTED, 1);
    rejects('a1 f6 00', CborErrorCode.UNSUPPORTED, 1);
  });
  it('OVERFLOW: the writer is out of room, and says where', () => {
    const w = new CborWriter(new Uint8Array(4));
    w.uint(1000);
    const e = cborError(() => w.uint(1000));
    equal(e.code, CborErrorCode.OVERFLOW);
    equal(e.offset, 3);
    equal(w.pos, 3, 'pos stays before the item that did not fit');
    w.uint(1);
    equal(w.pos, 4);
    equal(cborError(() => w.null()).code, CborErrorCode.OVERFLOW);
    equal(cborError(() => encodeValue('abc', new Uint8Array(3))).code, CborErrorCode.OVERFLOW);
  });
  it('a CborError is an Error that names its code and offset', () => {
    const e = cborError(() => decodeValue(bytes('18 01')));
    ok(e instanceof Error);
    equal(e.name, 'CborError');
    ok(e.message.includes('NON_CANONICAL at 0'), e.message);
  });
});

// --- the encoder --------------------------------------------------------------------------------

describe('cbor: the encoder', function () {
  this.timeout(120_000);
  it('chooses the shortest float that holds the value exactly', () => {
    const cases: [number, string][] = [
      [0.5, 'f93800'], [65504, 'f97bff'], [65505, 'fa477fe100'], [65520, 'fa477ff000'],
      [2 ** -24, 'f90001'], [3 * 2 ** -24, 'f90003'], [2 ** -25, 'fa33000000'], [2 ** -14, 'f90400'],
      [1 + 2 ** -10, 'f93c01'], [1 + 2 ** -11, 'fa3f801000'], [1 + 2 ** -23, 'fa3f800001'],
      [1 + 2 ** -24, 'fb3ff0000010000000'], [1 / 3, 'fb3fd5555555555555'], [2 ** -149, 'fa00000001'],
      [5e-324, 'fb0000000000000001'], [Number.MAX_VALUE, 'fb7fefffffffffffff'],
      [1, 'f93c00'], [-0, 'f98000'], [0, 'f90000'], [NaN, 'f97e00'], [-Infinity, 'f9fc00'],
    ];
    for (const [x, h] of cases) equal(encodeWith((w) => w.float(x)), h, `float(${x})`);
  });
  it('every binary16 value comes back in its own two bytes (exhaustive)', () => {
    const w = new CborWriter(new Uint8Array(16));
    const r = new CborReader(new Uint8Array(0));
    const b = new Uint8Array([0xf9, 0, 0]);
    for (let h = 0; h <= 0xffff; h++) {
      b[1] = h >> 8;
      b[2] = h & 0xff;
      r.reset(b, 0, 3);
      const x = r.number();
      w.reset();
      w.float(x);
      const isNaN = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
      const want = isNaN ? 0x7e00 : h;
      if (w.pos !== 3 || w.buf[0] !== 0xf9 || w.buf[1] !== want >> 8 || w.buf[2] !== (want & 0xff)) {
        fail(`f9 ${h.toString(16)} -> ${x} -> ${hex(w.subarray())}`);
      }
    }
  });
  it('float(): the width is minimal and the value exact (property)', () => {
    // Independent of the encoder: x fits binary16 iff |x|·2^24 is an integer whose odd part has at
    // most 11 bits and |x| ≤ 65504.
    const fitsF16 = (x: number): boolean => {
      let m = Math.abs(x) * 2 ** 24;
      if (!(Math.abs(x) <= 65504) || m !== Math.floor(m)) return false;
      while (m >= 2048 && m % 2 === 0) m /= 2;
      return m < 2048;
    };
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.float(), f16Value), (x) => {
        const h = encodeWith((w) => w.float(x));
        const got = decodeValue(bytes(h)) as number;
        equal(got, x, h);
        if (x !== x) equal(h, 'f97e00');
        else if (h.startsWith('f9')) ok(fitsF16(x) || !Number.isFinite(x), h);
        else if (h.startsWith('fa')) ok(!fitsF16(x) && Number.isFinite(x) && Math.fround(x) === x, h);
        else ok(h.startsWith('fb') && Math.fround(x) !== x, h);
      }),
      { numRuns: runs(10000, 300) },
    );
  });
  it('number() writes safe integers as integers, everything else as float()', () => {
    equal(encodeWith((w) => w.number(1)), '01');
    equal(encodeWith((w) => w.number(-24)), '37');
    equal(encodeWith((w) => w.number(Number.MAX_SAFE_INTEGER)), '1b001fffffffffffff');
    equal(encodeWith((w) => w.number(-Number.MAX_SAFE_INTEGER)), '3b001ffffffffffffe');
    equal(encodeWith((w) => w.number(2 ** 53)), 'fa5a000000');
    equal(encodeWith((w) => w.number(-0)), 'f98000');
    equal(encodeWith((w) => w.number(0.25)), 'f93400');
  });
  it('integers and lengths at each width boundary', () => {
    const cases: [number, string][] = [
      [23, '17'], [24, '1818'], [255, '18ff'], [256, '190100'], [65535, '19ffff'], [65536, '1a00010000'],
      [0xffffffff, '1affffffff'], [0x100000000, '1b0000000100000000'],
      [-24, '37'], [-25, '3818'], [-256, '38ff'], [-257, '390100'], [-65537, '3a00010000'],
      [-0x100000001, '3b0000000100000000'],
    ];
    for (const [n, h] of cases) {
      equal(encodeWith((w) => w.int(n)), h, `int(${n})`);
      equal(decodeValue(bytes(h)), n, h);
    }
    equal(encodeWith((w) => w.array(24)), '9818');
    equal(encodeWith((w) => w.map(256)), 'b90100');
    equal(encodeWith((w) => w.bytes(new Uint8Array(24))).slice(0, 4), '5818');
  });
  it('rejects values outside the subset with UNSUPPORTED', () => {
    const w = new CborWriter(new Uint8Array(64));
    for (const f of [
      () => w.uint(-1), () => w.uint(1.5), () => w.int(2 ** 53), () => w.int(NaN), () => w.array(-1),
      () => w.map(0.5), () => w.value(undefined as unknown as CborValue), () => w.value({} as unknown as CborValue),
      () => w.value(new Uint16Array(2) as unknown as CborValue), () => w.value(new Map([[1.5, 1]])),
      () => w.value(new Map([[NaN, 1]])), () => w.value([1, undefined as unknown as CborValue]),
    ]) {
      equal(cborError(f).code, CborErrorCode.UNSUPPORTED);
    }
  });
  it('writes map keys in ascending order whatever the insertion order', () => {
    const m: CborMap = new Map<number, CborValue>([[3, 'c'], [-2, 'n'], [1, new Map<number, CborValue>([[9, 0], [2, 1]])], [0, 0]]);
    equal(hex(encode(m)), 'a4' + '21616e' + '0000' + '01a2020109' + '00' + '036163');
    const back = decodeValue(encode(m)) as CborMap;
    deepEqual([...back.keys()], [-2, 0, 1, 3]);
    deepEqual(back, m);
  });
  it('text: UTF-8 by hand, lone surrogates as U+FFFD', () => {
    const cases: [string, string][] = [
      ['\u0000', '00'], ['\u007f', '7f'], ['\u0080', 'c280'], ['\u07ff', 'dfbf'], ['\u0800', 'e0a080'],
      ['\ud7ff', 'ed9fbf'], ['\ue000', 'ee8080'], ['\uffff', 'efbfbf'], ['\u20ac', 'e282ac'],
      ['\ud834\udd1e', 'f09d849e'], ['\udbff\udfff', 'f48fbfbf'], ['\ud800\udc00', 'f0908080'],
      ['\ud800', 'efbfbd'], ['\udc00', 'efbfbd'], ['\ud800a', 'efbfbd61'], ['\udc00\ud800', 'efbfbdefbfbd'],
      ['a\ud83d', '61efbfbd'], ['\ud83d\ud83d\ude00', 'efbfbdf09f9880'],
    ];
    for (const [s, h] of cases) {
      equal(utf8ByteLength(s), h.length / 2, `length of ${JSON.stringify(s)}`);
      const out = new Uint8Array(h.length / 2 + 2).fill(0xee);
      equal(utf8Write(s, out, 1), 1 + h.length / 2);
      equal(hex(out), 'ee' + h + 'ee', JSON.stringify(s));
    }
    equal(hex(encode('\ud834\udd1e')), '64f09d849e');
  });
  it('never writes past the end of its buffer (property)', () => {
    const backing = new Uint8Array(1 << 14);
    fc.assert(
      fc.property(anyValue, fc.nat({ max: 64 }), (v, cut) => {
        const full = encode(v);
        const room = Math.max(0, full.length - cut);
        backing.fill(0xaa);
        const view = backing.subarray(8, 8 + room);
        try {
          equal(encodeValue(v, view), full.length);
          ok(room >= full.length, 'wrote more than the room it had');
          equal(hex(view.subarray(0, full.length)), hex(full));
        } catch (e) {
          if (!isCborError(e) || e.code !== CborErrorCode.OVERFLOW) throw e;
          ok(room < full.length, `OVERFLOW with room ${room} for ${full.length} bytes`);
        }
        for (let i = 0; i < 8; i++) equal(backing[i], 0xaa, 'guard before');
        for (let i = 8 + room; i < 8 + room + 32; i++) equal(backing[i], 0xaa, 'guard after');
      }),
      { numRuns: runs(10000, 300) },
    );
  });
});

// --- the decoder ---------------------------------------------------------------------------------

describe('cbor: UTF-8 in the decoder', function () {
  this.timeout(120_000);
  it('accepts the edges of each sequence length', () => {
    const good: [string, string][] = [
      ['00', '\u0000'], ['7f', '\u007f'], ['c280', '\u0080'], ['dfbf', '\u07ff'], ['e0a080', '\u0800'],
      ['ed9fbf', '\ud7ff'], ['ee8080', '\ue000'], ['efbfbf', '\uffff'], ['f0908080', '\ud800\udc00'],
      ['f48fbfbf', '\udbff\udfff'], ['f09f9880', '\ud83d\ude00'],
    ];
    for (const [h, s] of good) {
      const b = bytes(h);
      equal(utf8Check(b, 0, b.length), -1, h);
      equal(decodeValue(bytes((0x60 + b.length).toString(16) + h)), s, h);
    }
  });
  it('rejects overlong forms, surrogates, values past U+10FFFF and broken sequences', () => {
    const bad: [string, number][] = [
      ['c080', 0], ['c1bf', 0], ['e08080', 0], ['e09fbf', 0], ['f0808080', 0], ['f08fbfbf', 0],
      ['eda080', 0], ['edbfbf', 0], ['eda0bdedb880', 0], ['f4908080', 0], ['f5808080', 0], ['ff', 0], ['fe', 0],
      ['80', 0], ['bf', 0], ['c241', 0], ['e282', 0], ['e28228', 0], ['f09f98', 0], ['f09f9828', 0],
      ['61e2', 1], ['6162c3', 2], ['61f09f9880c3', 5],
    ];
    for (const [h, at] of bad) {
      const b = bytes(h);
      equal(utf8Check(b, 0, b.length), at, h);
      rejects((0x60 + b.length).toString(16) + h, CborErrorCode.MALFORMED, 1 + at);
    }
  });
  it('checks no further than the end it is given', () => {
    const b = bytes('61 e2 82 ac');
    equal(utf8Check(b, 0, 2), 1);
    equal(utf8Check(b, 1, 4), -1);
  });
  it('decodes strings longer than one chunk of code points', () => {
    const s = '\u00e9a\ud83d\ude00'.repeat(UTF8_DECODE_CHUNK);
    const b = new Uint8Array(utf8ByteLength(s));
    utf8Write(s, b, 0);
    equal(utf8Decode(b, 0, b.length, new Uint32Array(UTF8_DECODE_CHUNK)), s);
    equal(utf8Decode(b, 0, b.length, new Uint32Array(1)), s);
    deepEqual(decodeValue(encode(s)), s);
  });
  it('round-trips any well-formed string (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (s) => {
        const b = new Uint8Array(utf8ByteLength(s));
        equal(utf8Write(s, b, 0), b.length);
        equal(utf8Check(b, 0, b.length), -1);
        equal(utf8Decode(b, 0, b.length, new Uint32Array(UTF8_DECODE_CHUNK)), s);
      }),
      { numRuns: runs(10000, 300) },
    );
  });
});

describe('cbor: the reader', () => {
  it('reads a frame field by field with the typed readers', () => {
    const w = new CborWriter(new Uint8Array(128));
    w.map(7);
    w.uint(1);
    w.int(-7);
    w.uint(2);
    w.text('hub');
    w.uint(3);
    w.bytes(new Uint8Array([9, 8]));
    w.uint(4);
    w.array(2);
    w.bool(true);
    w.null();
    w.uint(5);
    w.number(2.5);
    w.uint(6);
    w.float(1);
    w.uint(24);
    w.bool(false);
    const buf = w.subarray();
    const r = new CborReader(buf);
    equal(r.peekMajor(), MajorType.MAP);
    equal(r.map(), 7);
    equal(r.uint(), 1);
    equal(r.int(), -7);
    equal(r.uint(), 2);
    equal(r.peekMajor(), MajorType.TEXT);
    equal(r.text(), 'hub');
    equal(r.uint(), 3);
    const b = r.bytes();
    deepEqual(b, new Uint8Array([9, 8]));
    buf[r.pos - 1] = 0;
    equal(b[1], 8, 'bytes() is a copy');
    equal(r.uint(), 4);
    equal(r.array(), 2);
    equal(r.bool(), true);
    ok(r.peekIsNull());
    r.null();
    equal(r.uint(), 5);
    equal(r.number(), 2.5);
    equal(r.uint(), 6);
    equal(r.number(), 1);
    equal(r.uint(), 24);
    ok(!r.atEnd());
    equal(r.bool(), false);
    ok(r.atEnd());
    equal(cborError(() => r.peekMajor()).code, CborErrorCode.TRUNCATED);
    equal(cborError(() => r.peekIsNull()).code, CborErrorCode.TRUNCATED);
  });
  it('a typed reader meeting another type throws MALFORMED and stays put', () => {
    const r = new CborReader(bytes('20 61 61 f5 f6 01 40 60 a0 80 f9 3c 00'));
    for (const f of [() => r.uint(), () => r.text(), () => r.bool(), () => r.map()]) {
      equal(cborError(f).code, CborErrorCode.MALFORMED);
      equal(r.pos, 0);
    }
    equal(r.int(), -1);
    for (const f of [() => r.int(), () => r.number(), () => r.bytes(), () => r.array(), () => r.null()]) {
      equal(cborError(f).code, CborErrorCode.MALFORMED);
      equal(r.pos, 1);
    }
    equal(r.text(), 'a');
    equal(cborError(() => r.null()).code, CborErrorCode.MALFORMED);
    equal(r.bool(), true);
    ok(r.peekIsNull());
    equal(cborError(() => r.bool()).code, CborErrorCode.MALFORMED);
    r.null();
    equal(cborError(() => r.bytes()).code, CborErrorCode.MALFORMED);
    equal(r.uint(), 1);
    equal(cborError(() => r.text()).code, CborErrorCode.MALFORMED);
    equal(r.bytes().length, 0);
    equal(r.text(), '');
    equal(cborError(() => r.array()).code, CborErrorCode.MALFORMED);
    equal(r.map(), 0);
    equal(r.array(), 0);
    equal(cborError(() => r.int()).code, CborErrorCode.MALFORMED);
    equal(cborError(() => r.uint()).code, CborErrorCode.MALFORMED);
    equal(r.number(), 1);
    ok(r.atEnd());
  });
  it('the typed readers apply the limits and the canonical rules too', () => {
    const tight: CborLimits = { maxDepth: 1, maxItems: 1, maxStringBytes: 1 };
    equal(cborError(() => new CborReader(bytes('62 61 61'), 0, 3, tight).text()).code, CborErrorCode.TOO_LARGE);
    equal(cborError(() => new CborReader(bytes('42 00 00'), 0, 3, tight).bytes()).code, CborErrorCode.TOO_LARGE);
    equal(cborError(() => new CborReader(bytes('82 00 00'), 0, 3, tight).array()).code, CborErrorCode.TOO_LARGE);
    equal(cborError(() => new CborReader(bytes('a2 00 00 01 00'), 0, 5, tight).map()).code, CborErrorCode.TOO_LARGE);
    equal(cborError(() => new CborReader(bytes('18 05')).uint()).code, CborErrorCode.NON_CANONICAL);
    equal(cborError(() => new CborReader(bytes('1b 00 20 00 00 00 00 00 00')).uint()).code, CborErrorCode.UNSUPPORTED);
    equal(cborError(() => new CborReader(bytes('9f ff')).array()).code, CborErrorCode.UNSUPPORTED);
    equal(cborError(() => new CborReader(bytes('62 ff ff')).text()).code, CborErrorCode.MALFORMED);
    equal(cborError(() => new CborReader(bytes('fb 00 00')).number()).code, CborErrorCode.TRUNCATED);
  });
  it('never reads past the end it is given', () => {
    const b = bytes('19 01 00 63 61 62 63 82 01 02');
    equal(cborError(() => new CborReader(b, 0, 2).uint()).code, CborErrorCode.TRUNCATED);
    equal(new CborReader(b, 0, 3).uint(), 256);
    equal(cborError(() => new CborReader(b, 3, 6).text()).code, CborErrorCode.TRUNCATED);
    equal(cborError(() => new CborReader(b, 7, 9).value()).code, CborErrorCode.TRUNCATED);
    equal(new CborReader(b, 7, 99).end, b.length, 'end is clamped to the buffer');
    const r = new CborReader(b, 3, 7);
    equal(r.text(), 'abc');
    ok(r.atEnd());
  });
  it('reset() reuses a reader on another buffer and range', () => {
    const r = new CborReader(bytes('01'));
    equal(r.uint(), 1);
    r.reset(bytes('ff ff 82 01 02'), 2, 5);
    equal(r.end, 5);
    deepEqual(r.value(), [1, 2]);
    ok(r.atEnd());
  });
  it('skip() passes over exactly one item and checks what value() checks', () => {
    const b = bytes('a2 01 82 61 61 f9 3c 00 02 40 17');
    const r = new CborReader(b);
    r.skip();
    equal(r.pos, b.length - 1);
    equal(r.uint(), 23);
    equal(cborError(() => new CborReader(bytes('82 62 c3 28')).skip()).code, CborErrorCode.MALFORMED);
    equal(cborError(() => new CborReader(bytes('a2 02 00 01 00')).skip()).code, CborErrorCode.NON_CANONICAL);
    equal(cborError(() => new CborReader(bytes('81'.repeat(9) + '00')).skip()).code, CborErrorCode.TOO_DEEP);
  });
  it('decoded maps iterate in ascending key order', () => {
    const m = decodeValue(bytes('a3 22 00 05 00 18 64 00')) as CborMap;
    deepEqual([...m.keys()], [-3, 5, 100]);
  });
});

// --- properties ----------------------------------------------------------------------------------

describe('cbor: properties', function () {
  this.timeout(120_000);
  it('round-trip: decode(encode(v)) equals v, and re-encoding gives the same bytes', () => {
    fc.assert(
      fc.property(anyValue, (v) => {
        const b = encode(v);
        const back = decodeValue(b);
        deepEqual(back, v);
        equal(hex(encode(back)), hex(b));
      }),
      { numRuns: runs(10000, 300) },
    );
  });
  it('random bytes: a value or a CborError, and skip() agrees with value()', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 48 }), (b) => {
        const got = decodeOrCborError(b);
        const r = new CborReader(b);
        let skipped: CborError | undefined;
        try {
          r.skip();
          if (r.pos !== b.length) skipped = new CborError(CborErrorCode.MALFORMED, r.pos);
        } catch (e) {
          if (!isCborError(e)) throw e;
          skipped = e;
        }
        equal(skipped?.code, got.error?.code, hex(b));
        equal(skipped?.offset, got.error?.offset, hex(b));
        if (got.error === undefined) deepEqual(decodeValue(encode(got.value!)), got.value, hex(b));
      }),
      { numRuns: runs(10000, 300) },
    );
  });
  it('every strict prefix of a valid encoding is TRUNCATED', () => {
    fc.assert(
      fc.property(anyValue, (v) => {
        const b = encode(v);
        // Every cut of short encodings; 64 spread cuts of long ones (each decode is O(length)).
        const step = Math.ceil(b.length / 64);
        for (let n = b.length - 1; n >= 0; n -= step) {
          const e = cborError(() => decodeValue(b.subarray(0, n)));
          if (e.code !== CborErrorCode.TRUNCATED) fail(`${hex(b)} cut at ${n}: ${e.message}`);
        }
      }),
      { numRuns: runs(2000, 100) },
    );
  });
  it('mutated encodings: a value or a CborError with a listed code', () => {
    fc.assert(
      fc.property(anyValue, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), (v, edits) => {
        const b = encode(v);
        if (b.length === 0) return;
        for (const [at, byte] of edits) b[at % b.length] = byte;
        const got = decodeOrCborError(b);
        if (got.error === undefined) deepEqual(decodeValue(encode(got.value!)), got.value, hex(b));
      }),
      { numRuns: runs(10000, 300) },
    );
  });
  it('random bytes under tight limits: only CborErrors', () => {
    const tight: CborLimits = { maxDepth: 2, maxItems: 3, maxStringBytes: 4 };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 24 }), (b) => {
        decodeOrCborError(b, tight);
      }),
      { numRuns: runs(10000, 300) },
    );
  });
});

// --- against cbor-x, on both engines --------------------------------------------------------------

// The full differential suite runs on Node (test/host/cbor-diff.test.ts); this small sample shows
// the same agreement inside XS, where cbor-x runs as plain JS.
describe('cbor: a differential sample against cbor-x', function () {
  this.timeout(120_000);
  const theirs = new Encoder({ mapsAsObjects: false, useRecords: false, tagUint8Array: false, variableMapSize: true });
  // int64AsNumber (missing from cbor-x's typings): 8-byte integers as numbers, not BigInt.
  const readerOptions = { mapsAsObjects: false, useRecords: false, int64AsNumber: true };
  const reader = new Decoder(readerOptions);
  const plain = (v: unknown): unknown => {
    if (v instanceof Uint8Array) return new Uint8Array(v);
    if (Array.isArray(v)) return v.map(plain);
    if (v instanceof Map) {
      const m = new Map<unknown, unknown>();
      v.forEach((x, k) => m.set(k, plain(x)));
      return m;
    }
    return v;
  };
  it('cbor-x reads what we write', () => {
    fc.assert(
      fc.property(anyValue, (v) => {
        deepEqual(plain(reader.decode(encode(v))), v);
      }),
      { numRuns: runs(1000, 200) },
    );
  });
  it('we read what cbor-x writes', () => {
    const smallKey = fc.integer({ min: -0x100000000, max: 0xffffffff });
    const { value } = fc.letrec<{ value: CborValue }>((tie) => ({
      value: fc.oneof(
        { maxDepth: 5, depthIdentifier: 'cborx' },
        fc.oneof(fc.maxSafeInteger(), fc.double(), fc.string({ unit: 'binary', maxLength: 20 }), fc.uint8Array({ maxLength: 20 }), fc.boolean(), fc.constant(null)),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.uniqueArray(fc.tuple(smallKey, tie('value')), { maxLength: 5, selector: (e) => e[0] }).map(
          (entries): CborValue => new Map(entries.sort((a, b) => a[0] - b[0])),
        ),
      ),
    }));
    fc.assert(
      fc.property(value, (v) => {
        const expected = decodeValue(encode(v));
        deepEqual(decodeValue(new Uint8Array(theirs.encode(v))), normalizeZero(expected));
      }),
      { numRuns: runs(1000, 200) },
    );
  });
});

/** cbor-x writes −0 as the integer 0. */
function normalizeZero(v: CborValue): CborValue {
  if (typeof v === 'number') return v === 0 ? 0 : v;
  if (Array.isArray(v)) return v.map(normalizeZero);
  if (v instanceof Map) {
    const m: CborMap = new Map();
    v.forEach((x, k) => m.set(k, normalizeZero(x)));
    return m;
  }
  return v;
}
