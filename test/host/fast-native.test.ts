// The frequent client frames read in C (device/native/fastreader.h, which the device hands the
// hub through device/fast-native.ts as HubPorts.frameReader) against the hub's own reader in
// script (hub/fast-reader.ts FastReader): the same C built for this host
// (bench/native/native-host.c) reads every frame as the script does, verdict for verdict and
// number for number: ACK, PING and BUNDLE frames as the codec writes them, then each with a byte
// changed, cut short or a byte longer, inside a larger buffer, and random bytes; for blocks of
// every width the hub keeps. A copy of the C broken in its float16 or in its test of a
// canonical head reads otherwise. Every check also runs the C built as a 32-bit program (-m32).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CborWriter } from '../../hub/cbor.js';
import { Fast, FastReader } from '../../hub/fast-reader.js';
import { encodeFrame, FrameType, type Frame } from '../../hub/frames.js';
import { buildBroken, useNativeHost } from '../lib/native-host.js';
import { cborNumber, frameVariants } from '../lib/frame-variants.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const hex = (b: Uint8Array): string => (b.length === 0 ? '-' : Buffer.from(b).toString('hex'));
const w = new CborWriter(new Uint8Array(65536));

function enc(f: Frame): Uint8Array {
  w.reset();
  encodeFrame(f, w);
  return w.subarray().slice();
}

/** A float64's bits in hex, as the host program prints them (NaN as one pattern). */
function bits(x: number): string {
  if (Number.isNaN(x)) return '7ff8000000000000';
  const b = new DataView(new ArrayBuffer(8));
  b.setFloat64(0, x);
  return Array.from(new Uint8Array(b.buffer), (v) => v.toString(16).padStart(2, '0')).join('');
}

/** What the script reader answers for buf[start, end), in the host program's form. */
function script(reader: FastReader, buf: Uint8Array, start: number, end: number): string {
  const type = reader.read(buf, start, end);
  if (type === Fast.ACK || type === Fast.PING) return `${type} ${reader.value}`;
  if (type !== Fast.BUNDLE) return String(type);
  const b = reader.block;
  const kept = b.count * b.width > b.numbers.length ? b.width : b.count * b.width;
  return `${type} ${reader.channelId} ${b.count} ${b.width} ${reader.finite ? 1 : 0} ${Array.from(b.numbers.subarray(0, kept), bits).join('')}`;
}

const number = cborNumber;
const sample = (width: number) =>
  fc.tuple(fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.maxSafeNat(), fc.constantFrom(-1, 0.5, -0, 2 ** 53)), fc.array(number, { minLength: width - 1, maxLength: width - 1 })).map(([t, v]) => [t, ...v]);
const frame: fc.Arbitrary<Frame> = fc.oneof(
  fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.integer({ min: 0, max: 2 ** 33 }), fc.maxSafeNat()).map((acked): Frame => ({ type: FrameType.ACK, acked })),
  fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.maxSafeNat()).map((t0): Frame => ({ type: FrameType.PING, t0 })),
  fc
    .tuple(fc.integer({ min: 0, max: 260 }), fc.integer({ min: 1, max: 35 }), fc.integer({ min: 1, max: 34 }))
    .chain(([channelId, width, n]) => fc.array(sample(width), { minLength: 0, maxLength: n }).map((samples): Frame => ({ type: FrameType.BUNDLE, channelId, samples }))),
);
// The frame as sent, one or two bytes of it changed, cut short, or a byte longer; inside a larger buffer; or random bytes.
const input = fc.oneof(
  frameVariants(frame, enc, 2),
  fc.uint8Array({ minLength: 0, maxLength: 64 }).map((buf) => ({ buf, start: 0, end: buf.length })),
  fc.tuple(fc.constantFrom(0xa2, 0xa3), fc.uint8Array({ minLength: 0, maxLength: 40 })).map(([head, rest]) => {
    const buf = Uint8Array.from([head, 0, head === 0xa3 ? 8 : 12, ...rest]);
    return { buf, start: 0, end: buf.length };
  }),
);

/**
 * Frames a codec does not write: numbers, counts and channels in heads longer than they need, at
 * each width; floats that are integers; the ACK's and PING's value at each head. The script
 * refuses each head that is not the shortest, and the C must too.
 */
function edges(): { buf: Uint8Array; start: number; end: number }[] {
  const out: { buf: Uint8Array; start: number; end: number }[] = [];
  const heads = (mt: number, n: number): number[][] => [
    [mt | 24, n & 0xff],
    [mt | 25, (n >> 8) & 0xff, n & 0xff],
    [mt | 26, 0, 0, (n >> 8) & 0xff, n & 0xff],
    [mt | 27, 0, 0, 0, 0, 0, 0, (n >> 8) & 0xff, n & 0xff],
    [mt | 27, 0, 1, 0, 0, 0, 0, 0, n & 0xff],
    [mt | 27, 0, 0x20, 0, 0, 0, 0, 0, n & 0xff],
  ];
  const push = (bytes: number[]): void => {
    const buf = Uint8Array.from(bytes);
    out.push({ buf, start: 0, end: buf.length });
  };
  for (const n of [0, 5, 23, 24, 255, 256, 65535, 65536]) {
    for (const h of [...heads(0x00, n), ...heads(0x20, n)]) {
      push([0xa3, 0, 8, 3, 5, 6, 0x81, 0x82, 0x19, 0x01, 0x00, ...h]); // a value
      push([0xa3, 0, 8, 3, 5, 6, 0x81, 0x82, ...h, 0xf9, 0x3c, 0x00]); // a time
      push([0xa2, 0, 12, 0x18, 28, ...h]); // an ACK
      push([0xa2, 0, 13, 0x18, 31, ...h]); // a PING
    }
    for (const h of heads(0x80, 2)) push([0xa3, 0, 8, 3, 5, 6, 0x81, ...h, 1, 2]); // a sample's array head
    for (const h of heads(0x80, 1)) push([0xa3, 0, 8, 3, 5, 6, ...h, 0x82, 1, 2]); // the samples' array head
    push([0xa3, 0, 8, 3, 0x18, n & 0xff, 6, 0x81, 0x82, 1, 2]); // a channel in two bytes
  }
  for (const f of [[0xf9, 0x7c, 0x00], [0xf9, 0x03, 0xff], [0xf9, 0x04, 0x00], [0xf9, 0x7b, 0xff], [0xf9, 0xfe, 0x00], [0xfa, 0x47, 0x80, 0, 0], [0xfb, 0x40, 0, 0, 0, 0, 0, 0, 0]]) {
    push([0xa3, 0, 8, 3, 5, 6, 0x81, 0x82, 1, ...f]);
    push([0xa3, 0, 8, 3, 5, 6, 0x81, 0x82, ...f, 1]);
  }
  return out;
}

describe('device/native/fastreader: the frequent client frames read in C against the hub’s reader in script', function () {
  this.timeout(120000);
  const native = useNativeHost(repo, 'fastreader');

  for (const keepWidth of [1, 7, 33]) {
    it(`reads what the script reads, verdict for verdict and number for number (a block for samples of ${keepWidth})`, () => {
      const reader = new FastReader(keepWidth);
      const cases = [...edges(), ...fc.sample(input, { numRuns: 4000, seed: 1203 + keepWidth })];
      const capacity = reader.block.numbers.length;
      const answers = native.check(cases.map(({ buf, start, end }) => `fast ${hex(buf)} ${start} ${end} ${capacity}`));
      const taken = new Set<string>();
      cases.forEach(({ buf, start, end }, i) => {
        const expected = script(reader, buf, start, end);
        taken.add(expected.split(' ')[0] as string);
        assert.equal(answers[i], expected, `case ${i}: ${hex(buf)} [${start}, ${end})`);
      });
      for (const t of [Fast.NONE, Fast.ACK, Fast.PING, Fast.BUNDLE]) assert.ok(taken.has(String(t)), `some case reads ${t}`);
    });
  }

  it('a copy of the C with its float16 exponent off by one, or one that takes a head that is not the shortest, reads otherwise', () => {
    const reader = new FastReader(7);
    const cases = [...edges(), ...fc.sample(input, { numRuns: 3000, seed: 99 })];
    const capacity = reader.block.numbers.length;
    const lines = cases.map(({ buf, start, end }) => `fast ${hex(buf)} ${start} ${end} ${capacity}`);
    const expected = cases.map(({ buf, start, end }) => script(reader, buf, start, end));
    for (const [from, to] of [
      ['ldexp((double)(f + 1024), (int)e - 25)', 'ldexp((double)(f + 1024), (int)e - 24)'],
      ['return n >= 0x100 ? n : -1;\n\t}\n\tif (ai == 26)', 'return n >= 0 ? n : -1;\n\t}\n\tif (ai == 26)'],
    ] as const) {
      const broken = buildBroken(native.host, repo, native.scratch, 'fastreader.h', from, to);
      const answers = native.host.nativeCheck(broken, lines);
      assert.ok(
        answers.some((a, i) => a !== expected[i]),
        `the copy with ${to.split('\n')[0]} reads something otherwise`,
      );
    }
  });
});
