import {
  Admission,
  ADMISSION_LADDER_RETRY_AFTER_MS,
  ADMISSION_LOOP_DELAY_MS,
  ADMISSION_MIN_TICK_OBSERVATIONS,
  ADMISSION_NACK,
  ADMISSION_REASON_NAMES,
  ADMISSION_RETRY_AFTER_MS,
  ADMISSION_WINDOW_S,
  AdmissionReason,
  DEFAULT_HEAP_LIMIT_BYTES,
  DEFAULT_TICK_BUDGET_MS,
  defaultAdmissionLimits,
  evaluateAdmission,
  NEVER_SHED_BACKLOG_RATIO,
  type AdmissionSignals,
} from '../../hub/admission.js';
import { createHubLoad, HealthMetrics } from '../../hub/health.js';
import { isRetryable, Nack } from '../../hub/nack.js';
import { deepEqual, equal, ok } from '../lib/assert.js';

const LIMITS = defaultAdmissionLimits(8, 2048);

function calm(): AdmissionSignals {
  return {
    loopDelayMaxMs: 3,
    loopDelayClearsInMs: 0,
    tickP95Ms: 2,
    tickCount: 1000,
    neverShedBacklogBytes: 0,
    heapUsedBytes: 50_000,
    refuseJoins: false,
  };
}

function verdict(patch: Partial<AdmissionSignals>) {
  return evaluateAdmission({ ...calm(), ...patch }, LIMITS);
}

describe('hub/admission: constants', () => {
  it('ten buckets, loop delay 250 ms, 30 tick observations, tick budget 25 ms', () => {
    equal(ADMISSION_WINDOW_S, 10);
    equal(ADMISSION_LOOP_DELAY_MS, 250);
    equal(ADMISSION_MIN_TICK_OBSERVATIONS, 30);
    equal(DEFAULT_TICK_BUDGET_MS, 25);
  });

  it('our decisions: backlog a quarter of never-shed capacity, heap 128 KiB, retry 1000 ms (ladder 5000 ms)', () => {
    equal(NEVER_SHED_BACKLOG_RATIO, 0.25);
    equal(DEFAULT_HEAP_LIMIT_BYTES, 131072);
    equal(ADMISSION_RETRY_AFTER_MS, 1000);
    equal(ADMISSION_LADDER_RETRY_AFTER_MS, 5000);
  });

  it('§12 / docs/operations.md: a refused HELLO is NACK HUB_PRESSURE (10), which is retryable', () => {
    equal(ADMISSION_NACK, Nack.HUB_PRESSURE);
    equal(ADMISSION_NACK, 10);
    ok(isRetryable(ADMISSION_NACK));
  });

  it('reason codes and names', () => {
    deepEqual({ ...AdmissionReason }, { NONE: 0, EVENT_LOOP: 1, TICK: 2, NEVER_SHED_BACKLOG: 3, MEMORY: 4, LADDER: 5 });
    deepEqual([...ADMISSION_REASON_NAMES], [null, 'event-loop', 'tick', 'never-shed-backlog', 'memory', 'ladder']);
    ok(Object.isFrozen(ADMISSION_REASON_NAMES));
  });

  it('default limits for 8 slots of 2048 never-shed bytes', () => {
    deepEqual({ ...LIMITS }, {
      loopDelayMs: 250,
      tickBudgetMs: 25,
      minTickObservations: 30,
      neverShedBacklogBytes: 4096,
      heapLimitBytes: 131072,
      retryAfterMs: 1000,
    });
    ok(Object.isFrozen(LIMITS));
    equal(defaultAdmissionLimits(8, 2048, { tickBudgetMs: 10 }).tickBudgetMs, 10, 'overrides');
  });
});

describe('hub/admission: each condition alone', () => {
  it('calm: admitted, no reason, no retry', () => {
    deepEqual({ ...verdict({}) }, { admit: true, reason: null, code: 0, mask: 0, retryAfterMs: 0 });
  });

  it('event-loop: max loop delay over 250 ms refuses, at 250 it does not; retry when the spike clears', () => {
    ok(verdict({ loopDelayMaxMs: 250, loopDelayClearsInMs: 0 }).admit);
    const v = verdict({ loopDelayMaxMs: 250.5, loopDelayClearsInMs: 6200 });
    deepEqual({ ...v }, { admit: false, reason: 'event-loop', code: 1, mask: 2, retryAfterMs: 6200 });
    equal(verdict({ loopDelayMaxMs: 900, loopDelayClearsInMs: 0.4 }).retryAfterMs, 1, 'whole ms, rounded up');
    equal(verdict({ loopDelayMaxMs: 900, loopDelayClearsInMs: 0 }).retryAfterMs, 1000, 'unknown: the default hint');
  });

  it('tick: p95 over the budget with at least 30 ticks refuses; 29 ticks or p95 at the budget do not', () => {
    ok(verdict({ tickP95Ms: 25, tickCount: 30 }).admit, 'at the budget');
    ok(verdict({ tickP95Ms: 40, tickCount: 29 }).admit, 'too few observations to trust');
    deepEqual({ ...verdict({ tickP95Ms: 25.001, tickCount: 30 }) }, { admit: false, reason: 'tick', code: 2, mask: 4, retryAfterMs: 1000 });
  });

  it('never-shed-backlog: more than the limit refuses, the limit itself does not', () => {
    ok(verdict({ neverShedBacklogBytes: 4096 }).admit);
    deepEqual({ ...verdict({ neverShedBacklogBytes: 4097 }) }, { admit: false, reason: 'never-shed-backlog', code: 3, mask: 8, retryAfterMs: 1000 });
  });

  it('memory: heap over the limit refuses; at the limit or unknown (NaN) it does not', () => {
    ok(verdict({ heapUsedBytes: 131072 }).admit);
    ok(verdict({ heapUsedBytes: NaN }).admit, 'release builds cannot tell: no refusal for want of a number');
    deepEqual({ ...verdict({ heapUsedBytes: 131073 }) }, { admit: false, reason: 'memory', code: 4, mask: 16, retryAfterMs: 1000 });
  });

  it('ladder: refuse_joins refuses with the ladder\'s step-down time as the hint', () => {
    deepEqual({ ...verdict({ refuseJoins: true }) }, { admit: false, reason: 'ladder', code: 5, mask: 32, retryAfterMs: 5000 });
  });

  it('several at once: the first in order is the reason, the mask has them all', () => {
    const v = verdict({ loopDelayMaxMs: 300, loopDelayClearsInMs: 2000, tickP95Ms: 50, neverShedBacklogBytes: 9999, heapUsedBytes: 1e9, refuseJoins: true });
    equal(v.reason, 'event-loop');
    equal(v.mask, 2 | 4 | 8 | 16 | 32);
    equal(v.retryAfterMs, 2000);
    const w = verdict({ neverShedBacklogBytes: 9999, heapUsedBytes: 1e9 });
    equal(w.reason, 'never-shed-backlog');
    equal(w.mask, 8 | 16);
  });

  it('pure: the same signals give the same verdict, a fresh object each time', () => {
    const s = { ...calm(), tickP95Ms: 30 };
    const a = evaluateAdmission(s, LIMITS);
    const b = evaluateAdmission(s, LIMITS);
    ok(a !== b);
    deepEqual(a, b);
  });
});

describe('hub/admission: the Admission gate', () => {
  it('a resume is admitted under any pressure, without evaluation, and counted', () => {
    const gate = new Admission(LIMITS);
    const pressed = { ...calm(), loopDelayMaxMs: 5000, heapUsedBytes: 1e9, refuseJoins: true };
    const v = gate.check(true, pressed);
    ok(v.admit);
    equal(v.reason, null);
    equal(v.retryAfterMs, 0);
    equal(gate.resumes, 1);
    equal(gate.admitted, 0);
    equal(gate.refusals[AdmissionReason.EVENT_LOOP], 0);
    ok(!gate.check(false, pressed).admit, 'the same signals refuse a new session');
  });

  it('counts admissions and refusals by reason; peek counts nothing', () => {
    const gate = new Admission(LIMITS);
    ok(gate.check(false, calm()).admit);
    gate.check(false, { ...calm(), tickP95Ms: 99 });
    gate.check(false, { ...calm(), tickP95Ms: 99 });
    gate.check(false, { ...calm(), heapUsedBytes: 1e9 });
    equal(gate.admitted, 1);
    equal(gate.refusals[AdmissionReason.TICK], 2);
    equal(gate.refusals[AdmissionReason.MEMORY], 1);
    equal(gate.peek({ ...calm(), refuseJoins: true }).reason, 'ladder');
    equal(gate.refusals[AdmissionReason.LADDER], 0);
    equal(gate.admitted, 1);
  });
});

describe('hub/admission: with the measured window on a virtual clock', () => {
  it('a 300 ms loop stall refuses new sessions until it leaves the 10-second view, the retry hint exact', () => {
    const m = new HealthMetrics(10);
    const gate = new Admission(LIMITS);
    const load = createHubLoad();
    load.heapUsedBytes = 50_000;
    // Ticks every 10 ms from t = 0; the tick due at 5210 runs at 5500 (a 290 ms stall).
    let t = 0;
    for (; t <= 5200; t += 10) m.tickBegan(t);
    m.tickBegan(5500);
    ok(m.loopDelay.maxOver(5500, 10) === 290);
    for (t = 5510; t < 20_000; t += 10) m.tickBegan(t);
    let firstAdmit = -1;
    let hintAt9000 = -1;
    for (let now = 5500; now <= 20_000; now += 10) {
      m.sample(now, load);
      const v = gate.check(false, load);
      if (now === 9000) hintAt9000 = v.retryAfterMs;
      if (v.admit && firstAdmit < 0) firstAdmit = now;
      if (!v.admit) equal(v.reason, 'event-loop');
    }
    equal(firstAdmit, 15_000, 'second 5 leaves the view at 15 000');
    equal(hintAt9000, 6000, 'retry_after_ms at 9000 points exactly there');
    equal(m.loopDelay.maxOver(15_000, 60), 290, 'the diagnostic window still holds it');
    equal(m.loopDelay.maxOver(65_000, 60), 0, 'until 65 000');
    m.sample(14_999, load);
    ok(!gate.check(false, load).admit);
    ok(gate.check(true, load).admit, 'a resume at the same moment is admitted');
  });

  it('slow ticks refuse once 30 are in view, and age out with their seconds', () => {
    const m = new HealthMetrics(10);
    const load = createHubLoad();
    // 29 ticks of 40 ms in second 3: too few to count; the 30th tips it.
    for (let i = 0; i < 29; i++) m.recordTick(40, 3000 + i * 10);
    m.sample(3500, load);
    ok(evaluateAdmission(load, LIMITS).admit);
    m.recordTick(40, 3600);
    m.sample(3600, load);
    equal(evaluateAdmission(load, LIMITS).reason, 'tick');
    // Fast ticks dilute: 571 more of 1 ms make 30 of 601 slow, 5 %, so the p95 reads 1.
    for (let i = 0; i < 571; i++) m.recordTick(1, 4000 + i);
    m.sample(4600, load);
    equal(load.tickP95Ms, 1);
    ok(evaluateAdmission(load, LIMITS).admit);
    const n = new HealthMetrics(10);
    for (let i = 0; i < 30; i++) n.recordTick(40, 3000 + i * 10);
    n.sample(12_999, load);
    equal(evaluateAdmission(load, LIMITS).reason, 'tick');
    n.sample(13_000, load);
    ok(evaluateAdmission(load, LIMITS).admit, 'second 3 left the view at 13 000');
  });
});
