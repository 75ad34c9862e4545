import fc from 'fast-check';
import { REGRANT_AFTER_CONGESTED_MS } from '../../hub/constants.js';
import {
  aggregateOccupancy,
  DEFAULT_LADDER_BUDGETS,
  grantFactorAt,
  initialLadderState,
  Ladder,
  LADDER_ACTIONS,
  LADDER_EGRESS_RATIOS,
  LADDER_EXIT_RATIO,
  LADDER_HEAP_RATIOS,
  LADDER_PARK_INTERVAL_MS,
  LADDER_RELIEF_MS,
  LADDER_SUSTAINED_MS,
  LADDER_TICK_RATIOS,
  LADDER_TOP,
  LADDER_TRIGGER_NAMES,
  LadderRung,
  LadderTrigger,
  packedRung,
  packedTrigger,
  parkCandidate,
  planActuation,
  REDUCE_BACKGROUND_FACTOR,
  REDUCE_NORMAL_FACTOR,
  RUNG_POLICIES,
  rungFor,
  selectRung,
  type LadderSessionView,
  type LadderSignals,
  type LadderState,
} from '../../hub/ladder.js';
import { deepEqual, equal, ok } from '../lib/assert.js';

const B = DEFAULT_LADDER_BUDGETS; // tick budget 25 ms, heap limit 131072, 30 ticks

function sig(patch: Partial<LadderSignals> = {}): LadderSignals {
  return { tickP95Ms: 1, tickCount: 1000, heapUsedBytes: 10_000, egressOccupancy: 0, ...patch };
}
/** Signals whose tick p95 is `ratio` × the budget. */
function tick(ratio: number): LadderSignals {
  return sig({ tickP95Ms: ratio * B.tickBudgetMs });
}
function rungOf(s: LadderSignals): number {
  return packedRung(rungFor(s, B));
}
function triggerOf(s: LadderSignals): number {
  return packedTrigger(rungFor(s, B));
}

describe('hub/ladder: constants', () => {
  it('rung codes and actions (our design\'s ladder, our rungs)', () => {
    deepEqual({ ...LadderRung }, { CALM: 0, THIN: 1, REDUCE_RATES: 2, PAUSE_NON_ESSENTIAL: 3, REFUSE_JOINS: 4, PARK_LOWEST: 5 });
    deepEqual([...LADDER_ACTIONS], ['calm', 'thin', 'reduce_rates', 'pause_non_essential', 'refuse_joins', 'park_lowest']);
    equal(LADDER_TOP, 5);
    deepEqual({ ...LadderTrigger }, { NONE: 0, TICK: 1, HEAP: 2, EGRESS: 3, SUSTAINED: 4 });
    deepEqual([...LADDER_TRIGGER_NAMES], ['none', 'tick', 'heap', 'egress', 'sustained']);
  });

  it('tick ratios 0.8 / 1 / 1.25 / 1.5 / 2 and ring ratios 0.5 / 0.7 / 0.85 / 0.95 / 1', () => {
    deepEqual([...LADDER_TICK_RATIOS], [0.8, 1, 1.25, 1.5, 2]);
    deepEqual([...LADDER_EGRESS_RATIOS], [0.5, 0.7, 0.85, 0.95, 1]);
  });

  it('our decisions: heap ratios, exit 0.9, relief 5 s, parks 10 s apart, factors 0.25 / 0.5', () => {
    deepEqual([...LADDER_HEAP_RATIOS], [0.7, 0.8, 0.9, 0.95, 1]);
    equal(LADDER_EXIT_RATIO, 0.9);
    equal(LADDER_RELIEF_MS, 5000);
    equal(LADDER_PARK_INTERVAL_MS, 10000);
    equal(REDUCE_BACKGROUND_FACTOR, 0.25, 'row 7: decimate 4×');
    equal(REDUCE_NORMAL_FACTOR, 0.5, 'row 10: decimate 2×');
  });

  it('§10.3: thinning sustained more than 5 s is re-granted', () => {
    equal(LADDER_SUSTAINED_MS, 5000);
    equal(LADDER_SUSTAINED_MS, REGRANT_AFTER_CONGESTED_MS);
  });

  it('default budgets follow admission', () => {
    deepEqual({ ...DEFAULT_LADDER_BUDGETS }, { tickBudgetMs: 25, heapLimitBytes: 131072, minTickObservations: 30 });
  });

  it('what each rung applies', () => {
    const rows = RUNG_POLICIES.map((p) => [p.rung, p.action, p.levelFloor, [...p.factors], p.refuseJoins, p.park]);
    deepEqual(rows, [
      [0, 'calm', 0, [1, 1, 1, 1], false, false],
      [1, 'thin', 1, [1, 1, 1, 1], false, false],
      [2, 'reduce_rates', 0, [0.25, 0.5, 1, 1], false, false],
      [3, 'pause_non_essential', 0, [0, 0.5, 1, 1], false, false],
      [4, 'refuse_joins', 0, [0, 0.5, 1, 1], true, false],
      [5, 'park_lowest', 0, [0, 0.5, 1, 1], true, true],
    ]);
    ok(RUNG_POLICIES.every((p) => Object.isFrozen(p) && Object.isFrozen(p.factors)));
  });
});

describe('hub/ladder: rungFor (no hysteresis, no time)', () => {
  it('a rising tick p95 walks every rung at its exact threshold, triggered by tick', () => {
    const walk: number[] = [];
    for (const r of [0, 0.79, 0.8, 0.99, 1, 1.24, 1.25, 1.49, 1.5, 1.99, 2, 10]) walk.push(rungOf(tick(r)));
    deepEqual(walk, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
    equal(triggerOf(tick(1.5)), LadderTrigger.TICK);
    equal(triggerOf(tick(0)), LadderTrigger.NONE);
  });

  it('aggregate egress occupancy walks the rungs on its own, triggered by egress', () => {
    const walk: number[] = [];
    for (const o of [0.49, 0.5, 0.69, 0.7, 0.84, 0.85, 0.94, 0.95, 0.99, 1]) walk.push(rungOf(sig({ egressOccupancy: o })));
    deepEqual(walk, [0, 1, 1, 2, 2, 3, 3, 4, 4, 5]);
    equal(triggerOf(sig({ egressOccupancy: 0.9 })), LadderTrigger.EGRESS);
  });

  it('heap against its limit walks the rungs on its own, triggered by heap; unknown heap reads 0', () => {
    const L = B.heapLimitBytes;
    const walk: number[] = [];
    for (const h of [0.69, 0.7, 0.8, 0.9, 0.95, 1, 3]) walk.push(rungOf(sig({ heapUsedBytes: h * L })));
    deepEqual(walk, [0, 1, 2, 3, 4, 5, 5]);
    equal(triggerOf(sig({ heapUsedBytes: 0.9 * L })), LadderTrigger.HEAP);
    equal(rungOf(sig({ heapUsedBytes: NaN })), 0);
  });

  it('the highest rung any signal reaches wins; ties go to tick, then heap', () => {
    const s = sig({ tickP95Ms: 1.25 * 25, heapUsedBytes: 0.8 * 131072, egressOccupancy: 0.95 });
    equal(rungOf(s), 4);
    equal(triggerOf(s), LadderTrigger.EGRESS);
    const tie = sig({ tickP95Ms: 25, heapUsedBytes: 0.8 * 131072, egressOccupancy: 0.7 });
    equal(rungOf(tie), 2);
    equal(triggerOf(tie), LadderTrigger.TICK);
  });

  it('a tick p95 over fewer than 30 ticks is not trusted', () => {
    equal(rungOf(sig({ tickP95Ms: 100, tickCount: 29 })), 0);
    equal(rungOf(sig({ tickP95Ms: 100, tickCount: 30 })), 5);
  });

  it('budget-relative: the same ratio gives the same rung at any tick budget', () => {
    for (const budget of [5, 10, 25, 100]) {
      const b = { ...B, tickBudgetMs: budget };
      equal(packedRung(rungFor(sig({ tickP95Ms: 1.25 * budget }), b)), 3, `budget ${budget}`);
    }
  });

  it('aggregateOccupancy: the sum over links ÷ slots, clamped to 0..1', () => {
    equal(aggregateOccupancy(1, 8), 0.125, 'one full link of eight slots is not hub pressure');
    equal(aggregateOccupancy(4, 8), 0.5);
    equal(aggregateOccupancy(9, 8), 1);
    equal(aggregateOccupancy(0, 8), 0);
    equal(aggregateOccupancy(NaN, 8), 0);
    equal(aggregateOccupancy(3, 0), 0);
  });
});

/** Drives a state through a sequence of (signals, now) readings. */
function drive(state: LadderState, s: LadderSignals, from: number, to: number, step = 100): LadderState {
  for (let t = from; t <= to; t += step) selectRung(s, B, state, t, state);
  return state;
}

describe('hub/ladder: selectRung with hysteresis', () => {
  it('goes up at once, several rungs in one reading', () => {
    const s = selectRung(tick(1.6), B, initialLadderState(0), 1000);
    equal(s.rung, 4);
    equal(s.action, 'refuse_joins');
    equal(s.trigger, LadderTrigger.TICK);
    equal(s.since, 1000);
    equal(s.changes, 1);
  });

  for (let r = 1; r <= 5; r++) {
    it(`rung ${r} up, then back down one rung per ${LADDER_RELIEF_MS} ms once calm`, () => {
      const ratio = LADDER_TICK_RATIOS[r - 1] as number;
      const st = initialLadderState(0);
      selectRung(tick(ratio), B, st, 0, st);
      equal(st.rung, r);
      // A second at rung r (short of the 5 s that would re-grant a thin rung).
      drive(st, tick(ratio), 100, 1000);
      equal(st.rung, r);
      // Calm from 1100: each rung holds LADDER_RELIEF_MS, then steps down by one.
      const calmAt = 1100;
      selectRung(tick(0), B, st, calmAt, st);
      equal(st.reliefSince, calmAt);
      for (let k = 1; k <= r; k++) {
        const stepAt = calmAt + k * LADDER_RELIEF_MS;
        drive(st, tick(0), stepAt - LADDER_RELIEF_MS + 100, stepAt - 100);
        selectRung(tick(0), B, st, stepAt - 1, st);
        equal(st.rung, r - k + 1, `still rung ${r - k + 1} 1 ms before ${stepAt}`);
        selectRung(tick(0), B, st, stepAt, st);
        equal(st.rung, r - k, `rung ${r - k} at ${stepAt}`);
        equal(st.action, LADDER_ACTIONS[r - k]);
      }
      equal(st.trigger, LadderTrigger.NONE);
      equal(st.changes, 1 + r);
      drive(st, tick(0), calmAt + (r + 1) * LADDER_RELIEF_MS, calmAt + (r + 3) * LADDER_RELIEF_MS);
      equal(st.rung, 0);
      equal(st.changes, 1 + r, 'calm stays calm');
    });
  }

  it('a rung is held while the signal stays at or above 0.9 × its threshold', () => {
    const st = selectRung(tick(1.25), B, initialLadderState(0), 0);
    equal(st.rung, 3);
    drive(st, tick(1.25 * 0.9), 100, 60_000);
    equal(st.rung, 3, 'held for a minute in the band');
    equal(st.changes, 1);
    drive(st, tick(1.1), 60_100, 60_100 + LADDER_RELIEF_MS);
    equal(st.rung, 2, 'below the band: one step after the relief time');
  });

  it('no flapping: a signal oscillating across a threshold changes the rung once', () => {
    const st = initialLadderState(0);
    for (let t = 0; t <= 120_000; t += 100) selectRung(tick(t % 200 === 0 ? 1.01 : 0.99), B, st, t, st);
    equal(st.rung, 2);
    equal(st.changes, 1);
    const wide = initialLadderState(0);
    // Swinging from 1.01 down to 0.85 (below the exit line 0.9, above rung 1's) every other reading.
    for (let t = 0; t <= 120_000; t += 100) selectRung(tick(t % 200 === 0 ? 1.01 : 0.85), B, wide, t, wide);
    equal(wide.rung, 2, 'relief never lasts 5 s');
    equal(wide.changes, 1);
  });

  it('no flapping on egress either, with readings every tick (10 ms) for ten minutes', () => {
    const st = initialLadderState(0);
    const entered: number[] = [];
    let last = 0;
    for (let t = 0; t <= 600_000; t += 10) {
      const o = 0.85 + (((t / 10) % 7) - 3) * 0.01; // 0.82 … 0.88 around the rung-3 line
      selectRung(sig({ egressOccupancy: o }), B, st, t, st);
      if (st.rung !== last) {
        entered.push(st.rung);
        last = st.rung;
      }
    }
    deepEqual(entered, [2, 3], 'up to 2 at the first reading (0.82), to 3 at the first 0.85, then held');
  });

  it('thinning sustained more than 5 s becomes reduce_rates (trigger sustained) and holds there', () => {
    const st = initialLadderState(0);
    drive(st, tick(0.9), 0, 5000);
    equal(st.rung, 1, 'at exactly 5000 ms still thin');
    selectRung(tick(0.9), B, st, 5001, st);
    equal(st.rung, 2);
    equal(st.trigger, LadderTrigger.SUSTAINED);
    drive(st, tick(0.9), 5100, 120_000);
    equal(st.rung, 2, 'the load stays at rung 1: rates stay reduced, no 1↔2 cycle');
    equal(st.changes, 2);
    drive(st, tick(0), 120_100, 120_100 + 2 * LADDER_RELIEF_MS);
    equal(st.rung, 0, 'calm: down one rung per relief time');
  });

  it('a break in the load restarts the sustained clock', () => {
    const st = initialLadderState(0);
    drive(st, tick(0.9), 0, 4000);
    selectRung(tick(0.1), B, st, 4100, st); // calm for one reading: loadedSince cleared
    equal(st.rung, 1, 'the relief time has not passed');
    drive(st, tick(0.9), 4200, 9000);
    equal(st.rung, 1, '4800 ms of load since the break');
    drive(st, tick(0.9), 9100, 9300);
    equal(st.rung, 2);
  });

  it('rising during relief cancels it', () => {
    const st = selectRung(tick(1.5), B, initialLadderState(0), 0);
    drive(st, tick(0), 100, 4900);
    selectRung(tick(1.5), B, st, 5000, st);
    equal(st.rung, 4);
    ok(!(st.reliefSince === st.reliefSince), 'relief cleared');
    drive(st, tick(0), 5100, 9900);
    equal(st.rung, 4);
  });

  it('pure: same inputs, same output; writing into the current state is allowed', () => {
    const cur = selectRung(tick(1.3), B, initialLadderState(0), 0);
    const a = selectRung(tick(0.2), B, cur, 700);
    const b = selectRung(tick(0.2), B, cur, 700);
    deepEqual(a, b);
    ok(a !== cur && cur.rung === 3 && cur.reliefSince !== 700, 'the current state is untouched');
    selectRung(tick(0.2), B, cur, 700, cur);
    deepEqual(cur, a);
  });
});

describe('hub/ladder: the Ladder the hub holds', () => {
  it('update reports rung changes and exposes the rung\'s policy', () => {
    const l = new Ladder();
    ok(!l.update(tick(0.5), 0));
    equal(l.levelFloor, 0);
    ok(l.update(tick(0.85), 100));
    equal(l.rung, 1);
    equal(l.levelFloor, 1, 'thin: the table reads every link at level ≥ 1');
    ok(!l.refusesJoins);
    ok(l.update(tick(1.5), 200));
    equal(l.levelFloor, 0);
    ok(l.refusesJoins);
    equal(l.policy.action, 'refuse_joins');
    equal(l.grantFactor(0, false), 0);
    equal(l.grantFactor(1, false), 0.5);
    equal(l.grantFactor(2, false), 1);
    ok(!l.update(tick(1.5), 300));
  });

  it('parks one session at once at park_lowest, then one per 10 s; a new episode parks at once', () => {
    const l = new Ladder();
    ok(!l.parkDue(0), 'not at rung 5');
    l.update(tick(2), 1000);
    equal(l.rung, 5);
    ok(l.parkDue(1000));
    ok(l.parkDue(1000), 'asking does not use it up: nobody may have qualified');
    l.markParked(1000);
    ok(!l.parkDue(1001));
    ok(!l.parkDue(10_999));
    ok(l.parkDue(11_000));
    l.markParked(11_000);
    equal(l.parks, 2);
    // Down to 4 (5 s of relief), then up again: the pacing starts over.
    for (let t = 11_100; t <= 16_100; t += 100) l.update(tick(1.5), t);
    equal(l.rung, 4);
    ok(!l.parkDue(16_200));
    l.update(tick(2), 16_200);
    ok(l.parkDue(16_200));
    l.markParked(16_200);
    equal(l.parks, 3);
  });
});

describe('hub/ladder: Ladder.update as selectRung', () => {
  it('leaves the state, rung changes and parks as selectRung on the same signals would (its calm shortcut included)', () => {
    // Signals around every rung-1 threshold and below them, with few and enough ticks, unknown heaps.
    const near = (t: readonly number[], scale: number): fc.Arbitrary<number> =>
      fc.oneof(fc.constantFrom(0, NaN, -1, ...t.map((x) => x * scale), ...t.map((x) => x * scale * LADDER_EXIT_RATIO)), fc.double({ min: 0, max: 2.2 * scale, noNaN: true }));
    const signals = fc.record({
      tickP95Ms: near(LADDER_TICK_RATIOS, B.tickBudgetMs),
      tickCount: fc.constantFrom(0, 29, 30, 1000),
      heapUsedBytes: near(LADDER_HEAP_RATIOS, B.heapLimitBytes),
      egressOccupancy: near(LADDER_EGRESS_RATIOS, 1),
    });
    const step = fc.record({ dt: fc.constantFrom(100, 100, 100, 5000), quiet: fc.boolean(), s: signals });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 200, size: 'large' }), (steps) => {
        const l = new Ladder(B, 0);
        let plain: LadderState = initialLadderState(0);
        let t = 0;
        for (const o of steps) {
          t += o.dt;
          // Mostly calm: most of the hub's life is spent at rung 0 with nothing near a threshold.
          const s = o.quiet ? sig({ tickP95Ms: 1, heapUsedBytes: NaN }) : o.s;
          const before = plain.rung;
          plain = selectRung(s, B, plain, t);
          if (l.update(s, t) !== (plain.rung !== before)) return false;
          if (JSON.stringify(l.state) !== JSON.stringify(plain)) return false;
        }
        return true;
      }),
      { numRuns: 300 },
    );
  });
});

describe('hub/ladder: grant factors and the actuation plan', () => {
  it('critical is never touched; segments whole or nothing; others by the rung\'s factors', () => {
    for (let r = 0; r <= 5; r++) equal(grantFactorAt(r, 3, false), 1, `critical at ${r}`);
    equal(grantFactorAt(2, 0, false), 0.25);
    equal(grantFactorAt(2, 0, true), 1, 'a background segments stream is not thinned');
    equal(grantFactorAt(3, 0, true), 0, 'but it is paused with its class');
    equal(grantFactorAt(3, 1, true), 1, 'a normal segments stream keeps its whole grant');
    equal(grantFactorAt(1, 0, false), 1, 'thin changes no grant');
    equal(grantFactorAt(99, 0, false), 1, 'an unknown rung reads calm');
  });

  const sessions: LadderSessionView[] = [
    { id: 1, active: true, owner: true, tier: 1, subs: [{ channelId: 10, priority: 0, segments: false }, { channelId: 1, priority: 3, segments: false }] },
    { id: 2, active: true, owner: false, tier: 0, subs: [{ channelId: 11, priority: 1, segments: false }, { channelId: 12, priority: 0, segments: true }] },
    { id: 3, active: true, owner: false, tier: 0, subs: [{ channelId: 13, priority: 2, segments: false }, { channelId: 10, priority: 0, segments: false }] },
    { id: 4, active: false, owner: false, tier: 0, subs: [{ channelId: 10, priority: 0, segments: false }] },
    { id: 5, active: true, owner: false, tier: 0, subs: [{ channelId: 1, priority: 3, segments: false }] },
  ];

  it('rung 1: the level floor, no grant changes', () => {
    const p = planActuation(1, sessions);
    equal(p.levelFloor, 1);
    deepEqual([p.reduce.length, p.pause.length, p.refuseJoins, p.parkSessionId], [0, 0, false, 0]);
  });

  it('rung 2: background × 0.25, normal × 0.5, segments and the rest untouched', () => {
    const p = planActuation(2, sessions);
    equal(p.action, 'reduce_rates');
    equal(p.levelFloor, 0);
    deepEqual(p.reduce.map((a) => [a.sessionId, a.channelId, a.factor]), [[1, 10, 0.25], [2, 11, 0.5], [3, 10, 0.25], [4, 10, 0.25]]);
    deepEqual(p.pause, []);
  });

  it('rung 3: background paused (segments too), normal halved', () => {
    const p = planActuation(3, sessions);
    deepEqual(p.pause.map((a) => [a.sessionId, a.channelId]), [[1, 10], [2, 12], [3, 10], [4, 10]]);
    deepEqual(p.reduce.map((a) => [a.sessionId, a.channelId, a.factor]), [[2, 11, 0.5]]);
    ok(!p.refuseJoins);
  });

  it('rung 4 refuses joins; rung 5 names a session to park only when a park is due', () => {
    ok(planActuation(4, sessions).refuseJoins);
    equal(planActuation(4, sessions, true).parkSessionId, 0);
    equal(planActuation(5, sessions).parkSessionId, 0);
    equal(planActuation(5, sessions, true).parkSessionId, 2);
  });

  it('parkCandidate: lowest priority, then lowest tier, then newest; never the owner or a STALE one', () => {
    equal(parkCandidate(sessions), 2, 'session 2\'s best is normal; 3 has elevated; 1 owns control; 4 is stale; 5 holds only critical');
    equal(parkCandidate([sessions[2]!, sessions[4]!]), 3);
    equal(parkCandidate([sessions[4]!]), 5, 'critical-only goes last, but goes');
    const twins: LadderSessionView[] = [
      { id: 7, active: true, owner: false, tier: 1, subs: [{ channelId: 10, priority: 0, segments: false }] },
      { id: 8, active: true, owner: false, tier: 1, subs: [{ channelId: 10, priority: 0, segments: false }] },
      { id: 9, active: true, owner: false, tier: 2, subs: [{ channelId: 10, priority: 0, segments: false }] },
      { id: 6, active: true, owner: false, tier: 0, subs: [{ channelId: 11, priority: 1, segments: false }] },
    ];
    equal(parkCandidate(twins), 8, 'same priority and tier: the newest');
    equal(parkCandidate([twins[2]!, twins[0]!]), 7, 'lower tier first');
    equal(parkCandidate([sessions[0]!, sessions[3]!]), 0, 'nobody qualifies');
    equal(parkCandidate([]), 0);
  });

  it('the plan agrees with the factors the hub applies in its re-plan', () => {
    for (let r = 0; r <= 5; r++) {
      const p = planActuation(r, sessions);
      for (const s of sessions) {
        for (const sub of s.subs) {
          const f = grantFactorAt(r, sub.priority, sub.segments);
          const inReduce = p.reduce.some((a) => a.sessionId === s.id && a.channelId === sub.channelId && a.factor === f);
          const inPause = p.pause.some((a) => a.sessionId === s.id && a.channelId === sub.channelId);
          equal(inPause, f === 0, `rung ${r} session ${s.id} channel ${sub.channelId} paused`);
          equal(inReduce, f > 0 && f < 1, `rung ${r} session ${s.id} channel ${sub.channelId} reduced`);
        }
      }
      ok(Object.isFrozen(p) && Object.isFrozen(p.reduce) && Object.isFrozen(p.pause));
    }
  });
});
