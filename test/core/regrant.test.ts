import { REGRANT_AFTER_CONGESTED_MS } from '../../hub/constants.js';
import { frameBytesFor } from '../../hub/grants.js';
import { LinkBudget, PROBE_INTERVAL_MS, PROBE_STEP, REGRANT_FLOOR_BPS, REGRANT_FLOOR_HZ, REGRANT_HEADROOM } from '../../hub/regrant.js';
import { equal, ok } from '../lib/assert.js';

// A virtual clock: `now` is just the number passed in. Times are written out in ms.
const CLEAR = 0;
const CONGESTED = 1;
const SEVERE = 2;
const NO_DEMAND_LIMIT = Infinity;

function est(throughputBps: number): { throughputBps: number } {
  return { throughputBps };
}

// A budget cut once: congested from t = 0, cut at 5001 from a throughput of 10 000 B/s ⇒ 8000.
function cutOnce(): LinkBudget {
  const b = new LinkBudget();
  equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 0), false);
  equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 5001), true);
  equal(b.budgetBps, 8000);
  return b;
}

describe('hub/regrant: our numbers', () => {
  it('headroom 0.8, probe every 2000 ms by 1.25, floor one 32-field frame per second (325 B/s)', () => {
    equal(REGRANT_AFTER_CONGESTED_MS, 5000);
    equal(REGRANT_HEADROOM, 0.8);
    equal(PROBE_INTERVAL_MS, 2000);
    equal(PROBE_STEP, 1.25);
    equal(REGRANT_FLOOR_HZ, 1);
    equal(REGRANT_FLOOR_BPS, 325);
    equal(REGRANT_FLOOR_BPS, frameBytesFor(32) * REGRANT_FLOOR_HZ);
  });
});

describe('hub/regrant: LinkBudget cut (§10.3 sustained > 5 s)', () => {
  it('starts unlimited and stays so while clear', () => {
    const b = new LinkBudget();
    equal(b.budgetBps, Infinity);
    for (let t = 0; t <= 20000; t += 1000) equal(b.update(CLEAR, est(100), 1000, t), false);
    equal(b.budgetBps, Infinity);
  });

  it('no cut at exactly 5000 ms of congestion; the cut at 5001: throughput × 0.8', () => {
    const b = new LinkBudget();
    equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 1000), false);
    equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 3000), false);
    equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 6000), false, 'exactly 5000 ms');
    equal(b.budgetBps, Infinity);
    equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 6001), true, '5001 ms');
    equal(b.budgetBps, 8000);
  });

  it('severe counts as congested', () => {
    const b = new LinkBudget();
    b.update(SEVERE, est(5000), NO_DEMAND_LIMIT, 0);
    equal(b.update(CONGESTED, est(5000), NO_DEMAND_LIMIT, 2000), false);
    equal(b.update(SEVERE, est(5000), NO_DEMAND_LIMIT, 5001), true);
    equal(b.budgetBps, 4000);
  });

  it('the congestion must be continuous: a clear update restarts the clock', () => {
    const b = new LinkBudget();
    b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 0);
    b.update(CLEAR, est(10000), NO_DEMAND_LIMIT, 3000);
    b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 3001);
    equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 5001), false, '5001 from the first start does not count');
    equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 8001), false, 'exactly 5000 ms since 3001');
    equal(b.update(CONGESTED, est(10000), NO_DEMAND_LIMIT, 8002), true);
    equal(b.budgetBps, 8000);
  });

  it('persisting congestion cuts again more than 5 s after the last cut', () => {
    const b = cutOnce();
    equal(b.update(CONGESTED, est(6000), NO_DEMAND_LIMIT, 10001), false, 'exactly 5000 ms after the cut');
    equal(b.budgetBps, 8000);
    equal(b.update(CONGESTED, est(6000), NO_DEMAND_LIMIT, 10002), true);
    equal(b.budgetBps, 4800);
  });

  it('a cut never raises the budget, but still restarts the timer', () => {
    const b = cutOnce();
    // 20 000 × 0.8 = 16 000 > 8000: no change.
    equal(b.update(CONGESTED, est(20000), NO_DEMAND_LIMIT, 10002), false);
    equal(b.budgetBps, 8000);
    equal(b.update(CONGESTED, est(5000), NO_DEMAND_LIMIT, 15002), false, 'exactly 5000 ms after 10002');
    equal(b.update(CONGESTED, est(5000), NO_DEMAND_LIMIT, 15003), true);
    equal(b.budgetBps, 4000);
  });

  it('never below the floor, also with an unknown (0) or invalid throughput', () => {
    const b = new LinkBudget();
    b.update(CONGESTED, est(100), NO_DEMAND_LIMIT, 0);
    equal(b.update(CONGESTED, est(100), NO_DEMAND_LIMIT, 5001), true);
    equal(b.budgetBps, 325, '100 × 0.8 = 80 is below the floor');
    equal(b.update(CONGESTED, est(0), NO_DEMAND_LIMIT, 10002), false, 'already at the floor');
    equal(b.budgetBps, 325);

    const c = new LinkBudget();
    c.update(CONGESTED, est(NaN), NO_DEMAND_LIMIT, 0);
    equal(c.update(CONGESTED, est(NaN), NO_DEMAND_LIMIT, 5001), true);
    equal(c.budgetBps, 325);

    // Just above the floor: 407 × 0.8 = 325.6.
    const d = new LinkBudget();
    d.update(CONGESTED, est(407), NO_DEMAND_LIMIT, 0);
    d.update(CONGESTED, est(407), NO_DEMAND_LIMIT, 5001);
    ok(Math.abs(d.budgetBps - 325.6) < 1e-9, `got ${d.budgetBps}`);
  });

  it('the floor can be set per budget', () => {
    const b = new LinkBudget(1000);
    b.update(CONGESTED, est(100), NO_DEMAND_LIMIT, 0);
    b.update(CONGESTED, est(100), NO_DEMAND_LIMIT, 5001);
    equal(b.budgetBps, 1000);
  });
});

describe('hub/regrant: LinkBudget probe (recovery)', () => {
  it('raises by 1.25 every 2000 ms from the first clear update, exactly at the interval', () => {
    const b = cutOnce();
    equal(b.update(CLEAR, est(8000), 20000, 6000), false, 'the probe starts');
    equal(b.update(CLEAR, est(8000), 20000, 7999), false, '1999 ms');
    equal(b.budgetBps, 8000);
    equal(b.update(CLEAR, est(8000), 20000, 8000), true, '2000 ms');
    equal(b.budgetBps, 10000);
    equal(b.update(CLEAR, est(10000), 20000, 9999), false);
    equal(b.update(CLEAR, est(10000), 20000, 10000), true);
    equal(b.budgetBps, 12500);
    equal(b.update(CLEAR, est(12500), 20000, 12000), true);
    equal(b.budgetBps, 15625);
    equal(b.update(CLEAR, est(15625), 20000, 14000), true);
    equal(b.budgetBps, 19531.25);
    // 19 531.25 × 1.25 = 24 414.0625 > 20 000: unlimited again.
    equal(b.update(CLEAR, est(19531), 20000, 16000), true);
    equal(b.budgetBps, Infinity);
    equal(b.update(CLEAR, est(19531), 20000, 18000), false);
    equal(b.update(CLEAR, est(19531), 20000, 30000), false);
  });

  it('unlimited once the budget exceeds the demand, not when it equals it', () => {
    const b = cutOnce();
    b.update(CLEAR, est(8000), 10000, 6000);
    equal(b.update(CLEAR, est(8000), 10000, 8000), true);
    equal(b.budgetBps, 10000, '8000 × 1.25 = 10 000, equal to the demand');
    equal(b.update(CLEAR, est(8000), 10000, 10000), true);
    equal(b.budgetBps, Infinity, '12 500 > 10 000');
  });

  it('demand that has fallen below the budget returns to unlimited at the next probe step', () => {
    const b = cutOnce();
    b.update(CLEAR, est(8000), 100, 6000);
    equal(b.update(CLEAR, est(8000), 100, 7999), false);
    equal(b.budgetBps, 8000);
    equal(b.update(CLEAR, est(8000), 100, 8000), true);
    equal(b.budgetBps, Infinity);
  });

  it('congestion during the probe stops it; the next clear restarts the interval', () => {
    const b = cutOnce();
    b.update(CLEAR, est(8000), 100000, 6000);
    equal(b.update(CLEAR, est(8000), 100000, 8000), true);
    equal(b.budgetBps, 10000);
    equal(b.update(CONGESTED, est(9000), 100000, 9000), false, 'congested again');
    equal(b.update(CONGESTED, est(9000), 100000, 10000), false, 'no probe step while congested');
    equal(b.update(CONGESTED, est(9000), 100000, 12000), false);
    equal(b.budgetBps, 10000);
    equal(b.update(CLEAR, est(9000), 100000, 13000), false, 'probe restarts');
    equal(b.update(CLEAR, est(9000), 100000, 14999), false);
    equal(b.update(CLEAR, est(9000), 100000, 15000), true);
    equal(b.budgetBps, 12500);
  });

  it('congestion during the probe that lasts more than 5 s cuts again', () => {
    const b = cutOnce();
    b.update(CLEAR, est(8000), 100000, 6000);
    b.update(CLEAR, est(8000), 100000, 8000);
    equal(b.budgetBps, 10000);
    b.update(CONGESTED, est(7000), 100000, 9000);
    equal(b.update(CONGESTED, est(7000), 100000, 14000), false, 'exactly 5000 ms');
    equal(b.update(CONGESTED, est(7000), 100000, 14001), true);
    equal(b.budgetBps, 5600);
  });

  it('a NaN level reads as clear', () => {
    const b = cutOnce();
    b.update(NaN, est(8000), 100000, 6000);
    equal(b.update(NaN, est(8000), 100000, 8000), true);
    equal(b.budgetBps, 10000);
  });
});

describe('hub/regrant: LinkBudget reset (resume)', () => {
  it('returns to unlimited and forgets both timers', () => {
    const b = cutOnce();
    b.update(CONGESTED, est(8000), NO_DEMAND_LIMIT, 9000);
    b.reset();
    equal(b.budgetBps, Infinity);
    // The congestion run before the reset does not count: a new one starts at 12 000.
    equal(b.update(CONGESTED, est(8000), NO_DEMAND_LIMIT, 12000), false);
    equal(b.update(CONGESTED, est(8000), NO_DEMAND_LIMIT, 17000), false, 'exactly 5000 ms since 12 000');
    equal(b.update(CONGESTED, est(8000), NO_DEMAND_LIMIT, 17001), true);
    equal(b.budgetBps, 6400);

    const c = cutOnce();
    c.update(CLEAR, est(8000), 100000, 6000);
    c.reset();
    equal(c.update(CLEAR, est(8000), 100000, 8000), false, 'no probe on an unlimited budget');
    equal(c.budgetBps, Infinity);
  });
});
