// bindings/tcp/egress.ts: the bounded egress queue (whole records, the watermark, the ESTOP
// write-ahead and the ack window) and the TcpLink around it, driven by a fake transport and a
// fake hub; bindings/link.ts estimators.
import { deepEqual, equal, fail, ok, throws } from '../lib/assert.js';
import { ACK_LAG_CONGESTED_FRAMES, SATURATED_SIGNAL, STALE_HOLD_MS } from '../../bindings/detector.js';
import { AckCounter, MIN_RTT_WINDOW_MS, MinRttFilter, ownValue, RTT_NUMBERS, RttEstimator, WINDOWED_NUMBERS, SAMPLE_BUDGET_DEFAULT_MS, SAMPLE_BUDGET_FLOOR_MS, SAMPLE_BUDGET_MAX_MS, sampleBudgetMs, ThroughputEstimator, WindowedMax } from '../../bindings/link.js';
import { WsOpcode, writeLengthPrefix } from '../../bindings/tcp/framing.js';
import {
  AHEAD_SLOTS,
  WS_POLICY_VIOLATION,
  DEFAULT_ACK_WINDOW_FRAMES,
  PROMPT_ACK_FRAMES,
  EgressQueue,
  LinkFraming,
  LinkState,
  MIN_QUEUE_BYTES,
  RecordKind,
  TakePool,
  TcpLink,
  type LinkFramingCode,
  type LinkTransport,
} from '../../bindings/tcp/egress.js';
import { AckForm, Tag, tagOf } from '../../hub/ports.js';
import { CborWriter } from '../../hub/cbor.js';
import { ESTOP_FRAME_BYTES, EstopKind, EstopSource, decodeEstop, encodeEstop } from '../../hub/estop-frame.js';
import { decodeFrame, encodeData, encodeFrame, FrameType, MAX_FRAME_BYTES, type Frame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import type { Link, LinkSink } from '../../hub/ports.js';
import { ACK_EVERY_FRAMES, HubClient } from '../../client/core.js';
import { LengthPrefixReassembler, lengthPrefixed, type ClientClock, type ClientTransport } from '../../client/transport.js';
import { makeHub, OPERATOR_CREDENTIAL, VirtualClock } from '../lib/hub-fixture.js';

const NONE = new Uint8Array(0);

function rec(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 13 + i) & 0xff;
  return b;
}

/** One take: what it handed over, `mem.out` being exactly those bytes; then the transport's copy is done. */
function drain(q: EgressQueue, max = 1 << 20, dataStarts = 1 << 30): number[] {
  const n = q.take(max, dataStarts);
  if (n === 0) return [];
  equal(q.mem.out.length, n, 'out is exactly what the take handed over');
  const got = Array.from(q.mem.out);
  q.mem.unstage();
  return got;
}

function estopBytes(seq: number): Uint8Array {
  const b = new Uint8Array(ESTOP_FRAME_BYTES);
  encodeEstop(b, 0, EstopKind.ASSERT, EstopSource.HUB_BUTTON, 1, 0, seq);
  return b;
}

describe('tcp egress: EgressQueue', () => {
  it('keeps each record\'s length and kind together: whole records of the largest length either width holds', () => {
    for (const capacity of [8191, 8192, 70000]) {
      const q = new EgressQueue(capacity, 4);
      const big = rec(capacity - 2, 7);
      ok(q.push(new Uint8Array([1, 2]), 2, big, big.length, RecordKind.SAMPLE, 5));
      equal(q.bytes, capacity);
      equal(q.take(1 << 20, 0), 0, 'a SAMPLE record waits for the ack window');
      q.setExpiry(5 + SAMPLE_BUDGET_MAX_MS, SAMPLE_BUDGET_MAX_MS);
      const got = drain(q, 1 << 20, 1);
      equal(got.length, capacity, `${capacity}: the record whole`);
      equal(got[capacity - 1], big[big.length - 1]);
      equal(q.records, 0);
      ok(q.push(NONE, 0, rec(capacity, 8), capacity, RecordKind.VALUE, 0, 9));
      equal(q.push(NONE, 0, rec(1, 9), 1, RecordKind.VALUE, 0, 9), false, 'full');
      equal(drain(q, 1 << 20, 1).length, capacity);
      const half = capacity >>> 1;
      ok(q.push(NONE, 0, rec(half, 10), half, RecordKind.VALUE, 0, 9));
      ok(q.push(NONE, 0, rec(half, 11), half, RecordKind.VALUE, 0, 9));
      deepEqual(drain(q, 1 << 20, 2), Array.from(rec(half, 11)), 'the older value superseded, dropped unsent');
      equal(q.conflated, 1);
    }
    throws(() => new EgressQueue(2 ** 29), (e) => e instanceof RangeError, 'lengths up to 2^29 − 1');
  });

  it('holds whole records only, bounded by bytes and by count', () => {
    const q = new EgressQueue(64, 4);
    const h = new Uint8Array([0xaa, 0xbb]);
    ok(q.push(h, 2, rec(30, 1), 30, RecordKind.DATA));
    ok(q.push(h, 2, rec(28, 2), 28, RecordKind.CONTROL));
    equal(q.bytes, 62);
    ok(!q.fits(3));
    ok(!q.push(h, 2, rec(1, 3), 1, RecordKind.CONTROL), 'three bytes do not fit in two');
    equal(q.bytes, 62, 'a refused record leaves nothing behind');
    ok(q.fits(2));
    ok(q.push(NONE, 0, rec(1, 4), 1, RecordKind.CONTROL));
    ok(q.push(NONE, 0, rec(1, 5), 1, RecordKind.CONTROL));
    equal(q.records, 4);
    ok(!q.fits(0), 'an empty record is never queued');
    const r = new EgressQueue(1000, 2);
    r.push(NONE, 0, rec(1, 1), 1, RecordKind.CONTROL);
    r.push(NONE, 0, rec(1, 2), 1, RecordKind.CONTROL);
    ok(!r.fits(1), 'record count bound');
  });

  it('hands bytes over in order, in any amounts; a record that does not fit before the ring end goes to the front; ratio counts what is left', () => {
    const q = new EgressQueue(40);
    const h = new Uint8Array([9]);
    q.push(h, 1, rec(20, 1), 20, RecordKind.CONTROL);
    q.push(h, 1, rec(10, 2), 10, RecordKind.CONTROL);
    equal(q.ratio(), 32 / 40);
    deepEqual(drain(q, 5), [9, ...rec(4, 1)]);
    ok(q.inFlight());
    equal(q.ratio(), 27 / 40);
    deepEqual(drain(q, 16), Array.from(rec(20, 1).subarray(4)));
    ok(!q.inFlight());
    equal(q.recordsOut, 1);
    // 11 bytes queued at [21, 32): 8 free before the end, 21 at the front. Records are kept
    // contiguous, so 25 bytes are refused although 11 + 25 would fit in 40.
    ok(!q.fits(25));
    ok(!q.push(h, 1, rec(24, 3), 24, RecordKind.CONTROL));
    equal(q.bytes, 11, 'a refused record leaves nothing behind');
    // 20 bytes go to the front, the ring's tail end left as a gap; then 1 byte fits between.
    ok(q.push(h, 1, rec(19, 3), 19, RecordKind.CONTROL));
    ok(q.push(NONE, 0, rec(1, 4), 1, RecordKind.CONTROL));
    ok(!q.fits(1), 'the front is full up to the record still queued');
    equal(q.bytes, 32, 'the gap is not counted');
    equal(q.ratio(), 32 / 40);
    // Across the gap in any amounts, in order.
    deepEqual(drain(q, 13), [9, ...rec(10, 2), 9, rec(19, 3)[0] as number]);
    deepEqual(drain(q), [...rec(19, 3).subarray(1), ...rec(1, 4)]);
    equal(q.bytes, 0);
    equal(q.ratio(), 0);
    equal(q.recordsOut, 4);
    ok(q.fits(40), 'empty: the whole ring again');
    // copyOut: a take, copied to where the adapter wants it.
    ok(q.push(h, 1, rec(3, 5), 3, RecordKind.CONTROL));
    const dst = new Uint8Array(8);
    equal(q.copyOut(dst, 2, 8, 1), 4);
    deepEqual(Array.from(dst), [0, 0, 9, ...rec(3, 5), 0, 0]);
  });

  it('one take hands over at most takeBytes (the staging area), ESTOPs and records alike', () => {
    const q = new EgressQueue(100, 16, 16);
    q.push(NONE, 0, rec(30, 1), 30, RecordKind.CONTROL);
    q.writeAhead(new Uint8Array([0, 12]), 2, estopBytes(1), 12);
    deepEqual(drain(q, 1000), [0, 12, ...estopBytes(1), ...rec(2, 1)]);
    deepEqual(drain(q, 1000), Array.from(rec(30, 1).subarray(2, 18)));
    deepEqual(drain(q, 5), Array.from(rec(30, 1).subarray(18, 23)));
    deepEqual(drain(q, 1000), Array.from(rec(30, 1).subarray(23)));
    equal(q.take(1000, 1), 0);
    throws(() => new EgressQueue(100, 16, 15), (e) => e instanceof RangeError, 'the staging area holds one framed ESTOP at least');
  });

  it('queues sharing a TakePool keep their own records and ESTOPs, take in turn through one staging area, and give their region back', () => {
    const pool = new TakePool(2, 40, 16);
    equal(pool.available, 2);
    const a = new EgressQueue(40, 8, 16, pool);
    const b = new EgressQueue(40, 8, 16, pool);
    equal(pool.available, 0);
    ok(a.mem === pool.mem && b.mem === pool.mem, 'both in the pool');
    ok(a.base !== b.base);
    const c = new EgressQueue(40, 8, 16, pool);
    ok(c.mem !== pool.mem, 'no region free: memory of its own');
    const h = new Uint8Array([9]);
    // Each fills its ring to the end and wraps, interleaved with the other's takes.
    ok(a.push(h, 1, rec(25, 1), 25, RecordKind.CONTROL));
    ok(b.push(h, 1, rec(30, 2), 30, RecordKind.CONTROL));
    ok(!a.fits(15), "a's ring is its own 40 bytes: 26 used, 14 left before the end");
    deepEqual(drain(a, 16), [9, ...rec(15, 1)]);
    b.writeAhead(new Uint8Array([0, 12]), 2, estopBytes(3), 12);
    deepEqual(drain(b, 16), [0, 12, ...estopBytes(3), 9, ...rec(1, 2)]);
    deepEqual(drain(a), Array.from(rec(25, 1).subarray(15)));
    ok(a.push(h, 1, rec(20, 4), 20, RecordKind.CONTROL), 'a wraps to the front of its own region');
    deepEqual(drain(b), Array.from(rec(30, 2).subarray(1, 17)));
    deepEqual(drain(a), [9, ...rec(15, 4)]);
    deepEqual(drain(b), Array.from(rec(30, 2).subarray(17)));
    deepEqual(drain(a), Array.from(rec(20, 4).subarray(15)));
    equal(a.bytes + b.bytes, 0);
    // Given back: it takes nothing more, and its region serves the next queue.
    ok(a.push(h, 1, rec(5, 5), 5, RecordKind.CONTROL));
    a.release();
    equal(a.take(100, 100), 0);
    ok(!a.push(h, 1, rec(5, 6), 5, RecordKind.CONTROL), 'a released queue takes nothing');
    equal(pool.available, 1);
    const d = new EgressQueue(40, 8, 16, pool);
    equal(d.base, a.base, "d has a's region");
    ok(d.push(h, 1, rec(4, 7), 4, RecordKind.CONTROL));
    deepEqual(drain(d), [9, ...rec(4, 7)]);
    const e = new EgressQueue(41, 8, 16, pool);
    ok(e.mem !== pool.mem, 'a queue of another capacity does not use the pool');
    throws(() => new TakePool(0, 40, 16), (x) => x instanceof RangeError);
  });

  it('puts ESTOP ahead of every queued record', () => {
    const q = new EgressQueue(100);
    q.push(NONE, 0, rec(10, 1), 10, RecordKind.DATA);
    q.push(NONE, 0, rec(10, 2), 10, RecordKind.DATA);
    const e = estopBytes(1);
    q.writeAhead(new Uint8Array([0, 12]), 2, e, 12);
    equal(q.bytes, 20, 'the ESTOP is outside the watermark');
    equal(q.pendingBytes(), 34);
    deepEqual(drain(q), [0, 12, ...e, ...rec(10, 1), ...rec(10, 2)]);
  });

  it('finishes a record partly handed over before the ESTOP, never splits one', () => {
    const q = new EgressQueue(100);
    q.push(NONE, 0, rec(10, 1), 10, RecordKind.DATA);
    q.push(NONE, 0, rec(10, 2), 10, RecordKind.DATA);
    deepEqual(drain(q, 3), Array.from(rec(3, 1)));
    const e = estopBytes(2);
    q.writeAhead(NONE, 0, e, 12);
    deepEqual(drain(q, 4), Array.from(rec(10, 1).subarray(3, 7)));
    deepEqual(drain(q), [...rec(10, 1).subarray(7), ...e, ...rec(10, 2)]);
  });

  it('an ESTOP partly handed over finishes before anything else, and ESTOPs keep their order', () => {
    const q = new EgressQueue(100);
    q.push(NONE, 0, rec(10, 1), 10, RecordKind.CONTROL);
    const a = estopBytes(1);
    const b = estopBytes(2);
    q.writeAhead(NONE, 0, a, 12);
    deepEqual(drain(q, 5), Array.from(a.subarray(0, 5)));
    q.writeAhead(NONE, 0, b, 12);
    deepEqual(drain(q), [...a.subarray(5), ...b, ...rec(10, 1)]);
    equal(q.aheadOut, 2);
  });

  it('goes out when the queue is full; a fifth waiting ESTOP drops the oldest one not yet started (bindings/link.ts EstopAhead)', () => {
    const q = new EgressQueue(20);
    q.push(NONE, 0, rec(20, 1), 20, RecordKind.DATA);
    ok(!q.fits(1));
    const e = [1, 2, 3, 4, 5, 6].map(estopBytes) as [Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array];
    for (const x of e.slice(0, 5)) q.writeAhead(NONE, 0, x, 12);
    equal(q.aheadWaiting, AHEAD_SLOTS);
    equal(q.aheadReplaced, 1);
    deepEqual(drain(q), [...e[1], ...e[2], ...e[3], ...e[4], ...rec(20, 1)], 'the oldest went; the newest, the latch as it is now, stays');
    // The one partly handed over is never the one dropped: the next oldest is.
    q.push(NONE, 0, rec(20, 2), 20, RecordKind.DATA);
    for (const x of e.slice(0, 4)) q.writeAhead(NONE, 0, x, 12);
    deepEqual(drain(q, 5), Array.from(e[0].subarray(0, 5)));
    q.writeAhead(NONE, 0, e[5], 12);
    equal(q.aheadWaiting, AHEAD_SLOTS);
    equal(q.aheadReplaced, 2);
    deepEqual(drain(q), [...e[0].subarray(5), ...e[2], ...e[3], ...e[5], ...rec(20, 2)]);
    equal(q.aheadOut, 8);
  });

  it('drops SAMPLE records older than the budget as it reaches them, only when they would go (§13.6)', () => {
    const q = new EgressQueue(100);
    q.push(NONE, 0, rec(5, 1), 5, RecordKind.SAMPLE, 1000);
    q.push(NONE, 0, rec(5, 2), 5, RecordKind.CONTROL, 1001);
    q.push(NONE, 0, rec(5, 3), 5, RecordKind.SAMPLE, 1002);
    q.push(NONE, 0, rec(5, 4), 5, RecordKind.DATA, 1003);
    q.push(NONE, 0, rec(5, 5), 5, RecordKind.SAMPLE, 1020);
    q.setExpiry(1030, 20);
    deepEqual(drain(q, 100, 0), [], 'behind a shut ack window nothing expires: the queue fills');
    equal(q.records, 5);
    equal(q.expired, 0);
    // At 1030 with a budget of 20: 1000 and 1002 waited 30 and 28 ms (dropped), 1020 waited 10.
    deepEqual(drain(q, 100, 10), [...rec(5, 2), ...rec(5, 4), ...rec(5, 5)], 'the stale samples behind a control record go too; DATA is never dropped');
    equal(q.expired, 2);
    equal(q.framesStarted, 3, 'a dropped sample is no frame the client counts');
    equal(q.bytes, 0);
    q.push(NONE, 0, rec(5, 6), 5, RecordKind.SAMPLE, 2000);
    q.setExpiry(2020, 20);
    deepEqual(drain(q, 100, 10), Array.from(rec(5, 6)), 'waited exactly the budget: it goes');
    q.push(NONE, 0, rec(5, 7), 5, RecordKind.SAMPLE, 2000);
    q.setExpiry(2021, Infinity);
    deepEqual(drain(q, 100, 10), Array.from(rec(5, 7)), 'no budget: nothing expires');
    q.push(NONE, 0, rec(5, 8), 5, RecordKind.SAMPLE, 3000);
    q.setExpiry(3021, 20);
    equal(q.nextRecordLength(1), 0, 'a message transport sees no stale record either');
    equal(q.expired, 3);
  });

  it('a VALUE record is superseded by a newer VALUE of its channel and dropped when reached; others are not (§13.6)', () => {
    const q = new EgressQueue(200);
    q.push(NONE, 0, rec(5, 1), 5, RecordKind.VALUE, 0, 20);
    q.push(NONE, 0, rec(5, 2), 5, RecordKind.VALUE, 0, 21);
    q.push(NONE, 0, rec(5, 3), 5, RecordKind.DATA, 0);
    q.push(NONE, 0, rec(5, 4), 5, RecordKind.VALUE, 0, 20);
    q.push(NONE, 0, rec(5, 5), 5, RecordKind.VALUE, 0, 20);
    q.setExpiry(0, 1000);
    deepEqual(drain(q, 100, 0), [], 'a shut window holds them all');
    deepEqual(drain(q, 100, 10), [...rec(5, 2), ...rec(5, 3), ...rec(5, 5)], 'channel 20 keeps its newest value only');
    equal(q.conflated, 2);
    equal(q.expired, 0);
    // A value partly handed over is never superseded: the receiver's framing stays in step.
    q.push(NONE, 0, rec(5, 6), 5, RecordKind.VALUE, 0, 20);
    deepEqual(drain(q, 2, 10), Array.from(rec(2, 6)));
    q.push(NONE, 0, rec(5, 7), 5, RecordKind.VALUE, 0, 20);
    deepEqual(drain(q, 100, 10), [...rec(5, 6).subarray(2), ...rec(5, 7)]);
    equal(q.conflated, 2);
    // After the record slots wrap (16 of them here), the newest value is still found where it is.
    equal(q.maxRecords, 16);
    for (let i = 0; i < 29; i++) {
      q.push(NONE, 0, rec(5, 50 + i), 5, RecordKind.VALUE, 0, 30);
      drain(q, 100, 10);
    }
    q.push(NONE, 0, rec(5, 90), 5, RecordKind.VALUE, 0, 20);
    q.push(NONE, 0, rec(5, 91), 5, RecordKind.VALUE, 0, 21);
    q.push(NONE, 0, rec(5, 92), 5, RecordKind.VALUE, 0, 20);
    q.push(NONE, 0, rec(5, 93), 5, RecordKind.VALUE, 0, 30);
    deepEqual(drain(q, 100, 10), [...rec(5, 91), ...rec(5, 92), ...rec(5, 93)]);
    equal(q.conflated, 3);
  });

  it('starts DATA records only within the allowance; control records and started DATA go on', () => {
    const q = new EgressQueue(100);
    q.push(NONE, 0, rec(5, 1), 5, RecordKind.DATA);
    q.push(NONE, 0, rec(5, 2), 5, RecordKind.CONTROL);
    q.push(NONE, 0, rec(5, 3), 5, RecordKind.DATA);
    q.push(NONE, 0, rec(5, 4), 5, RecordKind.DATA);
    deepEqual(drain(q, 100, 0), [], 'the head is DATA and none may start');
    deepEqual(drain(q, 2, 1), Array.from(rec(2, 1)));
    equal(q.framesStarted, 1);
    deepEqual(drain(q, 100, 0), [...rec(5, 1).subarray(2), ...rec(5, 2)], 'a started DATA record finishes; control is not gated');
    equal(q.framesStarted, 2, 'control frames count as frames');
    deepEqual(drain(q, 100, 1), Array.from(rec(5, 3)), 'each frame started uses the allowance');
    equal(q.framesStarted, 3);
    equal(q.nextRecordLength(0), 0);
    equal(q.nextRecordLength(1), 5);
    q.writeAhead(NONE, 0, estopBytes(1), 12);
    equal(q.nextRecordLength(0), 12, 'ESTOP is never gated');
    drain(q, 100, 0);
    equal(q.framesStarted, 4, 'an ESTOP is a frame too (§2)');
    q.push(NONE, 0, rec(5, 5), 5, RecordKind.RAW);
    drain(q, 100, 0);
    equal(q.framesStarted, 4, 'raw records are not frames');
  });
});

// ---------------------------------------------------------------------------------------------
// TcpLink

class Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
}

class FakeHub {
  readonly frames: Uint8Array[] = [];
  lost = 0;
  levelChanges = 0;
  attached: Link[] = [];
  attach(link: Link): LinkSink {
    this.attached.push(link);
    return {
      frame: (b, s, e) => {
        this.frames.push(b.slice(s, e));
      },
      lost: () => {
        this.lost++;
      },
      levelChanged: () => {
        this.levelChanges++;
      },
    };
  }
}

class FakeTransport implements LinkTransport {
  kicks = 0;
  closes: number[] = [];
  kick(): void {
    this.kicks++;
  }
  close(wsCode: number): void {
    this.closes.push(wsCode);
  }
}

interface Rig {
  link: TcpLink;
  hub: FakeHub;
  t: FakeTransport;
  clock: Clock;
}

function rig(framing: LinkFramingCode = LinkFraming.LENGTH_PREFIX, extra: { queueBytes?: number; sha1?: (s: string) => Uint8Array } = {}): Rig {
  const clock = new Clock();
  const hub = new FakeHub();
  const link = new TcpLink({ hub, clock, framing, binding: 'tcp', queueBytes: extra.queueBytes ?? MIN_QUEUE_BYTES, sha1: extra.sha1 });
  const t = new FakeTransport();
  link.start(t);
  return { link, hub, t, clock };
}

const w = new CborWriter(new Uint8Array(4096));
function enc(f: Frame): Uint8Array {
  w.reset();
  encodeFrame(f, w);
  return w.buf.slice(0, w.pos);
}
const values = new Float64Array([1, 2, 3, 4, 5, 6]);
function data(seq: number): Uint8Array {
  w.reset();
  encodeData(w, 10, seq, seq, values, 6, false, 0);
  return w.buf.slice(0, w.pos);
}
/** The tags the core hands these frames with (hub/ports.ts Tag): data() and enc'd DATA are channel 10. */
const DATA = tagOf(FrameType.DATA, 0, 10);
const SAMPLE = tagOf(FrameType.DATA, Tag.SAMPLE, 10);
const PONG = tagOf(FrameType.PONG, 0);
function prefixed(frame: Uint8Array): Uint8Array {
  const out = new Uint8Array(2 + frame.length);
  writeLengthPrefix(frame.length, out, 0);
  out.set(frame, 2);
  return out;
}

/** Pulls everything pullable and splits it back into frames (length-prefixed). */
function pullFrames(link: TcpLink): Uint8Array[] {
  const buf = new Uint8Array(1 << 16);
  const n = link.pull(buf, 0, buf.length);
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < n) {
    const len = ((buf[at] as number) << 8) | (buf[at + 1] as number);
    out.push(buf.slice(at + 2, at + 2 + len));
    at += 2 + len;
  }
  equal(at, n, 'whole frames');
  return out;
}

describe('tcp egress: TcpLink', () => {
  it('frames handed straight to the socket count as records handed over and frames started, with the queue\'s own', () => {
    const clock = new Clock();
    const hub = new FakeHub();
    const written: number[] = [];
    const socket = {
      kick(): void {},
      close(): void {},
      room: 65536,
      writeFrame(_header: Uint8Array | null, frame: Uint8Array): void {
        written.push(frame.length);
      },
    };
    const link = new TcpLink({ hub, clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp', queueBytes: MIN_QUEUE_BYTES });
    link.start(socket);
    const q = link.queue;
    const f = data(1);
    for (let i = 0; i < 3; i++) ok(link.send(f, DATA, i + 1));
    equal(written.length, 3, 'straight to the socket');
    equal(q.records, 0);
    equal(q.recordsOut, 3);
    equal(q.framesStarted, 3);
    socket.room = 0;
    ok(link.send(f, DATA, 4));
    ok(link.send(f, DATA, 5));
    equal(q.records, 2, 'no room: queued');
    equal(q.recordsOut, 3);
    equal(q.framesStarted, 3);
    deepEqual(pullFrames(link), [f, f]);
    equal(q.recordsOut, 5, 'the queued ones on top');
    equal(q.framesStarted, 5);
    socket.room = 65536;
    link.writeAhead(estopBytes(1));
    equal(written.length, 4, 'the ESTOP straight to the socket too');
    equal(q.framesStarted, 6, 'an ESTOP is a frame started');
    equal(q.recordsOut, 5, 'and no record');
    equal(q.aheadOut, 1);
    equal(link.outstanding(), 6);
  });

  it('attaches at start, queues whole prefixed frames and kicks the transport', () => {
    const { link, hub, t } = rig();
    deepEqual(hub.attached, [link as Link]);
    equal(link.binding, 'tcp');
    equal(link.mtu, MAX_FRAME_BYTES);
    deepEqual({ ...link.caps }, { binding: 'tcp', broadcast: false, datagram: false, mtu: MAX_FRAME_BYTES, writeAheadSlots: AHEAD_SLOTS, ackForm: AckForm.STREAM });
    ok(Number.isNaN(link.lossRate()), 'a stream measures no loss');
    const f = data(1);
    ok(link.canSend(f.length));
    ok(link.send(f, DATA, 1));
    ok(t.kicks > 0);
    equal(link.queuedBytes(), f.length + 2);
    deepEqual(pullFrames(link), [f]);
    equal(link.queuedBytes(), 0);
    // take: the adapter's own path, `out` exactly what was handed over.
    const g = data(2);
    ok(link.send(g, DATA, 2));
    equal(link.take(1 << 16), g.length + 2);
    deepEqual(link.out, prefixed(g));
    // Once the transport wrote it, the staging area is whole again: shrunk only while handed on.
    link.wrote();
    ok(link.out.length > g.length + 2, 'wrote() makes the staging area whole');
    equal(link.take(1 << 16), 0);
    ok(link.out.length > g.length + 2, 'an empty take leaves the staging area whole');
  });

  it('copies on send: the caller may reuse its buffer at once', () => {
    const { link } = rig();
    const f = data(1);
    const copy = f.slice();
    link.send(f, DATA, 1);
    f.fill(0);
    deepEqual(pullFrames(link), [copy]);
  });

  it('says no when a frame does not fit: a send without room returns false, queues nothing and reads as a full queue', () => {
    const { link, t } = rig();
    const f = data(1);
    let n = 0;
    while (link.canSend(f.length)) {
      ok(link.send(f, DATA, 1));
      n++;
    }
    equal(n, Math.floor(MIN_QUEUE_BYTES / (f.length + 2)));
    ok(link.occupancy() > 0.95);
    ok(link.signal() < 1, 'canSend alone refuses nothing');
    const bytes = link.queuedBytes();
    const kicks = t.kicks;
    equal(link.send(f, DATA, 1), false);
    equal(link.queuedBytes(), bytes, 'a refused frame leaves nothing behind');
    equal(link.queue.records, n);
    equal(t.kicks, kicks);
    equal(link.signal(), SATURATED_SIGNAL, '§13.5.5: the refusal is counted in the detector');
  });

  it('stalledMs: how long a backlog has waited with nothing taken; 0 when empty or moving', () => {
    const { link, clock } = rig();
    equal(link.stalledMs(), 0, 'empty');
    clock.t += 500;
    const f = data(1);
    link.send(f, DATA, 1);
    equal(link.stalledMs(), 0, 'the backlog starts now, not when the queue last moved');
    clock.t += 300;
    link.send(f, DATA, 1);
    equal(link.stalledMs(), 300);
    const buf = new Uint8Array(8);
    link.pull(buf, 0, 8);
    equal(link.stalledMs(), 0, 'the transport took some bytes');
    clock.t += 1200;
    equal(link.stalledMs(), 1200);
    link.pull(new Uint8Array(1 << 12), 0, 1 << 12);
    equal(link.queuedBytes(), 0);
    equal(link.stalledMs(), 0, 'drained');
    clock.t += 100;
    link.writeAhead(estopBytes(1));
    clock.t += 40;
    equal(link.stalledMs(), 40, 'an ESTOP waiting is a backlog too');
  });

  it('feeds the watermark: level 1 after > 50 % for 1 s, 2 after > 90 % for 1 s, back down on drain', () => {
    // The exact window edges are the detector's (test/core/detector tests); here a millisecond
    // either side of each window shows that the link samples its queue and re-judges on level().
    const { link, clock, hub } = rig();
    const f = data(1);
    while (link.queuedBytes() < MIN_QUEUE_BYTES * 0.6) ok(link.send(f, DATA, 1));
    equal(link.level, 0);
    clock.t += 999;
    equal(link.level, 0);
    equal(hub.levelChanges, 0);
    clock.t += 2;
    equal(link.level, 1, '§10.3: sustained > 50 % over 1 s');
    equal(hub.levelChanges, 1, 'the new level is reported to the core');
    equal(link.level, 1);
    equal(hub.levelChanges, 1, 'once');
    // Filled without asking for more than fits: no frame is turned away (that reads full, below).
    while (link.queue.fits(f.length + 2)) ok(link.send(f, DATA, 1));
    ok(link.signal() > 0.9 && link.signal() < 1);
    const full = clock.t;
    link.writeAhead(estopBytes(1));
    clock.t = full + 999;
    equal(link.level, 1);
    clock.t = full + 1001;
    equal(link.level, 2, '> 90 % for 1 s');
    clock.t += 1;
    pullFrames(link);
    equal(link.signal(), 0);
    const drained = clock.t;
    clock.t = drained + 999;
    equal(link.level, 2);
    clock.t = drained + 1001;
    equal(link.level, 1, 'below 50 % for 1 s: back to 1');
    clock.t = drained + 4999;
    equal(link.level, 1);
    clock.t = drained + 5001;
    equal(link.level, 0, 'below 20 % for 5 s: clear');
    equal(hub.levelChanges, 4, '0 → 1 → 2 → 1 → 0, each reported');
  });

  it('a clear level with no deadline ahead stands without the clock; input since, or a reset of the detector, has it judged again', () => {
    const { link, clock, hub } = rig();
    let reads = 0;
    clock.now = function (this: Clock): number {
      reads++;
      return this.t;
    };
    equal(link.level, 0);
    ok(reads > 0, 'the first read judges at the clock');
    ok(link.detector.quietUntil === Infinity, 'an empty queue at level 0: no deadline ahead');
    reads = 0;
    clock.t += 5000;
    equal(link.level, 0);
    equal(reads, 0, 'the level stands: the clock is not read');
    const f = data(1);
    while (link.queuedBytes() < MIN_QUEUE_BYTES * 0.6) ok(link.send(f, DATA, 1));
    reads = 0;
    equal(link.level, 0);
    ok(reads > 0, 'input since: judged again');
    clock.t += 1001;
    equal(link.level, 1, 'and the watermark still reaches level 1');
    pullFrames(link);
    clock.t += 5001;
    equal(link.level, 0);
    ok(link.detector.quietUntil === Infinity, 'drained and clear again: no deadline ahead');
    reads = 0;
    equal(link.level, 0);
    equal(reads, 0);
    link.detector.reset(clock.t);
    equal(link.level, 0);
    ok(reads > 0, 'a reset of the detector is judged as input');
    equal(hub.levelChanges, 2, '0 → 1 → 0');
  });

  it('sustained overload on the device’s 6 KiB queue: each pull leaves 76 %, each pull finds it full: level 2 (§13.5.1)', () => {
    // lwIP takes one 1460-byte segment every 50 ms (29 kB/s); the core offers a 77-byte frame
    // every millisecond (79 kB/s with its prefix) and the queue refuses what does not fit.
    const { link, clock } = rig(LinkFraming.LENGTH_PREFIX, { queueBytes: 6144 });
    const f = enc({ type: FrameType.DATA, channelId: 10, seq: 1, t: 1, values: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8] });
    equal(f.length, 77);
    const seg = new Uint8Array(1460);
    let trough = 1;
    let reached = -1;
    const t0 = clock.t;
    for (let ms = 1; ms <= 3000; ms++) {
      clock.t = t0 + ms;
      link.send(f, DATA, ms); // refused when it does not fit
      if (ms % 50 === 0) {
        equal(link.pull(seg, 0, seg.length), seg.length);
        if (ms >= 500) trough = Math.min(trough, link.occupancy());
      }
      if (reached < 0 && link.level === 2) reached = ms;
    }
    ok(trough < 0.77, `right after a pull the queue holds ${trough}`);
    ok(reached > 0 && reached <= 1600, `level 2 after ${reached} ms`);
    equal(link.level, 2);
    ok(link.signal() > 0.9, 'every pull finds the queue above 90 %');
  });

  it('a healthy link whose queue cycles stays at level 0: a burst to 95 % every 400 ms, pulled in four segments', () => {
    const { link, clock } = rig(LinkFraming.LENGTH_PREFIX, { queueBytes: 6144 });
    const f = data(1);
    const seg = new Uint8Array(1460);
    let peak = 0;
    let maxLevel = 0;
    const t0 = clock.t;
    for (let ms = 1; ms <= 20_000; ms++) {
      clock.t = t0 + ms;
      if (ms % 400 === 0) while (link.queuedBytes() + f.length + 2 <= 6144 * 0.95) ok(link.send(f, DATA, 1), 'the burst fits');
      peak = Math.max(peak, link.occupancy());
      if (ms % 20 === 0) link.pull(seg, 0, seg.length);
      maxLevel = Math.max(maxLevel, link.level);
    }
    ok(peak > 0.9, `the burst fills the queue to ${peak}`);
    equal(maxLevel, 0);
  });

  it('a frame turned away reads as a full queue: saturated, level 2 after 500 ms (§13.5.5)', () => {
    const { link, clock } = rig();
    const big = enc({ type: FrameType.DATA, channelId: 10, seq: 1, t: 1, values: new Array<number>(110).fill(0.1) });
    while (link.queue.fits(big.length + 2)) ok(link.send(big, DATA, 1));
    const before = link.signal();
    ok(before < 0.9, `the queue holds ${before}: the next ${big.length}-byte frame does not fit`);
    const t0 = clock.t;
    ok(!link.send(big, DATA, 1));
    equal(link.signal(), 1);
    const seg = new Uint8Array(200);
    for (let ms = 50; ms <= 500; ms += 50) {
      clock.t = t0 + ms - 1;
      equal(link.level, 0, `at ${ms - 1} ms`);
      clock.t = t0 + ms;
      link.pull(seg, 0, seg.length); // the socket takes a little, and the core offers again
      while (link.send(big, DATA, 1)); // until one is turned away
    }
    equal(link.level, 2, 'every pull found a queue that had turned a frame away');
    ok(link.occupancy() < 0.9);
  });

  it('sample budget: 10 ms until a round trip is timed, then half the least RTT lately, within 2..250 ms', () => {
    const { link, clock } = rig(LinkFraming.LENGTH_PREFIX, { queueBytes: 65536 });
    equal(link.sampleBudgetMs(), SAMPLE_BUDGET_DEFAULT_MS);
    const f = data(1);
    const ackAfter = (ms: number, frames = PROMPT_ACK_FRAMES): void => {
      for (let i = 0; i < frames; i++) link.send(f, DATA, 1);
      pullFrames(link);
      clock.t += ms;
      // The core decodes the client's ACK (key 28) and hands the count on.
      link.acked(link.queue.framesStarted);
    };
    ackAfter(12, PROMPT_ACK_FRAMES - 1);
    equal(link.sampleBudgetMs(), SAMPLE_BUDGET_DEFAULT_MS, 'an ACK on the client\'s timer times the client as well: not sampled');
    equal(link.rtt.rttMs(), 12, 'the smoothed RTT takes it all the same');
    ackAfter(30);
    equal(link.sampleBudgetMs(), 15);
    ackAfter(80);
    equal(link.sampleBudgetMs(), 15, 'the least of the window: queueing inflates the rest');
    ackAfter(3);
    equal(link.sampleBudgetMs(), SAMPLE_BUDGET_FLOOR_MS);
    clock.t += MIN_RTT_WINDOW_MS + 1;
    ackAfter(900);
    equal(link.sampleBudgetMs(), SAMPLE_BUDGET_MAX_MS, 'an old least RTT ages out; a long one is capped');
  });

  it('a STREAM sample that waited past the budget is dropped unsent; the link then reads saturated (§13.6)', () => {
    const { link, clock, t } = rig(LinkFraming.LENGTH_PREFIX, { queueBytes: 8192 });
    const f = data(1);
    const budget = link.sampleBudgetMs();
    const t0 = clock.t;
    link.send(f, SAMPLE, 1);
    link.send(f, DATA, 1);
    clock.t += budget;
    link.send(data(2), SAMPLE, 2);
    clock.t += 1;
    // The first sample waited budget + 1: dropped. The second is not sheddable; the third waited 1 ms.
    deepEqual(pullFrames(link), [f, data(2)]);
    equal(link.queue.expired, 1);
    ok(t.kicks > 0);
    // Stale drops at every take for 500 ms read saturated: level 2, though the queue is empty.
    for (let ms = 0; ms <= 500; ms += 50) {
      clock.t = t0 + budget + 1 + ms;
      link.send(f, SAMPLE, 1);
      clock.t += budget + 1;
      link.send(f, SAMPLE, 1);
      pullFrames(link);
    }
    equal(link.queuedBytes(), 0);
    equal(link.level, 2, 'samples going stale at every take read as a saturated link');
    // No more drops: after STALE_HOLD_MS the signal is the queue's own, and the level steps down (§10.3).
    const last = clock.t;
    clock.t = last + STALE_HOLD_MS - 1;
    equal(link.level, 2);
    clock.t = last + STALE_HOLD_MS;
    equal(link.level, 2, 'the hold is over: the queue (empty) is judged from here');
    clock.t = last + STALE_HOLD_MS + 999;
    equal(link.level, 2);
    clock.t = last + STALE_HOLD_MS + 1000;
    equal(link.level, 1, 'below the congested threshold for 1 s: 2 → 1');
  });

  it('a message transport gets the very record nextMessageLength sized, though the clock moved on (§13.6)', () => {
    const { link, clock } = rig(LinkFraming.MESSAGE);
    const a = data(1);
    const b = data(2);
    const c = enc({ type: FrameType.PONG, t0: 1, t1: 2 });
    link.send(a, SAMPLE, 1);
    clock.t += SAMPLE_BUDGET_DEFAULT_MS;
    link.send(b, SAMPLE, 1);
    link.send(c, PONG, 0);
    const len = link.nextMessageLength();
    equal(len, a.length, 'A waited exactly the budget: it goes');
    clock.t += 1;
    const buf = new Uint8Array(len);
    equal(link.pull(buf, 0, len), len);
    deepEqual(buf, a, 'A whole, not B and the head of C');
    equal(link.queue.expired, 0);
    equal(link.nextMessageLength(), b.length);
  });

  it('a take that only drops stale samples leaves the detector with the queue as it is: an idle link recovers (§13.6)', () => {
    const { link, clock } = rig(LinkFraming.LENGTH_PREFIX, { queueBytes: 8192 });
    const f = data(1);
    while (link.canSend(f.length)) link.send(f, SAMPLE, 1);
    clock.t += SAMPLE_BUDGET_DEFAULT_MS + 1;
    equal(link.pull(new Uint8Array(4096), 0, 4096), 0, 'every sample stale: nothing handed over');
    equal(link.queuedBytes(), 0);
    const dropped = clock.t;
    equal(link.signal(), SATURATED_SIGNAL, 'held full while the drops are fresh');
    clock.t = dropped + STALE_HOLD_MS;
    link.level;
    equal(link.signal(), 0, 'then the queue, empty');
    equal(link.occupancy(), 0);
    clock.t = dropped + 60000;
    equal(link.level, 0, 'an idle link is not left congested');
    equal(link.unsent(), link.queue.expired);
  });

  it('writes ESTOP ahead, prefixed, even with the queue full', () => {
    const { link } = rig();
    const f = data(7);
    while (link.canSend(f.length)) link.send(f, DATA, 1);
    const e = estopBytes(3);
    link.writeAhead(e);
    const frames = pullFrames(link);
    deepEqual(frames[0], e);
    equal(decodeEstop(frames[0] as Uint8Array, 0, 12).seq, 3);
    equal(frames.length, 1 + Math.floor(MIN_QUEUE_BYTES / (f.length + 2)));
  });

  it('applies the ack window, the ack lag and RTT once the client acknowledges; ACK frames go to the hub, which hands the count on', () => {
    const { link, hub, clock } = rig(LinkFraming.LENGTH_PREFIX, { queueBytes: 65536 });
    const f = data(1);
    for (let i = 0; i < 300; i++) link.send(f, DATA, 1);
    equal(pullFrames(link).length, 300, 'no window before the first ACK');
    for (let i = 0; i < 300; i++) link.send(f, DATA, 1);
    clock.t += 40;
    const ack = prefixed(enc({ type: FrameType.ACK, acked: 290 }));
    link.input(ack, 0, ack.length);
    equal(hub.frames.length, 1);
    equal(decodeFrame(hub.frames[0] as Uint8Array, 0, (hub.frames[0] as Uint8Array).length).type, FrameType.ACK);
    ok(!link.ackSeen, 'the link leaves the ACK frame to the core, which decodes key 28 and calls acked');
    equal(link.outstanding(), 300, 'nor counts it as acknowledged');
    link.acked(290);
    ok(link.ackSeen);
    equal(link.acks.acked, 290);
    equal(link.rtt.rttMs(), 40, 'handed at t, acknowledged at t + 40');
    equal(pullFrames(link).length, DEFAULT_ACK_WINDOW_FRAMES - 10, '10 outstanding, window 128');
    equal(link.outstanding(), DEFAULT_ACK_WINDOW_FRAMES);
    equal(link.detector.lag(), DEFAULT_ACK_WINDOW_FRAMES);
    ok(DEFAULT_ACK_WINDOW_FRAMES > ACK_LAG_CONGESTED_FRAMES);
    equal(pullFrames(link).length, 0);
    // Control frames and ESTOP are not held by the window (they count toward it all the same).
    const ping = enc({ type: FrameType.PONG, t0: 1, t1: 2 });
    link.send(ping, PONG, 0);
    link.writeAhead(estopBytes(1));
    const e = pullFrames(link);
    deepEqual(e, [estopBytes(1)], 'the ESTOP goes at once; the PONG waits behind DATA, records keep their order');
    link.acked(300);
    equal(pullFrames(link).length, 9, '119 outstanding with the ESTOP: 9 more DATA');
    link.acked(100000);
    equal(link.acks.acked, 300 + DEFAULT_ACK_WINDOW_FRAMES, 'an ACK beyond what was handed over reads as no lag');
    equal(link.outstanding(), 0);
  });

  it('reads the ACK count modulo 2^32', () => {
    const { link } = rig();
    const f = data(1);
    link.send(f, DATA, 1);
    link.acks.started = 0x100000000 + 4;
    pullFrames(link);
    equal(link.acks.started, 0x100000000 + 5);
    link.acked(3);
    equal(link.acks.acked, 0x100000000 + 3);
    equal(link.outstanding(), 2);
  });

  it('answers an oversize frame with NACK TOO_LARGE, discards it and carries on', () => {
    const { link, hub, t } = rig();
    const good = prefixed(enc({ type: FrameType.PING, t0: 5 }));
    const big = new Uint8Array(2 + MAX_FRAME_BYTES + 1);
    writeLengthPrefix(MAX_FRAME_BYTES + 1, big, 0);
    big[2] = 0xa1; // looks like a frame; still refused by its length alone
    const stream = new Uint8Array([...good, ...big, ...good]);
    for (let i = 0; i < stream.length; i += 7) link.input(stream, i, Math.min(stream.length, i + 7));
    equal(hub.frames.length, 2, 'the frames on both sides of it were delivered');
    equal(hub.lost, 0);
    deepEqual(t.closes, []);
    equal(link.state, LinkState.OPEN);
    equal(link.refused, 1);
    const out = pullFrames(link);
    equal(out.length, 1);
    const nack = decodeFrame(out[0] as Uint8Array, 0, (out[0] as Uint8Array).length);
    ok(nack.type === FrameType.NACK && nack.code === Nack.TOO_LARGE);
  });

  it('closes after more than 10 refusals within a second (§12.5)', () => {
    const { link, hub, t, clock } = rig();
    const big = new Uint8Array([(MAX_FRAME_BYTES + 1) >>> 8, (MAX_FRAME_BYTES + 1) & 0xff, ...new Uint8Array(MAX_FRAME_BYTES + 1)]);
    for (let i = 0; i < 10; i++) link.input(big, 0, big.length);
    deepEqual(t.closes, []);
    clock.t += 1001; // those leave the one-second window
    for (let i = 0; i < 10; i++) link.input(big, 0, big.length);
    deepEqual(t.closes, []);
    link.input(big, 0, big.length);
    deepEqual(t.closes, [WS_POLICY_VIOLATION]);
    equal(hub.lost, 1);
    equal(link.state, LinkState.CLOSING);
  });

  it('reports a lost transport once; a close by the core is not reported back', () => {
    const a = rig();
    a.link.transportClosed();
    a.link.transportClosed();
    equal(a.hub.lost, 1);
    ok(a.link.closed);
    ok(!a.link.canSend(1));
    const f = data(1);
    equal(a.link.send(f, DATA, 1), false, 'a closed link queues nothing');
    equal(a.link.queuedBytes(), 0);
    const b = rig();
    b.link.close();
    deepEqual(b.t.closes, [1000]);
    b.link.transportClosed();
    equal(b.hub.lost, 0);
  });
});

describe('tcp egress: TcpLink over messages (ws on the host)', () => {
  it('one record per message, no header; ESTOP first', () => {
    const { link } = rig(LinkFraming.MESSAGE);
    const f = data(1);
    link.send(f, DATA, 1);
    link.writeAhead(estopBytes(9));
    equal(link.nextMessageLength(), 12);
    const buf = new Uint8Array(12);
    link.pull(buf, 0, 12);
    deepEqual(buf, estopBytes(9));
    equal(link.nextMessageLength(), f.length);
  });

  it('answers text with NACK MALFORMED and an oversize message with NACK TOO_LARGE, and carries on', () => {
    const a = rig(LinkFraming.MESSAGE);
    const ping = enc({ type: FrameType.PING, t0: 1 });
    a.link.message(ping, 0, ping.length, true);
    a.link.message(ping, 0, ping.length, false);
    const big = new Uint8Array(MAX_FRAME_BYTES + 1);
    a.link.message(big, 0, big.length, true);
    a.link.message(ping, 0, ping.length, true);
    equal(a.hub.frames.length, 2, 'only the binary frames within the limit reach the hub');
    deepEqual(a.t.closes, []);
    equal(a.hub.lost, 0);
    const codes: number[] = [];
    for (let len = a.link.nextMessageLength(); len > 0; len = a.link.nextMessageLength()) {
      const m = new Uint8Array(len);
      a.link.pull(m, 0, len);
      const f = decodeFrame(m, 0, len);
      if (f.type === FrameType.NACK) codes.push(f.code);
    }
    deepEqual(codes, [Nack.MALFORMED, Nack.TOO_LARGE]);
  });
});

describe('tcp egress: TcpLink speaking WebSocket itself (the device)', () => {
  const KEY = 'dGhlIHNhbXBsZSBub25jZQ==';
  const REQUEST = 'GET / HTTP/1.1\r\nHost: hub\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ' + KEY + '\r\nSec-WebSocket-Version: 13\r\n\r\n';
  const fakeSha1 = (): Uint8Array => new Uint8Array(20);
  function ascii(s: string): Uint8Array {
    const b = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  }
  function text(b: Uint8Array): string {
    let s = '';
    for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i] as number);
    return s;
  }
  function masked(opcode: number, payload: Uint8Array): Uint8Array {
    const key = [1, 2, 3, 4];
    const out = new Uint8Array(6 + payload.length);
    out[0] = 0x80 | opcode;
    out[1] = 0x80 | payload.length;
    out.set(key, 2);
    for (let i = 0; i < payload.length; i++) out[6 + i] = (payload[i] as number) ^ (key[i & 3] as number);
    return out;
  }
  function pullAll(link: TcpLink): Uint8Array {
    const b = new Uint8Array(1 << 16);
    return b.slice(0, link.pull(b, 0, b.length));
  }

  it('upgrades, then attaches to the hub, then carries binary frames both ways', () => {
    const { link, hub } = rig(LinkFraming.WS_SERVER, { sha1: fakeSha1 });
    equal(hub.attached.length, 0, 'not attached before the upgrade');
    ok(!link.canSend(1));
    equal(link.send(data(1), DATA, 1), false, 'nothing is queued before the upgrade');
    const req = ascii(REQUEST);
    const ping = enc({ type: FrameType.PING, t0: 3 });
    const both = new Uint8Array([...req, ...masked(WsOpcode.BINARY, ping)]);
    for (let i = 0; i < both.length; i++) link.input(both, i, i + 1);
    equal(hub.attached.length, 1);
    deepEqual(hub.frames, [ping]);
    equal(text(pullAll(link)), 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n');
    const f = data(2);
    link.send(f, DATA, 1);
    link.writeAhead(estopBytes(4));
    deepEqual(pullAll(link), new Uint8Array([0x82, 12, ...estopBytes(4), 0x82, f.length, ...f]));
  });

  it('answers ping with pong, and a close with a close; the session hears the loss', () => {
    const { link, hub, t } = rig(LinkFraming.WS_SERVER, { sha1: fakeSha1 });
    const req = ascii(REQUEST);
    link.input(req, 0, req.length);
    pullAll(link);
    const p = masked(WsOpcode.PING, new Uint8Array([7, 8]));
    link.input(p, 0, p.length);
    deepEqual(pullAll(link), new Uint8Array([0x8a, 2, 7, 8]));
    const c = masked(WsOpcode.CLOSE, new Uint8Array([0x03, 0xe8]));
    link.input(c, 0, c.length);
    equal(hub.lost, 1);
    deepEqual(t.closes, [1000]);
    deepEqual(pullAll(link), new Uint8Array([0x88, 2, 0x03, 0xe8]));
  });

  it('refuses a bad upgrade with 400 and never attaches', () => {
    const { link, hub, t } = rig(LinkFraming.WS_SERVER, { sha1: fakeSha1 });
    const req = ascii(REQUEST.replace('Version: 13', 'Version: 7'));
    link.input(req, 0, req.length);
    equal(hub.attached.length, 0);
    equal(t.closes.length, 1);
    ok(text(pullAll(link)).startsWith('HTTP/1.1 400 Bad Request\r\n'));
  });

  it('closes with 1002 on an unmasked frame; answers an oversize message NACK TOO_LARGE and carries on', () => {
    const a = rig(LinkFraming.WS_SERVER, { sha1: fakeSha1 });
    const req = ascii(REQUEST);
    a.link.input(req, 0, req.length);
    pullAll(a.link);
    const unmasked = new Uint8Array([0x82, 1, 0]);
    a.link.input(unmasked, 0, unmasked.length);
    deepEqual(a.t.closes, [1002]);
    equal(a.hub.lost, 1);
    deepEqual(pullAll(a.link), new Uint8Array([0x88, 2, 0x03, 0xea]));
    const b = rig(LinkFraming.WS_SERVER, { sha1: fakeSha1 });
    b.link.input(req, 0, req.length);
    pullAll(b.link);
    const ping = enc({ type: FrameType.PING, t0: 3 });
    const big = new Uint8Array(MAX_FRAME_BYTES + 1);
    const both = new Uint8Array([...masked(WsOpcode.BINARY, ping), 0x82, 0x80 | 126, big.length >>> 8, big.length & 0xff, 0, 0, 0, 0, ...big, ...masked(WsOpcode.BINARY, ping)]);
    b.link.input(both, 0, both.length);
    deepEqual(b.t.closes, []);
    equal(b.hub.frames.length, 2);
    const out = pullAll(b.link);
    equal(out[0], 0x82);
    const nack = decodeFrame(out, 2, 2 + (out[1] as number));
    ok(nack.type === FrameType.NACK && nack.code === Nack.TOO_LARGE);
  });
});

describe('bindings/link: estimators', () => {
  it('ThroughputEstimator: bytes per second over the clock, decaying when idle', () => {
    const e = new ThroughputEstimator(0, 100, 1000);
    e.add(1000, 0);
    equal(e.bps(50), 0, 'no window closed yet');
    equal(e.bps(100), 10000, 'the first window sets it');
    for (let t = 100; t < 5100; t += 100) e.add(500, t);
    const steady = e.bps(5100);
    ok(Math.abs(steady - 5000) < 50, `converges to 5000 B/s, got ${steady}`);
    const later = e.bps(8100);
    ok(later < steady * 0.06, `decays toward 0 when nothing is carried, got ${later}`);
    e.reset(9000);
    equal(e.bps(9500), 0);
  });

  it('MinRttFilter and WindowedMax: the least / greatest over two half-window buckets', () => {
    const m = new MinRttFilter(1000);
    equal(m.value(), 0, 'unknown');
    m.sample(40, 0);
    m.sample(60, 100);
    equal(m.value(), 40);
    m.sample(NaN, 200);
    m.sample(-1, 200);
    equal(m.value(), 40);
    m.sample(70, 1001);
    equal(m.value(), 70, 'the least aged out: the next sample stands');
    m.sample(20, 1002);
    equal(m.value(), 20);
    const x = new WindowedMax(1000);
    ok(!x.known);
    x.sample(0, 0);
    ok(x.known);
    equal(x.value(), 0);
    x.sample(30, 10);
    x.sample(5, 500);
    equal(x.value(), 30);
    x.sample(5, 1011);
    equal(x.value(), 5);
    // A long value ages out while shorter ones keep coming: the window still holds them, and a
    // lone small sample after it does not stand for the whole window.
    const y = new WindowedMax(1000);
    y.sample(50, 0);
    for (let t = 100; t <= 1400; t += 100) y.sample(10 + (t % 400) / 10, t);
    equal(y.value(), 40, 'the greatest of the last buckets (the 50 aged out)');
    y.sample(2, 1500);
    equal(y.value(), 40, 'not 2');
  });

  it('sampleBudgetMs: the default when unknown, else half the RTT within the floor and the cap', () => {
    equal(sampleBudgetMs(0), SAMPLE_BUDGET_DEFAULT_MS);
    equal(sampleBudgetMs(NaN), SAMPLE_BUDGET_DEFAULT_MS);
    equal(sampleBudgetMs(3.9), SAMPLE_BUDGET_FLOOR_MS);
    equal(sampleBudgetMs(37), 18.5);
    equal(sampleBudgetMs(5000), SAMPLE_BUDGET_MAX_MS);
  });

  it('ThroughputEstimator with a window and time constant of its own (not the defaults)', () => {
    const e = new ThroughputEstimator(0, 200, 500);
    e.add(1000, 0);
    equal(e.bps(100), 0, 'a 200 ms window is still open at 100 ms');
    equal(e.bps(200), 5000, 'and sets the rate when it closes');
    e.add(0, 400);
    const decayed = e.bps(400);
    ok(Math.abs(decayed - 5000 * Math.exp(-200 / 500)) < 1e-9, `an empty window decays it with the 500 ms time constant, got ${decayed}`);
  });

  it('MinRttFilter and RttEstimator in their owner\'s store: the same answers, nothing outside touched', () => {
    const store = new Float64Array(2 + WINDOWED_NUMBERS + RTT_NUMBERS + 2).fill(-7);
    const m = new MinRttFilter(1000, store, 2);
    const r = new RttEstimator(store, 2 + WINDOWED_NUMBERS);
    const m0 = new MinRttFilter(1000);
    const r0 = new RttEstimator();
    for (const [v, t] of [[40, 0], [60, 100], [70, 1001], [20, 1002], [90, 2600]] as const) {
      m.sample(v, t);
      m0.sample(v, t);
      r.sample(v);
      r0.sample(v);
      equal(m.value(), m0.value(), `least at ${t}`);
      equal(r.rttMs(), r0.rttMs());
      equal(r.varianceMs(), r0.varianceMs());
    }
    deepEqual([store[0], store[1], store[store.length - 2], store[store.length - 1]], [-7, -7, -7, -7]);
    throws(() => new RttEstimator(store, store.length - 1), (e) => e instanceof RangeError);
    throws(() => new MinRttFilter(1000, store, store.length - 2), (e) => e instanceof RangeError);
  });

  it('a default its prototype holds gives way to an own value even when the prototype is frozen (the device freezes modules)', () => {
    class Defaults {
      declare v: number;
    }
    Object.assign(Defaults.prototype, { v: 1 });
    Object.freeze(Defaults.prototype);
    const d = new Defaults();
    ownValue(d, 'v', 2);
    equal(d.v, 2);
    d.v = 3;
    equal(d.v, 3, 'and stays writable');
    equal(new Defaults().v, 1, 'the others keep the default');
    const untimed = new AckCounter();
    equal(untimed.handedAt, null, 'an untimed AckCounter has no ring');
    equal(untimed.mask, 0);
  });

  it('RttEstimator: RFC 6298 smoothing', () => {
    const r = new RttEstimator();
    equal(r.rttMs(), 0);
    r.sample(100);
    equal(r.rttMs(), 100);
    equal(r.varianceMs(), 50);
    r.sample(20);
    equal(r.rttMs(), 90);
    equal(r.varianceMs(), 57.5);
    r.sample(NaN);
    r.sample(-1);
    equal(r.samples(), 2);
  });
});

// ---------------------------------------------------------------------------------------------
// The client library's ACK count (client/core.ts, §5.12 key 28) against the link's count of
// frames handed to the socket (EgressQueue.framesStarted): the ack lag the §10.3 detector reads
// is their difference, so the two must count the same frames (every frame, ESTOP included).

/** One-shot timers on the hub's virtual clock, fired in (time, order set) order. */
class Timers implements ClientClock {
  private list: { at: number; seq: number; fn: () => void; live: boolean }[] = [];
  private seq = 0;
  constructor(private readonly clock: VirtualClock) {}
  now(): number {
    return this.clock.now();
  }
  setTimer(ms: number, fn: () => void): unknown {
    const t = { at: this.clock.now() + Math.max(0, ms), seq: this.seq++, fn, live: true };
    this.list.push(t);
    return t;
  }
  clearTimer(h: unknown): void {
    (h as { live: boolean }).live = false;
  }
  fireDue(): void {
    for (;;) {
      let best: { at: number; seq: number; fn: () => void; live: boolean } | undefined;
      for (const t of this.list) if (t.live && t.at <= this.clock.now() && (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq))) best = t;
      if (!best) break;
      best.live = false;
      best.fn();
    }
    this.list = this.list.filter((t) => t.live);
  }
}

/**
 * A TCP connection in memory: the hub side is a real TcpLink (LENGTH_PREFIX) on a real Hub, the
 * client side the library's length-prefix reassembler; each direction delivers in order after
 * `latencyMs`, hub → client at `bytesPerMs`.
 */
class MemTcp implements LinkTransport, ClientTransport {
  readonly link: TcpLink;
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  /** Frames the client library was handed, and every ACK it sent with that count at the time. */
  delivered = 0;
  readonly acks: { acked: number; delivered: number }[] = [];
  private readonly down: { at: number; bytes: Uint8Array }[] = [];
  private readonly up: { at: number; bytes: Uint8Array }[] = [];
  private readonly reasm: LengthPrefixReassembler;
  private readonly buf = new Uint8Array(8192);

  constructor(
    hub: HubAttachLike,
    private readonly clock: VirtualClock,
    private readonly latencyMs: number,
    private readonly bytesPerMs: number,
  ) {
    this.link = new TcpLink({ hub, clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp', queueBytes: 16384 });
    this.reasm = new LengthPrefixReassembler(
      (frame) => {
        this.delivered++;
        if (this.onFrame) this.onFrame(frame);
      },
      () => fail('the stream broke'),
    );
    this.link.start(this);
  }

  // LinkTransport: the socket pulls on every step.
  kick(): void {}
  close(): void {}

  // ClientTransport
  send(bytes: Uint8Array): void {
    const f = decodeFrame(bytes, 0, bytes.length);
    if (f.type === FrameType.ACK && 'acked' in f) this.acks.push({ acked: f.acked, delivered: this.delivered });
    this.up.push({ at: this.clock.now() + this.latencyMs, bytes: lengthPrefixed(bytes) });
  }

  /** One step of `ms`: the socket takes what the wire carries, and what is due arrives. */
  step(ms: number): void {
    const now = this.clock.now();
    const n = this.link.pull(this.buf, 0, Math.min(this.buf.length, this.bytesPerMs * ms));
    if (n > 0) this.down.push({ at: now + this.latencyMs, bytes: this.buf.slice(0, n) });
    while (this.up.length > 0 && this.up[0]!.at <= now) {
      const b = this.up.shift()!.bytes;
      this.link.input(b, 0, b.length);
    }
    while (this.down.length > 0 && this.down[0]!.at <= now) this.reasm.push(this.down.shift()!.bytes);
  }
}

type HubAttachLike = ConstructorParameters<typeof TcpLink>[0]['hub'];

async function settleAll(): Promise<void> {
  for (let i = 0; i < 8; i++) await Promise.resolve();
}

describe('tcp egress: the client’s ACK count against the link’s (§13.2, key 28)', () => {
  it('the hub\'s ack lag leaves out the frames the binding dropped unsent (Link.unsent, §13.6)', () => {
    const fx = makeHub();
    const link = new TcpLink({ hub: fx.hub, clock: fx.clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp' });
    link.start(new FakeTransport());
    const imu = fx.catalog.byName('imu')!.id;
    const hello = prefixed(enc({ type: FrameType.HELLO, version: 1, name: 'x', subWishes: [{ channelId: imu, wishedRateHz: 50 }] }));
    link.input(hello, 0, hello.length);
    const socket = new Uint8Array(1 << 16);
    link.pull(socket, 0, socket.length);
    const six = new Float64Array(6);
    // The socket takes nothing for 200 ms: the samples queued meanwhile go stale.
    for (let i = 0; i < 10; i++) {
      fx.clock.advance(20);
      fx.hub.publishSample(imu, fx.clock.now(), six, 6);
    }
    link.pull(socket, 0, socket.length);
    ok(link.queue.expired >= 9, `${link.queue.expired} dropped stale`);
    const ack = prefixed(enc({ type: FrameType.ACK, acked: link.queue.framesStarted }));
    link.input(ack, 0, ack.length);
    equal(link.outstanding(), 0, 'the client has every frame the socket took');
    const view = fx.hub.sessions()[0]!;
    equal(view.ackLag, 0, 'nor does the hub count the dropped ones as owed');
  });

  it('a calm session over a real Hub: the ack lag stays below the congestion threshold for 60 s, and every ACK counts every frame', async () => {
    const fx = makeHub();
    const timers = new Timers(fx.clock);
    const mem = new MemTcp(fx.hub, fx.clock, 4, 1000);
    const imu = fx.catalog.byName('imu')!.id;
    const odom = fx.catalog.byName('odom')!.id;
    const client = new HubClient({
      name: 'console',
      credential: OPERATOR_CREDENTIAL,
      subscriptions: [
        { channelId: imu, wishedRateHz: 50 },
        { channelId: odom, wishedRateHz: 20 },
      ],
      transport: () => Promise.resolve(mem),
      clock: timers,
      catalog: fx.catalog,
      random: () => 0.5,
    });
    const six = new Float64Array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
    const STEP = 5;
    let maxLag = 0;
    let maxLevel = 0;
    let lastTick = fx.clock.now();
    const run = async (ms: number): Promise<void> => {
      for (let t = 0; t < ms; t += STEP) {
        fx.clock.advance(STEP);
        const now = fx.clock.now();
        fx.hub.publishSample(imu, now, six, 6);
        if (now % 20 === 0) fx.hub.publishSample(odom, now, six, 6);
        timers.fireDue();
        mem.step(STEP);
        if (now - lastTick >= 10) {
          lastTick = now;
          fx.hub.tick();
        }
        await settleAll();
        maxLag = Math.max(maxLag, mem.link.ackLag());
        maxLevel = Math.max(maxLevel, mem.link.level);
      }
    };
    const connected = client.connect();
    await run(100);
    await connected;
    // The owner pings every 200 ms (§6.8): five PONGs a second that a DATA-only count would miss.
    const echo = client.takeControl();
    await run(100);
    equal((await echo).result, 0);
    ok(client.ownsControl);
    await run(60_000);
    ok(maxLag < ACK_LAG_CONGESTED_FRAMES, `the ack lag peaked at ${maxLag} frames`);
    equal(maxLevel, 0, 'a calm link is never congested');
    for (const a of mem.acks) equal(a.acked, a.delivered, 'key 28 counts every frame the client was handed');
    ok(mem.link.ackSeen, 'the client acknowledges');
    ok(maxLag >= ACK_EVERY_FRAMES - 1, `the lag swings with the ACK cadence, up to ${maxLag} (the test can see it)`);
    ok(client.counters.acksSent >= 60, `${client.counters.acksSent} ACKs`);
    ok(mem.link.queue.framesStarted > 60 * (50 + 20 + 5), `${mem.link.queue.framesStarted} frames handed to the socket`);
    client.close();
  });
});


describe('bindings/link: AckCounter timing ring in a shared array', () => {
  it('keeps its hand-over times in the first ring-size numbers of the array and times only within its ring', () => {
    const store = new Float64Array(8 + 3).fill(-7);
    const a = new AckCounter(6, store);
    equal(a.mask, 7, 'the ring is rounded up to 8');
    for (let i = 0; i < 10; i++) a.startedOne(100 + i);
    deepEqual(Array.from(store.subarray(8)), [-7, -7, -7], 'the numbers past the ring are left to the owner');
    ok(a.ack(10, 150));
    equal(a.rttMs, 150 - 109, 'the newest frame covered, handed over at 109');
    a.startedAt(9, 200);
    ok(a.ack(10 + 9 - 8, 260), 'a lag of 8 frames is outside the ring of 8: acknowledged, not timed');
    equal(a.rttMs, -1);
    ok(a.ack(12, 265));
    equal(a.rttMs, 65, 'a lag of 7 is within the ring');
    throws(() => new AckCounter(9, new Float64Array(8)), (e) => e instanceof RangeError);
  });

  it('keeps whole-millisecond times in a Uint32 ring, and widens to a Float64 ring of its own at the first other time', () => {
    const store = new Uint32Array(8 + 2).fill(7);
    const a = new AckCounter(8, store);
    equal(a.handedAt, store);
    a.startedOne(100);
    a.startedAt(2, 2 ** 32 - 1);
    ok(a.ack(1, 150));
    equal(a.rttMs, 50);
    ok(a.ack(3, 2 ** 32 + 4));
    equal(a.rttMs, 5, 'the largest whole ms a Uint32 holds');
    equal(a.handedAt, store, 'whole ms: no ring of its own');
    a.startedOne(200.25);
    ok(a.handedAt instanceof Float64Array && a.handedAt !== (store as unknown), 'a time with a fraction: a Float64 ring of its own');
    deepEqual(Array.from(store.subarray(8)), [7, 7], 'the numbers past the ring are left to the owner');
    a.startedAt(2, 2 ** 32);
    a.startedOne(-3);
    ok(a.ack(5, 2 ** 32 + 10));
    equal(a.rttMs, 10, 'a time past 2^32 − 1 kept as it was read');
    equal(a.ack(4, 300), false, 'an ACK further back than the last: nothing new');
    ok(a.ack(7, 1), 'the frame handed over at −3');
    equal(a.rttMs, 4);
    const b = new AckCounter(4, new Uint32Array(4));
    b.startedAt(3, 10);
    b.startedOne(NaN);
    ok(b.handedAt instanceof Float64Array, 'NaN widens it too');
    ok(b.ack(3, 31));
    equal(b.rttMs, 21, 'the times before the widening are kept');
    ok(b.ack(4, 40));
    ok(Number.isNaN(b.rttMs), 'handed over at NaN: as a Float64 ring reads it');
  });

  it('TcpLink: a clock that reads fractions of a millisecond times the RTT as exactly as whole ones', () => {
    const { link, clock } = rig(LinkFraming.LENGTH_PREFIX, { queueBytes: 65536 });
    const f = data(1);
    clock.t = 1000;
    for (let i = 0; i < 3; i++) link.send(f, DATA, 1);
    equal(pullFrames(link).length, 3);
    clock.t = 1000.125;
    for (let i = 0; i < 3; i++) link.send(f, DATA, 1);
    equal(pullFrames(link).length, 3);
    clock.t = 1040.5;
    link.acked(3);
    equal(link.rtt.rttMs(), 40.5, 'handed over at 1000 (whole, before the ring widened)');
    clock.t = 1100.25;
    link.acked(6);
    equal(link.acks.rttMs, 100.125, 'handed over at 1000.125');
  });

  it('TcpLink: frames handed straight to the socket at fractions of a millisecond are timed exactly', () => {
    for (const estop of [false, true]) {
      const clock = new Clock();
      const hub = new FakeHub();
      const socket = { kick(): void {}, close(): void {}, room: 65536, writeFrame(): void {} };
      const link = new TcpLink({ hub, clock, framing: LinkFraming.WS_SERVER, binding: 'ws', queueBytes: MIN_QUEUE_BYTES, sha1: () => new Uint8Array(20) });
      link.start(socket);
      const req = new TextEncoder().encode('GET / HTTP/1.1\r\nHost: hub\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
      link.input(req, 0, req.length);
      link.pull(new Uint8Array(4096), 0, 4096);
      clock.t = 2000;
      ok(link.send(data(1), DATA, 1));
      clock.t = 2000.5;
      if (estop) link.writeAhead(estopBytes(1));
      else ok(link.send(data(2), DATA, 2));
      equal(link.queue.records, 0, 'straight to the socket');
      clock.t = 2010.75;
      link.acked(1);
      equal(link.acks.rttMs, 10.75);
      link.acked(2);
      equal(link.acks.rttMs, 10.25, estop ? 'the ESTOP handed over at 2000.5' : 'handed over at 2000.5');
    }
  });
});
