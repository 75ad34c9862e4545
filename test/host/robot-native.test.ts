// The robot link's byte work in C (device/native/robotframe.h, which the device runs through
// device/robot-native.ts) against the script codec (device/robot-link.ts ScriptRobotCodec): the
// same C built for this host (bench/native/native-host.c) answers every CRC, copy and value
// read as the script does, for random inputs and for exactly the calls the link makes on a
// stream of frames; a copy of the C broken in its CRC or its values fails the same checks. And
// the link does its byte work through the codec it is given, on every path.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { crc16, crc16Copy, CRC16_INIT } from '../../hub/crc16.js';
import type { SampleBlock } from '../../hub/ports.js';
import { RobotInbound, RobotLink, ScriptRobotCodec, type RobotCodec } from '../../device/robot-link.js';
import { NullHub, sampleFrame } from '../../bench/robot-link.bench.js';
import { buildBroken, useNativeHost } from '../lib/native-host.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');


const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const f64hex = (x: Float64Array): string[] => Array.from({ length: x.length }, (_, i) => hex(new Uint8Array(x.buffer, x.byteOffset + 8 * i, 8)));

/** The script codec's answer to one request line, as the host program prints it. */
function scriptAnswer(line: string): string {
  const [op, h, ...rest] = line.split(' ');
  const bytes = Uint8Array.from(Buffer.from(h as string, 'hex'));
  const n = rest.map(Number);
  if (op === 'crc') return String(crc16(bytes, n[0], n[1], n[2]));
  if (op === 'copy') {
    const [from, count, at, crc] = n as [number, number, number, number];
    const dst = new Uint8Array(at + count);
    return `${crc16Copy(bytes, from, dst, at, count, crc)} ${hex(dst)}`;
  }
  const [at, count] = n as [number, number];
  const out = new Float64Array(count);
  new ScriptRobotCodec().floats32(bytes, at, count, new Uint8Array(out.buffer));
  // NaN: the C keeps the float's payload, the script may not; both read NaN.
  return f64hex(out)
    .map((x, i) => (Number.isNaN(out[i]) ? 'nan' : x))
    .join(' ');
}

function normalized(answer: string, line: string): string {
  if (!line.startsWith('floats')) return answer;
  return answer
    .split(' ')
    .map((x) => {
      if (x === '') return x;
      const v = Buffer.from(x, 'hex').readDoubleLE(0);
      return Number.isNaN(v) ? 'nan' : x;
    })
    .join(' ');
}

/** Requests of every kind over random bytes and ranges. */
const request = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 300 }).chain((b) =>
    fc.tuple(fc.nat({ max: b.length }), fc.nat({ max: b.length }), fc.integer({ min: 0, max: 0xffff })).map(([x, y, crc]) => `crc ${hex(b)} ${Math.min(x, y)} ${Math.max(x, y)} ${crc}`),
  ),
  fc.uint8Array({ minLength: 1, maxLength: 300 }).chain((b) =>
    fc.tuple(fc.nat({ max: b.length }), fc.nat({ max: 300 }), fc.nat({ max: 64 }), fc.integer({ min: 0, max: 0xffff })).map(([from, n, at, crc]) => `copy ${hex(b)} ${from} ${Math.min(n, b.length - from)} ${at} ${crc}`),
  ),
  fc.uint8Array({ minLength: 1, maxLength: 200 }).chain((b) => fc.tuple(fc.nat({ max: b.length }), fc.nat({ max: 40 })).map(([at, count]) => `floats ${hex(b)} ${at} ${Math.min(count, (b.length - at) >> 2)}`)),
);

/** A codec that answers as the script codec and records each call as a request line with its answer. */
class RecordingCodec implements RobotCodec {
  readonly lines: string[] = [];
  readonly answers: string[] = [];
  private readonly inner = new ScriptRobotCodec();
  crc16(bytes: Uint8Array, start: number, end: number, crc: number): number {
    const r = this.inner.crc16(bytes, start, end, crc);
    this.lines.push(`crc ${hex(bytes.subarray(start, end))} 0 ${end - start} ${crc}`);
    this.answers.push(String(r));
    return r;
  }
  crc16Copy(src: Uint8Array, from: number, dst: Uint8Array, at: number, n: number, crc: number): number {
    const r = this.inner.crc16Copy(src, from, dst, at, n, crc);
    this.lines.push(`copy ${hex(src.subarray(from, from + n))} 0 ${n} 0 ${crc}`);
    this.answers.push(`${r} ${hex(dst.subarray(at, at + n))}`);
    return r;
  }
  floats32(bytes: Uint8Array, at: number, count: number, out: Uint8Array): void {
    this.inner.floats32(bytes, at, count, out);
    const line = `floats ${hex(bytes.subarray(at, at + 4 * count))} 0 ${count}`;
    this.lines.push(line);
    this.answers.push(normalized(f64hex(new Float64Array(out.buffer, out.byteOffset, count)).join(' '), line));
  }
}

const sample = (id: number, values: readonly number[]): number[] => Array.from(sampleFrame(id, values));

describe('device/native/robotframe: the robot link’s C against the script codec', function () {
  this.timeout(120000);
  const native = useNativeHost(repo, 'robotframe');

  it('gives the check value of CRC-16/CCITT-FALSE and reads float32 values as the script does', () => {
    const [crc, floats] = native.check([`crc ${hex(Buffer.from('123456789'))} 0 9 ${CRC16_INIT}`, `floats ${hex(new Uint8Array(Float32Array.from([1.5, -2, 0.1]).buffer))} 0 3`]);
    assert.equal(Number(crc), 0x29b1);
    const out = new Float64Array(3);
    new ScriptRobotCodec().floats32(new Uint8Array(Float32Array.from([1.5, -2, 0.1]).buffer), 0, 3, new Uint8Array(out.buffer));
    assert.equal(floats, f64hex(out).join(' '));
    assert.deepEqual(Array.from(out), [1.5, -2, Math.fround(0.1)]);
  });

  it('answers every CRC, copy and value read as the script codec does (property)', () => {
    fc.assert(
      fc.property(fc.array(request, { minLength: 1, maxLength: 40 }), (lines) => {
        const answers = native.check(lines);
        assert.equal(answers.length, lines.length);
        lines.forEach((line, i) => assert.equal(normalized(answers[i] as string, line), scriptAnswer(line), line));
      }),
      { numRuns: 60 },
    );
  });

  it('answers exactly the calls the link makes on a stream of frames, whole and cut, damaged and not, and on publications', () => {
    const catalog = loadCatalog(DEFAULT_CATALOG);
    const codec = new RecordingCodec();
    const hub = new NullHub();
    const inbound = new RobotInbound(hub, catalog, { now: () => 0 }, codec);
    const imu = catalog.byName('imu');
    const odom = catalog.byName('odom');
    assert.ok(imu && odom);
    const stream: number[] = [];
    for (let i = 0; i < 20; i++) {
      stream.push(...sample(imu.id, [i, -i, 0.5, NaN, Infinity, 1e-40]));
      stream.push(...sample(odom.id, [i * 0.25, 2, 3, 4, 5]));
    }
    // A damaged byte in one frame: its CRC fails and its bytes are read again.
    stream[40] = (stream[40] as number) ^ 0x10;
    const bytes = Uint8Array.from(stream);
    // Reads of every size, so that frames lie whole in some and cut across others.
    for (let at = 0, k = 1; at < bytes.length; k = (k % 37) + 3) {
      const end = Math.min(bytes.length, at + k);
      inbound.input(bytes, at, end);
      at = end;
    }
    assert.ok(hub.samples >= 38, `the link handed the hub ${hub.samples} samples`);
    const link = new RobotLink({ line: { set: () => undefined }, tx: { room: () => 4096, write: () => true }, codec });
    const cmd = catalog.byName('cmd_vel');
    assert.ok(cmd);
    const block: SampleBlock = { count: 3, width: 3, numbers: new Float64Array([1, 0.2, -0.1, 2, 0.3, 0.4, 3, NaN, 1e9]) };
    link.publish(cmd.id, block);
    link.stop(1);
    const kinds = new Set(codec.lines.map((l) => l.split(' ')[0]));
    assert.deepEqual([...kinds].sort(), ['copy', 'crc', 'floats']);
    const answers = native.check(codec.lines);
    codec.lines.forEach((line, i) => assert.equal(normalized(answers[i] as string, line), codec.answers[i], line));
  });

  for (const [what, from, to] of [
    ['a CRC whose table index is wrong', '((crc >> 8) ^ *p++)', '((crc >> 9) ^ *p++)'],
    ['a value read big-endian', '(uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24)', '(uint32_t)p[3] | ((uint32_t)p[2] << 8) | ((uint32_t)p[1] << 16) | ((uint32_t)p[0] << 24)'],
  ] as const) {
    it(`fails the same checks with ${what}`, () => {
      const bad = buildBroken(native.host, repo, join(native.scratch, what.replace(/\W+/g, '-')), 'robotframe.h', from, to);
      try {
        const lines = [`crc ${hex(Buffer.from('123456789'))} 0 9 ${CRC16_INIT}`, `floats ${hex(new Uint8Array(Float32Array.from([1.5, -2, 0.1]).buffer))} 0 3`];
        const answers = native.host.nativeCheck(bad, lines);
        assert.ok(
          lines.some((line, i) => normalized(answers[i] as string, line) !== scriptAnswer(line)),
          'the broken C answers as the script does',
        );
      } finally {
        rmSync(dirname(bad), { recursive: true, force: true });
      }
    });
  }
});

describe('device/robot-link: the byte work goes through the codec the link is given', () => {
  class CountingCodec extends ScriptRobotCodec {
    crcs = 0;
    copies = 0;
    reads = 0;
    constructor() {
      super();
      const crc = this.crc16;
      const copy = this.crc16Copy;
      this.crc16 = (b, s, e, c) => (this.crcs++, crc(b, s, e, c));
      this.crc16Copy = (a, f, d, t, n, c) => (this.copies++, copy(a, f, d, t, n, c));
    }
    override floats32(bytes: Uint8Array, at: number, count: number, out: Uint8Array): void {
      this.reads++;
      super.floats32(bytes, at, count, out);
    }
  }

  it('checks a whole frame’s CRC and reads its values with one call each, a cut frame’s CRC as it is gathered, and seals each publication with it', () => {
    const catalog = loadCatalog(DEFAULT_CATALOG);
    const imu = catalog.byName('imu');
    const cmd = catalog.byName('cmd_vel');
    assert.ok(imu && cmd);
    const codec = new CountingCodec();
    const hub = new NullHub();
    const inbound = new RobotInbound(hub, catalog, { now: () => 0 }, codec);
    const f = Uint8Array.from(sample(imu.id, [1, 2, 3, 4, 5, 6]));
    inbound.input(f, 0, f.length);
    assert.deepEqual([codec.crcs, codec.copies, codec.reads, hub.samples], [1, 0, 1, 1]);
    inbound.input(f, 0, 10);
    inbound.input(f, 10, f.length);
    assert.equal(hub.samples, 2);
    assert.ok(codec.copies >= 1, 'the cut frame’s payload was gathered through the codec');
    assert.equal(codec.reads, 2);
    const link = new RobotLink({ line: { set: () => undefined }, tx: { room: () => 4096, write: () => true }, codec });
    const before = codec.crcs;
    link.publish(cmd.id, { count: 2, width: 3, numbers: new Float64Array([1, 0.1, 0.2, 2, 0.3, 0.4]) });
    assert.equal(codec.crcs - before, 2);
  });
});
