import fc from 'fast-check';
import { AckLagSummary } from '../../hub/acklag.js';
import { Admission, defaultAdmissionLimits, DEFAULT_HEAP_LIMIT_BYTES } from '../../hub/admission.js';
import { IngressGovernor } from '../../hub/governor.js';
import {
  BINDING_NAMES,
  BindingCode,
  bearerMatches,
  bindingCode,
  coarseReport,
  createHubLoad,
  findInReport,
  HealthMetrics,
  METRICS_VERSION,
  nonNumericLeaves,
  OperatorGate,
  OPERATIONS_FAILED_LIMIT,
  OperatorStatus,
  operatorTokenUsable,
  OPERATIONS_RATE_LIMIT,
  OPERATIONS_RATE_WINDOW_MS,
  OPERATIONS_TRACKED_ADDRESSES,
  OPERATOR_TOKEN_MAX_CHARS,
  OPERATOR_TOKEN_MIN_CHARS,
  type HealthCounterView,
  type HealthInputs,
  type LinkHealth,
} from '../../hub/health.js';
import { BIN_SATURATION, BUCKET_MS, DURATION_BOUNDS_MS, DURATION_HISTOGRAM, HEALTH_PERCENTILE, Histogram, Window60, WINDOW_BUCKETS, windowBytes } from '../../hub/window60.js';
import { Ladder } from '../../hub/ladder.js';
import { Nack, NACK_MAX_CODE } from '../../hub/nack.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';

// Every time below is on a virtual clock: `now` is the number passed in, in ms.

/** The nearest-rank 95th percentile of `xs`, computed the slow, obvious way. */
function trueP95(xs: readonly number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.ceil((s.length * 95) / 100) - 1] as number;
}

describe('hub/health: constants', () => {
  it('metrics.version 1, sixty one-second buckets, p95', () => {
    equal(METRICS_VERSION, 1);
    equal(WINDOW_BUCKETS, 60);
    equal(BUCKET_MS, 1000);
    equal(HEALTH_PERCENTILE, 95);
  });

  it('our decision: the fixed duration boundaries, with 25 and 250 ms (admission) and 20/25/31.25/37.5/50 (ladder at 25 ms) among them', () => {
    deepEqual([...DURATION_BOUNDS_MS], [1, 2, 5, 10, 20, 25, 31.25, 37.5, 50, 100, 250, 500, 1000, 5000]);
    ok(Object.isFrozen(DURATION_BOUNDS_MS));
    equal(DURATION_HISTOGRAM.bins, 15);
    equal(BIN_SATURATION, 65535);
    for (const b of [250, 25, 20, 31.25, 37.5, 50]) ok(DURATION_BOUNDS_MS.includes(b), `${b} is a bound`);
  });

  it('operator token 32–256 characters; our decision: 5 requests per address per 10 s, 16 addresses kept', () => {
    equal(OPERATOR_TOKEN_MIN_CHARS, 32);
    equal(OPERATOR_TOKEN_MAX_CHARS, 256);
    equal(OPERATIONS_RATE_LIMIT, 5);
    equal(OPERATIONS_RATE_WINDOW_MS, 10000);
    equal(OPERATIONS_TRACKED_ADDRESSES, 16);
    deepEqual({ ...OperatorStatus }, { OK: 200, UNAUTHORIZED: 401, NOT_FOUND: 404, TOO_MANY: 429 });
  });

  it('our decision: binding codes other 0, tcp 1, ws 2, ble 3, espnow 4', () => {
    deepEqual({ ...BindingCode }, { other: 0, tcp: 1, ws: 2, ble: 3, espnow: 4 });
    deepEqual([...BINDING_NAMES], ['other', 'tcp', 'ws', 'ble', 'espnow']);
    equal(bindingCode('tcp'), 1);
    equal(bindingCode('ws'), 2);
    equal(bindingCode('ble'), 3);
    equal(bindingCode('espnow'), 4);
    equal(bindingCode('carrier-pigeon'), 0);
    equal(bindingCode(''), 0);
  });
});

describe('hub/health: Histogram', () => {
  it('a value on a bound falls in that bound\'s bin, just above it in the next; beyond the last, overflow', () => {
    const h = DURATION_HISTOGRAM;
    equal(h.binOf(0), 0);
    equal(h.binOf(1), 0);
    equal(h.binOf(1.0001), 1);
    equal(h.binOf(25), 5);
    equal(h.binOf(25.001), 6);
    equal(h.binOf(250), 10);
    equal(h.binOf(250.001), 11);
    equal(h.binOf(5000), 13);
    equal(h.binOf(5000.5), 14);
    equal(h.upperOf(5), 25);
    equal(h.upperOf(10), 250);
    equal(h.upperOf(14), Infinity);
  });

  it('refuses bounds that are not finite, positive and strictly ascending', () => {
    throws(() => new Histogram([1, 1]), (e) => e instanceof RangeError);
    throws(() => new Histogram([2, 1]), (e) => e instanceof RangeError);
    throws(() => new Histogram([0, 1]), (e) => e instanceof RangeError);
    throws(() => new Histogram([1, Infinity]), (e) => e instanceof RangeError);
    const h = new Histogram([10]);
    equal(h.bins, 2);
    ok(Object.isFrozen(h));
  });
});

describe('hub/health: Window60 ageing on a virtual clock (our design buckets)', () => {
  it('a spike leaves the 10-second view at (k + 10) × 1000 and the 60-second window at (k + 60) × 1000', () => {
    const w = new Window60();
    w.record(300, 5000); // second 5, at its very start
    w.record(260, 5999); // second 5, at its very end
    equal(w.maxOver(5000, 10), 300);
    equal(w.maxOver(14_999, 10), 300, 'last ms of second 14: second 5 is the oldest of the ten');
    equal(w.maxOver(15_000, 10), 0, 'first ms of second 15: gone from the admission view');
    equal(w.countOver(14_999, 10), 2);
    equal(w.countOver(15_000, 10), 0);
    equal(w.maxOver(15_000, 60), 300, 'still in the diagnostic window');
    equal(w.countOver(64_999, 60), 2, 'last ms of second 64');
    equal(w.maxOver(64_999), 300);
    equal(w.countOver(65_000, 60), 0, 'first ms of second 65: gone');
    equal(w.maxOver(65_000), 0);
    equal(w.p95Over(65_000), 0);
    equal(w.meanOver(65_000), 0);
  });

  it('a spike late in its second ages out of the admission view after 9 s, one early in it after 10 s', () => {
    const late = new Window60();
    late.record(400, 5999);
    equal(late.maxOver(15_000 - 1, 10), 400);
    equal(late.maxOver(15_000, 10), 0); // 9001 ms after
    const early = new Window60();
    early.record(400, 5000);
    equal(early.maxOver(15_000 - 1, 10), 400);
    equal(early.maxOver(15_000, 10), 0); // 10000 ms after
  });

  it('every view length S from 1 to 60 drops second k exactly at (k + S) × 1000', () => {
    const w = new Window60();
    w.record(7, 3_500);
    for (let s = 1; s <= 60; s++) {
      equal(w.countOver((3 + s) * 1000 - 1, s), 1, `S=${s} just before`);
      equal(w.countOver((3 + s) * 1000, s), 0, `S=${s} at the boundary`);
    }
    equal(w.countOver(3_500, 0), 1, 'a view of under one second is the current second');
    equal(w.countOver(3_500 + 120_000, 600), 0, 'views are at most sixty seconds');
  });

  it('a bucket is cleared when its second comes round again, not mixed with the old one', () => {
    const w = new Window60();
    w.record(900, 5_000);
    w.record(3, 65_000); // same bucket index (5), sixty seconds later
    equal(w.countOver(65_000), 1);
    equal(w.maxOver(65_000), 3);
    equal(w.sumOver(65_000), 3);
  });

  it('the window ends sixty seconds before the newest record, also for a view behind the records', () => {
    const w = new Window60();
    for (let sec = 0; sec < 60; sec++) w.record(sec + 1, sec * 1000);
    equal(w.countOver(59_000), 60);
    w.record(500, 100_000); // seconds 60..99 skipped: 0..40 leave the window, 41..59 stay
    equal(w.countOver(100_000), 20, 'seconds 41..59 and 100');
    equal(w.countOver(100_000, 10), 1);
    equal(w.countOver(99_000, 60), 19, 'a view one second back: 41..59');
    equal(w.maxOver(99_000, 60), 60);
    equal(w.sumOver(99_000, 60), ((42 + 60) * 19) / 2);
    equal(w.countOver(58_000, 60), 18, 'a view behind the records: 41..58, not the seconds that left');
    equal(w.clearsInMs(100_000, 10, -1), 10_000, 'of seconds 91..100 only 100 holds a sample');
  });

  it('sums over the seconds in view, skipping the empty ones', () => {
    const w = new Window60();
    w.record(10, 0);
    w.record(20, 2_000);
    w.record(30, 2_500);
    w.record(40, 9_999);
    equal(w.countOver(9_999, 10), 4);
    equal(w.sumOver(9_999, 10), 100);
    equal(w.meanOver(9_999, 10), 25);
    equal(w.maxOver(9_999, 10), 40);
    equal(w.countOver(10_000, 10), 3, 'second 0 left');
    equal(w.countOver(9_999, 1), 1, 'the current second alone');
    deepEqual(w.summary(9_999, 10), { count: 4, mean: 25, max: 40, p95: 40 });
    equal(w.total, 4);
  });

  it('negative values count as 0; NaN, infinities and non-finite times are ignored', () => {
    const w = new Window60();
    w.record(-3, 1000);
    w.record(NaN, 1000);
    w.record(Infinity, 1000);
    w.record(-Infinity, 1000);
    w.record(5, NaN);
    w.record(5, Infinity);
    equal(w.countOver(1000), 2, 'the -3 and the -Infinity (as 0)');
    equal(w.maxOver(1000), 0);
    equal(w.sumOver(1000), 0);
  });

  it('a clock that steps back records into the newest second', () => {
    const w = new Window60();
    w.record(1, 10_000);
    w.record(2, 4_000);
    equal(w.countOver(10_000, 1), 2);
    equal(w.countOver(4_000, 1), 0, 'nothing reopened second 4');
  });

  it('a view read at a time ahead of later records still counts them (its cached seconds are refreshed)', () => {
    const w = new Window60();
    w.record(5, 102_500);
    equal(w.countOver(103_000, 10), 1, 'second 102 counted as a completed second');
    w.record(7, 102_600); // a clock behind the view's: still second 102
    equal(w.countOver(103_000, 10), 2);
    equal(w.maxOver(103_000, 10), 7);
    equal(w.sumOver(103_000, 10), 12);
    w.record(9, 101_000); // a clock stepping back: into the newest second, 102
    equal(w.countOver(103_000, 10), 3);
    equal(w.maxOver(103_000, 10), 9);
  });

  it('a bucket overwritten by a second sixty on is gone from a repeated view of the old time', () => {
    const w = new Window60();
    w.record(9, 95_000);
    equal(w.countOver(103_000, 10), 1);
    w.record(1, 155_000); // second 155 takes the bucket of second 95
    equal(w.countOver(103_000, 10), 0, 'second 95 no longer exists');
    equal(w.maxOver(103_000, 10), 0);
    equal(w.countOver(155_000, 10), 1);
  });

  it('clear empties every view, and recording carries on after it', () => {
    const w = new Window60();
    w.record(40, 1000);
    equal(w.p95Over(1500, 10), 40);
    w.clear();
    deepEqual(w.summary(1500, 10), { count: 0, mean: 0, max: 0, p95: 0 });
    equal(w.total, 0);
    w.record(3, 1600);
    deepEqual(w.summary(1600, 10), { count: 1, mean: 3, max: 3, p95: 3 });
  });

  it('clearsInMs: time until the last second over the limit leaves the view', () => {
    const w = new Window60();
    w.record(300, 5_200);
    w.record(100, 7_000); // under the limit: no part in it
    equal(w.clearsInMs(9_000, 10, 250), 6_000);
    equal(w.clearsInMs(14_999, 10, 250), 1);
    equal(w.clearsInMs(15_000, 10, 250), 0);
    w.record(251, 12_300);
    equal(w.clearsInMs(13_000, 10, 250), 22_000 - 13_000, 'the newest offending second decides');
    equal(w.clearsInMs(13_000, 10, 300), 0, 'max equal to the limit does not exceed it');
  });
});

describe('hub/health: conservative p95', () => {
  it('is the upper bound of the bin holding the 95th-percentile sample', () => {
    const w = new Window60();
    for (let i = 0; i < 95; i++) w.record(3, 1000);
    for (let i = 0; i < 5; i++) w.record(400, 1000);
    equal(w.p95Over(1000), 5, 'sample 95 of 100 is a 3 in (2, 5]');
    w.record(400, 1000); // now 101 samples, rank 96: a 400 in (250, 500], capped by the max
    equal(w.p95Over(1000), 400);
  });

  it('a sample exactly on a bound reads that bound: a p95 of exactly 25 ms does not exceed 25', () => {
    const w = new Window60();
    for (let i = 0; i < 95; i++) w.record(25, 1000);
    for (let i = 0; i < 5; i++) w.record(100, 1000);
    equal(w.p95Over(1000), 25);
    const v = new Window60();
    for (let i = 0; i < 95; i++) v.record(250, 1000);
    for (let i = 0; i < 5; i++) v.record(900, 1000);
    equal(v.p95Over(1000), 250);
  });

  it('is capped by the observed max', () => {
    const w = new Window60();
    for (let i = 0; i < 40; i++) w.record(21, 1000);
    equal(w.p95Over(1000), 21, 'not the bin bound 25');
    const v = new Window60();
    v.record(9000, 1000);
    equal(v.p95Over(1000), 9000, 'the overflow bin reads the max');
  });

  it('over random samples: true p95 ≤ reported ≤ max, and at every bound "exceeds" is exact', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 6000, noNaN: true }), { minLength: 1, maxLength: 300 }), fc.integer({ min: 0, max: 9 }), (xs, spread) => {
        const w = new Window60();
        const now = 20_000;
        xs.forEach((x, i) => w.record(x, now - ((i * spread) % 10) * 1000));
        const reported = w.p95Over(now, 10);
        const truth = trueP95(xs);
        const max = Math.max(...xs);
        if (!(reported >= truth && reported <= max)) return false;
        for (const b of DURATION_BOUNDS_MS) if (reported > b !== truth > b) return false;
        return w.countOver(now, 10) === xs.length && w.maxOver(now, 10) === max;
      }),
      { numRuns: runs(300, 40) },
    );
  });

  it('interleaved records and views (clock steps back, views behind the records) agree with a brute-force ring', () => {
    // The model: bucket (second mod 60) → its second and raw values; a record goes to the newest
    // second seen (a clock that steps back), and replaces a bucket holding an older second; a
    // second 60 or more before the newest is in no view (the window ends sixty seconds back).
    const op = fc.oneof(
      fc.record({ kind: fc.constant('rec' as const), v: fc.integer({ min: 0, max: 6000 }), dt: fc.integer({ min: -2500, max: 4000 }) }),
      fc.record({ kind: fc.constant('view' as const), back: fc.oneof(fc.integer({ min: -3000, max: 3000 }), fc.integer({ min: 0, max: 90_000 })), s: fc.integer({ min: 1, max: 60 }) }),
      fc.record({ kind: fc.constant('again' as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 250 }), (ops) => {
        const w = new Window60();
        const ring = new Map<number, { sec: number; values: number[] }>();
        let t = 100_000;
        let newest = -Infinity;
        let last = { back: 0, s: 10 };
        for (const o0 of ops) {
          // 'again' repeats the last view at the same time: the case its cached seconds serve.
          const o = o0.kind === 'again' ? { kind: 'view' as const, back: t - last.back, s: last.s, at: true } : o0;
          if (o.kind === 'rec') {
            t += o.dt;
            w.record(o.v, t);
            const sec = Math.max(Math.floor(t / 1000), newest);
            newest = sec;
            const b = ring.get(sec % 60);
            if (b && b.sec === sec) b.values.push(o.v);
            else ring.set(sec % 60, { sec, values: [o.v] });
            continue;
          }
          const now = 'at' in o ? o.back : t - o.back;
          last = { back: now, s: o.s };
          const cur = Math.floor(now / 1000);
          const xs: number[] = [];
          for (const b of ring.values()) if (b.sec > cur - o.s && b.sec <= cur && b.sec > newest - 60) xs.push(...b.values);
          const max = xs.length ? Math.max(...xs) : 0;
          let p95 = 0;
          if (xs.length) {
            const truth = trueP95(xs);
            const upper = DURATION_HISTOGRAM.upperOf(DURATION_HISTOGRAM.binOf(truth));
            p95 = Math.min(upper, max);
          }
          const sum = xs.reduce((a, x) => a + x, 0);
          if (w.countOver(now, o.s) !== xs.length || w.sumOver(now, o.s) !== sum) return false;
          if (w.maxOver(now, o.s) !== max || w.p95Over(now, o.s) !== p95) return false;
        }
        return true;
      }),
      { numRuns: runs(300, 30) },
    );
  });

  it('saturated bins fall back to the max, never below the truth', () => {
    const w = new Window60();
    for (let i = 0; i < BIN_SATURATION + 10; i++) w.record(0.5, 1000);
    for (let i = 0; i < 5000; i++) w.record(40, 1000);
    equal(w.countOver(1000), BIN_SATURATION + 10 + 5000);
    // The (0, 1] bin holds 65535 of 65545: the rank lies beyond what the bins hold.
    equal(w.p95Over(1000), 40);
    // Stored in its bucket once the next second begins: the count is kept whole (past a Uint16's).
    w.record(3, 2000);
    equal(w.countOver(2000), BIN_SATURATION + 10 + 5000 + 1);
    equal(w.countOver(2000, 1), 1);
    equal(w.p95Over(2000), 40);
    equal(w.maxOver(2000), 40);
    equal(w.meanOver(2000), (0.5 * (BIN_SATURATION + 10) + 40 * 5000 + 3) / (BIN_SATURATION + 10 + 5000 + 1));
    equal(w.clearsInMs(2000, 60, 39), 59_000);
    // In a buffer shared with others: the counts move to memory of the window's own, the others keep theirs.
    const buffer = new ArrayBuffer(2 * windowBytes(DURATION_HISTOGRAM));
    const a = new Window60(DURATION_HISTOGRAM, buffer, 0);
    const b = new Window60(DURATION_HISTOGRAM, buffer, windowBytes(DURATION_HISTOGRAM));
    for (let i = 0; i < 70_000; i++) a.record(2, 1000);
    b.record(7, 1000);
    a.record(1, 1500);
    a.record(1, 2000);
    b.record(7, 2000);
    equal(a.countOver(2000), 70_002);
    equal(a.countOver(2000, 1), 1);
    equal(a.p95Over(2000), 2, 'the (1, 2] bin saturated at 65,535 of 70,002: the max');
    equal(b.countOver(2000), 2);
    equal(b.p95Over(2000), 7);
    a.record(1, 70_000);
    equal(a.countOver(70_000), 1, 'the widened counts age out as before');
  });
});

describe('hub/health: the cheap paths read as the plain ones', () => {
  // Samples from every 10 ms to every second, fractional values with ties, a clock that jitters
  // and jumps; one view length read now and then (another sometimes), mostly at the records'
  // time, some well behind them.
  const step = fc.record({
    dt: fc.oneof(fc.constantFrom(10, 100, 250, 400, 1000, 1000), fc.integer({ min: -30, max: 3000 }), fc.constantFrom(59_000, 61_000)),
    v: fc.oneof(fc.constantFrom(0, 0, 1, 2, 5, 7.5, 30), fc.double({ min: -2, max: 400, noNaN: true })),
    view: fc.integer({ min: 0, max: 3 }),
    at: fc.oneof(fc.integer({ min: 0, max: 1500 }), fc.integer({ min: 0, max: 1500 }), fc.integer({ min: -70_000, max: 0 })),
  });

  it('views read as time goes on (moved a second at a time) agree with a window read afresh', () => {
    fc.assert(
      fc.property(fc.constantFrom(10, 60, 3, 1), fc.constantFrom(10, 60, 30), fc.array(step, { minLength: 1, maxLength: 300, size: 'large' }), (span, other, steps) => {
        const w = new Window60();
        const done: [number, number][] = [];
        let t = 50_000;
        for (const o of steps) {
          t += o.dt;
          w.record(o.v, t);
          done.push([o.v, t]);
          if (o.view === 0) continue;
          const now = o.view === 1 ? t + o.at : t;
          const s = o.view === 3 ? other : span;
          const fresh = new Window60();
          for (const [v, at] of done) fresh.record(v, at);
          if (w.p95Over(now, s) !== fresh.p95Over(now, s) || w.viewCount !== fresh.countOver(now, s)) return false;
          if (w.maxOver(now, s) !== fresh.maxOver(now, s) || w.countOver(now, s) !== fresh.countOver(now, s)) return false;
          if (w.sumOver(now, s) !== fresh.sumOver(now, s) || w.meanOver(now, s) !== fresh.meanOver(now, s)) return false;
          if (w.clearsInMs(now, s, 6) !== fresh.clearsInMs(now, s, 6) || w.total !== fresh.total) return false;
        }
        return true;
      }),
      { numRuns: runs(300, 15) },
    );
  });

  it('a window keeping one view reads as one keeping two, at any span (health keeps one for the windows read at one span)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(step, fc.constantFrom(10, 60, 60, 3, 1)), { minLength: 1, maxLength: 200, size: 'large' }), (steps) => {
        const one = new Window60(DURATION_HISTOGRAM, undefined, 0, 1);
        const two = new Window60();
        let t = 50_000;
        for (const [o, s] of steps) {
          t += o.dt;
          one.record(o.v, t);
          two.record(o.v, t);
          const now = t + (o.view === 1 ? o.at : 0);
          if (one.p95Over(now, s) !== two.p95Over(now, s) || one.viewCount !== two.viewCount || one.maxOver(now, s) !== two.maxOver(now, s)) return false;
          if (one.sumOver(now, s) !== two.sumOver(now, s) || one.countOver(now, s) !== two.countOver(now, s) || one.clearsInMs(now, s, 5) !== two.clearsInMs(now, s, 5)) return false;
          if (o.view === 3) {
            one.clear();
            two.clear();
          }
        }
        return true;
      }),
      { numRuns: runs(200, 10) },
    );
    equal(windowBytes(DURATION_HISTOGRAM, 1) % 8, 0);
    ok(windowBytes(DURATION_HISTOGRAM, 1) < windowBytes(DURATION_HISTOGRAM));
    throws(() => new Window60(DURATION_HISTOGRAM, undefined, 0, 3), (e) => e instanceof RangeError);
  });

  it('a window counting in bytes reads as one counting in 16 bits, past 255 samples a second too (it widens)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(step, fc.constantFrom(10, 60, 3), fc.constantFrom(0, 0, 0, 1, 120, 300)), { minLength: 1, maxLength: 120, size: 'large' }), (steps) => {
        const nb = windowBytes(DURATION_HISTOGRAM, 2, 1);
        const buffer = new ArrayBuffer(nb + windowBytes(DURATION_HISTOGRAM));
        const narrow = new Window60(DURATION_HISTOGRAM, buffer, 0, 2, 1);
        const after = new Window60(DURATION_HISTOGRAM, buffer, nb);
        const wide = new Window60();
        const alone = new Window60();
        let t = 50_000;
        for (const [o, s, burst] of steps) {
          t += o.dt;
          for (let i = 0; i <= burst; i++) {
            narrow.record(o.v, t);
            wide.record(o.v, t);
          }
          after.record(o.v + 1, t);
          alone.record(o.v + 1, t);
          const now = t + (o.view === 1 ? o.at : 0);
          for (const [a, b] of [[narrow, wide], [after, alone]] as const) {
            if (a.p95Over(now, s) !== b.p95Over(now, s) || a.maxOver(now, s) !== b.maxOver(now, s) || a.countOver(now, s) !== b.countOver(now, s)) return false;
            if (a.sumOver(now, s) !== b.sumOver(now, s) || a.clearsInMs(now, s, 5) !== b.clearsInMs(now, s, 5) || a.total !== b.total) return false;
          }
        }
        return true;
      }),
      { numRuns: runs(100, 5) },
    );
    equal(windowBytes(DURATION_HISTOGRAM, 2, 1), windowBytes(DURATION_HISTOGRAM) - 960, 'a byte a count and a bin');
    throws(() => new Window60(DURATION_HISTOGRAM, undefined, 0, 2, 4), (e) => e instanceof RangeError);
    // Past 65,535 too: from bytes to 32 bits at once.
    const w = new Window60(DURATION_HISTOGRAM, undefined, 0, 2, 1);
    const v = new Window60();
    for (const x of [w, v]) {
      for (let i = 0; i < BIN_SATURATION + 10; i++) x.record(i % 3 === 0 ? 0.5 : 30, 1000);
      x.record(3, 2000);
    }
    equal(w.countOver(2000), BIN_SATURATION + 11);
    equal(w.p95Over(2000), v.p95Over(2000));
    equal(w.p95Over(2000, 1), 3);
    equal(w.meanOver(2000), v.meanOver(2000));
  });

  it('sums and maxes read exactly whether or not a Float32 holds them (a window widens at the first that does not)', () => {
    const w = new Window60();
    w.record(5, 1000);
    w.record(4.5, 1000);
    for (let i = 0; i < 4001; i++) w.record(4999, 2000);
    w.record(0.1, 3000);
    w.record(1e-300, 3500);
    w.record(7, 4000);
    equal(w.sumOver(4000, 60), 5 + 4.5 + 4001 * 4999 + 0.1 + 1e-300 + 7);
    equal(w.sumOver(4000, 3), 4001 * 4999 + 0.1 + 1e-300 + 7);
    equal(w.sumOver(4000, 2), 0.1 + 1e-300 + 7);
    equal(w.maxOver(4000, 2), 7);
    equal(w.maxOver(4000, 60), 4999);
    equal(w.clearsInMs(4000, 3, 5000), 0);
    equal(w.clearsInMs(4000, 3, 4998), 1000, 'the second at 2000 leaves a 3-second view at 5000');
    equal(w.clearsInMs(4000, 2, 7), 0);
    const v = new Window60();
    v.record(1 / 3, 1000);
    v.record(2, 2000);
    equal(v.maxOver(2000), 2);
    equal(v.sumOver(2000), 1 / 3 + 2);
    equal(v.p95Over(2000, 2), 2);
  });

  it('windows lying end to end in one buffer read as windows of their own', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(step, fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 200, size: 'large' }), (steps) => {
        const w = windowBytes(DURATION_HISTOGRAM);
        const buffer = new ArrayBuffer(3 * w);
        const shared = [0, 1, 2].map((k) => new Window60(DURATION_HISTOGRAM, buffer, k * w));
        const own = [0, 1, 2].map(() => new Window60());
        let t = 50_000;
        for (const [o, k] of steps) {
          t += o.dt;
          (shared[k] as Window60).record(o.v, t);
          (own[k] as Window60).record(o.v, t);
          for (let j = 0; j < 3; j++) {
            const a = shared[j] as Window60;
            const b = own[j] as Window60;
            const now = t + (o.view === 1 ? o.at : 0);
            const s = o.view === 3 ? 60 : 10;
            if (a.p95Over(now, s) !== b.p95Over(now, s) || a.maxOver(now, s) !== b.maxOver(now, s)) return false;
            if (a.sumOver(now, s) !== b.sumOver(now, s) || a.countOver(now, s) !== b.countOver(now, s) || a.total !== b.total) return false;
          }
        }
        return true;
      }),
      { numRuns: runs(100, 5) },
    );
    equal(windowBytes(DURATION_HISTOGRAM) % 8, 0, 'a multiple of 8: the next window\'s Float64 part stays aligned');
    throws(() => new Window60(DURATION_HISTOGRAM, new ArrayBuffer(windowBytes(DURATION_HISTOGRAM)), 8), (e) => e instanceof RangeError);
  });

  it('samples of 0 and less, mostly, read as the samples they are (against the plain lists)', () => {
    const value = (zeroWeight: number) => fc.oneof({ arbitrary: fc.constantFrom(0, -1, -0.5), weight: zeroWeight }, { arbitrary: fc.constantFrom(0.5, 1, 3, 40, 300), weight: 1 });
    const rec = (zeroWeight: number) => fc.record({ dt: fc.oneof({ arbitrary: fc.constantFrom(0, 10, 50, 100, 400), weight: 30 }, { arbitrary: fc.constantFrom(1000, 2500, 61_000), weight: 1 }), v: value(zeroWeight), view: fc.boolean(), back: fc.integer({ min: 0, max: 12_000 }), s: fc.constantFrom(1, 10, 60) });
    fc.assert(
      fc.property(fc.oneof(fc.array(rec(1), { minLength: 1, maxLength: 300, size: 'large' }), fc.array(rec(30), { minLength: 1, maxLength: 300, size: 'large' })), (ops) => {
        const w = new Window60();
        const kept: [number, number][] = [];
        let t = 30_000;
        for (const o of ops) {
          t += o.dt;
          w.record(o.v, t);
          kept.push([Math.floor(t / 1000), o.v > 0 ? o.v : 0]);
          if (!o.view) continue;
          const now = t - o.back;
          const cur = Math.floor(now / 1000);
          const newest = Math.floor(t / 1000);
          const xs = kept.filter(([sec]) => sec > cur - o.s && sec <= cur && sec > newest - 60).map(([, v]) => v);
          const max = xs.length ? Math.max(...xs) : 0;
          const p95 = xs.length ? Math.min(DURATION_HISTOGRAM.upperOf(DURATION_HISTOGRAM.binOf(trueP95(xs))), max) : 0;
          if (w.countOver(now, o.s) !== xs.length || w.sumOver(now, o.s) !== xs.reduce((a, x) => a + x, 0)) return false;
          if (w.maxOver(now, o.s) !== max || w.p95Over(now, o.s) !== p95 || w.total !== kept.length) return false;
        }
        return true;
      }),
      { numRuns: runs(300, 20) },
    );
  });

  it('tickSpan(start, end) is tickBegan(start) then tickEnded(end)', () => {
    const span = fc.record({ dt: fc.oneof(fc.constantFrom(10, 10, 9, 12, 300), fc.integer({ min: -50, max: 2500 })), took: fc.oneof(fc.constant(0), fc.constant(0), fc.double({ min: -1, max: 60, noNaN: true })) });
    fc.assert(
      fc.property(fc.constantFrom(0, 10, 25), fc.array(span, { minLength: 1, maxLength: 300, size: 'large' }), (period, spans) => {
        const a = new HealthMetrics(period);
        const b = new HealthMetrics(period);
        let t = 7_000;
        for (const o of spans) {
          t += o.dt;
          a.tickSpan(t, t + o.took);
          b.tickBegan(t);
          b.tickEnded(t + o.took);
        }
        for (const now of [t, t + 1, t + 1000, t + 10_000]) {
          for (const s of [10, 60]) {
            if (JSON.stringify(a.loopDelay.summary(now, s)) !== JSON.stringify(b.loopDelay.summary(now, s))) return false;
            if (JSON.stringify(a.tick.summary(now, s)) !== JSON.stringify(b.tick.summary(now, s))) return false;
          }
        }
        return a.loopDelay.total === b.loopDelay.total && a.tick.total === b.tick.total;
      }),
      { numRuns: runs(200, 15) },
    );
  });

  it('a sample of 0 or less counted in place (Window60.zeros) reads as one recorded', () => {
    const a = new Window60();
    const b = new Window60();
    a.record(3, 4_200);
    b.record(3, 4_200);
    ok(4_500 >= a.liveFrom && 4_500 < a.liveTo);
    a.zeros++;
    b.record(-1, 4_500);
    a.zeros++;
    b.record(0, 4_600);
    for (const now of [4_700, 5_000, 13_999]) deepEqual(a.summary(now, 10), b.summary(now, 10));
    equal(a.total, 3);
    a.record(1, 5_100); // the second turns: the zeros are stored with it
    b.record(1, 5_100);
    deepEqual(a.summary(5_100, 10), { count: 4, mean: 1, max: 3, p95: 3 });
    deepEqual(a.summary(5_100, 10), b.summary(5_100, 10));
    equal(a.p95Over(5_100, 1), 1);
  });
});

describe('hub/health: HealthMetrics', () => {
  it('tickBegan/tickEnded measure loop delay against the period and the tick duration', () => {
    const m = new HealthMetrics(10);
    m.tickBegan(0); // the first tick has no previous one
    m.tickEnded(2);
    m.tickBegan(10); // on time
    m.tickEnded(10);
    m.tickBegan(45); // 25 ms late
    m.tickEnded(49);
    m.tickBegan(50); // early (a timer catching up): 0
    m.tickEnded(51);
    equal(m.loopDelay.countOver(51), 3);
    equal(m.loopDelay.maxOver(51), 25);
    equal(m.loopDelay.sumOver(51), 25);
    equal(m.tick.countOver(51), 4);
    equal(m.tick.sumOver(51), 2 + 0 + 4 + 1);
    equal(m.tick.maxOver(51), 4);
    m.tickEnded(60); // no tick began: nothing
    equal(m.tick.countOver(60), 4);
  });

  it('without a tick period no loop delay is derived from the tick gaps', () => {
    const m = new HealthMetrics();
    m.tickBegan(0);
    m.tickBegan(500);
    equal(m.loopDelay.countOver(500), 0);
    m.recordLoopDelay(12, 500);
    equal(m.loopDelay.maxOver(500), 12);
  });

  it('record* feed their own windows', () => {
    const m = new HealthMetrics();
    m.recordTick(3, 100);
    m.recordIntentEcho(7, 100);
    m.recordEgressWait(11, 100);
    equal(m.tick.maxOver(100), 3);
    equal(m.intentEcho.maxOver(100), 7);
    equal(m.egressWait.maxOver(100), 11);
    equal(m.loopDelay.countOver(100), 0);
  });

  it('sample fills the admission view: loop-delay max and when it clears, tick p95 and count', () => {
    const m = new HealthMetrics(10);
    for (let i = 0; i < 40; i++) m.recordTick(i < 37 ? 4 : 30, 2_000 + i * 10);
    m.recordLoopDelay(300, 3_000);
    const load = createHubLoad();
    load.neverShedBacklogBytes = 77;
    m.sample(4_000, load);
    equal(load.loopDelayMaxMs, 300);
    equal(load.loopDelayClearsInMs, 13_000 - 4_000);
    equal(load.tickCount, 40);
    equal(load.tickP95Ms, 30, 'rank 38 of 40 is the first 30: its bin (25, 31.25] capped by the max');
    equal(load.neverShedBacklogBytes, 77, 'the hub\'s fields are left alone');
    m.sample(13_000, load);
    equal(load.loopDelayMaxMs, 0);
    equal(load.loopDelayClearsInMs, 0);
    equal(load.tickCount, 0);
  });
});

// A hub's worth of inputs for the report: 8 links, every counter large, names everywhere they
// could leak from (client names, credentials, resume tokens, payload values are in the hub,
// never passed here: the report is built from numbers and binding names only).
function fullInputs(now: number): { m: HealthMetrics; inputs: HealthInputs } {
  const m = new HealthMetrics(10);
  for (let i = 0; i < 500; i++) {
    m.recordLoopDelay((i % 17) * 1.234567, now - (i % 60) * 1000);
    m.recordTick((i % 13) * 0.987654, now - (i % 60) * 1000);
    m.recordIntentEcho((i % 7) * 3.3333, now - (i % 60) * 1000);
    m.recordEgressWait((i % 11) * 12.121212, now - (i % 60) * 1000);
  }
  const rows = new Float64Array(16);
  const nacks = new Float64Array(32);
  for (let i = 1; i < 16; i++) rows[i] = 123_456_789 + i;
  for (let i = 1; i <= NACK_MAX_CODE; i++) nacks[i] = 98_765 + i;
  const counters: HealthCounterView = {
    rows,
    nacks,
    delivered: 9_999_999_999,
    decimated: 12_345_678,
    conflated: 2_345_678,
    shedDrops: 345_678,
    egressDrops: 45_678,
    rateGated: 5_678,
    parks: 12,
    resumes: 34,
    estops: 2,
    reclaims: 1,
    neverShedOverflows: 3,
    grantsAnnounced: 4567,
    tierCapped: 89,
  };
  const bindings = ['tcp', 'ws', 'ble', 'espnow', 'tcp', 'ws', 'ble', 'espnow'];
  const links: LinkHealth[] = bindings.map((binding, slot) => ({ slot, binding, level: slot % 3, loss: binding === 'espnow' ? 0.123456 : NaN, occupancy: slot / 8 + 0.0123 }));
  const ackLag = new AckLagSummary(8);
  for (let i = 0; i < 8; i++) ackLag.add(bindings[i] === 'espnow' ? NaN : 10 * i, i % 3);
  ackLag.finish();
  const load = createHubLoad();
  m.sample(now, load);
  load.neverShedBacklogBytes = 1234;
  load.heapUsedBytes = 100_000;
  load.egressOccupancy = 0.4321;
  load.readerStalledLinks = 2;
  load.keepingUpLinks = 3;
  const admission = new Admission(defaultAdmissionLimits(8, 2048));
  const ladder = new Ladder();
  const governor = new IngressGovernor(8);
  governor.admit(0, 500, now);
  return {
    m,
    inputs: { counters, slots: 8, active: 7, stale: 1, latched: true, links, load, heapLimitBytes: DEFAULT_HEAP_LIMIT_BYTES, ackLag, admission, ladder, governor },
  };
}

describe('hub/health: the report (metrics.version 1)', () => {
  it('holds only finite numbers under fixed keys, and fits one HEALTH text (4096 bytes)', () => {
    const now = 120_000;
    const { m, inputs } = fullInputs(now);
    const r = m.report(now, inputs);
    deepEqual(nonNumericLeaves(r), []);
    equal(r.metrics.version, 1);
    const text = JSON.stringify(r);
    ok(text.length < 4096, `report is ${text.length} bytes`);
    deepEqual(Object.keys(r.metrics), [
      'version', 'atMs', 'windowS', 'loopDelayMs', 'tickMs', 'intentEchoMs', 'egressWaitMs', 'pushes', 'nacks', 'sessions',
      'parks', 'resumes', 'estops', 'reclaims', 'neverShedOverflows', 'grantsAnnounced', 'tierCapped', 'latched', 'admission', 'ladder',
      'ackLag', 'ingress', 'egress', 'links', 'heap',
    ]);
    const metrics = r.metrics as Record<string, Record<string, unknown>>;
    deepEqual(Object.keys(metrics.tickMs as object), ['count', 'mean', 'max', 'p95']);
    deepEqual(Object.keys(metrics.nacks as object), [
      'MALFORMED', 'TOO_LARGE', 'VERSION', 'UNKNOWN_CHANNEL', 'FORBIDDEN', 'NOT_GRANTED', 'NOT_OWNER', 'RATE_LIMITED', 'NO_SLOTS',
      'HUB_PRESSURE', 'UNKNOWN_SESSION', 'ESTOP_LATCHED', 'SESSION_EVICTED', 'NOT_READY', 'INGRESS_BUDGET', 'NOT_ARMED',
    ]);
    deepEqual(Object.keys((metrics.admission as Record<string, unknown>).refusals as object), ['eventLoop', 'tick', 'neverShedBacklog', 'memory', 'ladder']);
    deepEqual(Object.keys((metrics.links as unknown as object[])[0] as object), ['slot', 'binding', 'level', 'loss', 'occupancy']);
  });

  it('carries the values it was given', () => {
    const now = 120_000;
    const { m, inputs } = fullInputs(now);
    const r = m.report(now, inputs).metrics as Record<string, any>;
    equal(r.atMs, now);
    equal(r.windowS, 60);
    equal(r.pushes.rows.length, 15);
    equal(r.pushes.rows[0], 123_456_790, 'row 1 first');
    equal(r.pushes.rows[14], 123_456_804, 'row 15 last');
    equal(r.pushes.delivered, 9_999_999_999);
    equal(r.nacks.HUB_PRESSURE, 98_765 + Nack.HUB_PRESSURE);
    equal(r.nacks.INGRESS_BUDGET, 98_765 + Nack.INGRESS_BUDGET);
    deepEqual(r.sessions, { slots: 8, active: 7, stale: 1 });
    equal(r.latched, 1);
    equal(r.tickMs.count, 500);
    equal(r.tickMs.max, 11.852, 'rounded to the µs');
    equal(r.links.length, 8);
    deepEqual(r.links[3], { slot: 3, binding: 4, level: 0, loss: 0.123, occupancy: 0.387 });
    equal(r.links[0].loss, -1, 'a binding that measures no loss reads -1, not a healthy 0');
    deepEqual(r.heap, { usedBytes: 100_000, limitBytes: 131072 });
    deepEqual(r.egress, { occupancy: 0.432, readerStalledLinks: 2, keepingUpLinks: 3, neverShedBacklogBytes: 1234 });
    equal(r.admission.admitting, 1);
    equal(r.admission.reason, 0);
    equal(r.ladder.rung, 0);
    equal(r.ackLag.sessions, 8);
    equal(r.ackLag.measured, 6);
    equal(r.ackLag.max, 60);
    equal(r.ingress.hubUsed, 500);
    equal(r.ingress.accepted, 1);
    const unknown = fullInputs(now);
    (unknown.inputs.load as { heapUsedBytes: number }).heapUsedBytes = NaN;
    equal((unknown.m.report(now, unknown.inputs).metrics as Record<string, any>).heap.usedBytes, -1, 'an unknown heap reads -1');
  });

  it('a refused admission is reported with its reason code and mask', () => {
    const now = 120_000;
    const { m, inputs } = fullInputs(now);
    m.recordLoopDelay(900, now);
    m.sample(now, inputs.load as ReturnType<typeof createHubLoad>);
    inputs.admission.check(false, inputs.load);
    const r = m.report(now, inputs).metrics as Record<string, any>;
    equal(r.admission.admitting, 0);
    equal(r.admission.reason, 1);
    equal(r.admission.mask, 2);
    equal(r.admission.retryAfterMs, 10_000);
    equal(r.admission.refusals.eventLoop, 1);
  });

  it('privacy hook: findInReport finds what is there and nothing of names, credentials, tokens or payloads', () => {
    const now = 120_000;
    const { m, inputs } = fullInputs(now);
    const r = m.report(now, inputs);
    deepEqual(findInReport(r, ['version', 'HUB_PRESSURE', '9999999999']), ['version', 'HUB_PRESSURE', '9999999999'], 'the hook sees keys and values');
    const secrets = ['operator-console', 'teleop-joystick', 'Alice', 's3cr3t-credential', '0a1b2c3d4e5f', '3.14159', 'tcp', 'espnow'];
    deepEqual(findInReport(r, secrets), [], 'no client name, credential, token, payload value or binding name');
    deepEqual(findInReport(r, ['']), [], 'an empty needle matches nothing');
  });

  it('nonNumericLeaves names every leaf that is not a finite number', () => {
    deepEqual(nonNumericLeaves({ a: 1, b: { c: 'x', d: [1, null, NaN] }, e: true, f: Infinity }), ['b.c', 'b.d[1]', 'b.d[2]', 'e', 'f']);
    deepEqual(nonNumericLeaves({ a: [1, 2], b: { c: 0 } }), []);
  });

  it('the coarse report says ready or not and the metrics version, nothing else', () => {
    deepEqual(coarseReport(true), { ready: 1, metrics: { version: 1 } });
    deepEqual(coarseReport(false), { ready: 0, metrics: { version: 1 } });
    deepEqual(nonNumericLeaves(coarseReport(false)), []);
  });
});

describe('hub/health: operator inspection gate', () => {
  const TOKEN = 'x'.repeat(31) + 'Z'; // 32 characters

  it('is disabled without a token of 32–256 characters', () => {
    ok(!operatorTokenUsable(undefined));
    ok(!operatorTokenUsable(''));
    ok(!operatorTokenUsable('x'.repeat(31)));
    ok(operatorTokenUsable('x'.repeat(32)));
    ok(operatorTokenUsable('x'.repeat(256)));
    ok(!operatorTokenUsable('x'.repeat(257)));
    equal(new OperatorGate(undefined).check('10.0.0.1', `Bearer ${TOKEN}`, 0), 404);
    equal(new OperatorGate('short').check('10.0.0.1', 'Bearer short', 0), 404);
    ok(new OperatorGate(TOKEN).enabled);
  });

  it('bearerMatches: exact token after "Bearer " only', () => {
    ok(bearerMatches(`Bearer ${TOKEN}`, TOKEN));
    ok(!bearerMatches(`bearer ${TOKEN}`, TOKEN));
    ok(!bearerMatches(`Basic ${TOKEN}`, TOKEN));
    ok(!bearerMatches(`Bearer ${TOKEN}x`, TOKEN));
    ok(!bearerMatches(`Bearer ${TOKEN.slice(1)}`, TOKEN));
    ok(!bearerMatches(`Bearer ${TOKEN.slice(0, -1)}Y`, TOKEN));
    ok(!bearerMatches(undefined, TOKEN));
    ok(!bearerMatches('Bearer', TOKEN));
  });

  it('answers 401 to a wrong token and 200 to the right one', () => {
    const g = new OperatorGate(TOKEN);
    equal(g.check('10.0.0.1', 'Bearer nope', 0), 401);
    equal(g.check('10.0.0.1', undefined, 1), 401);
    equal(g.check('10.0.0.1', `Bearer ${TOKEN}`, 2), 200);
  });

  it('rate-limits each address to 5 requests in any 10 s, wrong tokens included', () => {
    const g = new OperatorGate(TOKEN);
    for (let i = 0; i < 5; i++) equal(g.check('10.0.0.1', 'Bearer guess', i * 1000), 401);
    equal(g.check('10.0.0.1', `Bearer ${TOKEN}`, 5000), 429, 'the sixth within 10 s');
    equal(g.check('10.0.0.2', `Bearer ${TOKEN}`, 5000), 200, 'another address has its own budget');
    equal(g.check('10.0.0.1', `Bearer ${TOKEN}`, 9_999), 429);
    equal(g.check('10.0.0.1', `Bearer ${TOKEN}`, 10_000), 200, 'the first request left the period');
    equal(g.check('10.0.0.1', `Bearer ${TOKEN}`, 10_001), 429);
    equal(g.retryAfterS, 10);
  });

  it('limits failed attempts over every address together: rotating addresses buys no more guesses', () => {
    const g = new OperatorGate(TOKEN);
    let unauthorized = 0;
    for (let a = 0; a < 200; a++) if (g.check(`10.0.${a >> 8}.${a & 0xff}`, 'Bearer guess', a) === 401) unauthorized++;
    equal(unauthorized, OPERATIONS_FAILED_LIMIT);
    equal(g.check('10.9.9.9', `Bearer ${TOKEN}`, 500), 429, 'not evaluated while the failures fill the window');
    equal(g.check('10.9.9.9', `Bearer ${TOKEN}`, OPERATIONS_RATE_WINDOW_MS), 200, 'the oldest failure left the window');
  });

  it('keeps at most 16 addresses, forgetting the least recently seen', () => {
    const g = new OperatorGate(TOKEN);
    for (let i = 0; i < 5; i++) g.check('first', 'Bearer x', i);
    equal(g.check('first', `Bearer ${TOKEN}`, 10), 429);
    for (let a = 0; a < 16; a++) g.check(`addr-${a}`, `Bearer ${TOKEN}`, 100 + a);
    // 'first' was the least recently seen when addr-15 arrived: its history is gone.
    equal(g.check('first', `Bearer ${TOKEN}`, 200), 200);
  });
});

describe('hub/health: report inputs are the hub\'s own shapes', () => {
  it('LinkHealth of every binding name maps to a code; unknown names to 0', () => {
    const m = new HealthMetrics();
    const { inputs } = fullInputs(0);
    const links: LinkHealth[] = [{ slot: 0, binding: 'mystery', level: 0, loss: 0, occupancy: 0 }];
    const r = m.report(0, { ...inputs, links }).metrics as Record<string, any>;
    equal(r.links[0].binding, 0);
    ok(findInReport(r, ['mystery']).length === 0);
  });
});
