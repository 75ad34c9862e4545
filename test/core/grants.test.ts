import * as fc from 'fast-check';
import { MAX_RATE_HZ } from '../../catalog/schema.js';
import { CborWriter } from '../../hub/cbor.js';
import { decodeValue } from '../../hub/cbor-reader.js';
import { encodeData } from '../../hub/frames.js';
import {
  DATA_FRAME_FIXED_BYTES,
  GRANT_RATE_STEP_HZ,
  GRANT_STEPS_PER_HZ,
  MAX_DATA_FRAME_BYTES,
  OBSERVER_MAX_RATE_HZ,
  clampedWishHz,
  floorToGrantStep,
  frameBytesFor,
  grantedPriority,
  linkDemandBps,
  planGrants,
  planShares,
  tierCapHz,
  type SubWish,
} from '../../hub/grants.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { runs } from '../lib/env.js';

// Codes written out here as §10.1 and catalog/schema.ts number them.
const BACKGROUND = 0;
const NORMAL = 1;
const ELEVATED = 2;
const CRITICAL = 3;
const OBSERVER = 0;
const OPERATOR = 1;
const MAINTAINER = 2;

interface Opts {
  maxRateHz?: number;
  tierCapHz?: number;
  frameBytes?: number;
  critical?: boolean;
}

function sub(session: number, channelId: number, wishHz: number, priority: number, o: Opts = {}): SubWish {
  return {
    session,
    channelId,
    wishHz,
    priority,
    maxRateHz: o.maxRateHz ?? 1000,
    tierCapHz: o.tierCapHz ?? 1000,
    frameBytes: o.frameBytes ?? 10,
    critical: o.critical ?? false,
  };
}

const NO_BUDGETS: ReadonlyMap<number, number> = new Map();

describe('hub/grants: grantedPriority (§10.1 and the tier decision)', () => {
  it('a critical channel is always critical, whatever the wish and the tier', () => {
    for (const wish of [undefined, BACKGROUND, NORMAL, ELEVATED, CRITICAL]) {
      for (const tier of [OBSERVER, OPERATOR, MAINTAINER]) equal(grantedPriority(wish, CRITICAL, true, tier), CRITICAL, `wish ${wish} tier ${tier}`);
    }
  });

  it('no wish: the channel default, capped by tier', () => {
    equal(grantedPriority(undefined, NORMAL, false, OPERATOR), NORMAL);
    equal(grantedPriority(undefined, ELEVATED, false, OPERATOR), ELEVATED);
    equal(grantedPriority(undefined, BACKGROUND, false, OBSERVER), BACKGROUND);
    equal(grantedPriority(undefined, ELEVATED, false, OBSERVER), NORMAL);
  });

  it('observer at most normal; operator and maintainer at most elevated', () => {
    deepEqual([BACKGROUND, NORMAL, ELEVATED].map((w) => grantedPriority(w, NORMAL, false, OBSERVER)), [BACKGROUND, NORMAL, NORMAL]);
    deepEqual([BACKGROUND, NORMAL, ELEVATED].map((w) => grantedPriority(w, NORMAL, false, OPERATOR)), [BACKGROUND, NORMAL, ELEVATED]);
    deepEqual([BACKGROUND, NORMAL, ELEVATED].map((w) => grantedPriority(w, NORMAL, false, MAINTAINER)), [BACKGROUND, NORMAL, ELEVATED]);
  });

  it('a wish for critical on a non-critical channel is never critical', () => {
    equal(grantedPriority(CRITICAL, NORMAL, false, MAINTAINER), ELEVATED);
    equal(grantedPriority(CRITICAL, NORMAL, false, OPERATOR), ELEVATED);
    equal(grantedPriority(CRITICAL, NORMAL, false, OBSERVER), NORMAL);
    equal(grantedPriority(7, BACKGROUND, false, OPERATOR), ELEVATED);
  });

  it('a wish that is not an integer falls back to the default; a negative one is background', () => {
    equal(grantedPriority(1.5, BACKGROUND, false, OPERATOR), BACKGROUND);
    equal(grantedPriority(NaN, ELEVATED, false, OPERATOR), ELEVATED);
    equal(grantedPriority(-1, ELEVATED, false, OPERATOR), BACKGROUND);
  });

  it('an unknown tier code is read as observer', () => {
    equal(grantedPriority(ELEVATED, NORMAL, false, -1), NORMAL);
    equal(grantedPriority(ELEVATED, NORMAL, false, NaN), NORMAL);
  });
});

describe('hub/grants: tierCapHz (our decision)', () => {
  it('observer: at most 50 Hz per subscription', () => {
    equal(OBSERVER_MAX_RATE_HZ, 50);
    equal(tierCapHz(OBSERVER, 200), 50);
    equal(tierCapHz(OBSERVER, 50), 50);
    equal(tierCapHz(OBSERVER, 20), 20);
    equal(tierCapHz(OBSERVER, 0.5), 0.5);
  });

  it('operator and maintainer: up to the catalog maximum', () => {
    equal(tierCapHz(OPERATOR, 200), 200);
    equal(tierCapHz(MAINTAINER, 1000), 1000);
    equal(tierCapHz(OPERATOR, 20), 20);
  });
});

describe('hub/grants: frameBytesFor', () => {
  it('worst case counted by hand: map 1 + 7 keys × 2 + type 2 + channel 2 + seq, t, dropped 5 each + gap 1 = 35', () => {
    equal(DATA_FRAME_FIXED_BYTES, 35);
    equal(frameBytesFor(0), 35 + 1);
    equal(frameBytesFor(3), 35 + 1 + 3 * 9);
    equal(frameBytesFor(23), 35 + 1 + 23 * 9, 'last one-byte array header');
    equal(frameBytesFor(24), 35 + 2 + 24 * 9, 'first two-byte array header');
    equal(frameBytesFor(32), 325);
    equal(MAX_DATA_FRAME_BYTES, 325);
    equal(frameBytesFor(-1), 36);
  });

  it('is an upper bound on what encodeData writes, with less than one value of slack', () => {
    const w = new CborWriter(new Uint8Array(1024));
    const values = new Float64Array(32).fill(0.1);
    for (let n = 0; n <= 32; n++) {
      w.reset();
      encodeData(w, 255, 0xffffffff, 0xffffffff, values, n, true, 0xffffffff);
      ok(w.pos <= frameBytesFor(n), `n=${n}: wrote ${w.pos} > ${frameBytesFor(n)}`);
      ok(frameBytesFor(n) - w.pos < 9, `n=${n}: estimate ${frameBytesFor(n)} far above ${w.pos}`);
    }
  });
});

describe('hub/grants: planGrants, rule 1 (never-shed)', () => {
  it('critical subscriptions get max_rate_hz regardless of wish, tier, capacity and link', () => {
    const subs = [
      sub(1, 1, 0, CRITICAL, { maxRateHz: 10, tierCapHz: 0, frameBytes: 1e6, critical: true }),
      sub(1, 2, 500, CRITICAL, { maxRateHz: 2, critical: true }),
      sub(2, 1, 5, BACKGROUND, { maxRateHz: 0.5, critical: true }),
    ];
    deepEqual(planGrants(subs, new Map([[1, 0], [2, 0]]), 0), [10, 2, 0.5]);
    deepEqual(planGrants(subs, NO_BUDGETS, Infinity), [10, 2, 0.5]);
  });

  it('consume no hub capacity', () => {
    const subs = [sub(1, 1, 0, CRITICAL, { maxRateHz: 50, critical: true }), sub(2, 5, 100, NORMAL)];
    deepEqual(planGrants(subs, NO_BUDGETS, 100), [50, 100]);
  });

  it('consume no link budget', () => {
    // normal: 100 Hz × 10 B = 1000 B/s, the whole budget; the critical 10 Hz × 100 B is not counted.
    const subs = [sub(1, 1, 10, CRITICAL, { maxRateHz: 10, frameBytes: 100, critical: true }), sub(1, 5, 100, NORMAL, { frameBytes: 10 })];
    deepEqual(planGrants(subs, new Map([[1, 1000]]), Infinity), [10, 100]);
  });
});

describe('hub/grants: planGrants, rule 2 (clamp)', () => {
  it('cap = min(wish, max_rate_hz, tier ceiling)', () => {
    const subs = [
      sub(1, 1, 300, NORMAL, { maxRateHz: 200, tierCapHz: 1000 }),
      sub(1, 2, 300, NORMAL, { maxRateHz: 200, tierCapHz: tierCapHz(OBSERVER, 200) }),
      sub(1, 3, 20, NORMAL, { maxRateHz: 200, tierCapHz: 200 }),
      sub(1, 4, Infinity, NORMAL, { maxRateHz: 200, tierCapHz: 1000 }),
    ];
    deepEqual(planGrants(subs, NO_BUDGETS, Infinity), [200, 50, 20, 200]);
  });

  it('a negative or NaN wish asks for nothing: granted 0, still listed', () => {
    const subs = [sub(1, 1, -5, NORMAL), sub(1, 2, NaN, NORMAL), sub(1, 3, 0, NORMAL)];
    deepEqual(planGrants(subs, NO_BUDGETS, Infinity), [0, 0, 0]);
    equal(clampedWishHz(subs[0]!), 0);
    equal(clampedWishHz(subs[1]!), 0);
  });

  it('no finite ceiling at all (never so in a validated catalog) grants nothing', () => {
    const s = sub(1, 1, Infinity, NORMAL, { maxRateHz: Infinity, tierCapHz: Infinity });
    equal(clampedWishHz(s), 0);
    deepEqual(planGrants([s], NO_BUDGETS, Infinity), [0]);
  });
});

describe('hub/grants: planGrants, rules 3 and 5 (hub capacity by class, max-min fair)', () => {
  it('3 sessions, 300 Hz, wishes 200/200/200 at 2/1/1 ⇒ 200/50/50', () => {
    // elevated first: 200 ≤ 300, left 100; normal: two wishes of 200 share 100 ⇒ 50 each.
    const subs = [sub(1, 10, 200, ELEVATED), sub(2, 10, 200, NORMAL), sub(3, 10, 200, NORMAL)];
    deepEqual(planGrants(subs, NO_BUDGETS, 300), [200, 50, 50]);
  });

  it('background gets only what normal and elevated left', () => {
    // 100 + 150 = 250 of 300, so background wishes 40 and 100 share 50: 25 each (both unmet).
    const subs = [sub(1, 1, 100, ELEVATED), sub(2, 1, 150, NORMAL), sub(3, 1, 40, BACKGROUND), sub(3, 2, 100, BACKGROUND)];
    deepEqual(planGrants(subs, NO_BUDGETS, 300), [100, 150, 25, 25]);
    // With 200 left instead: 40 is met (share 100), 160 left for the other, which wants 100.
    deepEqual(planGrants(subs, NO_BUDGETS, 450), [100, 150, 40, 100]);
    // Nothing left: background is subscribed with 0 granted.
    deepEqual(planGrants(subs, NO_BUDGETS, 250), [100, 150, 0, 0]);
  });

  it('max-min inside a class: 100 Hz over wishes 10, 40, 80 ⇒ 10, 40, 50', () => {
    // share 33.3: 10 met, 90 left over two ⇒ 45: 40 met, 50 left for the last.
    const subs = [sub(1, 1, 80, NORMAL), sub(2, 1, 10, NORMAL), sub(3, 1, 40, NORMAL)];
    deepEqual(planGrants(subs, NO_BUDGETS, 100), [50, 10, 40]);
  });

  it('a higher-priority session joining re-splits the pie below it, and leaving restores it', () => {
    const before = [sub(1, 10, 200, ELEVATED), sub(2, 10, 200, NORMAL), sub(3, 10, 200, NORMAL)];
    // 400 Hz: elevated 200, then normal 200 ⇒ 100 each.
    deepEqual(planGrants(before, NO_BUDGETS, 400), [200, 100, 100]);
    // Session 4 joins at elevated wishing 100: elevated takes 300, normal shares 100 ⇒ 50 each.
    const joined = [...before, sub(4, 10, 100, ELEVATED)];
    deepEqual(planGrants(joined, NO_BUDGETS, 400), [200, 50, 50, 100]);
    // Wishing 300 instead: elevated splits 400 max-min (200 / 200), normal gets nothing.
    const greedy = [...before, sub(4, 10, 300, ELEVATED)];
    deepEqual(planGrants(greedy, NO_BUDGETS, 400), [200, 0, 0, 200]);
    deepEqual(planGrants(before, NO_BUDGETS, 400), [200, 100, 100]);
  });

  it('zero or invalid capacity grants nothing non-critical', () => {
    const subs = [sub(1, 1, 10, ELEVATED), sub(1, 2, 10, NORMAL, { maxRateHz: 7, critical: true })];
    deepEqual(planGrants(subs, NO_BUDGETS, 0), [0, 7]);
    deepEqual(planGrants(subs, NO_BUDGETS, NaN), [0, 7]);
    deepEqual(planGrants(subs, NO_BUDGETS, -5), [0, 7]);
  });

  it('a non-critical priority outside 0..2 is read as the nearest class', () => {
    // priority 3 without the critical flag is elevated, not never-shed: it takes capacity first.
    const subs = [sub(1, 1, 60, NORMAL), sub(2, 1, 60, CRITICAL), sub(3, 1, 60, -1)];
    deepEqual(planGrants(subs, NO_BUDGETS, 100), [40, 60, 0]);
  });
});

describe('hub/grants: planGrants, rule 4 (link budget per session)', () => {
  it('limits one session without affecting another', () => {
    // Session 1, 1000 B/s: elevated 10 Hz × 50 B = 500 B/s met; normal demands 10 × 10 = 100 and
    // 20 × 100 = 2000 B/s share the 500 left: 100 met (10 Hz), 400 B/s ⇒ 4 Hz.
    // Session 2 (no budget): the same subscriptions get their wishes.
    const one = [sub(1, 1, 10, ELEVATED, { frameBytes: 50 }), sub(1, 2, 10, NORMAL, { frameBytes: 10 }), sub(1, 3, 20, NORMAL, { frameBytes: 100 })];
    const two = one.map((s) => ({ ...s, session: 2 }));
    deepEqual(planGrants([...one, ...two], new Map([[1, 1000]]), Infinity), [10, 10, 4, 10, 10, 20]);
  });

  it('max-min: a small demand is met first wherever it sits in the input', () => {
    // 300 B/s: channel 2 asks 5 × 10 = 50 B/s (met), channel 1 gets the other 250 ⇒ 25 Hz.
    const subs = [sub(1, 1, 100, NORMAL, { frameBytes: 10 }), sub(1, 2, 5, NORMAL, { frameBytes: 10 })];
    deepEqual(planGrants(subs, new Map([[1, 300]]), Infinity), [25, 5]);
  });

  it('fair in bytes/s, not in Hz', () => {
    // 300 B/s over demands 1000 and 2000 B/s ⇒ 150 B/s each ⇒ 15 Hz at 10 B, 7.5 Hz at 20 B.
    const subs = [sub(1, 1, 100, NORMAL, { frameBytes: 10 }), sub(1, 2, 100, NORMAL, { frameBytes: 20 })];
    deepEqual(planGrants(subs, new Map([[1, 300]]), Infinity), [15, 7.5]);
  });

  it('a higher class can take the whole budget; the lower class keeps its subscription at 0', () => {
    const subs = [sub(1, 1, 10, NORMAL, { frameBytes: 50 }), sub(1, 2, 10, ELEVATED, { frameBytes: 50 })];
    deepEqual(planGrants(subs, new Map([[1, 500]]), Infinity), [0, 10]);
    deepEqual(planGrants(subs, new Map([[1, 750]]), Infinity), [5, 10]);
  });

  it('an infinite frame size passes only an unlimited link; a non-positive one costs nothing', () => {
    const subs = [
      sub(1, 1, 10, NORMAL, { frameBytes: Infinity }),
      sub(1, 2, 10, NORMAL, { frameBytes: 0 }),
      sub(2, 1, 10, NORMAL, { frameBytes: Infinity }),
      sub(2, 2, 20, NORMAL, { frameBytes: Infinity }),
      sub(1, 3, 10, ELEVATED, { frameBytes: Infinity }),
      sub(1, 4, 10, BACKGROUND, { frameBytes: 10 }),
      sub(2, 3, 10, ELEVATED, { frameBytes: Infinity }),
      sub(2, 4, 10, BACKGROUND, { frameBytes: 10 }),
    ];
    // Session 1 (1000 B/s): the infinite frames get 0 and leave the budget to the rest.
    deepEqual(planGrants(subs, new Map([[1, 1000]]), Infinity), [0, 10, 10, 20, 0, 10, 10, 10]);
    deepEqual(planGrants(subs, new Map([[1, 0]]), Infinity), [0, 10, 10, 20, 0, 0, 10, 10]);
  });

  it('budget 0 (or NaN, or negative) grants nothing; Infinity and absence are unlimited', () => {
    const subs = [sub(1, 1, 10, ELEVATED), sub(2, 1, 10, ELEVATED), sub(3, 1, 10, ELEVATED), sub(4, 1, 10, ELEVATED), sub(5, 1, 10, ELEVATED)];
    deepEqual(planGrants(subs, new Map([[1, 0], [2, NaN], [3, -1], [4, Infinity]]), Infinity), [0, 0, 0, 10, 10]);
  });

  it('the grant is the smaller of link and capacity, and capacity is not reserved for what a link cannot carry', () => {
    // Session 1 is link-limited to 100 B/s ÷ 10 B = 10 Hz. Capacity 100 then goes max-min over
    // 10 and 100: 10 met, 90 to session 2 (not 50: the other 40 would be wasted).
    const subs = [sub(1, 1, 100, NORMAL, { frameBytes: 10 }), sub(2, 1, 100, NORMAL, { frameBytes: 10 })];
    deepEqual(planGrants(subs, new Map([[1, 100]]), 100), [10, 90]);
    // Capacity the tighter of the two for session 1: capacity 16 over link rates 10 and 100 ⇒ 8 / 8.
    deepEqual(planGrants(subs, new Map([[1, 100]]), 16), [8, 8]);
  });
});

describe('hub/grants: planGrants, rule 6 (0.1 Hz step)', () => {
  it('100 Hz over three wishes of 50 ⇒ 33.3 each, summing within capacity', () => {
    const subs = [sub(1, 1, 50, NORMAL), sub(2, 1, 50, NORMAL), sub(3, 1, 50, NORMAL)];
    const g = planGrants(subs, NO_BUDGETS, 100);
    deepEqual(g, [33.3, 33.3, 33.3]);
    ok(g[0]! + g[1]! + g[2]! <= 100);
  });

  it('a link share floors too: 100 B/s ÷ 3 B = 33.33… ⇒ 33.3', () => {
    deepEqual(planGrants([sub(1, 1, 100, NORMAL, { frameBytes: 3 })], new Map([[1, 100]]), Infinity), [33.3]);
  });

  it('one-decimal wishes are granted exactly; finer ones are floored; below 0.1 is 0', () => {
    const subs = [sub(1, 1, 2.3, NORMAL), sub(1, 2, 0.1 + 0.2, NORMAL), sub(1, 3, 4.35, NORMAL), sub(1, 4, 0.05, NORMAL), sub(1, 5, 0.7, NORMAL)];
    deepEqual(planGrants(subs, NO_BUDGETS, Infinity), [2.3, 0.3, 4.3, 0, 0.7]);
  });

  it('floorToGrantStep: the largest k / 10 not above x, never negative', () => {
    equal(GRANT_STEPS_PER_HZ, 10);
    equal(GRANT_RATE_STEP_HZ, 0.1);
    equal(floorToGrantStep(33.333333), 33.3);
    equal(floorToGrantStep(0.09999999999999999), 0);
    equal(floorToGrantStep(0.8999999999999999), 0.8, '0.8999999999999999 · 10 rounds up to 9');
    equal(floorToGrantStep(0.1), 0.1);
    equal(floorToGrantStep(999.99), 999.9);
    equal(floorToGrantStep(-3), 0);
    equal(floorToGrantStep(NaN), 0);
    equal(floorToGrantStep(-0), 0);
    // Every step up to the catalog's largest rate maps to itself, and the double just below it to
    // the step before.
    const view = new DataView(new ArrayBuffer(8));
    const below = (x: number): number => {
      view.setFloat64(0, x);
      view.setBigUint64(0, view.getBigUint64(0) - 1n);
      return view.getFloat64(0);
    };
    for (let k = 1; k <= MAX_RATE_HZ * 10; k++) {
      equal(floorToGrantStep(k / 10), k / 10);
      equal(floorToGrantStep(below(k / 10)), (k - 1) / 10, `just below ${k / 10}`);
    }
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1000, noNaN: true }), (x) => {
        const g = floorToGrantStep(x);
        const k = Math.round(g * 10);
        return g === k / 10 && g <= x && (k + 1) / 10 > x && !Object.is(g, -0);
      }),
      { numRuns: runs(2000, 100) },
    );
  });

  it('a granted value survives text, JSON, float64 and our CBOR round trips exactly (float32 would not)', () => {
    const w = new CborWriter(new Uint8Array(16));
    const f64 = new Float64Array(1);
    for (let k = 0; k <= 10000; k += 7) {
      const g = floorToGrantStep(k / 10 + 0.05);
      equal(g, k / 10, `k=${k}`);
      equal(Number(String(g)), g);
      ok(/^\d+(\.\d)?$/.test(String(g)), `prints as one decimal: ${String(g)}`);
      equal(JSON.parse(JSON.stringify(g)), g);
      f64[0] = g;
      equal(f64[0], g);
      w.reset();
      w.number(g);
      equal(decodeValue(w.subarray()), g);
    }
    // Why the encoder must keep non-integral grants in float64.
    ok(Math.fround(33.3) !== 33.3);
  });
});

describe('hub/grants: planGrants, rule 7 (determinism) and invariants', () => {
  const subArb = fc.record({
    session: fc.integer({ min: 1, max: 4 }),
    channelId: fc.integer({ min: 1, max: 6 }),
    wishHz: fc.oneof(
      fc.integer({ min: 0, max: 3000 }).map((x) => x / 10),
      fc.double({ min: 0, max: 300, noNaN: true }),
    ),
    priority: fc.integer({ min: 0, max: 3 }),
    maxRateHz: fc.constantFrom(1, 5, 10, 50, 200, 0.5),
    tierCapHz: fc.constantFrom(50, 200, 1000),
    frameBytes: fc.integer({ min: 0, max: 32 }).map(frameBytesFor),
    critical: fc.boolean(),
  });
  const budgetsArb = fc.array(fc.tuple(fc.integer({ min: 1, max: 4 }), fc.oneof(fc.constant(0), fc.double({ min: 0, max: 20000, noNaN: true }))), { maxLength: 4 });
  const capacityArb = fc.oneof(fc.constant(Infinity), fc.double({ min: 0, max: 1000, noNaN: true }));
  const caseArb = fc
    .array(subArb, { maxLength: 24 })
    .chain((subs) =>
      fc.tuple(
        fc.constant(subs),
        fc.shuffledSubarray(subs.map((_, i) => i), { minLength: subs.length, maxLength: subs.length }),
        budgetsArb,
        capacityArb,
      ),
    );

  it('a permuted input yields bit-identical grants, and every invariant holds', () => {
    fc.assert(
      fc.property(caseArb, ([subs, perm, budgetList, capacity]) => {
        const budgets = new Map(budgetList);
        const g = planGrants(subs, budgets, capacity);
        const permuted = perm.map((i) => subs[i]!);
        const h = planGrants(permuted, budgets, capacity);
        for (let k = 0; k < perm.length; k++) equal(h[k], g[perm[k]!], `permuted index ${k}`);
        const shares = planShares(subs, budgets, capacity);
        const permutedShares = planShares(permuted, budgets, capacity);
        for (let k = 0; k < perm.length; k++) equal(permutedShares[k], shares[perm[k]!], `permuted share ${k}`);
        for (let i = 0; i < subs.length; i++) {
          const s = subs[i]!;
          equal(g[i], s.critical ? shares[i] : floorToGrantStep(shares[i]!), 'grant = floored share');
          if (!s.critical) ok(shares[i]! >= 0 && shares[i]! <= clampedWishHz(s), `share ${shares[i]} outside [0, ${clampedWishHz(s)}]`);
        }

        let total = 0;
        const used = new Map<number, number>();
        for (let i = 0; i < subs.length; i++) {
          const s = subs[i]!;
          const x = g[i]!;
          if (s.critical) {
            equal(x, s.maxRateHz, 'never-shed rate');
            continue;
          }
          ok(x >= 0 && !Object.is(x, -0), `non-negative ${x}`);
          equal(Math.round(x * 10) / 10, x, 'on the 0.1 Hz step');
          ok(x <= clampedWishHz(s), `within the clamp: ${x} > ${clampedWishHz(s)}`);
          total += x;
          used.set(s.session, (used.get(s.session) ?? 0) + x * s.frameBytes);
        }
        ok(total <= capacity * (1 + 1e-9) + 1e-9, `capacity ${capacity} exceeded: ${total}`);
        for (const [session, b] of used) {
          const budget = budgets.get(session);
          if (budget !== undefined) ok(b <= budget * (1 + 1e-9) + 1e-9, `session ${session} budget ${budget} exceeded: ${b}`);
        }
      }),
      { numRuns: runs(2000, 100) },
    );
  });

  it('without link budgets, a lower class gets anything only once every higher class is fully granted', () => {
    fc.assert(
      fc.property(fc.array(subArb, { maxLength: 24 }), capacityArb, (subs, capacity) => {
        const g = planGrants(subs, NO_BUDGETS, capacity);
        const cls = (s: SubWish): number => (s.priority >= 2 ? 2 : s.priority);
        for (let i = 0; i < subs.length; i++) {
          const lo = subs[i]!;
          if (lo.critical || !(g[i]! > 0)) continue;
          for (let j = 0; j < subs.length; j++) {
            const hi = subs[j]!;
            if (hi.critical || cls(hi) <= cls(lo)) continue;
            equal(g[j], floorToGrantStep(clampedWishHz(hi)), `class ${cls(hi)} sub ${j} not fully granted while class ${cls(lo)} sub ${i} got ${g[i]}`);
          }
        }
      }),
      { numRuns: runs(2000, 100) },
    );
  });

  it('equal subscriptions in any session get equal grants (ties do not depend on ids or order)', () => {
    const subs = [sub(3, 2, 40, NORMAL), sub(1, 9, 40, NORMAL), sub(2, 1, 40, NORMAL)];
    deepEqual(planGrants(subs, NO_BUDGETS, 100), [33.3, 33.3, 33.3]);
    deepEqual(planGrants([subs[2]!, subs[0]!, subs[1]!], NO_BUDGETS, 100), [33.3, 33.3, 33.3]);
  });

  it('writes into `out` when given one, resizing it', () => {
    const out = [9, 9, 9, 9, 9];
    const r = planGrants([sub(1, 1, 5, NORMAL), sub(1, 2, 6, NORMAL)], NO_BUDGETS, Infinity, out);
    ok(r === out);
    deepEqual(out, [5, 6]);
    deepEqual(planGrants([], NO_BUDGETS, 100), []);
  });
});

describe('hub/grants: linkDemandBps', () => {
  it('sums clamped wish × frame bytes over one session’s non-critical subscriptions', () => {
    const subs = [
      sub(1, 1, 300, NORMAL, { maxRateHz: 200, frameBytes: 10 }), // 200 × 10
      sub(1, 2, 5, ELEVATED, { frameBytes: 100 }), // 5 × 100
      sub(1, 3, 10, CRITICAL, { frameBytes: 1000, critical: true }), // not counted
      sub(2, 1, 10, NORMAL, { frameBytes: 10 }), // other session
      sub(1, 4, -1, NORMAL, { frameBytes: Infinity }), // asks for nothing
    ];
    equal(linkDemandBps(subs, 1), 2500);
    equal(linkDemandBps(subs, 2), 100);
    equal(linkDemandBps(subs, 3), 0);
  });
});
