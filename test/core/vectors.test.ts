// The conformance vectors (test/vectors/*.json) are the wire contract: hub and client must
// both decode each stored hex to its frame and encode each frame to exactly the stored hex.
import { CborWriter } from '../../hub/cbor.js';
import { decodeEstop, encodeEstop, EstopFrameError, ESTOP_FRAME_BYTES, isEstopFrame } from '../../hub/estop-frame.js';
import { decodeFrame, encodeFrame, FrameError, FrameType, peekFrameType, type Frame } from '../../hub/frames.js';
import { nackCode, nackName } from '../../hub/nack.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { bytesToHex, fromJson, hexToBytes } from '../lib/vector-json.js';
import framesJson from '../vectors/frames.json' with { type: 'json' };
import lenientJson from '../vectors/lenient.json' with { type: 'json' };
import invalidJson from '../vectors/invalid.json' with { type: 'json' };
import estopJson from '../vectors/estop.json' with { type: 'json' };

interface ValidVector { name: string; frame: unknown; hex: string }
interface LenientVector { name: string; frame: unknown; hex: string; canonical: string }
interface InvalidVector { name: string; hex: string; nack: string }
interface EstopVector { name: string; frame: { kind: number; source: number; flags: number; origin: number; seq: number }; hex: string }
interface EstopInvalid { name: string; hex: string; error: string }

const valid = framesJson as ValidVector[];
const lenient = lenientJson as LenientVector[];
const invalid = invalidJson as InvalidVector[];
const estop = estopJson as { valid: EstopVector[]; invalid: EstopInvalid[] };

const w = new CborWriter(new Uint8Array(8192));
function encodeHex(f: Frame): string {
  w.reset();
  encodeFrame(f, w);
  return bytesToHex(w.subarray());
}

function decodeHex(hex: string): Frame {
  const b = hexToBytes(hex);
  return decodeFrame(b, 0, b.length);
}

describe('conformance vectors: frames.json', () => {
  it('covers every frame type', () => {
    const seen = new Set<number>();
    for (const v of valid) seen.add((v.frame as { type: number }).type);
    for (const t of Object.values(FrameType)) ok(seen.has(t), `no vector for frame type ${t}`);
  });

  for (const v of valid) {
    it(`${v.name}: decodes to its frame and encodes to its bytes`, () => {
      const frame = fromJson(v.frame) as Frame;
      deepEqual(decodeHex(v.hex), frame);
      equal(encodeHex(frame), v.hex);
      const b = hexToBytes(v.hex);
      equal(peekFrameType(b, 0, b.length), frame.type);
    });
  }

  it('decodes a vector found inside a larger buffer', () => {
    const v = valid[1] as ValidVector;
    const inner = hexToBytes(v.hex);
    const buf = new Uint8Array(inner.length + 7);
    buf.fill(0xff);
    buf.set(inner, 3);
    deepEqual(decodeFrame(buf, 3, 3 + inner.length), fromJson(v.frame));
  });
});

describe('conformance vectors: lenient.json', () => {
  for (const v of lenient) {
    it(`${v.name}: decodes to its frame; re-encodes canonically`, () => {
      const frame = fromJson(v.frame) as Frame;
      deepEqual(decodeHex(v.hex), frame);
      equal(encodeHex(frame), v.canonical);
      ok(v.canonical !== v.hex, 'a lenient vector must differ from its canonical form');
    });
  }
});

describe('conformance vectors: invalid.json', () => {
  it('uses only listed NACK codes', () => {
    for (const v of invalid) ok(nackCode(v.nack) !== undefined, `${v.name}: ${v.nack}`);
  });
  for (const v of invalid) {
    it(`${v.name}: NACK ${v.nack}`, () => {
      const e = throws(() => decodeHex(v.hex), (x) => x instanceof FrameError) as FrameError;
      equal(nackName(e.nack), v.nack);
    });
  }
});

describe('conformance vectors: estop.json', () => {
  for (const v of estop.valid) {
    it(`${v.name}: decodes and encodes exactly`, () => {
      const b = hexToBytes(v.hex);
      equal(b.length, ESTOP_FRAME_BYTES);
      ok(isEstopFrame(b, 0));
      equal(peekFrameType(b, 0, b.length), -1);
      deepEqual(decodeEstop(b, 0, b.length), v.frame);
      const out = new Uint8Array(ESTOP_FRAME_BYTES);
      const f = v.frame;
      equal(encodeEstop(out, 0, f.kind, f.source, f.flags, f.origin, f.seq), ESTOP_FRAME_BYTES);
      equal(bytesToHex(out), v.hex);
      // An ESTOP frame is never taken for a CBOR frame.
      throws(() => decodeFrame(b, 0, b.length), (x) => x instanceof FrameError);
    });
  }
  for (const v of estop.invalid) {
    it(`${v.name}: ${v.error}`, () => {
      const b = hexToBytes(v.hex);
      const e = throws(() => decodeEstop(b, 0, b.length), (x) => x instanceof EstopFrameError) as EstopFrameError;
      equal(e.codeName, v.error);
    });
  }
});
