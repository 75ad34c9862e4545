// Differential tests of hub/cbor.ts and hub/cbor-reader.ts against cbor-x, the independent
// reference (docs/simulator.md), and of hub/utf8.ts against Node's TextEncoder/TextDecoder.
//
// Where the two CBOR decoders legitimately differ: cbor-x decodes more than our subset and checks
// less, so on some inputs it returns a value where we throw. Those are
//   NON_CANONICAL  arguments not in shortest form; map keys not strictly ascending;
//   MALFORMED      text that is not well-formed UTF-8 (cbor-x substitutes or passes it through);
//                  duplicate map keys (cbor-x keeps the last); a two-byte simple value below 32;
//   UNSUPPORTED    tags (cbor-x returns Tag objects or extensions), undefined, other simple values,
//                  indefinite lengths, integers beyond ±(2^53−1) (cbor-x rounds them), maps with
//                  keys other than integers;
//   TOO_DEEP / TOO_LARGE  our limits, far below cbor-x's.
// The converse never happens: whatever we accept, cbor-x accepts with the same value. cbor-x also
// writes −0 as the integer 0, so the values we expect from its encoder have −0 replaced by 0.
import assert from 'node:assert/strict';
import { Decoder, Encoder } from 'cbor-x';
import fc from 'fast-check';
import { CborError, CborErrorCode, DEFAULT_CBOR_LIMITS, encodeValue, type CborValue } from '../../hub/cbor.js';
import { decodeValue } from '../../hub/cbor-reader.js';
import { UTF8_DECODE_CHUNK, utf8ByteLength, utf8Check, utf8Decode, utf8Write } from '../../hub/utf8.js';

const RUNS = 10_000;
const CODES: readonly string[] = Object.values(CborErrorCode);

// Options that keep cbor-x inside our subset: no record extension, no tag on byte strings, Maps
// written as CBOR maps and read back as Maps, 8-byte integers read as numbers.
// (int64AsNumber is missing from cbor-x's typings, hence no object literal at the call.)
const encoderOptions = { mapsAsObjects: false, useRecords: false, tagUint8Array: false, variableMapSize: true };
const decoderOptions = { mapsAsObjects: false, useRecords: false, int64AsNumber: true };
const theirEncoder = new Encoder(encoderOptions);
const theirDecoder = new Decoder(decoderOptions);

const scratch = new Uint8Array(1 << 18);

function ours(v: CborValue): Uint8Array {
  return scratch.slice(0, encodeValue(v, scratch));
}

function theirs(v: CborValue): Uint8Array {
  return new Uint8Array(theirEncoder.encode(v));
}

/** cbor-x's result as our value types: Buffers as plain Uint8Arrays, maps in key order. */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) {
    const entries = [...(v as Map<number, unknown>).entries()].sort((a, b) => a[0] - b[0]);
    return new Map(entries.map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

function zeroNotNegative(v: CborValue): CborValue {
  if (typeof v === 'number') return v === 0 ? 0 : v;
  if (Array.isArray(v)) return v.map(zeroNotNegative);
  if (v instanceof Map) return new Map([...v.entries()].map(([k, x]) => [k, zeroNotNegative(x)]));
  return v;
}

/** Every map in `v` iterates (so was on the wire) in strictly ascending key order. */
function ascending(v: unknown): boolean {
  if (Array.isArray(v)) return v.every(ascending);
  if (v instanceof Map) {
    let prev = -Infinity;
    for (const [k, x] of v as Map<number, unknown>) {
      if (!(k > prev) || !ascending(x)) return false;
      prev = k;
    }
  }
  return true;
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

function ourDecode(b: Uint8Array): { value?: CborValue; error?: CborError } {
  try {
    return { value: decodeValue(b) };
  } catch (e) {
    if (!(e instanceof CborError) || !CODES.includes(e.code)) assert.fail(`${hex(b)}: threw ${String(e)}`);
    assert.ok(e.offset >= 0 && e.offset <= b.length, `${hex(b)}: offset ${e.offset}`);
    return { error: e };
  }
}

// --- generators -------------------------------------------------------------------------------

const f16 = fc.integer({ min: 0, max: 0xffff }).map((h) => decodeValue(new Uint8Array([0xf9, h >> 8, h & 0xff])) as number);

const anyScalar: fc.Arbitrary<CborValue> = fc.oneof(
  fc.integer({ min: -30, max: 30 }),
  fc.integer({ min: -70000, max: 70000 }),
  fc.integer({ min: -0x100000001, max: 0x100000001 }),
  fc.maxSafeInteger(),
  fc.double(),
  fc.float(),
  f16,
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.uint8Array({ maxLength: 300 }),
  fc.boolean(),
  fc.constant(null),
);

const anyKey = fc.oneof(fc.integer({ min: -30, max: 30 }), fc.integer({ min: -70000, max: 70000 }), fc.maxSafeInteger());

/** Anything in our subset within the default limits. */
const { value: anyValue } = fc.letrec<{ value: CborValue }>((tie) => ({
  value: fc.oneof(
    { maxDepth: DEFAULT_CBOR_LIMITS.maxDepth - 1, depthIdentifier: 'ours' },
    anyScalar,
    fc.array(tie('value'), { maxLength: 8 }),
    fc.array(fc.tuple(anyKey, tie('value')), { maxLength: 8 }).map((e): CborValue => new Map(e)),
  ),
}));

// cbor-x writes an integer outside ±2^32 as a float64, which is no map key of ours; it writes map
// entries in insertion order, so maps are built in key order.
const smallKey = fc.integer({ min: -0x100000000, max: 0xffffffff });

const { value: cborXValue } = fc.letrec<{ value: CborValue }>((tie) => ({
  value: fc.oneof(
    { maxDepth: DEFAULT_CBOR_LIMITS.maxDepth - 1, depthIdentifier: 'theirs' },
    anyScalar,
    fc.array(tie('value'), { maxLength: 8 }),
    fc.uniqueArray(fc.tuple(fc.oneof(smallKey, fc.integer({ min: -30, max: 30 })), tie('value')), { maxLength: 8, selector: (e) => e[0] })
      .map((e): CborValue => new Map(e.sort((a, b) => a[0] - b[0]))),
  ),
}));

type Edit = { kind: 'set' | 'flip' | 'insert' | 'delete' | 'truncate' | 'append'; at: number; byte: number };
const edit: fc.Arbitrary<Edit> = fc.record({
  kind: fc.constantFrom('set', 'flip', 'insert', 'delete', 'truncate', 'append'),
  at: fc.nat(),
  byte: fc.integer({ min: 0, max: 255 }),
});

function mutate(src: Uint8Array, edits: Edit[]): Uint8Array {
  const b = [...src];
  for (const { kind, at, byte } of edits) {
    const i = b.length === 0 ? 0 : at % b.length;
    if (kind === 'set' && b.length > 0) b[i] = byte;
    else if (kind === 'flip' && b.length > 0) b[i] = b[i]! ^ (1 << (byte & 7));
    else if (kind === 'insert') b.splice(i, 0, byte);
    else if (kind === 'delete') b.splice(i, 1);
    else if (kind === 'truncate') b.length = i;
    else if (kind === 'append') b.push(byte);
  }
  return new Uint8Array(b);
}

// --- CBOR ---------------------------------------------------------------------------------------

describe('cbor against cbor-x', function () {
  this.timeout(300_000);

  it('(a) what we encode, cbor-x decodes to the same value, maps in ascending key order', () => {
    fc.assert(
      fc.property(anyValue, (v) => {
        const b = ours(v);
        const back = theirDecoder.decode(b) as unknown;
        assert.deepStrictEqual(plain(back), plain(v));
        assert.ok(ascending(back), hex(b));
      }),
      { numRuns: RUNS },
    );
  });

  it('(b) what cbor-x encodes, we decode to the same value', () => {
    fc.assert(
      fc.property(cborXValue, (v) => {
        const b = theirs(v);
        const got = ourDecode(b);
        assert.equal(got.error, undefined, `${hex(b)}: ${got.error?.message}`);
        assert.deepStrictEqual(plain(got.value), plain(zeroNotNegative(v)));
      }),
      { numRuns: RUNS },
    );
  });

  it('(c) mutated and truncated encodings: we return what cbor-x returns, or a CborError', () => {
    const base = fc.oneof(anyValue.map(ours), cborXValue.map(theirs));
    let accepted = 0;
    let rejected = 0;
    const theyAcceptedWeRejected = new Map<string, number>();
    fc.assert(
      fc.property(base, fc.array(edit, { minLength: 1, maxLength: 3 }), (src, edits) => {
        const b = mutate(src, edits);
        const got = ourDecode(b);
        let them: { value?: unknown; threw?: unknown };
        try {
          them = { value: theirDecoder.decode(new Uint8Array(b)) as unknown };
        } catch (e) {
          them = { threw: e };
        }
        if (got.error === undefined) {
          accepted++;
          assert.ok(!('threw' in them), `${hex(b)}: we decoded it, cbor-x threw ${String(them.threw)}`);
          assert.deepStrictEqual(plain(them.value), plain(got.value), hex(b));
        } else {
          rejected++;
          if (!('threw' in them)) {
            const code = got.error.code;
            theyAcceptedWeRejected.set(code, (theyAcceptedWeRejected.get(code) ?? 0) + 1);
            // cbor-x read a whole item from these bytes: none of it was missing.
            assert.notEqual(code, CborErrorCode.TRUNCATED, `${hex(b)}: cbor-x decoded it, we said TRUNCATED`);
          }
        }
      }),
      { numRuns: RUNS },
    );
    // Not vacuous: both outcomes are common, and the documented differences do occur.
    assert.ok(accepted > RUNS / 20 && rejected > RUNS / 20, `accepted ${accepted}, rejected ${rejected}`);
    assert.ok((theyAcceptedWeRejected.get(CborErrorCode.NON_CANONICAL) ?? 0) > 0);
    assert.ok((theyAcceptedWeRejected.get(CborErrorCode.UNSUPPORTED) ?? 0) > 0);
  });

  it('(c) random bytes: never an exception other than CborError; agreement where we accept', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (b) => {
        const got = ourDecode(b);
        if (got.error !== undefined) return;
        assert.deepStrictEqual(plain(theirDecoder.decode(new Uint8Array(b))), plain(got.value), hex(b));
      }),
      { numRuns: RUNS },
    );
  });
});

// --- UTF-8 ---------------------------------------------------------------------------------------

describe('utf8 against TextEncoder and TextDecoder', function () {
  this.timeout(120_000);
  const te = new TextEncoder();
  const td = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const units = new Uint32Array(UTF8_DECODE_CHUNK);

  it('encodes any JS string as TextEncoder does, lone surrogates included', () => {
    const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
    const surrogateHeavy = fc.oneof(codeUnit, fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: surrogateHeavy, maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 60 })), (s) => {
        const want = te.encode(s);
        const got = new Uint8Array(utf8ByteLength(s));
        assert.equal(got.length, want.length);
        assert.equal(utf8Write(s, got, 0), want.length);
        assert.equal(hex(got), hex(want));
      }),
      { numRuns: RUNS },
    );
  });

  it('accepts exactly what a fatal TextDecoder accepts, and decodes it the same', () => {
    const byte = fc.oneof(
      fc.integer({ min: 0, max: 0x7f }),
      fc.integer({ min: 0x80, max: 0xbf }),
      fc.integer({ min: 0xc0, max: 0xff }),
      fc.constantFrom(0xe0, 0xed, 0xf0, 0xf4, 0x9f, 0xa0, 0x8f, 0x90),
    );
    let valid = 0;
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 24 }), (arr) => {
        const b = new Uint8Array(arr);
        let want: string | undefined;
        try {
          want = td.decode(b);
        } catch {
          want = undefined;
        }
        const bad = utf8Check(b, 0, b.length);
        assert.equal(bad === -1, want !== undefined, hex(b));
        if (want !== undefined) {
          valid++;
          assert.equal(utf8Decode(b, 0, b.length, units), want);
        } else {
          // The prefix before the reported offset is well-formed.
          assert.doesNotThrow(() => td.decode(b.subarray(0, bad)), hex(b));
        }
      }),
      { numRuns: RUNS },
    );
    assert.ok(valid > RUNS / 20, `only ${valid} valid samples`);
  });
});
