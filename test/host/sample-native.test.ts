// The DATA writer in C (device/native/samplewriter.h, which the device hands the hub through
// device/sample-native.ts) against the hub's own writer in script (hub/fast-frames.ts
// ScriptSampleWriter, writeSampleAfter): the same C built for this host
// (bench/native/native-host.c) writes byte for byte what the script writes, for the example of
// docs/protocol.md §5.7, for random and awkward values (integers at every head size, -0, NaN, the
// infinities, binary16 normals and subnormals, float32 and float64 values) and random seq and
// t; a copy of the C broken in its binary16 or its float32 test writes something else. Every
// check also runs the C built as a 32-bit program (-m32), as the ESP32 runs it, and holds its
// answers to the host build's.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dataFrameBytes, dataPrefix, ScriptSampleWriter } from '../../hub/fast-frames.js';
import { encodeFrame, FrameType } from '../../hub/frames.js';
import { CborWriter } from '../../hub/cbor.js';
import { buildBroken, useNativeHost } from '../lib/native-host.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');


const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function request(seq: number, t: number, values: readonly number[]): string {
  return `data ${seq} ${t} ${values.length === 0 ? '-' : hex(new Uint8Array(Float64Array.from(values).buffer))}`;
}

/** What the hub's script writer writes for seq, t and the values (after the prefix). */
function script(seq: number, t: number, values: readonly number[]): string {
  const b = new Uint8Array(dataFrameBytes(values.length));
  const v = Float64Array.from(values);
  const end = new ScriptSampleWriter().writeSample(b, 0, seq, t, v.buffer, 0, values.length);
  return hex(b.subarray(0, end));
}

const awkward = fc.constantFrom(
  0, -0, 1, -1, 23, 24, -24, -25, 255, 256, 65535, 65536, -65537, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 2 ** 53 + 2, 2 ** 60, -(2 ** 64),
  NaN, Infinity, -Infinity, 0.5, -1.5, 65504, 65505, 65520, 2 ** -14, 2 ** -24, 2 ** -25, 3 * 2 ** -24, 2 ** -126, 2 ** -149, 1e-300,
  0.1, Math.fround(0.1), 1e300, 3.4028234663852886e38, 3.4028235677973366e38, Number.MIN_VALUE, Number.MAX_VALUE,
);
const value = fc.oneof(
  awkward,
  fc.double(),
  fc.float().map((x) => x),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  fc.integer({ min: -(2 ** 53 - 1), max: 2 ** 53 - 1 }),
  fc.integer({ min: -2048, max: 2048 }).map((m) => m / 1024),
);
const seq = fc.oneof(fc.constantFrom(0, 23, 24, 255, 256, 65535, 65536, 2 ** 32 - 1), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const time = fc.oneof(fc.constantFrom(0, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1), fc.integer({ min: 0, max: 2 ** 53 - 1 }));

describe('device/native/samplewriter: the DATA writer in C against the hub’s in script', function () {
  this.timeout(120000);
  const native = useNativeHost(repo, 'samplewriter');

  it('writes the example of docs/protocol.md §5.7 after its prefix, as encodeFrame does', () => {
    const [c] = native.check([request(42, 123456, [1.5, -2, 0.1])]);
    assert.equal(hex(dataPrefix(10)) + c, 'a50007030a04182a051a0001e2400683f93e0021fb3fb999999999999a');
    const w = new CborWriter(new Uint8Array(64));
    encodeFrame({ type: FrameType.DATA, channelId: 10, seq: 42, t: 123456, values: [1.5, -2, 0.1] }, w);
    assert.equal(hex(dataPrefix(10)) + c, hex(w.buf.subarray(0, w.pos)));
  });

  it('writes byte for byte what the script writes, for any seq, t and values (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(seq, time, fc.array(value, { maxLength: 32 })), { minLength: 1, maxLength: 30 }), (cases) => {
        const answers = native.check(
          cases.map(([s, t, v]) => request(s, t, v)),
        );
        cases.forEach(([s, t, v], i) => assert.equal(answers[i], script(s, t, v), `seq ${s} t ${t} values ${JSON.stringify(v.map(String))}`));
      }),
      { numRuns: 80 },
    );
  });

  it('is checked as a 32-bit program too: a head written through a `long` passes on the host and fails there', () => {
    const from = 'static inline uint32_t sampleHead(uint8_t *b, uint8_t mt, uint64_t n)';
    const to = 'static inline uint32_t sampleHead(uint8_t *b, uint8_t mt, unsigned long n)';
    const cases: [number, number, number[]][] = [[7, 2 ** 32 + 5, [1]], [7, 2 ** 40, [-2]], [2 ** 32 - 1, 9, [0.5]]];
    const lines = cases.map(([s, t, v]) => request(s, t, v));
    const expected = cases.map(([s, t, v]) => script(s, t, v));
    const dir = join(native.scratch, 'long-head');
    const host = buildBroken(native.host, repo, join(dir, '64'), 'samplewriter.h', from, to);
    try {
      assert.deepEqual(native.host.nativeCheck(host, lines), expected, 'on the 64-bit host a long holds the time');
    } finally {
      rmSync(dirname(host), { recursive: true, force: true });
    }
    // As a 32-bit program the compiler refuses it (-Werror: a test always true for a 32-bit
    // long), or, were it built, it would write a truncated time.
    let bits32 = '';
    try {
      bits32 = buildBroken(native.host, repo, join(dir, '32'), 'samplewriter.h', from, to, 32);
    } catch (e) {
      assert.match((e as Error).message, /-m32[\s\S]*(type-limits|always true)/, 'the 32-bit build fails in the compiler, on the long');
      return;
    }
    try {
      assert.notDeepEqual(native.host.nativeCheck(bits32, lines), expected, 'the 32-bit build writes a truncated time');
    } finally {
      rmSync(dirname(bits32), { recursive: true, force: true });
    }
  });

  for (const [what, from, to] of [
    ['a binary16 subnormal scaled by one bit too few', 'uint32_t shift = (uint32_t)(-(e + 1));', 'uint32_t shift = (uint32_t)(-(e + 2));'],
    ['a binary16 exponent off by one', '((uint32_t)(e + 15) << 10)', '((uint32_t)(e + 14) << 10)'],
    ['-0 written as the integer 0', '&& !(x == 0 && signbit(x)))', ')'],
  ] as const) {
    it(`fails the same check with ${what}`, () => {
      const bad = buildBroken(native.host, repo, join(native.scratch, what.replace(/\W+/g, '-')), 'samplewriter.h', from, to);
      try {
        const cases: [number, number, number[]][] = [
          [1, 2, [3 * 2 ** -24]],
          [1, 2, [0.5, -1.5]],
          [1, 2, [-0]],
        ];
        const answers = native.host.nativeCheck(
          bad,
          cases.map(([s, t, v]) => request(s, t, v)),
        );
        assert.ok(
          cases.some(([s, t, v], i) => answers[i] !== script(s, t, v)),
          'the broken C writes what the script writes',
        );
      } finally {
        rmSync(dirname(bad), { recursive: true, force: true });
      }
    });
  }
});
