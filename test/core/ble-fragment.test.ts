// BLE fragmentation and reassembly (bindings/ble/fragment.ts, docs/protocol.md §13.4).
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { encodeEstop, ESTOP_FRAME_BYTES, ESTOP_MAGIC, EstopKind, EstopSource } from '../../hub/estop-frame.js';
import { MAX_FRAME_BYTES, MAX_HUB_FRAME_BYTES, peekFrameType } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import {
  ATT_MTU_MIN,
  CLIENT_REASSEMBLY,
  FRAGMENT_MAX_BYTES,
  FRAGMENT_MIN_BYTES,
  FragmentPosition,
  Fragmenter,
  fragmentCount,
  fragmentedBytes,
  fragmentPayload,
  fragmentSize,
  fragmentsLeft,
  header,
  HUB_REASSEMBLY,
  Reassembler,
  writeFragment,
  type ReassemblyLimits,
  type ReassemblySink,
} from '../../bindings/ble/fragment.js';

interface Refusal {
  code: number;
  length: number;
  frameType: number;
}

class Rec implements ReassemblySink {
  frames: Uint8Array[] = [];
  refused: Refusal[] = [];
  frame(bytes: Uint8Array, start: number, end: number): void {
    this.frames.push(bytes.slice(start, end));
  }
  refuse(code: number, bytes: Uint8Array, start: number, end: number): void {
    this.refused.push({ code, length: end - start, frameType: peekFrameType(bytes, start, end) });
  }
}

function frameOf(length: number, seed = 0): Uint8Array {
  const f = new Uint8Array(length);
  for (let i = 0; i < length; i++) f[i] = (i * 31 + seed * 7 + (i >>> 8)) & 0xff;
  return f;
}

function estop(seq = 1): Uint8Array {
  const b = new Uint8Array(ESTOP_FRAME_BYTES);
  encodeEstop(b, 0, EstopKind.ASSERT, EstopSource.CLIENT, 0, 7, seq);
  return b;
}

/** The fragments a sender makes of `frame` at fragment size `size`. */
function fragments(frame: Uint8Array, size: number, f = new Fragmenter()): Uint8Array[] {
  const out: Uint8Array[] = [];
  const buf = new Uint8Array(FRAGMENT_MAX_BYTES);
  f.begin(frame, 0, frame.length);
  for (let n = f.next(buf, size); n > 0; n = f.next(buf, size)) out.push(buf.slice(0, n));
  return out;
}

function push(r: Reassembler, w: Uint8Array | number[], now = 0): void {
  const b = w instanceof Uint8Array ? w : Uint8Array.from(w);
  r.push(b, 0, b.length, now);
}

function position(w: Uint8Array): number {
  return (w[0] as number) >>> 6;
}

/** Fragments `frame` at `size`, checks their shape, reassembles them, checks the result. */
function roundTrip(frame: Uint8Array, size: number, limits: ReassemblyLimits): void {
  const ws = fragments(frame, size);
  const what = `${frame.length} bytes at size ${size}`;
  equal(ws.length, fragmentCount(frame.length, size), `fragmentCount, ${what}`);
  let air = 0;
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i] as Uint8Array;
    ok(w.length <= size && w.length >= 2, `fragment ${i} of ${w.length} bytes, ${what}`);
    air += w.length;
    const p = position(w);
    const want = ws.length === 1 ? FragmentPosition.ONLY : i === 0 ? FragmentPosition.FIRST : i === ws.length - 1 ? FragmentPosition.LAST : FragmentPosition.MIDDLE;
    equal(p, want, `position of fragment ${i}, ${what}`);
    // Every fragment but the last is full: the sender never wastes a notification.
    if (i < ws.length - 1) equal(w.length, size, `fragment ${i} full, ${what}`);
  }
  equal(air, fragmentedBytes(frame.length, size), `fragmentedBytes, ${what}`);
  const rec = new Rec();
  const r = new Reassembler(rec, limits);
  let got = 0;
  for (let i = 0; i < ws.length; i++) {
    push(r, ws[i] as Uint8Array);
    if (i < ws.length - 1) {
      got += fragmentPayload(frame.length, got, size);
      equal(r.pendingBytes, got, `pendingBytes after fragment ${i}, ${what}`);
      equal(rec.frames.length, 0, `nothing delivered early, ${what}`);
    }
  }
  equal(rec.frames.length, 1, `one frame, ${what}`);
  deepEqual(rec.frames[0], frame, what);
  equal(rec.refused.length, 0, `no refusal, ${what}`);
  equal(r.pendingBytes, 0, `buffer released, ${what}`);
}

describe('BLE fragments: the header', () => {
  it('never sets bit 5, so no fragment begins with 0xE5 (ESTOP) or 0xA0–0xBF (a CBOR map)', () => {
    for (let p = 0; p < 4; p++) {
      for (let c = 0; c < 32; c++) {
        const h = header(p, c);
        equal(h & 0x20, 0, `header(${p}, ${c})`);
        ok(h !== ESTOP_MAGIC && !(h >= 0xa0 && h <= 0xbf), `header(${p}, ${c}) = ${h}`);
        equal(h >>> 6, p);
        equal(h & 0x1f, c);
      }
    }
    equal(header(FragmentPosition.ONLY, 0), 0x00);
    equal(header(FragmentPosition.FIRST, 5), 0x45);
    equal(header(FragmentPosition.MIDDLE, 31), 0x9f);
    equal(header(FragmentPosition.LAST, 1), 0xc1);
    equal(header(FragmentPosition.LAST, 37), 0xc5, 'the counter is 5 bits: 37 is 5');
  });

  it('the fragment size is ATT MTU − 3, at least 20, at most 512 (the largest attribute value)', () => {
    equal(ATT_MTU_MIN, 23);
    equal(FRAGMENT_MIN_BYTES, 20);
    equal(FRAGMENT_MAX_BYTES, 512);
    equal(fragmentSize(20), 20);
    equal(fragmentSize(244), 244);
    equal(fragmentSize(524), 512);
    equal(fragmentSize(0), 20);
    equal(fragmentSize(NaN), 20);
  });

  it('lays out ONLY, FIRST (with the length, big-endian), MIDDLE and LAST byte by byte', () => {
    const frame = frameOf(300);
    const out = new Uint8Array(FRAGMENT_MAX_BYTES);
    equal(writeFragment(out, frame, 0, 10, 0, 3, 20), 11);
    deepEqual(out.slice(0, 11), Uint8Array.from([0x03, ...frame.slice(0, 10)]));
    equal(writeFragment(out, frame, 0, 300, 0, 9, 244), 244);
    deepEqual(out.slice(0, 4), Uint8Array.from([0x49, 0x01, 0x2c, frame[0] as number]));
    deepEqual(out.slice(3, 244), frame.slice(0, 241));
    equal(writeFragment(out, frame, 0, 300, 241, 9, 20), 20);
    deepEqual(out.slice(0, 20), Uint8Array.from([0x89, ...frame.slice(241, 260)]));
    equal(writeFragment(out, frame, 0, 300, 260, 9, 244), 41);
    deepEqual(out.slice(0, 41), Uint8Array.from([0xc9, ...frame.slice(260, 300)]));
    // A frame that fits one fragment exactly (size − 1 bytes) is ONLY; one byte more makes two.
    equal(fragmentCount(19, 20), 1);
    equal(fragmentCount(20, 20), 2);
    equal(fragmentCount(17 + 19, 20), 2);
    equal(fragmentCount(17 + 19 + 1, 20), 3);
    equal(fragmentsLeft(300, 241, 20), 4);
    equal(fragmentsLeft(300, 300, 20), 0);
  });
});

describe('BLE fragments: fragment and reassemble', () => {
  it('every frame length 1..1024 at MTU 23, 24 and 247 round-trips (every split point)', () => {
    const step = runs(1, 2);
    for (const mtu of [23, 24, 247]) {
      for (let len = 1; len <= MAX_FRAME_BYTES; len += step) roundTrip(frameOf(len, mtu), fragmentSize(mtu - 3), HUB_REASSEMBLY);
    }
  });

  it('every ATT MTU from 23 to 527 round-trips frames at and around its fragment boundaries', () => {
    const step = runs(1, 3);
    for (let mtu = 23; mtu <= 527; mtu += step) {
      const s = fragmentSize(mtu - 3);
      const lengths = [1, s - 2, s - 1, s, s + 1, 2 * s - 4, 2 * s - 3, 2 * s - 2, 2 * s - 1, 3 * s, MAX_FRAME_BYTES];
      for (const len of lengths) if (len >= 1 && len <= MAX_FRAME_BYTES) roundTrip(frameOf(len, mtu), s, HUB_REASSEMBLY);
    }
  });

  it('the largest hub frame round-trips to a client at MTU 23, 185, 247 and 527', () => {
    for (const mtu of [23, 185, 247, 527]) roundTrip(frameOf(MAX_HUB_FRAME_BYTES, 3), fragmentSize(mtu - 3), CLIENT_REASSEMBLY);
  });

  it('the receiver does not depend on fragment sizes: a sender may cut at any size, and change it mid-frame', () => {
    const frame = frameOf(MAX_FRAME_BYTES, 5);
    for (let size = FRAGMENT_MIN_BYTES; size <= FRAGMENT_MAX_BYTES; size += runs(1, 3)) roundTrip(frame, size, HUB_REASSEMBLY);
    // An MTU exchange completing halfway through a frame.
    const f = new Fragmenter();
    const rec = new Rec();
    const r = new Reassembler(rec);
    const buf = new Uint8Array(FRAGMENT_MAX_BYTES);
    f.begin(frame, 0, frame.length);
    let k = 0;
    for (let n = f.next(buf, 20); n > 0; n = f.next(buf, k < 3 ? 20 : 244)) {
      r.push(buf, 0, n, 0);
      k++;
    }
    equal(k, 3 + Math.ceil((frame.length - 17 - 19 - 19) / 243));
    deepEqual(rec.frames, [frame]);
  });

  it('the limits: 1024 bytes in at most 54 fragments within 5 s to the hub; 4608 in 243 within 20 s to a client', () => {
    equal(HUB_REASSEMBLY.maxFrameBytes, MAX_FRAME_BYTES);
    equal(HUB_REASSEMBLY.maxFragments, 54);
    equal(HUB_REASSEMBLY.timeoutMs, 5000);
    equal(CLIENT_REASSEMBLY.maxFrameBytes, MAX_HUB_FRAME_BYTES);
    equal(CLIENT_REASSEMBLY.maxFragments, 243);
    equal(CLIENT_REASSEMBLY.timeoutMs, 20000);
    equal(fragments(frameOf(MAX_FRAME_BYTES), 20).length, 54, 'the largest client frame at the smallest MTU needs all 54');
  });

  it('message counters run modulo 32; messages keep arriving across the wrap', () => {
    const f = new Fragmenter();
    const rec = new Rec();
    const r = new Reassembler(rec);
    const seen: number[] = [];
    for (let i = 0; i < 70; i++) {
      const ws = fragments(frameOf(30, i), 20, f);
      equal(ws.length, 2);
      seen.push((ws[0] as Uint8Array)[0]! & 0x1f);
      for (const w of ws) push(r, w);
    }
    equal(rec.frames.length, 70);
    equal(rec.refused.length, 0);
    for (let i = 0; i < 70; i++) equal(seen[i], i & 31);
  });

  it('random frames, sizes and MTU changes round-trip (seeded)', () => {
    let s = 12345;
    const rnd = (n: number): number => {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      return ((s >>> 0) % n) as number;
    };
    const f = new Fragmenter();
    const rec = new Rec();
    const r = new Reassembler(rec);
    const buf = new Uint8Array(FRAGMENT_MAX_BYTES);
    const sent: Uint8Array[] = [];
    for (let i = 0; i < runs(400, 200); i++) {
      const frame = frameOf(1 + rnd(MAX_FRAME_BYTES), i);
      sent.push(frame);
      f.begin(frame, 0, frame.length);
      for (let n = f.next(buf, 20 + rnd(493)); n > 0; n = f.next(buf, 20 + rnd(493))) r.push(buf, 0, n, i);
    }
    equal(rec.refused.length, 0);
    deepEqual(rec.frames, sent);
  });
});

describe('BLE fragments: ESTOP', () => {
  it('an ONLY fragment between any two fragments of a frame is delivered at once; the frame still completes', () => {
    const frame = frameOf(300, 1);
    const f = new Fragmenter();
    const ws = fragments(frame, 20, f);
    ok(ws.length > 10);
    const e = estop();
    const only = Uint8Array.from([header(FragmentPosition.ONLY, f.takeCounter()), ...e]);
    for (let p = 1; p < ws.length; p++) {
      const rec = new Rec();
      const r = new Reassembler(rec);
      for (let i = 0; i < p; i++) push(r, ws[i] as Uint8Array);
      const held = r.pendingBytes;
      ok(held > 0);
      push(r, only);
      equal(rec.frames.length, 1, `ESTOP after fragment ${p}`);
      deepEqual(rec.frames[0], e);
      equal(r.pendingBytes, held, 'the partial frame is kept');
      for (let i = p; i < ws.length; i++) push(r, ws[i] as Uint8Array);
      deepEqual(rec.frames, [e, frame]);
      equal(rec.refused.length, 0);
    }
  });

  it('a raw ESTOP write (0xE5 first, no header) is taken whole, even mid-frame', () => {
    const rec = new Rec();
    const r = new Reassembler(rec);
    const ws = fragments(frameOf(100), 20);
    push(r, ws[0] as Uint8Array);
    const e = estop(9);
    push(r, e);
    deepEqual(rec.frames, [e]);
    for (let i = 1; i < ws.length; i++) push(r, ws[i] as Uint8Array);
    equal(rec.frames.length, 2);
    equal(rec.refused.length, 0);
  });
});

describe('BLE fragments: refusals and no leak', () => {
  it('a FIRST declaring more than the limit is refused TOO_LARGE at once, with the frame type; the rest is dropped silently', () => {
    const big = frameOf(2000);
    big[0] = 0xa2; // a map of two entries: key 0 (type) = 8 (BUNDLE), …
    big[1] = 0x00;
    big[2] = 0x08;
    const ws = fragments(big, 20);
    const rec = new Rec();
    const r = new Reassembler(rec);
    push(r, ws[0] as Uint8Array);
    equal(rec.refused.length, 1);
    const refusal = rec.refused[0] as Refusal;
    equal(refusal.code, Nack.TOO_LARGE);
    ok(refusal.length > MAX_FRAME_BYTES, 'the view handed on is over the limit, so the core refuses it the same way');
    equal(refusal.frameType, 8);
    equal(r.pendingBytes, 0, 'nothing held');
    for (let i = 1; i < ws.length; i++) push(r, ws[i] as Uint8Array);
    equal(rec.refused.length, 1, 'one refusal for the whole frame');
    equal(r.counters.skipped, ws.length - 1);
    equal(r.counters.tooLarge, 1);
    push(r, fragments(frameOf(40), 20)[0] as Uint8Array); // a FIRST: starts a new frame
    equal(r.pendingBytes, 17);
  });

  it('reassembles in a buffer its owner hands it, of exactly maxFrameBytes + 1 bytes', () => {
    const rec = new Rec();
    const own = new Uint8Array(MAX_FRAME_BYTES + 1);
    const r = new Reassembler(rec, undefined, own);
    equal(r.buffer, own);
    for (const w of fragments(frameOf(300), 100)) push(r, w);
    equal(rec.frames.length, 1);
    equal(own[0], (frameOf(300)[0] as number), 'the frame was put together in it');
    throws(() => new Reassembler(rec, undefined, new Uint8Array(MAX_FRAME_BYTES)));
  });

  it('1024 bytes are taken, 1025 refused TOO_LARGE', () => {
    const rec = new Rec();
    const r = new Reassembler(rec);
    for (const w of fragments(frameOf(MAX_FRAME_BYTES), 244)) push(r, w);
    equal(rec.frames.length, 1);
    for (const w of fragments(frameOf(MAX_FRAME_BYTES + 1), 244)) push(r, w);
    equal(rec.frames.length, 1);
    deepEqual(rec.refused.map((x) => x.code), [Nack.TOO_LARGE]);
  });

  it('a frame never completed is discarded after the timeout (MALFORMED), its buffer released; late fragments are dropped', () => {
    const rec = new Rec();
    const r = new Reassembler(rec);
    const ws = fragments(frameOf(100), 20);
    push(r, ws[0] as Uint8Array, 1000);
    push(r, ws[1] as Uint8Array, 3000);
    equal(r.pendingBytes, 36);
    r.tick(6000);
    equal(rec.refused.length, 0, 'at exactly 5000 ms the frame may still complete');
    equal(r.pendingBytes, 36);
    r.tick(6001);
    deepEqual(rec.refused, [{ code: Nack.MALFORMED, length: 0, frameType: -1 }]);
    equal(r.pendingBytes, 0);
    equal(r.counters.timeouts, 1);
    for (let i = 2; i < ws.length; i++) push(r, ws[i] as Uint8Array, 6002);
    equal(rec.refused.length, 1, 'the late fragments draw no more refusals');
    equal(rec.frames.length, 0);
    // The timeout is also seen by the next write, without a tick.
    push(r, ws[0] as Uint8Array, 7000);
    push(r, fragments(frameOf(10), 20)[0] as Uint8Array, 12001);
    equal(rec.refused.length, 2);
    equal(rec.frames.length, 1);
  });

  interface Case {
    name: string;
    writes: number[][];
    limits?: ReassemblyLimits;
  }
  const F = (c: number): number => header(FragmentPosition.FIRST, c);
  const M = (c: number): number => header(FragmentPosition.MIDDLE, c);
  const L = (c: number): number => header(FragmentPosition.LAST, c);
  const bytes = (n: number): number[] => Array.from(frameOf(n));
  const cases: Case[] = [
    { name: 'an empty write', writes: [[]] },
    { name: 'a header with the reserved bit set', writes: [[0x20, 1, 2, 3]] },
    { name: 'a raw CBOR frame without a header', writes: [[0xa1, 0x00, 0x0d]] },
    { name: 'an ONLY fragment with no frame byte', writes: [[0x00]] },
    { name: 'a FIRST fragment too short to carry the length and a byte', writes: [[F(1), 0x00, 0x10]] },
    { name: 'a FIRST whose total does not exceed its own bytes', writes: [[F(1), 0x00, 0x02, 1, 2]] },
    { name: 'a FIRST declaring 0 bytes', writes: [[F(1), 0x00, 0x00, 1]] },
    { name: 'a MIDDLE with no FIRST', writes: [[M(4), ...bytes(19)]] },
    { name: 'a LAST with no FIRST', writes: [[L(4), ...bytes(5)]] },
    { name: 'a MIDDLE of another message mid-frame', writes: [[F(1), 0, 60, ...bytes(17)], [M(2), ...bytes(19)], [M(1), ...bytes(19)], [L(2), 1], [L(1), ...bytes(5)]] },
    { name: 'a LAST short of the total', writes: [[F(1), 0, 40, ...bytes(17)], [L(1), ...bytes(19)]] },
    { name: 'a LAST beyond the total', writes: [[F(1), 0, 30, ...bytes(17)], [L(1), ...bytes(19)]] },
    { name: 'a MIDDLE that reaches the total', writes: [[F(1), 0, 36, ...bytes(17)], [M(1), ...bytes(19)], [L(1), 1]] },
    { name: 'a MIDDLE with no frame byte', writes: [[F(1), 0, 36, ...bytes(17)], [M(1)], [L(1), ...bytes(19)]] },
    { name: 'a new FIRST abandoning a partial frame', writes: [[F(1), 0, 36, ...bytes(17)], [F(2), 0, 20, ...bytes(17)], [L(2), 1, 2, 3], [L(1), ...bytes(19)]] },
    {
      name: 'more fragments than the limit',
      writes: [[F(3), 0, 100, 1], [M(3), 2], [M(3), 3], [M(3), 4], [M(3), 5], [L(3), ...bytes(95)]],
      limits: { maxFrameBytes: MAX_FRAME_BYTES, maxFragments: 4, timeoutMs: 5000 },
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name}: one MALFORMED, nothing held, and the next frame goes through`, () => {
      const rec = new Rec();
      const r = new Reassembler(rec, c.limits ?? HUB_REASSEMBLY);
      for (const w of c.writes) push(r, w);
      const abandoned = c.name.startsWith('a new FIRST');
      deepEqual(rec.refused.map((x) => [x.code, x.length]), [[Nack.MALFORMED, 0]]);
      equal(rec.frames.length, abandoned ? 1 : 0, 'what was delivered');
      if (abandoned) equal((rec.frames[0] as Uint8Array).length, 20);
      equal(r.pendingBytes, 0);
      const good = frameOf(50, 9);
      for (const w of fragments(good, 20)) push(r, w);
      deepEqual(rec.frames[rec.frames.length - 1], good);
      equal(rec.refused.length, 1);
    });
  }

  it('garbage never throws and never holds more than one frame (seeded)', () => {
    let s = 777;
    const rnd = (n: number): number => {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      return (s >>> 0) % n;
    };
    const rec = new Rec();
    const r = new Reassembler(rec);
    const w = new Uint8Array(FRAGMENT_MAX_BYTES);
    for (let i = 0; i < runs(20000, 5000); i++) {
      const n = rnd(40);
      for (let k = 0; k < n; k++) w[k] = rnd(256);
      // Bias toward well-formed headers so that long partial frames happen too.
      if (n > 0 && rnd(2) === 0) w[0] = (w[0] as number) & 0xdf;
      r.push(w, 0, n, i);
      ok(r.pendingBytes <= MAX_FRAME_BYTES);
    }
    ok(rec.refused.length > 0 && rec.frames.length > 0);
    for (const x of rec.refused) ok(x.code === Nack.MALFORMED || x.code === Nack.TOO_LARGE);
  });
});
