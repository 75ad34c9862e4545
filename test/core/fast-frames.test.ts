// hub/fast-frames.ts held against the general codec: the DATA and PONG writers byte for byte
// against encodeData and encodeFrame, and the reader of the frequent client frames verdict for
// verdict against decodeFrame (what it takes, decodeFrame decodes to the same frame; what it
// does not, it leaves to decodeFrame).
import fc from 'fast-check';
import { CborWriter } from '../../hub/cbor.js';
import { dataFrameBytes, dataPrefix, Fast, FastReader, FloatProbe, writeData, writePong, writeSample } from '../../hub/fast-frames.js';
import { decodeFrame, encodeData, encodeFrame, FrameType, type Frame } from '../../hub/frames.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { bytesToHex } from '../lib/vector-json.js';
import { cborNumber, frameVariants } from '../lib/frame-variants.js';

const w = new CborWriter(new Uint8Array(65536));

function enc(f: Frame): Uint8Array {
  w.reset();
  encodeFrame(f, w);
  return w.subarray().slice();
}

/** What decodeFrame makes of buf[start, end), or null when it refuses it. */
function decoded(buf: Uint8Array, start: number, end: number): Frame | null {
  try {
    return decodeFrame(buf, start, end);
  } catch {
    return null;
  }
}

const number = cborNumber;

describe('fast-frames: DATA and PONG, written as the general codec writes them', () => {
  const fp = new FloatProbe();
  const out = new Uint8Array(dataFrameBytes(32));
  const dv = new DataView(out.buffer);
  const values = new Float64Array(32);

  it('writeData writes exactly what encodeData writes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 255 }),
        fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 0xffffffff })),
        fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.maxSafeNat()),
        fc.array(number, { maxLength: 32 }),
        fc.boolean(),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 0xffffffff })),
        (channelId, seq, t, vs, gap, dropped) => {
          values.set(vs);
          w.reset();
          encodeData(w, channelId, seq, t, values, vs.length, gap, dropped);
          const n = writeData(out, dv, fp, dataPrefix(channelId), seq, t, values, vs.length, gap, dropped);
          equal(bytesToHex(out.subarray(0, n)), bytesToHex(w.subarray()));
        },
      ),
      { numRuns: runs(5000, 200) },
    );
  });

  it('writes an integer that is a float32 with low mantissa bits set as an integer', () => {
    for (const x of [2049, 1048577, 8388609, -1048577, 16777215]) {
      values[0] = x;
      w.reset();
      encodeData(w, 10, 1, 2, values, 1, false, 0);
      const n = writeData(out, dv, fp, dataPrefix(10), 1, 2, values, 1, false, 0);
      equal(bytesToHex(out.subarray(0, n)), bytesToHex(w.subarray()), String(x));
    }
  });

  it('writeSample is writeData without gap and dropped', () => {
    const other = new Uint8Array(out.length);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 255 }), fc.integer({ min: 0, max: 0xffffffff }), fc.maxSafeNat(), fc.array(number, { maxLength: 32 }), (channelId, seq, t, vs) => {
        values.set(vs);
        const n = writeSample(out, dv, fp, dataPrefix(channelId), seq, t, values, vs.length);
        const m = writeData(other, new DataView(other.buffer), fp, dataPrefix(channelId), seq, t, values, vs.length, false, 0);
        equal(bytesToHex(out.subarray(0, n)), bytesToHex(other.subarray(0, m)));
      }),
      { numRuns: runs(1000, 50) },
    );
  });

  it('writePong writes exactly what encodeFrame writes', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.integer({ min: 0, max: 0xffffffff }), fc.maxSafeNat()), fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.maxSafeNat()), fc.integer({ min: -1, max: 3 }), (t0, t1, level) => {
        const n = writePong(out, dv, t0, t1, level);
        equal(bytesToHex(out.subarray(0, n)), bytesToHex(enc(level < 0 ? { type: FrameType.PONG, t0, t1 } : { type: FrameType.PONG, t0, t1, level })));
      }),
      { numRuns: runs(2000, 100) },
    );
  });
});

describe('fast-frames: the reader of ACK, PING and BUNDLE against decodeFrame', () => {
  const reader = new FastReader(7);
  const sample = (width: number) => fc.tuple(fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.maxSafeNat()), fc.array(number, { minLength: width - 1, maxLength: width - 1 })).map(([t, v]) => [t, ...v]);
  const frame: fc.Arbitrary<Frame> = fc.oneof(
    fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.integer({ min: 0, max: 2 ** 33 })).map((acked): Frame => ({ type: FrameType.ACK, acked })),
    fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.maxSafeNat()).map((t0): Frame => ({ type: FrameType.PING, t0 })),
    fc
      .tuple(fc.integer({ min: 0, max: 260 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 34 }))
      .chain(([channelId, width, n]) => fc.array(sample(width), { minLength: 0, maxLength: n }).map((samples): Frame => ({ type: FrameType.BUNDLE, channelId, samples }))),
  );
  // The frame as sent, one byte of it changed, cut short, or one byte longer; inside a larger buffer.
  const bytes = frameVariants(frame, enc);

  it('what it takes, decodeFrame decodes to the same frame', () => {
    let taken = 0;
    fc.assert(
      fc.property(bytes, ({ buf, start, end }) => {
        const type = reader.read(buf, start, end);
        if (type === Fast.NONE) return;
        taken++;
        const f = decoded(buf, start, end);
        ok(f !== null && f.type === type, 'decodeFrame takes it too');
        if (f.type === FrameType.ACK) ok('acked' in f && reader.value === f.acked);
        else if (f.type === FrameType.PING) equal(reader.value, f.t0);
        else if (f.type === FrameType.BUNDLE) {
          equal(reader.channelId, f.channelId);
          equal(reader.block.count, f.samples.length);
          equal(reader.block.width, (f.samples[0] as number[]).length);
          const flat = f.samples.flat();
          if (flat.length <= reader.block.numbers.length) {
            const kept = Array.from(reader.block.numbers.subarray(0, flat.length));
            ok(kept.every((x, i) => Object.is(x, flat[i])), 'the same numbers');
            equal(reader.finite, flat.every((x) => Number.isFinite(x)));
          }
        }
      }),
      { numRuns: runs(20000, 300) },
    );
    ok(taken > 0);
  });

  it('takes every frame in the form encodeFrame writes, with its values', () => {
    fc.assert(
      fc.property(frame, (f) => {
        const b = enc(f);
        const type = reader.read(b, 0, b.length);
        if (f.type === FrameType.ACK && 'acked' in f) {
          equal(type, f.acked < 2 ** 32 ? Fast.ACK : Fast.NONE);
          if (type === Fast.ACK) equal(reader.value, f.acked);
        } else if (f.type === FrameType.PING) {
          equal(type, Fast.PING);
          equal(reader.value, f.t0);
        } else if (f.type === FrameType.BUNDLE) {
          const even = f.samples.length > 0 && f.samples.every((s) => s.length === (f.samples[0] as number[]).length);
          const plain = f.channelId >= 1 && f.channelId <= 255 && f.samples.length <= 32 && f.samples.every((s) => Number.isInteger(s[0]) && (s[0] as number) >= 0);
          equal(type, even && plain ? Fast.BUNDLE : Fast.NONE);
          if (type === Fast.BUNDLE && f.samples.length * (f.samples[0] as number[]).length <= reader.block.numbers.length) {
            deepEqual(
              Array.from(reader.block.numbers.subarray(0, reader.block.count * reader.block.width)).map((x) => (Object.is(x, -0) ? '-0' : x)),
              f.samples.flat().map((x) => (Object.is(x, -0) ? '-0' : x)),
            );
          }
        }
      }),
      { numRuns: runs(5000, 200) },
    );
  });
});
