import fc from 'fast-check';
import {
  INTENT_BUCKET_DEPTH,
  INTENT_RATE_PER_S,
  MALFORMED_CLOSE_PER_S,
  MAX_BURST_MULTIPLE,
  STREAM_INGRESS_OVERAGE_NACK_PER_S,
} from '../../hub/constants.js';
import {
  Guard,
  GUARD_ROW,
  NackThrottle,
  TokenBucket,
  WindowCounter,
  burstFor,
  constantTimeEqual,
  intentBucket,
} from '../../hub/limits.js';
import { equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';

describe('hub/limits: TokenBucket (§10.5)', () => {
  it('starts full and refuses a take that would overdraw, taking nothing', () => {
    const b = new TokenBucket(20, 20, 0);
    equal(b.tokens(0), 20);
    ok(b.take(15, 0));
    equal(b.tokens(0), 5);
    ok(!b.take(6, 0), 'a bundle of 6 with 5 tokens is dropped whole');
    equal(b.tokens(0), 5, 'the refused take took nothing');
    ok(b.take(5, 0));
    equal(b.tokens(0), 0);
    ok(!b.take(1, 0));
  });

  it('refills continuously at the rate per second, exactly on an integer clock', () => {
    const b = new TokenBucket(20, 20, 1000);
    ok(b.take(20, 1000));
    ok(!b.take(1, 1049), '49 ms at 20/s is 0.98 of a token');
    equal(b.tokens(1049), 0.98);
    ok(b.take(1, 1050), '50 ms at 20/s is exactly one token');
    equal(b.tokens(1050), 0);
    equal(b.tokens(1075), 0.5);
    equal(b.tokens(1550), 10);
  });

  it('never holds more than its capacity', () => {
    const b = new TokenBucket(100, 25, 0);
    ok(b.take(25, 0));
    equal(b.tokens(60_000), 25);
    ok(!b.take(26, 60_000), 'a bundle larger than the capacity never passes');
    ok(b.take(25, 60_000));
  });

  it('a sender keeping to its granted rate is never refused (§10.5 "later legal-rate bundles continue")', () => {
    // 30 samples/s granted, sent as bundles of 3 every 100 ms for a minute, starting empty.
    const b = new TokenBucket(30, 30, 0);
    ok(b.take(30, 0));
    let refused = 0;
    for (let t = 100; t <= 60_000; t += 100) if (!b.take(3, t)) refused++;
    equal(refused, 0);
  });

  it('a sender at twice the rate gets the capacity plus the rate, no more', () => {
    const b = new TokenBucket(20, 20, 0);
    let accepted = 0;
    // one sample every 25 ms (40/s) over [0, 10 s]: 401 offered
    for (let t = 0; t <= 10_000; t += 25) if (b.take(1, t)) accepted++;
    equal(accepted, 20 + 20 * 10);
  });

  it('configure (a re-grant) keeps the tokens held, clamped to the new capacity', () => {
    const b = new TokenBucket(20, 20, 0);
    ok(b.take(4, 0));
    b.configure(10, 10, 0);
    equal(b.tokens(0), 10, 'clamped down to the new capacity');
    equal(b.capacity, 10);
    equal(b.ratePerS, 10);
    b.configure(40, 40, 0);
    equal(b.tokens(0), 10, 'a raise does not grant tokens at once');
    equal(b.tokens(500), 30, 'refills at the new rate');
  });

  it('configure refills at the old rate up to the re-grant, then at the new one', () => {
    const b = new TokenBucket(10, 100, 0);
    ok(b.take(100, 0));
    b.configure(100, 100, 1000); // 1 s at 10/s = 10 tokens
    equal(b.tokens(1000), 10);
    equal(b.tokens(1100), 20);
  });

  it('a grant below 1 Hz still lets one sample through per period', () => {
    const b = new TokenBucket(0.5, burstFor(0.5, undefined), 0);
    equal(b.capacity, 1);
    ok(b.take(1, 0));
    ok(!b.take(1, 1999));
    ok(b.take(1, 2000));
  });

  it('a zero grant passes nothing', () => {
    const b = new TokenBucket(0, 0, 0);
    ok(!b.take(1, 0));
    ok(!b.take(1, 1e9));
    equal(b.msUntil(1, 0), Infinity);
  });

  it('a negative or NaN take is refused; a take of 0 always passes', () => {
    const b = new TokenBucket(10, 10, 0);
    ok(!b.take(-1, 0));
    ok(!b.take(Number.NaN, 0));
    equal(b.tokens(0), 10);
    ok(b.take(0, 0));
  });

  it('msUntil: when a take would succeed, for retry_after_ms', () => {
    const b = new TokenBucket(20, 20, 0);
    equal(b.msUntil(20, 0), 0);
    ok(b.take(20, 0));
    equal(b.msUntil(1, 0), 50);
    equal(b.msUntil(3, 10), 140);
    ok(!b.take(3, 149));
    ok(b.take(3, 150));
    equal(b.msUntil(21, 150), Infinity, 'above the capacity: never');
  });

  it('a clock stepping backwards credits nothing twice', () => {
    const b = new TokenBucket(10, 10, 1000);
    ok(b.take(10, 1000));
    equal(b.tokens(500), 0);
    equal(b.tokens(1100), 1, 'credited from 1000, not from 500');
  });

  it('property: tokens stay in [0, capacity] and acceptance never beats capacity + rate × time', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 40 })), { maxLength: 200 }),
        (rate, mult, steps) => {
          const cap = rate * mult;
          const b = new TokenBucket(rate, cap, 0);
          let t = 0;
          let accepted = 0;
          for (const [dt, n] of steps) {
            t += dt;
            const before = b.tokens(t);
            const took = b.take(n, t);
            if (took !== n <= before) return false;
            if (took) accepted += n;
            const after = b.tokens(t);
            if (after < 0 || after > cap) return false;
          }
          return accepted <= cap + (rate * t) / 1000;
        },
      ),
      { numRuns: runs(500, 60) },
    );
  });

  it('intentBucket: §9 INTENT_RATE_PER_S refill, INTENT_BUCKET_DEPTH depth', () => {
    const b = intentBucket(0);
    equal(b.ratePerS, INTENT_RATE_PER_S);
    equal(b.capacity, INTENT_BUCKET_DEPTH);
    let n = 0;
    while (b.take(1, 0)) n++;
    equal(n, INTENT_BUCKET_DEPTH);
    ok(b.take(1, 1000 / INTENT_RATE_PER_S));
  });
});

describe('hub/limits: burstFor (§10.5 burst clamp)', () => {
  it('no wish: capacity = the granted rate', () => {
    equal(burstFor(25, undefined), 25);
    equal(burstFor(25, Number.NaN), 25);
  });
  it('clamped into [granted_rate, granted_rate × MAX_BURST_MULTIPLE]', () => {
    equal(burstFor(5, 1), 5);
    equal(burstFor(5, 5), 5);
    equal(burstFor(5, 12), 12);
    equal(burstFor(5, 5 * MAX_BURST_MULTIPLE), 5 * MAX_BURST_MULTIPLE);
    equal(burstFor(5, 5 * MAX_BURST_MULTIPLE + 1), 5 * MAX_BURST_MULTIPLE);
    equal(burstFor(5, Infinity), 5 * MAX_BURST_MULTIPLE);
    equal(burstFor(5, -3), 5);
  });
  it('the §10.5 example: a sparse sender with a 25/s peak declares a low rate and a burst', () => {
    equal(burstFor(10, 25), 25);
    equal(burstFor(5, 25), 20, '25 exceeds 4 × 5: clamped');
  });
  it('nothing granted, no burst', () => {
    equal(burstFor(0, 10), 0);
    equal(burstFor(-1, 10), 0);
    equal(burstFor(Number.NaN, 10), 0);
  });
});

describe('hub/limits: WindowCounter (§12 malformed frames)', () => {
  it('counts events inside the sliding second; an event leaves it exactly 1000 ms later', () => {
    const w = new WindowCounter(MALFORMED_CLOSE_PER_S + 1);
    equal(w.add(0), 1);
    equal(w.add(400), 2);
    equal(w.count(999), 2);
    equal(w.count(1000), 1, 'the event at 0 is out at 1000');
    equal(w.count(1399), 1);
    equal(w.count(1400), 0);
  });

  it('more than MALFORMED_CLOSE_PER_S in one second is detected, and not one fewer', () => {
    const w = new WindowCounter(MALFORMED_CLOSE_PER_S + 1);
    let t = 0;
    for (let i = 1; i <= MALFORMED_CLOSE_PER_S; i++) {
      ok(!(w.add(t) > MALFORMED_CLOSE_PER_S), `event ${i}`);
      t += 99;
    }
    ok(w.add(t) > MALFORMED_CLOSE_PER_S, `event ${MALFORMED_CLOSE_PER_S + 1} within ${t} ms`);
  });

  it('a steady rate of exactly MALFORMED_CLOSE_PER_S per second never trips it', () => {
    const w = new WindowCounter(MALFORMED_CLOSE_PER_S + 1);
    const period = 1000 / MALFORMED_CLOSE_PER_S;
    let max = 0;
    for (let t = 0; t < 20_000; t += period) max = Math.max(max, w.add(t));
    equal(max, MALFORMED_CLOSE_PER_S);
  });

  it('saturates at its capacity and recovers as events age out', () => {
    const w = new WindowCounter(3);
    for (let i = 0; i < 10; i++) equal(w.add(i), Math.min(i + 1, 3));
    equal(w.count(1006), 3, 'the three newest (7, 8, 9) are kept');
    equal(w.count(1007), 2);
    equal(w.count(1009), 0);
    w.add(2000);
    w.reset();
    equal(w.count(2000), 0);
  });

  it('counters sharing one array of timestamps count their own events only', () => {
    const store = new Float64Array(3 + 2 + 1).fill(-1);
    const a = new WindowCounter(3, 1000, store, 0);
    const b = new WindowCounter(2, 1000, store, 3);
    for (let i = 0; i < 5; i++) a.add(i * 10);
    equal(b.count(50), 0, 'a saturating does not spill into b');
    equal(b.add(60), 1);
    equal(b.add(70), 2);
    equal(b.add(80), 2, 'b saturates at its own capacity');
    equal(a.count(100), 3, "b's events are not a's");
    equal(store[5], -1, 'nothing past both is written');
    equal(a.count(1021), 2, "a's events age out as its own: 20 left at 1020, 30 and 40 stay");
    throws(() => new WindowCounter(3, 1000, store, 4), (e) => e instanceof RangeError);
  });

  it('rejects a capacity below 1', () => {
    throws(() => new WindowCounter(0), (e) => e instanceof RangeError);
    throws(() => new WindowCounter(2.5), (e) => e instanceof RangeError);
  });
});

describe('hub/limits: NackThrottle (§10.5 RATE_LIMITED ≤ 5/s per session)', () => {
  it('allows STREAM_INGRESS_OVERAGE_NACK_PER_S per second and counts the rest', () => {
    const n = new NackThrottle();
    let sent = 0;
    for (let i = 0; i < 50; i++) if (n.allow(i * 10)) sent++;
    equal(sent, STREAM_INGRESS_OVERAGE_NACK_PER_S);
    equal(n.suppressed, 50 - STREAM_INGRESS_OVERAGE_NACK_PER_S);
  });

  it('sliding: a burst straddling a second boundary still gets only 5', () => {
    const n = new NackThrottle();
    let sent = 0;
    for (let t = 990; t < 1010; t++) if (n.allow(t)) sent++;
    equal(sent, STREAM_INGRESS_OVERAGE_NACK_PER_S);
  });

  it('a slot frees exactly 1000 ms after the NACK that used it', () => {
    const n = new NackThrottle();
    for (let i = 0; i < STREAM_INGRESS_OVERAGE_NACK_PER_S; i++) ok(n.allow(100 * i));
    ok(!n.allow(999));
    ok(n.allow(1000));
    ok(!n.allow(1001));
    ok(!n.allow(1099));
    ok(n.allow(1100));
    equal(n.suppressed, 3);
  });

  it('under a steady flood: never more than 5 in any 1000 ms', () => {
    const n = new NackThrottle();
    const times: number[] = [];
    for (let t = 0; t < 10_000; t += 7) if (n.allow(t)) times.push(t);
    for (let i = STREAM_INGRESS_OVERAGE_NACK_PER_S; i < times.length; i++) {
      ok((times[i] as number) - (times[i - STREAM_INGRESS_OVERAGE_NACK_PER_S] as number) >= 1000, `NACK ${i}`);
    }
    ok(times.length >= 49, `about 5/s over 10 s, got ${times.length}`);
  });

  it('reset forgets the window and the count', () => {
    const n = new NackThrottle(1);
    ok(n.allow(0));
    ok(!n.allow(1));
    n.reset();
    equal(n.suppressed, 0);
    ok(n.allow(2));
  });
});

describe('hub/limits: Guard (a transport\'s or a session\'s §12 counters and its bucket in one row)', () => {
  it('counts, throttles and takes exactly as a WindowCounter, a NackThrottle and a TokenBucket do', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 40 })), { maxLength: 200 }), (ops) => {
        // The row sits between two others, which it must leave alone.
        const store = new Float64Array(3 * GUARD_ROW).fill(7);
        const g = new Guard(INTENT_RATE_PER_S, INTENT_BUCKET_DEPTH, 0, store, GUARD_ROW);
        const w = new WindowCounter(MALFORMED_CLOSE_PER_S + 1);
        const n = new NackThrottle();
        const b = new TokenBucket(INTENT_RATE_PER_S, INTENT_BUCKET_DEPTH, 0);
        let now = 0;
        for (const [op, dt, k] of ops) {
          now += dt;
          if (op === 0) equal(g.add(now), w.add(now));
          else if (op === 1) equal(g.allow(now), n.allow(now));
          else if (op === 2) equal(g.take(k, now), b.take(k, now));
          else if (k === 0) {
            g.reset();
            w.reset();
            n.reset();
          }
          equal(g.count(now), w.count(now));
          equal(g.suppressed, n.suppressed);
          equal(g.msUntil(1, now), b.msUntil(1, now));
        }
        for (let i = 0; i < GUARD_ROW; i++) {
          equal(store[i], 7);
          equal(store[2 * GUARD_ROW + i], 7);
        }
      }),
      { numRuns: runs(200, 20) },
    );
  });

  it('starts its row empty, whatever a transport before it left there', () => {
    const store = new Float64Array(GUARD_ROW);
    const first = new Guard(1, 1, 0, store, 0);
    for (let i = 0; i < 20; i++) {
      first.add(i);
      first.allow(i);
    }
    const g = new Guard(1, 1, 50, store, 0);
    equal(g.madeAt, 50);
    equal(g.count(50), 0);
    equal(g.suppressed, 0);
    equal(g.add(50), 1);
    throws(() => new Guard(1, 1, 0, store, 1), (e) => e instanceof RangeError);
  });
});

describe('hub/limits: constantTimeEqual', () => {
  const u = (...b: number[]): Uint8Array => Uint8Array.from(b);

  it('equal and unequal contents', () => {
    ok(constantTimeEqual(u(1, 2, 3), u(1, 2, 3)));
    ok(constantTimeEqual(u(), u()));
    ok(!constantTimeEqual(u(1, 2, 3), u(0, 2, 3)));
    ok(!constantTimeEqual(u(1, 2, 3), u(1, 2, 4)));
    ok(!constantTimeEqual(u(0x80), u(0x00)));
  });

  it('different lengths are unequal, prefixes and zero padding included', () => {
    ok(!constantTimeEqual(u(1, 2), u(1, 2, 3)));
    ok(!constantTimeEqual(u(1, 2, 3), u(1, 2)));
    ok(!constantTimeEqual(u(1, 2, 0), u(1, 2)));
    ok(!constantTimeEqual(u(), u(0)));
  });

  // The work, counted as element reads, is the same wherever the arrays differ: a comparison
  // that stopped at the first difference would read fewer.
  function reads(a: Uint8Array, b: Uint8Array): number {
    let n = 0;
    const count = (x: Uint8Array): Uint8Array =>
      new Proxy(x, {
        get(target, prop) {
          if (typeof prop === 'string' && /^\d+$/.test(prop)) n++;
          const v = (target as unknown as Record<string | symbol, unknown>)[prop];
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
    constantTimeEqual(count(a), count(b));
    return n;
  }

  it('reads every byte of both, wherever they differ', () => {
    const base = u(9, 8, 7, 6, 5, 4, 3, 2);
    const same = reads(base, base.slice());
    equal(same, 16);
    for (let i = 0; i < base.length; i++) {
      const other = base.slice();
      other[i] = (other[i] as number) ^ 0xff;
      equal(reads(base, other), same, `difference at ${i}`);
    }
  });

  it('different lengths still scan the longer length', () => {
    equal(reads(u(1, 2, 3, 4, 5, 6), u(1)), 7);
    equal(reads(u(1), u(1, 2, 3, 4, 5, 6)), 7);
    equal(reads(u(), u(1, 2, 3, 4)), 4);
  });
});
