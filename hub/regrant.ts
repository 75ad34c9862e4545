// §10.3 re-grant: one session's link budget (bytes/s), the "link estimate" clamp of §10.2 that
// planGrants (hub/grants.ts) reads. When update() reports a change the hub re-plans and re-states
// the session's grants in an unsolicited GRANT (§10.2). Here too the clock of the session's
// never-shed queue (§10.4 park, not kill): both watch the session's link.
//
// The controller, rule by rule (each held by a test in test/core/regrant.test.ts):
//
//  1. The budget starts unlimited (Infinity), and reset() (on resume: a new transport, a new
//     link) returns it there.
//  2. Cut. While the level is ≥ 1 continuously for more than REGRANT_AFTER_CONGESTED_MS (strictly
//     more: at exactly 5000 ms nothing happens, at 5001 the cut; §10.3 "sustained > 5 s"), the
//     budget becomes the delivered throughput × REGRANT_HEADROOM, so that the advertised grants
//     match what the link carries. The headroom leaves room for the never-shed traffic and the
//     binding's framing, which the budget does not count. A cut never raises the budget and never
//     takes it below REGRANT_FLOOR_BPS. Each cut (or a cut that found nothing to lower) restarts
//     the timer, so congestion that persists cuts again more than 5 s later.
//  3. Probe. While the level is 0 (the detector has already waited out §10.3's 5 s recovery) and
//     the budget is finite, every PROBE_INTERVAL_MS (at exactly the interval, not after it) the
//     budget is multiplied by PROBE_STEP, counted from the first clear update; once it exceeds
//     the session's demand it returns to unlimited (§10.2 "the probe justified a raise").
//  4. A level ≥ 1 during probing stops the probe and starts the cut timer afresh; a later
//     level 0 restarts the probe interval from that moment.
//  A level that is NaN reads as 0, as the shedding table reads it.

import { MAX_FIELDS } from '../catalog/schema.js';
import { LEVEL_CONGESTED, NEVER_SHED_STALL_EVICTION_MS, REGRANT_AFTER_CONGESTED_MS } from './constants.js';
import type { LinkEstimate } from './ports.js';
import { frameBytesFor } from './grants.js';

// Our decisions (the protocol pins only the 5 s, REGRANT_AFTER_CONGESTED_MS).
/** A cut sets the budget to this share of the delivered throughput. */
export const REGRANT_HEADROOM = 0.8;
/** Recovery raises the budget this often ... */
export const PROBE_INTERVAL_MS = 2000;
/** ... by this factor. */
export const PROBE_STEP = 1.25;
/** The lowest rate the floor keeps open for one normal-priority subscription. */
export const REGRANT_FLOOR_HZ = 1;
/** No cut goes below this: one normal subscription of the largest catalog sample at REGRANT_FLOOR_HZ. */
export const REGRANT_FLOOR_BPS = frameBytesFor(MAX_FIELDS) * REGRANT_FLOOR_HZ;

export class LinkBudget {
  // Its row (LINK_BUDGET_ROW): a session keeps its controller in a row of the hub's store instead (session.ts).
  private readonly row = new Float64Array(LINK_BUDGET_ROW);
  private readonly floorBps: number;

  constructor(floorBps: number = REGRANT_FLOOR_BPS) {
    this.floorBps = floorBps;
    linkBudgetReset(this.row, 0);
  }

  /** The session's link budget in bytes/s; Infinity is unlimited. */
  get budgetBps(): number {
    return this.row[0] as number;
  }

  /**
   * One observation of the session's link at `now` (ms). `demandBps` is what the session's
   * non-critical subscriptions ask of the link (linkDemandBps). Returns true when the budget
   * changed: the hub then re-plans and announces an unsolicited GRANT.
   */
  update(level: number, estimate: Readonly<Pick<LinkEstimate, 'throughputBps'>>, demandBps: number, now: number): boolean {
    return linkBudgetUpdate(this.row, 0, this.floorBps, level, estimate, demandBps, now);
  }

  /**
   * When `update` could next change anything while the level stays `level` (ms; Infinity: not
   * until the level changes). The hub calls `update` at that time, and whenever the level
   * changes, instead of at every tick: the controller acts only on those.
   */
  nextAt(level: number): number {
    return linkBudgetNextAt(this.row, 0, level);
  }

  /** On resume: a fresh link starts unlimited (rule 1). */
  reset(): void {
    linkBudgetReset(this.row, 0);
  }
}

/**
 * A controller's numbers in a row of a Float64Array: the budget (bytes/s, Infinity unlimited),
 * when the current run of level ≥ 1 began or the last cut (NaN while clear), when the probe last
 * raised the budget or began (NaN while not probing).
 */
export const LINK_BUDGET_ROW = 3;
const CONGESTED_SINCE = 1;
const PROBED_AT = 2;

/** LinkBudget.update on the controller at r[k, k + LINK_BUDGET_ROW), its floor `floorBps`. */
export function linkBudgetUpdate(r: Float64Array, k: number, floorBps: number, level: number, estimate: Readonly<Pick<LinkEstimate, 'throughputBps'>>, demandBps: number, now: number): boolean {
  const budget = r[k] as number;
  if (level >= LEVEL_CONGESTED) {
    r[k + PROBED_AT] = NaN;
    const since = r[k + CONGESTED_SINCE] as number;
    if (Number.isNaN(since)) {
      r[k + CONGESTED_SINCE] = now;
      return false;
    }
    if (!(now - since > REGRANT_AFTER_CONGESTED_MS)) return false;
    r[k + CONGESTED_SINCE] = now;
    const throughput = estimate.throughputBps > 0 ? estimate.throughputBps : 0;
    const target = Math.max(floorBps, throughput * REGRANT_HEADROOM);
    if (!(target < budget)) return false;
    r[k] = target;
    return true;
  }

  r[k + CONGESTED_SINCE] = NaN;
  if (budget === Infinity) return false;
  const probedAt = r[k + PROBED_AT] as number;
  if (Number.isNaN(probedAt)) {
    r[k + PROBED_AT] = now;
    return false;
  }
  if (!(now - probedAt >= PROBE_INTERVAL_MS)) return false;
  r[k + PROBED_AT] = now;
  const raised = budget * PROBE_STEP;
  if (raised > demandBps) {
    r[k] = Infinity;
    r[k + PROBED_AT] = NaN;
  } else {
    r[k] = raised;
  }
  return true;
}

/** LinkBudget.nextAt on the controller at r[k, k + LINK_BUDGET_ROW). */
export function linkBudgetNextAt(r: Float64Array, k: number, level: number): number {
  if (level >= LEVEL_CONGESTED) {
    const since = r[k + CONGESTED_SINCE] as number;
    return Number.isNaN(since) ? -Infinity : since + REGRANT_AFTER_CONGESTED_MS;
  }
  if (r[k] === Infinity) return Infinity;
  const probedAt = r[k + PROBED_AT] as number;
  return Number.isNaN(probedAt) ? -Infinity : probedAt + PROBE_INTERVAL_MS;
}

/** LinkBudget.reset on the controller at r[k, k + LINK_BUDGET_ROW): unlimited, neither congested nor probing. */
export function linkBudgetReset(r: Float64Array, k: number): void {
  r[k] = Infinity;
  r[k + CONGESTED_SINCE] = NaN;
  r[k + PROBED_AT] = NaN;
}

/**
 * §10.4 "park, not kill": how long a never-shed queue has been non-empty without making
 * progress. The hub calls `update` whenever it pushes to or drains the queue (at the latest
 * once per tick); the stall is measured from the first update that saw the queue non-empty
 * with no progress, or from the last progress. `parkDue(now)` is true once that has lasted
 * NEVER_SHED_STALL_EVICTION_MS (2000 ms) or more: at 1999 ms not, at 2000 ms yes.
 */
export class StallClock {
  // Its row (STALL_ROW): a session keeps its clock in a row of the hub's store instead (session.ts).
  private readonly row = new Float64Array(STALL_ROW);

  constructor(readonly limitMs: number = NEVER_SHED_STALL_EVICTION_MS) {}

  update(nonEmpty: boolean, progressed: boolean, now: number): void {
    stallUpdate(this.row, 0, nonEmpty, progressed, now);
  }

  /** Milliseconds stalled at `now`; 0 when not stalled. */
  stalledFor(now: number): number {
    return stalledFor(this.row, 0, now);
  }

  /** §10.4: the session is parked (STALE, transport closed) when this turns true. */
  parkDue(now: number): boolean {
    return parkDue(this.row, 0, this.limitMs, now);
  }

  reset(): void {
    this.row[0] = 0;
  }
}

/** A stall clock's numbers in a row of a Float64Array: 1 while stalled (else 0), then since when. */
export const STALL_ROW = 2;

/** StallClock.update on the clock at r[k, k + STALL_ROW). */
export function stallUpdate(r: Float64Array, k: number, nonEmpty: boolean, progressed: boolean, now: number): void {
  if (!nonEmpty) {
    r[k] = 0;
  } else if (progressed || r[k] === 0) {
    r[k] = 1;
    r[k + 1] = now;
  }
}

/** StallClock.stalledFor on the clock at r[k, k + STALL_ROW). */
export function stalledFor(r: Float64Array, k: number, now: number): number {
  if (r[k] === 0) return 0;
  const d = now - (r[k + 1] as number);
  return d > 0 ? d : 0;
}

/** StallClock.parkDue, `limitMs` its limit, on the clock at r[k, k + STALL_ROW). */
export function parkDue(r: Float64Array, k: number, limitMs: number, now: number): boolean {
  return r[k] !== 0 && now - (r[k + 1] as number) >= limitMs;
}
